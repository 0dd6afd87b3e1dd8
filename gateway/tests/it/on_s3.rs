//! The gateway in front of a provider whose blobs are in S3 (a real MinIO started by
//! `scripts/minio.sh`): the same application, the same answers.

use crate::common;

use common::{sample, Harness};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_s3_objects_put_list_read_back_and_go_away() {
    let minio = vouch_testkit::minio::Minio::start();
    let h = Harness::on(Blocks::S3(minio.config.clone()), Misbehave::None, &["cloud"]).await;
    let store = h.store("cloud");
    let data = sample(5_000_000, 21);
    store.put(&Path::from("a/big"), PutPayload::from(data.clone())).await.unwrap();
    store.put(&Path::from("a/small"), PutPayload::from(b"small".to_vec())).await.unwrap();
    assert_eq!(store.get(&Path::from("a/big")).await.unwrap().bytes().await.unwrap(), data);
    assert_eq!(
        &store.get_range(&Path::from("a/big"), 4_500_000..4_600_000).await.unwrap()[..],
        &data[4_500_000..4_600_000]
    );
    let listed: Vec<_> = store.list(Some(&Path::from("a"))).try_collect().await.unwrap();
    assert_eq!(listed.len(), 2);
    store.delete(&Path::from("a/big")).await.unwrap();
    assert!(matches!(store.get(&Path::from("a/big")).await, Err(object_store::Error::NotFound { .. })));
}

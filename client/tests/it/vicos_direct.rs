//! A VICOS member that reaches the provider's S3 bucket itself, with its own credentials
//! (paper 003, Fig. 3), beside one that goes through the provider: they share one set of
//! objects, and the bucket is as untrusted as the provider (an object altered or removed in
//! it is caught).

use crate::common;
use vouch_testkit::minio;

use common::{Setup, TOKEN_BOB};
use futures::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::io::Cursor;
use vouch_client::vicos::{DirectObjects, Group, S3Access, Signatures};
use vouch_client::{ClientError, Remote, ViolationKind};
use vouch_core::aip::{Mode, Outcome};
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;

const GROUP: &str = "team";

fn access(minio: &minio::Minio) -> S3Access {
    let c = &minio.config;
    S3Access {
        endpoint: c.endpoint.clone(),
        bucket: c.bucket.clone(),
        region: c.region.clone(),
        access_key: c.access_key.clone(),
        secret_key: c.secret_key.clone(),
    }
}

/// The bucket as someone with its keys sees it (the test's hand in the provider's store).
fn bucket(minio: &minio::Minio) -> AmazonS3 {
    let c = &minio.config;
    vouch_proto::tls::install_provider();
    AmazonS3Builder::new()
        .with_endpoint(c.endpoint.clone().unwrap())
        .with_allow_http(true)
        .with_region(&c.region)
        .with_bucket_name(&c.bucket)
        .with_access_key_id(&c.access_key)
        .with_secret_access_key(&c.secret_key)
        .build()
        .unwrap()
}

/// The objects stored for `key` of the group.
async fn objects_of(bucket: &AmazonS3, key: &str) -> Vec<Key> {
    let folder = Key::from(vouch_proto::vicos::object_folder(GROUP, key.as_bytes()));
    bucket.list(Some(&folder)).map_ok(|m| m.location).try_collect().await.unwrap()
}

async fn read(g: &Group, key: &str) -> Result<Option<Vec<u8>>, ClientError> {
    let mut out = Vec::new();
    match g.get(key.as_bytes(), &mut out).await? {
        Outcome::Done(found) => Ok(found.map(|_| out)),
        Outcome::Abort => panic!("no other operation was pending"),
    }
}

async fn put(g: &Group, key: &str, data: &[u8]) {
    assert_eq!(g.put(key.as_bytes(), Cursor::new(data.to_vec())).await.unwrap(), Outcome::Done(()));
}

fn sample(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[0] ^ seed).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_reaching_the_bucket_itself_shares_the_objects_and_catches_their_lies() {
    let minio = minio::Minio::start();
    let setup = Setup::on(Blocks::S3(minio.config.clone()), Misbehave::None).await;
    let next = Group::init(&setup.state, GROUP, Mode::Compatible, Signatures::Hmac).await.unwrap();
    let alice =
        Group::open(&setup.state, GROUP).unwrap().with_direct_objects(DirectObjects::s3(&access(&minio)).unwrap());
    let remote = Remote::new(&setup.url(), TOKEN_BOB).unwrap();
    let bob = Group::join(remote, GROUP, next.id, next.keys().unwrap(), Mode::Compatible);

    // Alice writes straight into the bucket (one PUT, and a multipart upload of 3 parts);
    // Bob reads through the provider, and the other way round.
    let big = sample(20 << 20, 7);
    put(&alice, "small", b"from alice").await;
    put(&alice, "big", &big).await;
    put(&bob, "b", b"from bob").await;
    assert_eq!(read(&bob, "small").await.unwrap().unwrap(), b"from alice");
    assert_eq!(read(&bob, "big").await.unwrap().unwrap(), big);
    assert_eq!(read(&alice, "b").await.unwrap().unwrap(), b"from bob");
    assert_eq!(objects_of(&bucket(&minio), "big").await.len(), 1);

    // She really reaches the bucket herself: with a wrong secret, her reads fail there.
    let wrong = S3Access { secret_key: "not-the-secret".into(), ..access(&minio) };
    let remote = Remote::new(&setup.url(), TOKEN_BOB).unwrap();
    let stranger = Group::join(remote, GROUP, 7, next.keys().unwrap(), Mode::Compatible)
        .with_direct_objects(DirectObjects::s3(&wrong).unwrap());
    let refused = read(&stranger, "small").await;
    assert!(matches!(refused, Err(ClientError::Unauthorized(_))), "{refused:?}");

    // The bucket lies: an altered object, then a missing one.
    let store = bucket(&minio);
    let [stored] = objects_of(&store, "small").await.try_into().unwrap();
    store.put(&stored, PutPayload::from_static(b"from mallory")).await.unwrap();
    let altered = read(&alice, "small").await;
    assert_eq!(altered.unwrap_err().violation_kind(), Some(ViolationKind::AlteredObject));
    store.delete(&stored).await.unwrap();
    let missing = read(&alice, "small").await;
    assert_eq!(missing.unwrap_err().violation_kind(), Some(ViolationKind::UnprovenNotFound));

    // A put replacing Bob's object queues it, and it leaves the bucket with her queue (one
    // bulk delete); a delete removes the last.
    put(&alice, "b", b"from alice, over bob's").await;
    assert_eq!(objects_of(&store, "b").await.len(), 2, "queued, not yet deleted");
    alice.flush_retired().await;
    let [now] = objects_of(&store, "b").await.try_into().unwrap();
    assert_eq!(store.get(&now).await.unwrap().bytes().await.unwrap(), &b"from alice, over bob's"[..]);
    assert_eq!(alice.delete(b"b").await.unwrap(), Outcome::Done(()));
    alice.flush_retired().await;
    assert!(objects_of(&store, "b").await.is_empty());
    assert_eq!(read(&bob, "b").await.unwrap(), None);
}

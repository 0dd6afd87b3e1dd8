//! The same end-to-end story with the provider's blocks in S3 (a real MinIO started by
//! `scripts/minio.sh`): verified put / get / edit / sync / audit, and bytes altered directly
//! in the bucket caught.

use vouch_testkit::minio;

use vouch_client::{ByteEdit, Client, ClientError, ViolationKind};
use vouch_server::{Provider, ServeOptions};
use vouch_store::{BlobStore, MetaDb, ObjectBlobs};
use vouch_testkit::provider;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_on_s3_serves_verified_files_and_tampering_in_the_bucket_is_caught() {
    let minio = minio::Minio::start();
    let dir = tempfile::tempdir().unwrap();
    let blobs = ObjectBlobs::s3(&minio.config).unwrap();
    let meta = MetaDb::open(&dir.path().join("meta.redb")).unwrap();
    let honest = Provider::open(blobs.clone(), meta).unwrap();
    let server = provider::serve(provider::ANY_PORT, honest, ServeOptions::default(), &[("t", "alice")]).await;
    let client = Client::init(&dir.path().join("client"), &format!("http://{}", server.addr), "t").unwrap();

    let data: Vec<u8> = (0..2_000_000u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as u8).collect();
    client.put("big.bin", std::io::Cursor::new(data.clone()), None, |_| {}).await.unwrap();
    let mut back = Vec::new();
    client.get("big.bin", None, None, &mut back).await.unwrap();
    assert_eq!(back, data);

    client.edit("big.bin", &ByteEdit::Delete { range: 1000..5000 }, None).await.unwrap();
    let mut want = data.clone();
    want.drain(1000..5000);
    want.splice(700_000..700_000, *b"inserted");
    let local = dir.path().join("local.bin");
    std::fs::write(&local, &want).unwrap();
    let sync = client.sync("big.bin", &local).await.unwrap();
    assert!(sync.blocks_sent <= 3, "{sync:?}");
    let mut back = Vec::new();
    client.get("big.bin", None, None, &mut back).await.unwrap();
    assert_eq!(back, want);
    assert!(client.audit("big.bin", None, 460).await.unwrap().verified);

    // Overwrite the first segment in the bucket with same-length garbage.
    let key = blobs.list("segments").await.unwrap().into_iter().next().unwrap();
    let mut bytes = blobs.get(&key).await.unwrap().to_vec();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    blobs.put(&key, bytes.into()).await.unwrap();
    let mut out = Vec::new();
    let got = client.get("big.bin", Some(1), None, &mut out).await;
    // The store's checksum catches the damage first: the provider reports the data lost.
    assert!(
        matches!(&got, Err(ClientError::Misbehaved(v)) if v.kind == ViolationKind::DataLost),
        "expected data-lost, got {got:?}"
    );
    assert_eq!(out, data[..out.len()], "only verified bytes are handed out");
    server.shutdown().await.unwrap();
}

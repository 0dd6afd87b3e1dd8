//! A provider's limits as the client sees them: a request past one is a refusal (exit 1),
//! never a lie (exit 3). An honest provider that declines work must not look like a liar.

use crate::common;

use common::{sample, TOKEN};
use vouch_client::{Client, ClientError};
use vouch_proto::ErrorCode;
use vouch_server::{Blocks, Limits, Provider, RunningServer, ServeOptions};
use vouch_testkit::provider;

async fn start(data: &std::path::Path, limits: Limits) -> RunningServer {
    let options = ServeOptions { limits, ..ServeOptions::default() };
    let honest = Provider::open_dir(data, &Blocks::Local).unwrap();
    provider::serve(provider::ANY_PORT, honest, options, provider::ALICE).await
}

fn assert_too_large<T: std::fmt::Debug>(r: Result<T, ClientError>, what: &str) {
    match &r {
        Err(ClientError::Refused { code: ErrorCode::TooLarge, .. }) => {}
        other => panic!("{what}: expected a TooLarge refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_past_the_providers_memory_bound_is_a_refusal_not_a_lie() {
    let dir = tempfile::tempdir().unwrap();
    // 64 KiB of challenged blocks at most: 16 blocks of 4 KiB.
    let server = start(&dir.path().join("provider"), Limits { max_audit_bytes: 64 << 10, ..Limits::default() }).await;
    let client = Client::init(&dir.path().join("client"), &format!("http://{}", server.addr), TOKEN).unwrap();
    let data = sample(1 << 20, 5);
    client.put("f.bin", std::io::Cursor::new(data), Some(4096), |_| {}).await.unwrap();
    // 460 offsets over 256 blocks hit far more than 16 of them.
    assert_too_large(client.audit("f.bin", None, 460).await, "a large audit");
    // A challenge within the bound is answered, and verifies.
    assert!(client.audit("f.bin", None, 8).await.unwrap().verified);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_past_the_providers_block_limit_is_a_refusal_not_a_lie() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("provider"), Limits { max_put_blocks: 10, ..Limits::default() }).await;
    let client = Client::init(&dir.path().join("client"), &format!("http://{}", server.addr), TOKEN).unwrap();
    let r = client.put("many.bin", std::io::Cursor::new(sample(64 << 10, 6)), Some(4096), |_| {}).await;
    assert_too_large(r, "a put of 16 blocks");
    client.put("few.bin", std::io::Cursor::new(sample(40 << 10, 6)), Some(4096), |_| {}).await.unwrap();
    assert_eq!(client.list().await.unwrap().len(), 1, "only the put within the limit is stored");
    server.shutdown().await.unwrap();
}

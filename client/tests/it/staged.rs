//! Puts of one client upload at once and commit one at a time (`stage`, then
//! `commit-staged`): a slow upload holds up no other name's put, a name changed while its
//! new version uploads is a conflict (never a lie, never a lost change), and a staged
//! upload the provider dropped is a refusal the client goes on from.

use crate::common;

use common::{sample, Setup, TOKEN};
use std::io::{Cursor, Read};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use vouch_client::{ByteEdit, Client, ClientError, Expected, PutOptions};
use vouch_misbehave::Misbehave;
use vouch_proto::ErrorCode;
use vouch_server::{Blocks, Limits, Provider, ServeOptions};
use vouch_testkit::provider;

const BLOCK: Option<usize> = Some(4096);

/// A reader that says when it is first read (the put has proven its name's state and begun
/// its upload), then waits to be let go.
struct Held {
    data: Cursor<Vec<u8>>,
    started: Option<mpsc::Sender<()>>,
    go: Option<mpsc::Receiver<()>>,
}

impl Read for Held {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(started) = self.started.take() {
            let _ = started.send(());
        }
        if let Some(go) = self.go.take() {
            let _ = go.recv();
        }
        self.data.read(buf)
    }
}

/// A held reader of `data`, a receiver told when it is first read, and its release.
fn held(data: Vec<u8>) -> (Held, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (started_tx, started) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    (Held { data: Cursor::new(data), started: Some(started_tx), go: Some(go_rx) }, started, go)
}

async fn wait_for(signal: mpsc::Receiver<()>) {
    tokio::task::spawn_blocking(move || signal.recv_timeout(Duration::from_secs(30)).expect("signal")).await.unwrap();
}

async fn read(client: &Client, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    client.get(name, None, None, &mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_upload_holds_up_no_put_of_another_name() {
    let setup = Setup::new(Misbehave::None).await;
    let client = Arc::new(setup.client());
    let slow_data = sample(200_000, 1);
    let (reader, started, go) = held(slow_data.clone());
    let slow = {
        let client = client.clone();
        tokio::spawn(async move { client.put("slow.bin", reader, BLOCK, |_| {}).await })
    };
    wait_for(started).await;
    // The slow upload is under way and will not end until let go: these must not wait for it.
    for i in 0..3 {
        let name = format!("fast-{i}.bin");
        let fast = client.put(&name, Cursor::new(sample(50_000, 10 + i)), BLOCK, |_| {});
        tokio::time::timeout(Duration::from_secs(30), fast).await.expect("a put held up by a slow upload").unwrap();
    }
    assert!(!slow.is_finished());
    go.send(()).unwrap();
    assert_eq!(slow.await.unwrap().unwrap().version, 1);
    let names: Vec<String> = client.list().await.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["fast-0.bin", "fast-1.bin", "fast-2.bin", "slow.bin"]);
    assert_eq!(read(&client, "slow.bin").await, slow_data);
    assert_eq!(read(&client, "fast-1.bin").await, sample(50_000, 11));
    // A client opened afresh on the state agrees with the provider on every name.
    drop(client);
    let reopened = setup.client();
    assert_eq!(read(&reopened, "fast-2.bin").await, sample(50_000, 12));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_of_one_name_take_turns_and_both_land() {
    let setup = Setup::new(Misbehave::None).await;
    let client = Arc::new(setup.client());
    let (reader, started, go) = held(sample(30_000, 2));
    let first = {
        let client = client.clone();
        tokio::spawn(async move { client.put("f.bin", reader, BLOCK, |_| {}).await })
    };
    wait_for(started).await;
    let second = {
        let client = client.clone();
        tokio::spawn(async move { client.put("f.bin", Cursor::new(sample(40_000, 3)), BLOCK, |_| {}).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!second.is_finished(), "a second put of one name waits for the first");
    go.send(()).unwrap();
    assert_eq!(first.await.unwrap().unwrap().version, 1);
    assert_eq!(second.await.unwrap().unwrap().version, 2);
    assert_eq!(read(&client, "f.bin").await, sample(40_000, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_changed_while_its_new_version_uploads_is_a_conflict_not_a_lie() {
    let setup = Setup::new(Misbehave::None).await;
    let client = Arc::new(setup.client());
    client.put("f.bin", Cursor::new(sample(30_000, 4)), BLOCK, |_| {}).await.unwrap();
    let (reader, started, go) = held(sample(30_000, 5));
    let put = {
        let client = client.clone();
        tokio::spawn(async move { client.put("f.bin", reader, BLOCK, |_| {}).await })
    };
    wait_for(started).await;
    // The put built on version 1; an edit of the same name commits version 2 meanwhile.
    client.edit("f.bin", &ByteEdit::Insert { at: 0, data: b"edited".to_vec() }, BLOCK).await.unwrap();
    go.send(()).unwrap();
    match put.await.unwrap() {
        Err(ClientError::Refused { code: ErrorCode::Conflict, .. }) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    let edited = read(&client, "f.bin").await;
    assert!(edited.starts_with(b"edited"), "the edit stands");
    // The client goes on: the put again lands on top of the edit.
    let again = client.put("f.bin", Cursor::new(sample(30_000, 5)), BLOCK, |_| {}).await.unwrap();
    assert_eq!(again.version, 3);
    assert_eq!(read(&setup.client(), "f.bin").await, sample(30_000, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_of_older_versions_while_a_new_one_uploads_is_no_conflict() {
    let setup = Setup::new(Misbehave::None).await;
    let client = Arc::new(setup.client());
    for seed in [7, 8] {
        client.put("f.bin", Cursor::new(sample(20_000, seed)), BLOCK, |_| {}).await.unwrap();
    }
    let (reader, started, go) = held(sample(20_000, 9));
    let put = {
        let client = client.clone();
        tokio::spawn(async move { client.put("f.bin", reader, BLOCK, |_| {}).await })
    };
    wait_for(started).await;
    // The name's entry changes (one version fewer); the latest version, which the upload
    // builds on, does not.
    client.prune("f.bin", &[1]).await.unwrap();
    go.send(()).unwrap();
    assert_eq!(put.await.unwrap().unwrap().version, 3);
    let log: Vec<u64> = client.log("f.bin").await.unwrap().iter().map(|r| r.number).collect();
    assert_eq!(log, [2, 3]);
    assert_eq!(read(&setup.client(), "f.bin").await, sample(20_000, 9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_put_over_a_version_replaced_since_its_check_is_refused() {
    let setup = Setup::new(Misbehave::None).await;
    let client = Arc::new(setup.client());
    for (name, por) in [("f.bin", false), ("p.bin", true)] {
        let first = Cursor::new(sample(20_000, 10));
        let v1 = match por {
            true => client
                .put_with(name, first, PutOptions { block_size: BLOCK, por: true, ..PutOptions::default() }, |_| {})
                .await
                .unwrap(),
            false => client.put(name, first, BLOCK, |_| {}).await.unwrap(),
        };
        let checked = client.version(name, None).await.unwrap().record;
        assert_eq!(checked.number, v1.version);
        // An unconditional put lands between the condition's check and the conditional put.
        let second = Cursor::new(sample(20_000, 11));
        client
            .put_with(
                name,
                second,
                PutOptions { block_size: BLOCK, por, expected: Some(Expected::Latest(checked)) },
                |_| {},
            )
            .await
            .unwrap();
        for stale in [Expected::Latest(checked), Expected::Absent] {
            let third = Cursor::new(sample(20_000, 12));
            match client
                .put_with(name, third, PutOptions { block_size: BLOCK, por, expected: Some(stale) }, |_| {})
                .await
            {
                Err(ClientError::Refused { code: ErrorCode::Conflict, .. }) => {}
                other => panic!("{name}: expected a refusal, got {other:?}"),
            }
        }
        assert_eq!(read(&client, name).await, sample(20_000, 11), "{name}: the put in between stands");
        let now = client.version(name, None).await.unwrap().record;
        assert_eq!(now.number, 2, "{name}: nothing committed over it");
        let fourth = Cursor::new(sample(20_000, 13));
        client
            .put_with(
                name,
                fourth,
                PutOptions { block_size: BLOCK, por, expected: Some(Expected::Latest(now)) },
                |_| {},
            )
            .await
            .unwrap();
        assert_eq!(read(&setup.client(), name).await, sample(20_000, 13));
    }
    let fresh = Cursor::new(sample(1_000, 14));
    client
        .put_with(
            "new.bin",
            fresh,
            PutOptions { block_size: BLOCK, por: false, expected: Some(Expected::Absent) },
            |_| {},
        )
        .await
        .unwrap();
}

async fn start(data: &std::path::Path, limits: Limits) -> vouch_server::RunningServer {
    let options = ServeOptions { limits, ..ServeOptions::default() };
    let honest = Provider::open_dir(data, &Blocks::Local).unwrap();
    provider::serve(provider::ANY_PORT, honest, options, provider::ALICE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_upload_the_provider_dropped_is_a_refusal_the_client_goes_on_from() {
    let dir = tempfile::tempdir().unwrap();
    // Every staged upload is dropped before its commit can arrive (as after a restart).
    let limits = Limits { staged_for: Duration::from_nanos(1), ..Limits::default() };
    let server = start(&dir.path().join("provider"), limits).await;
    let client = Client::init(&dir.path().join("client"), &format!("http://{}", server.addr), TOKEN).unwrap();
    let before = client.root();
    match client.put("f.bin", Cursor::new(sample(20_000, 6)), BLOCK, |_| {}).await {
        Err(ClientError::Refused { code: ErrorCode::Conflict, .. }) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    // The commit's intent settles as not applied; nothing is stored, nothing is a lie.
    assert!(client.list().await.unwrap().is_empty());
    assert_eq!(client.settled_root().await.unwrap(), before);

    // No room at all to stage: a refusal too.
    server.shutdown().await.unwrap();
    let server = start(&dir.path().join("provider"), Limits { max_staged: 0, ..Limits::default() }).await;
    let client = Client::init(&dir.path().join("client2"), &format!("http://{}", server.addr), TOKEN).unwrap();
    match client.put("f.bin", Cursor::new(sample(20_000, 6)), BLOCK, |_| {}).await {
        Err(ClientError::Refused { code: ErrorCode::TooLarge, .. }) => {}
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(client.list().await.unwrap().is_empty());
    server.shutdown().await.unwrap();
}

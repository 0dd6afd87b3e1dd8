//! One client shared by many tasks (`Arc<Client>`), as a gateway holds it: commits are
//! serialised, reads run beside them, and every answer is still verified. A read answered
//! from the provider's state after a concurrent commit (adopted, in flight, or with its answer
//! lost) verifies; a lie surfaces in every task it reaches. Orderings are forced with a proxy
//! that holds a request or an answer until the test lets it go, never with timing.

use crate::common;
use crate::proxy;

use common::{assert_violation, sample, Setup, TOKEN};
use proxy::{Answer, Gate};
use std::io::Cursor;
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use vouch_client::state::Root;
use vouch_client::{
    ByteEdit, Client, ClientError, ClientKey, ClientState, MemoryState, PublicAuditor, Remote, ViolationKind as Kind,
};
use vouch_core::pdp::linear::LinearKey;
use vouch_misbehave::Misbehave;
use vouch_proto::{ErrorBody, ErrorCode};

const BLOCK: Option<usize> = Some(4096);

#[test]
fn a_client_can_be_shared_between_threads_and_its_calls_spawned() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<Client>();
    shared::<PublicAuditor>();
    // Every call's future can be spawned (none is polled: no provider is needed).
    fn spawnable<F: std::future::Future + Send>(_: F) {}
    let state = ClientState::in_memory(memory_key());
    let client = Client::new(state, Remote::new("http://127.0.0.1:1", TOKEN).unwrap()).unwrap();
    let mut out = Vec::new();
    spawnable(client.put("a", Cursor::new(vec![1]), None, |_| {}));
    spawnable(client.get("a", None, None, &mut out));
    spawnable(client.edit("a", &ByteEdit::Delete { range: 0..1 }, None));
    spawnable(client.sync("a", std::path::Path::new("a")));
    spawnable(client.remove("a"));
    spawnable(client.prune("a", &[1]));
    spawnable(client.version("a", None));
    spawnable(client.log("a"));
    spawnable(client.list());
    spawnable(client.audit("a", None, 1));
    spawnable(client.audit_root());
}

async fn put(client: &Client, name: &str, data: &[u8]) -> u64 {
    client.put(name, Cursor::new(data.to_vec()), BLOCK, |_| {}).await.unwrap().version
}

/// A get: the result and what was written before it ended.
async fn get(client: &Client, name: &str, version: Option<u64>) -> (Result<(), ClientError>, Vec<u8>) {
    let mut out = Vec::new();
    let result = client.get(name, version, None, &mut out).await.map(|_| ());
    (result, out)
}

async fn read(client: &Client, name: &str) -> Result<Vec<u8>, ClientError> {
    let (result, out) = get(client, name, None).await;
    result.map(|()| out)
}

async fn names(client: &Client) -> Vec<String> {
    client.list().await.unwrap().into_iter().map(|e| e.name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_gets_and_puts_through_one_shared_client_all_verify() {
    let setup = Setup::new(Misbehave::None).await;
    let client = Arc::new(setup.client());
    let base: Arc<Vec<Vec<u8>>> = Arc::new((0..3).map(|i| sample(60_000, 100 + i)).collect());
    for (i, data) in base.iter().enumerate() {
        put(&client, &format!("base-{i}"), data).await;
    }
    // Four writers: two versions of a name each, then one version each of a shared name.
    let shared: Arc<Vec<Vec<u8>>> = Arc::new((0..4).map(|k| sample(30_000, 200 + k)).collect());
    let mut writers = JoinSet::new();
    for k in 0..4u64 {
        let (client, shared) = (client.clone(), shared.clone());
        writers.spawn(async move {
            for round in 1..=2 {
                let data = sample(20_000, 300 + 10 * k + round);
                assert_eq!(put(&client, &format!("own-{k}"), &data).await, round, "own-{k}");
            }
            (k, put(&client, "shared.bin", &shared[k as usize]).await)
        });
    }
    // Four readers at the same time: every answer verified and right.
    let mut readers = JoinSet::new();
    for r in 0..4usize {
        let (client, base, shared) = (client.clone(), base.clone(), shared.clone());
        readers.spawn(async move {
            for round in 0..4 {
                let i = (r + round) % base.len();
                let name = format!("base-{i}");
                assert_eq!(read(&client, &name).await.unwrap(), base[i], "{name}");
                match read(&client, "shared.bin").await {
                    Ok(bytes) => assert!(shared.contains(&bytes), "shared.bin read as none of its versions"),
                    // Read before the first put of it landed: proven absent.
                    Err(ClientError::NotFound(_)) => {}
                    Err(e) => panic!("shared.bin: {e}"),
                }
                let listed = names(&client).await;
                assert!((0..3).all(|j| listed.contains(&format!("base-{j}"))), "{listed:?}");
                assert!(client.audit(&name, None, 20).await.unwrap().verified);
            }
        });
    }
    let mut made = Vec::new();
    while let Some(done) = writers.join_next().await {
        made.push(done.unwrap());
    }
    while let Some(done) = readers.join_next().await {
        done.unwrap();
    }
    // Each put of the shared name made its own version, and each version holds its bytes.
    let mut numbers: Vec<u64> = made.iter().map(|(_, n)| *n).collect();
    numbers.sort();
    assert_eq!(numbers, [1, 2, 3, 4]);
    for (k, n) in made {
        let (result, out) = get(&client, "shared.bin", Some(n)).await;
        result.unwrap();
        assert_eq!(out, shared[k as usize], "version {n} of shared.bin");
    }
    let root = client.root();
    assert_eq!(root.len, 3 + 4 + 1);
    assert!(!client.has_unsettled_change());
    // The saved state is the one in memory.
    drop(client);
    assert_eq!(setup.client().root(), root);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_altered_block_is_caught_by_every_concurrent_reader() {
    let mut setup = Setup::new(Misbehave::None).await;
    let base: Arc<Vec<Vec<u8>>> = Arc::new((0..3).map(|i| sample(60_000, 400 + i)).collect());
    for (i, data) in base.iter().enumerate() {
        put(&setup.client(), &format!("base-{i}"), data).await;
    }
    setup.restart(Misbehave::CorruptBlock).await;
    let client = Arc::new(setup.client());
    let mut tasks = JoinSet::new();
    for r in 0..4usize {
        let (client, base) = (client.clone(), base.clone());
        tasks.spawn(async move {
            for i in 0..base.len() {
                let name = format!("base-{}", (r + i) % base.len());
                let data = &base[(r + i) % base.len()];
                let (result, out) = get(&client, &name, None).await;
                assert_violation(result, Kind::AlteredBlock, &name);
                assert!(out == data[..out.len()], "an altered byte of {name} was handed out");
                assert_violation(client.audit(&name, None, 20).await, Kind::BadAuditProof, &name);
            }
        });
    }
    // Commits are not what this lie targets: they go on meanwhile.
    for k in 0..2u64 {
        let client = client.clone();
        tasks.spawn(async move {
            put(&client, &format!("new-{k}"), &sample(10_000, 500 + k)).await;
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    assert_eq!(client.root().len, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_is_caught_by_every_task_after_the_one_commit_it_acknowledged() {
    let setup = Setup::new(Misbehave::Rollback).await;
    let client = Arc::new(setup.client());
    let mut writers = JoinSet::new();
    for k in 0..4u64 {
        let client = client.clone();
        writers.spawn(async move {
            client.put(&format!("f-{k}"), Cursor::new(sample(10_000, k)), BLOCK, |_| {}).await.map(|_| ())
        });
    }
    let mut readers = JoinSet::new();
    for _ in 0..2 {
        let client = client.clone();
        readers.spawn(async move {
            for k in 0..4 {
                // Before the acknowledged commit: proven absent under the root before it;
                // after: the provider still answers from before it, a lie. A read first
                // settles the intent a caught commit left, if there is one.
                match client.version(&format!("f-{k}"), None).await {
                    Err(ClientError::NotFound(_)) => {}
                    other => caught_after_rollback(other, Kind::BadLookupProof, "a lookup after the rollback"),
                }
                match client.list().await {
                    Ok(entries) => assert!(entries.is_empty(), "{entries:?}"),
                    other => caught_after_rollback(other, Kind::HiddenName, "a listing after the rollback"),
                }
            }
        });
    }
    let mut accepted = 0;
    while let Some(done) = writers.join_next().await {
        match done.unwrap() {
            Ok(()) => accepted += 1,
            // Each commit after the first gets an answer whose lookup is from before it.
            other => caught_after_rollback(other, Kind::BadLookupProof, "a commit after the rollback"),
        }
    }
    while let Some(done) = readers.join_next().await {
        done.unwrap();
    }
    assert_eq!(accepted, 1, "the provider acknowledged one commit, then forgot it");
    assert_eq!(client.root().len, 1);
    // The listing settles the intent the last caught commit left first (no commit to show),
    // or, settled, is answered from before the acknowledged commit.
    caught_after_rollback(client.list().await, Kind::HiddenName, "a listing once every task is done");
}

/// After the rollback, a call is caught as `kind`; or, settling first the intent another
/// task's caught commit left (its answer was a lie, so it stays unsettled), as a provider
/// that shows no commit of that change from a state neither before nor after it.
fn caught_after_rollback<T: std::fmt::Debug>(result: Result<T, ClientError>, kind: Kind, what: &str) {
    match result {
        Err(ClientError::Misbehaved(v))
            if v.kind == Kind::NeitherOldNorNew && v.detail.starts_with("the interrupted change of f-") => {}
        other => assert_violation(other, kind, what),
    }
}

// ---- reads answered from the state after a concurrent commit ----

/// Passes the provider's answer through unchanged, saying `what` on `said` when it does.
fn pass_saying(said: &UnboundedSender<&'static str>, what: &'static str) -> proxy::Pass {
    let said = said.clone();
    Box::new(move |code, body| {
        said.send(what).unwrap();
        (code, body)
    })
}

/// An honest provider holding `f.bin` and `g.bin`, with a client that talks to it through a
/// proxy deciding by `decide`.
async fn behind_proxy(decide: impl Fn(&str) -> Answer + Send + Sync + 'static) -> (Setup, Arc<Client>, Vec<u8>) {
    let setup = Setup::new(Misbehave::None).await;
    let f = sample(50_000, 1);
    let direct = setup.client();
    put(&direct, "f.bin", &f).await;
    put(&direct, "g.bin", &sample(50_000, 2)).await;
    drop(direct);
    let url = proxy::proxy(setup.url(), decide).await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"{url}\"\n")).unwrap();
    let client = Arc::new(setup.client());
    (setup, client, f)
}

/// An edit of `g.bin` that reads no block (an insert at its start).
async fn edit_g(client: &Client) -> Result<(), ClientError> {
    client.edit("g.bin", &ByteEdit::Insert { at: 0, data: b"new".to_vec() }, BLOCK).await.map(|_| ())
}

fn versions_of_g(entries: Result<Vec<vouch_core::namespace::EntryRecord>, ClientError>) -> u64 {
    entries.unwrap().into_iter().find(|e| e.name == "g.bin").unwrap().versions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_sent_before_a_commit_and_answered_after_it_verifies() {
    let gate: Gate = Arc::new(Semaphore::new(0));
    let (tell, mut heard) = unbounded_channel();
    let hold = gate.clone();
    let (_setup, client, f) = behind_proxy(move |op| match op {
        "list" | "read" => {
            tell.send("arrived").unwrap();
            Answer::After(hold.clone(), Box::new(|code, body| (code, body)))
        }
        _ => Answer::Forward(Box::new(|code, body| (code, body))),
    })
    .await;
    let before = client.root();
    let lister = tokio::spawn({
        let client = client.clone();
        async move { client.list().await }
    });
    let getter = tokio::spawn({
        let client = client.clone();
        async move { read(&client, "f.bin").await }
    });
    // Both reads are at the proxy, sent under the root before the edit ...
    assert_eq!((heard.recv().await, heard.recv().await), (Some("arrived"), Some("arrived")));
    // ... which lands now; then the provider answers them from the state after it.
    edit_g(&client).await.unwrap();
    assert_ne!(client.root(), before);
    gate.add_permits(2);
    assert_eq!(versions_of_g(lister.await.unwrap()), 2);
    assert_eq!(getter.await.unwrap().unwrap(), f);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_answered_from_the_state_of_a_commit_still_in_flight_waits_for_it() {
    let gate: Gate = Arc::new(Semaphore::new(0));
    let (tell, mut heard) = unbounded_channel();
    let hold = gate.clone();
    let (_setup, client, _) = behind_proxy(move |op| match op {
        // The edit is applied; its answer is held back.
        "edit" => Answer::Hold(hold.clone(), pass_saying(&tell, "edit applied")),
        "list" => Answer::Forward(pass_saying(&tell, "list answered")),
        _ => Answer::Forward(Box::new(|code, body| (code, body))),
    })
    .await;
    let editor = tokio::spawn({
        let client = client.clone();
        async move { edit_g(&client).await }
    });
    assert_eq!(heard.recv().await, Some("edit applied"));
    let lister = tokio::spawn({
        let client = client.clone();
        async move { client.list().await }
    });
    // The listing comes from the state after the edit, before the client has its answer.
    assert_eq!(heard.recv().await, Some("list answered"));
    gate.add_permits(1);
    editor.await.unwrap().unwrap();
    assert_eq!(versions_of_g(lister.await.unwrap()), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_answered_after_a_commit_whose_answer_was_lost_settles_it() {
    let gate: Gate = Arc::new(Semaphore::new(0));
    let (tell, mut heard) = unbounded_channel();
    let hold = gate.clone();
    let (_setup, client, _) = behind_proxy(move |op| match op {
        // Applied, and its answer lost on the way back.
        "edit" => Answer::Forward(Box::new(|_, _| {
            let lost = ErrorBody { code: ErrorCode::Storage, message: "connection reset".into() };
            (503, vouch_proto::encode(&lost))
        })),
        "list" => {
            tell.send("arrived").unwrap();
            Answer::After(hold.clone(), Box::new(|code, body| (code, body)))
        }
        _ => Answer::Forward(Box::new(|code, body| (code, body))),
    })
    .await;
    let before = client.root();
    let lister = tokio::spawn({
        let client = client.clone();
        async move { client.list().await }
    });
    assert_eq!(heard.recv().await, Some("arrived"));
    let lost = edit_g(&client).await;
    assert!(matches!(lost, Err(ClientError::Unavailable(_))), "{lost:?}");
    assert!(client.has_unsettled_change());
    gate.add_permits(1);
    // The read settles the change (the provider proves it applied) and verifies.
    assert_eq!(versions_of_g(lister.await.unwrap()), 2);
    assert!(!client.has_unsettled_change());
    assert_ne!(client.root(), before);
}

// ---- a client without a directory ----

fn memory_key() -> ClientKey {
    ClientKey::Linear(LinearKey::from_secret([9; 32]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_a_directory_reads_and_writes_verified() {
    let setup = Setup::new(Misbehave::None).await;
    let store = Arc::new(MemoryState::new(Root::empty()));
    let state = ClientState { key: memory_key(), store: store.clone() };
    let client = Client::new(state, Remote::new(&setup.url(), TOKEN).unwrap()).unwrap();
    let data = sample(40_000, 3);
    put(&client, "m.bin", &data).await;
    assert_eq!(read(&client, "m.bin").await.unwrap(), data);
    assert_eq!(store.root(), client.root());
    assert_eq!(store.root().len, 1);
    // Another key over the same namespace cannot read what this one tagged.
    let other = Client::new(
        ClientState { key: ClientKey::Linear(LinearKey::from_secret([8; 32])), store: store.clone() },
        Remote::new(&setup.url(), TOKEN).unwrap(),
    )
    .unwrap();
    assert_violation(read(&other, "m.bin").await, Kind::AlteredBlock, "a block under another key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_a_directory_settles_a_lost_answer_from_its_store() {
    let setup = Setup::new(Misbehave::DropAnswer).await;
    let store = Arc::new(MemoryState::new(Root::empty()));
    let remote = || Remote::new(&setup.url(), TOKEN).unwrap();
    let client = Client::new(ClientState { key: memory_key(), store: store.clone() }, remote()).unwrap();
    let r = client.put("m.bin", Cursor::new(sample(10_000, 4)), BLOCK, |_| {}).await;
    assert!(matches!(r, Err(ClientError::Unavailable(_))), "{r:?}");
    let intent = store.intent().expect("recorded before the commit left");
    assert_eq!(intent.name(), "m.bin");
    assert_eq!(vouch_client::Intent::from_bytes(&intent.to_bytes()).as_ref(), Some(&intent));
    assert_eq!(store.root(), Root::empty());
    drop(client);
    // A new client over the same store (a restarted process) settles it.
    let client = Client::new(ClientState { key: memory_key(), store: store.clone() }, remote()).unwrap();
    assert!(client.has_unsettled_change());
    assert_eq!(names(&client).await, ["m.bin"]);
    assert_eq!((store.intent(), store.root()), (None, client.root()));
    assert_eq!(client.root().len, 1);
}

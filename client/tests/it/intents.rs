//! A change whose answer never arrives is settled from proven state by the next command: the
//! provider made it durable (`drop-answer`: commit, then answer "unavailable") and the client
//! adopts the new root; or it never reached the provider and the client keeps its root. Never
//! a "misbehaved" for an honest provider; always one for a state that is neither.

use crate::common;
use crate::proxy;

use common::{assert_violation, sample, Setup};
use proxy::{lie, lying_proxy, Answer, Gate, Lie, Rules};
use std::sync::{Arc, Mutex};
use vouch_client::{ByteEdit, Client, ClientError, ViolationKind};
use vouch_misbehave::Misbehave;
use vouch_proto::ErrorCode;

const BLOCK: Option<usize> = Some(4096);

async fn read(client: &Client, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    client.get(name, None, None, &mut out).await.unwrap();
    out
}

async fn versions(client: &Client, name: &str) -> Vec<u64> {
    client.log(name).await.unwrap().iter().map(|v| v.number).collect()
}

#[track_caller]
fn assert_answer_lost<T: std::fmt::Debug>(client: &Client, result: Result<T, ClientError>, what: &str) {
    assert!(matches!(result, Err(ClientError::Unavailable(_))), "{what}: expected Unavailable, got {result:?}");
    assert!(client.has_unsettled_change(), "{what}: the change is unsettled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_settled_by_the_next_command_for_every_kind_of_change() {
    let mut setup = Setup::new(Misbehave::DropAnswer).await;
    let client = setup.client();
    let v1 = sample(40_000, 1);

    // put: the next command adopts the new root and sees the file.
    let r = client.put("f.bin", std::io::Cursor::new(v1.clone()), BLOCK, |_| {}).await;
    assert_answer_lost(&client, r, "put");
    let names: Vec<String> = client.list().await.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["f.bin"]);
    assert!(!client.has_unsettled_change());
    assert_eq!(read(&client, "f.bin").await, v1);

    // edit, settled by a get.
    let r = client.edit("f.bin", &ByteEdit::Insert { at: 100, data: b"inserted".to_vec() }, BLOCK).await;
    assert_answer_lost(&client, r, "edit");
    let mut v2 = v1.clone();
    v2.splice(100..100, *b"inserted");
    assert_eq!(read(&client, "f.bin").await, v2);

    // sync, settled by a fresh client (another process, after this one died).
    let mut v3 = v2.clone();
    v3[20_000..20_100].fill(7);
    let local = setup.dir.path().join("local.bin");
    std::fs::write(&local, &v3).unwrap();
    let r = client.sync("f.bin", &local).await;
    assert_answer_lost(&client, r, "sync");
    drop(client);
    let client = setup.client();
    assert!(client.has_unsettled_change(), "the intent is kept in the state directory");
    assert_eq!(versions(&client, "f.bin").await, [1, 2, 3]);
    assert_eq!(read(&client, "f.bin").await, v3);

    // prune, settled after the provider restarted (honest now).
    let r = client.prune("f.bin", &[1]).await;
    assert_answer_lost(&client, r, "prune");
    setup.restart(Misbehave::None).await;
    let mut client = setup.client();
    assert_eq!(versions(&client, "f.bin").await, [2, 3]);

    // remove, the provider lost its answers again; settled by an audit of another name.
    setup.restart(Misbehave::DropAnswer).await;
    let client_g = setup.client();
    let r = client_g.put("g.bin", std::io::Cursor::new(b"gee".to_vec()), BLOCK, |_| {}).await;
    assert_answer_lost(&client_g, r, "put of g.bin");
    assert!(client_g.audit("g.bin", None, 10).await.unwrap().verified);
    let r = client_g.remove("f.bin").await;
    assert_answer_lost(&client_g, r, "remove");
    drop((client, client_g));
    client = setup.client();
    let r = client.version("f.bin", None).await;
    assert!(matches!(r, Err(ClientError::NotFound(_))), "removed, proven absent: {r:?}");
    assert_eq!(client.root().len, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intent_settled_twice_settles_to_the_same_root() {
    // An intent that outlives its settling (as one may after a crash between the two writes of
    // a state kept elsewhere: the root, then the intent's end) settles again to the same root.
    use vouch_client::{state::StateDir, StateStore};
    let setup = Setup::new(Misbehave::DropAnswer).await;
    let client = setup.client();
    let r = client.put("f.bin", std::io::Cursor::new(sample(10_000, 5)), BLOCK, |_| {}).await;
    assert_answer_lost(&client, r, "put");
    drop(client);
    let intent = StateDir::open(&setup.state).unwrap().intent().unwrap().expect("the put's intent");
    let client = setup.client();
    client.list().await.unwrap();
    let settled = client.root();
    drop(client);
    StateDir::open(&setup.state).unwrap().save_intent(&intent).unwrap();
    let client = setup.client();
    assert!(client.has_unsettled_change());
    assert_eq!(client.list().await.unwrap().len(), 1);
    assert_eq!(client.root(), settled);
    drop(client);
    assert_eq!(StateDir::open(&setup.state).unwrap().intent().unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_never_reached_the_provider_is_dropped_against_the_proven_old_state() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let data = sample(40_000, 2);
    for seed in [1, 2] {
        client.put("f.bin", std::io::Cursor::new(sample(40_000, seed)), BLOCK, |_| {}).await.unwrap();
    }
    let root = client.root();
    drop(client);
    // In front of the provider, a proxy that answers each change "unavailable" itself: the
    // intent is recorded, the request never arrives (as for a client killed before sending).
    let rules = Rules::default();
    let proxy = lying_proxy(setup.url(), rules.clone()).await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"{proxy}\"\n")).unwrap();
    let mut client = setup.client();
    let changes: [(&'static str, &str); 3] = [("edit", "edit"), ("prune", "prune"), ("remove", "remove")];
    for (op, what) in changes {
        lie(&rules, op, Lie::Bare(ErrorCode::Storage));
        let r = match op {
            "edit" => client.edit("f.bin", &ByteEdit::Replace { at: 0, data: vec![1; 10] }, BLOCK).await.map(|_| ()),
            "prune" => client.prune("f.bin", &[1]).await,
            _ => client.remove("f.bin").await,
        };
        assert!(matches!(r, Err(ClientError::Unavailable(_))), "{what}: {r:?}");
        assert!(client.has_unsettled_change(), "{what}: recorded before sending");
        rules.lock().unwrap().clear();
        // The next process settles it: the provider proves the state before the change.
        drop(client);
        client = setup.client();
        assert!(client.has_unsettled_change());
        assert_eq!(read(&client, "f.bin").await, data, "{what}");
        assert!(!client.has_unsettled_change());
        assert_eq!(client.root(), root, "{what}");
        drop(client);
        assert!(!vouch_client::state::StateDir::peek_unsettled(&setup.state).unwrap(), "{what}: settled for good");
        client = setup.client();
    }
    assert_eq!(versions(&client, "f.bin").await, [1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_that_is_neither_before_nor_after_the_change_is_a_lie() {
    let setup = Setup::new(Misbehave::DropAnswer).await;
    let a = setup.client();
    let r = a.put("a.bin", std::io::Cursor::new(b"first".to_vec()), BLOCK, |_| {}).await;
    assert_answer_lost(&a, r, "put");
    drop(a);
    // A copy of the state, intent included, settles it and makes one more change: from the
    // first copy's view the provider went beyond its change (a fork).
    let copy = setup.dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for f in ["config.toml", "secret", "state"] {
        std::fs::copy(setup.state.join(f), copy.join(f)).unwrap();
    }
    let b = Client::open(&copy).unwrap();
    let r = b.put("b.bin", std::io::Cursor::new(b"second".to_vec()), BLOCK, |_| {}).await;
    assert_answer_lost(&b, r, "put by the copy");
    assert_eq!(b.list().await.unwrap().len(), 2);

    let a = setup.client();
    let root = a.root();
    let r = a.list().await;
    assert_violation(r, ViolationKind::NeitherOldNorNew, "settling against a state beyond the change");
    assert!(a.has_unsettled_change(), "a violation settles nothing");
    assert_eq!(a.root(), root);
}

/// A client dies with its change still in transit; the next client settles it ("not applied",
/// proven); then the request reaches the provider. The provider refuses it (its attempt was
/// settled), so the next client goes on from the state it proved, for every kind of change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_still_in_transit_when_its_client_died_cannot_apply_after_it_was_settled() {
    let setup = Setup::new(Misbehave::None).await;
    let data = sample(40_000, 2);
    let client = setup.client();
    for seed in [1, 2] {
        client.put("f.bin", std::io::Cursor::new(sample(40_000, seed)), BLOCK, |_| {}).await.unwrap();
    }
    let root = client.root();
    drop(client);
    // The proxy holds each change until the test opens the gate, and tells what the provider
    // answered it.
    let gate: Gate = Arc::new(tokio::sync::Semaphore::new(0));
    let (arrived, mut at_proxy) = tokio::sync::mpsc::unbounded_channel();
    let (answered, mut provider_said) = tokio::sync::mpsc::unbounded_channel();
    let holding = Arc::new(Mutex::new(true));
    let proxy = proxy::proxy(setup.url(), {
        let (gate, holding) = (gate.clone(), holding.clone());
        move |op| match op {
            "edit" | "prune" | "remove" if *holding.lock().unwrap() => {
                arrived.send(()).unwrap();
                let answered = answered.clone();
                Answer::After(
                    gate.clone(),
                    Box::new(move |code, body| {
                        answered.send(code).unwrap();
                        (code, body)
                    }),
                )
            }
            _ => Answer::Forward(Box::new(|code, body| (code, body))),
        }
    })
    .await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"{proxy}\"\n")).unwrap();
    for what in ["edit", "prune", "remove"] {
        *holding.lock().unwrap() = true;
        let dying = setup.client();
        let change = tokio::spawn(async move {
            match what {
                "edit" => dying.edit("f.bin", &ByteEdit::Replace { at: 0, data: vec![1; 10] }, BLOCK).await.map(drop),
                "prune" => dying.prune("f.bin", &[1]).await,
                _ => dying.remove("f.bin").await,
            }
        });
        at_proxy.recv().await.unwrap();
        // The client dies; its request is still on its way.
        change.abort();
        assert!(change.await.unwrap_err().is_cancelled());
        *holding.lock().unwrap() = false;
        let next = setup.client();
        assert!(next.has_unsettled_change(), "{what}");
        assert_eq!(read(&next, "f.bin").await, data, "{what}: proven not applied");
        assert!(!next.has_unsettled_change());
        // Now the request arrives, too late.
        gate.add_permits(1);
        assert_eq!(provider_said.recv().await, Some(409), "{what}: refused as settled");
        assert_eq!(read(&next, "f.bin").await, data, "{what}");
        assert_eq!(versions(&next, "f.bin").await, [1, 2], "{what}");
        assert_eq!(next.root(), root, "{what}");
    }
}

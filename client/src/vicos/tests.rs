//! Steps inside one operation, which need it taken apart: a race between the object stored
//! and the `adict-put`, the retire queue, and the COMMIT-AUTH sent with a COMMIT.

use super::*;
use std::collections::HashMap;
use std::io::Cursor;
use vouch_server::{token_hash, Blocks, Provider, RunningServer};

const TOKEN: &str = "member";

async fn provider(dir: &std::path::Path) -> RunningServer {
    let provider = Provider::open_dir(dir, &Blocks::Local).unwrap();
    let clients = HashMap::from([(token_hash(TOKEN), "member".to_string())]);
    vouch_server::start("127.0.0.1:0", provider, clients, std::future::pending()).await.unwrap()
}

/// A provider in `dir`, and the group "team" on it: its creator (member 0) and member 1.
async fn team(dir: &std::path::Path) -> (RunningServer, Group, Group) {
    let server = provider(dir).await;
    let remote = || Remote::new(&format!("http://{}", server.addr), TOKEN).unwrap();
    let keys = Keyring::hmac([3; 32]);
    let alice = Group::create(remote(), "team", 0, keys.clone(), Mode::Compatible, None).await.unwrap();
    let bob = Group::join(remote(), "team", 1, keys, Mode::Compatible);
    (server, alice, bob)
}

/// Alg. 6 deletes `k||*` after an `adict-del(k)`. A put of `k` by another member that stored
/// its object before that and invokes its `adict-put` after it would then name an object the
/// delete took: every reader would blame an honest provider. A delete takes only the object
/// it replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_between_a_puts_upload_and_its_adict_put_leaves_the_put_readable() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, alice, bob) = team(dir.path()).await;
    assert_eq!(alice.put(b"k", Cursor::new(b"first".to_vec())).await.unwrap(), Outcome::Done(()));

    let nonce = [9; NONCE_LEN];
    let object = CosObject { group: "team".into(), key: ByteBuf::from(b"k".to_vec()), nonce };
    let (len, hash) = alice.cos_put(object, Cursor::new(b"second".to_vec())).await.unwrap();
    assert_eq!(bob.delete(b"k").await.unwrap(), Outcome::Done(()));
    let value = Named { nonce, len, hash }.value();
    let (settled, committed) = alice.run(DictOp::Put { key: b"k".to_vec(), value }).await.unwrap();
    assert_eq!(settled.outcome, Outcome::Done(DictResponse::Nothing));
    assert!(committed);
    assert_eq!(settled.replaced, None, "the put came after the delete");

    let mut out = Vec::new();
    assert_eq!(bob.get(b"k", &mut out).await.unwrap(), Outcome::Done(Some(6)));
    assert_eq!(out, b"second");
}

/// The objects a member's puts replaced wait in its queue until the put that fills the queue
/// deletes them all; the object each key holds now stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_put_that_fills_the_retire_queue_deletes_every_object_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, alice, bob) = team(dir.path()).await;
    let object = |nonce: [u8; NONCE_LEN]| CosObject { group: "team".into(), key: ByteBuf::from(b"k".to_vec()), nonce };
    let current = || async {
        let (named, mut aip) = alice.adict_get(b"k").await.unwrap();
        alice.finish(&mut aip).await.unwrap();
        let Outcome::Done(Some(named)) = named else { panic!("the key holds an object") };
        named.nonce
    };
    let bob = &bob;
    let stored = |nonce| async move { bob.cos_get(&object(nonce), 100, &mut Vec::new()).await.is_ok() };

    let mut replaced = Vec::new();
    for round in 0..=retire::RETIRE_BATCH {
        if round > 0 {
            replaced.push(current().await);
        }
        assert_eq!(alice.put(b"k", Cursor::new(vec![round as u8; 100])).await.unwrap(), Outcome::Done(()));
        if round + 1 == retire::RETIRE_BATCH {
            assert_eq!(alice.retired.len(), retire::RETIRE_BATCH - 1);
            assert!(stored(replaced[0]).await && stored(replaced[replaced.len() - 1]).await, "queued, not deleted");
        }
    }
    assert_eq!(alice.retired.len(), 0, "the batch went with the put that filled it");
    for nonce in &replaced {
        assert!(!stored(*nonce).await, "a replaced object is gone");
    }
    assert!(stored(current().await).await, "the key's object stays");
    let mut out = Vec::new();
    assert_eq!(bob.get(b"k", &mut out).await.unwrap(), Outcome::Done(Some(100)));
    assert_eq!(out, vec![retire::RETIRE_BATCH as u8; 100]);
}

/// A put with nothing pending before it goes out with its COMMIT-AUTH: once its COMMIT is
/// taken, the group has authenticated it, with no passive phase. A put behind another
/// member's pending put waits for its UPDATE-AUTH, as ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncontended_put_is_authenticated_with_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (server, alice, bob) = team(dir.path()).await;
    let progress = || async { server.provider().groups().progress("team").await.unwrap() };
    let put = |key: &str| DictOp::Put { key: key.into(), value: vec![1; Named::VALUE_LEN] };

    let (mut settled, mut aip) = alice.settle(put("a")).await.unwrap();
    let early = settled.early.take().expect("nothing was pending before it");
    let taken = alice.deliver(&mut aip, Some(early)).await.unwrap();
    assert!(taken.0.is_some_and(|work| work.update_auth.is_none()) && taken.1, "nothing left to do");
    assert_eq!(progress().await, (1, 1), "authenticated with its COMMIT");
    drop(aip);

    let (pending, mut bobs) = bob.settle(put("b")).await.unwrap();
    assert!(pending.early.is_some());
    let (behind, mut alices) = alice.settle(put("c")).await.unwrap();
    assert!(behind.early.is_none(), "bob's put was pending before it");
    bob.finish_with(&mut bobs, pending.early).await.unwrap();
    alice.finish_with(&mut alices, None).await.unwrap();
    assert_eq!(progress().await, (3, 3), "the passive phase authenticated the rest");
}

/// A listing goes page by page through the provider: pages of two over five keys, in path
/// order with each key once, the last one saying so; and `list` gathers them in byte order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_goes_page_by_page() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, alice, bob) = team(dir.path()).await;
    let names: Vec<Vec<u8>> = (0..5).map(|k| format!("key-{k}").into_bytes()).collect();
    for name in &names {
        assert_eq!(alice.put(name, Cursor::new(name.clone())).await.unwrap(), Outcome::Done(()));
    }
    let (mut pages, mut after, mut listed) = (0, None, Vec::new());
    loop {
        let Outcome::Done((keys, more)) = bob.list_page(after, 2).await.unwrap() else { panic!("no write is pending") };
        assert!(keys.len() <= 2 && (keys.len() == 2 || !more));
        pages += 1;
        after = keys.last().map(|k| key_path(k));
        listed.extend(keys);
        if !more {
            break;
        }
    }
    assert_eq!(pages, 3);
    let mut by_path = names.clone();
    by_path.sort_by_key(|k| key_path(k));
    assert_eq!(listed, by_path);
    assert_eq!(bob.list().await.unwrap(), Outcome::Done(names));
}

/// A key whose value an older vouch put (`x || h`, no length) is refused with a message that
/// says so, and blames no one: a member put it, and the provider cannot sign for one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_with_no_length_is_refused_as_an_older_vouchs() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, alice, bob) = team(dir.path()).await;
    let value = vec![7; NONCE_LEN + HASH_LEN];
    let (settled, _) = alice.run(DictOp::Put { key: b"old".to_vec(), value }).await.unwrap();
    assert_eq!(settled.outcome, Outcome::Done(DictResponse::Nothing));
    match bob.get(b"old", &mut Vec::new()).await {
        Err(ClientError::State(why)) => assert!(why.contains("older vouch"), "{why}"),
        other => panic!("expected an older vouch's value refused, got {other:?}"),
    }
}

/// A member that joins a group whose history is longer than one REPLY shows (#43 item 10):
/// the provider refuses its INVOKE as too large (never an oversize answer, never a lie), and
/// the member reads the history in pages, checks each, and runs its operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_far_behind_reads_the_history_in_pages_then_runs_its_operation() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Provider::open_dir(dir.path(), &Blocks::Local).unwrap();
    let clients = HashMap::from([(token_hash(TOKEN), "member".to_string())]);
    let limits = vouch_server::Limits { aip_page_bytes: 1024, ..Default::default() };
    let options = vouch_server::ServeOptions { limits, ..Default::default() };
    let server =
        vouch_server::start_with("127.0.0.1:0", provider, clients, options, std::future::pending()).await.unwrap();
    let remote = || Remote::new(&format!("http://{}", server.addr), TOKEN).unwrap();
    let keys = Keyring::hmac([3; 32]);
    let alice = Group::create(remote(), "team", 0, keys.clone(), Mode::Compatible, None).await.unwrap();
    for k in 0..40 {
        let name = format!("key-{k}").into_bytes();
        assert_eq!(alice.put(&name, Cursor::new(name.clone())).await.unwrap(), Outcome::Done(()));
    }
    let (applied, _) = server.provider().groups().progress("team").await.unwrap();
    assert!(applied >= 40, "{applied}");

    let bob = Group::join(remote(), "team", 1, keys, Mode::Compatible);
    let mut out = Vec::new();
    assert_eq!(bob.get(b"key-7", &mut out).await.unwrap(), Outcome::Done(Some(5)));
    assert_eq!(out, b"key-7");
    assert!(bob.aip.lock().await.cleared() >= applied, "bob cleared the history it was shown in pages");
    assert_eq!(bob.put(b"key-7", Cursor::new(b"bob's".to_vec())).await.unwrap(), Outcome::Done(()));
    let mut out = Vec::new();
    assert_eq!(alice.get(b"key-7", &mut out).await.unwrap(), Outcome::Done(Some(5)));
    assert_eq!(out, b"bob's");
}

//! A VICOS member that crashes mid-operation goes on, and so does its group (paper 003,
//! Sec. 3.7, done by the member itself): its state is saved after each REPLY and before the
//! COMMIT leaves, so a COMMIT the crash kept from the provider is sent when it comes back,
//! and an INVOKE whose REPLY never came is aborted by its own next operation, instead of
//! holding up every later operation of the group until a takeover.

use crate::common;

use common::{Setup, TOKEN_BOB};
use serde_bytes::ByteBuf;
use std::io::Cursor;
use std::path::Path;
use std::time::Duration;
use vouch_client::vicos::{Group, GroupFile, Signatures};
use vouch_client::{ClientError, Remote};
use vouch_core::aip::{self, Adict, DictOp, Mode, Outcome, Reply, Wire};
use vouch_misbehave::Misbehave;
use vouch_proto::vicos::{AipInvoke, AipReply};
use vouch_server::ServeOptions;

const GROUP: &str = "team";

fn done<T: std::fmt::Debug>(r: Result<Outcome<T>, ClientError>) -> T {
    match r {
        Ok(Outcome::Done(t)) => t,
        other => panic!("expected the operation done, got {other:?}"),
    }
}

async fn read(g: &Group, key: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    done(g.get(key.as_bytes(), &mut out).await).map(|_| out)
}

/// Alice (member 0, opened from the state directory) and Bob (member 1, in memory).
async fn group(setup: &Setup) -> (Group, Group) {
    let bobs = Group::init(&setup.state, GROUP, Mode::Compatible, Signatures::Hmac).await.unwrap();
    let alice = Group::open(&setup.state, GROUP).unwrap();
    let remote = Remote::new(&setup.url(), TOKEN_BOB).unwrap();
    let bob = Group::join(remote, GROUP, bobs.id, bobs.keys().unwrap(), Mode::Compatible);
    (alice, bob)
}

/// What a process of Alice's does up to a crash: restores her saved state, sends an INVOKE
/// of `put(key)`, and, when `saved_after_reply`, checks the REPLY and saves the state the
/// way a member does before its COMMIT leaves. The COMMIT never leaves.
async fn crash_mid_put(setup: &Setup, key: &str, saved_after_reply: bool) {
    let saved_path = setup.state.join("groups").join(format!("{GROUP}.aip"));
    let file = GroupFile::read(&setup.state.join("groups").join(format!("{GROUP}.toml"))).unwrap();
    let adict = Adict { mode: Mode::Compatible };
    let mut aip = aip::Client::restore(&std::fs::read(&saved_path).unwrap(), 0, file.keys().unwrap(), adict).unwrap();
    let value = [[9u8; 16].as_slice(), &[0; 32]].concat(); // names no stored object: never read
    let invoke = aip.invoke(DictOp::Put { key: key.into(), value }).unwrap();
    let remote = Remote::new(&setup.url(), common::TOKEN).unwrap();
    let asked = AipInvoke { group: GROUP.into(), from: 0, invoke: ByteBuf::from(invoke.to_wire()), commits: vec![] };
    let reply: AipReply = remote.call(&asked).await.unwrap();
    if saved_after_reply {
        aip.on_reply(Reply::from_wire(&reply.reply).unwrap()).unwrap();
        write(&saved_path, &aip.save());
    }
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invoke_cut_off_by_a_crash_is_aborted_and_the_group_goes_on() {
    let setup = Setup::new(Misbehave::None).await;
    let (alice, bob) = group(&setup).await;
    done(alice.put(b"first", Cursor::new(b"1".to_vec())).await);
    drop(alice); // the process ends (its lock with it)
    crash_mid_put(&setup, "lost", false).await;

    // Alice runs again from the state saved before the crash: her next operation sees her
    // own operation pending with no COMMIT, and aborts it.
    let alice = Group::open(&setup.state, GROUP).unwrap();
    assert_eq!(read(&alice, "first").await.unwrap(), b"1");
    // More operations than the provider's pending bound (128): with the hanging INVOKE
    // still in the way, nothing would be applied and the provider would turn them away.
    for n in 0..140u32 {
        done(bob.put(format!("k{n}").as_bytes(), Cursor::new(n.to_le_bytes().to_vec())).await);
    }
    assert_eq!(read(&alice, "k139").await.unwrap(), 139u32.to_le_bytes());
    assert_eq!(read(&bob, "lost").await, None, "never committed: aborted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_a_crash_kept_from_the_provider_is_sent_when_the_member_comes_back() {
    let setup = Setup::new(Misbehave::None).await;
    let (alice, bob) = group(&setup).await;
    done(alice.put(b"first", Cursor::new(b"1".to_vec())).await);
    drop(alice);
    crash_mid_put(&setup, "landed", true).await;

    let alice = Group::open(&setup.state, GROUP).unwrap();
    // The put is pending, its outcome unknown to others: a list (incompatible) aborts.
    assert_eq!(bob.list().await.unwrap(), Outcome::Abort);
    // Alice's next operation sends the COMMIT her saved state holds: the put she answered
    // for lands, and everything after it is applied.
    assert_eq!(read(&alice, "first").await.unwrap(), b"1");
    for n in 0..140u32 {
        done(bob.put(format!("k{n}").as_bytes(), Cursor::new(vec![1])).await);
    }
    let keys = done(bob.list().await);
    assert_eq!(keys.len(), 142);
    assert!(keys.contains(&b"landed".to_vec()));
}

/// The provider answers a COMMIT before its journal write (the next message's write takes it
/// along), and a crash in between loses it. The member, the same process, carries it in its
/// next INVOKE: the put it reported done stays done, and the group goes on past it (more
/// operations than the pending list holds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_the_provider_answered_and_lost_in_a_crash_rides_in_the_next_invoke() {
    let mut setup = Setup::new(Misbehave::None).await;
    let unflushed = vouch_server::Limits { vicos_flush_after: Duration::from_secs(3600), ..Default::default() };
    setup.crash_and_restart(ServeOptions { limits: unflushed, ..ServeOptions::default() }).await;
    let (alice, bob) = group(&setup).await;
    done(alice.put(b"landed", Cursor::new(b"1".to_vec())).await);
    setup.crash_and_restart(ServeOptions::default()).await;

    // The COMMIT is gone: the put is pending, its outcome unknown to others.
    assert_eq!(bob.list().await.unwrap(), Outcome::Abort);
    // Alice's next operation carries it.
    assert_eq!(read(&alice, "first").await, None);
    for n in 0..140u32 {
        done(bob.put(format!("k{n}").as_bytes(), Cursor::new(vec![1])).await);
    }
    let keys = done(bob.list().await);
    assert_eq!(keys.len(), 141);
    assert_eq!(read(&bob, "landed").await.unwrap(), b"1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_save_failed_leaves_only_after_a_save_succeeds() {
    let setup = Setup::new(Misbehave::None).await;
    let (alice, bob) = group(&setup).await;
    done(alice.put(b"first", Cursor::new(b"1".to_vec())).await);
    // The disk refuses the write-ahead save (a directory where the state file goes).
    let saved = setup.state.join("groups").join(format!("{GROUP}.aip"));
    let aside = saved.with_extension("aside");
    std::fs::rename(&saved, &aside).unwrap();
    std::fs::create_dir_all(saved.join("blocker")).unwrap();
    let failed = alice.put(b"second", Cursor::new(b"2".to_vec())).await;
    assert!(matches!(failed, Err(ClientError::Io { .. })), "{failed:?}");
    // Still refused: the next operation does not send the COMMIT it holds before a save
    // succeeds (a crash after sending it would bring back a state that aborts it).
    let again = alice.put(b"third", Cursor::new(b"3".to_vec())).await;
    assert!(matches!(again, Err(ClientError::Io { .. })), "{again:?}");
    assert_eq!(bob.list().await.unwrap(), Outcome::Abort, "the put of 'second' is still pending, uncommitted");
    // The disk is back: the COMMIT is saved, then sent, and the put lands.
    std::fs::remove_dir_all(&saved).unwrap();
    std::fs::rename(&aside, &saved).unwrap();
    assert_eq!(read(&alice, "first").await.unwrap(), b"1");
    assert_eq!(read(&bob, "second").await.unwrap(), b"2");
    assert_eq!(read(&bob, "third").await, None, "never invoked");
}

/// A proxy in front of `setup`'s provider that passes every request on and loses the answer
/// of each successful `op` (the provider applied it; the client hears it dropped).
async fn losing_answers_of(setup: &Setup, op: &'static str) -> String {
    let lost = |status, body| match status {
        200 => (503, b"the connection dropped".to_vec()),
        _ => (status, body),
    };
    crate::proxy::proxy(setup.url(), move |asked| match asked == op {
        true => crate::proxy::Answer::Forward(Box::new(lost)),
        false => crate::proxy::Answer::Forward(Box::new(|status, body| (status, body))),
    })
    .await
}

/// Points Alice's state directory at `url` (a proxy in front of the provider, or the
/// provider again).
fn serve_alice_from(setup: &Setup, from: &str, to: &str) {
    let config = setup.state.join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains(from), "{text}");
    write(&config, text.replace(from, to).as_bytes());
}

/// A process killed after its first INVOKE left, before it saved anything: the next process
/// must not sign that INVOKE's counter again (the provider refuses a repeated counter as a
/// replay, and the member's next command failed with advice to join under another id).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_after_its_first_invoke_left_never_signs_its_counter_again() {
    let setup = Setup::new(Misbehave::None).await;
    let (alice, _bob) = group(&setup).await;
    done(alice.put(b"first", Cursor::new(b"1".to_vec())).await);
    // The command ends as the CLI's do: nothing left to send, the state saved.
    alice.help().await.unwrap();
    alice.save(&setup.state).await.unwrap();
    drop(alice);
    // The INVOKE reaches the provider; its answer never reaches the member.
    let url = losing_answers_of(&setup, "aip-invoke").await;
    serve_alice_from(&setup, &setup.url(), &url);
    let alice = Group::open(&setup.state, GROUP).unwrap();
    // A list: an INVOKE and nothing else (the proxy takes no streamed bodies).
    let cut = alice.list().await;
    assert!(matches!(cut, Err(ClientError::Refused { .. })), "{cut:?}");
    drop(alice); // killed: nothing is saved after the INVOKE left
    serve_alice_from(&setup, &url, &setup.url());
    let alice = Group::open(&setup.state, GROUP).unwrap();
    assert_eq!(read(&alice, "first").await.unwrap(), b"1");
}

/// A `group init` whose creation reached the provider but whose answer never came back (a lost
/// answer, or a process killed before it kept the group): run again, it sends the same
/// creation, which the provider takes as done, and the group works. A creation under the same
/// name with another key is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_init_whose_answer_was_lost_is_finished_by_running_it_again() {
    let setup = Setup::new(Misbehave::None).await;
    let url = losing_answers_of(&setup, "aip-create").await;
    serve_alice_from(&setup, &setup.url(), &url);
    let cut = Group::init(&setup.state, GROUP, Mode::Compatible, Signatures::Hmac).await;
    assert!(matches!(cut, Err(ClientError::Refused { .. })), "{cut:?}");
    serve_alice_from(&setup, &url, &setup.url());
    // Settings other than the interrupted init's are refused, not sent as a new creation.
    let other = Group::init(&setup.state, GROUP, Mode::Commutative, Signatures::Hmac).await;
    assert!(matches!(&other, Err(ClientError::State(m)) if m.contains("interrupted")), "{other:?}");
    let bobs = Group::init(&setup.state, GROUP, Mode::Compatible, Signatures::Hmac).await.unwrap();
    // Once more (killed after it kept the group, before its key file was written): the same
    // key file again; with other settings, refused.
    let again = Group::init(&setup.state, GROUP, Mode::Compatible, Signatures::Hmac).await.unwrap();
    assert_eq!((again.key.as_deref(), again.id), (bobs.key.as_deref(), bobs.id));
    assert!(again.key.is_some());
    let other = Group::init(&setup.state, GROUP, Mode::Commutative, Signatures::Hmac).await;
    assert!(matches!(&other, Err(ClientError::State(m)) if m.contains("already a member")), "{other:?}");
    let alice = Group::open(&setup.state, GROUP).unwrap();
    done(alice.put(b"k", Cursor::new(b"v".to_vec())).await);
    let remote = Remote::new(&setup.url(), TOKEN_BOB).unwrap();
    let bob = Group::join(remote, GROUP, bobs.id, bobs.keys().unwrap(), Mode::Compatible);
    assert_eq!(read(&bob, "k").await.unwrap(), b"v");
    // Another creation of the name (a fresh key) is refused.
    let elsewhere = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&setup.state).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), elsewhere.path().join(entry.file_name())).unwrap();
        }
    }
    let again = Group::init(elsewhere.path(), GROUP, Mode::Compatible, Signatures::Hmac).await;
    assert!(matches!(&again, Err(ClientError::Refused { .. })), "{again:?}");
}

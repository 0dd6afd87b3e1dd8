//! VICOS end to end (paper 003, Sec. 4): members of one group over a real provider, its AIP
//! sequencer and its object store. Honest runs complete and agree; an object tampered with,
//! rolled back or swapped in the store is caught by the member that reads it.

use crate::common;
use crate::proxy;

use common::{sample, Setup, TOKEN, TOKEN_BOB};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use vouch_client::vicos::Group;
use vouch_client::{ClientError, Remote, ViolationKind};
use vouch_core::aip::{ClientId, Keyring, Mode, Outcome};
use vouch_misbehave::Misbehave;

const GROUP: &str = "team";

fn keys() -> Keyring {
    Keyring::hmac([7; 32])
}

/// Member `me` of [`GROUP`] with the provider token `token`.
pub(crate) fn member(setup: &Setup, token: &str, me: ClientId) -> Group {
    Group::join(Remote::new(&setup.url(), token).unwrap(), GROUP, me, keys(), Mode::Compatible)
}

pub(crate) async fn create(setup: &Setup) -> Group {
    Group::create(Remote::new(&setup.url(), TOKEN).unwrap(), GROUP, 0, keys(), Mode::Compatible, None).await.unwrap()
}

fn done<T: std::fmt::Debug>(r: Result<Outcome<T>, ClientError>) -> T {
    match r {
        Ok(Outcome::Done(t)) => t,
        other => panic!("expected the operation done, got {other:?}"),
    }
}

pub(crate) async fn put(g: &Group, key: &str, data: &[u8]) {
    done(g.put(key.as_bytes(), Cursor::new(data.to_vec())).await);
}

pub(crate) async fn get(g: &Group, key: &str) -> Result<Option<Vec<u8>>, ClientError> {
    let mut out = Vec::new();
    match g.get(key.as_bytes(), &mut out).await? {
        Outcome::Done(Some(len)) => {
            assert_eq!(len as usize, out.len());
            Ok(Some(out))
        }
        Outcome::Done(None) => Ok(None),
        Outcome::Abort => panic!("a sequential get aborted"),
    }
}

pub(crate) async fn list(g: &Group) -> Vec<String> {
    done(g.list().await).into_iter().map(|k| String::from_utf8(k).unwrap()).collect()
}

/// A client of the provider outside the group (it holds another group key) can neither speak
/// as a member nor reach the group's objects, and the members go on. Before admission, its
/// INVOKE joined the history, and the members blamed the provider for its signature.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_outside_the_group_is_refused_and_the_members_go_on() {
    let setup = Setup::new(Misbehave::None).await;
    let alice = create(&setup).await;
    put(&alice, "k", b"alice's").await;
    let remote = Remote::new(&setup.url(), TOKEN_BOB).unwrap();
    let stranger = Group::join(remote, GROUP, 1, Keyring::hmac([8; 32]), Mode::Compatible);
    let put_by_stranger = stranger.put(b"k", Cursor::new(b"x".to_vec())).await.map(drop);
    let list_by_stranger = stranger.list().await.map(drop);
    for attempt in [put_by_stranger, list_by_stranger] {
        assert!(matches!(&attempt, Err(ClientError::Unauthorized(m)) if m.contains("admission")), "{attempt:?}");
    }
    // The group's key admits member 1 through the same provider client; no one sees a lie.
    let bob = member(&setup, TOKEN_BOB, 1);
    assert_eq!(get(&bob, "k").await.unwrap().as_deref(), Some(&b"alice's"[..]));
    put(&bob, "k", b"bob's").await;
    assert_eq!(get(&alice, "k").await.unwrap().as_deref(), Some(&b"bob's"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_of_a_group_see_each_others_objects() {
    let setup = Setup::new(Misbehave::None).await;
    let alice = create(&setup).await;
    let bob = member(&setup, TOKEN_BOB, 1);
    let big = sample(5 << 20, 1);
    put(&alice, "big.bin", &big).await;
    put(&alice, "small", b"hello").await;
    assert_eq!(get(&bob, "big.bin").await.unwrap().unwrap(), big);
    assert_eq!(list(&bob).await, ["big.bin", "small"]);
    put(&bob, "small", b"hello again").await;
    assert_eq!(get(&alice, "small").await.unwrap().unwrap(), b"hello again");
    done(alice.delete(b"small").await);
    assert_eq!(get(&bob, "small").await.unwrap(), None, "deleted, and proven absent");
    assert_eq!(list(&alice).await, ["big.bin"]);
    assert_eq!(get(&alice, "never").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_members_all_complete_and_agree() {
    let setup = Setup::new(Misbehave::None).await;
    let alice = create(&setup).await;
    let members: Vec<Group> = (1..4).map(|i| member(&setup, if i % 2 == 0 { TOKEN } else { TOKEN_BOB }, i)).collect();
    let members = std::sync::Arc::new(members);
    let mut tasks = Vec::new();
    for i in 0..3 {
        let members = members.clone();
        tasks.push(tokio::spawn(async move {
            let g = &members[i];
            for round in 0..5 {
                let key = format!("m{i}-{round}");
                // Each member writes its own keys: compatible operations, none aborts.
                done(g.put(key.as_bytes(), Cursor::new(sample(10_000, (i * 10 + round) as u64))).await);
                assert!(get(g, &key).await.unwrap().is_some());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let all = list(&alice).await;
    assert_eq!(all.len(), 15);
    for i in 0..3 {
        for round in 0..5 {
            let got = get(&alice, &format!("m{i}-{round}")).await.unwrap().unwrap();
            assert_eq!(got, sample(10_000, (i * 10 + round) as u64));
        }
    }
}

/// The files of the provider's object store holding exactly `bytes`.
fn stored_as(root: &Path, bytes: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if std::fs::metadata(&path).unwrap().len() == bytes.len() as u64
                && std::fs::read(&path).unwrap() == bytes
            {
                found.push(path);
            }
        }
    }
    found
}

fn assert_caught<T: std::fmt::Debug>(r: Result<T, ClientError>, kind: ViolationKind, what: &str) {
    match &r {
        Err(e) if e.violation_kind() == Some(kind) => {}
        other => panic!("{what}: expected {kind}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_tampered_with_rolled_back_or_swapped_in_the_store_is_caught() {
    let setup = Setup::new(Misbehave::None).await;
    let alice = create(&setup).await;
    let bob = member(&setup, TOKEN_BOB, 1);
    let (one, two, other) = (sample(100_000, 2), sample(100_000, 3), sample(100_000, 4));
    put(&alice, "f", &one).await;
    put(&alice, "f", &two).await;
    put(&alice, "g", &other).await;
    let file_of = |bytes: &[u8]| {
        let files = stored_as(&setup.data, bytes);
        assert_eq!(files.len(), 1, "one stored copy");
        files.into_iter().next().unwrap()
    };
    assert_eq!(stored_as(&setup.data, &one).len(), 1, "replaced, queued to go");
    alice.flush_retired().await;
    let (f_two, g) = (file_of(&two), file_of(&other));
    assert!(stored_as(&setup.data, &one).is_empty(), "the object the second put replaced is gone");

    // Rolled back: the key's current object holds the old bytes.
    std::fs::write(&f_two, &one).unwrap();
    assert_caught(get(&bob, "f").await, ViolationKind::AlteredObject, "a rolled-back object");
    // Swapped: each key's object holds the other's bytes.
    std::fs::write(&f_two, &other).unwrap();
    std::fs::write(&g, &two).unwrap();
    assert_caught(get(&bob, "f").await, ViolationKind::AlteredObject, "a swapped object");
    assert_caught(get(&alice, "g").await, ViolationKind::AlteredObject, "a swapped object");
    // Tampered with: one byte flipped.
    let mut flipped = two.clone();
    flipped[5000] ^= 1;
    std::fs::write(&f_two, &flipped).unwrap();
    std::fs::write(&g, &other).unwrap();
    assert_caught(get(&bob, "f").await, ViolationKind::AlteredObject, "a tampered object");
    assert_eq!(get(&bob, "g").await.unwrap().unwrap(), other, "an untouched object still reads");
    // Gone: a "not found" for an object the history names is a lie.
    std::fs::remove_file(&f_two).unwrap();
    assert_caught(get(&alice, "f").await, ViolationKind::UnprovenNotFound, "a deleted object");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forked_history_goes_unseen_apart_and_is_caught_when_the_forks_meet() {
    let setup = Setup::new(Misbehave::ForkAip).await;
    let alice = create(&setup).await;
    let bob = member(&setup, TOKEN_BOB, 1);
    for i in 0..6 {
        put(&alice, &format!("a{i}"), b"alice's").await;
    }
    // Bob's first operations run on a second history, honest in itself: each fork alone is
    // linearizable, so nothing can tell yet (fork linearizability allows exactly this).
    put(&bob, "b", b"bob's").await;
    assert_eq!(list(&bob).await, ["b"], "bob sees his fork");
    assert_eq!(get(&bob, "a0").await.unwrap(), None);
    assert_eq!(get(&alice, "b").await.unwrap(), None, "alice never sees bob's put");
    // The forks meet: bob is shown alice's history, which does not extend his.
    assert_caught(bob.list().await, ViolationKind::BadAipAnswer, "forks that meet");
    let first = bob.caught().expect("the catch is kept");
    assert_eq!(first.operation, "a listing");
    assert!(first.detail.contains("history"), "{first:?}");
    // Every later operation says so, and which operation caught it: not whatever its AIP
    // state, left in the middle of the listing, would say next.
    let mut out = Vec::new();
    let later = [
        bob.put(b"c", std::io::Cursor::new(b"x".to_vec())).await.map(|_| ()),
        bob.get(b"a0", &mut out).await.map(|_| ()),
        bob.delete(b"b").await.map(|_| ()),
        bob.list().await.map(|_| ()),
        bob.help().await,
    ];
    for result in later {
        let e = result.expect_err("refused");
        assert_eq!(e.violation_kind(), Some(ViolationKind::BadAipAnswer), "{e}");
        let text = e.to_string();
        assert!(text.contains("caught the provider lying") && text.contains("in a listing"), "{text}");
        assert!(!text.contains("already in progress"), "{text}");
    }
    assert!(out.is_empty());
    assert_eq!(bob.caught(), Some(first), "the first catch stays the account");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_go_on_across_a_provider_restart() {
    let mut setup = Setup::new(Misbehave::None).await;
    let alice = create(&setup).await;
    put(&alice, "before", b"1").await;
    setup.restart(Misbehave::None).await;
    // The sequencer replayed its journal: the history goes on where it was, and each
    // member's chain accepts it. Alice's state went with her process: she comes back under a
    // new id (under her old one, her first REPLY would show her own put, which her new state
    // never made: #43 item 9).
    let alice = Group::join(Remote::new(&setup.url(), TOKEN).unwrap(), GROUP, 2, keys(), Mode::Compatible);
    let bob = member(&setup, TOKEN_BOB, 1);
    put(&alice, "after", b"2").await;
    assert_eq!(list(&bob).await, ["after", "before"]);
    assert_eq!(get(&bob, "before").await.unwrap().unwrap(), b"1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_of_one_key_at_once_abort_or_land_and_retries_finish() {
    let setup = Setup::new(Misbehave::None).await;
    let remote = || Remote::new(&setup.url(), TOKEN_BOB).unwrap();
    // The commutative mode (the ACOP baseline): two puts of one key do not commute, so a put
    // with another pending aborts.
    Group::create(remote(), GROUP, 0, keys(), Mode::Commutative, None).await.unwrap();
    let members: Vec<std::sync::Arc<Group>> =
        (1..5).map(|i| std::sync::Arc::new(Group::join(remote(), GROUP, i, keys(), Mode::Commutative))).collect();
    let data = |i: usize, round: usize| sample(20_000, 50 + (i * 10 + round) as u64);
    let mut tasks = Vec::new();
    for (i, g) in members.iter().enumerate() {
        let g = g.clone();
        tasks.push(tokio::spawn(async move {
            let mut aborts = 0;
            for round in 0..3 {
                while let Outcome::Abort = g.put(b"hot", Cursor::new(data(i, round))).await.unwrap() {
                    aborts += 1;
                }
            }
            aborts
        }));
    }
    let mut aborts = 0;
    for t in tasks {
        aborts += t.await.unwrap();
    }
    let last = get(&members[0], "hot").await.unwrap().unwrap();
    assert!((0..4).any(|i| last == data(i, 2)), "the key holds a member's last whole object");
    // An aborted put deletes its object (Alg. 6), and a landed one the object it replaced
    // (queued: each member's queue goes here): the store holds the key's last object alone,
    // however often puts aborted first.
    for m in &members {
        m.flush_retired().await;
    }
    for i in 0..4 {
        for round in 0..3 {
            let copies = usize::from(data(i, round) == last);
            assert_eq!(stored_as(&setup.data, &data(i, round)).len(), copies, "member {i}'s put {round}");
        }
    }
    println!("{aborts} aborts");
}

/// Puts of one key at once never abort in the compatible mode; each deletes the object it
/// replaced once committed, and readers that meet a deleted object ask again: none of them
/// sees a lie, and the store ends with the key's last object alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaced_objects_leave_the_store_while_readers_go_on() {
    let setup = Setup::new(Misbehave::None).await;
    let alice = create(&setup).await;
    let members: Vec<std::sync::Arc<Group>> =
        (1..7).map(|i| std::sync::Arc::new(member(&setup, TOKEN_BOB, i))).collect();
    let data = |i: usize, round: usize| sample(30_000, 900 + (i * 10 + round) as u64);
    let mut writers = Vec::new();
    for (i, g) in members[..4].iter().enumerate() {
        let g = g.clone();
        writers.push(tokio::spawn(async move {
            for round in 0..5 {
                done(g.put(b"hot", Cursor::new(data(i, round))).await);
            }
            g.flush_retired().await;
        }));
    }
    let mut readers = Vec::new();
    for g in &members[4..] {
        let g = g.clone();
        readers.push(tokio::spawn(async move {
            let (mut read, mut busy) = (0, 0);
            for _ in 0..40 {
                let mut out = Vec::new();
                match g.get(b"hot", &mut out).await {
                    Ok(Outcome::Done(Some(_))) => {
                        assert!((0..4).any(|i| (0..5).any(|r| out == data(i, r))), "a whole object");
                        read += 1;
                    }
                    Ok(_) => {}
                    Err(e) if vouch_client::vicos::is_busy(&e) => busy += 1,
                    Err(e) => panic!("an honest provider blamed: {e}"),
                }
            }
            (read, busy)
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    for r in readers {
        let (read, busy) = r.await.unwrap();
        println!("a reader: {read} objects read, {busy} gave up on a changing key");
    }
    let last = get(&alice, "hot").await.unwrap().unwrap();
    for i in 0..4 {
        for round in 0..5 {
            let copies = usize::from(data(i, round) == last);
            assert_eq!(stored_as(&setup.data, &data(i, round)).len(), copies, "member {i}'s put {round}");
        }
    }
    done(alice.delete(b"hot").await);
    alice.flush_retired().await;
    assert!(stored_as(&setup.data, &last).is_empty(), "a delete takes the object it replaced");
    assert_eq!(get(&alice, "hot").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_racing_a_delete_of_its_key_is_never_a_lie() {
    let setup = Setup::new(Misbehave::None).await;
    let alice = std::sync::Arc::new(create(&setup).await);
    let bob = member(&setup, TOKEN_BOB, 1);
    let reader = {
        let alice = alice.clone();
        tokio::spawn(async move {
            let mut seen = 0;
            for _ in 0..150 {
                let mut out = Vec::new();
                // Honest: the object, proven absence, ABORT, or a retry; never a violation.
                if let Outcome::Done(Some(_)) = alice.get(b"k", &mut out).await.unwrap() {
                    assert_eq!(out, b"value");
                    seen += 1;
                }
            }
            seen
        })
    };
    for _ in 0..60 {
        done(bob.put(b"k", Cursor::new(b"value".to_vec())).await);
        done(bob.delete(b"k").await);
    }
    println!("{} reads found the object", reader.await.unwrap());
}

/// A store that starts an object and then says it is not found (a frame of its own, midway)
/// is caught like one that says so at once: the history names the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_said_missing_midway_is_a_lie() {
    let setup = Setup::new(Misbehave::None).await;
    let alice = create(&setup).await;
    put(&alice, "big", &sample(3_000_000, 5)).await;
    let cut = |code: u16, body: Vec<u8>| {
        if code != 200 {
            return (code, body);
        }
        let first = 4 + u32::from_le_bytes(body[..4].try_into().unwrap()) as usize;
        let missing = vouch_proto::ErrorBody { code: vouch_proto::ErrorCode::NotFound, message: "gone".into() };
        let mut out = body[..first].to_vec();
        out.extend_from_slice(&vouch_proto::encode_frame(&vouch_proto::vicos::CosGetFrame::Error(missing)));
        (code, out)
    };
    let url = proxy::proxy(setup.url(), move |op| match op {
        "cos-get" => proxy::Answer::Forward(Box::new(cut)),
        _ => proxy::Answer::Forward(Box::new(|code, body| (code, body))),
    })
    .await;
    let bob = Group::join(Remote::new(&url, TOKEN_BOB).unwrap(), GROUP, 1, keys(), Mode::Compatible);
    assert_caught(get(&bob, "big").await, ViolationKind::UnprovenNotFound, "not found midway");
}

/// Passes the provider's answer through unchanged.
fn unchanged() -> proxy::Pass {
    Box::new(|code, body| (code, body))
}

/// The race of a get retried after a "not found": the store streams garbage for the object
/// the history names, then says "not found"; the reader asks the history again, and the
/// provider holds that INVOKE until another member's put of the key lands. The key now names
/// another object, so the "not found" is what an honest store says of a replaced object,
/// but the garbage has reached the output: the get must not go on into the new object and
/// report garbage ‖ new object as verified. It fails as changed (its output to be
/// discarded), and a read into a fresh output gets the new object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_then_not_found_while_another_put_lands_is_never_a_verified_get() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    use tokio::sync::Semaphore;
    use vouch_proto::vicos::CosGetFrame;
    let setup = Setup::new(Misbehave::None).await;
    let alice = create(&setup).await;
    put(&alice, "k", b"the first object").await;
    let (lied, invokes) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let (arrived, gate) = (Arc::new(Semaphore::new(0)), Arc::new(Semaphore::new(0)));
    let url = {
        let (arrived, gate) = (arrived.clone(), gate.clone());
        proxy::proxy(setup.url(), move |op| match op {
            "cos-get" if !lied.swap(true, SeqCst) => {
                // Shorter than the object: within the length its value holds.
                let garbage = CosGetFrame::Data(serde_bytes::ByteBuf::from(b"GARBAGE".to_vec()));
                let missing = vouch_proto::ErrorBody { code: vouch_proto::ErrorCode::NotFound, message: "gone".into() };
                let mut body = vouch_proto::encode_frame(&garbage);
                body.extend(vouch_proto::encode_frame(&CosGetFrame::Error(missing)));
                proxy::Answer::Own(200, body)
            }
            // The reader's second INVOKE (its get asked again) waits for the other put.
            "aip-invoke" if invokes.fetch_add(1, SeqCst) == 1 => {
                arrived.add_permits(1);
                proxy::Answer::After(gate.clone(), unchanged())
            }
            _ => proxy::Answer::Forward(unchanged()),
        })
        .await
    };
    let bob = Arc::new(Group::join(Remote::new(&url, TOKEN_BOB).unwrap(), GROUP, 1, keys(), Mode::Compatible));
    let mut reader = tokio::spawn({
        let bob = bob.clone();
        async move {
            let mut out = Vec::new();
            let got = bob.get(b"k", &mut out).await;
            (got, out)
        }
    });
    tokio::select! {
        held = arrived.acquire() => held.unwrap().forget(),
        ended = &mut reader => panic!("the get ended before it asked the history again: {:?}", ended.unwrap()),
    }
    put(&alice, "k", b"second").await;
    gate.add_permits(1);
    let (got, out) = reader.await.unwrap();
    assert!(matches!(got, Err(ClientError::Changed(_))), "{got:?}, output {:?}", String::from_utf8_lossy(&out));
    assert_eq!(get(&bob, "k").await.unwrap().unwrap(), b"second", "a fresh read gets the new object");
}

/// A store that streams more bytes than the object holds (here: the object, then garbage
/// and a stream that never ends) is caught at the first byte past the length the group's
/// history holds: the reader neither writes those bytes nor waits for the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_streamed_past_its_length_is_caught_without_reading_on() {
    use vouch_proto::vicos::CosGetFrame;
    let setup = Setup::new(Misbehave::None).await;
    let alice = create(&setup).await;
    put(&alice, "k", b"small").await;
    let stretch = |code: u16, body: Vec<u8>| {
        if code != 200 {
            return (code, body);
        }
        let first = 4 + u32::from_le_bytes(body[..4].try_into().unwrap()) as usize;
        let mut out = body[..first].to_vec();
        let more = CosGetFrame::Data(serde_bytes::ByteBuf::from(vec![0xee; 64 << 10]));
        out.extend_from_slice(&vouch_proto::encode_frame(&more));
        (code, out)
    };
    let url = proxy::proxy(setup.url(), move |op| match op {
        "cos-get" => proxy::Answer::Endless(Box::new(stretch)),
        _ => proxy::Answer::Forward(unchanged()),
    })
    .await;
    let bob = Group::join(Remote::new(&url, TOKEN_BOB).unwrap(), GROUP, 1, keys(), Mode::Compatible);
    let mut out = Vec::new();
    let got = tokio::time::timeout(std::time::Duration::from_secs(30), bob.get(b"k", &mut out))
        .await
        .expect("caught at its length, not read on");
    assert_caught(got, ViolationKind::AlteredObject, "past its length");
    assert_eq!(out, b"small", "nothing past the length reached the output");
}

//! Files stored with retrievability, end to end over a real provider: PoR puts, reads
//! through U, PoR audits, repair after the backend itself lost all of U and just under half of
//! C and of every level, and the lies and losses a client must not believe.

use crate::common;

use common::por::{
    audit_fails_at, damage_objects, each_repaired_after_u_is_lost, get_por, lose_all_of_u, put_por, restarted,
    with_provider_stopped,
};
use common::{assert_violation, sample, Setup};
use vouch_client::{Client, ClientError, PutOptions, ViolationKind};
use vouch_misbehave::Misbehave;
use vouch_store::BlobStore;

#[tokio::test]
async fn por_files_read_back_through_u_audit_and_follow_their_edits() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    assert!(matches!(client.por().audit(8).await, Err(ClientError::NotFound(_))), "no log before the first put");
    let first = sample(300_000, 1);
    put_por(&client, "a.bin", &first).await;
    assert_eq!(get_por(&client, "a.bin", None).await.unwrap(), first);
    let report = client.por().audit(16).await.unwrap();
    assert!(report.verified && report.parts.len() >= 2, "{report:?}");
    assert!(report.parts.iter().all(|p| p.verified && p.problem.is_none()));

    // An edit makes a new version, and its copy; the old version's copy stays.
    client.edit("a.bin", &vouch_client::ByteEdit::Insert { at: 1000, data: b"inserted".to_vec() }, None).await.unwrap();
    let mut second = first.clone();
    second.splice(1000..1000, *b"inserted");
    assert_eq!(get_por(&client, "a.bin", None).await.unwrap(), second);
    assert_eq!(get_por(&client, "a.bin", Some(1)).await.unwrap(), first);
    // A later plain put of a PoR file gets its copy too.
    let third = sample(50_000, 3);
    client.put("a.bin", std::io::Cursor::new(third.clone()), None, |_| {}).await.unwrap();
    assert_eq!(get_por(&client, "a.bin", Some(3)).await.unwrap(), third);

    // A file stored without --por has no copy, and cannot gain one.
    client.put("plain", std::io::Cursor::new(vec![1u8; 10]), None, |_| {}).await.unwrap();
    assert!(matches!(get_por(&client, "plain", None).await, Err(ClientError::BadInput(_))));
    let again = client
        .put_with(
            "plain",
            std::io::Cursor::new(vec![2u8; 10]),
            PutOptions { por: true, ..PutOptions::default() },
            |_| {},
        )
        .await;
    assert!(matches!(again, Err(ClientError::BadInput(_))));
    put_por(&client, "empty", &[]).await;
    assert_eq!(get_por(&client, "empty", None).await.unwrap(), Vec::<u8>::new());
    assert!(client.por().audit(8).await.unwrap().verified);
}

/// Slots a run of `blocks` blocks of `bytes` bytes in all takes at most in a copy (each block:
/// a 14-byte head, a 32-byte tag, and a partial last slot).
fn slots_at_most(bytes: u64, blocks: u64) -> u64 {
    (bytes + blocks * 46) / vouch_core::por::heap::SLOT_DATA_BYTES as u64 + blocks + 1
}

/// An edit or a sync in the middle of a large PoR file takes fresh slots only for the blocks it
/// wrote (the issue: never a rewrite of the rest); every version still reads back whole, and
/// repair restores them all after U is lost.
#[tokio::test]
async fn an_edit_of_a_large_por_file_writes_only_the_blocks_it_wrote() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let first = sample(3_000_000, 21);
    put_por(&client, "big", &first).await;
    let used = async |client: &Client| client.por().audit(4).await.unwrap().slots_used;
    let whole = used(&client).await;
    assert!(whole >= 3_000_000 / 4096, "{whole}");

    let edit = vouch_client::ByteEdit::Replace { at: 1_500_000, data: b"changed".to_vec() };
    let sent = client.edit("big", &edit, None).await.unwrap();
    let mut second = first.clone();
    second[1_500_000..1_500_007].copy_from_slice(b"changed");
    let after_edit = used(&client).await;
    assert!(after_edit - whole <= slots_at_most(sent.bytes, sent.blocks), "{whole} -> {after_edit}: {sent:?}");
    assert!(after_edit - whole < whole / 20, "{whole} -> {after_edit}");

    // A delete writes no block: one empty slot carries the new layout.
    client.edit("big", &vouch_client::ByteEdit::Delete { range: 100..200 }, None).await.unwrap();
    let mut third = second.clone();
    third.drain(100..200);
    let after_delete = used(&client).await;
    assert!(after_delete - after_edit <= slots_at_most(200_000, 8), "{after_edit} -> {after_delete}");

    let mut fourth = third.clone();
    fourth.splice(2_000_000..2_000_000, sample(5_000, 22));
    let local = setup.state.join("local.bin");
    std::fs::write(&local, &fourth).unwrap();
    let sync = client.sync("big", &local).await.unwrap();
    let after_sync = used(&client).await;
    assert!(after_sync - after_delete <= slots_at_most(sync.bytes_sent, sync.blocks_sent), "{sync:?}");

    for (version, want) in [(1, &first), (2, &second), (3, &third), (4, &fourth)] {
        assert_eq!(&get_por(&client, "big", Some(version)).await.unwrap(), want, "version {version}");
    }
    drop(client);
    let client = with_provider_stopped(&mut setup, async |data| lose_all_of_u(data).await).await;
    assert_violation(get_por(&client, "big", None).await, ViolationKind::DataLost, "U is lost");
    let report = client.por().repair("big").await.unwrap();
    assert!(report.damaged && report.restored == report.slots, "{report:?}");
    assert_eq!(get_por(&client, "big", None).await.unwrap(), fourth);
}

/// A copy larger than one request's slots: repair reads C and the levels a page at a time
/// (X, then Y for what X lost), never a region in one answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_of_a_copy_larger_than_a_request_pages_through_c() {
    let mut setup = Setup::new(Misbehave::None).await;
    let data = sample(18_000_000, 31);
    put_por(&setup.client(), "large", &data).await;
    let client = with_provider_stopped(&mut setup, async |stores| {
        lose_all_of_u(stores).await;
        assert!(damage_objects(stores, true, |n| n / 2 - 1).await >= 1);
    })
    .await;
    let report = client.por().repair("large").await.unwrap();
    assert!(report.damaged && report.slots > 4096 && report.restored == report.slots, "{report:?}");
    assert_eq!(get_por(&client, "large", None).await.unwrap(), data);
}

#[tokio::test]
async fn repair_restores_every_byte_after_u_and_just_under_half_of_c_and_each_level_are_lost() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    // Sizes such that H holds levels at the end (groups of 16 writes; the first file grows U).
    let files = [("big", sample(400_000, 5)), ("small", sample(70_000, 6))];
    for (name, data) in &files {
        put_por(&client, name, data).await;
    }
    drop(client);
    let client = with_provider_stopped(&mut setup, async |stores| {
        lose_all_of_u(stores).await;
        // One C, or two in a window (the next is being built).
        assert!((1..=2).contains(&damage_objects(stores, true, |n| n / 2 - 1).await), "C is stored");
        assert!(damage_objects(stores, false, |n| n / 2 - 1).await >= 1, "levels are stored");
    })
    .await;
    for (name, _) in &files {
        assert_violation(get_por(&client, name, None).await, ViolationKind::DataLost, "U is lost");
    }
    // Level 0 has two slots: "just under half" of it is none.
    audit_fails_at(client.por().audit(64).await.unwrap(), |region| region != "level-0");
    for (i, (name, data)) in files.iter().enumerate() {
        let report = client.por().repair(name).await.unwrap();
        assert!(report.damaged && report.restored == report.slots && report.slots > 0, "{report:?}");
        assert!(!report.healed.is_empty(), "{report:?}");
        // C is re-encoded from U only once U is whole: after the last file's repair.
        assert_eq!(report.unhealed.is_some(), i + 1 < files.len(), "{report:?}");
        assert_eq!(&get_por(&client, name, None).await.unwrap(), data, "{name} after repair");
    }
    for (name, _) in &files {
        let again = client.por().repair(name).await.unwrap();
        assert!(!again.damaged && again.restored == 0 && again.healed.is_empty(), "repaired once: {again:?}");
    }
    let audit = client.por().audit(64).await.unwrap();
    assert!(audit.verified && audit.parts.len() == 1, "whole again, H empty: {audit:?}");
    // The plain read path is untouched by all this.
    let mut out = Vec::new();
    client.get("big", None, None, &mut out).await.unwrap();
    assert_eq!(out, files[0].1);
}

#[tokio::test]
async fn past_half_of_c_lost_repair_fails_and_says_so() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    put_por(&client, "f", &sample(100_000, 7)).await;
    // A second file, so that H holds a level beside C (the first ends an epoch).
    put_por(&client, "g", &sample(9_000, 8)).await;
    drop(client);
    let client = with_provider_stopped(&mut setup, async |stores| {
        lose_all_of_u(stores).await;
        assert_eq!(damage_objects(stores, true, |n| n / 2 + 1).await, 1);
    })
    .await;
    assert_violation(client.por().repair("f").await, ViolationKind::DataLost, "too little of C is left");
    audit_fails_at(client.por().audit(64).await.unwrap(), |region| region == "coded");
}

#[tokio::test]
async fn por_lies_are_caught_through_the_client() {
    let data = sample(60_000, 9);
    let setup = Setup::new(Misbehave::SwapPorSlots).await;
    let client = setup.client();
    put_por(&client, "f", &data).await;
    assert_violation(get_por(&client, "f", None).await, ViolationKind::BadPorRead, "swapped slots of U");

    let setup = Setup::new(Misbehave::ForgePorAggregate).await;
    let client = setup.client();
    put_por(&client, "f", &data).await;
    assert_eq!(get_por(&client, "f", None).await.unwrap(), data);
    let audit = client.por().audit(8).await.unwrap();
    assert!(audit.parts.iter().all(|p| !p.verified), "{audit:?}");
    assert_violation(audit.into_result(), ViolationKind::BadPorAudit, "a forged aggregate");
}

#[tokio::test]
async fn a_damaged_por_record_is_a_state_error_not_a_lie() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    put_por(&client, "f", &sample(5_000, 2)).await;
    let path = setup.state.join("por");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    assert!(matches!(get_por(&client, "f", None).await, Err(ClientError::State(_))));
}

#[tokio::test]
async fn a_lost_por_record_is_a_state_error_not_a_lie() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    put_por(&client, "f", &sample(5_000, 3)).await;
    std::fs::remove_file(setup.state.join("por")).unwrap();
    let state_error = |got: Result<_, ClientError>| {
        assert!(matches!(&got, Err(ClientError::State(m)) if m.contains("no PoR record")), "{:?}", got.err());
    };
    state_error(get_por(&client, "f", None).await.map(|_| ()));
    state_error(client.por().audit(8).await.map(|_| ()));
    // Nor is a new log started over the provider's: the record stays missing.
    state_error(
        client
            .put_with(
                "g",
                std::io::Cursor::new(vec![1u8; 100]),
                PutOptions { por: true, ..PutOptions::default() },
                |_| {},
            )
            .await
            .map(|_| ()),
    );
    assert!(!setup.state.join("por").exists());
}

use crate::proxy;

/// An edit of a PoR file whose batch answer is lost, once after the provider applied it and
/// once before: the client settles it at once by the provider's time (the edit succeeds when
/// the batch was applied, its probe read under the new root; else it fails, and the next PoR
/// operation makes the copy it owes), and nothing is reported as a lie.
#[tokio::test]
async fn a_lost_batch_answer_is_settled_never_called_a_lie() {
    use proxy::{proxy, Answer};
    use std::sync::{Arc, Mutex};
    let setup = Setup::new(Misbehave::None).await;
    let mut data = sample(40_000, 11);
    put_por(&setup.client(), "f", &data).await;
    // From now on through a proxy that loses the answer of `por-write` as told.
    let lose: Arc<Mutex<Option<bool>>> = Arc::new(Mutex::new(None));
    let rule = lose.clone();
    let url = proxy(setup.url(), move |op| {
        let unavailable = || {
            vouch_proto::encode(&vouch_proto::ErrorBody {
                code: vouch_proto::ErrorCode::Storage,
                message: "connection lost".into(),
            })
        };
        let told = rule.lock().unwrap().take();
        match (op, told) {
            // Applied, then the answer lost.
            ("por-write", Some(true)) => Answer::Forward(Box::new(move |_, _| (503, unavailable()))),
            // Lost on the way: never applied.
            ("por-write", Some(false)) => Answer::Own(503, unavailable()),
            (_, kept) => {
                *rule.lock().unwrap() = kept;
                Answer::Forward(Box::new(|code, body| (code, body)))
            }
        }
    })
    .await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"{url}\"\n")).unwrap();
    let client = setup.client();
    for (applied, at) in [(true, 10u64), (false, 20)] {
        *lose.lock().unwrap() = Some(applied);
        let edit = vouch_client::ByteEdit::Insert { at, data: b"more".to_vec() };
        let result = client.edit("f", &edit, None).await;
        match applied {
            true => assert!(result.is_ok(), "settled as applied: {result:?}"),
            false => assert!(result.as_ref().is_err_and(|e| e.violation_kind().is_none()), "{result:?}"),
        }
        data.splice(at as usize..at as usize, *b"more");
        assert_eq!(get_por(&client, "f", None).await.unwrap(), data, "applied: {applied}");
        assert!(client.por().audit(8).await.unwrap().verified);
    }
}

/// `get --por` reads the copy twice: once to check it whole (every tag, then the root and
/// length), then again to write it, each block held to the leaf the first pass verified. A
/// provider that lies in the first pass (here: the answer to the copy's first page replayed
/// for its last) leaves the output empty; one that answers the second pass otherwise than
/// the first leaves a prefix of the verified version in it, and is caught. Either way no
/// byte reaches the output before the whole copy was verified.
#[tokio::test]
async fn a_copy_is_verified_whole_before_a_byte_of_it_is_written() {
    use proxy::{proxy, Answer};
    use std::sync::{Arc, Mutex};
    let setup = Setup::new(Misbehave::None).await;
    // More than a page of U's slots (4096 of them) per pass.
    let data = sample(17 << 20, 12);
    put_por(&setup.client(), "f", &data).await;
    // The proxy counts `por-read`s, keeps the first answer, and replays it for read `lie_at`.
    #[derive(Default)]
    struct Reads {
        count: usize,
        first: Vec<u8>,
        lie_at: Option<usize>,
    }
    let reads = Arc::new(Mutex::new(Reads::default()));
    let seen = reads.clone();
    let url = proxy(setup.url(), move |op| {
        let seen = seen.clone();
        match op {
            "por-read" => Answer::Forward(Box::new(move |code, body| {
                let mut reads = seen.lock().unwrap();
                let n = reads.count;
                reads.count += 1;
                if n == 0 {
                    reads.first = body.clone();
                }
                match reads.lie_at == Some(n) {
                    true => (code, reads.first.clone()),
                    false => (code, body),
                }
            })),
            _ => Answer::Forward(Box::new(|code, body| (code, body))),
        }
    })
    .await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"{url}\"\n")).unwrap();
    let client = setup.client();
    assert_eq!(get_por(&client, "f", None).await.unwrap(), data);
    let per_pass = reads.lock().unwrap().count / 2;
    assert!(per_pass >= 2, "each pass reads the copy in pages: {per_pass}");
    for (lie_at, what) in [(per_pass - 1, "first pass"), (2 * per_pass - 1, "second pass")] {
        *reads.lock().unwrap() = Reads { lie_at: Some(lie_at), ..Reads::default() };
        let mut out = Vec::new();
        let got = client.por().get("f", None, &mut out).await;
        assert_violation(got, ViolationKind::BadPorRead, what);
        match lie_at < per_pass {
            true => assert!(out.is_empty(), "nothing written before the copy is verified"),
            false => assert!(!out.is_empty() && out.len() < data.len() && data.starts_with(&out), "{what}"),
        }
    }
    *reads.lock().unwrap() = Reads::default();
    assert_eq!(get_por(&client, "f", None).await.unwrap(), data, "the client goes on");
}

/// A batch whose request is held on its way (by a proxy, a slow network) past its client's
/// deadline: the client finds it not applied and settles it so, and the fence it raises on
/// the way makes the provider refuse the batch when it arrives at last. Were it applied, the
/// client would find its log where it never left it, and report an honest provider as a liar.
#[tokio::test]
async fn a_batch_held_on_its_way_past_its_settling_is_refused_never_applied() {
    use proxy::{proxy, Answer, Gate};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let setup = Setup::new(Misbehave::None).await;
    put_por(&setup.client(), "f", &sample(40_000, 71)).await;
    let gate: Gate = Arc::new(tokio::sync::Semaphore::new(0));
    let hold = Arc::new(AtomicBool::new(false));
    // What the provider answered the held batch, once the gate let it through.
    let late: Arc<Mutex<Option<u16>>> = Arc::default();
    let (held_gate, held, answered) = (gate.clone(), hold.clone(), late.clone());
    let url = proxy(setup.url(), move |op| match op == "por-write" && held.swap(false, Ordering::SeqCst) {
        true => {
            let answered = answered.clone();
            Answer::After(
                held_gate.clone(),
                Box::new(move |code, body| {
                    *answered.lock().unwrap() = Some(code);
                    (code, body)
                }),
            )
        }
        false => Answer::Forward(Box::new(|code, body| (code, body))),
    })
    .await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"{url}\"\ntimeout_secs = 1\n")).unwrap();
    let client = setup.client();
    hold.store(true, Ordering::SeqCst);
    // An edit (the proxy takes bodies of a known length: not a put's stream).
    let edit = vouch_client::ByteEdit::Insert { at: 100, data: b"held".to_vec() };
    let edited = client.edit("f", &edit, None).await;
    assert!(matches!(edited, Err(ClientError::TimedOut { .. })), "{edited:?}");
    gate.add_permits(1);
    let started = std::time::Instant::now();
    let code = loop {
        if let Some(code) = *late.lock().unwrap() {
            break code;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the held batch reached the provider");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(code, 409, "the provider refuses the batch behind the fence");
    // The client goes on: the copy the edit owed is made, and every version reads back.
    let mut data = sample(40_000, 71);
    data.splice(100..100, *b"held");
    assert_eq!(get_por(&client, "f", None).await.unwrap(), data);
    assert_eq!(get_por(&client, "f", Some(1)).await.unwrap(), sample(40_000, 71));
    assert!(client.por().audit(16).await.unwrap().verified);
    client.edit("f", &vouch_client::ByteEdit::Delete { range: 0..10 }, None).await.unwrap();
}

/// Deletes (App. A.3): `rm` and `prune` write ⊥ over the slots only the dropped versions
/// held, and later copies take them, so U stops growing while what is kept stays the same
/// size. Slots a kept version shares are never freed: every kept version reads back, the
/// audit passes, and repair restores them all after U is lost.
#[tokio::test]
async fn removed_and_pruned_copies_free_their_slots_for_new_ones() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let used = async |client: &Client| client.por().audit(4).await.unwrap().slots_used;
    let (a, b) = (sample(200_000, 61), sample(100_000, 62));
    put_por(&client, "a", &a).await;
    put_por(&client, "b", &b).await;
    let before = used(&client).await;
    client.remove("a").await.unwrap();
    // The same bytes again make the same blocks: they fit exactly where "a" was.
    put_por(&client, "a-again", &a).await;
    assert_eq!(used(&client).await, before, "the new copy took the freed slots");

    // Version 2 replaces version 1 whole; version 3 is an edit of 2 and shares its slots.
    let c = sample(120_000, 63);
    put_por(&client, "c", &c).await;
    put_por(&client, "c", &b).await;
    client.edit("c", &vouch_client::ByteEdit::Replace { at: 1000, data: b"xyz".to_vec() }, None).await.unwrap();
    let mut c3 = b.clone();
    c3[1000..1003].copy_from_slice(b"xyz");
    // Pruning 1 and 2 frees version 1's slots and the block of 2 that 3 replaced, not the rest.
    client.prune("c", &[1, 2]).await.unwrap();
    assert_eq!(get_por(&client, "c", None).await.unwrap(), c3);
    let before = used(&client).await;
    put_por(&client, "c-again", &c).await;
    assert_eq!(used(&client).await, before, "version 1's slots were freed and taken again");

    for (name, want) in [("b", &b), ("a-again", &a), ("c", &c3), ("c-again", &c)] {
        assert_eq!(&get_por(&client, name, None).await.unwrap(), want, "{name}");
    }
    assert!(client.por().audit(16).await.unwrap().verified);
    each_repaired_after_u_is_lost(&mut setup, client, &[("b", &b), ("a-again", &a), ("c", &c3), ("c-again", &c)]).await;
}

/// Consolidation (App. A.3): when a delete leaves every slot of U from some power of two on
/// free, U shrinks to the slots below it. What is kept reads back, audits and repairs as
/// before, and U grows again for new copies.
#[tokio::test]
async fn a_delete_that_frees_the_top_of_u_shrinks_it() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let (keep, big) = (sample(30_000, 81), sample(1_500_000, 82));
    put_por(&client, "keep", &keep).await;
    put_por(&client, "big", &big).await;
    let grown = client.por().audit(4).await.unwrap();
    client.remove("big").await.unwrap();
    let shrunk = client.por().audit(16).await.unwrap();
    assert!(shrunk.verified, "{shrunk:?}");
    assert!(shrunk.log_capacity + 3 <= grown.log_capacity, "2^{} after 2^{}", shrunk.log_capacity, grown.log_capacity);
    assert!(shrunk.slots_used <= 1 << shrunk.log_capacity && shrunk.slots_used < grown.slots_used, "{shrunk:?}");
    assert_eq!(get_por(&client, "keep", None).await.unwrap(), keep);

    let again = sample(200_000, 83);
    put_por(&client, "again", &again).await;
    assert!(client.por().audit(16).await.unwrap().verified);
    each_repaired_after_u_is_lost(&mut setup, client, &[("keep", &keep), ("again", &again)]).await;
}

/// A delete stopped between its commit and its ⊥ writes (the provider's PoR log down) leaks
/// no slot: the next PoR operation finds the versions gone from the namespace, writes their
/// slots ⊥ and shrinks U, and what is kept reads back.
#[tokio::test]
async fn a_delete_stopped_after_its_commit_is_finished_by_the_next_por_operation() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let (keep, gone) = (sample(30_000, 91), sample(600_000, 92));
    put_por(&client, "keep", &keep).await;
    put_por(&client, "gone", &gone).await;
    let before = client.por().audit(4).await.unwrap();
    drop(client);
    let client = restarted(&mut setup, Misbehave::FailPorWrites, async |_| {}).await;
    assert!(client.remove("gone").await.is_err(), "the ⊥ writes failed");
    assert!(matches!(get_por(&client, "gone", None).await, Err(ClientError::NotFound(_))), "the removal is committed");
    drop(client);

    let client = with_provider_stopped(&mut setup, async |_| {}).await;
    let new = sample(10_000, 93);
    put_por(&client, "new", &new).await;
    let after = client.por().audit(16).await.unwrap();
    assert!(after.verified, "{after:?}");
    assert!(after.slots_used < before.slots_used && after.log_capacity < before.log_capacity, "{after:?} {before:?}");
    for (name, want) in [("keep", &keep), ("new", &new)] {
        assert_eq!(&get_por(&client, name, None).await.unwrap(), want, "{name}");
    }
}

/// A delete whose commit the provider refused owes nothing: the next PoR operation finds the
/// versions still in the namespace and forgets them, and their copy stays whole.
#[tokio::test]
async fn a_delete_whose_commit_was_refused_frees_nothing() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let kept = sample(200_000, 95);
    put_por(&client, "kept", &kept).await;
    let before = client.por().audit(4).await.unwrap();
    drop(client);
    let client = restarted(&mut setup, Misbehave::RefuseCommit, async |_| {}).await;
    assert!(client.remove("kept").await.is_err(), "the commit was refused");
    drop(client);

    let client = with_provider_stopped(&mut setup, async |_| {}).await;
    let other = sample(10_000, 96);
    put_por(&client, "other", &other).await;
    assert!(client.por().audit(16).await.unwrap().slots_used > before.slots_used, "no slot of \"kept\" was freed");
    assert_eq!(get_por(&client, "kept", None).await.unwrap(), kept);
    each_repaired_after_u_is_lost(&mut setup, client, &[("kept", &kept)]).await;
}

/// An honest fault: the provider lost the `sealed` object of C (or of a level), the sealed
/// checksums beside its slots. The client must not be locked out: repair finds the part
/// failing and re-encodes it from U, every version reads back, and audits pass again.
#[tokio::test]
async fn a_lost_sealed_object_is_healed_by_repair() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let files = [("big", sample(400_000, 15)), ("small", sample(70_000, 16))];
    for (name, data) in &files {
        put_por(&client, name, data).await;
    }
    drop(client);
    let client = with_provider_stopped(&mut setup, async |stores| {
        let sealed: Vec<String> =
            stores.blobs.list("por").await.unwrap().into_iter().filter(|k| k.ends_with("/sealed")).collect();
        assert!(sealed.len() >= 2, "C and a level are stored: {sealed:?}");
        for key in &sealed {
            stores.blobs.delete(key).await.unwrap();
        }
    })
    .await;
    let report = client.por().repair("big").await.unwrap();
    assert!(!report.healed.is_empty() && report.unhealed.is_none(), "{report:?}");
    for (name, data) in &files {
        assert_eq!(&get_por(&client, name, None).await.unwrap(), data, "{name} after repair");
    }
    let audit = client.por().audit(64).await.unwrap();
    assert!(audit.verified, "{audit:?}");
    put_por(&client, "after", &sample(30_000, 17)).await;
    assert_eq!(get_por(&client, "after", None).await.unwrap(), sample(30_000, 17));
}

/// A client whose messages are capped at 4 KiB (`por_part_kib`): a plan's answer (all of U's
/// sealed checksums when C is rebuilt) and a batch's upload (all of C's) travel in parts, as
/// they must for any client past about 2^20 slots; the log reads back, audits and repairs as
/// in one message.
#[tokio::test]
async fn plans_and_uploads_larger_than_a_message_travel_in_parts() {
    let setup = Setup::new(Misbehave::None).await;
    let config = setup.state.join("config.toml");
    let server = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{server}por_part_kib = 4\n")).unwrap();
    let client = setup.client();
    let files = [("big", sample(400_000, 25)), ("small", sample(70_000, 26))];
    for (name, data) in &files {
        put_por(&client, name, data).await;
    }
    for (name, data) in &files {
        assert_eq!(&get_por(&client, name, None).await.unwrap(), data);
    }
    assert!(client.por().audit(64).await.unwrap().verified);
    client.remove("small").await.unwrap();
    put_por(&client, "again", &files[1].1).await;
    assert_eq!(get_por(&client, "again", None).await.unwrap(), files[1].1);
    assert!(client.por().audit(64).await.unwrap().verified);
}

/// The provider's disk damages the block store's copy of a PoR file (what a plain `get`
/// reads): the plain get is caught, and repair writes the damaged blocks again from the
/// verified PoR copy, after which a plain get returns the exact bytes, and a second repair
/// finds nothing to do.
#[tokio::test]
async fn repair_heals_a_damaged_block_store_copy_from_the_por_copy() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let data = sample(300_000, 35);
    put_por(&client, "f", &data).await;
    let segments = setup.data.join("blobs").join("segments");
    let mut damaged = 0;
    for entry in std::fs::read_dir(&segments).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        if bytes.len() > 5000 {
            bytes[4096 + 7] ^= 0x40;
            std::fs::write(&path, &bytes).unwrap();
            damaged += 1;
        }
    }
    assert!(damaged >= 1, "a segment holds the file's blocks");
    let mut out = Vec::new();
    assert_violation(client.get("f", None, None, &mut out).await, ViolationKind::DataLost, "a plain get");
    let report = client.por().repair("f").await.unwrap();
    assert!(!report.damaged && report.healed_blocks > 0, "{report:?}");
    let mut out = Vec::new();
    client.get("f", None, None, &mut out).await.unwrap();
    assert_eq!(out, data, "a plain get after repair");
    assert_eq!(client.por().repair("f").await.unwrap().healed_blocks, 0, "nothing left to heal");
    assert_eq!(get_por(&client, "f", None).await.unwrap(), data);
}

/// A copy owed after its put (the provider went down for PoR writes) is made by the next PoR
/// operation from the version read back a batch at a time: a file larger than one request's
/// slots takes several batches, each read and checked, none holding the whole file.
#[tokio::test]
async fn an_owed_copy_larger_than_a_request_is_made_a_batch_at_a_time() {
    let mut setup = Setup::new(Misbehave::FailPorWrites).await;
    let data = sample(18_000_000, 45);
    let client = setup.client();
    let failed = client
        .put_with(
            "large",
            std::io::Cursor::new(data.clone()),
            PutOptions { por: true, ..PutOptions::default() },
            |_| {},
        )
        .await;
    assert!(failed.is_err(), "the copy's batches are refused");
    drop(client);
    let client = with_provider_stopped(&mut setup, async |_| {}).await;
    assert_eq!(get_por(&client, "large", None).await.unwrap(), data, "the owed copy is made");
    assert!(client.por().audit(64).await.unwrap().verified);
}

/// A provider slower at a PoR batch than its client waits (honest: `Misbehave::SlowPorWrite`
/// holds the log for 5 s over its first batch, the client waits 1 s and its allowance): the
/// put that stopped waiting fails as "took too long", never as a lie; the provider applies the
/// batch all the same, and the next PoR command settles it from the log's time (its status
/// waits for the apply, then the probe reads under the new root) and makes the copy the put
/// owed.
#[tokio::test]
async fn a_batch_applied_after_its_client_stopped_waiting_is_settled_by_the_next_command() {
    let setup = Setup::new(Misbehave::SlowPorWrite).await;
    let config = setup.state.join("config.toml");
    let server = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{server}timeout_secs = 1\n")).unwrap();
    let client = setup.client();
    let data = sample(300_000, 51);
    let put = client
        .put_with("slow", std::io::Cursor::new(data.clone()), PutOptions { por: true, ..PutOptions::default() }, |_| {})
        .await;
    assert!(matches!(put, Err(ClientError::TimedOut { .. })), "{put:?}");
    // While the apply goes on, a command's first request may wait past its deadline too.
    let started = std::time::Instant::now();
    let read = loop {
        match get_por(&client, "slow", None).await {
            Err(ClientError::TimedOut { .. }) if started.elapsed() < std::time::Duration::from_secs(60) => {}
            other => break other,
        }
    };
    assert_eq!(read.unwrap(), data);
    assert!(client.por().audit(64).await.unwrap().verified);
    put_por(&client, "after", &sample(50_000, 52)).await;
    assert_eq!(get_por(&client, "after", None).await.unwrap(), sample(50_000, 52));
}

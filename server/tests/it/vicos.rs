//! The VICOS sequencer over HTTP (paper 003, Alg. 3, Sec. 3.7 and 5.2), driven by real AIP
//! clients (Alg. 1–2) that check every REPLY and UPDATE-AUTH: a provider that reused a
//! sequence number or changed a history would fail their checks here.

use crate::support_vicos as support;

use serde_bytes::ByteBuf;
use support::*;
use vouch_core::adict::Tree;
use vouch_core::aip::{self, Adict, Admission, Commit, DictOp, DictResponse, Outcome, Signature, Wire};
use vouch_proto::vicos::{AipCommit, AipCommitAuth, AipCreate, AipInvoke, AipWork, AipWorkRequest};
use vouch_proto::{ErrorBody, ErrorCode, Op};
use vouch_server::Limits;

/// How long the sequencer leaves the passive-phase work with the member it handed it to
/// (`sequencer::LEASE`), and a little more.
const LEASE: std::time::Duration = std::time::Duration::from_millis(600);

#[tokio::test]
async fn members_of_two_provider_clients_share_a_group_and_finish_every_passive_phase() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    let addr = server.addr;
    create(addr, ALICE, "team").await.unwrap();
    let again = create(addr, BOB, "team").await;
    assert!(refused(again, ErrorCode::Conflict).contains("exists"), "a group is created once");

    // Members 0 and 2 speak as provider client alice, member 1 as bob: one group.
    let mut m: Vec<Member> = [(0, ALICE), (1, BOB), (2, ALICE)].map(|(i, t)| Member::new(i, addr, t, "team")).into();
    assert_eq!(m[0].run(put("k", "v1")).await, NOTHING);
    assert_eq!(m[1].run(get("k")).await, value("v1"), "another member reads the put");
    assert_eq!(m[2].run(DictOp::List).await, Outcome::Done(DictResponse::Keys(vec![b"k".to_vec()])));
    assert_eq!(m[1].run(put("k", "v2")).await, NOTHING);
    assert_eq!(m[0].run(get("k")).await, value("v2"));
    assert_eq!(progress(&server, "team").await, (5, 5), "every operation applied: no passive phase left");
    for member in &m {
        assert_eq!(member.work().await, AipWork::default(), "nothing left to authenticate");
    }

    // Groups are addressed by valid names of groups that exist.
    let mut stranger = Member::new(0, addr, BOB, "nobody");
    assert!(refused(stranger.invoke(get("k")).await, ErrorCode::NotFound).contains("nobody"));
    let mut invalid = Member::new(0, addr, BOB, "no/such");
    refused(invalid.invoke(get("k")).await, ErrorCode::BadRequest);
    refused(create(addr, BOB, &"x".repeat(65)).await, ErrorCode::BadRequest);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_member_that_went_away_is_authenticated_for_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    create(server.addr, ALICE, "g").await.unwrap();
    let mut m: Vec<Member> = (0..3).map(|i| Member::new(i, server.addr, ALICE, "g")).collect();
    // Member 0 commits its put and leaves without authenticating it.
    let (outcome, _, work) = m[0].active(put("a", "1")).await.unwrap();
    assert_eq!(outcome, NOTHING);
    assert!(work.update_auth.is_some(), "its own update was handed to it");
    // The work is member 0's for a while (the lease): member 1's COMMIT is handed none.
    let (outcome, _, work) = m[1].active(put("b", "2")).await.unwrap();
    assert_eq!(outcome, NOTHING);
    assert_eq!(work, AipWork::default(), "member 0 holds the work");
    // Then member 1 is handed both updates (Sec. 3.7 delegation).
    tokio::time::sleep(LEASE).await;
    let work = m[1].work().await;
    assert_eq!(m[1].passive(work).await, 2, "member 1 authenticated member 0's update and its own");
    assert_eq!(progress(&server, "g").await, (2, 2));
    assert_eq!(m[2].run(get("a")).await, value("1"));
    assert_eq!(m[0].work().await, AipWork::default(), "the member that left has nothing to do on return");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_restart_keeps_the_history_and_continues_its_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    create(server.addr, ALICE, "g").await.unwrap();
    let token = |i| if i == 0 { ALICE } else { BOB };
    let mut m: Vec<Member> = (0..3).map(|i| Member::new(i, server.addr, token(i), "g")).collect();
    assert_eq!(m[0].run(put("x", "1")).await, NOTHING);
    assert_eq!(m[1].run(get("x")).await, value("1"));
    // Member 0's put of y is committed and not authenticated when the provider stops.
    let (_, t, _) = m[0].active(put("y", "2")).await.unwrap();
    assert_eq!((t, progress(&server, "g").await), (3, (2, 3)));
    server.shutdown().await.unwrap();

    let server = serve(dir.path(), Limits::default()).await;
    m.iter_mut().for_each(|member| member.addr = server.addr);
    assert_eq!(progress(&server, "g").await, (2, 3), "the journal replays to the same place");
    // The next INVOKE gets the next position, and its REPLY continues the history member 1
    // holds (its hash chain over positions 1..=3 would catch a reused or changed one).
    let (outcome, t, work) = m[1].active(get("y")).await.unwrap();
    assert_eq!((outcome, t), (Outcome::Abort, 4), "member 0's pending put of y, as before the restart");
    assert_eq!(m[1].passive(work).await, 1, "member 1 authenticates member 0's put (its get is a query)");
    assert_eq!(m[1].run(get("y")).await, value("2"));
    // A member that never took part clears the whole history, signatures and all.
    assert_eq!(m[2].run(DictOp::List).await, Outcome::Done(DictResponse::Keys(vec![b"x".to_vec(), b"y".to_vec()])));
    assert_eq!(m[0].run(put("z", "3")).await, NOTHING, "member 0 goes on after its operation of before");
    assert_eq!(progress(&server, "g").await, (7, 7));

    // And again, with nothing pending: the same history once more.
    server.shutdown().await.unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    m.iter_mut().for_each(|member| member.addr = server.addr);
    assert_eq!(m[2].run(get("z")).await, value("3"));
    assert_eq!(progress(&server, "g").await, (8, 8));
    // The group's creation sent again (its answer lost) is done already and changes nothing;
    // a creation by another client is refused.
    create(server.addr, ALICE, "g").await.unwrap();
    assert_eq!(progress(&server, "g").await, (8, 8));
    refused(create(server.addr, BOB, "g").await, ErrorCode::Conflict);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_idle_group_leaves_memory_and_its_next_message_replays_it_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let idle = std::time::Duration::from_secs(1);
    let server = serve(dir.path(), Limits { group_idle: idle, ..Limits::default() }).await;
    create(server.addr, ALICE, "g").await.unwrap();
    create(server.addr, ALICE, "h").await.unwrap();
    let mut m: Vec<Member> = (0..2).map(|i| Member::new(i, server.addr, ALICE, "g")).collect();
    let mut other = Member::new(0, server.addr, ALICE, "h");
    assert_eq!(m[0].run(put("x", "1")).await, NOTHING);
    // Member 0's put of y is committed and not authenticated when the group goes idle.
    let (_, t, _) = m[0].active(put("y", "2")).await.unwrap();
    assert_eq!((t, progress(&server, "g").await), (2, (1, 2)));
    assert_eq!(other.run(put("a", "1")).await, NOTHING);
    assert_eq!(server.provider().groups().in_memory(), 2);

    tokio::time::sleep(idle * 5 / 2).await;
    // A message to h looks the groups over: g (and h, unused as long) leave memory; h is
    // replayed for its message.
    assert_eq!(other.run(get("a")).await, value("1"));
    assert_eq!(server.provider().groups().in_memory(), 1, "only the group in use is in memory");
    // g's next message replays its journal: the same history, the next position.
    let (outcome, t, work) = m[1].active(get("y")).await.unwrap();
    assert_eq!((outcome, t), (Outcome::Abort, 3), "member 0's pending put of y, as before");
    assert_eq!(m[1].passive(work).await, 1);
    assert_eq!(m[1].run(get("y")).await, value("2"));
    assert_eq!(m[0].run(put("z", "3")).await, NOTHING, "member 0 goes on after its operation of before");
    assert_eq!(progress(&server, "g").await, (5, 5));
    assert_eq!(server.provider().groups().in_memory(), 2);
    server.shutdown().await.unwrap();
}

/// A member speaks once admitted (it showed the group's admission secret), and only through
/// the provider client that admitted it (the creator: the one that created the group),
/// across a restart: another client of the provider cannot send messages in its name, which
/// its group would blame on the provider.
#[tokio::test]
async fn a_member_speaks_only_once_admitted_and_only_through_the_provider_client_that_admitted_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    create(server.addr, ALICE, "g").await.unwrap();
    let unauthorized = |answer: Result<(), ErrorBody>| refused(answer, ErrorCode::Unauthorized);
    // The creator is bound to alice: bob cannot speak as it, nor be admitted as it.
    let as_creator = Member::new(0, server.addr, BOB, "g").invoke(put("x", "0")).await.map(drop);
    assert!(unauthorized(as_creator).contains("member 0 of group g"));
    // Bob without the group's secret: no message of member 1, and a wrong secret admits no one.
    let stranger = Member::new(1, server.addr, BOB, "g").unadmitted().invoke(put("x", "0")).await.map(drop);
    assert!(unauthorized(stranger).contains("was not admitted"));
    let work = AipWorkRequest { group: "g".into(), from: 1 };
    unauthorized(call(server.addr, BOB, &work).await.map(drop));
    let wrong = admit(server.addr, BOB, "g", 1, &Admission([7; 32])).await.map(drop);
    assert!(unauthorized(wrong).contains("not the admission secret"));
    assert_eq!(progress(&server, "g").await, (0, 0), "the refused messages left nothing");
    // With the secret, member 1 speaks through bob; admitted again through bob, nothing changes.
    let mut bob = Member::new(1, server.addr, BOB, "g");
    assert_eq!(bob.run(put("x", "1")).await, NOTHING);
    admit(server.addr, BOB, "g", 1, &admission("g")).await.unwrap();
    server.shutdown().await.unwrap();

    // After a restart the bindings and the secret's hash hold.
    let server = serve(dir.path(), Limits::default()).await;
    bob.addr = server.addr;
    let through_alice = admit(server.addr, ALICE, "g", 1, &admission("g")).await.map(drop);
    assert!(unauthorized(through_alice).contains("another client"));
    let mut bob_through_alice = Member::new(1, server.addr, ALICE, "g").unadmitted();
    unauthorized(bob_through_alice.invoke(get("x")).await.map(drop));
    let work = AipWorkRequest { group: "g".into(), from: 1 };
    unauthorized(call(server.addr, ALICE, &work).await.map(drop));
    let stranger = Member::new(5, server.addr, ALICE, "g").unadmitted().invoke(get("x")).await.map(drop);
    assert!(unauthorized(stranger).contains("was not admitted"));
    // The members themselves go on, and the refused messages left nothing.
    let mut alice = Member::new(0, server.addr, ALICE, "g");
    assert_eq!(alice.run(get("x")).await, value("1"));
    assert_eq!(bob.run(get("x")).await, value("1"));
    assert_eq!(progress(&server, "g").await, (3, 3));
    server.shutdown().await.unwrap();
}

/// Many members at once: their journal entries are written together (group commit), and
/// every answered operation is in the history a restart replays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_members_answered_operations_all_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    create(server.addr, ALICE, "g").await.unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let mut member = Member::new(i, server.addr, if i % 2 == 0 { ALICE } else { BOB }, "g");
            tokio::spawn(async move {
                for n in 0..10 {
                    assert_eq!(member.run(put(&format!("m{i}-{n}"), "v")).await, NOTHING);
                }
                member
            })
        })
        .collect();
    let mut members = Vec::new();
    for task in tasks {
        members.push(task.await.unwrap());
    }
    // The last operations' passive phase may have been left to a member whose lease on the
    // work ran out after it was done: the members ask for work until none is left.
    for _ in 0..10 {
        if progress(&server, "g").await == (80, 80) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        for member in &mut members {
            let work = member.work().await;
            member.passive(work).await;
        }
    }
    assert_eq!(progress(&server, "g").await, (80, 80));
    server.shutdown().await.unwrap();

    let server = serve(dir.path(), Limits::default()).await;
    assert_eq!(progress(&server, "g").await, (80, 80), "the journal replays every answered operation");
    let mut fresh = Member::new(9, server.addr, ALICE, "g");
    let Outcome::Done(DictResponse::Keys(keys)) = fresh.run(DictOp::List).await else { panic!("a list answers keys") };
    assert_eq!(keys.len(), 80);
    server.shutdown().await.unwrap();
}

/// Sec. 5.2: while the pending list is full, an INVOKE waits for operations to complete (the
/// paper's server buffers it), and is refused as a conflict, changing nothing, when none do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invoke_behind_a_full_pending_list_waits_for_operations_to_complete() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    create(server.addr, ALICE, "g").await.unwrap();
    let mut m: Vec<Member> = (0..3).map(|i| Member::new(i, server.addr, ALICE, "g")).collect();
    // 128 updates committed and none authenticated: the pending list is full.
    for i in 0..128 {
        m[0].active(put(&format!("p{i}"), "v")).await.unwrap();
    }
    assert_eq!(progress(&server, "g").await, (0, 128));
    let started = std::time::Instant::now();
    let full = m[1].invoke(get("p1")).await.map(drop);
    assert!(refused(full, ErrorCode::Conflict).contains("pending list is full"));
    assert!(started.elapsed() >= std::time::Duration::from_secs(2), "held back before it was refused");
    assert_eq!(progress(&server, "g").await, (0, 128), "the refused INVOKE took no position");

    // An INVOKE waiting while the passive phase completes goes through, with no retry (as
    // soon as there is room: of a key no pending put changes, so that it does not abort).
    let mut waiting = m.pop().unwrap();
    let held = tokio::spawn(async move { (waiting.run(get("never")).await, waiting) });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "held back while the list is full");
    let work = m[0].work().await;
    assert_eq!(m[0].passive(work).await, 128, "one batch of every pending update");
    let (outcome, _) = held.await.unwrap();
    assert_eq!(outcome, Outcome::Done(DictResponse::Value(None)));
    assert_eq!(m[1].run(get("p1")).await, value("v"));
    assert_eq!(progress(&server, "g").await, (130, 130));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn malformed_or_out_of_step_messages_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    let addr = server.addr;
    create(addr, ALICE, "g").await.unwrap();
    let garbage = ByteBuf::from(vec![0xff; 40]);
    let bad = |answer: Result<AipWork, _>| refused(answer, ErrorCode::BadRequest);
    let invoke = AipInvoke { group: "g".into(), from: 0, invoke: garbage.clone(), commits: vec![] };
    refused(call(addr, BOB, &invoke).await, ErrorCode::BadRequest);
    let commit = AipCommit { group: "g".into(), from: 0, commit: garbage.clone(), commit_auth: None };
    bad(call(addr, BOB, &commit).await);
    let commit_auth = AipCommitAuth { group: "g".into(), from: 0, commit_auths: vec![garbage.clone()] };
    bad(call(addr, BOB, &commit_auth).await);
    let (status, _) = post(addr, BOB, Op::AipInvoke, vec![0xff; 7]).await;
    assert_eq!(status, 400, "a body that is no message");
    let hash = ByteBuf::from(admission("h").hash().to_vec());
    let create_garbage =
        AipCreate { group: "h".into(), genesis: garbage.clone(), auth: garbage, admission: hash.clone() };
    refused(call(addr, BOB, &create_garbage).await, ErrorCode::BadRequest);
    // A genesis authenticating another state than the empty dictionary's.
    let mut full = Tree::new();
    full.put(b"k", b"v");
    let (genesis, auth) = aip::genesis::<Adict>(&keys(), 0, DictOp::List, &full).unwrap();
    let other = AipCreate {
        group: "h".into(),
        genesis: genesis.to_wire().into(),
        auth: auth.to_wire().into(),
        admission: hash,
    };
    assert!(refused(call(addr, BOB, &other).await, ErrorCode::BadRequest).contains("empty"));
    // An admission hash that is no hash.
    let (genesis, auth) = aip::genesis::<Adict>(&keys(), 0, DictOp::List, &Tree::new()).unwrap();
    let short = ByteBuf::from(vec![1; 31]);
    let short = AipCreate {
        group: "h".into(),
        genesis: genesis.to_wire().into(),
        auth: auth.to_wire().into(),
        admission: short,
    };
    assert!(refused(call(addr, BOB, &short).await, ErrorCode::BadRequest).contains("31 bytes"));

    // Messages out of step: a COMMIT of an operation never invoked, one sent as another member.
    let mut m = Member::new(0, addr, ALICE, "g");
    let (reply, _) = m.invoke(put("k", "v")).await.unwrap();
    let (_, commit) = m.aip.on_reply(reply).unwrap();
    admit(addr, ALICE, "g", 1, &admission("g")).await.unwrap();
    let as_member_1 = AipCommit { group: "g".into(), from: 1, commit: commit.to_wire().into(), commit_auth: None };
    assert!(bad(call(addr, ALICE, &as_member_1).await).contains("signature of client 0"));
    let never = Commit { t: 9, ..commit.clone() };
    let never = AipCommit { group: "g".into(), from: 0, commit: never.to_wire().into(), commit_auth: None };
    refused(call(addr, ALICE, &never).await, ErrorCode::Conflict);
    let forged = Commit { phi: Signature { by: 0, bytes: vec![1; 32] }, ..commit.clone() };
    let forged = AipCommit { group: "g".into(), from: 0, commit: forged.to_wire().into(), commit_auth: None };
    call(addr, ALICE, &forged).await.expect("the provider checks no signature");
    let twice = AipCommit { group: "g".into(), from: 0, commit: commit.to_wire().into(), commit_auth: None };
    refused(call(addr, ALICE, &twice).await, ErrorCode::Conflict);
    assert_eq!(progress(&server, "g").await, (0, 1), "nothing refused changed the group");
    // The journal holds what was accepted (the forged COMMIT too: members catch it, Alg. 1).
    server.shutdown().await.unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    assert_eq!(progress(&server, "g").await, (0, 1));
    server.shutdown().await.unwrap();
}

/// Member `m`'s answers to the UPDATE-AUTH in `work`, each encoded.
fn answers(m: &mut Member, work: AipWork) -> Vec<ByteBuf> {
    let update = aip::UpdateAuth::<Adict>::from_wire(&work.update_auth.expect("work handed over")).unwrap();
    m.aip.on_update_auth(update).unwrap().iter().map(|a| ByteBuf::from(a.to_wire())).collect()
}

#[tokio::test]
async fn one_message_answers_a_whole_batch_passing_over_what_is_done_and_stopping_at_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    let addr = server.addr;
    create(addr, ALICE, "g").await.unwrap();
    let mut m: Vec<Member> = (0..3).map(|i| Member::new(i, addr, ALICE, "g")).collect();
    let send = |from: u32, commit_auths: Vec<ByteBuf>| {
        let req = AipCommitAuth { group: "g".into(), from, commit_auths };
        async move { call(addr, ALICE, &req).await }
    };
    let (_, _, w0) = m[0].active(put("a", "1")).await.unwrap();
    let (_, _, _) = m[1].active(put("b", "2")).await.unwrap();
    let (_, _, w2) = m[2].active(put("c", "3")).await.unwrap();
    assert_eq!(w2, AipWork::default(), "member 0 holds the work");
    tokio::time::sleep(LEASE).await;
    let w2 = m[2].work().await;
    let (mine, all) = (answers(&mut m[0], w0), answers(&mut m[2], w2));
    assert_eq!((mine.len(), all.len()), (1, 3), "member 2 was handed every update up to its own");
    send(0, mine).await.unwrap();
    assert_eq!(progress(&server, "g").await, (1, 3));
    // Member 2's three answers in one message: the first, done already, is passed over.
    assert_eq!(send(2, all).await.unwrap(), AipWork::default(), "nothing left");
    assert_eq!(progress(&server, "g").await, (3, 3));

    // An answer that does not authenticate the state ends the message; those before it count.
    let (_, _, _) = m[0].active(put("d", "4")).await.unwrap();
    let (_, _, _) = m[1].active(put("e", "5")).await.unwrap();
    tokio::time::sleep(LEASE).await;
    let w1 = m[1].work().await;
    let mut two = answers(&mut m[1], w1);
    let mut wrong = aip::CommitAuth::<vouch_core::Digest>::from_wire(&two[1]).unwrap();
    wrong.signed.auth = vouch_core::Digest([7; 32]);
    let right = std::mem::replace(&mut two[1], ByteBuf::from(wrong.to_wire()));
    send(1, two.clone()).await.expect("the first answer was taken");
    assert_eq!(progress(&server, "g").await, (4, 5));
    assert!(send(1, vec![two[1].clone()]).await.is_err(), "alone, the wrong answer is the answer's refusal");
    send(1, vec![right]).await.unwrap();
    assert_eq!(progress(&server, "g").await, (5, 5));
    // No answer, or more than one message may carry, is a bad request.
    refused(send(1, Vec::new()).await, ErrorCode::BadRequest);
    let too_many = vec![two[0].clone(); vouch_proto::vicos::MAX_COMMIT_AUTHS + 1];
    refused(send(1, too_many).await, ErrorCode::BadRequest);
    // The journal holds exactly what was taken.
    server.shutdown().await.unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    assert_eq!(progress(&server, "g").await, (5, 5));
    // A new member (a member without its state would find its own operations and refuse).
    let mut fresh = Member::new(3, server.addr, ALICE, "g");
    assert_eq!(fresh.run(get("e")).await, value("5"));
    server.shutdown().await.unwrap();
}

/// A COMMIT may carry its update's COMMIT-AUTH, made by the member from its REPLY when
/// nothing was pending before it: one message, both journaled, and the group is as after
/// the passive phase, also after a restart. One that does not authenticate is passed over:
/// the COMMIT stands, and the update is handed out as passive work as ever.
#[tokio::test]
async fn a_commit_carries_its_updates_commit_auth_and_a_wrong_one_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    let addr = server.addr;
    create(addr, ALICE, "g").await.unwrap();
    let mut m = Member::new(0, addr, ALICE, "g");
    let commit_with = |m: &Member, commit: &Commit<DictOp>, auth: &aip::CommitAuth<vouch_core::Digest>| AipCommit {
        group: "g".into(),
        from: m.aip.id(),
        commit: commit.to_wire().into(),
        commit_auth: Some(auth.to_wire().into()),
    };

    let (reply, t) = m.invoke(put("k", "1")).await.unwrap();
    let own = m.aip.own_update(&reply).expect("nothing pending before it");
    let (_, commit) = m.aip.on_reply(reply).unwrap();
    let auth = m.aip.authenticate_own(own, &commit).unwrap().unwrap();
    let work: AipWork = call(addr, ALICE, &commit_with(&m, &commit, &auth)).await.unwrap();
    assert!(work.update_auth.is_none(), "nothing left to authenticate");
    assert_eq!(progress(&server, "g").await, (t, t));

    let (reply, t) = m.invoke(put("k", "2")).await.unwrap();
    let own = m.aip.own_update(&reply).unwrap();
    let (_, commit) = m.aip.on_reply(reply).unwrap();
    let mut wrong = m.aip.authenticate_own(own, &commit).unwrap().unwrap();
    wrong.signed.auth = vouch_core::Digest([7; 32]);
    let work: AipWork = call(addr, ALICE, &commit_with(&m, &commit, &wrong)).await.unwrap();
    assert_eq!(progress(&server, "g").await, (t - 1, t), "committed, not authenticated");
    assert_eq!(m.passive(work).await, 1, "handed out as passive work");
    assert_eq!(progress(&server, "g").await, (t, t));

    server.shutdown().await.unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    assert_eq!(progress(&server, "g").await, (t, t), "both COMMIT-AUTHs replayed from the journal");
    m.addr = server.addr;
    assert_eq!(m.run(get("k")).await, value("2"));
    server.shutdown().await.unwrap();
}

/// An INVOKE of `op` by `m` carrying `commits` (encoded as they are, or as given).
async fn invoke_carrying(m: &mut Member, op: DictOp, token: &str, commits: Vec<ByteBuf>) -> Result<(), ErrorBody> {
    let invoke = m.aip.invoke(op).unwrap();
    let req = AipInvoke { group: m.group.clone(), from: m.aip.id(), invoke: invoke.to_wire().into(), commits };
    match call(m.addr, token, &req).await {
        Ok(reply) => {
            let reply = aip::Reply::<Adict>::from_wire(&reply.reply).unwrap();
            let (_, commit) = m.aip.on_reply(reply).expect("an honest provider's REPLY verifies");
            let req = AipCommit {
                group: m.group.clone(),
                from: m.aip.id(),
                commit: commit.to_wire().into(),
                commit_auth: None,
            };
            let work = call(m.addr, token, &req).await?;
            m.passive(work).await;
            Ok(())
        }
        Err(e) => {
            m.aip.abandon();
            Err(e)
        }
    }
}

/// The provider answers a COMMIT before its journal write, so a crash may lose it; the
/// member's next INVOKE carries it. A carried COMMIT is taken when the provider lost it,
/// and passed over when it has it (journaled once: the group replays after a restart). An
/// INVOKE carrying COMMITs from another provider client than the member's, more than the
/// bound, or one malformed, is refused, and nothing is taken.
#[tokio::test]
async fn carried_commits_are_taken_once_and_from_their_member_alone() {
    let dir = tempfile::tempdir().unwrap();
    let unflushed = Limits { vicos_flush_after: std::time::Duration::from_secs(3600), ..Limits::default() };
    let server = serve(dir.path(), unflushed).await;
    create(server.addr, ALICE, "g").await.unwrap();
    let mut alice = Member::new(0, server.addr, ALICE, "g");
    let (_, t, _) = alice.active(put("k", "v")).await.unwrap();
    let lost = ByteBuf::from(alice.aip.unsent().last().unwrap().to_wire());
    server.crash().await.unwrap();

    let server = serve(dir.path(), Limits::default()).await;
    alice.addr = server.addr;
    assert_eq!(progress(&server, "g").await, (t - 1, t), "the COMMIT was lost with the crash");
    let refusals = [
        (BOB, vec![lost.clone()], ErrorCode::Unauthorized),
        (ALICE, vec![lost.clone(); vouch_proto::vicos::MAX_CARRIED_COMMITS + 1], ErrorCode::BadRequest),
        (ALICE, vec![lost.clone(), ByteBuf::from(vec![0xff; 40])], ErrorCode::BadRequest),
    ];
    for (token, commits, code) in refusals {
        refused(invoke_carrying(&mut alice, get("k"), token, commits).await, code);
        assert_eq!(progress(&server, "g").await, (t - 1, t), "nothing taken");
    }
    invoke_carrying(&mut alice, get("k"), ALICE, vec![lost.clone()]).await.unwrap();
    let (b, last) = progress(&server, "g").await;
    assert!(b > t && b == last, "the put is committed and applied, and the get after it: {b}, {last}");
    // Carried again (its answer lost, say): passed over.
    invoke_carrying(&mut alice, get("k"), ALICE, vec![lost]).await.unwrap();
    let before = progress(&server, "g").await;
    server.shutdown().await.unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    assert_eq!(progress(&server, "g").await, before, "the journal replays as it was");
    let mut bob = Member::new(1, server.addr, BOB, "g");
    assert_eq!(bob.run(get("k")).await, value("v"));
    server.shutdown().await.unwrap();
}

/// A clean shutdown writes the COMMITs answered and not yet written: after the restart, the
/// member's next INVOKE, carrying nothing, is answered from a history that holds its COMMIT
/// (had it been lost, the member's check of the REPLY would fail).
#[tokio::test]
async fn a_clean_shutdown_writes_the_commits_it_answered() {
    let dir = tempfile::tempdir().unwrap();
    let unflushed = Limits { vicos_flush_after: std::time::Duration::from_secs(3600), ..Limits::default() };
    let server = serve(dir.path(), unflushed).await;
    create(server.addr, ALICE, "g").await.unwrap();
    let mut alice = Member::new(0, server.addr, ALICE, "g");
    alice.active(put("k", "v")).await.unwrap();
    server.shutdown().await.unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    alice.addr = server.addr;
    invoke_carrying(&mut alice, get("k"), ALICE, vec![]).await.unwrap();
    let (b, t) = progress(&server, "g").await;
    assert_eq!(b, t, "everything applied");
    server.shutdown().await.unwrap();
}

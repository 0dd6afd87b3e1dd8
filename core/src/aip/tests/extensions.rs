//! The extensions of Sec. 3.7 and Sec. 5.2, step by step, with an honest server.

use super::*;
use std::collections::BTreeSet;

/// Sec. 3.7 "Eliminating aborted operations": once the server holds an aborted operation's
/// COMMIT, it marks the operation in later replies and it no longer causes aborts.
#[test]
fn an_aborted_operation_marked_by_the_server_no_longer_forces_an_abort() {
    // Commutative rule: a put of a key aborts behind a pending put of it, and a get too.
    let setup = || {
        let (mut s, mut c) = (server(), clients(3, Mode::Commutative));
        assert_eq!(active(&mut s, &mut c[0], put("x", "1")).unwrap(), NOTHING); // 1
        let invoke = c[1].invoke(put("x", "2")).unwrap(); // 2: aborts
        let reply = s.on_invoke(1, invoke).unwrap();
        let (outcome, late_commit) = c[1].on_reply(reply).unwrap();
        assert_eq!(outcome, Outcome::Abort);
        let (_, m) = s.update_auth().unwrap().unwrap(); // operation 1 authenticated, 2 still pending
        for answer in c[0].on_update_auth(m).unwrap() {
            s.on_commit_auth(0, answer).unwrap();
        }
        // Before the aborted put's COMMIT reaches the server, it counts: get x aborts.
        let reply = reply_for(&mut s, &mut c[2], get("x")); // 3
        assert_eq!(reply.view.omega[0].aborted, None);
        let (outcome, commit) = c[2].on_reply(reply).unwrap();
        assert_eq!(outcome, Outcome::Abort);
        s.on_commit(1, late_commit).unwrap();
        s.on_commit(2, commit).unwrap();
        let retry = reply_for(&mut s, &mut c[2], get("x")); // 4
        assert_eq!(retry.view.omega.len(), 3, "the aborted put, the aborted get, this get");
        (s, c, retry)
    };
    // After it: the put comes marked, and the retried get reads around it.
    let (mut s, mut c, retry) = setup();
    assert!(retry.view.omega[0].aborted.is_some());
    let (outcome, commit) = c[2].on_reply(retry).unwrap();
    assert_eq!(outcome, value("1"));
    s.on_commit(2, commit).unwrap();
    authenticate_all(&mut s, &mut c);
    assert_eq!((s.applied(), s.invoked()), (4, 4));
    assert_eq!(s.state().get(b"x"), Some(&b"1"[..]), "the aborted put took no effect");
    // Without the mark (the paper's AIP), the retry aborts again.
    let (_, mut c, mut retry) = setup();
    retry.view.omega[0].aborted = None;
    assert_eq!(c[2].on_reply(retry).unwrap().0, Outcome::Abort);
}

/// Sec. 3.7 "Passive phase only for update operations": a committed query is applied at
/// once; an authenticator is the last update's, sent with that update (`O[d]`).
#[test]
fn queries_have_no_passive_phase() {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    run(&mut s, &mut c, 0, put("x", "1")); // 1
    for (i, op) in [(1, get("x")), (2, DictOp::List), (0, get("y"))] {
        active(&mut s, &mut c[i], op).unwrap(); // 2, 3, 4
        assert_eq!(s.applied(), s.invoked(), "applied on its COMMIT");
        assert!(s.update_auth().unwrap().is_none(), "no UPDATE-AUTH for a query");
    }
    // A query behind a pending update waits for it, then goes without a passive phase.
    active(&mut s, &mut c[1], put("y", "2")).unwrap(); // 5
    active(&mut s, &mut c[2], get("x")).unwrap(); // 6
    assert_eq!(s.applied(), 4);
    let (j, m) = s.update_auth().unwrap().unwrap();
    assert_eq!((j, m.base, m.previous.op.clone(), m.ops.len()), (1, 1, put("x", "1"), 1));
    for answer in c[1].on_update_auth(m).unwrap() {
        s.on_commit_auth(1, answer).unwrap();
    }
    assert_eq!((s.applied(), s.invoked()), (6, 6), "the query after it, applied with it");
    // A client that missed all of it checks the authenticator of operation 5 alone.
    let reply = reply_for(&mut s, &mut c[2], get("y"));
    assert_eq!((reply.view.b, reply.view.authenticated.op.clone()), (6, put("y", "2")));
    assert_eq!(c[2].on_reply(reply).unwrap().0, value("2"));
}

/// Sec. 3.7 "Batching and delegating": one client authenticates every committed update up to
/// its own, in one batch, skipping queries and stopping where an operation is not committed.
#[test]
fn a_delegate_authenticates_a_batch_and_the_slower_answers_are_not_needed() {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    active(&mut s, &mut c[0], put("x", "1")).unwrap(); // 1
    active(&mut s, &mut c[1], get("x")).unwrap(); // 2, a query
    active(&mut s, &mut c[1], put("y", "2")).unwrap(); // 3
    let invoke = c[0].invoke(put("w", "0")).unwrap(); // 4: invoked, not committed yet
    let late = s.on_invoke(0, invoke).unwrap();
    active(&mut s, &mut c[2], put("z", "3")).unwrap(); // 5
    let batch = s.delegate_auth(2).unwrap().unwrap();
    assert_eq!(batch.ops.iter().map(|o| o.q).collect::<Vec<_>>(), [1, 3], "the query skipped, 4 not committed");
    let (_, own) = s.update_auth().unwrap().unwrap(); // what client 0 would be asked for operation 1
    let answers = c[2].on_update_auth(batch).unwrap();
    assert!(answers.iter().all(|a| a.signed.psi.by == 2));
    for answer in answers {
        s.on_commit_auth(2, answer).unwrap();
    }
    assert_eq!(s.applied(), 3);
    let slower = c[0].on_update_auth(own).unwrap().pop().unwrap();
    assert_eq!(s.on_commit_auth(0, slower), Err(ServerError::AlreadyAuthenticated { q: 1 }));
    let (_, commit) = c[0].on_reply(late).unwrap();
    s.on_commit(0, commit).unwrap();
    let up_to_own = s.delegate_auth(0).unwrap().unwrap();
    assert_eq!(up_to_own.ops.iter().map(|o| o.q).collect::<Vec<_>>(), [4], "client 0 has not seen 5");
    let batch = s.delegate_auth(2).unwrap().unwrap();
    assert_eq!(batch.ops.iter().map(|o| o.q).collect::<Vec<_>>(), [4, 5]);
    for answer in c[2].on_update_auth(batch).unwrap() {
        s.on_commit_auth(2, answer).unwrap();
    }
    assert_eq!((s.applied(), s.invoked()), (5, 5));
    assert!(s.delegate_auth(2).unwrap().is_none(), "nothing left");
    assert_eq!(
        run(&mut s, &mut c, 0, DictOp::List),
        Outcome::Done(DictResponse::Keys(vec![b"w".into(), b"x".into(), b"y".into(), b"z".into()]))
    );
}

/// Sec. 5.2 "Bounded pending list": an INVOKE beyond the bound is refused, nothing changes,
/// and the same INVOKE goes through once operations have completed; an inbox holds it back.
#[test]
fn a_full_pending_list_refuses_invokes_and_an_inbox_holds_them_back() {
    assert_eq!(ServerConfig::default().max_pending, 128, "the paper's bound");
    let config = ServerConfig { max_pending: 2, ..ServerConfig::default() };
    let (mut s, mut c) = (server().with_config(config), clients(3, Mode::Compatible));
    active(&mut s, &mut c[0], put("x", "1")).unwrap();
    active(&mut s, &mut c[1], put("y", "2")).unwrap();
    assert!(s.pending_full());
    let invoke = c[2].invoke(get("x")).unwrap();
    assert_eq!(s.on_invoke(2, invoke.clone()), Err(ServerError::PendingFull { pending: 2, max: 2 }));
    assert_eq!(s.invoked(), 2, "nothing assigned");
    let mut inbox = Inbox::default();
    inbox.push(2, ToServer::Invoke(invoke));
    assert!(inbox.next_for(&s).is_none(), "held back while full");
    let (j, m) = s.update_auth().unwrap().unwrap();
    for answer in c[j as usize].on_update_auth(m).unwrap() {
        inbox.push(j, ToServer::CommitAuth(answer));
    }
    let (from, m) = inbox.next_for(&s).unwrap();
    assert!(matches!(m, ToServer::CommitAuth(_)), "the passive phase still goes through");
    assert_eq!(s.deliver(from, m), Ok(None));
    let (from, m) = inbox.next_for(&s).expect("room again");
    let reply = s.deliver(from, m).unwrap().unwrap();
    assert_eq!(c[2].on_reply(reply).unwrap().0, value("1"));
    assert!(inbox.is_empty());
}

/// Sec. 5.2 "Message delivery order": COMMIT and COMMIT-AUTH overtake INVOKEs (and
/// UPDATE-AUTH overtakes REPLY at a client); each kind keeps its order.
#[test]
fn the_inbox_serves_the_passive_phase_first() {
    let mut inbox: Inbox<ToServer<Adict>> = Inbox::default();
    let mut c = clients(3, Mode::Compatible);
    let (i1, i2) = (c[1].invoke(get("a")).unwrap(), c[2].invoke(get("b")).unwrap());
    let signed = Signed { auth: Tree::new().root(), psi: Signature { by: 0, bytes: vec![] } };
    inbox.push(1, ToServer::Invoke(i1));
    inbox.push(0, ToServer::CommitAuth(CommitAuth { q: 7, signed: signed.clone() }));
    inbox.push(2, ToServer::Invoke(i2));
    inbox.push(0, ToServer::CommitAuth(CommitAuth { q: 8, signed }));
    let order: Vec<_> = std::iter::from_fn(|| inbox.pop(false))
        .map(|(from, m)| match m {
            ToServer::CommitAuth(m) => (from, m.q),
            _ => (from, 0),
        })
        .collect();
    assert_eq!(order, [(0, 7), (0, 8), (1, 0), (2, 0)]);

    // The effect the paper reports: fewer aborts. Client 0's COMMIT-AUTH of put x reaches
    // the server after client 1's INVOKE of get x; in arrival order the get aborts.
    for priority in [false, true] {
        let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
        active(&mut s, &mut c[0], put("x", "1")).unwrap();
        let (_, m) = s.update_auth().unwrap().unwrap();
        let answer = c[0].on_update_auth(m.clone()).unwrap().pop().unwrap();
        let arrivals = [(1, ToServer::Invoke(c[1].invoke(get("x")).unwrap())), (0, ToServer::CommitAuth(answer))];
        let mut inbox = Inbox::default();
        let mut handled = Vec::new();
        for (from, m) in arrivals {
            match priority {
                true => inbox.push(from, m),
                false => handled.push((from, m)),
            }
        }
        handled.extend(std::iter::from_fn(|| inbox.next_for(&s)));
        let mut outcome = None;
        for (from, m) in handled {
            if let Some(reply) = s.deliver(from, m).unwrap() {
                outcome = Some(c[1].on_reply(reply).unwrap().0);
            }
        }
        let expected = if priority { value("1") } else { Outcome::Abort };
        assert_eq!(outcome, Some(expected), "priority: {priority}");
        // At a client, an UPDATE-AUTH goes before a REPLY.
        assert!(ToClient::<Adict>::UpdateAuth(Box::new(m)).urgent());
    }
}

/// Sec. 3.3: the server forgets the history every member has cleared; with the members
/// unknown it keeps it all, and a member that never shows up holds it.
#[test]
fn the_server_forgets_what_every_member_has_cleared() {
    let members = |ids: &[u32]| ServerConfig {
        members: Some(ids.iter().copied().collect::<BTreeSet<_>>()),
        ..ServerConfig::default()
    };
    let retained_after = |config: ServerConfig| {
        let (mut s, mut c) = (server().with_config(config), clients(3, Mode::Compatible));
        for round in 0..40 {
            for i in 0..3 {
                let op = if round % 2 == 0 { put(&format!("k{i}"), &round.to_string()) } else { get("k0") };
                run(&mut s, &mut c, i, op);
            }
        }
        (s, c)
    };
    let (s, _) = retained_after(members(&[0, 1, 2]));
    assert_eq!(s.invoked(), 120);
    assert!(s.retained() <= 10, "kept {} of 120", s.retained());
    let (s, _) = retained_after(ServerConfig::default());
    assert_eq!(s.retained(), 121, "members unknown: the whole history and the genesis");
    let (mut s, mut c) = retained_after(members(&[0, 1, 2, 3]));
    assert_eq!(s.retained(), 121, "member 3 has cleared nothing yet");
    // A client outside the group, and so outside the collection, may find its history gone.
    let (mut s2, _) = retained_after(members(&[0, 1, 2]));
    let mut outsider = Client::new(5, keys(), Adict { mode: Mode::Compatible });
    let invoke = outsider.invoke(get("k0")).unwrap();
    assert!(matches!(s2.on_invoke(5, invoke), Err(ServerError::Forgotten(_))));
    // Member 3 catches up: once its next INVOKE says it cleared the history, that goes.
    let mut late = Client::new(3, keys(), Adict { mode: Mode::Compatible });
    assert_eq!(active(&mut s, &mut late, get("k0")).unwrap(), value("38"));
    assert_eq!(s.retained(), 122);
    assert_eq!(active(&mut s, &mut late, get("k1")).unwrap(), value("38"));
    run(&mut s, &mut c, 0, put("k0", "x"));
    assert!(s.retained() <= 10, "kept {}", s.retained());
}

/// An INVOKE refused, or answered with a REPLY that was lost: the client abandons it and goes
/// on. One the server did order stays pending with no COMMIT, outside the client's `μ` (on
/// both sides), and holds the passive phase back until a member takes over for the client.
#[test]
fn an_abandoned_operation_lets_its_client_go_on_until_a_takeover() {
    let config = ServerConfig { max_pending: 1, ..ServerConfig::default() };
    let (mut s, mut c) = (server().with_config(config), clients(2, Mode::Compatible));
    active(&mut s, &mut c[0], put("x", "1")).unwrap();
    let invoke = c[1].invoke(get("x")).unwrap();
    assert!(matches!(s.on_invoke(1, invoke), Err(ServerError::PendingFull { .. })));
    assert!(c[1].invoke(get("y")).is_err(), "busy until it gives up");
    c[1].abandon();
    authenticate_all(&mut s, &mut c);
    assert_eq!(active(&mut s, &mut c[1], get("x")).unwrap(), value("1"));

    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    run(&mut s, &mut c, 0, put("x", "1")); // 1
    let _lost = reply_for(&mut s, &mut c[1], put("y", "2")); // 2
    c[1].abandon();
    let reply = reply_for(&mut s, &mut c[1], get("y")); // 3
    assert_eq!(reply.view.omega.len(), 2, "the abandoned put is pending");
    let (outcome, commit) = c[1].on_reply(reply).unwrap();
    assert_eq!(outcome, Outcome::Done(DictResponse::Value(None)), "and not in μ");
    s.on_commit(1, commit).unwrap();
    authenticate_all(&mut s, &mut c);
    assert_eq!(s.applied(), 1, "nothing applied past the abandoned put");
    let m = s.take_over(1, 2, c[2].cleared()).unwrap();
    assert_eq!(m.hanging, [2]);
    for commit in c[2].take_over(m).unwrap() {
        s.on_commit(2, commit).unwrap();
    }
    authenticate_all(&mut s, &mut c);
    assert_eq!((s.applied(), s.invoked()), (3, 3));
    assert_eq!(s.state().get(b"y"), None, "aborted");
}

/// A group's creator signs its genesis alone ([`genesis`]); a server started from it is the
/// one [`Server::genesis`] makes.
#[test]
fn a_server_starts_from_a_genesis_its_creator_signed() {
    let (op, auth) = genesis::<Adict>(&keys(), 0, DictOp::List, &Tree::new()).unwrap();
    assert_eq!((op.client, op.phi.by, auth.psi.by, auth.auth), (0, 0, 0, Tree::new().root()));
    let mut s = Server::new(op, auth, Tree::new());
    let mut c = clients(2, Mode::Compatible);
    run(&mut s, &mut c, 1, put("x", "1"));
    assert_eq!(run(&mut s, &mut c, 0, get("x")), value("1"));
    let ed25519 = Keyring::Ed25519 { me: None, members: BTreeMap::new() };
    assert_eq!(genesis::<Adict>(&ed25519, 0, DictOp::List, &Tree::new()), Err(KeyringError::CannotSign(0)));
}

/// Sec. 3.7 batching, at its smallest: a client whose REPLY shows nothing pending before its
/// update authenticates it from the REPLY, and its COMMIT-AUTH is the one the server's
/// UPDATE-AUTH would have drawn from it, byte for byte. With another operation pending
/// before it, or for a query, there is nothing to authenticate early.
#[test]
fn an_update_with_nothing_pending_before_it_is_authenticated_from_its_reply() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    run(&mut s, &mut c, 1, put("x", "0")); // 1
    let reply = reply_for(&mut s, &mut c[0], put("x", "1")); // 2
    let own = c[0].own_update(&reply).expect("nothing pending before it");
    let (outcome, commit) = c[0].on_reply(reply).unwrap();
    assert_eq!(outcome, Outcome::Done(DictResponse::Nothing));
    let early = c[0].authenticate_own(own.clone(), &commit).unwrap().expect("an update that succeeded");
    let misplaced = Commit { t: commit.t + 1, ..commit.clone() };
    assert_eq!(c[0].authenticate_own(own, &misplaced).unwrap(), None, "the REPLY of another position");
    s.on_commit(0, commit).unwrap();
    let (to, m) = s.update_auth().unwrap().unwrap();
    assert_eq!(to, 0);
    let from_server = c[0].on_update_auth(m).unwrap();
    assert_eq!(from_server, std::slice::from_ref(&early));
    s.on_commit_auth(0, early).unwrap();
    assert_eq!((s.applied(), s.invoked()), (2, 2));
    assert_eq!(s.state().get(b"x"), Some(&b"1"[..]));

    // A query has no passive phase; an update behind a pending one waits for its UPDATE-AUTH.
    let query = reply_for(&mut s, &mut c[1], get("x")); // 3
    assert!(c[1].own_update(&query).is_none());
    let (_, commit) = c[1].on_reply(query).unwrap();
    s.on_commit(1, commit).unwrap();
    let first = c[0].invoke(put("y", "1")).unwrap(); // 4, pending
    let first = s.on_invoke(0, first).unwrap();
    let behind = reply_for(&mut s, &mut c[1], put("z", "1")); // 5
    assert_eq!(behind.view.omega.len(), 2);
    assert!(c[1].own_update(&behind).is_none(), "operation 4 is pending before it");
    assert!(c[0].own_update(&first).is_some());
}

//! Sec. 3.7 "Tolerate client crashes": a member takes over for a crashed one, honestly or
//! with a server that lies about it.

use super::*;

/// Client 0 crashes with one update committed and not authenticated (1) and one invoked and
/// answered but never committed (2); client 1's update (3) waits behind them.
pub(super) fn crashed() -> (Server<Adict>, Vec<Client<Adict>>, Commit<Op>) {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    active(&mut s, &mut c[0], put("x", "1")).unwrap(); // 1
    let invoke = c[0].invoke(put("y", "1")).unwrap(); // 2
    let reply = s.on_invoke(0, invoke).unwrap();
    let (_, never_sent) = c[0].on_reply(reply).unwrap();
    active(&mut s, &mut c[1], put("z", "1")).unwrap(); // 3
    (s, c, never_sent)
}

/// Client 2 takes over for client 0, aborts its hanging operation, and authenticates.
pub(super) fn take_over(s: &mut Server<Adict>, c: &mut [Client<Adict>]) {
    let m = s.take_over(0, 2, c[2].cleared()).unwrap();
    assert_eq!(m.hanging, [2]);
    for commit in c[2].take_over(m).unwrap() {
        assert_eq!((commit.client, commit.status, commit.phi.by), (0, Status::Abort, 2));
        s.on_commit(2, commit).unwrap();
    }
}

#[test]
fn a_crashed_clients_operations_are_aborted_and_authenticated_by_another() {
    let (mut s, mut c, never_sent) = crashed();
    let (j, _) = s.update_auth().unwrap().unwrap();
    assert_eq!((j, s.applied()), (0, 0), "stuck on the crashed client");
    take_over(&mut s, &mut c);
    // Its passive phases now go to the taker: its committed put x, its aborted put y.
    while let Some((j, m)) = s.update_auth().unwrap() {
        let expected = if m.ops[0].q == 3 { 1 } else { 2 };
        assert_eq!(j, expected);
        for answer in c[j as usize].on_update_auth(m).unwrap() {
            s.on_commit_auth(j, answer).unwrap();
        }
    }
    assert_eq!((s.applied(), s.invoked()), (3, 3));
    assert_eq!(s.state().get(b"x"), Some(&b"1"[..]), "committed before the crash: it stays");
    assert_eq!(s.state().get(b"y"), None, "never committed: aborted");
    // The crashed client may not come back under its identity.
    assert_eq!(s.on_commit(0, never_sent), Err(ServerError::Retired(0)));
    let mut back = Client::new(0, keys(), Adict { mode: Mode::Compatible });
    let invoke = back.invoke(get("x")).unwrap();
    assert_eq!(s.on_invoke(0, invoke).map(|_| ()), Err(ServerError::Retired(0)));
    assert!(s.delegate_auth(0).unwrap().is_none());
    // The others see the takeover when they clear it.
    assert!(!c[1].knows_taken_over(0));
    assert_eq!(run(&mut s, &mut c, 1, get("y")), Outcome::Done(DictResponse::Value(None)));
    assert!(c[1].knows_taken_over(0));
    assert_eq!(run(&mut s, &mut c, 2, get("x")), value("1"));
}

#[test]
fn the_taker_may_have_an_operation_in_flight() {
    let (mut s, mut c, _) = crashed();
    let invoke = c[2].invoke(get("w")).unwrap(); // 4, answered before the takeover
    let reply = s.on_invoke(2, invoke).unwrap();
    take_over(&mut s, &mut c);
    let (outcome, commit) = c[2].on_reply(reply).unwrap();
    assert_eq!(outcome, Outcome::Done(DictResponse::Value(None)));
    s.on_commit(2, commit).unwrap();
    authenticate_all(&mut s, &mut c);
    assert_eq!((s.applied(), s.invoked()), (4, 4));
}

#[test]
fn the_server_refuses_a_takeover_out_of_the_group_or_of_oneself() {
    let (mut s, c, _) = crashed();
    assert!(matches!(s.take_over(2, 2, 0), Err(ServerError::CannotTakeOver { .. })));
    let config = ServerConfig { members: Some([0, 1, 2].into()), ..ServerConfig::default() };
    let mut s2 = server().with_config(config);
    assert!(matches!(s2.take_over(7, 2, 0), Err(ServerError::CannotTakeOver { .. })));
    s.take_over(0, 2, c[2].cleared()).unwrap();
    assert!(matches!(s.take_over(1, 0, 0), Err(ServerError::CannotTakeOver { .. })), "a retired taker");
}

/// A server that hides the crashed client's COMMIT, has the taker abort the operation, and
/// then shows the taker that COMMIT: the taker knows what it aborted.
#[test]
fn a_commit_shown_for_an_operation_the_taker_aborted_is_caught() {
    let (mut s, mut c, hidden) = crashed();
    take_over(&mut s, &mut c);
    authenticate_all(&mut s, &mut c);
    let mut reply = reply_for(&mut s, &mut c[2], get("y"));
    let k = reply.view.delta.iter().position(|d| d.client == 0 && d.status == Status::Abort).unwrap();
    let l = reply.view.b + 1 - (reply.view.delta.len() - k) as u64;
    assert_eq!(l, hidden.t);
    let Commit { op, status, phi, client, .. } = hidden;
    reply.view.delta[k] = Committed { op, status, phi, client };
    assert_eq!(c[2].on_reply(reply).unwrap_err(), Violation::TakenOver { client: 0, at: 2 });
}

/// A server that runs an operation of a client after its takeover (the client came back, or
/// the server replays its INVOKE): every client that knows of the takeover refuses it.
#[test]
fn an_operation_of_a_taken_over_client_is_caught() {
    let (mut s, mut c, _) = crashed();
    take_over(&mut s, &mut c);
    authenticate_all(&mut s, &mut c);
    run(&mut s, &mut c, 1, get("y")); // client 1 clears the takeover's abort
    let mut back = Client::new(0, keys(), Adict { mode: Mode::Compatible });
    let revived = back.invoke(put("x", "revived")).unwrap();
    for i in [1, 2] {
        let mut reply = reply_for(&mut s, &mut c[i], get("x"));
        let at = reply.t;
        let invoked = Invoked { op: revived.op.clone(), tau: revived.tau.clone(), client: 0, counter: revived.counter };
        reply.view.omega.insert(reply.view.omega.len() - 1, Pending { invoked, aborted: None });
        reply.t += 1;
        assert_eq!(c[i].on_reply(reply).unwrap_err(), Violation::TakenOver { client: 0, at });
    }
}

/// A takeover report that names an operation of another client, or a committed one.
#[test]
fn a_bent_takeover_report_is_caught() {
    let (mut s, mut c, _) = crashed();
    let mut m = s.take_over(0, 2, c[2].cleared()).unwrap();
    m.hanging.push(3); // client 1's put z
    assert!(matches!(c[2].take_over(m), Err(Violation::Malformed(_))));
    let (mut s, mut c, _) = crashed();
    let mut m = s.take_over(0, 2, c[2].cleared()).unwrap();
    m.hanging = vec![9];
    assert!(matches!(c[2].take_over(m), Err(Violation::Malformed(_))));
    // A view that does not hold together is caught as in a REPLY.
    let (mut s, mut c, _) = crashed();
    let mut m = s.take_over(0, 2, c[2].cleared()).unwrap();
    m.view.omega[1].invoked.tau = vec![0; 32];
    assert_eq!(c[2].take_over(m).unwrap_err(), Violation::Signature { what: "INVOKE", client: 0, at: 2 });
}

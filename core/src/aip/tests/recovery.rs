//! A client that lost a message or its process goes on, and the group with it: an INVOKE
//! abandoned without its REPLY is aborted by its own client at its next operation (no
//! takeover needed), and a COMMIT never delivered is sent again, also from a saved state.

use super::*;

/// Delivers every COMMIT `client` has not had acknowledged, as a caller of [`Client::unsent`]
/// does.
fn deliver_unsent(s: &mut Server<Adict>, client: &mut Client<Adict>) {
    for commit in client.unsent().to_vec() {
        s.on_commit(client.id(), commit.clone()).unwrap();
        client.delivered(commit.t);
    }
}

#[test]
fn an_abandoned_invoke_is_aborted_by_its_own_client_at_its_next_operation() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    let invoke = c[0].invoke(put("y", "1")).unwrap();
    s.on_invoke(0, invoke).unwrap(); // 1: ordered, and its REPLY lost
    c[0].abandon();
    active(&mut s, &mut c[1], put("z", "1")).unwrap(); // 2
    authenticate_all(&mut s, &mut c);
    assert_eq!(s.applied(), 0, "everything waits behind the abandoned operation");

    let invoke = c[0].invoke(put("w", "1")).unwrap(); // 3
    let reply = s.on_invoke(0, invoke).unwrap();
    let (outcome, own) = c[0].on_reply(reply).unwrap();
    assert_eq!(outcome, NOTHING);
    let unsent = c[0].unsent().to_vec();
    assert_eq!(unsent.iter().map(|c| (c.t, c.status)).collect::<Vec<_>>(), [(1, Status::Abort), (3, Status::Success)]);
    assert_eq!(unsent[1], own);
    deliver_unsent(&mut s, &mut c[0]);
    authenticate_all(&mut s, &mut c);
    assert_eq!((s.applied(), s.invoked()), (3, 3));
    assert_eq!(s.state().get(b"y"), None, "never committed: aborted");
    assert_eq!((s.state().get(b"z"), s.state().get(b"w")), (Some(&b"1"[..]), Some(&b"1"[..])));
    // Everyone goes on, and agrees.
    assert_eq!(active(&mut s, &mut c[1], get("w")).unwrap(), value("1"));
    assert_eq!(active(&mut s, &mut c[0], get("y")).unwrap(), Outcome::Done(DictResponse::Value(None)));
}

#[test]
fn a_commit_saved_and_never_sent_is_sent_by_the_restored_client() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    let invoke = c[0].invoke(put("x", "1")).unwrap();
    let reply = s.on_invoke(0, invoke).unwrap();
    c[0].on_reply(reply).unwrap();
    // Saved before sending (as a member that persists does), then the process died.
    let saved = c[0].save();
    c[0] = Client::restore(&saved, 0, keys(), Adict { mode: Mode::Compatible }).unwrap();
    assert_eq!(c[0].unsent().iter().map(|c| c.t).collect::<Vec<_>>(), [1]);
    deliver_unsent(&mut s, &mut c[0]);
    assert!(c[0].unsent().is_empty());
    authenticate_all(&mut s, &mut c);
    assert_eq!(s.applied(), 1);
    assert_eq!(active(&mut s, &mut c[1], get("x")).unwrap(), value("1"));
    // Sent twice (the acknowledgement lost): the server has it already and refuses, no harm.
    let invoke = c[0].invoke(put("x", "2")).unwrap();
    let reply = s.on_invoke(0, invoke).unwrap();
    let (_, commit) = c[0].on_reply(reply).unwrap();
    s.on_commit(0, commit.clone()).unwrap();
    assert!(matches!(s.on_commit(0, commit), Err(ServerError::NoSuchOperation { .. })));
}

#[test]
fn unsent_commits_are_forgotten_once_their_position_is_cleared() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    for n in 0..5 {
        // `active` sends each COMMIT and never says so: the views clear them.
        active(&mut s, &mut c[0], put("k", &n.to_string())).unwrap();
        authenticate_all(&mut s, &mut c);
        assert!(c[0].unsent().len() <= 1, "{:?}", c[0].unsent());
    }
}

//! Replayed INVOKEs (#43 item 9): a signed INVOKE carries its client's counter, so the server
//! cannot show it at a second position, and a REPLY shows at most `wire::MAX_PENDING`.

use super::*;
use crate::aip::wire::MAX_PENDING;

/// Client 0's update, answered and not committed: pending at position 4 of `history()`.
fn pending_of_client_0() -> (Server<Adict>, Vec<Client<Adict>>) {
    let (mut s, mut c) = history();
    let reply = reply_for(&mut s, &mut c[0], put("z", "0"));
    c[0].on_reply(reply).unwrap(); // its COMMIT withheld: the operation stays pending
    (s, c)
}

#[test]
fn an_invoke_replayed_at_another_position_is_caught() {
    let (mut s, mut c) = pending_of_client_0();
    let mut reply = reply_for(&mut s, &mut c[1], get("y"));
    assert_eq!(reply.view.omega.len(), 2, "client 0's update, then client 1's query");
    let replayed = reply.view.omega[0].clone();
    reply.view.omega.insert(1, replayed);
    reply.t += 1;
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Replayed { client: 0, at: 5 });
}

#[test]
fn a_replay_of_the_members_own_invoke_is_caught_not_aborted() {
    let (mut s, mut c) = pending_of_client_0();
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    let own = reply.view.omega[0].clone();
    assert_eq!(own.invoked.client, 0);
    reply.view.omega.insert(1, own);
    reply.t += 1;
    let unsent = c[0].unsent().to_vec();
    assert_eq!(c[0].on_reply(reply).unwrap_err(), Violation::Replayed { client: 0, at: 5 });
    assert_eq!(c[0].unsent(), unsent, "no ABORT signed for the replay");
}

/// Client 0 invokes `n` updates and abandons each (the server ordered them all), then
/// client 1 invokes: its REPLY shows `n + 1` pending operations, each genuine.
fn pending_list_of(n: usize) -> (Server<Adict>, Vec<Client<Adict>>, Reply<Adict>) {
    let config = ServerConfig { max_pending: n as u64 + 1, ..ServerConfig::default() };
    let (mut s, mut c) = (server().with_config(config), clients(2, Mode::Commutative));
    for k in 0..n {
        let invoke = c[0].invoke(put(&format!("k{k}"), "v")).unwrap();
        s.on_invoke(0, invoke).unwrap();
        c[0].abandon();
    }
    let reply = reply_for(&mut s, &mut c[1], get("y"));
    assert_eq!(reply.view.omega.len(), n + 1);
    (s, c, reply)
}

#[test]
fn a_reply_over_the_pending_bound_is_refused_without_growing_the_state() {
    let (_, mut c, reply) = pending_list_of(MAX_PENDING);
    let before = c[1].save();
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::TooManyPending(MAX_PENDING + 1));
    assert_eq!(c[1].save(), before, "nothing of the refused REPLY is saved");
}

/// A signed INVOKE sent again (by a network replay, or a member restored from an old save
/// that did not skip its counter) is refused by the server: its counter is not past the last.
#[test]
fn the_server_refuses_an_invoke_whose_counter_it_has_taken() {
    let (mut s, mut c) = history();
    let invoke = c[0].invoke(get("x")).unwrap();
    let t = s.invoked();
    s.on_invoke(0, invoke.clone()).unwrap();
    assert_eq!(s.on_invoke(0, invoke), Err(ServerError::CounterReused { client: 0, counter: 1, last: 1 }));
    assert_eq!(s.invoked(), t + 1, "the replay took no position");
}

#[test]
fn a_reply_at_the_pending_bound_saves_and_restores() {
    let (_, mut c, reply) = pending_list_of(MAX_PENDING - 1);
    c[1].on_reply(reply).unwrap();
    let saved = c[1].save();
    let back = Client::restore(&saved, 1, keys(), Adict { mode: Mode::Commutative }).unwrap();
    assert_eq!(back.save(), saved);
}

/// Two members taking one id (two joiners of one key file): the second to speak finds an
/// operation committed under its id in its first REPLY, and refuses to go on.
#[test]
fn two_members_with_one_id_cannot_both_speak() {
    let (mut s, mut c) = history();
    let mut twin = Client::new(2, keys(), Adict { mode: Mode::Compatible });
    // Its first INVOKE repeats the counter of the first twin's: the server refuses it before
    // it takes a position, so no member is shown a replay.
    let invoke = twin.invoke(get("x")).unwrap();
    assert_eq!(s.on_invoke(2, invoke), Err(ServerError::CounterReused { client: 2, counter: 0, last: 0 }));
    twin.abandon();
    let reply = reply_for(&mut s, &mut twin, get("x"));
    assert_eq!(twin.on_reply(reply).unwrap_err(), Violation::IdTaken { client: 2, at: 3 });
    // Its INVOKE with a fresh counter stays pending (position 4); the first twin's next
    // INVOKE repeats that counter and is refused as another process speaking as it: the two
    // cannot both speak, and no member is told the provider replayed anything.
    let invoke = c[2].invoke(get("y")).unwrap();
    assert_eq!(s.on_invoke(2, invoke), Err(ServerError::CounterReused { client: 2, counter: 1, last: 1 }));
    c[2].abandon();
    // The first twin goes on, and aborts the pending INVOKE under its id and counter as one
    // of its own abandoned ones, so the group is not held up by it.
    let reply = reply_for(&mut s, &mut c[2], get("y"));
    let (outcome, _) = c[2].on_reply(reply).unwrap();
    assert_eq!(outcome, value("2"));
    let aborted: Vec<_> = c[2].unsent().iter().map(|m| (m.t, m.status)).collect();
    assert_eq!(aborted, [(4, Status::Abort), (5, Status::Success)]);
    for commit in c[2].unsent().to_vec() {
        s.on_commit(2, commit).unwrap();
    }
    assert_eq!(s.applied(), 5, "the twin's operation aborted, the query applied");
    // The genesis is not the creator's speaking: a new creator's first REPLY is accepted.
    let mut creator = Client::new(0, keys(), Adict { mode: Mode::Compatible });
    let mut fresh = server();
    assert!(active(&mut fresh, &mut creator, get("x")).is_ok());
}

/// A twin the provider shows a member before that member's own first REPLY, with a counter
/// this member has not reached: not one of its INVOKEs, so not aborted in its name.
#[test]
fn a_twins_pending_invoke_is_not_aborted_as_the_members_own() {
    let (mut s, mut c) = history();
    let mut ahead = Client::new(0, keys(), Adict { mode: Mode::Compatible });
    for _ in 0..3 {
        ahead.skip_counter();
    }
    let invoke = ahead.invoke(put("x", "twin")).unwrap();
    // The server shows it before this member's own operation (an honest one would refuse
    // this member's smaller counter after it).
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    let twin = Invoked { op: invoke.op, tau: invoke.tau, client: 0, counter: invoke.counter };
    reply.view.omega.insert(0, Pending { invoked: twin, aborted: None });
    reply.t += 1;
    let unsent = c[0].unsent().to_vec();
    assert_eq!(c[0].on_reply(reply).unwrap_err(), Violation::Replayed { client: 0, at: 4 });
    assert_eq!(c[0].unsent(), unsent);
}

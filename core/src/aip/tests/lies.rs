//! A lying server: each lie, and the client that catches it.

use super::*;

#[test]
fn a_forged_response_is_caught() {
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[1], get("x"));
    reply.response = DictResponse::Value(Some(b"forged".to_vec()));
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
    // "Absent" when it is there.
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[1], get("x"));
    reply.response = DictResponse::Value(None);
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
    // A listing that leaves a key out.
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[1], DictOp::List);
    reply.response = DictResponse::Keys(vec![b"x".to_vec()]);
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
}

/// A page of one from the start of `history()`'s two keys, and what the provider may bend.
fn first_page() -> (Vec<Client<Adict>>, Reply<Adict>) {
    let (mut s, mut c) = history();
    let reply = reply_for(&mut s, &mut c[1], DictOp::ListPage { after: None, limit: 1 });
    let DictResponse::Page { keys, more: true } = &reply.response else { panic!("a page of one of two keys") };
    assert_eq!(keys.len(), 1);
    (c, reply)
}

fn range_nodes(reply: &mut Reply<Adict>) -> &mut Vec<crate::adict::RangeNode> {
    match reply.aux.0.last_mut() {
        Some(DictStep::Range(nodes)) => nodes,
        other => panic!("a page's proof, not {other:?}"),
    }
}

#[test]
fn a_page_of_a_listing_bent_in_any_way_is_caught() {
    use crate::adict::RangeNode;
    // The honest page passes.
    let (mut c, reply) = first_page();
    assert!(matches!(c[1].on_reply(reply), Ok((Outcome::Done(_), _))));
    // The last page, claimed early: the key after it would be hidden in the range.
    let (mut c, mut reply) = first_page();
    let DictResponse::Page { more, .. } = &mut reply.response else { unreachable!() };
    *more = false;
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
    // The key left out of the response, or another key put in.
    let (mut c, mut reply) = first_page();
    reply.response = DictResponse::Page { keys: vec![], more: false };
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
    let (mut c, mut reply) = first_page();
    reply.response = DictResponse::Page { keys: vec![b"z".to_vec()], more: true };
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
    // The key's leaf hidden behind its hash, in the response and the proof alike.
    let (mut c, mut reply) = first_page();
    let nodes = range_nodes(&mut reply);
    let at = nodes.iter().position(|n| matches!(n, RangeNode::Inside { .. })).unwrap();
    let RangeNode::Inside { key, .. } = nodes[at].clone() else { unreachable!() };
    // A tree of that one leaf hashes to the leaf's hash.
    let mut alone = Tree::new();
    alone.put(&key, if key == b"x" { b"1" } else { b"2" });
    nodes[at] = RangeNode::Hidden(alone.root());
    reply.response = DictResponse::Page { keys: vec![], more: false };
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
    // More keys than asked for: a whole listing as one page of one.
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[1], DictOp::ListPage { after: None, limit: 1 });
    let all = s.state().page(None, 2);
    *range_nodes(&mut reply) = all.0;
    let keys = s.state().entries().iter().map(|(k, _)| k.to_vec()).collect();
    reply.response = DictResponse::Page { keys, more: false };
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
}

/// A member's own page, committed and still pending before its next operation (another
/// member's earlier get holds `b` back), is proven again in that operation's REPLY: against
/// the root only, as its keys were this member's to check when it ran.
#[test]
fn a_page_pending_before_a_members_next_operation_is_checked_for_its_root() {
    let (mut s, mut c) = history();
    let _held = reply_for(&mut s, &mut c[0], get("x"));
    let page = reply_for(&mut s, &mut c[1], DictOp::ListPage { after: None, limit: 1 });
    let (_, commit) = c[1].on_reply(page).unwrap();
    s.on_commit(1, commit).unwrap();
    let honest = reply_for(&mut s, &mut c[1], get("y"));
    assert!(matches!(honest.aux.0.first(), Some(DictStep::Range(_))), "the page is proven again first");
    let mut reply = honest.clone();
    let Some(DictStep::Range(nodes)) = reply.aux.0.first_mut() else { unreachable!() };
    let at = nodes.iter().position(|n| matches!(n, crate::adict::RangeNode::Inside { .. })).unwrap();
    if let crate::adict::RangeNode::Inside { value_hash, .. } = &mut nodes[at] {
        *value_hash = crate::adict::value_hash(b"other");
    }
    let mut lied_to = Client::restore(&c[1].save(), 1, keys(), Adict { mode: Mode::Compatible }).unwrap();
    assert_eq!(lied_to.on_reply(reply).unwrap_err(), Violation::Response);
    assert!(matches!(c[1].on_reply(honest), Ok((Outcome::Done(_), _))));
}

#[test]
fn a_stale_authenticator_is_caught() {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    run(&mut s, &mut c, 0, put("x", "1"));
    let old = reply_for(&mut s, &mut c[2], get("x"));
    let stale = (old.view.authenticated.clone(), old.view.alpha.clone());
    let (_, commit) = c[2].on_reply(old).unwrap();
    s.on_commit(2, commit).unwrap();
    authenticate_all(&mut s, &mut c);
    run(&mut s, &mut c, 1, put("y", "2"));
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    // The authenticator of the update before the last one, with its own operation: the
    // client knows which update is the last (operation 3), and checks against that.
    (reply.view.authenticated, reply.view.alpha) = stale;
    assert_eq!(c[0].on_reply(reply).unwrap_err(), Violation::Signature { what: "AUTH", client: 0, at: 3 });
}

#[test]
fn a_changed_or_left_out_operation_in_the_history_is_caught() {
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    assert!(reply.view.delta.len() >= 2, "client 0 missed operations 2 and 3");
    reply.view.delta[0].op = put("y", "other");
    assert!(c[0].on_reply(reply).is_err());
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    reply.view.delta.remove(0);
    assert!(matches!(c[0].on_reply(reply), Err(Violation::Malformed(_))));
}

#[test]
fn a_forged_or_replayed_operation_is_caught() {
    // A pending operation its client never invoked.
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    let forged = Invoked { op: DictOp::Delete { key: b"y".to_vec() }, tau: vec![0; 32], client: 1, counter: 0 };
    reply.view.omega.insert(0, Pending { invoked: forged, aborted: None });
    reply.t += 1;
    assert!(matches!(c[0].on_reply(reply), Err(Violation::Signature { what: "INVOKE", client: 1, .. })));
    // An old reply, replayed for a new operation.
    let (mut s, mut c) = history();
    let old = reply_for(&mut s, &mut c[0], get("y"));
    let (_, commit) = c[0].on_reply(old.clone()).unwrap();
    s.on_commit(0, commit).unwrap();
    authenticate_all(&mut s, &mut c);
    c[0].invoke(get("x")).unwrap();
    assert!(c[0].on_reply(old).is_err());
}

#[test]
fn a_reply_whose_position_does_not_match_is_refused() {
    for shift in [1i64, -1, 5] {
        let (mut s, mut c) = history();
        active(&mut s, &mut c[0], put("z", "0")).unwrap(); // one pending operation before
        let mut reply = reply_for(&mut s, &mut c[1], get("y"));
        assert_eq!(reply.t, 5);
        reply.t = reply.t.checked_add_signed(shift).unwrap();
        let refused = c[1].on_reply(reply).unwrap_err();
        assert_eq!(refused, Violation::Pending("the sequence number does not follow the pending operations"));
    }
}

#[test]
fn a_fork_is_caught_when_the_forks_meet() {
    let (mut s1, mut c) = (server(), clients(3, Mode::Compatible));
    let mut s2 = server();
    // Clients 0 and 1 see one history, client 2 another.
    run(&mut s1, &mut c, 0, put("x", "1"));
    run(&mut s1, &mut c, 1, put("y", "2"));
    run(&mut s1, &mut c, 1, get("y"));
    run(&mut s2, &mut c, 2, put("z", "3"));
    assert_eq!(run(&mut s2, &mut c, 2, get("x")), Outcome::Done(DictResponse::Value(None)), "unseen, so far");
    // Client 0 is shown the second history: its own operation 1 is another there.
    let reply = reply_for(&mut s2, &mut c[0], get("z"));
    assert_eq!(c[0].on_reply(reply).unwrap_err(), Violation::Chain(1));
    // Client 2 is shown the first one: the COMMIT signatures are over another chain.
    let reply = reply_for(&mut s1, &mut c[2], get("x"));
    assert!(matches!(c[2].on_reply(reply), Err(Violation::Signature { what: "COMMIT", .. } | Violation::Chain(_))));
}

#[test]
fn pending_operations_shown_out_of_order_are_caught_when_they_clear() {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    active(&mut s, &mut c[0], put("x", "1")).unwrap();
    active(&mut s, &mut c[1], put("z", "2")).unwrap();
    let mut reply = reply_for(&mut s, &mut c[2], get("y"));
    reply.view.omega.swap(0, 1);
    // Compatible and well signed: client 2 cannot tell yet ...
    let (outcome, commit) = c[2].on_reply(reply).unwrap();
    assert_eq!(outcome, Outcome::Done(DictResponse::Value(None)));
    s.on_commit(2, commit).unwrap();
    // ... but its chain disagrees with what clients 0 and 1 signed: client 2 refuses to take
    // their updates for the history before anything it does next.
    authenticate_all(&mut s, &mut c);
    let reply = reply_for(&mut s, &mut c[2], get("x"));
    assert!(matches!(c[2].on_reply(reply), Err(Violation::Chain(_) | Violation::Signature { what: "COMMIT", .. })));
}

/// Sec. 3.7, aborted operations: a mark needs the COMMIT signature over ABORT at that
/// operation's place in the chain; the server has none for an operation that succeeded.
#[test]
fn a_false_abort_mark_is_caught() {
    // Client 0's put x succeeded and is pending; client 2's put w aborted (commutative rule)
    // and is marked: its real abort signature exists, at position 3.
    let setup = || {
        let (mut s, mut c) = (server(), clients(3, Mode::Commutative));
        run(&mut s, &mut c, 1, put("w", "0"));
        assert_eq!(active(&mut s, &mut c[0], put("x", "1")).unwrap(), NOTHING);
        active(&mut s, &mut c[2], get("w")).unwrap(); // a query: applied once it is next
        assert_eq!(active(&mut s, &mut c[2], put("x", "2")).unwrap(), Outcome::Abort);
        let reply = reply_for(&mut s, &mut c[1], get("x"));
        assert_eq!(reply.view.omega.len(), 4, "put x, get w, put x (aborted), get x");
        let mark = reply.view.omega[2].aborted.clone().expect("the aborted put is marked");
        (c, reply, mark)
    };
    // A mark with no valid signature, on client 0's successful put.
    let (mut c, mut reply, _) = setup();
    reply.view.omega[0].aborted = Some(Signature { by: 0, bytes: vec![7; 32] });
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Signature { what: "COMMIT", client: 0, at: 2 });
    // The real abort signature of operation 4, moved onto operation 2 (as client 2's, or 0's).
    let (mut c, mut reply, mark) = setup();
    reply.view.omega[0].aborted = Some(mark.clone());
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Signature { what: "COMMIT", client: 2, at: 2 });
    let (mut c, mut reply, mark) = setup();
    reply.view.omega[0].aborted = Some(Signature { by: 0, ..mark });
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Signature { what: "COMMIT", client: 0, at: 2 });
    // The mark on the client's own current operation.
    let (mut c, mut reply, mark) = setup();
    reply.view.omega[3].aborted = Some(mark);
    assert!(c[1].on_reply(reply).is_err());
    // Untouched, the reply is fine: the get aborts (put x=1 is pending) despite the mark.
    let (mut c, reply, _) = setup();
    assert_eq!(c[1].on_reply(reply).unwrap().0, Outcome::Abort);
}

/// Client 0's COMMIT of a successful update, reused as an abort mark: the status is signed.
#[test]
fn a_success_commit_passed_off_as_an_abort_is_caught() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    let invoke = c[0].invoke(put("x", "1")).unwrap();
    let reply = s.on_invoke(0, invoke).unwrap();
    let (_, commit) = c[0].on_reply(reply).unwrap();
    s.on_commit(0, commit.clone()).unwrap();
    let mut reply = reply_for(&mut s, &mut c[1], get("x"));
    assert!(reply.view.omega[0].aborted.is_none());
    reply.view.omega[0].aborted = Some(commit.phi);
    // Believed, the mark would let the get read around the pending put.
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Signature { what: "COMMIT", client: 0, at: 1 });
}

/// Sec. 3.7, no passive phase for queries: the server may not authenticate an update on an
/// older authenticator than the last update's (a skipped update), nor pass off a query.
#[test]
fn an_update_auth_that_skips_an_update_or_holds_a_query_is_caught() {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    run(&mut s, &mut c, 0, put("x", "1")); // 1
    active(&mut s, &mut c[1], get("x")).unwrap(); // 2, a query: applied at once
    active(&mut s, &mut c[1], put("y", "2")).unwrap(); // 3
    assert_eq!(s.applied(), 2, "the query needed no passive phase");
    let (j, for_3) = s.update_auth().unwrap().unwrap();
    assert_eq!((j, for_3.base, for_3.ops[0].q), (1, 1, 3), "put y builds on put x, past the query");
    let stale_base = (for_3.base, for_3.previous.clone(), for_3.alpha.clone());
    for answer in c[1].on_update_auth(for_3).unwrap() {
        s.on_commit_auth(1, answer).unwrap();
    }
    active(&mut s, &mut c[2], put("z", "3")).unwrap(); // 4
    let (j, mut for_4) = s.update_auth().unwrap().unwrap();
    assert_eq!((j, for_4.base), (2, 3));
    let query_commit = Committed { op: get("x"), ..for_4.ops[0].committed.clone() };
    let honest = for_4.clone();
    // Operation 4 on top of put x's authenticator, as if put y had not happened.
    (for_4.base, for_4.previous, for_4.alpha) = stale_base;
    assert_eq!(c[2].on_update_auth(for_4).unwrap_err(), Violation::Stale { q: 4, base: 1 });
    let mut with_query = honest.clone();
    with_query.ops[0].committed = query_commit;
    assert!(matches!(c[2].on_update_auth(with_query), Err(Violation::Malformed(_))));
    assert_eq!(c[2].on_update_auth(honest).unwrap().len(), 1);
}

/// Sec. 3.7, delegation: a delegate checks each operation of a batch as its own client would.
#[test]
fn a_bent_delegated_batch_is_caught() {
    let setup = || {
        let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
        active(&mut s, &mut c[0], put("x", "1")).unwrap();
        active(&mut s, &mut c[1], put("y", "2")).unwrap();
        active(&mut s, &mut c[0], DictOp::Delete { key: b"x".to_vec() }).unwrap();
        active(&mut s, &mut c[2], put("z", "3")).unwrap();
        let batch = s.delegate_auth(2).unwrap().unwrap();
        assert_eq!(batch.ops.iter().map(|o| o.q).collect::<Vec<_>>(), [1, 2, 3, 4]);
        (c, batch)
    };
    // A status flipped: applying none of put y would fork the state.
    let (mut c, mut batch) = setup();
    batch.ops[1].committed.status = Status::Abort;
    assert_eq!(c[2].on_update_auth(batch).unwrap_err(), Violation::Signature { what: "COMMIT", client: 1, at: 2 });
    // A forged proof of an update.
    let (mut c, mut batch) = setup();
    batch.ops[2].aux = batch.ops[0].aux.clone();
    assert_eq!(c[2].on_update_auth(batch).unwrap_err(), Violation::Response);
    // An update left out of the middle.
    let (mut c, mut batch) = setup();
    batch.ops.remove(1);
    assert_eq!(c[2].on_update_auth(batch).unwrap_err(), Violation::Stale { q: 3, base: 1 });
    // An operation the delegate never saw.
    let (mut c, mut batch) = setup();
    batch.ops[3].q = 5;
    assert!(matches!(c[2].on_update_auth(batch), Err(Violation::Malformed(_))));
    let (mut c, batch) = setup();
    assert_eq!(c[2].on_update_auth(batch).unwrap().len(), 4, "untouched, it goes through");
}

//! AIP over vouch's namespace ([`NamespaceOps`]): the same client and server run it as they
//! run ADICT; an honest schedule completes in sequence order, and forged answers are caught.

use super::*;
use crate::hash::Digest;
use crate::namespace::{EntryRecord, NamespaceOp, NamespaceOps, NamespaceResponse, NamespaceTree, TreeError};
use crate::pdp::FileId;

fn entry(name: &str, seed: u8) -> EntryRecord {
    EntryRecord {
        name: name.into(),
        file: FileId([seed; 16]),
        versions_root: Digest([seed; 32]),
        versions: 1,
        next_version: 2,
    }
}

fn ns_server() -> Server<NamespaceOps> {
    Server::genesis(&keys(), 0, NamespaceOp::List, NamespaceTree::default()).unwrap()
}

fn ns_clients(n: u32) -> Vec<Client<NamespaceOps>> {
    (0..n).map(|i| Client::new(i, keys(), NamespaceOps)).collect()
}

fn get(name: &str) -> NamespaceOp {
    NamespaceOp::Get(name.into())
}

fn found(e: Option<EntryRecord>) -> Outcome<NamespaceResponse> {
    Outcome::Done(NamespaceResponse::Value(e))
}

const DONE: Outcome<NamespaceResponse> = Outcome::Done(NamespaceResponse::Done);

/// Three operations, each authenticated: put a (1), put b (2), get a (3).
fn ns_history() -> (Server<NamespaceOps>, Vec<Client<NamespaceOps>>) {
    let (mut s, mut c) = (ns_server(), ns_clients(3));
    run(&mut s, &mut c, 0, NamespaceOp::Put(entry("a", 1)));
    run(&mut s, &mut c, 1, NamespaceOp::Put(entry("b", 2)));
    assert_eq!(run(&mut s, &mut c, 2, get("a")), found(Some(entry("a", 1))));
    (s, c)
}

#[test]
fn an_honest_schedule_over_the_namespace_completes_in_sequence_order() {
    let (mut s, mut c) = ns_history();
    let listing = NamespaceResponse::Listing(vec![entry("a", 1), entry("b", 2)]);
    assert_eq!(run(&mut s, &mut c, 0, NamespaceOp::List), Outcome::Done(listing));
    // Client 0's own pending updates: its get is answered after both (a sequence μ of three).
    assert_eq!(active(&mut s, &mut c[0], NamespaceOp::Put(entry("c", 3))).unwrap(), DONE);
    assert_eq!(active(&mut s, &mut c[0], NamespaceOp::Delete("a".into())).unwrap(), DONE);
    assert_eq!(active(&mut s, &mut c[0], get("c")).unwrap(), found(Some(entry("c", 3))));
    // Another client: a read of a name with a pending change aborts (Table 1); others go on.
    assert_eq!(active(&mut s, &mut c[1], get("c")).unwrap(), Outcome::Abort);
    assert_eq!(active(&mut s, &mut c[1], get("b")).unwrap(), found(Some(entry("b", 2))));
    assert_eq!(active(&mut s, &mut c[2], NamespaceOp::Put(entry("b", 9))).unwrap(), DONE, "a blind write");
    // Client 2 authenticates everyone's updates (Sec. 3.7 delegation).
    for answer in c[2].on_update_auth(s.delegate_auth(2).unwrap().unwrap()).unwrap() {
        s.on_commit_auth(2, answer).unwrap();
    }
    assert_eq!((s.applied(), s.invoked()), (10, 10));
    assert_eq!(run(&mut s, &mut c, 1, get("a")), found(None));
    let listing = NamespaceResponse::Listing(vec![entry("b", 9), entry("c", 3)]);
    assert_eq!(run(&mut s, &mut c, 1, NamespaceOp::List), Outcome::Done(listing));
    assert_eq!(s.state().len(), 2);
}

#[test]
fn a_forged_namespace_answer_is_caught() {
    // Another entry for a present name, and "absent".
    for lie in [Some(entry("a", 7)), None] {
        let (mut s, mut c) = ns_history();
        let mut reply = reply_for(&mut s, &mut c[1], get("a"));
        reply.response = NamespaceResponse::Value(lie);
        assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
    }
    // The honest proof of another name.
    let (mut s, mut c) = ns_history();
    let other = NamespaceOps::query(s.state(), &[get("b")]).unwrap().1;
    let mut reply = reply_for(&mut s, &mut c[1], get("a"));
    reply.aux = other;
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
    // A listing that leaves a name out.
    let (mut s, mut c) = ns_history();
    let mut reply = reply_for(&mut s, &mut c[1], NamespaceOp::List);
    reply.response = NamespaceResponse::Listing(vec![entry("b", 2)]);
    assert_eq!(c[1].on_reply(reply).unwrap_err(), Violation::Response);
    // An UPDATE-AUTH whose update proof is another's.
    let (mut s, mut c) = ns_history();
    active(&mut s, &mut c[0], NamespaceOp::Put(entry("c", 3))).unwrap();
    let (j, mut m) = s.update_auth().unwrap().unwrap();
    m.ops[0].aux = Some(NamespaceOps::query(s.state(), &[NamespaceOp::Put(entry("d", 4))]).unwrap().1);
    assert_eq!(c[j as usize].on_update_auth(m).unwrap_err(), Violation::Response);
}

#[test]
fn an_operation_the_namespace_cannot_answer_is_refused_before_it_takes_a_position() {
    let (mut s, mut c) = ns_history();
    let invoke = c[1].invoke(get("x\ny")).unwrap();
    let refused = s.on_invoke(1, invoke);
    assert!(matches!(refused, Err(ServerError::Functionality { q: 4, error: TreeError::Name(_) })), "{refused:?}");
    assert_eq!(s.invoked(), 3, "no position taken");
    assert_eq!(run(&mut s, &mut c, 2, get("b")), found(Some(entry("b", 2))), "the others go on");
}

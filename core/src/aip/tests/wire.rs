//! Honest runs with every message through its encoding ([`crate::aip::wire`]), over ADICT
//! and over the namespace: what arrives is what was sent, and the run goes as in memory.

use super::*;
use crate::namespace::{EntryRecord, NamespaceOp, NamespaceOps, NamespaceResponse, NamespaceTree};
use std::fmt::Debug;

/// `m` after a trip over the network: decoded from its bytes, equal to what was sent.
fn sent<T: Wire + PartialEq + Debug>(m: T) -> T {
    let arrived = T::from_wire(&m.to_wire()).unwrap();
    assert_eq!(arrived, m);
    arrived
}

fn to_client<F: Functionality + PartialEq + Debug>(m: ToClient<F>) -> ToClient<F> {
    sent(m)
}

/// Every UPDATE-AUTH and COMMIT-AUTH, as bytes in their envelopes.
fn authenticate_wired<F: Functionality + PartialEq + Debug>(s: &mut Server<F>, c: &mut [Client<F>]) {
    while let Some((j, m)) = s.update_auth().unwrap() {
        let ToClient::UpdateAuth(m) = to_client(ToClient::UpdateAuth(Box::new(m))) else {
            panic!("not an UPDATE-AUTH")
        };
        for answer in c[j as usize].on_update_auth(*m).unwrap() {
            assert_eq!(s.deliver(j, sent(ToServer::CommitAuth(answer))), Ok(None));
        }
    }
}

/// Client `i`'s operation, both phases, every message as bytes in its envelope.
fn run_wired<F: Functionality + PartialEq + Debug>(
    s: &mut Server<F>,
    c: &mut [Client<F>],
    i: usize,
    op: F::Op,
) -> Outcome<F::Response> {
    let id = c[i].id();
    let reply = s.deliver(id, sent(ToServer::Invoke(c[i].invoke(op).unwrap()))).unwrap().unwrap();
    let ToClient::Reply(reply) = to_client(ToClient::Reply(Box::new(reply))) else { panic!("not a REPLY") };
    let (outcome, commit) = c[i].on_reply(*reply).unwrap();
    assert_eq!(s.deliver(id, sent(ToServer::Commit(commit))), Ok(None));
    authenticate_wired(s, c);
    outcome
}

#[test]
fn an_adict_run_with_a_takeover_survives_the_wire() {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    assert_eq!(run_wired(&mut s, &mut c, 0, put("x", "1")), NOTHING);
    assert_eq!(run_wired(&mut s, &mut c, 1, get("x")), value("1"));
    assert_eq!(run_wired(&mut s, &mut c, 2, DictOp::List), Outcome::Done(DictResponse::Keys(vec![b"x".into()])));
    // Client 0 crashes after the REPLY to put y; client 2 takes over through the wire.
    let invoke = sent(ToServer::Invoke(c[0].invoke(put("y", "1")).unwrap()));
    let reply = s.deliver(0, invoke).unwrap().unwrap();
    c[0].on_reply(reply).unwrap();
    let m = s.take_over(0, 2, c[2].cleared()).unwrap();
    let ToClient::TakeOver(m) = to_client(ToClient::TakeOver(Box::new(m))) else { panic!("not a takeover") };
    for commit in c[2].take_over(*m).unwrap() {
        assert_eq!(s.deliver(2, sent(ToServer::Commit(commit))), Ok(None));
    }
    authenticate_wired(&mut s, &mut c);
    assert_eq!(run_wired(&mut s, &mut c, 1, get("y")), Outcome::Done(DictResponse::Value(None)));
    assert_eq!((s.applied(), s.invoked()), (5, 5));
}

#[test]
fn a_namespace_run_survives_the_wire() {
    let mut s: Server<NamespaceOps> = Server::genesis(&keys(), 0, NamespaceOp::List, NamespaceTree::default()).unwrap();
    let mut c: Vec<_> = (0..2).map(|i| Client::new(i, keys(), NamespaceOps)).collect();
    let entry = |name: &str| EntryRecord::new(name.into(), crate::pdp::FileId([3; 16]));
    for name in ["b", "a", "c"] {
        assert_eq!(run_wired(&mut s, &mut c, 0, NamespaceOp::Put(entry(name))), Outcome::Done(NamespaceResponse::Done));
    }
    let got = run_wired(&mut s, &mut c, 1, NamespaceOp::Get("a".into()));
    assert_eq!(got, Outcome::Done(NamespaceResponse::Value(Some(entry("a")))));
    run_wired(&mut s, &mut c, 1, NamespaceOp::Delete("b".into()));
    let listing = NamespaceResponse::Listing(vec![entry("a"), entry("c")]);
    assert_eq!(run_wired(&mut s, &mut c, 0, NamespaceOp::List), Outcome::Done(listing));
}

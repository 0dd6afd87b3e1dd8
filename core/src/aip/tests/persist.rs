//! A client saved and restored ([`Client::save`], [`Client::restore`]): it carries on as the
//! original would, its hash chain still catches a fork (Sec. 3.6, case 2), and bytes that
//! are not a state it could be in are refused with their typed error.

use super::sim::{random_op, Setup, Sim};
use super::*;
use crate::aip::wire::MAX_MESSAGE_LEN;
use crate::codec::{put_varint, CodecError};
use crate::hash::Digest;
use proptest::prelude::*;

fn adict() -> Adict {
    Adict { mode: Mode::Compatible }
}

fn restored(c: &Client<Adict>) -> Client<Adict> {
    Client::restore(&c.save(), c.id(), keys(), adict()).unwrap()
}

/// Client 2 with every part of its state in use: an own update committed (4), the takeover
/// of client 0 (retired, and its operation 2 aborted in its place), a query in progress.
fn busy_client() -> Client<Adict> {
    let (mut s, mut c, _) = super::takeover::crashed();
    active(&mut s, &mut c[2], put("w", "1")).unwrap();
    super::takeover::take_over(&mut s, &mut c);
    c[2].invoke(get("x")).unwrap();
    c.swap_remove(2)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// A random schedule run twice: as is, and with every client saved and restored after
    /// each thing it does (each restored state saving to the same bytes). Same messages out,
    /// same outputs, same final states.
    #[test]
    fn a_client_restored_after_every_step_acts_as_the_original(
        work in proptest::collection::vec(proptest::collection::vec(random_op(), 1..8), 3),
        schedule in proptest::collection::vec(0usize..10_000, 0..400),
        delegate in any::<bool>(),
        early in any::<bool>(),
        max_pending in 1u64..6,
        crash in proptest::option::of((0usize..3, 0usize..200, any::<bool>())),
    ) {
        let setup = |persist| Setup { mode: Mode::Compatible, max_pending, delegate, crash, persist, early };
        let (mut plain, mut saved) = (Sim::new(setup(false), work.clone()), Sim::new(setup(true), work));
        plain.run(schedule.clone());
        saved.run(schedule);
        prop_assert_eq!(&plain.transcript, &saved.transcript);
        prop_assert_eq!(&plain.done, &saved.done);
        for (a, b) in plain.c.iter().zip(&saved.c) {
            prop_assert_eq!(a.save(), b.save());
        }
        saved.check_linearizable();
    }

    /// Bytes near a real state (one changed, cut, or added) are refused with an error or are
    /// a state that saves back to them: never a panic, never a second encoding.
    #[test]
    fn a_bent_state_is_refused_or_canonical(at in any::<prop::sample::Index>(), byte in any::<u8>(), how in 0u8..3) {
        let mut bytes = busy_client().save();
        let at = at.index(bytes.len());
        match how {
            0 => bytes[at] = byte,
            1 => bytes.truncate(at),
            _ => bytes.insert(at, byte),
        }
        if let Ok(client) = Client::restore(&bytes, 2, keys(), adict()) {
            prop_assert_eq!(client.save(), bytes);
        }
    }

    #[test]
    fn any_bytes_are_refused_or_canonical(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(client) = Client::restore(&bytes, 0, keys(), adict()) {
            prop_assert_eq!(client.save(), bytes);
        }
    }
}

#[test]
fn a_busy_client_restored_finishes_its_operation_as_the_original() {
    let (mut s, mut c) = history();
    active(&mut s, &mut c[0], put("z", "1")).unwrap();
    let invoke = c[0].invoke(get("z")).unwrap();
    let mut back = restored(&c[0]);
    assert!(back.busy() && back.cleared() == c[0].cleared());
    let reply = s.on_invoke(0, invoke).unwrap();
    let (outcome, commit) = back.on_reply(reply.clone()).unwrap();
    assert_eq!((outcome.clone(), commit.clone()), c[0].on_reply(reply).unwrap());
    assert_eq!(outcome, value("1"), "its own pending put");
    assert_eq!(back.save(), c[0].save());
}

/// The fork of `lies::a_fork_is_caught_when_the_forks_meet`, each client saved and restored
/// between every two steps: the chain it restores catches the fork as the original's does.
/// A client that lost its state instead cannot tell.
#[test]
fn a_fork_shown_after_a_restore_is_still_caught() {
    let (mut s1, mut c) = (server(), clients(3, Mode::Compatible));
    let mut s2 = server();
    let reload = |c: &mut Vec<Client<Adict>>| c.iter_mut().for_each(|client| *client = restored(client));
    for (i, op) in [(0, put("x", "1")), (1, put("y", "2")), (1, get("y"))] {
        run(&mut s1, &mut c, i, op);
        reload(&mut c);
    }
    run(&mut s2, &mut c, 2, put("z", "3"));
    reload(&mut c);
    assert_eq!(run(&mut s2, &mut c, 2, get("x")), Outcome::Done(DictResponse::Value(None)));
    reload(&mut c);
    // Client 0 shown the second history, restored between its INVOKE and the REPLY.
    let invoke = c[0].invoke(get("z")).unwrap();
    reload(&mut c);
    let reply = s2.on_invoke(0, invoke).unwrap();
    assert_eq!(c[0].on_reply(reply.clone()).unwrap_err(), Violation::Chain(1));
    let mut amnesiac = Client::new(0, keys(), adict());
    amnesiac.skip_counter(); // its one INVOKE before: the counter signed is the same
    amnesiac.invoke(get("z")).unwrap();
    assert!(amnesiac.on_reply(reply).is_ok(), "without its chain, client 0 joins the other fork");
    // Client 2 shown the first one.
    let reply = reply_for(&mut s1, &mut c[2], get("x"));
    reload(&mut c);
    assert!(matches!(c[2].on_reply(reply), Err(Violation::Signature { what: "COMMIT", .. } | Violation::Chain(_))));
}

/// A REPLY shows, after an operation of a known member, one of a member whose key client 0
/// has not imported (an Ed25519 group's roster): refused as an unknown member, and client 0
/// abandons its operation. The link the known member's operation had added to `H` goes with
/// the REPLY: the state saved now is the one saved before the INVOKE (a gateway saves its
/// member now and then, and a link kept there would be a history this member never checked).
#[test]
fn a_reply_with_an_unknown_members_operation_leaves_the_saved_chain_unchanged() {
    use ed25519_dalek::SigningKey;
    let signing: Vec<_> = (0..3u8).map(|i| SigningKey::from_bytes(&[i + 1; 32])).collect();
    let all: BTreeMap<_, _> = signing.iter().enumerate().map(|(i, k)| (i as u32, k.verifying_key())).collect();
    let ring = |i: usize, members: &BTreeMap<u32, _>| Keyring::Ed25519 {
        me: Some((i as u32, Box::new(signing[i].clone()))),
        members: members.clone(),
    };
    let without_2: BTreeMap<_, _> = all.iter().filter(|(&id, _)| id != 2).map(|(&id, k)| (id, *k)).collect();
    let mut s = Server::genesis(&ring(0, &all), 0, DictOp::List, Tree::new()).unwrap();
    let mut c = vec![
        Client::new(0, ring(0, &without_2), adict()),
        Client::new(1, ring(1, &all), adict()),
        Client::new(2, ring(2, &all), adict()),
    ];
    run(&mut s, &mut c, 0, put("x", "1"));
    for i in [1, 2] {
        let invoke = c[i].invoke(put(&format!("k{i}"), "v")).unwrap();
        s.on_invoke(i as u32, invoke).unwrap();
    }
    let reply = reply_for(&mut s, &mut c[0], get("x"));
    let before = c[0].save();
    assert!(matches!(c[0].on_reply(reply), Err(Violation::UnknownMember { client: 2, at: 3 })));
    assert_eq!(c[0].save(), before, "nothing of the refused REPLY is kept");
}

#[test]
fn the_takeover_state_survives_a_restore() {
    let mut c = busy_client();
    let mut back = restored(&c);
    assert!(back.knows_taken_over(0) && back.busy());
    assert_eq!(back.save(), c.save());
    // Both refuse a second invocation alike, and abandon alike.
    assert_eq!(back.invoke(get("y")).unwrap_err(), c.invoke(get("y")).unwrap_err());
    back.abandon();
    c.abandon();
    assert_eq!(back.save(), c.save());
}

/// A state by hand: `version, me, c, first, H, d, H[d], Z, u, n, seen, retired, aborted-for`.
struct Raw {
    version: u8,
    me: u64,
    cleared: u64,
    first: u64,
    links: Vec<(Digest, u8)>,
    d: u64,
    status: Vec<(u64, u8)>,
    /// `n`, and the last INVOKE seen of each member (id, position, counter).
    invoked: u64,
    seen: Vec<(u64, u64, u64)>,
    retired: Vec<(u64, u64)>,
    /// Encoded COMMITs.
    unsent: Vec<Vec<u8>>,
}

impl Raw {
    fn new() -> Raw {
        let links = vec![(Digest::ZERO, 1), (Digest([7; 32]), 1)];
        let (status, seen, retired, unsent) = (vec![], vec![], vec![], vec![]);
        Raw { version: 5, me: 0, cleared: 1, first: 0, links, d: 0, status, invoked: 0, seen, retired, unsent }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = vec![self.version];
        for n in [self.me, self.cleared, self.first, self.links.len() as u64] {
            put_varint(&mut out, n);
        }
        for (hash, kind) in &self.links {
            out.extend_from_slice(&hash.0);
            out.push(*kind);
        }
        put_varint(&mut out, self.d);
        out.extend_from_slice(&Digest::ZERO.0);
        put_varint(&mut out, self.status.len() as u64);
        for &(q, z) in &self.status {
            put_varint(&mut out, q);
            out.push(z);
        }
        out.push(0); // no operation in progress
        put_varint(&mut out, self.invoked);
        put_varint(&mut out, self.seen.len() as u64);
        for &(j, l, n) in &self.seen {
            for x in [j, l, n] {
                put_varint(&mut out, x);
            }
        }
        put_varint(&mut out, self.retired.len() as u64);
        for &(j, l) in &self.retired {
            put_varint(&mut out, j);
            put_varint(&mut out, l);
        }
        out.push(0); // no aborts for others
        put_varint(&mut out, self.unsent.len() as u64);
        for commit in &self.unsent {
            out.extend_from_slice(commit);
        }
        out
    }

    fn cleared_at(self, cleared: u64) -> Raw {
        Raw { cleared, ..self }
    }

    fn restore(&self) -> Result<Client<Adict>, RestoreError> {
        Client::restore(&self.bytes(), 0, keys(), adict())
    }
}

fn wire(e: WireError) -> Result<(), RestoreError> {
    Err(RestoreError::Wire(e))
}

fn inconsistent(why: &'static str) -> Result<(), RestoreError> {
    Err(RestoreError::Inconsistent(why))
}

#[test]
fn malformed_state_bytes_are_refused_with_their_error() {
    let fine = Raw::new();
    assert!(fine.restore().is_ok());
    let saved = busy_client().save();
    for len in 0..saved.len() {
        let cut = Client::restore(&saved[..len], 2, keys(), adict()).map(|_| ());
        assert_eq!(cut, wire(CodecError::Truncated.into()), "cut at {len}");
    }
    let mut longer = saved.clone();
    longer.push(0);
    assert_eq!(Client::restore(&longer, 2, keys(), adict()).map(|_| ()), wire(WireError::TrailingBytes(1)));
    let huge = vec![1u8; MAX_MESSAGE_LEN + 1];
    let too_long = WireError::TooLong { len: MAX_MESSAGE_LEN + 1, max: MAX_MESSAGE_LEN };
    assert_eq!(Client::restore(&huge, 0, keys(), adict()).map(|_| ()), wire(too_long));
    let other = Client::restore(&saved, 1, keys(), adict()).map(|_| ());
    assert_eq!(other, Err(RestoreError::OtherClient { saved: 2, me: 1 }));

    let check = |raw: Raw| raw.restore().map(|_| ());
    let unknown = |what, tag| wire(WireError::UnknownTag { what, tag });
    assert_eq!(check(Raw { version: 6, ..Raw::new() }), unknown("client state version", 6));
    for older in [1, 2] {
        assert_eq!(check(Raw { version: older, ..Raw::new() }), Err(RestoreError::Older(older)), "SHA-256 links");
    }
    let unlengthed = check(Raw { version: 3, ..Raw::new() }).unwrap_err();
    assert_eq!(unlengthed, RestoreError::Older(3), "objects' values with no length");
    assert!(unlengthed.to_string().contains("without their length"), "{unlengthed}");
    let uncounted = check(Raw { version: 4, ..Raw::new() }).unwrap_err();
    assert_eq!(uncounted, RestoreError::Older(4), "INVOKEs with no counter");
    assert!(uncounted.to_string().contains("no counter"), "{uncounted}");
    assert_eq!(check(Raw { me: 1 << 32, ..Raw::new() }), wire(WireError::OutOfRange("a 32-bit number")));
    let past = WireError::OutOfRange("a position in the history");
    assert_eq!(check(Raw { cleared: MAX_SAVED_POSITION + 1, ..Raw::new() }), wire(past));
    let mut many = Raw::new().bytes()[..4].to_vec();
    put_varint(&mut many, MAX_SAVED_LINKS as u64 + 1);
    let too_many =
        WireError::TooMany { what: "chain entries", count: MAX_SAVED_LINKS as u64 + 1, max: MAX_SAVED_LINKS };
    assert_eq!(Client::restore(&many, 0, keys(), adict()).map(|_| ()), wire(too_many));
    let query_kind = Raw { links: vec![(Digest::ZERO, 1), (Digest([7; 32]), 3)], ..Raw::new() };
    assert_eq!(check(query_kind), unknown("chain entry kind", 3));
    assert_eq!(check(Raw { status: vec![(1, 3)], ..Raw::new() }), unknown("status", 3));

    assert_eq!(check(Raw { links: vec![], ..Raw::new() }), inconsistent("no hash chain"));
    assert_eq!(check(Raw { cleared: 2, ..Raw::new() }), inconsistent("the hash chain does not cover c"));
    assert_eq!(check(Raw { first: 1, cleared: 1, ..Raw::new() }), inconsistent("the hash chain does not cover c"));
    let not_genesis = Raw { links: vec![(Digest([1; 32]), 1), (Digest([7; 32]), 1)], ..Raw::new() };
    assert_eq!(check(not_genesis), inconsistent("H[0] is not the genesis"));
    assert_eq!(check(Raw { d: 2, ..Raw::new() }), inconsistent("the last authenticated update is after c"));
    assert_eq!(check(Raw { d: 1, ..Raw::new() }), inconsistent("the last authenticated update disagrees with H"));
    assert_eq!(check(Raw { status: vec![(5, 1)], ..Raw::new() }), inconsistent("an own operation outside H"));
    let unordered = Raw { retired: vec![(3, 1), (2, 1)], ..Raw::new() };
    assert_eq!(check(unordered), inconsistent("map keys not in strictly increasing order"));
    let twice = Raw { status: vec![(1, 1), (1, 2)], ..Raw::new() };
    assert_eq!(check(twice), inconsistent("map keys not in strictly increasing order"));

    // Unsent COMMITs: this client's own, after c, with the status it holds for them.
    let commit = |t: u64, client: ClientId| {
        let phi = Signature { by: client, bytes: vec![0; 32] };
        Commit { op: DictOp::List, t, status: Status::Success, client, phi }.to_wire()
    };
    let pending = |unsent| Raw { cleared: 0, status: vec![(1, 1)], unsent, ..Raw::new() };
    assert!(check(pending(vec![commit(1, 0)])).is_ok());
    let bad = inconsistent("an unsent COMMIT that is not this client's own, pending one");
    assert_eq!(check(pending(vec![commit(1, 1)])), bad, "another client's");
    assert_eq!(check(Raw { unsent: vec![commit(1, 0)], ..pending(vec![]) }.cleared_at(1)), bad, "cleared");
    assert_eq!(check(Raw { status: vec![], ..pending(vec![commit(1, 0)]) }), bad, "no status");
    let twice = pending(vec![commit(1, 0), commit(1, 0)]);
    assert_eq!(check(twice), inconsistent("unsent COMMITs out of order"));

    // The counters: an own INVOKE seen is one this client made.
    assert!(check(Raw { invoked: 3, seen: vec![(0, 1, 2), (1, 1, 9)], ..Raw::new() }).is_ok());
    let unmade = inconsistent("an own INVOKE seen with a counter this client has not used");
    assert_eq!(check(Raw { invoked: 2, seen: vec![(0, 1, 2)], ..Raw::new() }), unmade);
    let unordered = Raw { seen: vec![(1, 1, 1), (1, 2, 2)], ..Raw::new() };
    assert_eq!(check(unordered), inconsistent("map keys not in strictly increasing order"));
}

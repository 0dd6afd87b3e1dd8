//! AIP with ADICT, the server honest or not, messages delivered in any order: an honest
//! server's executions are linearizable (every response is the one the sequence order
//! gives), and each way of lying is caught by the client it is told to.
//!
//! * here: the helpers, and the protocol of Alg. 1–3 run step by step;
//! * [`lies`]: a lying server, caught;
//! * [`fork`]: a server that forks its clients in two: fork-linearizable, and caught when
//!   a client is shown the other fork;
//! * [`extensions`]: the extensions of Sec. 3.7 and Sec. 5.2, step by step;
//! * [`takeover`]: a crashed client taken over (Sec. 3.7), honestly or not;
//! * [`schedule`]: random message schedules with all the extensions, and a long run that
//!   keeps the server's memory bounded;
//! * [`persist`]: a client saved and restored, carrying on and still catching a fork;
//! * [`recovery`]: an abandoned INVOKE and an undelivered COMMIT, recovered by their client;
//! * [`replaced`]: the value a put or a delete replaces, whose object VICOS deletes;
//! * [`namespace`]: the same protocol over vouch's namespace ([`crate::namespace::NamespaceOps`]);
//! * [`wire`]: honest runs with every message through its encoding.

mod extensions;
mod fork;
mod history;
mod lies;
mod namespace;
mod persist;
mod recovery;
mod replaced;
mod replay;
mod schedule;
mod sim;
mod takeover;
mod wire;

use super::*;
use crate::adict::Tree;
use std::collections::BTreeMap;

type Op = DictOp;

fn keys() -> Keyring {
    Keyring::hmac([42; 32])
}

fn server() -> Server<Adict> {
    Server::genesis(&keys(), 0, DictOp::List, Tree::new()).unwrap()
}

fn clients(n: u32, mode: Mode) -> Vec<Client<Adict>> {
    (0..n).map(|i| Client::new(i, keys(), Adict { mode })).collect()
}

fn put(key: &str, value: &str) -> Op {
    DictOp::Put { key: key.into(), value: value.into() }
}

fn get(key: &str) -> Op {
    DictOp::Get { key: key.into() }
}

fn value(v: &str) -> Outcome<DictResponse> {
    Outcome::Done(DictResponse::Value(Some(v.into())))
}

const NOTHING: Outcome<DictResponse> = Outcome::Done(DictResponse::Nothing);

/// Runs the passive phase until the server has nothing left to authenticate.
fn authenticate_all<F: Functionality>(server: &mut Server<F>, clients: &mut [Client<F>]) {
    while let Some((j, m)) = server.update_auth().unwrap() {
        for answer in clients[j as usize].on_update_auth(m).unwrap() {
            server.on_commit_auth(j, answer).unwrap();
        }
    }
}

/// Client `i`'s operation through its active phase (the passive phase left for later).
fn active<F: Functionality>(
    server: &mut Server<F>,
    client: &mut Client<F>,
    op: F::Op,
) -> Result<Outcome<F::Response>, Violation> {
    let invoke = client.invoke(op).unwrap();
    let reply = server.on_invoke(client.id(), invoke).unwrap();
    let (outcome, commit) = client.on_reply(reply)?;
    server.on_commit(client.id(), commit).unwrap();
    Ok(outcome)
}

/// One operation, both phases.
fn run<F: Functionality>(
    server: &mut Server<F>,
    clients: &mut [Client<F>],
    i: usize,
    op: F::Op,
) -> Outcome<F::Response> {
    let outcome = active(server, &mut clients[i], op).unwrap();
    authenticate_all(server, clients);
    outcome
}

/// A reply to client `i`'s `op`, for a test to bend before the client sees it.
fn reply_for<F: Functionality>(s: &mut Server<F>, client: &mut Client<F>, op: F::Op) -> Reply<F> {
    let invoke = client.invoke(op).unwrap();
    s.on_invoke(client.id(), invoke).unwrap()
}

/// Three operations, each authenticated: put x (1), put y (2), get x (3).
fn history() -> (Server<Adict>, Vec<Client<Adict>>) {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    run(&mut s, &mut c, 0, put("x", "1"));
    run(&mut s, &mut c, 1, put("y", "2"));
    run(&mut s, &mut c, 2, get("x"));
    (s, c)
}

#[test]
fn operations_of_several_clients_one_after_another() {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    assert_eq!(run(&mut s, &mut c, 0, put("x", "1")), NOTHING);
    assert_eq!(run(&mut s, &mut c, 1, get("x")), value("1"));
    assert_eq!(run(&mut s, &mut c, 2, put("y", "2")), NOTHING);
    assert_eq!(run(&mut s, &mut c, 0, DictOp::List), Outcome::Done(DictResponse::Keys(vec![b"x".into(), b"y".into()])));
    assert_eq!(run(&mut s, &mut c, 1, DictOp::Delete { key: b"x".into() }), NOTHING);
    assert_eq!(run(&mut s, &mut c, 2, get("x")), Outcome::Done(DictResponse::Value(None)));
    assert_eq!((s.applied(), s.invoked()), (6, 6));
    assert_eq!(s.state().get(b"y"), Some(&b"2"[..]));
}

#[test]
fn a_read_behind_a_pending_write_of_its_key_aborts_and_others_go_on() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    run(&mut s, &mut c, 1, put("y", "0"));
    assert_eq!(active(&mut s, &mut c[0], put("x", "1")).unwrap(), NOTHING);
    // Client 0's put is committed, not yet authenticated: pending for everyone else.
    assert_eq!(active(&mut s, &mut c[1], get("x")).unwrap(), Outcome::Abort);
    assert_eq!(active(&mut s, &mut c[1], get("y")).unwrap(), value("0"), "another key: compatible");
    assert_eq!(active(&mut s, &mut c[1], put("x", "2")).unwrap(), NOTHING, "blind");
    authenticate_all(&mut s, &mut c);
    assert_eq!(run(&mut s, &mut c, 1, get("x")), value("2"), "the later put, in sequence order");
    // The commutative baseline aborts the blind write too.
    let (mut s, mut c) = (server(), clients(2, Mode::Commutative));
    active(&mut s, &mut c[0], put("x", "1")).unwrap();
    assert_eq!(active(&mut s, &mut c[1], put("x", "2")).unwrap(), Outcome::Abort);
}

#[test]
fn a_client_reads_its_own_pending_write() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    active(&mut s, &mut c[0], put("x", "1")).unwrap();
    active(&mut s, &mut c[0], put("x", "2")).unwrap();
    // μ = [put 1, put 2, get]: the response comes from the state after both.
    assert_eq!(active(&mut s, &mut c[0], get("x")).unwrap(), value("2"));
    authenticate_all(&mut s, &mut c);
    assert_eq!(run(&mut s, &mut c, 1, get("x")), value("2"));
}

#[test]
fn the_server_refuses_out_of_step_messages() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    let invoke = c[0].invoke(put("x", "1")).unwrap();
    assert!(matches!(s.on_invoke(0, Invoke { cleared: 9, ..invoke.clone() }), Err(ServerError::ClearedTooFar { .. })));
    let reply = s.on_invoke(0, invoke).unwrap();
    let (_, commit) = c[0].on_reply(reply).unwrap();
    assert_eq!(s.on_commit(1, commit.clone()), Err(ServerError::SignedByAnother { client: 1, by: 0 }));
    let as_if_from_1 = Commit { phi: Signature { by: 1, ..commit.phi.clone() }, ..commit.clone() };
    assert_eq!(
        s.on_commit(1, as_if_from_1),
        Err(ServerError::NoSuchOperation { client: 1, q: 1 }),
        "another client's operation, not taken over"
    );
    s.on_commit(0, commit.clone()).unwrap();
    assert!(s.on_commit(0, commit).is_err(), "committed twice");
    let (j, m) = s.update_auth().unwrap().unwrap();
    let mut answer = c[j as usize].on_update_auth(m).unwrap().pop().unwrap();
    assert!(s.on_commit_auth(1, answer.clone()).is_err(), "signed by another than its sender");
    let early = CommitAuth { q: 2, ..answer.clone() };
    assert!(matches!(s.on_commit_auth(0, early), Err(ServerError::NotNext { q: 2, next: 1, .. })));
    let right = answer.clone();
    answer.signed.auth = crate::hash::Digest::ZERO;
    assert!(matches!(s.on_commit_auth(0, answer), Err(ServerError::WrongAuthenticator { q: 1 })));
    assert_eq!(s.applied(), 0, "nothing applied");
    s.on_commit_auth(0, right.clone()).unwrap();
    assert_eq!(s.on_commit_auth(0, right), Err(ServerError::AlreadyAuthenticated { q: 1 }));
}

#[test]
fn a_group_with_a_key_per_client() {
    use ed25519_dalek::SigningKey;
    let signing: Vec<_> = (0..3u8).map(|i| SigningKey::from_bytes(&[i + 1; 32])).collect();
    let members: BTreeMap<_, _> = signing.iter().enumerate().map(|(i, k)| (i as u32, k.verifying_key())).collect();
    let ring =
        |i: usize| Keyring::Ed25519 { me: Some((i as u32, Box::new(signing[i].clone()))), members: members.clone() };
    let mut s = Server::genesis(&ring(0), 0, DictOp::List, Tree::new()).unwrap();
    let mut c: Vec<_> = (0..3).map(|i| Client::new(i as u32, ring(i), Adict { mode: Mode::Compatible })).collect();
    run(&mut s, &mut c, 0, put("x", "1"));
    run(&mut s, &mut c, 1, put("y", "2"));
    assert_eq!(run(&mut s, &mut c, 2, get("x")), value("1"));
    // Client 1 authenticates client 0's update with its own key (delegation, Sec. 3.7); the
    // others accept its AUTH signature.
    active(&mut s, &mut c[0], put("z", "3")).unwrap();
    active(&mut s, &mut c[1], get("w")).unwrap();
    let batch = s.delegate_auth(1).unwrap().unwrap();
    for answer in c[1].on_update_auth(batch).unwrap() {
        assert_eq!(answer.signed.psi.by, 1);
        s.on_commit_auth(1, answer).unwrap();
    }
    assert_eq!(run(&mut s, &mut c, 2, get("z")), value("3"));
    // An operation signed by a key outside the group is refused.
    let outsider = Keyring::Ed25519 { me: Some((1, Box::new(SigningKey::from_bytes(&[9; 32])))), members };
    let mut impostor = Client::new(1, outsider, Adict { mode: Mode::Compatible });
    (0..4).for_each(|_| impostor.skip_counter()); // past member 1's: the server takes it
    let invoke = impostor.invoke(put("y", "forged")).unwrap();
    s.on_invoke(1, invoke).unwrap();
    let reply = reply_for(&mut s, &mut c[2], get("y"));
    assert!(matches!(c[2].on_reply(reply), Err(Violation::Signature { what: "INVOKE", client: 1, .. })));
}

//! AIP with ADICT, the server honest or not, messages delivered in any order: an honest
//! server's executions are linearizable (every response is the one the sequence order
//! gives), and each way of lying is caught by the client it is told to.

use super::*;
use crate::adict::Tree;
use proptest::prelude::*;
use std::collections::{BTreeMap, VecDeque};

type Op = DictOp;

fn keys() -> Keyring {
    Keyring::Hmac { key: [42; 32] }
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

/// Runs the passive phase until the server has nothing left to authenticate.
fn authenticate_all(server: &mut Server<Adict>, clients: &mut [Client<Adict>]) {
    while let Some((j, m)) = server.update_auth() {
        let answer = clients[j as usize].on_update_auth(m).unwrap();
        server.on_commit_auth(j, answer).unwrap();
    }
}

/// Client `i`'s operation through its active phase (the passive phase left for later).
fn active(server: &mut Server<Adict>, client: &mut Client<Adict>, op: Op) -> Result<Outcome<DictResponse>, Violation> {
    let invoke = client.invoke(op).unwrap();
    let reply = server.on_invoke(client.id(), invoke).unwrap();
    let (outcome, commit) = client.on_reply(reply)?;
    server.on_commit(client.id(), commit).unwrap();
    Ok(outcome)
}

/// One operation, both phases.
fn run(server: &mut Server<Adict>, clients: &mut [Client<Adict>], i: usize, op: Op) -> Outcome<DictResponse> {
    let outcome = active(server, &mut clients[i], op).unwrap();
    authenticate_all(server, clients);
    outcome
}

fn value(v: &str) -> Outcome<DictResponse> {
    Outcome::Done(DictResponse::Value(Some(v.into())))
}

#[test]
fn operations_of_several_clients_one_after_another() {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    assert_eq!(run(&mut s, &mut c, 0, put("x", "1")), Outcome::Done(DictResponse::Nothing));
    assert_eq!(run(&mut s, &mut c, 1, get("x")), value("1"));
    assert_eq!(run(&mut s, &mut c, 2, put("y", "2")), Outcome::Done(DictResponse::Nothing));
    assert_eq!(run(&mut s, &mut c, 0, DictOp::List), Outcome::Done(DictResponse::Keys(vec![b"x".into(), b"y".into()])));
    assert_eq!(run(&mut s, &mut c, 1, DictOp::Delete { key: b"x".into() }), Outcome::Done(DictResponse::Nothing));
    assert_eq!(run(&mut s, &mut c, 2, get("x")), Outcome::Done(DictResponse::Value(None)));
    assert_eq!((s.applied(), s.invoked()), (6, 6));
    assert_eq!(s.state().get(b"y"), Some(&b"2"[..]));
}

#[test]
fn a_read_behind_a_pending_write_of_its_key_aborts_and_others_go_on() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    run(&mut s, &mut c, 1, put("y", "0"));
    assert_eq!(active(&mut s, &mut c[0], put("x", "1")).unwrap(), Outcome::Done(DictResponse::Nothing));
    // Client 0's put is committed, not yet authenticated: pending for everyone else.
    assert_eq!(active(&mut s, &mut c[1], get("x")).unwrap(), Outcome::Abort);
    assert_eq!(active(&mut s, &mut c[1], get("y")).unwrap(), value("0"), "another key: compatible");
    assert_eq!(active(&mut s, &mut c[1], put("x", "2")).unwrap(), Outcome::Done(DictResponse::Nothing), "blind");
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

// ---- Random schedules against an honest server -------------------------------------------

/// A message in flight: to the server from a client, or to a client.
enum ToServer {
    Invoke(Invoke<Op>),
    Commit(Commit<Op>),
    CommitAuth(CommitAuth<crate::hash::Digest>),
}

enum ToClient {
    Reply(Box<Reply<Adict>>),
    UpdateAuth(Box<UpdateAuth<Adict>>),
}

fn random_op() -> impl Strategy<Value = Op> {
    let key = (0u8..4).prop_map(|k| vec![b'k', b'0' + k]);
    prop_oneof![
        (key.clone(), any::<u8>()).prop_map(|(key, v)| DictOp::Put { key, value: vec![v] }),
        key.clone().prop_map(|key| DictOp::Get { key }),
        key.prop_map(|key| DictOp::Delete { key }),
        Just(DictOp::List),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Three clients, messages delivered in a random order (FIFO per channel): no violation, and
    /// every completed operation's response is the one its place in the sequence order gives.
    #[test]
    fn an_honest_server_is_never_blamed_and_the_history_is_linearizable(
        work in proptest::collection::vec(proptest::collection::vec(random_op(), 1..8), 3),
        schedule in proptest::collection::vec(0usize..1000, 0..400),
        commutative in any::<bool>(),
    ) {
        let mode = if commutative { Mode::Commutative } else { Mode::Compatible };
        let total: usize = work.iter().map(Vec::len).sum();
        let (mut s, mut c) = (server(), clients(3, mode));
        let mut todo: Vec<VecDeque<Op>> = work.into_iter().map(VecDeque::from).collect();
        let mut up: Vec<VecDeque<ToServer>> = (0..3).map(|_| VecDeque::new()).collect();
        let mut down: Vec<VecDeque<ToClient>> = (0..3).map(|_| VecDeque::new()).collect();
        let mut busy = [false; 3];
        let mut asked = 0u64; // the last q an UPDATE-AUTH went out for
        let mut done: BTreeMap<u64, (Op, Outcome<DictResponse>)> = BTreeMap::new();
        let mut in_flight: BTreeMap<usize, Op> = BTreeMap::new();
        // The random schedule, then round robin until everything is delivered.
        let mut choices = schedule.into_iter().chain((0..).map(|n| n % 1000));
        for _ in 0..100_000 {
            if todo.iter().all(VecDeque::is_empty) && up.iter().all(VecDeque::is_empty)
                && down.iter().all(VecDeque::is_empty) && !busy.iter().any(|b| *b) && s.update_auth().is_none() {
                break;
            }
            let pick = choices.next().unwrap();
            let i = pick % 3;
            match pick / 3 % 4 {
                0 if !busy[i] => {
                    if let Some(op) = todo[i].pop_front() {
                        busy[i] = true;
                        in_flight.insert(i, op.clone());
                        up[i].push_back(ToServer::Invoke(c[i].invoke(op).unwrap()));
                    }
                }
                1 => match up[i].pop_front() {
                    Some(ToServer::Invoke(m)) => {
                        down[i].push_back(ToClient::Reply(Box::new(s.on_invoke(i as u32, m).unwrap())));
                    }
                    Some(ToServer::Commit(m)) => s.on_commit(i as u32, m).unwrap(),
                    Some(ToServer::CommitAuth(m)) => s.on_commit_auth(i as u32, m).unwrap(),
                    None => {}
                },
                2 => match down[i].pop_front() {
                    Some(ToClient::Reply(m)) => {
                        let (outcome, commit) = c[i].on_reply(*m).unwrap();
                        done.insert(commit.t, (in_flight.remove(&i).unwrap(), outcome));
                        up[i].push_back(ToServer::Commit(commit));
                        busy[i] = false;
                    }
                    Some(ToClient::UpdateAuth(m)) => {
                        up[i].push_back(ToServer::CommitAuth(c[i].on_update_auth(*m).unwrap()));
                    }
                    None => {}
                },
                _ => {
                    if let Some((j, m)) = s.update_auth() {
                        if m.q > asked {
                            asked = m.q;
                            down[j as usize].push_back(ToClient::UpdateAuth(Box::new(m)));
                        }
                    }
                }
            }
        }
        prop_assert!(todo.iter().all(VecDeque::is_empty), "the schedule ran out");
        prop_assert_eq!(done.len(), total, "every operation completed (done or aborted)");
        prop_assert_eq!(s.applied(), s.invoked());
        // Sequence order is a linearization: replay the successful operations in it.
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for (op, outcome) in done.values() {
            let Outcome::Done(response) = outcome else { continue };
            match op {
                DictOp::Put { key, value } => { model.insert(key.clone(), value.clone()); }
                DictOp::Delete { key } => { model.remove(key); }
                DictOp::Get { key } => prop_assert_eq!(response, &DictResponse::Value(model.get(key).cloned())),
                DictOp::List => prop_assert_eq!(response, &DictResponse::Keys(model.keys().cloned().collect())),
            }
        }
        let kept: Vec<_> = s.state().entries().into_iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        prop_assert_eq!(kept.into_iter().collect::<BTreeMap<_, _>>(), model);
    }
}

// ---- A lying server ----------------------------------------------------------------------

/// A reply to client `i`'s `op`, for a test to bend before the client sees it.
fn reply_for(s: &mut Server<Adict>, client: &mut Client<Adict>, op: Op) -> Reply<Adict> {
    let invoke = client.invoke(op).unwrap();
    s.on_invoke(client.id(), invoke).unwrap()
}

fn history() -> (Server<Adict>, Vec<Client<Adict>>) {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    run(&mut s, &mut c, 0, put("x", "1"));
    run(&mut s, &mut c, 1, put("y", "2"));
    run(&mut s, &mut c, 2, get("x"));
    (s, c)
}

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

#[test]
fn a_stale_authenticator_is_caught() {
    let (mut s, mut c) = (server(), clients(3, Mode::Compatible));
    run(&mut s, &mut c, 0, put("x", "1"));
    let old = reply_for(&mut s, &mut c[2], get("x"));
    let stale = old.alpha.clone();
    let (_, commit) = c[2].on_reply(old).unwrap();
    s.on_commit(2, commit).unwrap();
    authenticate_all(&mut s, &mut c);
    run(&mut s, &mut c, 1, put("y", "2"));
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    reply.alpha = stale;
    assert!(matches!(c[0].on_reply(reply), Err(Violation::Signature { what: "AUTH", .. })));
}

#[test]
fn a_changed_or_left_out_operation_in_the_history_is_caught() {
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    assert!(reply.delta.len() >= 2, "client 0 missed operations 2 and 3");
    reply.delta[0].op = put("y", "other");
    assert!(c[0].on_reply(reply).is_err());
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    reply.delta.remove(0);
    assert!(matches!(c[0].on_reply(reply), Err(Violation::Malformed(_))));
}

#[test]
fn a_forged_or_replayed_operation_is_caught() {
    // A pending operation its client never invoked.
    let (mut s, mut c) = history();
    let mut reply = reply_for(&mut s, &mut c[0], get("y"));
    let forged = Invoked { op: DictOp::Delete { key: b"y".to_vec() }, tau: vec![0; 32], client: 1 };
    reply.omega.insert(0, forged);
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
    reply.omega.swap(0, 1);
    // Compatible and well signed: client 2 cannot tell yet ...
    let (outcome, commit) = c[2].on_reply(reply).unwrap();
    assert_eq!(outcome, Outcome::Done(DictResponse::Value(None)));
    s.on_commit(2, commit).unwrap();
    // ... but its chain disagrees with what clients 0 and 1 signed: client 2 refuses to
    // authenticate its operation on top of theirs.
    for j in [0u32, 1] {
        let (to, m) = s.update_auth().unwrap();
        assert_eq!(to, j);
        let answer = c[j as usize].on_update_auth(m).unwrap();
        s.on_commit_auth(j, answer).unwrap();
    }
    let (to, m) = s.update_auth().unwrap();
    assert_eq!(to, 2);
    assert!(matches!(c[2].on_update_auth(m), Err(Violation::Signature { what: "AUTH", client: 1, at: 2 })));
}

#[test]
fn the_server_refuses_out_of_step_messages() {
    let (mut s, mut c) = (server(), clients(2, Mode::Compatible));
    let invoke = c[0].invoke(put("x", "1")).unwrap();
    assert!(matches!(s.on_invoke(0, Invoke { cleared: 9, ..invoke.clone() }), Err(ServerError::ClearedTooFar { .. })));
    let reply = s.on_invoke(0, invoke).unwrap();
    let (_, commit) = c[0].on_reply(reply).unwrap();
    assert!(s.on_commit(1, commit.clone()).is_err(), "another client's operation");
    s.on_commit(0, commit.clone()).unwrap();
    assert!(s.on_commit(0, commit).is_err(), "committed twice");
    let (j, m) = s.update_auth().unwrap();
    let mut answer = c[j as usize].on_update_auth(m).unwrap();
    assert!(s.on_commit_auth(1, answer.clone()).is_err(), "from the wrong client");
    answer.signed.auth = crate::hash::Digest::ZERO;
    assert!(matches!(s.on_commit_auth(0, answer), Err(ServerError::WrongAuthenticator { q: 1 })));
    assert_eq!(s.applied(), 0, "nothing applied");
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
    // An operation signed by a key outside the group is refused.
    let outsider = Keyring::Ed25519 { me: Some((1, Box::new(SigningKey::from_bytes(&[9; 32])))), members };
    let mut impostor = Client::new(1, outsider, Adict { mode: Mode::Compatible });
    let invoke = impostor.invoke(put("y", "forged")).unwrap();
    s.on_invoke(1, invoke).unwrap();
    let reply = reply_for(&mut s, &mut c[2], get("y"));
    assert!(matches!(c[2].on_reply(reply), Err(Violation::Signature { what: "INVOKE", client: 1, .. })));
}

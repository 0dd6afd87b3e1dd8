//! A forking server (Sec. 3.6, case 2): one server until a split, then two copies of it,
//! each clients' group talking to its own. Each fork stays linearizable and the two never
//! join ([`crate::aip::history::fork_linearizable`] on what the clients output), and a
//! client shown the other fork catches it.

use super::*;
use crate::aip::history::{fork_linearizable, CheckError, Completed, ForkViews, Forks, Histories, OpId};
use proptest::prelude::*;
use std::collections::{BTreeSet, VecDeque};

/// The server double: before the split it is one honest server, and it keeps what it
/// received; at the split a second server replays that (the server is deterministic), and
/// from then on each client talks to its fork's copy.
struct Forking {
    servers: Vec<Server<Adict>>,
    log: Vec<(ClientId, ToServer<Adict>)>,
    /// Each client's fork once split.
    fork_of: Vec<usize>,
}

impl Forking {
    fn server_of(&mut self, client: ClientId) -> &mut Server<Adict> {
        let fork = if self.servers.len() > 1 { self.fork_of[client as usize] } else { 0 };
        &mut self.servers[fork]
    }

    fn deliver(&mut self, from: ClientId, m: ToServer<Adict>) -> Option<Reply<Adict>> {
        if self.servers.len() == 1 {
            self.log.push((from, m.clone()));
        }
        self.server_of(from).deliver(from, m).unwrap()
    }

    fn split(&mut self) {
        let mut copy = server();
        for (from, m) in self.log.drain(..) {
            copy.deliver(from, m).unwrap();
        }
        assert_eq!((copy.applied(), copy.invoked()), (self.servers[0].applied(), self.servers[0].invoked()));
        self.servers.push(copy);
    }
}

/// Four clients, 0 and 1 on fork 0, 2 and 3 on fork 1; REPLYs delivered when a schedule
/// says, so that operations overlap in real time and some abort.
struct Run {
    f: Forking,
    c: Vec<Client<Adict>>,
    todo: Vec<VecDeque<Op>>,
    waiting: Vec<Option<Reply<Adict>>>,
    invoked_at: Vec<u64>,
    clock: u64,
    h: Histories<DictOp>,
}

impl Run {
    fn new() -> Run {
        let f = Forking { servers: vec![server()], log: Vec::new(), fork_of: vec![0, 0, 1, 1] };
        let (todo, waiting) = ((0..4).map(|_| VecDeque::new()).collect(), vec![None, None, None, None]);
        Run { f, c: clients(4, Mode::Compatible), todo, waiting, invoked_at: vec![0; 4], clock: 0, h: Histories::new() }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn invoke(&mut self, i: usize) {
        if self.waiting[i].is_some() {
            return;
        }
        let Some(op) = self.todo[i].pop_front() else { return };
        self.invoked_at[i] = self.tick();
        let invoke = self.c[i].invoke(op).unwrap();
        self.waiting[i] = self.f.deliver(i as u32, ToServer::Invoke(invoke));
    }

    fn answer(&mut self, i: usize) {
        let Some(reply) = self.waiting[i].take() else { return };
        let op = reply.view.omega.last().unwrap().invoked.op.clone();
        let (outcome, commit) = self.c[i].on_reply(reply).expect("each fork is an honest server to its clients");
        let done = Completed { op, outcome, invoked: self.invoked_at[i], returned: self.tick() };
        self.h.entry(i as u32).or_default().push(done);
        assert_eq!(self.f.deliver(i as u32, ToServer::Commit(commit)), None);
    }

    /// One passive phase on fork `fork`'s server, if one is due.
    fn passive(&mut self, fork: usize) -> bool {
        let Some(server) = self.f.servers.get(fork) else { return false };
        let Some((j, m)) = server.update_auth().unwrap() else { return false };
        for answer in self.c[j as usize].on_update_auth(m).unwrap() {
            self.f.deliver(j, ToServer::CommitAuth(answer));
        }
        true
    }

    /// `schedule`, then until every operation has completed and been applied.
    fn drive(&mut self, schedule: &[usize]) {
        for &pick in schedule {
            let i = pick % 4;
            match pick / 4 % 3 {
                0 => self.invoke(i),
                1 => self.answer(i),
                _ => {
                    self.passive(i / 2);
                }
            }
        }
        while self.todo.iter().any(|t| !t.is_empty()) || self.waiting.iter().any(Option::is_some) {
            for i in 0..4 {
                self.answer(i);
                self.invoke(i);
            }
        }
        while self.passive(0) || self.passive(1) {}
    }

    /// Client `i` through fork `fork`'s server: its INVOKE, and what it makes of the REPLY.
    fn visit(&mut self, i: usize, fork: usize, op: Op) -> Result<Replied<Adict>, Violation> {
        let invoke = self.c[i].invoke(op).unwrap();
        let reply = self.f.servers[fork].on_invoke(i as u32, invoke).unwrap();
        self.c[i].on_reply(reply)
    }

    /// Puts by client `by` on its fork until that fork's server has applied as far as
    /// client `i` has cleared, so that its server can answer `i` (a lying server would).
    fn catch_up(&mut self, by: usize, i: usize) {
        let fork = self.f.fork_of[by];
        while self.f.servers[fork].applied() < self.c[i].cleared() {
            self.todo[by].push_back(put("pad", "0"));
            self.drive(&[]);
        }
    }
}

fn random_op() -> impl Strategy<Value = Op> {
    let key = (0u8..3).prop_map(|k| vec![b'k', b'0' + k]);
    prop_oneof![
        (key.clone(), 0u8..4).prop_map(|(key, v)| DictOp::Put { key, value: vec![v] }),
        key.clone().prop_map(|key| DictOp::Get { key }),
        key.prop_map(|key| DictOp::Delete { key }),
        Just(DictOp::List),
        Just(DictOp::ListPage { after: None, limit: 1 }),
    ]
}

fn groups() -> Vec<BTreeSet<ClientId>> {
    vec![BTreeSet::from([0, 1]), BTreeSet::from([2, 3])]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Random operations before the split and on both forks after it: the histories are
    /// fork-linearizable with the shared prefix the split left; then client 0 is shown fork
    /// 1 and client 2 fork 0, and each catches it.
    #[test]
    fn forks_stay_apart_and_a_client_shown_the_other_fork_catches_it(
        before in proptest::collection::vec(proptest::collection::vec(random_op(), 0..4), 4),
        after in proptest::collection::vec(proptest::collection::vec(random_op(), 1..5), 4),
        schedules in proptest::collection::vec(proptest::collection::vec(0usize..1_000, 0..80), 2),
    ) {
        let mut run = Run::new();
        run.todo = before.into_iter().map(VecDeque::from).collect();
        run.drive(&schedules[0]);
        let split = run.tick();
        run.f.split();
        run.todo = after.into_iter().map(VecDeque::from).collect();
        run.drive(&schedules[1]);

        let forks = Forks::split_at(&run.h, groups(), split);
        let ForkViews { forks: views, .. } = fork_linearizable(&run.h, &forks).unwrap();
        prop_assert!(views.iter().all(|view| !view.is_empty()), "every fork went on");

        // Clients 3 and 1 bring the other fork as far as the visitor has cleared.
        for (i, by, other) in [(0, 3, 1), (2, 1, 0)] {
            run.catch_up(by, i);
            let caught = run.visit(i, other, DictOp::Get { key: b"k0".to_vec() }).unwrap_err();
            prop_assert!(matches!(caught, Violation::Chain(_) | Violation::Signature { .. }), "{caught}");
        }
    }
}

/// What the checker says when the protocol is kept from catching a join: client 0 of fork 0
/// loses its state and reads through fork 1. Its history would show fork 1's write: a join
/// (a member with no state now refuses its own committed operations, so the read is made
/// by hand). Its restored state catches the fork, and the read never completes.
#[test]
fn a_join_the_protocol_cannot_see_is_what_the_checker_refuses() {
    let mut run = Run::new();
    run.todo[0].push_back(put("x", "0"));
    run.drive(&[]);
    let split = run.tick();
    run.f.split();
    run.todo[0].push_back(put("x", "1"));
    run.todo[2].push_back(put("x", "2"));
    run.drive(&[]);
    let forks = Forks::split_at(&run.h, groups(), split);
    assert!(fork_linearizable(&run.h, &forks).is_ok());

    let saved = run.c[0].save();
    run.c[0] = Client::new(0, keys(), Adict { mode: Mode::Compatible });
    // Counters the server has not taken yet (it refuses one it has: a replay).
    (0..4).for_each(|_| run.c[0].skip_counter());
    // Without its chain, client 0 would read fork 1's write; but its first REPLY shows its own
    // put committed under its id, which a new member never made, so it refuses (#43 item 9:
    // a member that lost its state joins again with a new id).
    let invoked = run.tick();
    assert!(matches!(run.visit(0, 1, get("x")), Err(Violation::IdTaken { client: 0, at: 1 })));
    let read = Completed { op: get("x"), outcome: value("2"), invoked, returned: run.tick() };
    let mut joined = run.h.clone();
    joined.get_mut(&0).unwrap().push(read);
    let put_2 = OpId { client: 2, index: 0 };
    assert_eq!(fork_linearizable(&joined, &forks), Err(CheckError::Joined { fork: 0, op: put_2 }));

    run.c[0] = Client::restore(&saved, 0, keys(), Adict { mode: Mode::Compatible }).unwrap();
    (0..8).for_each(|_| run.c[0].skip_counter());
    assert!(run.visit(0, 1, get("x")).is_err(), "with it, client 0 catches the fork");
}

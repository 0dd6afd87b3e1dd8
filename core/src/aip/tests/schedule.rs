//! Random message schedules against an honest server, with the extensions on: abort marks,
//! queries without a passive phase, delegated batches, a bounded pending list with a
//! priority inbox, a client that crashes and is taken over, and garbage collection. No
//! client ever blames the server, and the completed operations replay in sequence order.

use super::*;
use proptest::prelude::*;
use std::collections::VecDeque;

/// How a run is set up.
#[derive(Clone, Debug)]
struct Setup {
    mode: Mode,
    max_pending: u64,
    /// The server delegates to each committing client the updates before its own (Sec. 3.7).
    delegate: bool,
    /// Client `.0` stops at step `.1` or the first after it where it is in the middle of
    /// something: with a message on its way to the server (or an operation in progress), or,
    /// if `.2`, with a REPLY it will never handle. Another client takes over for it later.
    crash: Option<(usize, usize, bool)>,
}

/// Counts of what a run exercised.
#[derive(Debug, Default)]
struct Seen {
    marks: usize,
    delegated: usize,
    held_invokes: usize,
    takeovers: usize,
    takeover_aborts: usize,
    max_retained: usize,
}

struct Sim {
    s: Server<Adict>,
    c: Vec<Client<Adict>>,
    todo: Vec<VecDeque<Op>>,
    /// Per client, the messages on their way to the server (FIFO), then the server's inbox.
    up: Vec<VecDeque<ToServer<Adict>>>,
    inbox: Inbox<ToServer<Adict>>,
    /// Per client, what reached it (UPDATE-AUTH before REPLY, Sec. 5.2).
    down: Vec<Inbox<ToClient<Adict>>>,
    in_flight: BTreeMap<usize, Op>,
    /// Per client, whether a REPLY to it is on its way.
    replied: Vec<bool>,
    done: BTreeMap<u64, (Op, Outcome<DictResponse>)>,
    /// The last `q` an UPDATE-AUTH went out for.
    asked: u64,
    setup: Setup,
    crashed: Option<usize>,
    taken_over: bool,
    seen: Seen,
}

impl Sim {
    fn new(setup: Setup, work: Vec<Vec<Op>>) -> Sim {
        let n = work.len();
        let members = (0..n as u32).collect();
        let config = ServerConfig { max_pending: setup.max_pending, members: Some(members) };
        Sim {
            s: server().with_config(config),
            c: clients(n as u32, setup.mode),
            todo: work.into_iter().map(VecDeque::from).collect(),
            up: (0..n).map(|_| VecDeque::new()).collect(),
            inbox: Inbox::default(),
            down: (0..n).map(|_| Inbox::default()).collect(),
            in_flight: BTreeMap::new(),
            replied: vec![false; n],
            done: BTreeMap::new(),
            asked: 0,
            setup,
            crashed: None,
            taken_over: false,
            seen: Seen::default(),
        }
    }

    fn live(&self, i: usize) -> bool {
        self.crashed != Some(i)
    }

    fn quiet(&self) -> bool {
        (0..self.c.len())
            .filter(|&i| self.live(i))
            .all(|i| self.todo[i].is_empty() && !self.c[i].busy() && self.down[i].is_empty() && self.up[i].is_empty())
            && self.inbox.is_empty()
            && (self.crashed.is_none() || self.taken_over)
            && self.s.applied() == self.s.invoked()
    }

    fn step(&mut self, n: usize, pick: usize) {
        if let Some((f, at, unhandled)) = self.setup.crash.filter(|_| self.crashed.is_none()) {
            let midway = match unhandled {
                true => self.replied[f],
                false => self.c[f].busy() || !self.up[f].is_empty(),
            };
            if n >= at && midway {
                self.crashed = Some(f);
            }
        }
        let clients = self.c.len();
        let i = pick % clients;
        match pick / clients % 6 {
            0 => self.invoke(i),
            1 => {
                if let Some(m) = self.up[i].pop_front() {
                    self.inbox.push(i as u32, m);
                }
            }
            2 => self.serve(),
            3 => self.client_step(i),
            4 => self.passive(),
            _ => self.take_over(i),
        }
        self.seen.max_retained = self.seen.max_retained.max(self.s.retained());
    }

    fn invoke(&mut self, i: usize) {
        if !self.live(i) || self.c[i].busy() {
            return;
        }
        if let Some(op) = self.todo[i].pop_front() {
            self.in_flight.insert(i, op.clone());
            self.up[i].push_back(ToServer::Invoke(self.c[i].invoke(op).unwrap()));
        }
    }

    /// The server handles its next message, by priority.
    fn serve(&mut self) {
        let Some((from, m)) = self.inbox.next_for(&self.s) else {
            self.seen.held_invokes += usize::from(!self.inbox.is_empty());
            return;
        };
        let committed = matches!(m, ToServer::Commit(_)).then_some(());
        match self.s.deliver(from, m) {
            Ok(Some(reply)) => {
                self.seen.marks += reply.view.omega.iter().filter(|p| p.aborted.is_some()).count();
                self.down[from as usize].push(from, ToClient::Reply(Box::new(reply)));
                self.replied[from as usize] = true;
            }
            Ok(None) => {
                let delegated =
                    committed.filter(|_| self.setup.delegate).and_then(|_| self.s.delegate_auth(from).unwrap());
                if let Some(batch) = delegated {
                    self.seen.delegated += batch.ops.len();
                    self.down[from as usize].push(from, ToClient::UpdateAuth(Box::new(batch)));
                }
            }
            // A crashed client's messages after its takeover, and a slower member's help.
            Err(ServerError::Retired(j)) if self.crashed == Some(j as usize) => {}
            Err(ServerError::AlreadyAuthenticated { .. }) => {}
            Err(e) => panic!("the honest server refused a message of client {from}: {e}"),
        }
    }

    fn client_step(&mut self, i: usize) {
        let Some((_, m)) = self.down[i].pop(false) else { return };
        if !self.live(i) {
            return; // a crashed client handles nothing
        }
        match m {
            ToClient::Reply(reply) => {
                self.replied[i] = false;
                let (outcome, commit) = self.c[i].on_reply(*reply).expect("an honest server is never blamed");
                self.done.insert(commit.t, (self.in_flight.remove(&i).unwrap(), outcome));
                self.up[i].push_back(ToServer::Commit(commit));
            }
            ToClient::UpdateAuth(m) => {
                assert!(m.ops.iter().all(|o| !Adict::is_query(&o.committed.op)), "a query's passive phase");
                for answer in self.c[i].on_update_auth(*m).expect("an honest server is never blamed") {
                    self.up[i].push_back(ToServer::CommitAuth(answer));
                }
            }
            ToClient::TakeOver(m) => {
                for commit in self.c[i].take_over(*m).expect("an honest server is never blamed") {
                    self.seen.takeover_aborts += 1;
                    self.done.insert(commit.t, (commit.op.clone(), Outcome::Abort));
                    self.up[i].push_back(ToServer::Commit(commit));
                }
            }
        }
    }

    fn passive(&mut self) {
        if let Some((j, m)) = self.s.update_auth().unwrap() {
            if m.ops[0].q > self.asked {
                self.asked = m.ops[0].q;
                self.down[j as usize].push(j, ToClient::UpdateAuth(Box::new(m)));
            }
        }
    }

    /// Client `i` takes over for the crashed one (found crashed, reliably, by now); the view
    /// goes to it as a message, ahead of the UPDATE-AUTHs routed to it from now on.
    fn take_over(&mut self, i: usize) {
        let Some(failed) = self.crashed.filter(|&f| f != i && !self.taken_over) else { return };
        let m = self.s.take_over(failed as u32, i as u32, self.c[i].cleared()).unwrap();
        self.down[i].push(i as u32, ToClient::TakeOver(Box::new(m)));
        self.in_flight.remove(&failed);
        self.taken_over = true;
        self.seen.takeovers += 1;
        self.asked = self.s.applied(); // what went to the crashed client goes again, to its taker
    }

    /// Runs `schedule`, then round robin until everything is delivered.
    fn run(&mut self, schedule: impl IntoIterator<Item = usize>) {
        let mut picks = schedule.into_iter().chain((0..).map(|n| n % 1000));
        for n in 0..200_000 {
            if self.quiet() {
                return;
            }
            self.step(n, picks.next().unwrap());
        }
        panic!("no quiescence: {:?}", self.seen);
    }

    /// Sequence order is a linearization: the successful operations replay in it, and the
    /// server's state is the replay's.
    fn check_linearizable(&self) {
        assert_eq!(self.done.len() as u64, self.s.invoked(), "every operation completed (done or aborted)");
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for (op, outcome) in self.done.values() {
            let Outcome::Done(response) = outcome else { continue };
            match op {
                DictOp::Put { key, value } => {
                    model.insert(key.clone(), value.clone());
                }
                DictOp::Delete { key } => {
                    model.remove(key);
                }
                DictOp::Get { key } => assert_eq!(response, &DictResponse::Value(model.get(key).cloned())),
                DictOp::List => assert_eq!(response, &DictResponse::Keys(model.keys().cloned().collect())),
            }
        }
        let kept: BTreeMap<_, _> =
            self.s.state().entries().into_iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert_eq!(kept, model);
    }
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
    #![proptest_config(ProptestConfig::with_cases(96))]
    /// Three clients, messages delivered in a random order (FIFO per channel, then by
    /// priority): no violation, and every completed operation's response is the one its
    /// place in the sequence order gives.
    #[test]
    fn an_honest_server_is_never_blamed_and_the_history_is_linearizable(
        work in proptest::collection::vec(proptest::collection::vec(random_op(), 1..8), 3),
        schedule in proptest::collection::vec(0usize..10_000, 0..500),
        commutative in any::<bool>(),
        delegate in any::<bool>(),
        max_pending in 1u64..6,
        crash in proptest::option::of((0usize..3, 0usize..200, any::<bool>())),
    ) {
        let mode = if commutative { Mode::Commutative } else { Mode::Compatible };
        let mut sim = Sim::new(Setup { mode, max_pending, delegate, crash }, work);
        sim.run(schedule);
        sim.check_linearizable();
    }
}

/// A xorshift stream: a long, reproducible schedule.
fn xorshift(mut x: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Some(x as usize)
    })
}

fn long_work(seed: u64, clients: usize, ops: usize) -> Vec<Vec<Op>> {
    let mut r = xorshift(seed);
    let mut op = move || {
        let (kind, key) = (r.next().unwrap() % 4, format!("k{}", r.next().unwrap() % 6));
        match kind {
            0 => put(&key, &r.next().unwrap().to_string()),
            1 => get(&key),
            2 => DictOp::Delete { key: key.into_bytes() },
            _ => DictOp::List,
        }
    };
    (0..clients).map(|_| (0..ops).map(|_| op()).collect()).collect()
}

/// A long run with everything on (and a crash halfway): the server's memory stays bounded,
/// far below the history's length, and every extension was exercised.
#[test]
fn a_long_run_keeps_the_server_bounded() {
    let crashes = [None, Some((2, 3_000, false)), Some((1, 2_000, true)), Some((0, 4_000, true))];
    for (seed, crash) in [7, 11, 13, 17].into_iter().zip(crashes) {
        let setup = Setup { mode: Mode::Commutative, max_pending: 4, delegate: true, crash };
        let mut sim = Sim::new(setup, long_work(seed, 3, 300));
        sim.run(xorshift(seed * 31).take(60_000));
        sim.check_linearizable();
        let seen = &sim.seen;
        assert!(sim.s.invoked() > 600, "{} operations", sim.s.invoked());
        assert!(seen.max_retained < 60, "kept up to {} of {} operations", seen.max_retained, sim.s.invoked());
        assert!(seen.marks > 0 && seen.delegated > 0 && seen.held_invokes > 0, "{seen:?}");
        assert_eq!(seen.takeovers, usize::from(crash.is_some()), "{seen:?}");
        if crash.is_some_and(|(_, _, unhandled)| unhandled) {
            assert!(seen.takeover_aborts > 0, "{seen:?}");
        }
        eprintln!("seed {seed}: {} operations, {seen:?}", sim.s.invoked());
    }
}

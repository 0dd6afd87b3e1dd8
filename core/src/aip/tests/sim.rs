//! The simulator of [`super::schedule`] and [`super::persist`]: three clients and an honest
//! server, every message delivered when a schedule says, with the extensions on. It records
//! what each client output and when (a logical clock, one tick per event), for the
//! linearizability checker ([`crate::aip::history`]), and every message the clients sent.

use super::*;
use crate::aip::history::{Completed, Histories};
use std::collections::VecDeque;

/// How a run is set up.
#[derive(Clone, Debug)]
pub(super) struct Setup {
    pub(super) mode: Mode,
    pub(super) max_pending: u64,
    /// The server delegates to each committing client the updates before its own (Sec. 3.7).
    pub(super) delegate: bool,
    /// Client `.0` stops at step `.1` or the first after it where it is in the middle of
    /// something: with a message on its way to the server (or an operation in progress), or,
    /// if `.2`, with a REPLY it will never handle. Another client takes over for it later.
    pub(super) crash: Option<(usize, usize, bool)>,
    /// Each client is saved and restored ([`Client::save`], [`Client::restore`]) after
    /// everything it does, as a member that runs one process per step would be.
    pub(super) persist: bool,
    /// A client whose REPLY showed nothing pending before its own update authenticates it at
    /// once and sends the COMMIT-AUTH right after its COMMIT ([`Client::own_update`]).
    pub(super) early: bool,
}

/// Counts of what a run exercised.
#[derive(Debug, Default)]
pub(super) struct Seen {
    pub(super) marks: usize,
    pub(super) delegated: usize,
    pub(super) held_invokes: usize,
    pub(super) takeovers: usize,
    pub(super) takeover_aborts: usize,
    pub(super) max_retained: usize,
    /// Responses a crashed client output whose COMMIT never reached the server: its taker
    /// aborted the operation (Sec. 3.7), so the response is taken as lost with the client.
    pub(super) lost_outputs: usize,
    /// Updates their own clients authenticated from their REPLY.
    pub(super) early_auths: usize,
}

pub(super) struct Sim {
    pub(super) s: Server<Adict>,
    pub(super) c: Vec<Client<Adict>>,
    todo: Vec<VecDeque<Op>>,
    /// Per client, the messages on their way to the server (FIFO), then the server's inbox.
    up: Vec<VecDeque<ToServer<Adict>>>,
    inbox: Inbox<ToServer<Adict>>,
    /// Per client, what reached it (UPDATE-AUTH before REPLY, Sec. 5.2).
    down: Vec<Inbox<ToClient<Adict>>>,
    in_flight: BTreeMap<usize, Op>,
    /// Per client, whether a REPLY to it is on its way.
    replied: Vec<bool>,
    pub(super) done: BTreeMap<u64, (Op, Outcome<DictResponse>)>,
    /// The last `q` an UPDATE-AUTH went out for.
    asked: u64,
    pub(super) setup: Setup,
    crashed: Option<usize>,
    taken_over: bool,
    pub(super) seen: Seen,
    /// The logical clock, and when each client invoked its current operation.
    clock: u64,
    invoked_at: BTreeMap<usize, u64>,
    /// Per sequence number, the operation's client and its invocation and response stamps.
    stamps: BTreeMap<u64, (u32, u64, u64)>,
    /// Every message the clients sent, encoded, in order.
    pub(super) transcript: Vec<Vec<u8>>,
}

impl Sim {
    pub(super) fn new(setup: Setup, work: Vec<Vec<Op>>) -> Sim {
        let n = work.len();
        let members = (0..n as u32).collect();
        let config = ServerConfig { max_pending: setup.max_pending, members: Some(members), ..ServerConfig::default() };
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
            clock: 0,
            invoked_at: BTreeMap::new(),
            stamps: BTreeMap::new(),
            transcript: Vec::new(),
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
            let now = self.tick();
            self.invoked_at.insert(i, now);
            let m = ToServer::Invoke(self.c[i].invoke(op).unwrap());
            self.send(i, m);
            self.reload(i);
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn send(&mut self, i: usize, m: ToServer<Adict>) {
        self.transcript.push(m.to_wire());
        self.up[i].push_back(m);
    }

    /// Client `i` saved and restored, with `persist`: the restored client must carry on as
    /// the original (its state saves to the same bytes, and it sends the same messages).
    fn reload(&mut self, i: usize) {
        if self.setup.persist {
            let saved = self.c[i].save();
            let restored = Client::restore(&saved, i as u32, keys(), Adict { mode: self.setup.mode }).unwrap();
            assert_eq!(restored.save(), saved, "one encoding per state");
            self.c[i] = restored;
        }
    }

    /// Hands `m` to the server; an INVOKE is answered in its wire encoding, which must be
    /// the encoding of the REPLY a twin of the server answers with.
    fn deliver(&mut self, from: u32, m: ToServer<Adict>) -> Result<Option<Reply<Adict>>, Refusal<Adict>> {
        let ToServer::Invoke(invoke) = m else { return self.s.deliver(from, m) };
        let mut twin = self.s.clone();
        let wire = self.s.on_invoke_wire(from, invoke.clone());
        let owned = twin.on_invoke(from, invoke);
        assert_eq!(wire, owned.map(|r| r.to_wire()), "the REPLY written from the maps");
        assert_eq!((twin.invoked(), twin.applied()), (self.s.invoked(), self.s.applied()));
        Ok(Some(Reply::from_wire(&wire?).expect("the server's own REPLY decodes")))
    }

    /// The server handles its next message, by priority.
    fn serve(&mut self) {
        let Some((from, m)) = self.inbox.next_for(&self.s) else {
            self.seen.held_invokes += usize::from(!self.inbox.is_empty());
            return;
        };
        let committed = matches!(m, ToServer::Commit(_)).then_some(());
        match self.deliver(from, m) {
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
                let own = self.c[i].own_update(&reply).filter(|_| self.setup.early);
                let (outcome, commit) = self.c[i].on_reply(*reply).expect("an honest server is never blamed");
                self.done.insert(commit.t, (self.in_flight.remove(&i).unwrap(), outcome));
                let stamps = (i as u32, self.invoked_at[&i], self.tick());
                self.stamps.insert(commit.t, stamps);
                let early = match own {
                    Some(own) => self.c[i].authenticate_own(own, &commit).expect("an honest server is never blamed"),
                    None => None,
                };
                self.send(i, ToServer::Commit(commit));
                if let Some(auth) = early {
                    self.seen.early_auths += 1;
                    self.send(i, ToServer::CommitAuth(auth));
                }
            }
            ToClient::UpdateAuth(m) => {
                assert!(m.ops.iter().all(|o| !Adict::is_query(&o.committed.op)), "a query's passive phase");
                for answer in self.c[i].on_update_auth(*m).expect("an honest server is never blamed") {
                    self.send(i, ToServer::CommitAuth(answer));
                }
            }
            ToClient::TakeOver(m) => {
                for commit in self.c[i].take_over(*m).expect("an honest server is never blamed") {
                    self.seen.takeover_aborts += 1;
                    let replaced = self.done.insert(commit.t, (commit.op.clone(), Outcome::Abort));
                    self.seen.lost_outputs += usize::from(replaced.is_some_and(|(_, o)| o != Outcome::Abort));
                    let failed = commit.client as usize;
                    let stamps = (commit.client, self.invoked_at[&failed], self.tick());
                    self.stamps.entry(commit.t).or_insert(stamps);
                    self.send(i, ToServer::Commit(commit));
                }
            }
        }
        self.reload(i);
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
    pub(super) fn run(&mut self, schedule: impl IntoIterator<Item = usize>) {
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
    pub(super) fn check_sequence_order(&self) {
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
                DictOp::ListPage { after, limit } => {
                    assert_eq!(response, &crate::aip::history::page(&model, *after, *limit))
                }
            }
        }
        let kept: BTreeMap<_, _> =
            self.s.state().entries().into_iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert_eq!(kept, model);
    }

    /// Linearizability proper (Sec. 2.1): the responses as the clients output them, with
    /// their real-time order, have a legal order ([`crate::aip::history::linearizable`]).
    pub(super) fn check_linearizable(&self) {
        self.check_sequence_order();
        let histories = self.histories();
        let order = crate::aip::history::linearizable(&histories).expect("an honest run is linearizable");
        assert_eq!(order.len(), self.done.len());
    }

    /// What each client output, in its order, with its stamps.
    pub(super) fn histories(&self) -> Histories<DictOp> {
        let mut h = Histories::new();
        for (t, (op, outcome)) in &self.done {
            let (client, invoked, returned) = self.stamps[t];
            let done = Completed { op: op.clone(), outcome: outcome.clone(), invoked, returned };
            h.entry(client).or_insert_with(Vec::new).push(done);
        }
        for ops in h.values_mut() {
            ops.sort_by_key(|c| c.invoked);
        }
        h
    }
}

/// A random ADICT operation over four keys.
pub(super) fn random_op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let key = (0u8..4).prop_map(|k| vec![b'k', b'0' + k]);
    prop_oneof![
        (key.clone(), any::<u8>()).prop_map(|(key, v)| DictOp::Put { key, value: vec![v] }),
        key.clone().prop_map(|key| DictOp::Get { key }),
        key.prop_map(|key| DictOp::Delete { key }),
        Just(DictOp::List),
        // A page of two from the start, or after one of the keys' paths.
        proptest::option::of(0u8..4)
            .prop_map(|k| DictOp::ListPage { after: k.map(|k| crate::adict::key_path(&[b'k', b'0' + k])), limit: 2 }),
    ]
}

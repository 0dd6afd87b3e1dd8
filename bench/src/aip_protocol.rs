//! AIP's own work per operation, in memory on one core (part of `vouch bench aip`): N members
//! and one server (paper 003, Alg. 1–3) hand each other every message in its wire encoding,
//! with no network, journal or object store. It shows what the protocol itself costs a
//! machine, apart from what its messages and storage cost (the VICOS part measures those).
//!
//! Lockstep rounds: every member invokes (the server answers each in turn, so a REPLY's `ω`
//! holds the round's earlier operations), then every member commits, and a committing member
//! authenticates the updates delegated to it (Sec. 3.7). A member's view thus spans a round of
//! the others' operations (`δ` ≈ N), as in a closed loop where each member has one operation
//! in flight. 80% reads; reads and writes on disjoint halves of 64 keys (Sec. 6).
//!
//! Also timed: the server rebuilt from every message it accepted, in order, as the provider
//! replays a group's journal after a restart or when an idle group is next used.

use crate::measure::SelfCheckFailed;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::time::{Duration, Instant};
use vouch_core::adict::Tree;
use vouch_core::aip::{
    Adict, Client, Commit, CommitAuth, DictOp, Invoke, Keyring, Mode, Outcome, Reply, Server, ServerError, ToServer,
    UpdateAuth, Wire,
};

const KEYS: usize = 64;
const READS_PCT: u32 = 80;

#[derive(Debug, Serialize)]
pub struct ProtocolPoint {
    pub members: usize,
    /// Operations timed (the best of the runs).
    pub ops: usize,
    /// The whole protocol's CPU time per operation, µs: members and server.
    pub us_per_op: f64,
    pub member_us_per_op: f64,
    pub server_us_per_op: f64,
    /// Mean REPLY size, bytes.
    pub reply_bytes: f64,
    pub aborted: usize,
    /// Accepted messages replayed into a fresh server per second (the whole run's, from the
    /// genesis), one core.
    pub replayed_per_s: f64,
}

/// One group in memory.
struct Group {
    server: Server<Adict>,
    members: Vec<Client<Adict>>,
    member_time: Duration,
    server_time: Duration,
    reply_bytes: usize,
    ops: usize,
    aborted: usize,
    /// Every message the server accepted, in order.
    accepted: Vec<(u32, ToServer<Adict>)>,
}

fn timed<T>(clock: &mut Duration, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    *clock += start.elapsed();
    out
}

fn failed(what: &str, e: impl std::fmt::Display) -> SelfCheckFailed {
    SelfCheckFailed(format!("aip protocol: {what}: {e}"))
}

impl Group {
    fn new(n: usize) -> Result<Group, SelfCheckFailed> {
        let keys = Keyring::hmac([0x5a; 32]);
        let server = Server::genesis(&keys, 0, DictOp::List, Tree::new()).map_err(|e| failed("genesis", e))?;
        let members = (0..n as u32).map(|i| Client::new(i, keys.clone(), Adict { mode: Mode::Compatible })).collect();
        let (member_time, server_time) = (Duration::ZERO, Duration::ZERO);
        let accepted = Vec::new();
        Ok(Group { server, members, member_time, server_time, reply_bytes: 0, ops: 0, aborted: 0, accepted })
    }

    /// One round: `ops[i]` for member `i` (those with one), every INVOKE first, then every
    /// COMMIT with the passive work it is handed.
    fn round(&mut self, ops: Vec<(usize, DictOp)>) -> Result<(), SelfCheckFailed> {
        let mut commits = Vec::with_capacity(ops.len());
        for (i, op) in ops {
            let from = i as u32;
            let (mt, st) = (&mut self.member_time, &mut self.server_time);
            let invoke = timed(mt, || self.members[i].invoke(op).map(|m| m.to_wire()));
            let invoke = invoke.map_err(|v| failed("invoke", v))?;
            let reply = timed(st, || {
                let m = Invoke::from_wire(&invoke).map_err(|e| failed("INVOKE", e))?;
                self.server.on_invoke_wire(from, m).map_err(|e| failed("on_invoke", e))
            })?;
            self.accepted.push((from, ToServer::Invoke(Invoke::from_wire(&invoke).expect("decoded before"))));
            self.reply_bytes += reply.len();
            let replied = timed(mt, || {
                let m = Reply::<Adict>::from_wire(&reply).map_err(|e| failed("REPLY", e))?;
                self.members[i].on_reply(m).map_err(|v| failed("on_reply", v))
            })?;
            let (outcome, commit) = replied;
            self.aborted += usize::from(matches!(outcome, Outcome::Abort));
            self.ops += 1;
            commits.push((i, commit.to_wire()));
        }
        for (i, commit) in commits {
            let from = i as u32;
            let (mt, st) = (&mut self.member_time, &mut self.server_time);
            let work = timed(st, || {
                let m = Commit::from_wire(&commit).map_err(|e| failed("COMMIT", e))?;
                let t = m.t;
                self.server.on_commit(from, m).map_err(|e| failed("on_commit", e))?;
                let work = self.server.delegate_auth(from).map_err(|e| failed("delegate", e))?;
                Ok::<_, SelfCheckFailed>((t, work.map(|w| w.to_wire())))
            })?;
            let (t, work) = work;
            // The log is kept outside the clock, from the bytes the server took.
            self.accepted.push((from, ToServer::Commit(Commit::from_wire(&commit).expect("decoded before"))));
            self.members[i].delivered(t);
            let Some(work) = work else { continue };
            let answers = timed(mt, || {
                let m = UpdateAuth::<Adict>::from_wire(&work).map_err(|e| failed("UPDATE-AUTH", e))?;
                let auths = self.members[i].on_update_auth(m).map_err(|v| failed("on_update_auth", v))?;
                Ok::<_, SelfCheckFailed>(auths.iter().map(Wire::to_wire).collect::<Vec<_>>())
            })?;
            let taken = timed(st, || {
                let mut taken = Vec::new();
                for answer in &answers {
                    let m = CommitAuth::from_wire(answer).map_err(|e| failed("COMMIT-AUTH", e))?;
                    match self.server.on_commit_auth(from, m) {
                        Ok(()) => taken.push(answer),
                        Err(ServerError::AlreadyAuthenticated { .. }) => {}
                        Err(e) => return Err(failed("on_commit_auth", e)),
                    }
                }
                Ok(taken)
            })?;
            for answer in taken {
                self.accepted
                    .push((from, ToServer::CommitAuth(CommitAuth::from_wire(answer).expect("decoded before"))));
            }
        }
        Ok(())
    }

    /// A fresh server, given every accepted message again; how long that took. Its state
    /// must be the live server's.
    fn replay(&self) -> Result<Duration, SelfCheckFailed> {
        let keys = Keyring::hmac([0x5a; 32]);
        let mut server: Server<Adict> =
            Server::genesis(&keys, 0, DictOp::List, Tree::new()).map_err(|e| failed("genesis", e))?;
        let start = Instant::now();
        for (from, m) in &self.accepted {
            let replayed = match m.clone() {
                ToServer::Invoke(m) => server.replay_invoke(*from, m).map(drop),
                ToServer::Commit(m) => server.on_commit(*from, m),
                ToServer::CommitAuth(m) => server.on_commit_auth(*from, m),
            };
            replayed.map_err(|e| failed("replay", e))?;
        }
        let took = start.elapsed();
        let same = (server.invoked(), server.applied(), server.state().root())
            == (self.server.invoked(), self.server.applied(), self.server.state().root());
        match same {
            true => Ok(took),
            false => Err(failed("replay", "the replayed server is not the live one")),
        }
    }

    fn reset_clocks(&mut self) {
        (self.member_time, self.server_time, self.reply_bytes, self.ops, self.aborted) =
            (Duration::ZERO, Duration::ZERO, 0, 0, 0);
    }
}

fn key(k: usize) -> Vec<u8> {
    format!("obj-{k:04}").into_bytes()
}

/// A round's operations: each member reads (the first half of the keys) or writes (the
/// second half) a 48-byte value, as VICOS's nonce and hash.
fn round_ops(n: usize, rng: &mut StdRng) -> Vec<(usize, DictOp)> {
    (0..n)
        .map(|i| {
            let k = rng.gen_range(0..KEYS / 2);
            let op = match rng.gen_range(0..100) < READS_PCT {
                true => DictOp::Get { key: key(k) },
                false => DictOp::Put { key: key(KEYS / 2 + k), value: vec![i as u8; 48] },
            };
            (i, op)
        })
        .collect()
}

/// `members` members for about `ops` timed operations, the best of `runs` groups.
pub(crate) fn point(members: usize, ops: usize, runs: usize) -> Result<ProtocolPoint, SelfCheckFailed> {
    let rounds = ops.div_ceil(members).max(2);
    let mut best: Option<ProtocolPoint> = None;
    for run in 0..runs.max(1) {
        let mut g = Group::new(members)?;
        let mut rng = StdRng::seed_from_u64(run as u64);
        // Untimed: every key written once, then one round so that every view spans a round.
        for first in (0..KEYS).step_by(members) {
            let ops = (first..KEYS.min(first + members))
                .map(|k| (k - first, DictOp::Put { key: key(k), value: vec![0; 48] }));
            g.round(ops.collect())?;
        }
        g.round(round_ops(members, &mut rng))?;
        g.reset_clocks();
        for _ in 0..rounds {
            g.round(round_ops(members, &mut rng))?;
        }
        let per_op = |d: Duration| d.as_secs_f64() * 1e6 / g.ops.max(1) as f64;
        let p = ProtocolPoint {
            members,
            ops: g.ops,
            us_per_op: per_op(g.member_time + g.server_time),
            member_us_per_op: per_op(g.member_time),
            server_us_per_op: per_op(g.server_time),
            reply_bytes: g.reply_bytes as f64 / g.ops.max(1) as f64,
            aborted: g.aborted,
            replayed_per_s: g.accepted.len() as f64 / g.replay()?.as_secs_f64(),
        };
        if best.as_ref().is_none_or(|b| p.us_per_op < b.us_per_op) {
            best = Some(p);
        }
    }
    best.ok_or_else(|| failed("runs", "none"))
}

pub(crate) fn to_text(points: &[ProtocolPoint]) -> String {
    let mut out = "AIP protocol work per operation, in memory, one core (lockstep rounds, 80% reads):\n".to_string();
    for p in points {
        out += &format!(
            "  {:>3} members: {:>7.1} µs/op (members {:>6.1}, server {:>6.1}), REPLY {:>6.0} B, {} aborted of {}; \
             replay {:.0} messages/s\n",
            p.members,
            p.us_per_op,
            p.member_us_per_op,
            p.server_us_per_op,
            p.reply_bytes,
            p.aborted,
            p.ops,
            p.replayed_per_s
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_grow_with_the_members_and_every_operation_is_counted() {
        let (one, many) = (point(1, 40, 1).unwrap(), point(8, 40, 1).unwrap());
        assert_eq!((one.ops, many.ops), (40, 40));
        assert!(one.us_per_op > 0.0 && many.member_us_per_op > 0.0 && many.server_us_per_op > 0.0);
        // Each REPLY of 8 members shows about a round of the other 7's operations, each with
        // at least its 32-byte signature.
        let more = many.reply_bytes - one.reply_bytes;
        assert!(more > 7.0 * 32.0, "{} vs {}", many.reply_bytes, one.reply_bytes);
        assert!(one.replayed_per_s > 0.0 && many.replayed_per_s > 0.0);
    }
}

//! One run: a seed sets up the clients, the provider and the adversary, then picks each step
//! (a client operation, or an adversary's action between operations) and checks the
//! invariants after it.

use super::adversary::{Adversary, SimLink};
use super::model::{Model, Value};
use super::providers::Providers;
use super::report::{Coverage, Invariant, RunReport, SimFailure};
use super::s3app::S3App;
use super::strategy::{Action, Strategy};
use crate::Rng;
use std::sync::Arc;
use vouch_client::vicos::Group;
use vouch_client::{Client, ClientError, ClientKey, ClientState, MemoryState, Remote, Transport};
use vouch_core::aip::{Keyring, Mode};
use vouch_core::pdp::linear::LinearKey;
use vouch_proto::Op;

/// The clients of the provider, by token: two file owners and two members of one group.
pub(super) const TOKENS: [(&str, &str); 5] =
    [("sim-alice", "alice"), ("sim-bob", "bob"), ("sim-m0", "m0"), ("sim-m1", "m1"), ("sim-gw", "gw")];
pub(super) const FILES: [&str; 3] = ["f0", "f1", "f2"];
pub(super) const POR_FILES: [&str; 2] = ["p0", "p1"];
pub(super) const KEYS: [&[u8]; 3] = [b"k0", b"k1", b"k2"];
pub(super) const BLOCK: Option<usize> = Some(1024);
/// Mixed into a seed for the schedule's own choices ([`Strategy::Delay`]).
const SCHEDULE_SEED: u64 = 0x5c4e_d01e_de1a_7ed0;
/// Mixed into a seed for the choices of [`Strategy::HoldBatch`].
const HOLD_SEED: u64 = 0x401d_ba7c_4e1d_0001;
/// Mixed into a seed for whether a run's file owners put several names at once (a group
/// commit), and for those puts' choices: apart from the main stream, so that the runs without
/// them are the runs they were. This constant leaves the regression seeds of earlier holes
/// without them.
const GROUP_PUTS_SEED: u64 = 0x6a0c_0111_7ed0_017c;
/// Mixed into a seed for the choices of PoR removals and prunes.
const FREES_SEED: u64 = 0xf7ee_5107_0c0b_0002;
/// Mixed into a seed for whether [`Strategy::HoldBatch`] is a run's only lie.
const SOLO_SEED: u64 = 0x5010_ba7c_4e1d_0004;
/// Mixed into a seed for whether a run where [`Strategy::HoldBatch`] is the only lie has no
/// honest fault either (drawn apart, so that the other solo runs stay what they were; this
/// constant leaves the solo runs of the regression seeds of earlier holes as they were).
const QUIET_SEED: u64 = 0x9e1e_7ba7_c4e1_0007;
/// The stream of [`Strategy::HoldBatch`]'s answers to "which slots are free".
const FREE_ANSWERS_SEED: u64 = 0xf7ee_a115_0e75_0003;
/// The operations an adversary may go after in a run.
const FOCUS: [Op; 12] = [
    Op::Stage,
    Op::CommitStaged,
    Op::Read,
    Op::Edit,
    Op::Audit,
    Op::PorStatus,
    Op::PorWrite,
    Op::PorLabel,
    Op::PorAudit,
    Op::AipInvoke,
    Op::AipCommit,
    Op::CosGet,
];

/// A file owner: its client (rebuilt over the same state on a restart) and its truth.
pub(super) struct Owner {
    pub(super) token: &'static str,
    pub(super) secret: u8,
    pub(super) store: Arc<MemoryState>,
    pub(super) client: Arc<Client>,
    pub(super) model: Model,
}

/// A group member.
pub(super) struct Member {
    pub(super) group: Arc<Group>,
    /// Which branch of the group's truth it sees (1 during a fork, for the forked member).
    pub(super) branch: usize,
    /// It caught the provider: it takes no more operations.
    pub(super) done: bool,
    /// It finished an operation on a fork's branch, and the branches met since: it must not
    /// finish another without catching the fork (invariant 4).
    pub(super) owes_detection: bool,
}

/// What the run is in the middle of.
pub(super) struct Run {
    pub(super) seed: u64,
    pub(super) rng: Rng,
    /// The choices of concurrent operations ([`Strategy::Delay`]), apart from `rng`.
    pub(super) schedule: Rng,
    /// The choices of PoR removals and prunes, apart from `rng` (see [`Run::por_free_step`]).
    pub(super) frees: Rng,
    /// Percent of PoR steps followed by a removal or a prune.
    pub(super) free_rate: u64,
    /// In the runs whose file owners put several names at once, the choices of those puts.
    pub(super) group_puts: Option<Rng>,
    pub(super) adversary: Arc<tokio::sync::Mutex<Adversary>>,
    pub(super) link: SimLink,
    pub(super) owners: Vec<Owner>,
    pub(super) members: Vec<Member>,
    /// The group's truth: the main history, and a fork's branch.
    pub(super) groups: [Model; 2],
    /// Every value a member tried to put, by key.
    pub(super) group_writes: Vec<(String, Vec<u8>)>,
    /// During a fork: the forked member finished an operation on the branch (`Some(true)`),
    /// or left one whose fate is unknown (`Some(false)`: no detection is owed).
    pub(super) fork_state: Option<ForkState>,
    /// The S3 application through the gateway, in the runs that have one, and the percent of
    /// steps that are its.
    pub(super) s3: Option<S3App>,
    pub(super) s3_share: u64,
    pub(super) honest: bool,
    /// [`Strategy::HoldBatch`] is the only thing the adversary does besides honest actions.
    pub(super) quiet: bool,
    /// A PoR put was tried: the log may exist.
    pub(super) por_started: bool,
    /// This run's weights of adversary actions, file, PoR and group steps: each run leans its
    /// own way (swarm testing), so that rare combinations come up in some runs often.
    pub(super) mix: [u64; 4],
    pub(super) step: usize,
    pub(super) trace: Vec<String>,
    pub(super) coverage: Coverage,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ForkState {
    pub(super) completed: bool,
    pub(super) uncertain: bool,
}

/// How an operation ended, as the invariants see it.
pub(super) enum Ended<T> {
    Ok(T),
    NotFound(String),
    /// The client caught a lie.
    Violation(String),
    /// An outage, a refusal, a timeout: the operation may or may not have been applied.
    Fault(String),
}

impl<T> Ended<T> {
    pub(super) fn map<U>(self, f: impl FnOnce(T) -> U) -> Ended<U> {
        match self {
            Ended::Ok(t) => Ended::Ok(f(t)),
            Ended::NotFound(m) => Ended::NotFound(m),
            Ended::Violation(m) => Ended::Violation(m),
            Ended::Fault(m) => Ended::Fault(m),
        }
    }
}

pub(super) fn ended<T>(result: Result<T, ClientError>) -> Ended<T> {
    match result {
        Ok(t) => Ended::Ok(t),
        Err(ClientError::NotFound(message)) => Ended::NotFound(message),
        Err(e) if e.violation_kind().is_some() => Ended::Violation(e.to_string()),
        Err(e) => Ended::Fault(e.to_string()),
    }
}

fn remote(link: &SimLink, token: &str) -> Remote {
    Remote::linked(Arc::new(link.clone()), "sim://provider", token, &Transport::default())
}

/// Owner `secret`'s tag key: derived once per process (a derivation costs more than a step).
fn tag_key(secret: u8) -> ClientKey {
    static KEYS: std::sync::OnceLock<Vec<LinearKey>> = std::sync::OnceLock::new();
    let keys = KEYS.get_or_init(|| (1..=TOKENS.len() as u8).map(|s| LinearKey::from_secret([s; 32])).collect());
    ClientKey::Linear(keys[secret as usize - 1].clone())
}

pub(super) fn owner_client(
    link: &SimLink,
    token: &str,
    secret: u8,
    store: &Arc<MemoryState>,
) -> Result<Client, String> {
    let state = ClientState { key: tag_key(secret), store: store.clone() };
    Client::new(state, remote(link, token)).map_err(|e| format!("a client over its state: {e}"))
}

/// An owner's client over any link, with the simulator's transport settings for it.
pub(super) fn owner_client_over(
    link: Arc<dyn vouch_client::Link>,
    token: &str,
    secret: u8,
    store: &Arc<MemoryState>,
) -> Result<Client, String> {
    let remote = Remote::linked(link, "sim://copy", token, &Transport::default());
    let state = ClientState { key: tag_key(secret), store: store.clone() };
    Client::new(state, remote).map_err(|e| format!("a client over its state: {e}"))
}

/// Runs `seed` for `steps` steps; `Err` names the invariant broken.
pub(super) async fn run(seed: u64, steps: usize) -> Result<RunReport, SimFailure> {
    let mut run = Run::new(seed).await.map_err(|e| SimFailure {
        seed,
        step: 0,
        invariant: Invariant::HonestFaultsAreNotLies,
        detail: format!("setting up: {e}"),
        trace: Vec::new(),
    })?;
    for step in 1..=steps {
        run.step = step;
        run.one_step().await?;
        run.take_log().await;
    }
    run.settle_down().await?;
    let adversary = run.adversary.lock().await;
    let mut coverage = std::mem::take(&mut run.coverage);
    for (strategy, n) in &adversary.used {
        coverage.strategy(*strategy, *n);
    }
    for (op, n) in &adversary.ops {
        *coverage.provider_ops.entry(op.clone()).or_default() += n;
    }
    coverage.runs = 1;
    coverage.honest_runs = run.honest as u64;
    coverage.steps = steps as u64;
    drop(adversary);
    Ok(RunReport { coverage, trace: std::mem::take(&mut run.trace) })
}

impl Run {
    pub(super) async fn new(seed: u64) -> Result<Run, String> {
        let mut rng = Rng::new(seed);
        // Four runs in ten see honest faults only: there, any violation is a false alarm.
        let honest = rng.percent(40);
        let pool: Vec<Strategy> = match honest {
            true => Strategy::HONEST_FAULTS.to_vec(),
            false => Strategy::ALL[1..].iter().copied().filter(|s| !s.is_scheduled()).collect(),
        };
        let mut strategies: Vec<Strategy> = pool.iter().copied().filter(|_| rng.percent(50)).collect();
        if strategies.is_empty() {
            strategies.extend(rng.pick(&pool));
        }
        // Drawn apart, so that a seed's other choices stay what they were before delays came.
        let mut schedule = Rng::new(seed ^ SCHEDULE_SEED);
        if schedule.percent(50) {
            strategies.push(Strategy::Delay);
        }
        let rate = 3 + rng.below(20);
        let focus = rng.percent(30).then(|| *rng.pick(&FOCUS).unwrap_or(&FOCUS[0]));
        let mut mix = [1 + rng.below(3), 3 + rng.below(8), 1 + rng.below(4), 2 + rng.below(9)];
        let providers = Providers::new(&TOKENS).await?;
        // Drawn apart too, for the same reason.
        let mut hold = Rng::new(seed ^ HOLD_SEED);
        let (mut free_rate, mut solo, mut quiet) = (12, false, false);
        if !honest && hold.percent(50) {
            strategies.push(Strategy::HoldBatch);
            // Now and then its only lie (swarm testing): a held batch's lie takes several of
            // the client's steps to play out, and any other lie caught on the way ends it.
            // Most of its steps then go to the PoR log, and free slots (where a copy tried
            // again may go) are more common.
            if Rng::new(seed ^ SOLO_SEED).percent(25) {
                strategies.retain(|s| s.is_honest() || *s == Strategy::HoldBatch);
                mix[2] += 12;
                (free_rate, solo) = (35, true);
                // Half of those with no honest fault either, and only honest actions: its
                // lies take five or six PoR operations in a row that go through (a copy refused
                // and kept, tried again elsewhere, a later copy, a removal, an audit), which
                // a fault every few messages would rarely leave whole.
                quiet = Rng::new(seed ^ QUIET_SEED).percent(50);
                if quiet {
                    strategies.retain(|s| s.is_scheduled());
                    mix[0] = 1;
                }
            }
        }
        let mut group_puts = Rng::new(seed ^ GROUP_PUTS_SEED);
        let group_puts = group_puts.percent(30).then_some(group_puts);
        let mut adversary = Adversary::new(providers, Rng::new(rng.next_u64()), strategies, rate, focus);
        adversary.hold = hold;
        adversary.free_answers = Rng::new(seed ^ FREE_ANSWERS_SEED);
        if quiet {
            adversary.names_none = 80;
        }
        let adversary = Arc::new(tokio::sync::Mutex::new(adversary));
        let link = SimLink(adversary.clone());
        let mut owners = Vec::new();
        for (i, (token, _)) in TOKENS[..2].iter().enumerate() {
            let store = Arc::new(MemoryState::new(vouch_client::state::Root::empty()));
            let secret = 1 + i as u8;
            let client = Arc::new(owner_client(&link, token, secret, &store)?);
            owners.push(Owner { token, secret, store, client, model: Model::default() });
        }
        // The group is made before the adversary acts.
        adversary.lock().await.active = false;
        let keys = Keyring::hmac([5; 32]);
        let m0 = Group::create(remote(&link, TOKENS[2].0), "g", 0, keys.clone(), Mode::Compatible, None)
            .await
            .map_err(|e| format!("creating the group: {e}"))?;
        let m1 = Group::join(remote(&link, TOKENS[3].0), "g", 1, keys, Mode::Compatible);
        // Both members speak once before the adversary acts, so that each is admitted on the
        // live state (a fork's branch would otherwise be the only state that knows a member).
        m1.list().await.map_err(|e| format!("the second member's first list: {e}"))?;
        let s3_share = match schedule.percent(50) {
            true => 10 + schedule.below(20),
            false => 0,
        };
        let s3 = match s3_share {
            0 => None,
            _ => {
                let store = Arc::new(MemoryState::new(vouch_client::state::Root::empty()));
                let client = owner_client(&link, TOKENS[4].0, TOKENS.len() as u8, &store)?;
                Some(S3App::new(Arc::new(client)).await?)
            }
        };
        adversary.lock().await.active = true;
        let members = vec![
            Member { group: Arc::new(m0), branch: 0, done: false, owes_detection: false },
            Member { group: Arc::new(m1), branch: 0, done: false, owes_detection: false },
        ];
        let trace = vec![format!(
            "seed {seed}: honest faults only: {honest}; going after: {focus:?}; HoldBatch its only lie: {solo}{}",
            if quiet { ", with no honest fault" } else { "" }
        )];
        Ok(Run {
            seed,
            rng,
            schedule,
            frees: Rng::new(seed ^ FREES_SEED),
            free_rate,
            group_puts,
            adversary,
            link,
            owners,
            members,
            groups: [Model::default(), Model::default()],
            group_writes: Vec::new(),
            fork_state: None,
            s3,
            s3_share,
            honest,
            quiet,
            por_started: false,
            mix,
            step: 0,
            trace,
            coverage: Coverage::default(),
        })
    }

    pub(super) fn fail(&self, invariant: Invariant, detail: impl Into<String>) -> SimFailure {
        let mut trace = self.trace.clone();
        if let Ok(adversary) = self.adversary.try_lock() {
            trace.extend(adversary.log.iter().map(|line| format!("{}: {line}", self.step)));
        }
        SimFailure { seed: self.seed, step: self.step, invariant, detail: detail.into(), trace }
    }

    /// The adversary's choices in the last step, into the trace.
    pub(super) async fn take_log(&mut self) {
        let lines = std::mem::take(&mut self.adversary.lock().await.log);
        for line in lines {
            self.note(line);
        }
    }

    /// Adds a line to the trace. Long hex runs (an object's random nonce in a message) are
    /// elided, so that a replay's trace is the same line for line.
    pub(super) fn note(&mut self, line: String) {
        let line = elide_hex(&line);
        self.trace.push(format!("{}: {line}", self.step));
    }

    /// A violation the client reported: fine once the provider lied, a false alarm before.
    pub(super) async fn caught(&mut self, what: &str, message: &str) -> Result<(), SimFailure> {
        self.coverage.caught += 1;
        self.note(format!("{what}: caught: {message}"));
        if !self.adversary.lock().await.lied {
            return Err(self.fail(
                Invariant::HonestFaultsAreNotLies,
                format!("{what} reported a violation, but the provider has only had honest faults: {message}"),
            ));
        }
        Ok(())
    }

    pub(super) async fn one_step(&mut self) -> Result<(), SimFailure> {
        if self.s3_share > 0 && self.schedule.below(100) < self.s3_share {
            return self.gateway_step().await;
        }
        let [actions, files, por, groups] = self.mix;
        let roll = self.rng.below(actions + files + por + groups);
        match roll {
            r if r < actions => self.action().await,
            r if r < actions + files => self.file_step().await,
            r if r < actions + files + por => self.por_step().await,
            _ => self.group_step().await,
        }
    }

    // ---- the adversary between operations ----

    pub(super) async fn action(&mut self) -> Result<(), SimFailure> {
        let choices: &[Action] = match self.honest || self.quiet {
            true => &[Action::Snapshot, Action::Crash],
            false => &Action::ALL,
        };
        let Some(&action) = self.rng.pick(choices) else { return Ok(()) };
        let mut adversary = self.adversary.lock().await;
        let done = match action {
            Action::Snapshot => adversary.providers.snapshot().map(|()| true),
            Action::Crash => adversary.restart().await.map(|()| true),
            Action::LoseBlob | Action::CorruptBlob => {
                let blobs = adversary.providers.blobs();
                match blobs.is_empty() {
                    true => Ok(false),
                    false => {
                        let blob = &blobs[self.rng.below(blobs.len() as u64) as usize];
                        adversary.lied = true;
                        adversary.damaged_on_disk = true;
                        let key = blob.components().rev().take(3).collect::<Vec<_>>();
                        let key: Vec<String> =
                            key.iter().rev().map(|c| c.as_os_str().to_string_lossy().into()).collect();
                        adversary.log.push(format!("  {action:?}: .../{}", key.join("/")));
                        damage(blob, action, &mut self.rng).map(|()| true)
                    }
                }
            }
            Action::Fork if !adversary.providers.forked() && !self.members[1].done => {
                adversary.lied = true;
                adversary.providers.fork(TOKENS[3].0).await.map(|()| true)
            }
            Action::Join if adversary.providers.forked() => Ok(adversary.providers.join()),
            Action::Fork | Action::Join => Ok(false),
        };
        drop(adversary);
        let done = done.map_err(|e| self.fail(Invariant::HonestFaultsAreNotLies, e))?;
        if !done {
            return Ok(());
        }
        self.coverage.action(action);
        self.note(format!("{action:?}"));
        match action {
            Action::Crash => self.owners.iter_mut().for_each(|o| o.model.crashed()),
            Action::Fork => {
                self.members[1].branch = 1;
                self.groups[1] = self.groups[0].clone();
                self.fork_state = Some(ForkState::default());
            }
            Action::Join => self.joined(),
            _ => {}
        }
        Ok(())
    }

    /// The branches met: a member that finished an operation on its branch owes the
    /// detection of the fork at its next operation that gets an answer (invariant 4).
    pub(super) fn joined(&mut self) {
        let state = self.fork_state.take().unwrap_or_default();
        let member = &mut self.members[1];
        member.branch = 0;
        // Something it did on the branch whose fate is unknown leaves its truth unknown too.
        member.done |= state.uncertain;
        member.owes_detection = state.completed && !state.uncertain;
    }

    // ---- the end of a run ----

    /// With the adversary gone, every owner reads back every name as the truth allows; in a
    /// run of honest faults only, nothing may fail (the client can always go on).
    pub(super) async fn settle_down(&mut self) -> Result<(), SimFailure> {
        self.step += 1;
        self.adversary.lock().await.active = false;
        for o in 0..self.owners.len() {
            for name in FILES.iter().chain(POR_FILES.iter()) {
                let mut out = Vec::new();
                let result = self.owners[o].client.get(name, None, None, &mut out).await;
                let label = format!("{} final get {name}", self.owners[o].token);
                match ended(result) {
                    Ended::Ok(_) => self.check(o, &label, name, &Some(out))?,
                    Ended::NotFound(_) => self.check(o, &label, name, &None)?,
                    Ended::Violation(e) | Ended::Fault(e) if self.honest => {
                        return Err(self.fail(
                            Invariant::HonestFaultsAreNotLies,
                            format!("{label}: the client cannot go on after honest faults: {e}"),
                        ));
                    }
                    Ended::Violation(_) | Ended::Fault(_) => {}
                }
            }
        }
        if self.honest
            && self.owners[0]
                .model
                .possible(POR_FILES[0])
                .iter()
                .chain(self.owners[0].model.possible(POR_FILES[1]).iter())
                .any(Option::is_some)
        {
            let result = self.owners[0].client.por().audit(32).await;
            let why = match ended(result) {
                Ended::Ok(report) if report.verified => None,
                Ended::Ok(_) => Some("the audit failed".to_string()),
                Ended::NotFound(_) => Some("not found".to_string()),
                Ended::Violation(e) | Ended::Fault(e) => Some(e),
            };
            if let Some(why) = why {
                return Err(self.fail(
                    Invariant::HonestFaultsAreNotLies,
                    format!("the final PoR audit after honest faults only: {why}"),
                ));
            }
        }
        self.s3_settle_down().await
    }
}

pub(super) fn describe(value: &Value) -> String {
    match value {
        None => "absent".into(),
        Some(bytes) => format!("{} bytes ({:02x?}..)", bytes.len(), &bytes[..bytes.len().min(4)]),
    }
}

/// Loses `blob`, or flips one bit of it.
fn damage(blob: &std::path::Path, action: Action, rng: &mut Rng) -> Result<(), String> {
    let why = |e: std::io::Error| format!("damaging {}: {e}", blob.display());
    match action {
        Action::LoseBlob => std::fs::remove_file(blob).map_err(why),
        _ => {
            let mut bytes = std::fs::read(blob).map_err(why)?;
            if bytes.is_empty() {
                return Ok(());
            }
            let at = rng.below(bytes.len() as u64) as usize;
            bytes[at] ^= 1 << rng.below(8);
            std::fs::write(blob, bytes).map_err(why)
        }
    }
}

/// `line` with every run of 16 or more hex digits shortened to its first 4 and "…".
fn elide_hex(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut run = String::new();
    for c in line.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_hexdigit() {
            run.push(c);
            continue;
        }
        match run.len() >= 16 {
            true => {
                out.push_str(&run[..4]);
                out.push('…');
            }
            false => out.push_str(&run),
        }
        run.clear();
        out.push(c);
    }
    out.pop();
    out
}

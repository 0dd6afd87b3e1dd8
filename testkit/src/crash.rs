//! Crash loops of the real processes (#45): `kill -9` a real `vouch` process at a random instant
//! while it works, start it again, and check what an honest crash may and may not do.
//!
//! - Nothing acknowledged is lost: every change whose command exited 0 reads back byte for byte,
//!   its older versions too.
//! - Nothing half-written is served: a change cut short reads back as before it or after it
//!   (or not found, where there was nothing before), never anything else; a cut-short `get -o`
//!   leaves no output file.
//! - No honest crash is reported as a lie: no command exits 3 ([`EXIT_MISBEHAVED`]).
//! - Every restart converges: after the restart, reads, listings and audits succeed.
//!
//! Three processes can be the one killed ([`Component`]): the provider (`vouch serve`) under a
//! client's puts, edits, PoR puts, gets, audits and repairs; the S3 gateway (`vouch gateway`)
//! under PUT, GET, DELETE and multipart uploads; and a VICOS group member (`vouch obj ...`)
//! itself. The driver keeps a model of what was acknowledged ([`model`]) and checks every read
//! against it. Its only randomness (what to do, how long to wait before the kill) comes from
//! [`CrashPlan::seed`], which every [`CrashFailure`] names so a failure can be replayed (the
//! timing of the processes themselves is not replayable, so a replay may need a few runs).
//!
//! The driver is synchronous and needs nothing but the `vouch` binary: the processes run over
//! temporary directories on free loopback ports, and the gateway is spoken to by a small SigV4
//! client of its own ([`s3`]).

use crate::Rng;
use std::fmt;
use std::path::Path;

mod gateway;
mod member;
pub mod model;
mod procs;
mod provider;
pub(crate) mod s3;
mod setup;

/// Exit code of a `vouch` command that caught the provider misbehaving (docs/exit-codes.md).
pub const EXIT_MISBEHAVED: i32 = 3;

/// Which process the loop kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// `vouch serve`, killed under a client's commands.
    Provider,
    /// `vouch gateway`, killed under S3 requests.
    Gateway,
    /// A VICOS group member: a `vouch obj ...` command killed itself.
    Member,
}

impl Component {
    /// The name `vouch sim --processes --component NAME` takes.
    pub fn name(self) -> &'static str {
        match self {
            Component::Provider => "provider",
            Component::Gateway => "gateway",
            Component::Member => "member",
        }
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Component {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "provider" => Ok(Component::Provider),
            "gateway" => Ok(Component::Gateway),
            "member" => Ok(Component::Member),
            other => Err(format!("unknown component {other:?}: provider, gateway or member")),
        }
    }
}

/// One crash loop: which process, how many kills, and the seed of every choice.
#[derive(Clone, Debug)]
pub struct CrashPlan {
    pub component: Component,
    /// Kills to make; each is followed by a restart and a full check.
    pub kills: usize,
    pub seed: u64,
    /// The largest file or object a step writes, in bytes (the smallest is a few KB).
    pub max_bytes: usize,
    /// Print a line per kill on stderr (for long runs).
    pub verbose: bool,
    /// A deliberate fault, to show that the loop catches a real loss (provider loops only).
    pub sabotage: Option<Sabotage>,
}

/// A deliberate fault, made while the provider is down after a kill: what an honest crash
/// must never do. A loop with one must fail; a test that it does shows the checks can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sabotage {
    /// After kill `at_kill`, the provider's data directory is emptied before the restart. The
    /// client's own checks catch the loss (its root proves what the provider no longer has),
    /// so the loop fails with [`Violated::Misbehaved`].
    WipeProvider { at_kill: usize },
    /// As `WipeProvider`, and the client's state is made again from nothing, so no check of
    /// the client stands between the loss and the loop: its model must catch it
    /// ([`Violated::Lost`]).
    ForgetEverything { at_kill: usize },
}

impl CrashPlan {
    /// A plan with the default sizes (up to 512 KiB per file), quiet.
    pub fn new(component: Component, kills: usize, seed: u64) -> CrashPlan {
        CrashPlan { component, kills, seed, max_bytes: 512 * 1024, verbose: false, sabotage: None }
    }
}

/// What a loop did, when nothing was violated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Processes killed with SIGKILL.
    pub kills: usize,
    /// Of those, kills that landed while the command under them was still running.
    pub kills_mid_operation: usize,
    /// Commands (or S3 requests) that succeeded, and whose effect the model then holds.
    pub acknowledged: usize,
    /// Commands cut short by a kill (their effect may or may not have happened).
    pub interrupted: usize,
    /// Processes started again after a kill (for a member: its next command).
    pub restarts: usize,
    /// Reads, listings and audits compared with the model or required to pass.
    pub checks: usize,
    /// Answers of "try again" after a restart that the loop sent again, as a user would: a
    /// gateway's 503, a VICOS operation aborted (exit 8) on another member's pending one.
    pub retries: usize,
}

impl fmt::Display for CrashReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} kills ({} mid-operation), {} acknowledged, {} interrupted, {} restarts, {} checks, {} retries",
            self.kills,
            self.kills_mid_operation,
            self.acknowledged,
            self.interrupted,
            self.restarts,
            self.checks,
            self.retries
        )
    }
}

/// A crash loop that found something wrong (or could not run), with the seed to replay it.
#[derive(Debug)]
pub struct CrashFailure {
    pub component: Component,
    pub seed: u64,
    /// The kill after which it happened: 0 while setting up, 1 for the first kill, ...
    pub kill: usize,
    pub violated: Violated,
}

/// What a crash loop found wrong.
#[derive(Debug)]
pub enum Violated {
    /// An acknowledged write reads back otherwise, or not at all.
    Lost { what: String, detail: String },
    /// A write cut short reads back as neither the state before it nor the one after it.
    HalfWritten { what: String, detail: String },
    /// A command reported the honest provider as misbehaving (exit 3).
    Misbehaved { command: String, stderr: String },
    /// A command after the restart failed: the system did not converge.
    NotConverged { command: String, code: Option<i32>, stderr: String },
    /// A command neither finished nor failed within its deadline.
    Hung { command: String },
    /// The provider's own check of its store (`vouch serve --check`) failed after a kill.
    StoreCheck { report: String },
    /// The loop itself could not run (a process would not start, a temporary file failed).
    Harness(String),
}

impl fmt::Display for Violated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violated::Lost { what, detail } => write!(f, "acknowledged {what} lost: {detail}"),
            Violated::HalfWritten { what, detail } => {
                write!(f, "{what} cut short reads back half-written: {detail}")
            }
            Violated::Misbehaved { command, stderr } => {
                write!(f, "an honest crash reported as a violation (exit 3) by `{command}`: {}", stderr.trim())
            }
            Violated::NotConverged { command, code, stderr } => write!(
                f,
                "no convergence after the restart: `{command}` exited {}: {}",
                code.map_or_else(|| "by a signal".to_string(), |c| c.to_string()),
                stderr.trim()
            ),
            Violated::Hung { command } => write!(f, "`{command}` did not finish in time"),
            Violated::StoreCheck { report } => write!(f, "`vouch serve --check` failed after the kill: {report}"),
            Violated::Harness(why) => write!(f, "the crash loop could not run: {why}"),
        }
    }
}

impl fmt::Display for CrashFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "crash loop of the {} (seed {}, kill {}): {} [replay: vouch sim --processes --component {} --seed {} --kills {}]",
            self.component, self.seed, self.kill, self.violated, self.component, self.seed, self.kill.max(1)
        )
    }
}

impl std::error::Error for CrashFailure {}

/// Runs the crash loop `plan` describes with the `vouch` binary at `vouch`.
pub fn run(vouch: &Path, plan: &CrashPlan) -> Result<CrashReport, CrashFailure> {
    let mut cx = Cx { plan: plan.clone(), rng: Rng::new(plan.seed), kill: 0, report: CrashReport::default() };
    let outcome = match plan.component {
        Component::Provider => provider::run(vouch, &mut cx),
        Component::Member => member::run(vouch, &mut cx),
        Component::Gateway => gateway::run(vouch, &mut cx),
    };
    match outcome {
        Ok(()) => Ok(cx.report),
        Err(violated) => Err(CrashFailure { component: plan.component, seed: plan.seed, kill: cx.kill, violated }),
    }
}

/// What every component's loop carries: the plan, its randomness, where it is, what it did.
pub(crate) struct Cx {
    pub plan: CrashPlan,
    pub rng: Rng,
    /// The kill being made or checked (0 while setting up).
    pub kill: usize,
    pub report: CrashReport,
}

impl Cx {
    /// Prints a progress line when the plan asks for it.
    pub fn say(&self, line: impl fmt::Display) {
        if self.plan.verbose {
            eprintln!(
                "[crash {} seed {} kill {}/{}] {line}",
                self.plan.component, self.plan.seed, self.kill, self.plan.kills
            );
        }
    }

    /// A file size: mostly small, sometimes up to the plan's largest.
    pub fn size(&mut self) -> usize {
        let max = self.plan.max_bytes.max(4096);
        if self.rng.below(4) == 0 {
            4096 + self.rng.below((max - 4096 + 1) as u64) as usize
        } else {
            1 + self.rng.below((max / 8).max(4096) as u64) as usize
        }
    }

    /// Fresh file contents of `len` bytes, different on every call.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        crate::sample(len, self.rng.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_its_seed_and_kill() {
        let failure = CrashFailure {
            component: Component::Provider,
            seed: 42,
            kill: 3,
            violated: Violated::Lost { what: "f1 version 2".into(), detail: "read back 10 bytes, not 20".into() },
        };
        let text = failure.to_string();
        assert!(text.contains("seed 42") && text.contains("kill 3") && text.contains("f1 version 2"), "{text}");
        assert_eq!("member".parse::<Component>(), Ok(Component::Member));
        assert!("nothing".parse::<Component>().is_err());
    }
}

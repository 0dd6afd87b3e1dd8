//! What a run checks and reports: the invariants, by name; a failure with its seed; and what
//! a run exercised.

use super::strategy::{Action, Strategy};
use std::collections::BTreeMap;

/// The invariants checked after every step (issue #45), each its own named check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    /// 1. No client accepts a byte, length, listing or "not found" the honest history does
    ///    not give it.
    AcceptsOnlyTheTruth,
    /// 2. An audit that passes implies the data it covers can be recovered from what the
    ///    provider still holds (for PoR, also from H and C alone: see `without_u`).
    AuditMeansRecoverable,
    /// 3. Honest faults never produce a violation, and the client can always go on.
    HonestFaultsAreNotLies,
    /// 4. A member shown a forked history detects it at its first operation after the
    ///    branches meet.
    ForksAreCaught,
    /// 5. Nothing acknowledged is lost across crashes.
    AcknowledgedSurvivesCrashes,
}

/// A run that broke an invariant: replay it with its seed.
#[derive(Clone, Debug)]
pub struct SimFailure {
    pub seed: u64,
    pub step: usize,
    pub invariant: Invariant,
    pub detail: String,
    /// The run up to the failure, one line per step.
    pub trace: Vec<String>,
}

impl std::fmt::Display for SimFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "seed {} broke {:?} at step {}: {}", self.seed, self.invariant, self.step, self.detail)?;
        writeln!(f, "replay: vouch sim --seed {}", self.seed)?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SimFailure {}

/// One run that held every invariant: what it exercised, and its trace.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub coverage: Coverage,
    /// One line per step: the operation and its outcome, and what the adversary did.
    pub trace: Vec<String>,
}

/// What runs exercised: strategies per message, actions between operations, the provider's
/// operations, and each client operation with its outcome (`put:ok`, `get:violation`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Coverage {
    pub runs: u64,
    pub honest_runs: u64,
    pub steps: u64,
    pub strategies: BTreeMap<String, u64>,
    pub actions: BTreeMap<String, u64>,
    pub provider_ops: BTreeMap<String, u64>,
    pub outcomes: BTreeMap<String, u64>,
    /// Lies (violations) clients caught.
    pub caught: u64,
}

impl Coverage {
    pub(super) fn strategy(&mut self, strategy: Strategy, n: u64) {
        *self.strategies.entry(format!("{strategy:?}")).or_default() += n;
    }

    pub(super) fn action(&mut self, action: Action) {
        *self.actions.entry(format!("{action:?}")).or_default() += 1;
    }

    pub(super) fn outcome(&mut self, what: &str) {
        *self.outcomes.entry(what.to_string()).or_default() += 1;
    }

    pub fn merge(&mut self, other: &Coverage) {
        self.runs += other.runs;
        self.honest_runs += other.honest_runs;
        self.steps += other.steps;
        self.caught += other.caught;
        for (mine, theirs) in [
            (&mut self.strategies, &other.strategies),
            (&mut self.actions, &other.actions),
            (&mut self.provider_ops, &other.provider_ops),
            (&mut self.outcomes, &other.outcomes),
        ] {
            for (k, v) in theirs {
                *mine.entry(k.clone()).or_default() += v;
            }
        }
    }

    /// Strategies and actions no run used.
    pub fn unused(&self) -> Vec<String> {
        let strategies = Strategy::ALL.iter().map(|s| format!("{s:?}"));
        let actions = Action::ALL.iter().map(|a| format!("{a:?}"));
        strategies
            .filter(|s| !self.strategies.contains_key(s))
            .chain(actions.filter(|a| !self.actions.contains_key(a)))
            .collect()
    }
}

//! Timing and targets shared by every benchmark.

use serde::Serialize;
use std::time::{Duration, Instant};

/// Runs `f` `runs` times and returns the shortest run and the last output. The output is
/// dropped outside the timed region (freeing a large list is not part of building it).
pub(crate) fn min_time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let out = f();
        best = best.min(start.elapsed());
        last = Some(out);
    }
    (best, last.expect("at least one run"))
}

/// Like [`min_time`], but each run first prepares its input untimed (a fresh copy of a list
/// that the timed part mutates).
pub(crate) fn min_time_with<S, T>(
    runs: usize,
    mut setup: impl FnMut() -> S,
    mut f: impl FnMut(S) -> T,
) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs.max(1) {
        let input = setup();
        let start = Instant::now();
        let out = f(input);
        best = best.min(start.elapsed());
        last = Some(out);
    }
    (best, last.expect("at least one run"))
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What a benchmark runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Smaller sizes and fewer runs: seconds, not minutes (`--quick`).
    pub quick: bool,
}

/// One target of an issue: a measured value against a limit.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub name: String,
    pub value: f64,
    /// `"<="` or `">="`.
    pub op: &'static str,
    pub limit: f64,
    pub unit: &'static str,
    /// `None` when this run cannot measure it (a speed-up on one core).
    pub met: Option<bool>,
    /// The paper's figure for the same measurement, where it gives one.
    pub paper: Option<String>,
}

impl Target {
    pub(crate) fn at_most(name: &str, value: f64, limit: f64, unit: &'static str, paper: Option<&str>) -> Self {
        Self::new(name, value, "<=", limit, unit, Some(value <= limit), paper)
    }

    pub(crate) fn at_least(name: &str, value: f64, limit: f64, unit: &'static str, paper: Option<&str>) -> Self {
        Self::new(name, value, ">=", limit, unit, Some(value >= limit), paper)
    }

    fn new(
        name: &str,
        value: f64,
        op: &'static str,
        limit: f64,
        unit: &'static str,
        met: Option<bool>,
        paper: Option<&str>,
    ) -> Self {
        Target { name: name.into(), value, op, limit, unit, met, paper: paper.map(Into::into) }
    }

    /// Marks the target as not measurable in this run.
    pub(crate) fn unmeasured(mut self) -> Self {
        self.met = None;
        self
    }

    /// One line for people: `name: value unit (<= limit) met`.
    pub fn line(&self) -> String {
        let verdict = match self.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured here",
        };
        let paper = self.paper.as_deref().map(|p| format!(" [paper: {p}]")).unwrap_or_default();
        format!(
            "{:<48} {:>12.3} {:<6} (target {} {}) {verdict}{paper}",
            self.name, self.value, self.unit, self.op, self.limit
        )
    }
}

/// The closing block of every text report: one line per target.
pub(crate) fn targets_text(targets: &[Target]) -> String {
    let mut out = String::from("targets:\n");
    for t in targets {
        out += &format!("  {}\n", t.line());
    }
    out
}

/// A figure could not be trusted: the code under measurement disagreed with itself.
#[derive(Debug, thiserror::Error)]
#[error("benchmark self-check failed: {0}")]
pub struct SelfCheckFailed(pub String);

pub(crate) fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), SelfCheckFailed> {
    if ok {
        Ok(())
    } else {
        Err(SelfCheckFailed(what()))
    }
}

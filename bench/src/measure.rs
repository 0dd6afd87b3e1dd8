//! Timing and targets shared by every benchmark.

use serde::Serialize;
use std::time::{Duration, Instant};

/// The runtime a benchmark's async parts run on: every core (its figures count the
/// machine's CPU, all of it), or one thread for figures of one core ([`one_thread`]).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, SelfCheckFailed> {
    let built = tokio::runtime::Builder::new_multi_thread().enable_all().build();
    built.map_err(|e| SelfCheckFailed(format!("tokio runtime: {e}")))
}

/// [`runtime`] on the calling thread alone.
pub(crate) fn one_thread() -> Result<tokio::runtime::Runtime, SelfCheckFailed> {
    let built = tokio::runtime::Builder::new_current_thread().enable_all().build();
    built.map_err(|e| SelfCheckFailed(format!("tokio runtime: {e}")))
}

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

/// A bench's report: JSON for machines (its fields), text for people.
pub trait Shown: Serialize {
    /// One line per figure, then the targets, each met or missed.
    fn to_text(&self) -> String;

    /// The report as `vouch bench` prints it: JSON with `--json`, else text.
    fn show(&self, json: bool) -> String {
        match json {
            true => serde_json::to_string_pretty(self).expect("a report is plain data"),
            false => self.to_text(),
        }
    }
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

/// CPU time spent, read from Linux's `/proc`: by the whole machine (every process: the S3
/// server too) and by this process. What bounds a throughput when everything shares the
/// machine's cores. `None` where `/proc` is not there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CpuClock {
    machine_ticks: u64,
    own_ticks: u64,
}

/// Linux's `USER_HZ`: the unit of `/proc`'s CPU times on every architecture it runs on.
const TICKS_PER_S: f64 = 100.0;

impl CpuClock {
    pub(crate) fn now() -> Option<CpuClock> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let fields: Vec<u64> =
            stat.lines().next()?.split_whitespace().skip(1).map(|f| f.parse().ok()).collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal guest guest_nice: busy is what this
        // machine's CPUs ran (guest time is inside user time already; steal ran elsewhere).
        let busy = [0, 1, 2, 5, 6].iter().map(|&i| fields.get(i).copied().unwrap_or(0)).sum();
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        // After the command's closing parenthesis: fields 3 onwards; utime and stime are 14, 15.
        let after = own.get(own.rfind(')')? + 2..)?;
        let times: Vec<u64> =
            after.split_whitespace().skip(11).take(2).map(|f| f.parse().ok()).collect::<Option<_>>()?;
        Some(CpuClock { machine_ticks: busy, own_ticks: times.iter().sum() })
    }

    /// Seconds of CPU since `self`: the machine's, and this process's.
    pub(crate) fn elapsed(&self) -> Option<(f64, f64)> {
        let now = CpuClock::now()?;
        let s = |a: u64, b: u64| a.saturating_sub(b) as f64 / TICKS_PER_S;
        Some((s(now.machine_ticks, self.machine_ticks), s(now.own_ticks, self.own_ticks)))
    }
}

#[cfg(test)]
mod tests {
    use super::CpuClock;
    use std::time::{Duration, Instant};

    /// Work done here shows in this process's CPU time, and in the machine's, which counts
    /// every process.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_cpu_clock_counts_this_process_within_the_machine() {
        let clock = CpuClock::now().expect("/proc on Linux");
        let (started, mut x) = (Instant::now(), 1u64);
        let own = loop {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            let (_, own) = clock.elapsed().unwrap();
            if own >= 0.05 || started.elapsed() > Duration::from_secs(20) {
                break own;
            }
        };
        let (machine, _) = clock.elapsed().unwrap();
        assert!(own >= 0.05, "50 ms of spinning counted: {own}");
        assert!(machine + 0.02 >= own, "the machine's busy time holds this process's: {machine} < {own}");
    }
}

//! Many runs: seeds spread over threads (each run is one thread's), until they are done or
//! time is up; their coverage merged and their failures kept.

use super::report::{Coverage, SimFailure};
use super::run_seed;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// What a batch of runs found.
#[derive(Debug, Default)]
pub struct Batch {
    pub coverage: Coverage,
    /// Failures, in the order of their seeds.
    pub failures: Vec<SimFailure>,
}

/// Runs `seeds` (in order, each of `steps` steps) on `threads` threads, stopping early at
/// `until`.
pub fn run_many(seeds: &[u64], steps: usize, threads: usize, until: Option<Instant>) -> Batch {
    let next = AtomicUsize::new(0);
    let batch = Mutex::new(Batch::default());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                if until.is_some_and(|until| Instant::now() >= until) {
                    return;
                }
                let Some(&seed) = seeds.get(next.fetch_add(1, Ordering::Relaxed)) else { return };
                let result = run_seed(seed, steps);
                let mut batch = batch.lock().unwrap_or_else(|e| e.into_inner());
                match result {
                    Ok(run) => batch.coverage.merge(&run.coverage),
                    Err(failure) => batch.failures.push(failure),
                }
            });
        }
    });
    let mut batch = batch.into_inner().unwrap_or_else(|e| e.into_inner());
    batch.failures.sort_by_key(|f| f.seed);
    batch
}

//! `vouch sim`: the deterministic simulator (every protocol against a provider that chooses,
//! `vouch_testkit::sim`), or with `--processes` the crash loops of the real processes
//! (`vouch_testkit::crash`).

use crate::output::Output;
use anyhow::{anyhow, Result};
use std::time::{Duration, Instant};
use vouch_testkit::crash::{self, Component, CrashPlan};
use vouch_testkit::sim::{run_many, run_seed, Coverage, DEFAULT_STEPS};

#[derive(clap::Args)]
pub struct Sim {
    /// Run this one seed and print its trace (a failing seed's replay).
    #[arg(long)]
    seed: Option<u64>,
    /// How many seeds to run, from --from.
    #[arg(long, default_value_t = 1000)]
    seeds: u64,
    /// The first seed (default: from the clock, printed).
    #[arg(long)]
    from: Option<u64>,
    /// Stop after this many minutes, even if seeds are left.
    #[arg(long)]
    minutes: Option<f64>,
    /// Steps in each run.
    #[arg(long, default_value_t = DEFAULT_STEPS)]
    steps: usize,
    /// Threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Crash loops of the real processes instead: `kill -9` of a component at random instants
    /// of its work, then restart and check (with --component, --kills and --seed).
    #[arg(long)]
    processes: bool,
    /// With --processes: provider, gateway or member.
    #[arg(long, default_value = "provider")]
    component: Component,
    /// With --processes: how many kills.
    #[arg(long, default_value_t = 20)]
    kills: usize,
}

pub fn run(args: Sim, out: &Output) -> Result<()> {
    let clock = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if args.processes {
        let vouch = std::env::current_exe()?;
        let seed = args.seed.unwrap_or_else(clock);
        let report =
            crash::run(&vouch, &CrashPlan::new(args.component, args.kills, seed)).map_err(|f| anyhow!("{f}"))?;
        println!("{report}");
        return Ok(());
    }
    if let Some(seed) = args.seed {
        let report = run_seed(seed, args.steps).map_err(|failure| anyhow!("{failure}"))?;
        for line in &report.trace {
            println!("{line}");
        }
        return summary(out, &report.coverage, Duration::ZERO, 0);
    }
    let from = args.from.unwrap_or_else(clock);
    let seeds: Vec<u64> = (from..from.saturating_add(args.seeds)).collect();
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let until = args.minutes.map(|m| Instant::now() + Duration::from_secs_f64(m * 60.0));
    eprintln!("vouch sim: seeds {from}.. ({} at most), {} steps each, {threads} threads", args.seeds, args.steps);
    let started = Instant::now();
    let batch = run_many(&seeds, args.steps, threads, until);
    for failure in &batch.failures {
        eprintln!("{failure}");
    }
    summary(out, &batch.coverage, started.elapsed(), batch.failures.len())?;
    match batch.failures.len() {
        0 => Ok(()),
        n => Err(anyhow!(
            "{n} seeds broke an invariant: {:?}",
            batch.failures.iter().map(|f| f.seed).collect::<Vec<_>>()
        )),
    }
}

fn summary(out: &Output, coverage: &Coverage, took: Duration, failed: usize) -> Result<()> {
    let value = serde_json::json!({ "coverage": coverage, "seconds": took.as_secs_f64(), "failed": failed });
    out.print(&value, || {
        let mut text = format!(
            "{} runs ({} with honest faults only), {} steps, {} lies caught, {failed} failed, in {:.1} s\n",
            coverage.runs,
            coverage.honest_runs,
            coverage.steps,
            coverage.caught,
            took.as_secs_f64()
        );
        for (title, counts) in [
            ("strategies (messages)", &coverage.strategies),
            ("actions", &coverage.actions),
            ("provider operations", &coverage.provider_ops),
            ("client outcomes", &coverage.outcomes),
        ] {
            text += &format!("{title}:\n");
            for (name, n) in counts {
                text += &format!("  {name:<28} {n}\n");
            }
        }
        let unused = coverage.unused();
        if !unused.is_empty() {
            text += &format!("never used: {}\n", unused.join(", "));
        }
        text
    });
    Ok(())
}

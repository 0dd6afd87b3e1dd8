//! `vouch bench ...`: runs a benchmark and prints its report (text, or one JSON object).

use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use vouch_bench::Shown;

#[derive(Subcommand)]
pub enum Which {
    /// VICOS (paper 003): ADICT in memory beside the raw hash rate, then AIP and whole groups.
    Aip(Common),
    /// FlexList: build, multi-proofs, batched updates (paper 000).
    Flexlist(Common),
    /// Provable data possession: tagging, proofs over a 1 GB file at 1-64 KB blocks (paper 001).
    Pdp(Common),
    /// Proofs of retrievability: the code's throughput per level beside reed-solomon-simd
    /// (paper 002).
    Por(Common),
    /// Storage: segment writes and reads against the raw backend, compaction, list loading.
    Store(Common),
    /// Whole system: verified put/get through the server against the raw backend, and a VCS
    /// replay of 20 KB commits to a large file (papers 000 and 001); with `--repo`, also a real
    /// repository's history.
    E2e(E2e),
    /// S3 gateway (Iris, paper 004): sequential and random throughput and latency through the
    /// gateway with 1-100 clients beside the same S3 client on the raw backend (S3 when
    /// `VOUCH_S3_*` names a server), hot and cold 10 KB latency, a cache-size sweep.
    Gateway(Common),
    /// Every suite above, then each paper's figures redrawn beside the same run's baselines
    /// and the paper's own values: DIR/index.html with its SVG plots, and DIR/data/*.json.
    Report(Report),
}

#[derive(Args)]
pub struct Common {
    /// Smaller sizes and fewer runs (under 30 s).
    #[arg(long)]
    quick: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct E2e {
    #[command(flatten)]
    common: Common,
    /// Also replay this git repository's first-parent history, each commit as a `sync` of
    /// every file it changed.
    #[arg(long, value_name = "PATH")]
    repo: Option<PathBuf>,
    /// How many of the repository's newest commits to replay [default: 100, 20 with --quick].
    #[arg(long, value_name = "N", requires = "repo")]
    commits: Option<usize>,
}

#[derive(Args)]
pub struct Report {
    /// Smaller sizes and fewer runs (a few minutes in all).
    #[arg(long)]
    quick: bool,
    /// The folder to write the page, its plots and the suites' JSON into.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Draw the page from the suites' saved JSON (an earlier report's DIR/data) instead of
    /// measuring.
    #[arg(long, value_name = "DIR")]
    from: Option<PathBuf>,
}

pub fn run(which: Which) -> anyhow::Result<()> {
    let quick = |common: &Common| vouch_bench::Options { quick: common.quick };
    let text = match which {
        Which::Flexlist(c) => vouch_bench::flexlist::run(quick(&c), progress)?.show(c.json),
        Which::Aip(c) => vouch_bench::aip::run(quick(&c), progress)?.show(c.json),
        Which::Por(c) => vouch_bench::por::run(quick(&c), progress)?.show(c.json),
        Which::Store(c) => vouch_bench::store::run(quick(&c), progress)?.show(c.json),
        Which::Gateway(c) => vouch_bench::gateway::run(quick(&c), progress)?.show(c.json),
        Which::Pdp(c) => vouch_bench::pdp::run(quick(&c), progress)?.show(c.json),
        Which::E2e(E2e { common, repo, commits }) => {
            let source = repo.map(|path| vouch_bench::repo::Source { path, commits });
            vouch_bench::e2e::run(quick(&common), source.as_ref(), progress)?.show(common.json)
        }
        Which::Report(r) => report(r)?,
    };
    writeln!(std::io::stdout(), "{text}")?;
    Ok(())
}

/// The report, written; its figures' count on stdout. Figures left out for missing data fail
/// the command after the page is written (the page names them too).
fn report(r: Report) -> anyhow::Result<String> {
    let options = vouch_bench::Options { quick: r.quick };
    let written = vouch_bench::report::run(options, r.from.as_deref(), &r.out, progress)?;
    let mut text = format!("{}: {} figures", written.index.display(), written.figures.len());
    for m in &written.missing {
        text += &format!("\nleft out: {m}");
    }
    if !written.missing.is_empty() {
        anyhow::bail!("{text}");
    }
    Ok(text)
}

/// Progress goes to stderr, so stdout stays one JSON object.
fn progress(step: &str) {
    eprintln!("vouch bench: {step}");
}

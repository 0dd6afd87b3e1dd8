//! `vouch`: the command-line face of vouch. Thin: every subcommand calls a library.

mod bench;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "vouch", version, about = "Verifiable storage on untrusted clouds")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure vouch on this machine against the papers' figures and same-run baselines.
    Bench {
        #[command(subcommand)]
        which: bench::Which,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bench { which } => bench::run(which),
    }
}

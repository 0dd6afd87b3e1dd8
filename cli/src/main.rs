//! `vouch`: the command-line face of vouch. Thin: every subcommand calls a library.
//!
//! Exit codes (stable): 0 success; 1 other failure; 2 bad usage or input; 3 the provider
//! misbehaved (a proof failed, data was altered or rolled back, a stream was cut short);
//! 4 the provider is unreachable or unavailable; 5 not found; 6 local state missing or
//! damaged; 7 the provider refused the credentials; 8 a group operation aborted or an object
//! changed while it was read: run it again (see [`exit`], and `docs/exit-codes.md`).

mod audit;
mod bench;
mod commands;
mod demo;
mod exit;
mod gateway;
mod output;
mod output_file;
mod serve;
mod sim;
mod vicos;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// The provider, the gateway and AIP members allocate many small buffers per request (a
/// message's fields, a REPLY's operations, HTTP headers); glibc's allocator spent a fifth of
/// a VICOS process's time on them at 128 members, mimalloc much less (see `vouch bench aip`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use vouch_client::ClientError;

#[derive(Parser)]
#[command(name = "vouch", version, about = "Verifiable storage on untrusted clouds")]
struct Cli {
    /// The client's state directory (keys, root digest).
    #[arg(long, global = true, env = "VOUCH_STATE")]
    state: Option<PathBuf>,
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a client state (fresh key) for a provider.
    Init(commands::Init),
    /// Store a file as a new version of NAME (default: the file's name).
    Put(commands::Put),
    /// Fetch a verified file, a version of it, or a byte range.
    Get(commands::Get),
    /// List the stored names (the listing is proven complete).
    Ls,
    /// Remove a name and all its versions.
    Rm(commands::Name),
    /// List the kept versions of a name.
    Log(commands::Name),
    /// Drop old versions of a name.
    Prune(commands::Prune),
    /// Insert, delete or replace bytes of a stored file as one verified batch.
    Edit(commands::EditArgs),
    /// Make NAME equal to a local file, sending only the blocks that differ.
    Sync(commands::Sync),
    /// Challenge the provider to prove it holds a file (all files without NAME); with
    /// --public, as a third party holding only the public key and the root.
    Audit(audit::Audit),
    /// Rebuild the PoR copy of a file stored with `put --por` from the log's code (C and
    /// H) when its slots are lost or damaged, check it, and write it back; then, when a part
    /// of the log fails its audit and U is whole, re-encode C from U so every part is whole.
    Repair(commands::Name),
    /// Print the namespace root (and the public key's id) to hand to a third-party auditor.
    Root,
    /// The client's key: export the public key of an RSA client for auditors.
    Key {
        #[command(subcommand)]
        which: commands::KeyCommand,
    },
    /// A VICOS group: clients sharing one object store through the provider, each checking
    /// that the provider shows them all one history.
    Group {
        #[command(subcommand)]
        which: vicos::GroupCommand,
    },
    /// Objects of a VICOS group: put, get, rm, ls (ABORT exits 8: run it again).
    Obj(vicos::ObjArgs),
    /// Run a provider server (untrusted side).
    Serve(serve::Serve),
    /// Serve this client's namespace as an S3 endpoint on the user's side (the trusted
    /// portal): unchanged S3 applications get every byte verified.
    Gateway(gateway::Gateway),
    /// Print a fresh client token and the server configuration lines for it.
    Token(serve::Token),
    /// Write a self-signed TLS certificate and key for `vouch serve --tls-cert/--tls-key`.
    TlsCert(serve::TlsCert),
    /// Show vouch end to end in one process: store, edit, sync, audit, then catch lies.
    Demo(demo::Demo),
    /// The deterministic simulator: every protocol against a provider that chooses, checked
    /// after every step; or, with --processes, crash loops of the real processes.
    Sim(sim::Sim),
    /// Measure vouch on this machine against the papers' figures and same-run baselines.
    Bench {
        #[command(subcommand)]
        which: bench::Which,
    },
}

fn state_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.unwrap_or_else(|| {
        std::env::var_os("HOME").map_or_else(|| PathBuf::from(".vouch"), |h| PathBuf::from(h).join(".vouch"))
    })
}

/// No transparent huge pages for this process. mimalloc asks for them on its arenas, and then
/// the first touch of memory it had given back (a request's buffers come and go) makes the
/// kernel zero a whole 2 MiB page: a quarter of the machine's CPU in a gateway write bench at
/// 100 clients went to that zeroing (`clear_page_erms`), and write CPU per MB fell by a third
/// without it.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!("transparent huge pages stay on: {e}");
    }
}

fn main() -> ExitCode {
    no_huge_pages();
    let cli = Cli::parse();
    // The demo's provider lies on purpose, and the demo prints each lie caught: the clients'
    // and the gateway's own reports of them (at ERROR, for an operator) would print each twice.
    // The simulator's provider is caught lying by design, thousands of times a run.
    let quiet = match cli.command {
        Command::Demo(_) => "off",
        Command::Sim(_) => "off",
        _ => "warn",
    };
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(quiet));
    // s3s logs every error answer at ERROR with its body, twice: a HEAD's NoSuchKey (common S3
    // traffic) included. The gateway logs its answers itself: client errors at debug with their
    // code, at error only what an operator must act on. `RUST_LOG=s3s=...` still turns them on.
    if !std::env::var("RUST_LOG").is_ok_and(|asked| asked.contains("s3s")) {
        filter = filter.add_directive("s3s=off".parse().expect("a valid directive"));
    }
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    let out = output::Output { json: cli.json };
    let result = match cli.command {
        Command::Bench { which } => bench::run(which).map_err(Failure::Other),
        Command::Sim(args) => sim::run(args, &out).map_err(Failure::Other),
        Command::Serve(args) => run(serve::serve(args)),
        Command::Token(args) => serve::token(args, &out).map_err(Failure::Other),
        Command::TlsCert(args) => serve::tls_cert(args, &out).map_err(Failure::Other),
        Command::Demo(args) => run(demo::demo(args, out)),
        Command::Gateway(args) => run(gateway::gateway(args, state_dir(cli.state))),
        Command::Group { which } => run(vicos::group(which, state_dir(cli.state), out)),
        Command::Obj(args) => run(vicos::obj(args, state_dir(cli.state), out)),
        command => {
            let dir = state_dir(cli.state);
            run(commands::run(command, dir, out))
        }
    };
    match result {
        Ok(()) => ExitCode::from(exit::OK as u8),
        Err(Failure::Client(e)) => {
            eprintln!("vouch: {e}");
            ExitCode::from(exit::exit_code(&e) as u8)
        }
        Err(Failure::Aborted(why)) => {
            eprintln!("vouch: {why}");
            ExitCode::from(exit::ABORTED as u8)
        }
        Err(Failure::Other(e)) => {
            eprintln!("vouch: {e:#}");
            ExitCode::from(exit::FAILURE as u8)
        }
    }
}

/// A command's failure: a typed client error (with its exit code) or anything else.
pub enum Failure {
    Client(ClientError),
    /// A VICOS operation aborted (retryable).
    Aborted(String),
    Other(anyhow::Error),
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        Failure::Client(e)
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Other(e)
    }
}

fn run(work: impl std::future::Future<Output = Result<(), Failure>>) -> Result<(), Failure> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| Failure::Other(e.into()))?;
    rt.block_on(work)
}

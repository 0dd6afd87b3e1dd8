//! The client commands: parse, call `vouch_client::Client`, print.

use crate::output::{human, Output};
use crate::output_file::OutputFile;
use crate::{Command, Failure};
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use vouch_client::{ByteEdit, Client, ClientError, KeyChoice, PutOptions};

#[derive(Args)]
pub struct Init {
    /// The provider's URL, e.g. http://127.0.0.1:7447.
    #[arg(long, env = "VOUCH_SERVER")]
    server: String,
    /// This client's bearer token (from `vouch token` on the provider's side).
    #[arg(long, env = "VOUCH_TOKEN", hide_env_values = true)]
    token: String,
    /// Over https://, trust only this PEM certificate (the provider's own, e.g. from `vouch
    /// tls-cert`, or its CA); copied into the state directory.
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// How blocks are tagged: `linear` (fast; only this client can audit) or `rsa` (DPDP's
    /// RSA tags: slower, and anyone holding the public key and the root can audit).
    #[arg(long, value_enum, default_value_t = Scheme::Linear)]
    scheme: Scheme,
    /// With --scheme rsa: the modulus size, 2048 (default) or 1024 (the papers' size: faster,
    /// weaker). Generating the key takes a few seconds.
    #[arg(long, value_name = "BITS")]
    bits: Option<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scheme {
    Linear,
    Rsa,
}

#[derive(Subcommand)]
pub enum KeyCommand {
    /// Write the public key of an RSA client to FILE, for `vouch audit --public`.
    ExportPublic { file: PathBuf },
}

#[derive(Args)]
pub struct Put {
    /// The file to store (`-` for standard input).
    file: PathBuf,
    /// The name to store it under (default: the file's name).
    name: Option<String>,
    /// Fixed blocks of this many bytes (default: content-defined blocks of 4-64 KiB, so an
    /// insertion changes only the blocks around it).
    #[arg(long)]
    block_size: Option<usize>,
    /// With retrievability: a copy of every version goes to the client's erasure-coded PoR
    /// log, which `audit --por` checks whole and `repair` rebuilds.
    #[arg(long)]
    por: bool,
}

#[derive(Args)]
pub struct Get {
    name: String,
    /// Write here (whole or not at all) instead of standard output; a device or a named pipe
    /// is written as the bytes are verified, as standard output is.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// A version number (default: the latest).
    #[arg(long)]
    version: Option<u64>,
    /// Only bytes A..B.
    #[arg(long, value_parser = parse_range, conflicts_with = "por")]
    range: Option<Range<u64>>,
    /// Read the file's PoR copy through U (not the provider's block store), verified.
    #[arg(long)]
    por: bool,
}

#[derive(Args)]
pub struct Name {
    name: String,
}

#[derive(Args)]
pub struct Prune {
    name: String,
    /// Version numbers to drop, e.g. 1,2,5.
    #[arg(long, value_delimiter = ',', required = true)]
    versions: Vec<u64>,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("change").required(true).args(["insert", "delete", "replace"])))]
pub struct EditArgs {
    name: String,
    /// Insert the new bytes before byte OFFSET.
    #[arg(long, value_name = "OFFSET")]
    insert: Option<u64>,
    /// Delete bytes A..B.
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    delete: Option<Range<u64>>,
    /// Overwrite bytes from OFFSET on with the new bytes.
    #[arg(long, value_name = "OFFSET")]
    replace: Option<u64>,
    /// The new bytes, as text.
    #[arg(long, conflicts_with = "from")]
    data: Option<String>,
    /// The new bytes, from a file.
    #[arg(long)]
    from: Option<PathBuf>,
}

#[derive(Args)]
pub struct Sync {
    name: String,
    local: PathBuf,
}

fn parse_range(text: &str) -> Result<Range<u64>, String> {
    let (a, b) = text.split_once("..").ok_or("expected A..B")?;
    let a: u64 = a.trim().parse().map_err(|_| format!("bad start {a:?}"))?;
    let b: u64 = b.trim().parse().map_err(|_| format!("bad end {b:?}"))?;
    if a > b {
        return Err(format!("{a}..{b} is backwards"));
    }
    Ok(a..b)
}

pub(crate) fn read_input(path: &Path) -> Result<Box<dyn std::io::Read + Send>, ClientError> {
    if path == Path::new("-") {
        return Ok(Box::new(std::io::stdin()));
    }
    let file = std::fs::File::open(path).map_err(ClientError::io(format!("opening {}", path.display())))?;
    Ok(Box::new(file))
}

#[derive(Serialize)]
struct Entry {
    name: String,
    versions: u64,
    next_version: u64,
}

#[derive(Serialize)]
struct Version {
    version: u64,
    bytes: u64,
    time: u64,
    root: String,
}

#[derive(Serialize)]
struct Done<'a> {
    done: &'a str,
    name: &'a str,
}

pub async fn run(command: Command, dir: PathBuf, out: Output) -> Result<(), Failure> {
    let command = match command {
        Command::Init(args) => return init(args, &dir, out).await,
        Command::Audit(args) if args.public.is_some() => return crate::audit::public(args, out).await,
        command => command,
    };
    let client = Client::open(&dir)?;
    match command {
        Command::Put(args) => {
            let name = match args.name {
                Some(n) => n,
                None => args
                    .file
                    .file_name()
                    .and_then(|n| n.to_str())
                    .filter(|_| args.file != Path::new("-"))
                    .ok_or_else(|| ClientError::BadInput("give a NAME for this input".into()))?
                    .to_string(),
            };
            let size = std::fs::metadata(&args.file).ok().map(|m| m.len());
            let bar = out.bar(size, "put");
            let shown = bar.clone();
            let input = read_input(&args.file)?;
            let options = PutOptions { block_size: args.block_size, por: args.por, ..PutOptions::default() };
            let t = client.put_with(&name, input, options, move |n| shown.set_position(n)).await;
            bar.finish_and_clear();
            let t = t?;
            out.print(&t, || {
                format!(
                    "stored {} version {} ({}, {} blocks, {:.2} s)",
                    t.name,
                    t.version,
                    human(t.bytes),
                    t.blocks,
                    t.seconds
                )
            });
        }
        Command::Get(args) => get(&client, args, out).await?,
        Command::Ls => {
            let entries: Vec<Entry> = client
                .list()
                .await?
                .into_iter()
                .map(|e| Entry { name: e.name, versions: e.versions, next_version: e.next_version })
                .collect();
            out.print(&entries, || {
                entries.iter().map(|e| format!("{}\t{} versions", e.name, e.versions)).collect::<Vec<_>>().join("\n")
            });
        }
        Command::Rm(args) => {
            client.remove(&args.name).await?;
            out.print(&Done { done: "removed", name: &args.name }, || format!("removed {}", args.name));
        }
        Command::Log(args) => {
            let versions: Vec<Version> = client
                .log(&args.name)
                .await?
                .into_iter()
                .map(|v| Version { version: v.number, bytes: v.len, time: v.time, root: v.root.to_hex() })
                .collect();
            out.print(&versions, || {
                versions
                    .iter()
                    .map(|v| format!("{}\t{}\t{}\t{}", v.version, human(v.bytes), v.time, &v.root[..16]))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        Command::Prune(args) => {
            client.prune(&args.name, &args.versions).await?;
            out.print(&Done { done: "pruned", name: &args.name }, || {
                format!("pruned {:?} of {}", args.versions, args.name)
            });
        }
        Command::Edit(args) => {
            let data = match (&args.data, &args.from) {
                (Some(text), _) => Some(text.as_bytes().to_vec()),
                (None, Some(path)) => {
                    Some(std::fs::read(path).map_err(ClientError::io(format!("reading {}", path.display())))?)
                }
                (None, None) => None,
            };
            let need = || ClientError::BadInput("give the new bytes with --data or --from".into());
            let change = match (args.insert, args.delete, args.replace) {
                (Some(at), _, _) => ByteEdit::Insert { at, data: data.ok_or_else(need)? },
                (_, Some(range), _) => ByteEdit::Delete { range },
                (_, _, Some(at)) => ByteEdit::Replace { at, data: data.ok_or_else(need)? },
                _ => return Err(ClientError::BadInput("give --insert, --delete or --replace".into()).into()),
            };
            let t = client.edit(&args.name, &change, None).await?;
            out.print(&t, || format!("{} is now version {} ({} new blocks sent)", t.name, t.version, t.blocks));
        }
        Command::Sync(args) => {
            let t = client.sync(&args.name, &args.local).await?;
            out.print(&t, || {
                format!(
                    "{} is now version {}: {} of {} blocks sent ({}), {} edits",
                    t.name,
                    t.version,
                    t.blocks_sent,
                    t.blocks_total,
                    human(t.bytes_sent),
                    t.edits
                )
            });
        }
        Command::Audit(args) if args.por => crate::audit::por(&client, args, out).await?,
        Command::Audit(args) => crate::audit::owner(&client, args, out).await?,
        Command::Repair(args) => {
            let r = client.por().repair(&args.name).await?;
            out.print(&r, || {
                let copy = match r.restored {
                    0 => format!("{} version {}: the PoR copy is intact ({} slots)", r.name, r.version, r.slots),
                    n => format!(
                        "{} version {}: {n} slots rebuilt from C and H, checked, written back",
                        r.name, r.version
                    ),
                };
                let blocks = match r.healed_blocks {
                    0 => "block store: the copy `get` reads is intact".to_string(),
                    n => {
                        format!("block store: {n} blocks failed their checks; written again from the PoR copy, checked")
                    }
                };
                match r.healed.as_slice() {
                    [] => format!("{copy}\n{blocks}"),
                    parts => format!(
                        "{copy}\n{blocks}\nlog: {} failed their audit; C re-encoded from U, audit passes",
                        parts.join(", ")
                    ),
                }
            });
        }
        Command::Root => crate::audit::root(&client, out).await?,
        Command::Key { which: KeyCommand::ExportPublic { file } } => crate::audit::export_public(&client, &file, out)?,
        _ => unreachable!("handled in main"),
    }
    Ok(())
}

async fn init(args: Init, dir: &Path, out: Output) -> Result<(), Failure> {
    let choice = match (args.scheme, args.bits) {
        (Scheme::Linear, None) => KeyChoice::Linear,
        (Scheme::Linear, Some(_)) => return Err(ClientError::BadInput("--bits goes with --scheme rsa".into()).into()),
        (Scheme::Rsa, bits) => KeyChoice::rsa(bits.unwrap_or(2048))?,
    };
    if let KeyChoice::Rsa { bits } = choice {
        eprintln!("generating a {bits}-bit RSA key (this takes a few seconds)...");
    }
    let client = Client::create(dir, &args.server, &args.token, args.ca.as_deref(), choice)?;
    let health = client.remote().health().await;
    #[derive(Serialize)]
    struct Inited<'a> {
        state: String,
        server: &'a str,
        scheme: &'static str,
        reachable: bool,
    }
    let scheme = crate::audit::scheme_name(client.key().map(|k| k.scheme()));
    let report =
        Inited { state: dir.display().to_string(), server: client.remote().url(), scheme, reachable: health.is_ok() };
    out.print(&report, || {
        let reach = match &health {
            Ok(h) => format!("reachable ({})", h.server),
            Err(e) => format!("NOT reachable yet: {e}"),
        };
        format!("initialised {} for {} ({scheme} tags; {reach})", report.state, report.server)
    });
    Ok(())
}

/// What `get` fetched, for its report.
#[derive(Serialize)]
struct Got {
    name: String,
    version: u64,
    bytes: u64,
    /// `blocks` (the provider's block store) or `por` (the PoR copy, through U).
    from: &'static str,
}

async fn fetch(client: &Client, args: &Get, w: &mut (impl Write + Send)) -> Result<Got, ClientError> {
    if args.por {
        let r = client.por().get(&args.name, args.version, w).await?;
        return Ok(Got { name: r.name, version: r.version, bytes: r.bytes, from: "por" });
    }
    let t = client.get(&args.name, args.version, args.range.clone(), w).await?;
    Ok(Got { name: t.name, version: t.version, bytes: t.bytes, from: "blocks" })
}

async fn get(client: &Client, args: Get, out: Output) -> Result<(), Failure> {
    let bar = out.bar(None, "get");
    let result = match &args.output {
        Some(path) => {
            let mut file = OutputFile::create(path)?;
            let r = fetch(client, &args, file.writer()).await;
            r.and_then(|t| file.finish().map(|()| t))
        }
        None => {
            let mut stdout = std::io::BufWriter::new(std::io::stdout());
            let r = fetch(client, &args, &mut stdout).await;
            let flushed = stdout.flush().map_err(ClientError::io("writing the output"));
            r.and_then(|t| flushed.map(|()| t))
        }
    };
    bar.finish_and_clear();
    let t = result?;
    // Without -o the file itself is standard output; a report would corrupt it.
    if args.output.is_some() {
        out.print(&t, || format!("got {} version {} ({}, verified)", t.name, t.version, human(t.bytes)));
    }
    Ok(())
}

//! `vouch group` and `vouch obj`: a VICOS group of clients sharing one object store through
//! the provider (paper 003, Sec. 4). ABORT (another member's incompatible operation was
//! pending) exits with [`crate::exit::ABORTED`]: run the command again.

use crate::commands::read_input;
use crate::output::{human, Output};
use crate::output_file::OutputFile;
use crate::Failure;
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use vouch_client::vicos::{groups, Group, S3Access, Signatures};
use vouch_client::ClientError;
use vouch_core::aip::{Mode, Outcome};

#[derive(Subcommand)]
pub enum GroupCommand {
    /// Create a group on this client's provider, this client its first member; writes the
    /// key file that lets others join (it lets its holder sign for the group: keep it private).
    Init {
        name: String,
        /// Where to write the group key file for the next member.
        #[arg(long, value_name = "FILE")]
        key_out: PathBuf,
        /// `compatible` (VICOS's Table 1, the default) or `commutative` (the ACOP baseline).
        #[arg(long, value_enum, default_value_t = ModeArg::Compatible)]
        mode: ModeArg,
        /// `hmac`: one group key, in the key file (the paper's default); `ed25519`: a key pair
        /// per member, the key file a roster of public keys with the group's admission secret
        /// (members exchange rosters, which hold no secret, with `vouch group roster`).
        #[arg(long, value_enum, default_value_t = SignaturesArg::Hmac)]
        signatures: SignaturesArg,
    },
    /// Join a group with the key file its creator wrote.
    Join {
        key_file: PathBuf,
        /// This member's id in the group, one no other member has: required with an HMAC
        /// group's key file, which every joiner shares (an Ed25519 one's is the default).
        #[arg(long)]
        id: Option<u32>,
    },
    /// An Ed25519 group's roster (its members' public keys; no secret): written for the
    /// others, after adding those of another member's roster with `--import`. A member's
    /// operations are accepted once its key is in the roster. Or a key file for a new member.
    Roster {
        name: String,
        /// Add the members this roster file names (a known member with another key is refused).
        #[arg(long, value_name = "FILE")]
        import: Option<PathBuf>,
        /// Write the roster here (it admits no one: a new member joins with a key file).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Write a key file for the next new member here: the roster with the group's
        /// admission secret (an HMAC group's: its key). Hand it to that member alone.
        #[arg(long, value_name = "FILE")]
        key_out: Option<PathBuf>,
    },
    /// Reach the group's objects in the provider's S3 bucket directly, with this member's own
    /// credentials (only AIP goes through the provider), or again through the provider.
    Direct {
        name: String,
        /// A TOML file: endpoint (omit for AWS), bucket, region, access_key, secret_key. The
        /// bucket is the one the provider keeps its blobs in.
        #[arg(long, value_name = "FILE", conflicts_with = "off", required_unless_present = "off")]
        s3: Option<PathBuf>,
        /// Go back to reaching the objects through the provider.
        #[arg(long)]
        off: bool,
    },
    /// List the groups this client is a member of.
    Ls,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SignaturesArg {
    Hmac,
    Ed25519,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Compatible,
    Commutative,
}

#[derive(Args)]
pub struct ObjArgs {
    /// The group (default: the only group this client is a member of).
    #[arg(long, global = true)]
    group: Option<String>,
    #[command(subcommand)]
    which: ObjCommand,
}

#[derive(Subcommand)]
pub enum ObjCommand {
    /// Store FILE (`-` for standard input) as object KEY.
    Put { file: PathBuf, key: String },
    /// Fetch object KEY, verified, to standard output or (whole or not at all) to a file.
    Get {
        key: String,
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Delete object KEY.
    Rm { key: String },
    /// List the group's keys.
    Ls,
}

#[derive(Serialize)]
struct Report {
    /// A get to standard output prints nothing else there.
    #[serde(skip)]
    quiet: bool,
    group: String,
    op: &'static str,
    key: Option<String>,
    bytes: Option<u64>,
    keys: Option<Vec<String>>,
}

pub async fn group(which: GroupCommand, state: PathBuf, out: Output) -> Result<(), Failure> {
    match which {
        GroupCommand::Init { name, key_out, mode, signatures } => {
            let mode = match mode {
                ModeArg::Compatible => Mode::Compatible,
                ModeArg::Commutative => Mode::Commutative,
            };
            let signatures = match signatures {
                SignaturesArg::Hmac => Signatures::Hmac,
                SignaturesArg::Ed25519 => Signatures::Ed25519,
            };
            let next = Group::init(&state, &name, mode, signatures).await?;
            next.write(&key_out)?;
            let id = match signatures {
                Signatures::Hmac => " --id N (each their own N)",
                Signatures::Ed25519 => "",
            };
            out.print(&next.group, || {
                format!("created group {name}; others join with: vouch group join {}{id}", key_out.display())
            });
        }
        GroupCommand::Join { key_file, id } => {
            let file = Group::join_with(&state, &key_file, id)?;
            let next = match file.key.is_none() {
                true => format!("; the others accept this member once they import its roster (vouch group roster {} --out FILE, then --import FILE at each)", file.group),
                false => String::new(),
            };
            out.print(&file.group, || format!("joined group {} as member {}{next}", file.group, file.id));
        }
        GroupCommand::Roster { name, import, out: to, key_out } => {
            let (key_file, added) = Group::roster(&state, &name, import.as_deref())?;
            if let Some(path) = &to {
                key_file.as_roster()?.write(path)?;
            }
            if let Some(path) = &key_out {
                key_file.write(path)?;
            }
            let roster = key_file;
            let ids: Vec<String> = roster.members.keys().cloned().collect();
            out.print(&roster.members, || {
                let mut text = format!("group {name}: members {}", ids.join(", "));
                if !added.is_empty() {
                    text += &format!(
                        " ({} imported)",
                        added.iter().map(|id| id.to_string()).collect::<Vec<_>>().join(", ")
                    );
                }
                if let Some(path) = &to {
                    text += &format!("; roster written to {}", path.display());
                }
                if let Some(path) = &key_out {
                    text += &format!("; key file for member {} written to {}", roster.id, path.display());
                }
                text
            });
        }
        GroupCommand::Direct { name, s3, off: _ } => {
            let access = s3.as_deref().map(S3Access::read).transpose()?;
            let place =
                access.as_ref().map(|a| format!("{} bucket {}", a.endpoint.as_deref().unwrap_or("AWS"), a.bucket));
            Group::set_direct(&state, &name, access)?;
            out.print(&place, || match &place {
                Some(p) => format!("group {name}: objects reached directly at {p}"),
                None => format!("group {name}: objects reached through the provider"),
            });
        }
        GroupCommand::Ls => {
            let names = groups(&state)?;
            out.print(&names, || names.join("\n"));
        }
    }
    Ok(())
}

/// The group named, or the only one.
fn chosen(state: &Path, group: Option<String>) -> Result<String, ClientError> {
    if let Some(g) = group {
        return Ok(g);
    }
    match groups(state)?.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(ClientError::BadInput("not a member of any group (vouch group init / join)".into())),
        _ => Err(ClientError::BadInput("a member of several groups: name one with --group".into())),
    }
}

/// An operation's result, ABORT as the retryable failure it is.
fn done<T>(name: &str, r: Outcome<T>) -> Result<T, Failure> {
    match r {
        Outcome::Done(t) => Ok(t),
        Outcome::Abort => {
            Err(Failure::Aborted(format!("{name} aborted: another member's operation on it was pending; run it again")))
        }
    }
}

pub async fn obj(args: ObjArgs, state: PathBuf, out: Output) -> Result<(), Failure> {
    let name = chosen(&state, args.group)?;
    let group = Group::open(&state, &name)?;
    let result = run(&group, args.which).await;
    // The object a put or rm replaced goes before this process does.
    group.flush_retired().await;
    // The AIP state moves on with every answer checked, aborted or not: keep it.
    group.save(&state).await?;
    let report = result?;
    let text = || match (&report.keys, report.op) {
        (Some(keys), _) => keys.join("\n"),
        (None, op) => {
            let key = report.key.as_deref().unwrap_or("");
            report.bytes.map_or_else(|| format!("{op} {key}"), |b| format!("{op} {key} ({})", human(b)))
        }
    };
    if !report.quiet {
        out.print(&report, text);
    }
    Ok(())
}

async fn run(group: &Group, which: ObjCommand) -> Result<Report, Failure> {
    let report =
        |op, key: Option<String>| Report { quiet: false, group: group.name().into(), op, key, bytes: None, keys: None };
    match which {
        ObjCommand::Put { file, key } => {
            let input = read_input(&file)?;
            done(&key, group.put(key.as_bytes(), input).await?)?;
            Ok(report("put", Some(key)))
        }
        ObjCommand::Get { key, output } => {
            let bytes = get(group, &key, output.as_deref()).await?;
            Ok(Report { quiet: output.is_none(), bytes: Some(bytes), ..report("get", Some(key)) })
        }
        ObjCommand::Rm { key } => {
            done(&key, group.delete(key.as_bytes()).await?)?;
            Ok(report("rm", Some(key)))
        }
        ObjCommand::Ls => {
            let keys = done("the listing", group.list().await?)?;
            let keys = keys.into_iter().map(|k| String::from_utf8_lossy(&k).into_owned()).collect();
            Ok(Report { keys: Some(keys), ..report("ls", None) })
        }
    }
}

/// A verified get: whole or not at all to `path` (a device or a named pipe is written as the
/// bytes come, see [`OutputFile`]); or to standard output as the bytes come,
/// checked against the object's hash at their end (a failed check exits 3 after them, an
/// object another member replaced while it came exits 8 after them: discard what came).
async fn get(group: &Group, key: &str, path: Option<&Path>) -> Result<u64, Failure> {
    let missing = || Failure::Client(ClientError::NotFound(format!("object {key} (proven absent)")));
    let Some(path) = path else {
        let mut stdout = std::io::BufWriter::new(std::io::stdout());
        let got = done(key, group.get(key.as_bytes(), &mut stdout).await?)?.ok_or_else(missing)?;
        stdout.flush().map_err(ClientError::io("writing the output"))?;
        return Ok(got);
    };
    let mut file = OutputFile::create(path)?;
    let got = done(key, group.get(key.as_bytes(), file.writer()).await?)?.ok_or_else(missing)?;
    file.finish()?;
    Ok(got)
}

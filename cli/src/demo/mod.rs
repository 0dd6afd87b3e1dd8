//! `vouch demo`: the whole story in one process on the embedded default, no setup. A provider
//! starts on a free loopback port over a temporary directory; a client stores a file, edits it,
//! syncs a changed copy, reads old and new versions, audits; then the provider lies in every
//! way it can, and each lie is shown caught, by the check it should trip (its violation kind).
//! Exits nonzero if any lie goes unnoticed or is caught as another kind of violation.

use crate::output::{human, Output};
use crate::serve::{hinted, one_client};
use crate::Failure;
use anyhow::Context;
use clap::Args;
use serde::Serialize;
use std::path::{Path, PathBuf};
use vouch_client::{ByteEdit, Client, ClientError, ViolationKind};
use vouch_misbehave::{Misbehave, Misbehaving};
use vouch_server::{Blocks, RunningServer};

#[derive(Args)]
pub struct Demo {
    /// Keep the demo's provider data and client state here (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Size of the sample file in bytes.
    #[arg(long, default_value_t = 3 << 20)]
    size: usize,
}

#[derive(Serialize)]
struct Step {
    step: String,
    detail: String,
}

#[derive(Serialize)]
struct Lie {
    lie: String,
    /// Caught as the violation it should show as.
    caught: bool,
    /// The violation it should show as, and the one the client reported (if any).
    expected: &'static str,
    violation: Option<&'static str>,
    how: String,
}

#[derive(Serialize)]
struct Report {
    steps: Vec<Step>,
    lies: Vec<Lie>,
    all_caught: bool,
}

const TOKEN: &str = "demo-token";

struct World {
    data: PathBuf,
    state: PathBuf,
    server: Option<RunningServer<Misbehaving>>,
    addr: String,
}

impl World {
    /// (Re)starts the provider over the same data and port, behaving as told.
    async fn provider(&mut self, misbehave: Misbehave) -> anyhow::Result<()> {
        if let Some(s) = self.server.take() {
            s.shutdown().await?;
        }
        let provider = Misbehaving::open_dir(&self.data, &Blocks::Local, misbehave).map_err(hinted)?;
        let server =
            vouch_server::start(&self.addr, provider, one_client("demo", TOKEN), std::future::pending()).await?;
        self.addr = server.addr.to_string();
        self.server = Some(server);
        Ok(())
    }

    fn client(&self) -> Result<Client, ClientError> {
        Client::open(&self.state)
    }
}

/// Pseudo-random but readable sample text.
fn sample(size: usize) -> Vec<u8> {
    let words =
        ["vouch", "proof", "block", "skip", "list", "tag", "root", "audit", "cloud", "trust", "verify", "store"];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut out = Vec::with_capacity(size + 16);
    while out.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(words[(x % words.len() as u64) as usize].as_bytes());
        out.push(if x.is_multiple_of(13) { b'\n' } else { b' ' });
    }
    out.truncate(size);
    out
}

async fn fetch(client: &Client, name: &str, version: Option<u64>) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    client.get(name, version, None, &mut out).await?;
    Ok(out)
}

pub async fn demo(args: Demo, out: Output) -> Result<(), Failure> {
    let temp = tempfile::tempdir().context("temporary directory")?;
    let root = args.dir.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let mut world =
        World { data: root.join("provider"), state: root.join("client"), server: None, addr: "127.0.0.1:0".into() };
    world.provider(Misbehave::None).await?;
    let mut steps = Vec::new();
    let mut say = |step: &str, detail: String| {
        if !out.json {
            println!("{step:>8}  {detail}");
        }
        steps.push(Step { step: step.into(), detail });
    };
    say("provider", format!("listening on http://{} (untrusted; data in {})", world.addr, world.data.display()));

    let client = Client::init(&world.state, &format!("http://{}", world.addr), TOKEN)?;
    say("init", format!("client state in {}: a key, a token, one root digest", world.state.display()));

    let original = sample(args.size);
    let t = client.put("notes.txt", std::io::Cursor::new(original.clone()), None, |_| {}).await?;
    say(
        "put",
        format!("notes.txt v{}: {} in {} blocks, {:.0} ms", t.version, human(t.bytes), t.blocks, t.seconds * 1e3),
    );

    let line = b"an inserted line, proven in place\n".to_vec();
    let t = client.edit("notes.txt", &ByteEdit::Insert { at: 1000, data: line.clone() }, None).await?;
    let mut edited = original.clone();
    edited.splice(1000..1000, line.iter().copied());
    say(
        "edit",
        format!(
            "insert at byte 1000 -> v{}: {} block sent, update proofs {}",
            t.version,
            t.blocks,
            human(t.proof_bytes)
        ),
    );

    let mut changed = edited.clone();
    changed.splice(200_000..200_100, b"a rewritten passage".iter().copied());
    changed.extend_from_slice(b"\nan appended ending\n");
    let local = root.join("notes-local.txt");
    std::fs::write(&local, &changed).context("writing the local copy")?;
    let s = client.sync("notes.txt", &local).await?;
    say(
        "sync",
        format!(
            "local copy -> v{}: {} of {} blocks kept, {} sent ({}) as {} edits in one batch",
            s.version,
            s.blocks_kept,
            s.blocks_total,
            s.blocks_sent,
            human(s.bytes_sent),
            s.edits
        ),
    );

    let now = fetch(&client, "notes.txt", None).await?;
    let first = fetch(&client, "notes.txt", Some(1)).await?;
    if now != changed || first != original {
        return Err(anyhow::anyhow!("the demo read back other bytes than it stored").into());
    }
    say(
        "get",
        format!(
            "v{} and v1 read back verified and byte-exact ({} and {})",
            s.version,
            human(now.len() as u64),
            human(first.len() as u64)
        ),
    );
    let versions = client.log("notes.txt").await?;
    say(
        "log",
        format!("{} versions kept: {:?}", versions.len(), versions.iter().map(|v| v.number).collect::<Vec<_>>()),
    );
    client.put("todo.txt", std::io::Cursor::new(b"buy milk\n".to_vec()), None, |_| {}).await?;
    let names: Vec<String> = client.list().await?.into_iter().map(|e| e.name).collect();
    say("ls", format!("{names:?}, proven complete"));
    let a = client.audit("notes.txt", None, 460).await?;
    say(
        "audit",
        format!(
            "possession of v{} proven: {} blocks challenged, proof {}, {:.1} ms",
            a.version,
            a.challenged_blocks,
            human(a.proof_bytes as u64),
            a.seconds * 1e3
        ),
    );
    drop(client);

    // The provider lies.
    let mut lies = Vec::new();
    let reads = [
        (Misbehave::CorruptBlock, ViolationKind::AlteredBlock),
        (Misbehave::DropBlock, ViolationKind::MissingBlock),
        (Misbehave::SwapBlocks, ViolationKind::AlteredBlock),
        (Misbehave::OldVersion, ViolationKind::WrongVersion),
        (Misbehave::TruncateStream, ViolationKind::ShortStream),
    ];
    for (mode, kind) in reads {
        world.provider(mode).await?;
        let got = fetch(&world.client()?, "notes.txt", None).await;
        lies.push(verdict(mode.name(), "get", kind, got.map(|_| ())));
    }
    world.provider(Misbehave::HideVersion).await?;
    let got = fetch(&world.client()?, "notes.txt", Some(1)).await.map(|_| ());
    lies.push(verdict("hide-version (v1 \"not found\")", "get v1", ViolationKind::HiddenVersion, got));
    world.provider(Misbehave::HideFile).await?;
    lies.push(verdict("hide-file", "ls", ViolationKind::HiddenName, world.client()?.list().await.map(|_| ())));
    world.provider(Misbehave::OtherChallenge).await?;
    lies.push(verdict(
        "other-challenge (forged proof)",
        "audit",
        ViolationKind::BadAuditProof,
        world.client()?.audit("notes.txt", None, 460).await.map(|_| ()),
    ));
    world.provider(Misbehave::StretchBlock).await?;
    lies.push(verdict(
        "stretch-block (a block claims its neighbour's bytes)",
        "audit",
        ViolationKind::BadAuditProof,
        world.client()?.audit("notes.txt", None, 460).await.map(|_| ()),
    ));
    world.provider(Misbehave::ReplayProof).await?;
    let c = world.client()?;
    c.audit("notes.txt", None, 460).await?;
    lies.push(verdict(
        "replay-proof (an old proof)",
        "second audit",
        ViolationKind::BadAuditProof,
        c.audit("notes.txt", None, 460).await.map(|_| ()),
    ));
    drop(c);
    world.provider(Misbehave::None).await?;
    tamper_segment(&world.data.join("blobs"))?;
    // The first segment holds version 1's blocks: reading that version must notice (the
    // provider's own checksum notices first, and it admits to the damage).
    let got = fetch(&world.client()?, "notes.txt", Some(1)).await.map(|_| ());
    lies.push(verdict("bytes altered on the backend", "get v1", ViolationKind::DataLost, got));

    world.provider(Misbehave::Rollback).await?;
    let c = world.client()?;
    c.put("todo.txt", std::io::Cursor::new(b"buy milk\nbuy bread\n".to_vec()), None, |_| {}).await?;
    let got = fetch(&c, "todo.txt", None).await.map(|_| ());
    lies.push(verdict("rollback (forgets todo.txt v2)", "get", ViolationKind::BadLookupProof, got));
    drop(c);
    let all_caught = lies.iter().all(|l| l.caught);
    if !out.json {
        for l in &lies {
            let verdict = if l.caught { "CAUGHT" } else { "MISSED" };
            println!("{verdict:>8}  {:<34} [{}] {}", l.lie, l.violation.unwrap_or("none"), l.how);
        }
        println!(
            "{}",
            if all_caught {
                format!("all {} lies caught", lies.len())
            } else {
                "SOME LIES WERE NOT CAUGHT (or not as the violation they should show as)".into()
            }
        );
    }
    out.print(&Report { steps, lies, all_caught }, String::new);
    if let Some(s) = world.server.take() {
        s.shutdown().await.context("stopping the provider")?;
    }
    if !all_caught {
        return Err(anyhow::anyhow!("a lie went unnoticed").into());
    }
    Ok(())
}

/// How `op` fared against a lie that should show as the violation `expected`.
fn verdict(lie: &str, op: &str, expected: ViolationKind, result: Result<(), ClientError>) -> Lie {
    let violation = result.as_ref().err().and_then(ClientError::violation_kind);
    let how = match &result {
        Err(e) if violation == Some(expected) => format!("{op}: {e}"),
        Err(e @ ClientError::Misbehaved(_)) => format!("{op}: caught as another violation than {expected}: {e}"),
        Err(e) => format!("{op}: wrong error: {e}"),
        Ok(()) => format!("{op}: accepted"),
    };
    Lie {
        lie: lie.into(),
        caught: violation == Some(expected),
        expected: expected.name(),
        violation: violation.map(ViolationKind::name),
        how,
    }
}

/// Flips one byte in the middle of the first segment object, behind the provider's back.
fn tamper_segment(blobs: &Path) -> anyhow::Result<()> {
    let dir = blobs.join("segments");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    let first = files.first().context("no segment to tamper with")?;
    let mut bytes = std::fs::read(first)?;
    let mid = bytes.len() / 3;
    bytes[mid] ^= 0x20;
    std::fs::write(first, bytes)?;
    Ok(())
}

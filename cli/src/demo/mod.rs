//! `vouch demo`: the five systems in one process on the embedded default, no setup. A provider
//! starts on a free loopback port over a temporary directory, and each system is shown at work
//! and then lied to, each lie caught by the check it should trip (its violation kind):
//! FlexList (a file stored, edited, synced, read back), DPDP (possession audits), Dynamic PoR
//! (a copy damaged past what its reads survive, caught by the audit, healed by repair), VICOS
//! (two members sharing objects, then a forking provider caught when their histories meet),
//! and the S3 gateway (the demo's own S3 client over HTTP, a lie reaching it as
//! `VouchIntegrityViolation`). Exits nonzero if any lie goes unnoticed or is caught as another
//! kind of violation.

mod por;
mod s3;
mod vicos;

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
    system: &'static str,
    step: String,
    detail: String,
}

#[derive(Serialize)]
struct Lie {
    system: &'static str,
    lie: String,
    /// Caught as the violation (or S3 error) it should show as.
    caught: bool,
    /// The violation it should show as, and the one the client reported (if any).
    expected: &'static str,
    violation: Option<&'static str>,
    how: String,
}

/// What the demo showed of one system.
#[derive(Serialize)]
struct Shown {
    system: &'static str,
    steps: usize,
    lies: usize,
    caught: usize,
}

#[derive(Serialize)]
struct Report {
    systems: Vec<Shown>,
    steps: Vec<Step>,
    lies: Vec<Lie>,
    caught: usize,
    all_caught: bool,
    seconds: f64,
}

/// The demo's account, printed as it goes (unless `--json`) and kept for the report.
struct Story {
    json: bool,
    system: &'static str,
    systems: Vec<&'static str>,
    steps: Vec<Step>,
    lies: Vec<Lie>,
}

impl Story {
    /// The sections that follow show `system`: `what` says what it gives.
    fn system(&mut self, system: &'static str, what: &str) {
        if !self.json {
            println!("\n{system}: {what}");
        }
        self.system = system;
        self.systems.push(system);
    }

    fn step(&mut self, step: &str, detail: String) {
        if !self.json {
            println!("{step:>10}  {detail}");
        }
        self.steps.push(Step { system: self.system, step: step.into(), detail });
    }

    fn lie(&mut self, mut lie: Lie) {
        if !self.json {
            let verdict = if lie.caught { "CAUGHT" } else { "MISSED" };
            println!("{verdict:>10}  {} [{}] {}", lie.lie, lie.violation.unwrap_or("none"), lie.how);
        }
        lie.system = self.system;
        self.lies.push(lie);
    }

    fn report(self, seconds: f64) -> Report {
        let systems = self
            .systems
            .iter()
            .map(|&system| Shown {
                system,
                steps: self.steps.iter().filter(|s| s.system == system).count(),
                lies: self.lies.iter().filter(|l| l.system == system).count(),
                caught: self.lies.iter().filter(|l| l.system == system && l.caught).count(),
            })
            .collect();
        let caught = self.lies.iter().filter(|l| l.caught).count();
        Report { systems, all_caught: caught == self.lies.len(), caught, steps: self.steps, lies: self.lies, seconds }
    }
}

const TOKEN: &str = "demo-token";
/// A second client of the provider: the other member of the VICOS groups.
const BOB_TOKEN: &str = "demo-bob-token";

/// The provider's clients: the demo's own and Bob.
fn clients() -> std::collections::HashMap<[u8; 32], String> {
    let mut clients = one_client("demo", TOKEN);
    clients.extend(one_client("bob", BOB_TOKEN));
    clients
}

struct World {
    data: PathBuf,
    state: PathBuf,
    server: Option<RunningServer<Misbehaving>>,
    addr: String,
}

impl World {
    /// (Re)starts the provider over the same data and port, behaving as told.
    async fn provider(&mut self, misbehave: Misbehave) -> anyhow::Result<()> {
        self.stop().await?;
        let provider = Misbehaving::open_dir(&self.data, &Blocks::Local, misbehave).map_err(hinted)?;
        let server = vouch_server::start(&self.addr, provider, clients(), std::future::pending()).await?;
        self.addr = server.addr.to_string();
        self.server = Some(server);
        Ok(())
    }

    /// Stops the provider (its data stays).
    async fn stop(&mut self) -> anyhow::Result<()> {
        if let Some(s) = self.server.take() {
            s.shutdown().await.context("stopping the provider")?;
        }
        Ok(())
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn client(&self) -> Result<Client, ClientError> {
        Client::open(&self.state)
    }
}

/// Pseudo-random but readable sample text.
fn sample(size: usize) -> Vec<u8> {
    sample_seeded(size, 0)
}

/// [`sample`] of another text for each `seed`.
fn sample_seeded(size: usize, seed: u64) -> Vec<u8> {
    let words =
        ["vouch", "proof", "block", "skip", "list", "tag", "root", "audit", "cloud", "trust", "verify", "store"];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
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
    let started = std::time::Instant::now();
    let temp = tempfile::tempdir().context("temporary directory")?;
    let root = args.dir.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let mut world =
        World { data: root.join("provider"), state: root.join("client"), server: None, addr: "127.0.0.1:0".into() };
    let mut story = Story { json: out.json, system: "", systems: Vec::new(), steps: Vec::new(), lies: Vec::new() };
    let shown = async {
        flexlist(&mut world, &mut story, &root, args.size).await?;
        dpdp(&mut world, &mut story).await?;
        por::show(&mut world, &mut story).await?;
        vicos::show(&mut world, &mut story).await?;
        s3::show(&mut world, &mut story).await
    }
    .await;
    world.stop().await?;
    shown?;
    let report = story.report(started.elapsed().as_secs_f64());
    if !out.json {
        let systems: Vec<String> = report.systems.iter().map(|s| format!("{} {}", s.system, s.caught)).collect();
        println!();
        if report.all_caught {
            println!(
                "all {} lies caught ({}), each by the check it should trip, in {:.1} s",
                report.lies.len(),
                systems.join(", "),
                report.seconds
            );
        } else {
            println!(
                "{} of {} lies caught: SOME WERE NOT (or not as the violation they should show as)",
                report.caught,
                report.lies.len()
            );
        }
    }
    let all_caught = report.all_caught;
    out.print(&report, String::new);
    if !all_caught {
        return Err(anyhow::anyhow!("a lie went unnoticed").into());
    }
    Ok(())
}

/// FlexList: a file stored, edited in place and synced from a changed copy, every read
/// verified; then the provider lies about what it reads back.
async fn flexlist(world: &mut World, story: &mut Story, root: &Path, size: usize) -> anyhow::Result<()> {
    story.system("FlexList", "files stored, edited and synced; every read verified against one root digest");
    world.provider(Misbehave::None).await?;
    story.step("provider", format!("listening on {} (untrusted; data in {})", world.url(), world.data.display()));
    let client = Client::init(&world.state, &world.url(), TOKEN)?;
    story.step("init", format!("client state in {}: a key, a token, one root digest", world.state.display()));

    let original = sample(size);
    let t = client.put("notes.txt", std::io::Cursor::new(original.clone()), None, |_| {}).await?;
    story.step(
        "put",
        format!("notes.txt v{}: {} in {} blocks, {:.0} ms", t.version, human(t.bytes), t.blocks, t.seconds * 1e3),
    );
    let line = b"an inserted line, proven in place\n".to_vec();
    let t = client.edit("notes.txt", &ByteEdit::Insert { at: 1000, data: line.clone() }, None).await?;
    let mut edited = original.clone();
    edited.splice(1000..1000, line.iter().copied());
    story.step(
        "edit",
        format!(
            "insert at byte 1000 -> v{}: {} block sent, update proofs {}",
            t.version,
            t.blocks,
            human(t.proof_bytes)
        ),
    );
    let mut changed = edited.clone();
    let middle = changed.len() / 3;
    changed.splice(middle..middle + 100, b"a rewritten passage".iter().copied());
    changed.extend_from_slice(b"\nan appended ending\n");
    let local = root.join("notes-local.txt");
    std::fs::write(&local, &changed).context("writing the local copy")?;
    let s = client.sync("notes.txt", &local).await?;
    story.step(
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
        return Err(anyhow::anyhow!("the demo read back other bytes than it stored"));
    }
    story.step(
        "get",
        format!(
            "v{} and v1 read back verified and byte-exact ({} and {})",
            s.version,
            human(now.len() as u64),
            human(first.len() as u64)
        ),
    );
    let versions = client.log("notes.txt").await?;
    story.step(
        "log",
        format!("{} versions kept: {:?}", versions.len(), versions.iter().map(|v| v.number).collect::<Vec<_>>()),
    );
    client.put("todo.txt", std::io::Cursor::new(b"buy milk\n".to_vec()), None, |_| {}).await?;
    let names: Vec<String> = client.list().await?.into_iter().map(|e| e.name).collect();
    story.step("ls", format!("{names:?}, proven complete"));
    drop(client);

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
        story.lie(verdict(mode.name(), "get", kind, got.map(|_| ())));
    }
    world.provider(Misbehave::HideVersion).await?;
    let got = fetch(&world.client()?, "notes.txt", Some(1)).await.map(|_| ());
    story.lie(verdict("hide-version (v1 \"not found\")", "get v1", ViolationKind::HiddenVersion, got));
    world.provider(Misbehave::HideFile).await?;
    story.lie(verdict("hide-file", "ls", ViolationKind::HiddenName, world.client()?.list().await.map(|_| ())));
    world.provider(Misbehave::None).await?;
    tamper_segment(&world.data.join("blobs"))?;
    // The first segment holds version 1's blocks: reading that version must notice (the
    // provider's own checksum notices first, and it admits to the damage).
    let got = fetch(&world.client()?, "notes.txt", Some(1)).await.map(|_| ());
    story.lie(verdict("bytes altered on the backend", "get v1", ViolationKind::DataLost, got));

    // A rolled-back provider cannot take this client back (it forgot what the client's root
    // holds): Bob's files show it, and the demo's go on.
    world.provider(Misbehave::None).await?;
    let bob = Client::init(&root.join("bob"), &world.url(), BOB_TOKEN)?;
    bob.put("todo.txt", std::io::Cursor::new(b"buy milk\n".to_vec()), None, |_| {}).await?;
    drop(bob);
    world.provider(Misbehave::Rollback).await?;
    let bob = Client::open(&root.join("bob"))?;
    bob.put("todo.txt", std::io::Cursor::new(b"buy milk\nbuy bread\n".to_vec()), None, |_| {}).await?;
    let got = fetch(&bob, "todo.txt", None).await.map(|_| ());
    story.lie(verdict("rollback (forgets todo.txt v2)", "get", ViolationKind::BadLookupProof, got));
    Ok(())
}

/// DPDP: possession proven by 460 random blocks and their homomorphic tags, without the file
/// travelling; then forged and replayed proofs.
async fn dpdp(world: &mut World, story: &mut Story) -> anyhow::Result<()> {
    story.system(
        "DPDP",
        "possession audits: the blocks at 460 random offsets proven by their tags, the file never sent",
    );
    world.provider(Misbehave::None).await?;
    let a = world.client()?.audit("notes.txt", None, 460).await?;
    story.step(
        "audit",
        format!(
            "possession of notes.txt v{} proven: {} blocks challenged, proof {}, {:.1} ms",
            a.version,
            a.challenged_blocks,
            human(a.proof_bytes as u64),
            a.seconds * 1e3
        ),
    );
    let forged = [
        (Misbehave::OtherChallenge, "other-challenge (forged proof)"),
        (Misbehave::StretchBlock, "stretch-block (a block claims its neighbour's bytes)"),
    ];
    for (mode, lie) in forged {
        world.provider(mode).await?;
        let audited = world.client()?.audit("notes.txt", None, 460).await.map(|_| ());
        story.lie(verdict(lie, "audit", ViolationKind::BadAuditProof, audited));
    }
    world.provider(Misbehave::ReplayProof).await?;
    let c = world.client()?;
    c.audit("notes.txt", None, 460).await?;
    story.lie(verdict(
        "replay-proof (an old proof)",
        "second audit",
        ViolationKind::BadAuditProof,
        c.audit("notes.txt", None, 460).await.map(|_| ()),
    ));
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
        system: "",
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

//! `vouch bench e2e`: files through the whole system (client -> HTTP -> provider -> store)
//! against the raw backend, and a version-control replay of small commits to a large file.
//!
//! * Throughput: a verified `put` and `get` of one large file, and the same bytes written
//!   and read by the `object_store` crate straight to the same backend (32 MiB objects; on the
//!   local backend flushed to disk like vouch's segments), minimum of three rounds each.
//! * VCS replay (paper 000 Table 2, paper 001 Table 3): a large file, then commits that each
//!   change 20 KB of it, `random`ly (four 5 KB changes at random offsets) or `consecutive`ly
//!   (one 20 KB region), each sent with `vouch sync`: bytes sent, the commit's multiUpdate proof,
//!   the provider's time (its `Server-Timing`) and the client's whole time per commit.
//! * With `--repo PATH`, a real repository's history the same way ([`crate::repo`]).

use crate::measure::{check, ms, Options, SelfCheckFailed, Target};
use crate::repo::{RepoReplay, Source};
use crate::served::start;
use crate::store::{raw_s3, write_raw};
use bytes::Bytes;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_server::Blocks;
use vouch_store::{S3Config, DEFAULT_SEGMENT_SIZE};

const COMMITS: usize = 8;
const COMMIT_BYTES: usize = 20 << 10;

#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    pub backends: Vec<Throughput>,
    pub skipped: Vec<String>,
    pub vcs: Vec<Replay>,
    /// The client's content-defined chunking on one core, beside SHA-256 of the same bytes.
    pub chunking: Chunking,
    /// The provider's lookup and commit time by namespace size ([`crate::names`]).
    pub names: Vec<crate::names::NameScale>,
    /// A real repository's history (`--repo PATH`); null when none was given.
    pub repo: Option<RepoReplay>,
    pub targets: Vec<Target>,
}

#[derive(Debug, Serialize)]
pub struct Throughput {
    pub backend: &'static str,
    pub file_bytes: usize,
    pub put_mb_s: f64,
    pub raw_put_mb_s: f64,
    pub get_mb_s: f64,
    pub raw_get_mb_s: f64,
    /// A 1 MB file: whole verified round trip latency (put, then get).
    pub small_put_ms: f64,
    pub small_get_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct Chunking {
    pub bytes: usize,
    pub chunks: usize,
    pub mb_s: f64,
    pub sha256_mb_s: f64,
}

#[derive(Debug, Serialize)]
pub struct Replay {
    pub pattern: &'static str,
    pub file_bytes: usize,
    pub commits: usize,
    pub changed_bytes_per_commit: usize,
    /// Medians per commit.
    pub bytes_sent: u64,
    pub blocks_sent: u64,
    pub file_proof_bytes: u64,
    pub all_proof_bytes: u64,
    pub list_bytes: u64,
    pub server_ms: f64,
    pub client_ms: f64,
}

/// Pseudo-random bytes (xorshift), the same for the same seed.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Runs every measurement; with `repo`, also replays that repository's history.
pub fn run(opts: Options, repo: Option<&Source>, mut progress: impl FnMut(&str)) -> Result<Report, SelfCheckFailed> {
    if let Some(source) = repo {
        crate::repo::probe(source)?; // a wrong path fails now, not after minutes of measuring
    }
    let rt = crate::measure::runtime()?;
    let scratch = tempfile::tempdir().map_err(|e| SelfCheckFailed(format!("scratch directory: {e}")))?;
    let big = Bytes::from(data(if opts.quick { 64 << 20 } else { 512 << 20 }, 7));
    let (mut backends, mut skipped) = (Vec::new(), Vec::new());

    progress("e2e: local directory");
    let local = scratch.path().join("local");
    std::fs::create_dir_all(local.join("blobs")).map_err(|e| SelfCheckFailed(format!("scratch directory: {e}")))?;
    let raw: Arc<dyn ObjectStore> = Arc::new(
        object_store::local::LocalFileSystem::new_with_prefix(local.join("blobs"))
            .map_err(|e| SelfCheckFailed(e.to_string()))?,
    );
    backends.push(rt.block_on(throughput("local", Blocks::Local, raw, Some(&local.join("blobs")), &big, &local))?);
    match S3Config::from_env(Some("vouch")) {
        Ok(config) => {
            progress("e2e: S3");
            let dir = scratch.path().join("s3");
            let raw = raw_s3(&config)?;
            backends.push(rt.block_on(throughput("s3", Blocks::S3(config), raw, None, &big, &dir))?);
        }
        Err(why) => skipped.push(format!("s3: {why} (e.g. eval \"$(scripts/minio.sh start DIR)\")")),
    }

    progress("e2e: chunking");
    let chunking = chunking(&big);
    let mut vcs = Vec::new();
    let base = if opts.quick { 64 << 20 } else { 1 << 30 };
    for pattern in ["random", "consecutive"] {
        progress(&format!("e2e: VCS replay, {pattern} 20 KB commits to a {} MB file", base >> 20));
        let dir = scratch.path().join(format!("vcs-{pattern}"));
        vcs.push(rt.block_on(replay(pattern, base, &dir))?);
    }
    let mut names = Vec::new();
    let sizes: &[u64] = if opts.quick { &[10, 1_000, 100_000] } else { &[10, 1_000, 100_000, 1_000_000] };
    for &n in sizes {
        progress(&format!("e2e: a namespace of {n} names"));
        names.push(rt.block_on(crate::names::measure(n, &scratch.path().join(format!("names-{n}"))))?);
    }
    let repo = match repo {
        Some(source) => {
            let dir = scratch.path().join("repo");
            Some(rt.block_on(crate::repo::replay_in(source, opts, &dir, &mut progress))?)
        }
        None => None,
    };

    let mut targets = Vec::new();
    for b in &backends {
        let name = |what: &str| format!("{}: verified {what} of a {} MB file vs raw", b.backend, b.file_bytes >> 20);
        targets.push(Target::at_least(&name("put"), b.put_mb_s / b.raw_put_mb_s, 0.9, "x", None));
        targets.push(Target::at_least(&name("get"), b.get_mb_s / b.raw_get_mb_s, 0.9, "x", None));
    }
    targets.push(Target::at_least("content-defined chunking, one core", chunking.mb_s, 1500.0, "MB/s", None));
    for r in &vcs {
        targets.push(Target::at_most(
            &format!("20 KB {} commit to a {} MB file: client time (sync)", r.pattern, r.file_bytes >> 20),
            r.client_ms,
            1000.0,
            "ms",
            None,
        ));
        let (server_paper, proof_paper, proof_limit) =
            if r.pattern == "random" { ("10 ms", "11 KB", 11.0) } else { ("6 ms", "4 KB", 4.0) };
        targets.push(Target::at_most(
            &format!("20 KB {} commit to a {} MB file: server time", r.pattern, r.file_bytes >> 20),
            r.server_ms,
            2.0,
            "ms",
            Some(server_paper),
        ));
        targets.push(Target::at_most(
            &format!("20 KB {} commit: multiUpdate proof", r.pattern),
            r.file_proof_bytes as f64 / 1024.0,
            proof_limit,
            "KB",
            Some(proof_paper),
        ));
    }
    if let (Some(small), Some(large)) = (names.first(), names.last()) {
        let spread = |f: fn(&crate::names::NameScale) -> f64| f(large) / f(small);
        let what = |op: &str| format!("{op} time, {} names vs {}", large.names, small.names);
        targets.push(Target::at_most(&what("namespace lookup"), spread(|s| s.lookup_us), 2.0, "x", None));
        targets.push(Target::at_most(&what("namespace commit"), spread(|s| s.commit_us), 2.0, "x", None));
    }
    Ok(Report { quick: opts.quick, backends, skipped, vcs, chunking, names, repo, targets })
}

async fn throughput(
    name: &'static str,
    blocks: Blocks,
    raw: Arc<dyn ObjectStore>,
    flush_dir: Option<&Path>,
    big: &Bytes,
    dir: &Path,
) -> Result<Throughput, SelfCheckFailed> {
    std::fs::create_dir_all(dir).map_err(|e| SelfCheckFailed(e.to_string()))?;
    let fail = |e: vouch_client::ClientError| SelfCheckFailed(e.to_string());
    let run = start(&blocks, dir).await?;
    let keys: Vec<object_store::path::Path> =
        (0..big.len().div_ceil(DEFAULT_SEGMENT_SIZE)).map(|i| format!("raw/{name}-{i:04}").into()).collect();
    let (mut put, mut raw_put, mut get, mut raw_get) = (Duration::MAX, Duration::MAX, Duration::MAX, Duration::MAX);
    for round in 0..3 {
        let start = Instant::now();
        write_raw(&raw, &keys, big, flush_dir).await?;
        raw_put = raw_put.min(start.elapsed());
        let start = Instant::now();
        let file = format!("big-{round}");
        run.client.put(&file, std::io::Cursor::new(big.clone()), None, |_| {}).await.map_err(fail)?;
        put = put.min(start.elapsed());

        let start = Instant::now();
        let mut total = 0;
        for key in &keys {
            let got = raw.get(key).await.map_err(|e| SelfCheckFailed(e.to_string()))?;
            total += got.bytes().await.map_err(|e| SelfCheckFailed(e.to_string()))?.len();
        }
        raw_get = raw_get.min(start.elapsed());
        check(total == big.len(), || "raw read back a different length".into())?;
        let start = Instant::now();
        let mut sink = Sink { len: 0, first: None };
        run.client.get(&file, None, None, &mut sink).await.map_err(fail)?;
        get = get.min(start.elapsed());
        check(sink.len == big.len() && sink.first == big.first().copied(), || "vouch read back other bytes".into())?;
    }
    let small = Bytes::from(data(1 << 20, 3));
    let (mut small_put, mut small_get) = (Duration::MAX, Duration::MAX);
    for i in 0..5 {
        let start = Instant::now();
        run.client.put(&format!("small-{i}"), std::io::Cursor::new(small.clone()), None, |_| {}).await.map_err(fail)?;
        small_put = small_put.min(start.elapsed());
        let start = Instant::now();
        let mut out = Vec::new();
        run.client.get(&format!("small-{i}"), None, None, &mut out).await.map_err(fail)?;
        small_get = small_get.min(start.elapsed());
        check(out == small, || "small file read back wrong".into())?;
    }
    run.server.shutdown().await.map_err(|e| SelfCheckFailed(e.to_string()))?;
    let mb_s = |d: Duration| big.len() as f64 / d.as_secs_f64() / 1e6;
    Ok(Throughput {
        backend: name,
        file_bytes: big.len(),
        put_mb_s: mb_s(put),
        raw_put_mb_s: mb_s(raw_put),
        get_mb_s: mb_s(get),
        raw_get_mb_s: mb_s(raw_get),
        small_put_ms: ms(small_put),
        small_get_ms: ms(small_get),
    })
}

/// Counts what a get writes instead of keeping it.
struct Sink {
    len: usize,
    first: Option<u8>,
}

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.first.is_none() {
            self.first = buf.first().copied();
        }
        self.len += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Best of three runs of the client's chunking, and of SHA-256, over `bytes` on this thread.
fn chunking(bytes: &[u8]) -> Chunking {
    let best = |f: &dyn Fn() -> usize| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                let n = f();
                (t.elapsed(), n)
            })
            .min()
            .unwrap_or_default()
    };
    let (cut, chunks) = best(&|| vouch_client::Cutting::Content.cut(bytes).len());
    let (sha, _) = best(&|| vouch_core::hash::sha256(bytes).as_bytes()[0] as usize);
    let mb_s = |d: Duration| bytes.len() as f64 / 1e6 / d.as_secs_f64();
    Chunking { bytes: bytes.len(), chunks, mb_s: mb_s(cut), sha256_mb_s: mb_s(sha) }
}

async fn replay(pattern: &'static str, size: usize, dir: &Path) -> Result<Replay, SelfCheckFailed> {
    std::fs::create_dir_all(dir).map_err(|e| SelfCheckFailed(e.to_string()))?;
    let fail = |e: vouch_client::ClientError| SelfCheckFailed(e.to_string());
    let run = start(&Blocks::Local, dir).await?;
    let mut file = data(size, 11);
    run.client.put("repo.bin", std::io::Cursor::new(file.clone()), None, |_| {}).await.map_err(fail)?;
    let local = dir.join("work.bin");
    let mut rng = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut reports = Vec::new();
    for c in 0..COMMITS {
        let pieces = if pattern == "random" { 4 } else { 1 };
        for _ in 0..pieces {
            let len = COMMIT_BYTES / pieces;
            let at = (next() as usize) % (file.len() - len);
            let fresh = data(len, next());
            file[at..at + len].copy_from_slice(&fresh);
        }
        // The user's saved working copy: flushed, so the provider's own flushes do not wait
        // for it (on ext4 a flush of one file can wait for other files' dirty pages).
        let write = |path: &Path| -> std::io::Result<()> {
            let mut f = std::fs::File::create(path)?;
            std::io::Write::write_all(&mut f, &file)?;
            f.sync_all()
        };
        write(&local).map_err(|e| SelfCheckFailed(e.to_string()))?;
        let report = run.client.sync("repo.bin", &local).await.map_err(fail)?;
        check(report.changed, || format!("commit {c} changed nothing"))?;
        reports.push(report);
    }
    let mut back = Sink { len: 0, first: None };
    run.client.get("repo.bin", None, None, &mut back).await.map_err(fail)?;
    check(back.len == file.len(), || "the replayed file has another length".into())?;
    run.server.shutdown().await.map_err(|e| SelfCheckFailed(e.to_string()))?;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let med = |f: &dyn Fn(&vouch_client::SyncReport) -> f64| median(reports.iter().map(f).collect());
    Ok(Replay {
        pattern,
        file_bytes: size,
        commits: COMMITS,
        changed_bytes_per_commit: COMMIT_BYTES,
        bytes_sent: med(&|r| r.bytes_sent as f64) as u64,
        blocks_sent: med(&|r| r.blocks_sent as f64) as u64,
        file_proof_bytes: med(&|r| r.file_proof_bytes as f64) as u64,
        all_proof_bytes: med(&|r| r.proof_bytes as f64) as u64,
        list_bytes: med(&|r| r.list_bytes as f64) as u64,
        server_ms: med(&|r| r.server_ms.unwrap_or(f64::NAN)),
        client_ms: med(&|r| r.seconds * 1e3),
    })
}

impl crate::Shown for Report {
    fn to_text(&self) -> String {
        let mut out = format!("End-to-end benchmark ({} run)\n", if self.quick { "quick" } else { "full" });
        for b in &self.backends {
            out += &format!(
                "{} ({} MB file): put {:.0} MB/s (raw {:.0}), get {:.0} MB/s (raw {:.0}); 1 MB file: put {:.1} ms, get {:.1} ms\n",
                b.backend,
                b.file_bytes >> 20,
                b.put_mb_s,
                b.raw_put_mb_s,
                b.get_mb_s,
                b.raw_get_mb_s,
                b.small_put_ms,
                b.small_get_ms
            );
        }
        for s in &self.skipped {
            out += &format!("not measured: {s}\n");
        }
        let c = &self.chunking;
        out += &format!(
            "chunking ({} MB, one core): {:.0} MB/s, {} blocks (SHA-256 of the same bytes {:.0} MB/s)\n",
            c.bytes >> 20,
            c.mb_s,
            c.chunks,
            c.sha256_mb_s
        );
        for r in &self.vcs {
            out += &format!(
                "VCS {} ({} commits of 20 KB to a {} MB file), medians: sent {} B in {} blocks, multiUpdate proof {} B (all proofs {} B), block list {} B, server {:.2} ms, client {:.1} ms\n",
                r.pattern,
                r.commits,
                r.file_bytes >> 20,
                r.bytes_sent,
                r.blocks_sent,
                r.file_proof_bytes,
                r.all_proof_bytes,
                r.list_bytes,
                r.server_ms,
                r.client_ms
            );
        }
        for s in &self.names {
            out += &format!(
                "namespace of {} names: first request {:.1} ms; medians: lookup {:.0} us (server {:.0} us), commit {:.0} us (server {:.0} us)\n",
                s.names, s.load_ms, s.lookup_us, s.lookup_server_us, s.commit_us, s.commit_server_us
            );
        }
        if let Some(repo) = &self.repo {
            out += &repo.to_text();
        }
        out + &crate::measure::targets_text(&self.targets)
    }
}

//! `vouch bench store`: the storage layer against the raw backend, on each backend.
//!
//! For the same bytes, vouch's repository (blocks packed into 32 MiB segments, an index
//! committed to the metadata store, checksummed ranged reads) against the `object_store` crate
//! writing and reading them directly (32 MiB objects, the same ranged reads, no index, no
//! checksum).
//! S3 is measured when `VOUCH_S3_*` names a server (`eval "$(scripts/minio.sh start DIR)"`).

use crate::measure::{check, ms, targets_text, Options, SelfCheckFailed, Target};
use bytes::Bytes;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_core::{hash, Block, FlexList};
use vouch_store::{CompactionPolicy, MetaDb, ObjectBlobs, Repository, S3Config, DEFAULT_SEGMENT_SIZE};

const BIG_BLOCK: usize = 1 << 20;
const SMALL_BLOCK: usize = 4 << 10;
const LIST_BLOCKS: usize = 500_000;

#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    pub backends: Vec<BackendFigure>,
    /// Why a backend was not measured.
    pub skipped: Vec<String>,
    pub list: ListFigure,
    pub targets: Vec<Target>,
}

#[derive(Debug, Serialize)]
pub struct BackendFigure {
    pub backend: &'static str,
    pub bytes: usize,
    pub seq_write_mb_s: f64,
    /// The raw crate's puts made as durable as vouch's: on the local backend each object is
    /// flushed to the disk after its put (what vouch does); on S3 an acknowledged put already is.
    pub raw_seq_write_mb_s: f64,
    /// Local only: the raw crate's puts left in the page cache, unflushed (not crash-safe).
    pub raw_unflushed_seq_write_mb_s: Option<f64>,
    pub seq_read_mb_s: f64,
    pub raw_seq_read_mb_s: f64,
    /// Local only: the same reads with the files evicted from the page cache first, so the
    /// bytes come from the disk (what a provider whose data outgrows its memory sees).
    pub cold_seq_read_mb_s: Option<f64>,
    pub raw_cold_seq_read_mb_s: Option<f64>,
    pub random_get_4k_ops_s: f64,
    pub raw_random_get_4k_ops_s: f64,
    pub compaction_mb_s: f64,
}

#[derive(Debug, Serialize)]
pub struct ListFigure {
    pub blocks: usize,
    pub save_ms: f64,
    pub load_ms: f64,
}

pub fn run(opts: Options, mut progress: impl FnMut(&str)) -> Result<Report, SelfCheckFailed> {
    let rt = crate::measure::runtime()?;
    let total = if opts.quick { 64 << 20 } else { 512 << 20 };
    let data: Bytes = (0..total).map(|i: usize| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<_>>().into();
    let scratch = tempfile::tempdir().map_err(|e| SelfCheckFailed(format!("scratch directory: {e}")))?;
    let mut backends = Vec::new();
    let mut skipped = Vec::new();

    progress("store: local directory");
    let local_dir = scratch.path().join("local");
    let blobs = ObjectBlobs::local(&local_dir).map_err(fail)?;
    let raw: Arc<dyn ObjectStore> = Arc::new(
        object_store::local::LocalFileSystem::new_with_prefix(&local_dir)
            .map_err(|e| SelfCheckFailed(e.to_string()))?,
    );
    backends.push(rt.block_on(backend_figure("local", &blobs, raw, Some(&local_dir), &data, scratch.path()))?);

    match S3Config::from_env(Some("vouch")) {
        Ok(config) => {
            progress("store: S3");
            let blobs = ObjectBlobs::s3(&config).map_err(fail)?;
            let raw = raw_s3(&config)?;
            backends.push(rt.block_on(backend_figure("s3", &blobs, raw, None, &data, scratch.path()))?);
        }
        Err(why) => skipped.push(format!("s3: {why} (e.g. eval \"$(scripts/minio.sh start DIR)\")")),
    }

    progress("store: FlexList save and load, 500k blocks");
    let list = rt.block_on(list_figure(scratch.path()))?;
    let mut targets = Vec::new();
    for b in &backends {
        targets.push(Target::at_least(
            &format!("{}: sequential 1 MB writes vs raw", b.backend),
            b.seq_write_mb_s / b.raw_seq_write_mb_s,
            0.9,
            "x",
            None,
        ));
        targets.push(Target::at_least(
            &format!("{}: sequential 1 MB reads vs raw", b.backend),
            b.seq_read_mb_s / b.raw_seq_read_mb_s,
            0.9,
            "x",
            None,
        ));
        if let (Some(cold), Some(raw_cold)) = (b.cold_seq_read_mb_s, b.raw_cold_seq_read_mb_s) {
            targets.push(Target::at_least(
                &format!("{}: sequential 1 MB reads from disk vs raw", b.backend),
                cold / raw_cold,
                0.9,
                "x",
                None,
            ));
        }
    }
    targets.push(Target::at_most(
        "load a 500k-block FlexList from the embedded store",
        list.load_ms,
        1000.0,
        "ms",
        None,
    ));
    Ok(Report { quick: opts.quick, backends, skipped, list, targets })
}

fn fail(e: vouch_store::StoreError) -> SelfCheckFailed {
    SelfCheckFailed(e.to_string())
}

pub(crate) fn raw_s3(config: &S3Config) -> Result<Arc<dyn ObjectStore>, SelfCheckFailed> {
    Ok(Arc::new(s3_builder(config).build().map_err(|e| SelfCheckFailed(e.to_string()))?))
}

/// A client of the S3 server `config` names, as the raw baselines use it.
pub(crate) fn s3_builder(config: &S3Config) -> object_store::aws::AmazonS3Builder {
    vouch_proto::tls::install_provider();
    let b = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(&config.bucket)
        .with_region(&config.region)
        .with_access_key_id(&config.access_key)
        .with_secret_access_key(&config.secret_key)
        .with_allow_http(true);
    match &config.endpoint {
        Some(e) => b.with_endpoint(e),
        None => b,
    }
}

fn mb_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

async fn backend_figure(
    name: &'static str,
    blobs: &ObjectBlobs,
    raw: Arc<dyn ObjectStore>,
    local_dir: Option<&std::path::Path>,
    data: &Bytes,
    scratch: &std::path::Path,
) -> Result<BackendFigure, SelfCheckFailed> {
    let meta = MetaDb::open(&scratch.join(format!("{name}-meta.redb"))).map_err(fail)?;
    let repo = Repository::open(blobs.clone(), meta).map_err(fail)?;

    // Sequential writes: vouch's layout and the raw crate writing the same bytes as objects of
    // the segment size; three rounds, the order alternating, minimum of each.
    let raw_keys: Vec<object_store::path::Path> =
        (0..data.len().div_ceil(DEFAULT_SEGMENT_SIZE)).map(|i| format!("raw/{name}-{i:04}").into()).collect();
    let (mut seq_write, mut raw_seq_write, mut raw_unflushed) = (Duration::MAX, Duration::MAX, Duration::MAX);
    let mut owner = Vec::new();
    for round in 0..3 {
        for vouch_first in [round % 2 == 0, round % 2 == 1] {
            if vouch_first {
                owner = format!("bench/{round}").into_bytes();
                let start = Instant::now();
                write_layout(&repo, &owner, data).await?;
                seq_write = seq_write.min(start.elapsed());
            } else {
                let start = Instant::now();
                write_raw(&raw, &raw_keys, data, local_dir).await?;
                raw_seq_write = raw_seq_write.min(start.elapsed());
                if local_dir.is_some() {
                    let start = Instant::now();
                    write_raw(&raw, &raw_keys, data, None).await?;
                    raw_unflushed = raw_unflushed.min(start.elapsed());
                }
            }
        }
    }

    // Sequential reads of every 1 MB block: checked ranged reads vs the same raw ranges.
    // Reads change nothing; each is the minimum of three runs. On the local backend, three
    // more rounds read from the disk, each file evicted from the page cache before its pass.
    let (mut seq_read, mut raw_seq_read) = (Duration::MAX, Duration::MAX);
    let (mut cold_read, mut raw_cold_read) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        raw_seq_read = raw_seq_read.min(read_raw(&raw, &raw_keys, data.len()).await?);
        seq_read = seq_read.min(read_layout(&repo, &owner, data).await?);
    }
    if let Some(dir) = local_dir {
        for _ in 0..3 {
            evict(dir)?;
            cold_read = cold_read.min(read_layout(&repo, &owner, data).await?);
            evict(dir)?;
            raw_cold_read = raw_cold_read.min(read_raw(&raw, &raw_keys, data.len()).await?);
        }
    }

    // Random 4 KB reads inside the first segment's worth.
    let small_owner = b"bench/small";
    let small = 16usize << 20 >> 12;
    {
        let mut upload = repo.upload(small_owner).map_err(fail)?;
        for (i, b) in data[..16 << 20].chunks(SMALL_BLOCK).enumerate() {
            upload.add(i as u64, &[], data.slice_ref(b)).await.map_err(fail)?;
        }
        let mut commit = repo.begin();
        commit.add_blocks(upload.finish().await.map_err(fail)?);
        repo.commit(commit).await.map_err(fail)?;
    }
    let picks: Vec<usize> = (0..2000u64).map(|k| (k.wrapping_mul(2_654_435_761) % small as u64) as usize).collect();
    let start = Instant::now();
    for &p in &picks {
        repo.read_blocks(small_owner, &[p as u64]).await.map_err(fail)?;
    }
    let random = start.elapsed();
    let start = Instant::now();
    for &p in &picks {
        let off = (p * SMALL_BLOCK) as u64;
        raw.get_range(&raw_keys[0], off..off + SMALL_BLOCK as u64).await.map_err(|e| SelfCheckFailed(e.to_string()))?;
    }
    let raw_random = start.elapsed();

    // Compaction: forget every other 1 MB block, then rewrite the half-dead segments.
    let blocks = data.len().div_ceil(BIG_BLOCK);
    let mut commit = repo.begin();
    commit.forget_blocks_except(&owner, (1..blocks as u64).step_by(2).collect());
    repo.commit(commit).await.map_err(fail)?;
    let start = Instant::now();
    let policy = CompactionPolicy { min_live: 0.6, min_garbage: 0, ..CompactionPolicy::default() };
    let done = repo.compact(&policy).await.map_err(fail)?;
    let compaction = start.elapsed();
    check(done.moved_blocks == blocks / 2, || format!("compaction moved {} blocks", done.moved_blocks))?;

    Ok(BackendFigure {
        backend: name,
        bytes: data.len(),
        seq_write_mb_s: mb_s(data.len(), seq_write),
        raw_seq_write_mb_s: mb_s(data.len(), raw_seq_write),
        raw_unflushed_seq_write_mb_s: local_dir.map(|_| mb_s(data.len(), raw_unflushed)),
        seq_read_mb_s: mb_s(data.len(), seq_read),
        raw_seq_read_mb_s: mb_s(data.len(), raw_seq_read),
        cold_seq_read_mb_s: local_dir.map(|_| mb_s(data.len(), cold_read)),
        raw_cold_seq_read_mb_s: local_dir.map(|_| mb_s(data.len(), raw_cold_read)),
        random_get_4k_ops_s: picks.len() as f64 / random.as_secs_f64(),
        raw_random_get_4k_ops_s: picks.len() as f64 / raw_random.as_secs_f64(),
        compaction_mb_s: mb_s(done.moved_blocks * BIG_BLOCK, compaction),
    })
}

/// Reads every 1 MB block through vouch (index, ranged read, checksum); returns the time taken.
async fn read_layout(repo: &Repository, owner: &[u8], data: &Bytes) -> Result<Duration, SelfCheckFailed> {
    let start = Instant::now();
    for (i, want) in data.chunks(BIG_BLOCK).enumerate() {
        let got = repo.read_blocks(owner, &[i as u64]).await.map_err(fail)?.pop().expect("one block asked");
        let ok = got.data.len() == want.len() && got.data[0] == want[0];
        check(ok, || format!("block {i} read back wrong"))?;
    }
    Ok(start.elapsed())
}

/// The same ranges read straight through the client crate.
async fn read_raw(
    raw: &Arc<dyn ObjectStore>,
    keys: &[object_store::path::Path],
    total: usize,
) -> Result<Duration, SelfCheckFailed> {
    let start = Instant::now();
    for i in 0..total.div_ceil(BIG_BLOCK) {
        let (seg, off) = (i * BIG_BLOCK / DEFAULT_SEGMENT_SIZE, (i * BIG_BLOCK % DEFAULT_SEGMENT_SIZE) as u64);
        let len = BIG_BLOCK.min(total - i * BIG_BLOCK) as u64;
        raw.get_range(&keys[seg], off..off + len).await.map_err(|e| SelfCheckFailed(e.to_string()))?;
    }
    Ok(start.elapsed())
}

/// Drops every file under `dir` from the page cache (flushed first: dirty pages stay cached).
fn evict(dir: &std::path::Path) -> Result<(), SelfCheckFailed> {
    let io = |e: std::io::Error| SelfCheckFailed(format!("evicting {}: {e}", dir.display()));
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            evict(&path)?;
        } else {
            let file = std::fs::File::open(&path).map_err(io)?;
            file.sync_all().map_err(io)?;
            rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).map_err(|e| io(e.into()))?;
        }
    }
    Ok(())
}

/// vouch's write path: pack 1 MB blocks into segments, put them, commit the index.
async fn write_layout(repo: &Repository, owner: &[u8], data: &Bytes) -> Result<(), SelfCheckFailed> {
    let mut upload = repo.upload(owner).map_err(fail)?;
    for (i, block) in data.chunks(BIG_BLOCK).enumerate() {
        upload.add(i as u64, &[], data.slice_ref(block)).await.map_err(fail)?;
    }
    let mut commit = repo.begin();
    commit.add_blocks(upload.finish().await.map_err(fail)?);
    repo.commit(commit).await.map_err(fail)
}

/// The baseline: the same bytes straight through the client crate, two puts in flight; with
/// `flush_dir`, each object is then flushed to the disk like a file (`fsync` of it and its
/// directory), the durability vouch's local puts give.
pub(crate) async fn write_raw(
    raw: &Arc<dyn ObjectStore>,
    keys: &[object_store::path::Path],
    data: &Bytes,
    flush_dir: Option<&std::path::Path>,
) -> Result<(), SelfCheckFailed> {
    use futures::StreamExt;
    let mut puts = futures::stream::iter(data.chunks(DEFAULT_SEGMENT_SIZE).zip(keys))
        .map(|(chunk, key)| {
            let raw = raw.clone();
            let payload = PutPayload::from_bytes(data.slice_ref(chunk));
            let file = flush_dir.map(|dir| dir.join(key.as_ref()));
            async move {
                raw.put(key, payload).await.map_err(|e| e.to_string())?;
                if let Some(file) = file {
                    tokio::task::spawn_blocking(move || flush(&file)).await.map_err(|e| e.to_string())??;
                }
                Ok::<_, String>(())
            }
        })
        .buffer_unordered(2);
    while let Some(r) = puts.next().await {
        r.map_err(SelfCheckFailed)?;
    }
    Ok(())
}

fn flush(file: &std::path::Path) -> Result<(), String> {
    let sync = |p: &std::path::Path| std::fs::File::open(p).and_then(|f| f.sync_all()).map_err(|e| e.to_string());
    sync(file)?;
    file.parent().map_or(Ok(()), sync)
}

async fn list_figure(scratch: &std::path::Path) -> Result<ListFigure, SelfCheckFailed> {
    let blocks: Vec<Block> =
        (0..LIST_BLOCKS as u64).map(|i| Block::new(hash::data(&i.to_le_bytes()), 2048, i)).collect();
    let list = Arc::new(FlexList::build(&blocks).map_err(|e| SelfCheckFailed(e.to_string()))?);
    let meta = MetaDb::open(&scratch.join("lists.redb")).map_err(fail)?;
    let repo = Repository::open(ObjectBlobs::local(&scratch.join("lists")).map_err(fail)?, meta).map_err(fail)?;
    let start = Instant::now();
    let mut commit = repo.begin();
    commit.save_list("bench", list.clone());
    repo.commit(commit).await.map_err(fail)?;
    let save = start.elapsed();
    let mut load = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let loaded = repo.load_list("bench").map_err(fail)?;
        load = load.min(start.elapsed());
        check(loaded.root() == list.root(), || "loaded list has another root".into())?;
    }
    Ok(ListFigure { blocks: LIST_BLOCKS, save_ms: ms(save), load_ms: ms(load) })
}

impl crate::Shown for Report {
    fn to_text(&self) -> String {
        let mut out = format!("Store benchmark ({} run)\n", if self.quick { "quick" } else { "full" });
        for b in &self.backends {
            out += &format!(
                "{} ({} MB): write {:.0} MB/s (raw {:.0}{}), read {:.0} MB/s (raw {:.0}){}, random 4 KB {:.0} ops/s (raw {:.0}), compaction {:.0} MB/s\n",
                b.backend,
                b.bytes >> 20,
                b.seq_write_mb_s,
                b.raw_seq_write_mb_s,
                b.raw_unflushed_seq_write_mb_s.map_or(String::new(), |u| format!("; unflushed {u:.0}")),
                b.seq_read_mb_s,
                b.raw_seq_read_mb_s,
                match (b.cold_seq_read_mb_s, b.raw_cold_seq_read_mb_s) {
                    (Some(c), Some(r)) => format!(", from disk {c:.0} MB/s (raw {r:.0})"),
                    _ => String::new(),
                },
                b.random_get_4k_ops_s,
                b.raw_random_get_4k_ops_s,
                b.compaction_mb_s
            );
        }
        for s in &self.skipped {
            out += &format!("not measured: {s}\n");
        }
        out += &format!(
            "FlexList of {} blocks: save {:.1} ms, load {:.1} ms\n",
            self.list.blocks, self.list.save_ms, self.list.load_ms
        );
        out + &targets_text(&self.targets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_figures_self_check() {
        let rt = crate::measure::runtime().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let data: Bytes = (0..16usize << 20).map(|i| (i >> 7) as u8).collect::<Vec<_>>().into();
        let dir = scratch.path().join("local");
        let blobs = ObjectBlobs::local(&dir).unwrap();
        let raw: Arc<dyn ObjectStore> = Arc::new(object_store::local::LocalFileSystem::new_with_prefix(&dir).unwrap());
        let figure = rt.block_on(backend_figure("local", &blobs, raw, Some(&dir), &data, scratch.path())).unwrap();
        assert_eq!(figure.bytes, 16 << 20);
        assert!(figure.seq_write_mb_s > 0.0 && figure.compaction_mb_s > 0.0);
    }
}

//! `vouch bench store`: the storage layer against the raw backend, on each backend.
//!
//! For the same bytes, vouch's layout (blocks packed into 32 MiB segments, an index committed
//! to the metadata store, checksummed ranged reads) against the `object_store` crate writing
//! and reading them directly (32 MiB objects, the same ranged reads, no index, no checksum).
//! S3 is measured when `VOUCH_S3_*` names a server (`eval "$(scripts/minio.sh start DIR)"`).

use crate::measure::{check, ms, targets_text, Options, SelfCheckFailed, Target};
use bytes::Bytes;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_core::{hash, Block, FlexList};
use vouch_store::{
    compact, load_list, put_segments, read_block, record_segments, save_list, Location, MetaBatch, MetaDb, MetaStore,
    ObjectBlobs, S3Config, SegmentPacker, DEFAULT_SEGMENT_SIZE,
};

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
    pub raw_seq_write_mb_s: f64,
    pub seq_read_mb_s: f64,
    pub raw_seq_read_mb_s: f64,
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
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
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
    backends.push(rt.block_on(backend_figure("local", &blobs, raw, &data, scratch.path()))?);

    match S3Config::from_env(Some("vouch")) {
        Ok(config) => {
            progress("store: S3");
            let blobs = ObjectBlobs::s3(&config).map_err(fail)?;
            let raw = raw_s3(&config)?;
            backends.push(rt.block_on(backend_figure("s3", &blobs, raw, &data, scratch.path()))?);
        }
        Err(why) => skipped.push(format!("s3: {why} (e.g. eval \"$(scripts/minio.sh start DIR)\")")),
    }

    progress("store: FlexList save and load, 500k blocks");
    let list = list_figure(scratch.path())?;
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

fn raw_s3(config: &S3Config) -> Result<Arc<dyn ObjectStore>, SelfCheckFailed> {
    let mut b = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(&config.bucket)
        .with_region(&config.region)
        .with_access_key_id(&config.access_key)
        .with_secret_access_key(&config.secret_key)
        .with_allow_http(true);
    if let Some(e) = &config.endpoint {
        b = b.with_endpoint(e);
    }
    Ok(Arc::new(b.build().map_err(|e| SelfCheckFailed(e.to_string()))?))
}

fn mb_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

async fn backend_figure(
    name: &'static str,
    blobs: &ObjectBlobs,
    raw: Arc<dyn ObjectStore>,
    data: &Bytes,
    scratch: &std::path::Path,
) -> Result<BackendFigure, SelfCheckFailed> {
    let meta = MetaDb::open(&scratch.join(format!("{name}-meta.redb"))).map_err(fail)?;

    // Sequential writes: vouch's layout and the raw crate writing the same bytes as objects of
    // the segment size; three rounds, the order alternating, minimum of each.
    let raw_keys: Vec<object_store::path::Path> =
        (0..data.len().div_ceil(DEFAULT_SEGMENT_SIZE)).map(|i| format!("raw/{name}-{i:04}").into()).collect();
    let (mut seq_write, mut raw_seq_write) = (Duration::MAX, Duration::MAX);
    let mut index = Vec::new();
    let mut next = 0;
    for round in 0..3 {
        for vouch_first in [round % 2 == 0, round % 2 == 1] {
            if vouch_first {
                let start = Instant::now();
                (index, next) = write_layout(blobs, &meta, data).await?;
                seq_write = seq_write.min(start.elapsed());
            } else {
                let start = Instant::now();
                write_raw(&raw, &raw_keys, data).await?;
                raw_seq_write = raw_seq_write.min(start.elapsed());
            }
        }
    }

    // Sequential reads of every 1 MB block: checked ranged reads vs the same raw ranges.
    // Reads change nothing; each is the minimum of three runs.
    let mut seq_read = Duration::MAX;
    let mut raw_seq_read = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for (i, at) in index.iter().enumerate() {
            let got = read_block(blobs, at).await.map_err(fail)?;
            let ok = got.len() == at.len as usize && got[0] == data[i * BIG_BLOCK];
            check(ok, || format!("block {i} read back wrong"))?;
        }
        seq_read = seq_read.min(start.elapsed());
        let start = Instant::now();
        for i in 0..index.len() {
            let (seg, off) = (i * BIG_BLOCK / DEFAULT_SEGMENT_SIZE, (i * BIG_BLOCK % DEFAULT_SEGMENT_SIZE) as u64);
            let len = BIG_BLOCK.min(data.len() - i * BIG_BLOCK) as u64;
            raw.get_range(&raw_keys[seg], off..off + len).await.map_err(|e| SelfCheckFailed(e.to_string()))?;
        }
        raw_seq_read = raw_seq_read.min(start.elapsed());
    }

    // Random 4 KB reads inside the first segment's worth.
    let small: Vec<Location> = {
        let mut packer = SegmentPacker::new(next, DEFAULT_SEGMENT_SIZE);
        let locs: Vec<Location> = data[..16 << 20].chunks(SMALL_BLOCK).map(|b| packer.add(b)).collect();
        put_segments(blobs, packer.finish().0).await.map_err(fail)?;
        locs
    };
    let picks: Vec<usize> =
        (0..2000u64).map(|k| (k.wrapping_mul(2_654_435_761) % small.len() as u64) as usize).collect();
    let start = Instant::now();
    for &p in &picks {
        read_block(blobs, &small[p]).await.map_err(fail)?;
    }
    let random = start.elapsed();
    let start = Instant::now();
    for &p in &picks {
        let off = (p * SMALL_BLOCK) as u64;
        raw.get_range(&raw_keys[0], off..off + SMALL_BLOCK as u64).await.map_err(|e| SelfCheckFailed(e.to_string()))?;
    }
    let raw_random = start.elapsed();

    // Compaction: drop every other 1 MB block, then rewrite the half-dead segments.
    let mut batch = MetaBatch::default();
    for i in (0..index.len()).step_by(2) {
        batch.delete(format!("idx/{i:08}").into_bytes());
    }
    meta.commit(&batch).map_err(fail)?;
    let start = Instant::now();
    let done = compact(blobs, &meta, b"idx/", 0.6, DEFAULT_SEGMENT_SIZE).await.map_err(fail)?;
    let compaction = start.elapsed();
    check(done.moved_blocks == index.len() / 2, || format!("compaction moved {} blocks", done.moved_blocks))?;

    Ok(BackendFigure {
        backend: name,
        bytes: data.len(),
        seq_write_mb_s: mb_s(data.len(), seq_write),
        raw_seq_write_mb_s: mb_s(data.len(), raw_seq_write),
        seq_read_mb_s: mb_s(data.len(), seq_read),
        raw_seq_read_mb_s: mb_s(data.len(), raw_seq_read),
        random_get_4k_ops_s: picks.len() as f64 / random.as_secs_f64(),
        raw_random_get_4k_ops_s: picks.len() as f64 / raw_random.as_secs_f64(),
        compaction_mb_s: mb_s(done.moved_blocks * BIG_BLOCK, compaction),
    })
}

/// vouch's write path: pack 1 MB blocks into segments, put them, commit the index.
async fn write_layout(
    blobs: &ObjectBlobs,
    meta: &MetaDb,
    data: &Bytes,
) -> Result<(Vec<Location>, u64), SelfCheckFailed> {
    let mut packer = SegmentPacker::new(vouch_store::next_segment(meta).map_err(fail)?, DEFAULT_SEGMENT_SIZE);
    let mut batch = MetaBatch::default();
    let mut index = Vec::new();
    for (i, block) in data.chunks(BIG_BLOCK).enumerate() {
        let at = packer.add_shared(data.slice_ref(block));
        batch.put(format!("idx/{i:08}").into_bytes(), at.to_bytes().to_vec());
        index.push(at);
    }
    let (segments, next) = packer.finish();
    record_segments(&mut batch, &segments, next);
    put_segments(blobs, segments).await.map_err(fail)?;
    meta.commit(&batch).map_err(fail)?;
    Ok((index, next))
}

/// The baseline: the same bytes straight through the client crate, two puts in flight.
async fn write_raw(
    raw: &Arc<dyn ObjectStore>,
    keys: &[object_store::path::Path],
    data: &Bytes,
) -> Result<(), SelfCheckFailed> {
    use futures::StreamExt;
    let mut puts = futures::stream::iter(data.chunks(DEFAULT_SEGMENT_SIZE).zip(keys))
        .map(|(chunk, key)| {
            let raw = raw.clone();
            let payload = PutPayload::from_bytes(data.slice_ref(chunk));
            async move { raw.put(key, payload).await }
        })
        .buffer_unordered(2);
    while let Some(r) = puts.next().await {
        r.map_err(|e| SelfCheckFailed(e.to_string()))?;
    }
    Ok(())
}

fn list_figure(scratch: &std::path::Path) -> Result<ListFigure, SelfCheckFailed> {
    let blocks: Vec<Block> =
        (0..LIST_BLOCKS as u64).map(|i| Block::new(hash::data(&i.to_le_bytes()), 2048, i)).collect();
    let list = FlexList::build(&blocks).map_err(|e| SelfCheckFailed(e.to_string()))?;
    let meta = MetaDb::open(&scratch.join("lists.redb")).map_err(fail)?;
    let start = Instant::now();
    let mut batch = MetaBatch::default();
    save_list(&mut batch, "bench", &list, 0);
    meta.commit(&batch).map_err(fail)?;
    let save = start.elapsed();
    let mut load = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let (loaded, _) = load_list(&meta, "bench").map_err(fail)?;
        load = load.min(start.elapsed());
        check(loaded.root() == list.root(), || "loaded list has another root".into())?;
    }
    Ok(ListFigure { blocks: LIST_BLOCKS, save_ms: ms(save), load_ms: ms(load) })
}

impl Report {
    pub fn to_text(&self) -> String {
        let mut out = format!("Store benchmark ({} run)\n", if self.quick { "quick" } else { "full" });
        for b in &self.backends {
            out += &format!(
                "{} ({} MB): write {:.0} MB/s (raw {:.0}), read {:.0} MB/s (raw {:.0}), random 4 KB {:.0} ops/s (raw {:.0}), compaction {:.0} MB/s\n",
                b.backend,
                b.bytes >> 20,
                b.seq_write_mb_s,
                b.raw_seq_write_mb_s,
                b.seq_read_mb_s,
                b.raw_seq_read_mb_s,
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
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let data: Bytes = (0..16usize << 20).map(|i| (i >> 7) as u8).collect::<Vec<_>>().into();
        let dir = scratch.path().join("local");
        let blobs = ObjectBlobs::local(&dir).unwrap();
        let raw: Arc<dyn ObjectStore> = Arc::new(object_store::local::LocalFileSystem::new_with_prefix(&dir).unwrap());
        let figure = rt.block_on(backend_figure("local", &blobs, raw, &data, scratch.path())).unwrap();
        assert_eq!(figure.bytes, 16 << 20);
        assert!(figure.seq_write_mb_s > 0.0 && figure.compaction_mb_s > 0.0);
    }
}

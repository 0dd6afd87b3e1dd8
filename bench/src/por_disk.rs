//! The PoR log's write throughput on the local backend (`vouch_store::PorLog`: levels and C
//! as segment objects, U in the metadata store, one commit per batch) beside the disk's
//! sequential write bandwidth divided by twice the level count: the bound of paper 002,
//! Fig. 7 (every block is written to X and Y of each level it passes through).
//!
//! The figure is the provider's time only (answering the plan and applying the batch, durable
//! when it returns), for an epoch of fresh 4 KiB slots and then overwrites through the window
//! after its end (so the epoch's C, built over the window, is in the figure), in batches; the
//! client's replay runs beside it untimed. The same runs give each batch's time: the slowest
//! beside the median, with large levels and C built over time and with every rebuild at once
//! ([`WorstBatchFigure`]).

use crate::measure::{SelfCheckFailed, Target};
use rand::{rngs::StdRng, Rng, RngCore, SeedableRng};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use vouch_core::por::checksum::{ChecksumKey, SealKey};
use vouch_core::por::client::{plan, write, LogState};
use vouch_core::por::code::DEFAULT_GROUP_LOG;
use vouch_core::por::heap::{split_block, SLOT_DATA_BYTES, SLOT_WIDTH};
use vouch_store::por::CACHED_LEVEL_BYTES;
use vouch_store::{MetaDb, ObjectBlobs, PorLog, Repository};

/// Throughput may fall short of the bound by at most this factor.
const BOUND_FRACTION: f64 = 0.8;

#[derive(Debug, Serialize)]
pub struct DiskFigure {
    pub log_capacity: u32,
    pub batch: usize,
    /// MB of 4 KiB slot payloads per second, the provider's time.
    pub por_mb_per_s: f64,
    /// Sequential writes of one large file, flushed, on the same file system.
    pub disk_mb_per_s: f64,
    /// `disk / (2 · log n)`.
    pub bound_mb_per_s: f64,
    pub ratio: f64,
}

fn fail(what: &str) -> impl Fn(String) -> SelfCheckFailed + '_ {
    move |e| SelfCheckFailed(format!("{what}: {e}"))
}

/// Flushed sequential writes of `bytes` to a new file in `dir`, in MB/s.
fn disk_bandwidth(dir: &Path, bytes: usize) -> Result<f64, SelfCheckFailed> {
    let io = fail("disk bandwidth");
    let chunk = vec![0x5au8; 4 << 20];
    let start = Instant::now();
    let mut file = std::fs::File::create(dir.join("sequential")).map_err(|e| io(e.to_string()))?;
    for _ in 0..bytes / chunk.len() {
        file.write_all(&chunk).map_err(|e| io(e.to_string()))?;
    }
    file.sync_all().map_err(|e| io(e.to_string()))?;
    let elapsed = start.elapsed();
    std::fs::remove_file(dir.join("sequential")).map_err(|e| io(e.to_string()))?;
    Ok(bytes as f64 / elapsed.as_secs_f64() / 1e6)
}

/// Writes per run: an epoch of fresh slots, then overwrites through the window after its end,
/// where the epoch's C is built: `1.5 · 2^k`.
fn run_writes(log_capacity: u32) -> u64 {
    3 << (log_capacity - 1)
}

/// [`run_writes`] slots in batches of `batch` on a fresh local log with the default segments.
pub fn disk_figure(log_capacity: u32, batch: usize, disk_bytes: usize) -> Result<DiskFigure, SelfCheckFailed> {
    let scratch = tempfile::tempdir().map_err(|e| fail("scratch directory")(e.to_string()))?;
    let disk_mb_per_s = disk_bandwidth(scratch.path(), disk_bytes)?;
    let times = crate::measure::one_thread()?.block_on(batch_times(scratch.path(), log_capacity, batch, None))?;
    let provider: Duration = times.iter().sum();
    let por_mb_per_s = (SLOT_DATA_BYTES as u64 * run_writes(log_capacity)) as f64 / provider.as_secs_f64() / 1e6;
    let bound_mb_per_s = disk_mb_per_s / (2.0 * f64::from(log_capacity));
    Ok(DiskFigure {
        log_capacity,
        batch,
        por_mb_per_s,
        disk_mb_per_s,
        bound_mb_per_s,
        ratio: por_mb_per_s / bound_mb_per_s,
    })
}

/// The slowest batch against the median (Sec. 6.1's deamortization): the same writes with
/// large levels and C built over time in segments of `segment_bytes`, and with every
/// rebuild done at once (objects of one segment).
#[derive(Debug, Serialize)]
pub struct WorstBatchFigure {
    pub log_capacity: u32,
    pub batch: usize,
    pub segment_bytes: usize,
    pub mean_ms: f64,
    pub median_ms: f64,
    pub worst_ms: f64,
    pub at_once_mean_ms: f64,
    pub at_once_median_ms: f64,
    pub at_once_worst_ms: f64,
    /// `worst_ms / at_once_worst_ms`.
    pub ratio: f64,
}

/// Objects of one segment however large: nothing is built over time.
const ONE_SEGMENT: usize = 1 << 40;

pub fn worst_batch_figure(
    log_capacity: u32,
    batch: usize,
    segment_bytes: usize,
) -> Result<WorstBatchFigure, SelfCheckFailed> {
    let runtime = crate::measure::one_thread()?;
    let mut figures = Vec::new();
    for segments in [segment_bytes, ONE_SEGMENT] {
        let scratch = tempfile::tempdir().map_err(|e| fail("scratch directory")(e.to_string()))?;
        let mut times = runtime.block_on(batch_times(scratch.path(), log_capacity, batch, Some(segments)))?;
        times.sort_unstable();
        let mean = times.iter().sum::<Duration>() / times.len() as u32;
        figures.push([mean, times[times.len() / 2], times[times.len() - 1]].map(crate::measure::ms));
    }
    let [[mean_ms, median_ms, worst_ms], [at_once_mean_ms, at_once_median_ms, at_once_worst_ms]] =
        [figures[0], figures[1]];
    Ok(WorstBatchFigure {
        log_capacity,
        batch,
        segment_bytes,
        mean_ms,
        median_ms,
        worst_ms,
        at_once_mean_ms,
        at_once_median_ms,
        at_once_worst_ms,
        ratio: worst_ms / at_once_worst_ms,
    })
}

/// The provider's time of each batch of [`run_writes`] 4 KiB slots in batches of `batch`:
/// fresh slots up to the capacity, then random overwrites. `segment_bytes`: the log's
/// segment size instead of the default.
async fn batch_times(
    dir: &Path,
    log_capacity: u32,
    batch: usize,
    segment_bytes: Option<usize>,
) -> Result<Vec<Duration>, SelfCheckFailed> {
    let store = |e: vouch_store::StoreError| fail("store")(e.to_string());
    let log_error = |e: vouch_store::PorStoreError| fail("PoR log")(e.to_string());
    let repo = Repository::open(
        ObjectBlobs::local(&dir.join("blobs")).map_err(store)?,
        MetaDb::open(&dir.join("meta.redb")).map_err(store)?,
    )
    .map_err(store)?;
    let seal = SealKey::new(&[1; 32]);
    let sums = ChecksumKey::grouped(&[2; 32], SLOT_WIDTH, DEFAULT_GROUP_LOG);
    let (mut state, coded) = LogState::new(log_capacity, DEFAULT_GROUP_LOG, &seal);
    let mut log = PorLog::create(&repo, b"bench", (log_capacity, DEFAULT_GROUP_LOG), SLOT_WIDTH, coded)
        .await
        .map_err(log_error)?;
    if let Some(segment_bytes) = segment_bytes {
        log = log.with_limits(segment_bytes, CACHED_LEVEL_BYTES);
    }
    let mut rng = StdRng::seed_from_u64(3);
    let mut block = vec![0u8; SLOT_DATA_BYTES];
    let mut times = Vec::new();
    let n = 1u64 << log_capacity;
    let mut next = 0;
    while next < run_writes(log_capacity) {
        let count = batch.min((run_writes(log_capacity) - next) as usize) as u64;
        let writes: Vec<u64> = match next < n {
            true => (next..n.min(next + count)).collect(),
            false => (0..count).map(|_| rng.gen_range(0..n)).collect(),
        };
        next += writes.len() as u64;
        let mut slots = Vec::with_capacity(writes.len() * SLOT_WIDTH);
        for &index in &writes {
            rng.fill_bytes(&mut block);
            slots.extend(split_block(index, &block));
        }
        let planned = plan(&state, &writes, false).map_err(|e| fail("plan")(e.to_string()))?;
        let start = Instant::now();
        let context = log.context(&planned).map_err(log_error)?;
        let mut provider = start.elapsed();
        let written = write(&state, &planned, &context, &writes, &slots, &seal, &sums)
            .map_err(|e| fail("the provider's context")(e.to_string()))?;
        let start = Instant::now();
        log.apply(&repo, &planned, &writes, &slots, &written).await.map_err(log_error)?;
        provider += start.elapsed();
        times.push(provider);
        state = written.state;
    }
    repo.close().await.map_err(store)?;
    Ok(times)
}

/// The slowest batch may take at most this share of the slowest with every rebuild at once.
const WORST_BATCH_SHARE: f64 = 0.25;

pub fn worst_batch_target(f: &WorstBatchFigure) -> Target {
    Target::at_most(
        &format!("slowest batch vs rebuilds at once, n = 2^{}, batches of {}", f.log_capacity, f.batch),
        f.ratio,
        WORST_BATCH_SHARE,
        "x",
        Some("no write pays for a whole rebuild (Sec. 6.1)"),
    )
}

pub fn targets(figures: &[DiskFigure]) -> Vec<Target> {
    figures
        .iter()
        .map(|f| {
            Target::at_least(
                &format!("write throughput vs disk / (2 log n), n = 2^{}, batches of {}", f.log_capacity, f.batch),
                f.ratio,
                BOUND_FRACTION,
                "x",
                Some("near the bound (Fig. 7)"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_batch_is_measured_beside_rebuilds_at_once() {
        let f = worst_batch_figure(6, 4, 1024).unwrap();
        assert!(f.median_ms > 0.0 && f.worst_ms >= f.median_ms && f.worst_ms >= f.mean_ms, "{f:?}");
        assert!(f.at_once_median_ms > 0.0 && f.at_once_worst_ms >= f.at_once_median_ms, "{f:?}");
        assert!((f.ratio - f.worst_ms / f.at_once_worst_ms).abs() < 1e-9);
    }

    #[test]
    fn a_small_epoch_is_measured_against_its_bound() {
        let f = disk_figure(4, 4, 8 << 20).unwrap();
        assert!(f.por_mb_per_s > 0.0 && f.disk_mb_per_s > 0.0, "{f:?}");
        assert!((f.bound_mb_per_s - f.disk_mb_per_s / 8.0).abs() < 1e-9);
        assert!((f.ratio - f.por_mb_per_s / f.bound_mb_per_s).abs() < 1e-9);
    }
}

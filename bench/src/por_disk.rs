//! The PoR log's write throughput on the local backend (`vouch_store::PorLog`: levels and C
//! as segment objects, U in the metadata store, one commit per batch) beside the disk's
//! sequential write bandwidth divided by twice the level count: the bound of paper 002,
//! Fig. 7 (every block is written to X and Y of each level it passes through).
//!
//! The figure is the provider's time only (answering the plan and applying the batch, durable
//! when it returns), for one epoch of fresh 4 KiB slots in batches; the client's replay runs
//! beside it untimed.

use crate::measure::{SelfCheckFailed, Target};
use rand::{rngs::StdRng, RngCore, SeedableRng};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use vouch_core::por::checksum::{ChecksumKey, SealKey};
use vouch_core::por::client::{plan, write, LogState};
use vouch_core::por::code::DEFAULT_GROUP_LOG;
use vouch_core::por::heap::{split_block, SLOT_DATA_BYTES, SLOT_WIDTH};
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

/// One epoch of `2^log_capacity` slots in batches of `batch` on a fresh local log.
pub fn disk_figure(log_capacity: u32, batch: usize, disk_bytes: usize) -> Result<DiskFigure, SelfCheckFailed> {
    let scratch = tempfile::tempdir().map_err(|e| fail("scratch directory")(e.to_string()))?;
    let disk_mb_per_s = disk_bandwidth(scratch.path(), disk_bytes)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail("runtime")(e.to_string()))?;
    let provider = runtime.block_on(epoch(scratch.path(), log_capacity, batch))?;
    let por_mb_per_s = (SLOT_DATA_BYTES << log_capacity) as f64 / provider.as_secs_f64() / 1e6;
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

async fn epoch(dir: &Path, log_capacity: u32, batch: usize) -> Result<Duration, SelfCheckFailed> {
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
    let mut rng = StdRng::seed_from_u64(3);
    let mut block = vec![0u8; SLOT_DATA_BYTES];
    let mut provider = Duration::ZERO;
    let n = 1u64 << log_capacity;
    let mut next = 0;
    while next < n {
        let writes: Vec<u64> = (next..n.min(next + batch as u64)).collect();
        next += writes.len() as u64;
        let mut slots = Vec::with_capacity(writes.len() * SLOT_WIDTH);
        for &index in &writes {
            rng.fill_bytes(&mut block);
            slots.extend(split_block(index, &block));
        }
        let planned = plan(&state, &writes, false).map_err(|e| fail("plan")(e.to_string()))?;
        let start = Instant::now();
        let context = log.context(&planned).map_err(log_error)?;
        provider += start.elapsed();
        let written = write(&state, &planned, &context, &writes, &slots, &seal, &sums)
            .map_err(|e| fail("the provider's context")(e.to_string()))?;
        let start = Instant::now();
        log.apply(&repo, &planned, &writes, &slots, &written).await.map_err(log_error)?;
        provider += start.elapsed();
        state = written.state;
    }
    repo.close().await.map_err(store)?;
    Ok(provider)
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
    fn a_small_epoch_is_measured_against_its_bound() {
        let f = disk_figure(4, 4, 8 << 20).unwrap();
        assert!(f.por_mb_per_s > 0.0 && f.disk_mb_per_s > 0.0, "{f:?}");
        assert!((f.bound_mb_per_s - f.disk_mb_per_s / 8.0).abs() < 1e-9);
        assert!((f.ratio - f.por_mb_per_s / f.bound_mb_per_s).abs() < 1e-9);
    }
}

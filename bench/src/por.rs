//! `vouch bench por`: the PoR code's throughput per level (paper 002, Fig. 11: over
//! 1600 MB/s per level), beside `reed-solomon-simd` encoding the same blocks and a plain
//! memory copy of them; homomorphic checksums beside SHA-256 of the same bytes. All in the
//! same run, on one thread.
//!
//! Blocks are 4 KiB, read as 586 field elements (7 bytes each). A level of `2^ℓ` blocks is
//! rebuilt from the levels below it and one new block (HRebuildX and HRebuildY); the level's
//! own step is one `mix` of two halves of `2^(ℓ-1)` slots for X and one for Y. Throughput is
//! the level's block bytes (`2^ℓ × 4 KiB`) over the time, so the figures compare directly
//! with encoding the same blocks into as many recovery blocks with `reed-solomon-simd`.

use crate::measure::{check, min_time, min_time_with, targets_text, SelfCheckFailed, Target};
use crate::por_disk::{self, DiskFigure, WorstBatchFigure};
use crate::por_edit::{self, EditFigure};
use crate::por_growth::{self, GrowthFigure};
use crate::por_writes::{self, AuditFigure, WriteFigure};
use rand::{rngs::StdRng, Rng, SeedableRng};
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use std::hint::black_box;
use std::time::Duration;
use vouch_core::por::checksum::ChecksumKey;
use vouch_core::por::code::{encode, rebuild_level, rebuild_level_into};
use vouch_core::por::decode::decode;
use vouch_core::por::field::{root_of_unity, to_elements, SECTOR_BYTES};
use vouch_core::por::transform::mix_in_place;

pub use crate::measure::Options;

const BLOCK_BYTES: usize = 4096;
/// The paper's coding throughput per level (Fig. 11).
const PAPER_MB_PER_S: f64 = 1600.0;
/// The targets: coding 2.5x the paper, per core; checksums as fast.
const CODING_TARGET_MB_PER_S: f64 = 4000.0;
const CHECKSUM_TARGET_MB_PER_S: f64 = 4000.0;
/// Segments of the slowest-batch figure: small enough that large levels and C are built over
/// time at the benchmark's sizes (at the default 48 MiB, that starts on logs 12x larger).
const WORST_BATCH_SEGMENT_BYTES: usize = 4 << 20;

#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    pub block_bytes: usize,
    /// The butterfly's vector kernel (`vouch_simd::kernel_name`): `"avx512"`, or `"portable"`
    /// (scalar only; also forced by `VOUCH_SIMD=portable`).
    pub kernel: &'static str,
    pub baseline: Baseline,
    pub levels: Vec<LevelFigure>,
    /// Bytes per 4 KiB write beside a Merkle tree's ([`crate::por_writes`]).
    pub writes: Vec<WriteFigure>,
    /// One audit per log size, taken when the most levels are filled.
    pub audits: Vec<AuditFigure>,
    /// Write throughput on the local backend beside the disk's bound ([`crate::por_disk`]).
    pub disk: Vec<DiskFigure>,
    /// The slowest batch beside the median, rebuilds over time and at once ([`crate::por_disk`]).
    pub worst_batch: WorstBatchFigure,
    /// A PoR file edited in the middle, end to end ([`crate::por_edit`]).
    pub edit: EditFigure,
    /// The client's side of a growth: C's sealed checksums whole beside in parts
    /// ([`crate::por_growth`]).
    pub growth: Vec<GrowthFigure>,
    /// How often audits catch a provider that lost a fraction of what it holds, beside the
    /// law (DPDP's challenge and the PoR audit; [`crate::detection`]).
    pub detection: Vec<crate::detection::DetectionRow>,
    pub targets: Vec<Target>,
}

#[derive(Debug, Serialize)]
pub struct Baseline {
    /// Copying a buffer as large as the largest level's elements, one thread.
    pub memory_copy_mb_per_s: f64,
    /// SHA-256 of the bytes the checksum figure covers, in 4 KiB blocks.
    pub sha256_mb_per_s: f64,
    /// `σ = M·B` of every 4 KiB block (Sec. 5.3), straight from the bytes.
    pub checksum_mb_per_s: f64,
}

/// One level size; every figure is MB of the level's blocks per second, one thread.
#[derive(Debug, Serialize)]
pub struct LevelFigure {
    pub level: u32,
    pub blocks: usize,
    /// The level's own step: `mix` of the two halves of X and of Y, in place.
    pub step_mb_per_s: f64,
    /// HRebuildX and HRebuildY from the levels below and the new block, into a reused buffer.
    pub rebuild_mb_per_s: f64,
    /// The level from scratch, as CRebuild encodes C: `O(m log m)`.
    pub encode_mb_per_s: f64,
    /// Half of the level's slots erased at random, decoded.
    pub decode_mb_per_s: f64,
    /// Baseline: `reed-solomon-simd` encoding the same blocks into as many recovery blocks.
    pub reed_solomon_simd_mb_per_s: f64,
}

pub fn run(opts: Options, mut progress: impl FnMut(&str)) -> Result<Report, SelfCheckFailed> {
    let runs = if opts.quick { 3 } else { 5 };
    let levels: &[u32] = if opts.quick { &[6, 10, 12] } else { &[6, 10, 12, 14, 15] };
    let slot = BLOCK_BYTES.div_ceil(SECTOR_BYTES);
    let mut figures = Vec::new();
    for &level in levels {
        progress(&format!("level {level}: {} blocks of 4 KiB", 1 << level));
        figures.push(level_figure(level, slot, runs)?);
    }
    let largest = (1usize << levels.last().copied().unwrap_or(0)) * slot;
    let source = vec![1u64; largest];
    let mut sink = vec![0u64; largest];
    let (copy, _) = min_time(runs, || {
        sink.copy_from_slice(black_box(&source));
        black_box(sink[largest / 2])
    });
    progress("checksums beside SHA-256");
    let bytes = vec![0x5au8; if opts.quick { 16 << 20 } else { 64 << 20 }];
    let key = ChecksumKey::new(&[3; 32], slot);
    let (sums, _) = min_time(runs, || {
        bytes.chunks(BLOCK_BYTES).map(|b| key.checksum_bytes(b).rows()[0]).fold(0, u64::wrapping_add)
    });
    let (sha, _) = min_time(runs, || bytes.chunks(BLOCK_BYTES).map(|b| Sha256::digest(b)[0]).fold(0u8, |a, b| a ^ b));
    let checksum_mb_per_s = mb_per_s(bytes.len(), sums);
    let mut targets: Vec<Target> = figures
        .iter()
        .map(|f| {
            Target::at_least(
                &format!("coding, level {} step (X and Y), one core", f.level),
                f.step_mb_per_s,
                CODING_TARGET_MB_PER_S,
                "MB/s",
                Some(&format!("{PAPER_MB_PER_S:.0} MB/s per level (Fig. 11)")),
            )
        })
        .collect();
    targets.push(Target::at_least("checksums, one core", checksum_mb_per_s, CHECKSUM_TARGET_MB_PER_S, "MB/s", None));
    let (mut writes, mut audits) = (Vec::new(), Vec::new());
    for &k in if opts.quick { &[10][..] } else { &[10, 14][..] } {
        for batch in [1, 16, 64] {
            progress(&format!("bytes per write: an epoch of 2^{k} slots in batches of {batch}"));
            let (write, audit) = por_writes::epoch(k, batch);
            writes.push(write);
            if batch == 1 {
                audits.push(audit);
            }
        }
    }
    targets.extend(por_writes::targets(&writes));
    let mut disk = Vec::new();
    let (k, disk_bytes) = if opts.quick { (12, 256 << 20) } else { (14, 1 << 30) };
    progress(&format!("write throughput on the local backend: an epoch of 2^{k} slots in batches of 64"));
    disk.push(por_disk::disk_figure(k, 64, disk_bytes)?);
    targets.extend(por_disk::targets(&disk));
    progress(&format!("the slowest batch: 1.5 epochs of 2^{k} slots in batches of 64, built over time and at once"));
    let worst_batch = por_disk::worst_batch_figure(k, 64, WORST_BATCH_SEGMENT_BYTES)?;
    targets.push(por_disk::worst_batch_target(&worst_batch));
    let file_bytes = if opts.quick { 64 << 20 } else { 256 << 20 };
    progress(&format!("an edit of a {} MB PoR file, end to end on the local backend", file_bytes >> 20));
    let scratch = tempfile::tempdir().map_err(|e| SelfCheckFailed(format!("scratch directory: {e}")))?;
    let edit = por_edit::edit_figure(file_bytes, scratch.path())?;
    targets.extend(por_edit::targets(&edit));
    let mut growth = Vec::new();
    for &k in if opts.quick { &[16][..] } else { &[16, 20][..] } {
        progress(&format!("a growth to 2^{k} slots, the client's side: C sealed whole and in parts"));
        growth.push(por_growth::growth_figure(k, runs)?);
    }
    progress("detection statistics: audits against a provider that lost a fraction of what it holds");
    let detection = crate::detection::rows(opts.quick)?;
    targets.push(crate::detection::target(&detection));
    Ok(Report {
        quick: opts.quick,
        block_bytes: BLOCK_BYTES,
        kernel: vouch_simd::kernel_name(),
        baseline: Baseline {
            memory_copy_mb_per_s: mb_per_s(largest * 8, copy),
            sha256_mb_per_s: mb_per_s(bytes.len(), sha),
            checksum_mb_per_s,
        },
        levels: figures,
        writes,
        audits,
        disk,
        worst_batch,
        edit,
        growth,
        detection,
        targets,
    })
}

fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e6
}

fn level_figure(level: u32, slot: usize, runs: usize) -> Result<LevelFigure, SelfCheckFailed> {
    let blocks = 1usize << level;
    let bytes = blocks * BLOCK_BYTES;
    let mut rng = StdRng::seed_from_u64(u64::from(level));
    let raw: Vec<Vec<u8>> = (0..blocks)
        .map(|_| {
            let mut block = vec![0u8; BLOCK_BYTES];
            rng.fill(&mut block[..]);
            block
        })
        .collect();
    let data: Vec<u64> = raw.iter().flat_map(|b| to_elements(b)).collect();
    let log_capacity = 20;
    let start = 3u64 << level; // a level in the middle of an epoch

    // The levels below, as HAdd would hold them before the write that ends this level.
    let mut below = Vec::new();
    let mut at = 0;
    for i in (0..level).rev() {
        let size = (1usize << i) * slot;
        below.push(encode(&data[at..at + size], slot, log_capacity, start + (at / slot) as u64));
        at += size;
    }
    below.reverse();
    let refs: Vec<&[u64]> = below.iter().map(Vec::as_slice).collect();
    let last = &data[(blocks - 1) * slot..];
    let level_code = rebuild_level(&refs, last, slot, log_capacity, start + blocks as u64 - 1);
    let mut buffer = Vec::new();
    let (rebuild, _) = min_time(runs, || {
        rebuild_level_into(&mut buffer, &refs, last, slot, log_capacity, start + blocks as u64 - 1);
        black_box(buffer.len())
    });
    let (encode_time, scratch) = min_time(runs, || encode(&data, slot, log_capacity, start));
    check(scratch == level_code, || format!("level {level}: the rebuilt level differs from its encoding"))?;

    let nu = root_of_unity(level).expect("level within 2-adicity");
    let (step, _) = min_time_with(
        runs,
        || (data.clone(), data.clone()),
        |(mut x, mut y)| {
            mix_in_place(&mut x, slot, nu);
            mix_in_place(&mut y, slot, nu);
            black_box((x, y))
        },
    );

    let mut erased = vec![false; 2 * blocks];
    let mut order: Vec<usize> = (0..2 * blocks).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    order[..blocks].iter().for_each(|&i| erased[i] = true);
    let slots: Vec<Option<&[u64]>> =
        level_code.chunks_exact(slot).zip(&erased).map(|(s, &gone)| (!gone).then_some(s)).collect();
    let (decode_time, decoded) = min_time(runs, || decode(&slots, slot, log_capacity, start));
    check(decoded.as_deref() == Ok(&data[..]), || format!("level {level}: decoding half the slots failed"))?;

    let (rs, _) =
        min_time(runs, || reed_solomon_simd::encode(blocks, blocks, &raw).expect("supported shard counts").len());
    Ok(LevelFigure {
        level,
        blocks,
        step_mb_per_s: mb_per_s(bytes, step),
        rebuild_mb_per_s: mb_per_s(bytes, rebuild),
        encode_mb_per_s: mb_per_s(bytes, encode_time),
        decode_mb_per_s: mb_per_s(bytes, decode_time),
        reed_solomon_simd_mb_per_s: mb_per_s(bytes, rs),
    })
}

impl crate::Shown for Report {
    fn to_text(&self) -> String {
        let mut out = format!(
            "PoR benchmark: {} B blocks, one thread, minimum of several runs; butterfly kernel {}\n\
             baseline: memory copy {:.0} MB/s, SHA-256 {:.0} MB/s; checksums {:.0} MB/s\n",
            self.block_bytes,
            self.kernel,
            self.baseline.memory_copy_mb_per_s,
            self.baseline.sha256_mb_per_s,
            self.baseline.checksum_mb_per_s
        );
        out += "level  blocks    step  rebuild  encode  decode  reed-solomon-simd   (MB/s of the level's blocks)\n";
        for f in &self.levels {
            out += &format!(
                "{:>5} {:>7} {:>7.0} {:>8.0} {:>7.0} {:>7.0} {:>18.0}\n",
                f.level,
                f.blocks,
                f.step_mb_per_s,
                f.rebuild_mb_per_s,
                f.encode_mb_per_s,
                f.decode_mb_per_s,
                f.reed_solomon_simd_mb_per_s
            );
        }
        out += &format!(
            "bytes per 4 KiB write, one epoch (incl. C's rebuild): PoR vs Merkle tree\n{:>9} {:>6} {:>8} {:>8} {:>6}\n",
            "capacity", "batch", "PoR", "Merkle", "ratio"
        );
        for w in &self.writes {
            out += &format!(
                "{:>9} {:>6} {:>8.0} {:>8.0} {:>6.3}\n",
                format!("2^{}", w.log_capacity),
                w.batch,
                w.por_bytes_per_write,
                w.merkle_bytes_per_write,
                w.ratio
            );
        }
        for a in &self.audits {
            out += &format!(
                "audit, capacity 2^{}: {} parts of λ = {}, {} bytes; provider {:.2} ms (from memory), client {:.2} ms\n",
                a.log_capacity, a.parts, a.lambda, a.bytes, a.provider_ms, a.client_ms
            );
        }
        for d in &self.disk {
            out += &format!(
                "write throughput, local backend, capacity 2^{}, batches of {}: {:.1} MB/s (provider); disk {:.0} MB/s, bound disk/(2 log n) {:.1} MB/s\n",
                d.log_capacity, d.batch, d.por_mb_per_s, d.disk_mb_per_s, d.bound_mb_per_s
            );
        }
        let w = &self.worst_batch;
        out += &format!(
            "batches, capacity 2^{}, batches of {}, 1.5 epochs: built over time (segments of {} MiB) mean {:.1} ms, median {:.1} ms, slowest {:.1} ms; at once mean {:.1} ms, median {:.1} ms, slowest {:.1} ms\n",
            w.log_capacity, w.batch, w.segment_bytes >> 20, w.mean_ms, w.median_ms, w.worst_ms, w.at_once_mean_ms, w.at_once_median_ms, w.at_once_worst_ms
        );
        let e = &self.edit;
        out += &format!(
            "PoR file of {} MB, local backend: put {:.1} s ({} slots); a 20 KB edit in its middle {:.2} s, sent {} bytes, took {} slots ({:.5} of the whole copy)\n",
            e.file_bytes >> 20, e.put_seconds, e.whole_slots, e.edit_seconds, e.edit_bytes, e.edit_slots, e.share
        );
        for g in &self.growth {
            out += &format!(
                "growth to 2^{}, the client's side: C sealed whole {:.0} ms, holding {} MB; in parts {:.0} ms ({:.2}x), holding {} MB\n",
                g.log_capacity, g.whole_ms, g.whole_bytes_held >> 20, g.parts_ms, g.ratio, g.parts_bytes_held >> 20
            );
        }
        out += &crate::detection::text(&self.detection);
        out + &targets_text(&self.targets)
    }
}

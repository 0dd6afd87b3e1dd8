//! The client's side of a growth of the PoR log (C re-encoded over all of U, App. A.3): C's
//! sealed checksums made whole, as the client did before `vouch_core::por::stream`, beside
//! made a part at a time, as the client uploads them now. Both in the same run, one thread.
//!
//! In parts, C's first half is transformed in place, sealed and sent, then undone and
//! transformed again into its second half: one buffer of U's checksums (16 bytes a slot)
//! instead of U's checksums, C's code and C's sealed checksums at once, at the price of one
//! inverse and one forward transform more.

use crate::measure::{check, min_time, SelfCheckFailed};
use rand::{rngs::StdRng, Rng, SeedableRng};
use serde::Serialize;
use std::hint::black_box;
use vouch_core::por::checksum::{Checksum, SealKey, ROWS, SEALED_LEN};
use vouch_core::por::field::P;
use vouch_core::por::replay::replay_coded_at;
use vouch_core::por::stream::CodedSums;

/// Sealed checksums per part in the figure (the client seals this many per step).
const PER_PART: usize = 4096;

#[derive(Debug, Serialize)]
pub struct GrowthFigure {
    pub log_capacity: u32,
    /// C's sealed checksums made whole (U's checksums in, all of C's sealed out).
    pub whole_ms: f64,
    /// The same checksums made a part at a time.
    pub parts_ms: f64,
    /// `parts_ms / whole_ms`.
    pub ratio: f64,
    /// The buffers each path holds at once, from their sizes: whole, U's checksums, a copy
    /// of them, C's code (two slots per slot of U) and C's sealed checksums; in parts, U's
    /// checksums and one part.
    pub whole_bytes_held: u64,
    pub parts_bytes_held: u64,
}

/// C's sealed checksums over U of `2^log_capacity` slots, whole and in parts, the minimum
/// of `runs` each; checks that both make the same checksums.
pub fn growth_figure(log_capacity: u32, runs: usize) -> Result<GrowthFigure, SelfCheckFailed> {
    let seal = SealKey::new(&[9; 32]);
    let mut rng = StdRng::seed_from_u64(u64::from(log_capacity));
    let n = 1usize << log_capacity;
    let rows: Vec<u64> = (0..n * ROWS).map(|_| rng.gen_range(0..P)).collect();
    let sums: Vec<Checksum> = rows
        .chunks_exact(ROWS)
        .map(|r| Checksum::from_canonical(r.try_into().expect("ROWS elements")).expect("below p"))
        .collect();
    let time = 3u64 << log_capacity;
    let (whole_time, whole) = min_time(runs, || replay_coded_at(log_capacity, time, &sums, &seal));
    let coded = || CodedSums { log_capacity, time, rows: rows.clone() };
    let (parts_time, count) =
        min_time(runs, || coded().sealed_parts(&seal, PER_PART).map(|part| black_box(part).len()).sum::<usize>());
    check(count == 2 * n, || format!("2^{log_capacity}: {count} sealed checksums in parts, not {}", 2 * n))?;
    let same = coded().sealed_parts(&seal, PER_PART).flatten().eq(whole.iter().copied());
    check(same, || format!("2^{log_capacity}: C sealed in parts differs from C sealed whole"))?;
    let (n, sealed) = (n as u64, SEALED_LEN as u64);
    let (whole_ms, parts_ms) = (whole_time.as_secs_f64() * 1e3, parts_time.as_secs_f64() * 1e3);
    Ok(GrowthFigure {
        log_capacity,
        whole_ms,
        parts_ms,
        ratio: parts_ms / whole_ms,
        whole_bytes_held: n * 16 * 2 + 2 * n * 16 + 2 * n * sealed,
        parts_bytes_held: n * 16 + PER_PART as u64 * sealed,
    })
}

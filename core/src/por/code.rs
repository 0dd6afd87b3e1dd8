//! The code of Eq. (1): the levels of the hierarchical log H and the erasure-coded copy C.
//!
//! With `n = 2^k` the log's capacity and `w` a primitive `2n`-th root of unity, level `ℓ`
//! holds the `m = 2^ℓ` blocks `x_0..x_(m-1)` written at times `t..t+m` (`t` a multiple of
//! `m`) as `2m` codeword slots `H_ℓ = (X, Y)`:
//!
//! * `X[j] = Σ_s x_s · ν^(ψ_ℓ(s)·j)`, `ν` a primitive `m`-th root of unity: `π_ℓ(x)·F_ℓ`;
//! * `Y[j] = Σ_s x_s · w^(ψ_k(t+s)) · ν^(ψ_ℓ(s)·j)`: `π_ℓ(x)·D_(ℓ,t)·F_ℓ`, the diagonal
//!   taken after the permutation (Fig. 4's HAdd multiplies the block of time `t` by
//!   `w^ψ(t)` before it enters the butterfly network).
//!
//! Writing `μ` for the primitive `2m`-th root with `μ² = ν` and `P(y) = Σ_u x_(ψ_ℓ(u)) y^u`,
//! this is `X[j] = P(μ^(2j))` and `Y[j] = c·P(μ^(2j+1))` with `c = w^ψ_k(t)`: a Reed–Solomon
//! code, `P` of degree below `m` evaluated at all `2m` powers of `μ`. That is Lemma 1 (any
//! `m` of the `2m` slots recover the blocks), and [`super::decode`] decodes it that way.
//! C is the same code over all of U at `t = 0` (`ℓ = k`, `c = 1`).
//!
//! Everything is computed on flat arrays of slots (see [`super::transform`]); the caller
//! owns storage. Times are absolute write counters; the code uses them modulo `n`.

use super::field::{pow, root_of_unity};
use super::transform::{forward, mix_in_place, psi, scale};

/// Which rebuild a write triggers (Fig. 4 HAdd).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rebuild {
    /// Levels `0..ℓ` and the new block become level `ℓ` (HRebuildX / HRebuildY).
    Level(u32),
    /// Every `n` writes: C is re-encoded from U and H is emptied (CRebuild).
    Coded,
}

/// The log's shape at a point in time: all the client needs to know which levels are
/// filled, when their blocks were written, and what the next write rebuilds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// `k`: the log holds up to `2^k` blocks between two rebuilds of C.
    pub log_capacity: u32,
    /// Writes so far (absolute); the next write happens at this time.
    pub time: u64,
}

impl Schedule {
    pub fn capacity(&self) -> u64 {
        1 << self.log_capacity
    }

    fn epoch_time(&self) -> u64 {
        self.time % self.capacity()
    }

    /// The rebuild the write at [`Self::time`] triggers: its level is the number of filled
    /// levels below the first empty one.
    pub fn next_rebuild(&self) -> Rebuild {
        match self.epoch_time().trailing_ones() {
            level if level >= self.log_capacity => Rebuild::Coded,
            level => Rebuild::Level(level),
        }
    }

    /// Whether level `level` holds blocks now (bit `ℓ` of the time within the epoch).
    pub fn is_filled(&self, level: u32) -> bool {
        level < self.log_capacity && (self.epoch_time() >> level) & 1 == 1
    }

    /// The levels that hold blocks, smallest first.
    pub fn filled_levels(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.log_capacity).filter(|&level| self.is_filled(level))
    }

    /// The absolute time the first block of a filled level was written.
    pub fn level_start(&self, level: u32) -> Option<u64> {
        self.is_filled(level).then(|| (self.time >> (level + 1)) << (level + 1))
    }

    /// When a filled level's slots were written, counted in writes done: the level is
    /// rebuilt by the write of its last block, so `start + 2^ℓ`. Sealed checksums are bound
    /// to this time (Sec. 5.4).
    pub fn level_time(&self, level: u32) -> Option<u64> {
        self.level_start(level).map(|start| start + (1 << level))
    }

    /// When C's slots were written, counted in writes done: `0` for the C built at
    /// initialisation, else the end of the last epoch (CRebuild runs in its last write).
    pub fn coded_time(&self) -> u64 {
        self.time - self.epoch_time()
    }
}

/// `c = w^ψ_k(t mod n)`: the factor HAdd gives the Y copy of the block written at `time`.
pub fn twist(log_capacity: u32, time: u64) -> u64 {
    let n_mask = (1u64 << log_capacity) - 1;
    let w = root_of_unity(log_capacity + 1).expect("capacity within the field's 2-adicity");
    pow(w, psi(log_capacity, time & n_mask))
}

/// HRebuildX(ℓ, B) and HRebuildY(ℓ, B·w^ψ(t)) of Fig. 4: level `ℓ = levels.len()` (X then Y,
/// `2^(ℓ+1)` slots) from the filled levels `0..ℓ` (`levels[i]` is level `i`, X then Y) and
/// the block written at `time`, which ends the new level.
///
/// Each half is laid out oldest first (level `ℓ-1`, ..., level 0, the block) and the mixes
/// run in place on ever larger tails, as Fig. 3's red arrays: `2^ℓ - 1` butterflies of one
/// slot each per half.
///
/// # Panics
/// When a level or the block has the wrong number of elements (a caller's bug).
pub fn rebuild_level(levels: &[&[u64]], block: &[u64], slot: usize, log_capacity: u32, time: u64) -> Vec<u64> {
    let mut out = Vec::new();
    rebuild_level_into(&mut out, levels, block, slot, log_capacity, time);
    out
}

/// [`rebuild_level`] into `out`, reusing its allocation (a server rebuilding levels over and
/// over keeps one buffer per level and skips the page faults of a fresh one).
pub fn rebuild_level_into(
    out: &mut Vec<u64>,
    levels: &[&[u64]],
    block: &[u64],
    slot: usize,
    log_capacity: u32,
    time: u64,
) {
    let level = levels.len();
    assert!(block.len() == slot, "the block is one slot");
    for (i, filled) in levels.iter().enumerate() {
        assert!(filled.len() == (2 << i) * slot, "level {i} holds 2^{} slots", i + 1);
    }
    let m = 1usize << level;
    out.clear();
    out.reserve(2 * m * slot);
    for half in 0..2 {
        for (i, filled) in levels.iter().enumerate().rev() {
            let size = (1 << i) * slot;
            out.extend_from_slice(&filled[half * size..(half + 1) * size]);
        }
        out.extend_from_slice(block);
    }
    let (x, y) = out.split_at_mut(m * slot);
    scale(&mut y[(m - 1) * slot..], twist(log_capacity, time));
    for half in [x, y] {
        for i in 0..level {
            let nu = root_of_unity(i as u32 + 1).expect("level within the field's 2-adicity");
            let tail = half.len() - (2 << i) * slot;
            mix_in_place(&mut half[tail..], slot, nu);
        }
    }
}

/// The code of `blocks` (`2^ℓ` slots, in the order written, the first at `start`) from
/// scratch: level `ℓ` as HAdd would have built it, or C (CRebuild) for all of U with
/// `start = 0` and `ℓ = k`.
pub fn encode(blocks: &[u64], slot: usize, log_capacity: u32, start: u64) -> Vec<u64> {
    let mut out = [blocks, blocks].concat();
    let (x, y) = out.split_at_mut(blocks.len());
    for (s, block) in y.chunks_exact_mut(slot).enumerate() {
        scale(block, twist(log_capacity, start + s as u64));
    }
    forward(x, slot);
    forward(y, slot);
    out
}

/// The slot's codeword element `Y[j]` divided by `c`: `P(μ^(2j+1))`. Exposed for decoding.
pub(crate) fn untwist(y: &mut [u64], log_capacity: u32, start: u64) {
    let c = twist(log_capacity, start);
    scale(y, super::field::inv(c).expect("a root of unity is nonzero"));
}

#[cfg(test)]
mod tests {
    use super::super::field::{add, mul, P};
    use super::*;
    use proptest::prelude::*;

    /// Eq. (1) as matrices: `π_ℓ(x)·[F_ℓ, D_(ℓ,t)·F_ℓ]` with `π_ℓ(x)_i = x_(ψ_ℓ(i))`,
    /// `F[i][j] = ν^(ij)` and `D_ii = w^(ψ_k(t + ψ_ℓ(i)))`.
    fn equation_1(x: &[u64], slot: usize, log_capacity: u32, start: u64) -> Vec<u64> {
        let m = x.len() / slot;
        let level = m.trailing_zeros();
        let nu = root_of_unity(level).unwrap();
        let mut out = vec![0; 2 * x.len()];
        for j in 0..m {
            for i in 0..m {
                let s = psi(level, i as u64);
                let f = pow(nu, (i * j) as u64);
                let d = twist(log_capacity, start + s);
                for e in 0..slot {
                    let v = x[s as usize * slot + e];
                    out[j * slot + e] = add(out[j * slot + e], mul(f, v));
                    let at = (m + j) * slot + e;
                    out[at] = add(out[at], mul(mul(d, f), v));
                }
            }
        }
        out
    }

    #[test]
    fn the_schedule_follows_the_binary_counter() {
        let mut schedule = Schedule { log_capacity: 3, time: 0 };
        let mut rebuilds = Vec::new();
        for _ in 0..16 {
            rebuilds.push(schedule.next_rebuild());
            schedule.time += 1;
        }
        use Rebuild::{Coded, Level as L};
        let epoch = [L(0), L(1), L(0), L(2), L(0), L(1), L(0), Coded];
        assert_eq!(rebuilds, [epoch, epoch].concat());
        let at_6 = Schedule { log_capacity: 3, time: 6 };
        assert_eq!(at_6.filled_levels().collect::<Vec<_>>(), [1, 2]);
        assert_eq!((at_6.level_start(1), at_6.level_start(2), at_6.level_start(0)), (Some(4), Some(0), None));
        assert_eq!(Schedule { log_capacity: 3, time: 13 }.level_start(2), Some(8));
        assert_eq!(at_6.level_time(1), Some(6));
        assert_eq!(Schedule { log_capacity: 3, time: 13 }.coded_time(), 8);
        assert_eq!(at_6.coded_time(), 0);
        // With n = 1 every write rebuilds C; each C has its own time.
        assert_eq!((1..4).map(|time| Schedule { log_capacity: 0, time }.coded_time()).collect::<Vec<_>>(), [1, 2, 3]);
    }

    proptest! {
        /// Lemma 2: every filled level, built write by write with HAdd, is the code of
        /// Eq. (1) of its blocks; and C, rebuilt every n writes, is Eq. (1) of all of U.
        #[test]
        fn hadd_builds_the_levels_of_equation_1(
            log_capacity in 0u32..5,
            slot in 1usize..3,
            writes in 1usize..40,
            seed in proptest::collection::vec(any::<u64>(), 1..32),
        ) {
            let n = 1usize << log_capacity;
            let mut raw = vec![0u64; n * slot];
            let mut levels: Vec<Option<Vec<u64>>> = vec![None; log_capacity as usize];
            let mut coded: Option<Vec<u64>> = None;
            let mut written = Vec::new();
            for time in 0..writes as u64 {
                let schedule = Schedule { log_capacity, time };
                let block: Vec<u64> = (0..slot).map(|e| seed[(time as usize * 3 + e) % seed.len()] % P).collect();
                let address = (seed[time as usize % seed.len()] as usize) % n;
                raw[address * slot..(address + 1) * slot].copy_from_slice(&block);
                written.extend_from_slice(&block);
                match schedule.next_rebuild() {
                    Rebuild::Level(level) => {
                        let merged: Vec<Vec<u64>> = (0..level as usize).map(|i| levels[i].take().unwrap()).collect();
                        let refs: Vec<&[u64]> = merged.iter().map(Vec::as_slice).collect();
                        levels[level as usize] = Some(rebuild_level(&refs, &block, slot, log_capacity, time));
                    }
                    Rebuild::Coded => {
                        levels.iter_mut().for_each(|l| *l = None);
                        let code = encode(&raw, slot, log_capacity, 0);
                        prop_assert_eq!(&code, &equation_1(&raw, slot, log_capacity, 0));
                        coded = Some(code);
                    }
                }
                let after = Schedule { log_capacity, time: time + 1 };
                for level in 0..log_capacity {
                    prop_assert_eq!(levels[level as usize].is_some(), after.is_filled(level));
                    if let (Some(held), Some(start)) = (&levels[level as usize], after.level_start(level)) {
                        let blocks = &written[start as usize * slot..(start as usize + (1 << level)) * slot];
                        prop_assert_eq!(held, &equation_1(blocks, slot, log_capacity, start));
                        prop_assert_eq!(held, &encode(blocks, slot, log_capacity, start));
                    }
                }
                prop_assert_eq!(coded.is_some(), after.coded_time() > 0);
            }
        }
    }
}

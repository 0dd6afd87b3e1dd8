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

/// What a slot write triggers (Fig. 4 HAdd, on groups of writes: Sec. 6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rebuild {
    /// The write joins the group still open; H is not touched until the group is complete.
    Pending,
    /// The write completes a group: levels `0..ℓ` and the group become level `ℓ`
    /// (HRebuildX / HRebuildY).
    Level(u32),
    /// The write completes the epoch's last group: CRebuild, deamortized. C is re-encoded
    /// from U, and H's levels and the group become level [`Schedule::levels`], the epoch's
    /// writes; the new C is in use once the window is over ([`Schedule::in_window`]), and
    /// until then the old C and that level are.
    Coded,
}

/// The most slots a block of H groups ([`Schedule::group_log`]).
pub const MAX_GROUP_LOG: u32 = 8;

/// vouch's grouping: 16 writes per block of H. Sec. 6.1 asks for `O(log n)`; 16 takes H's
/// share of a write's bandwidth (one sealed checksum of 56 bytes per level and group) below
/// 1% of a 4 KiB slot for logs up to 2^20 slots, while an audit's aggregate per level stays at
/// 64 KiB.
pub const DEFAULT_GROUP_LOG: u32 = 4;

/// The log's shape at a point in time: all the client needs to know which levels are
/// filled, when their blocks were written, and what the next write rebuilds.
///
/// **Grouping (Sec. 6.1).** A block of H is a group of `2^group_log` consecutive slot writes,
/// side by side: the code of Eq. (1) runs on groups, so a level of `2^ℓ` blocks holds
/// `2^(ℓ + group_log)` writes and H costs one sealed checksum per group, not per write. H's
/// clock counts groups ([`Self::group_time`]); its capacity is `2^(k - group_log)` groups, so
/// C is still rebuilt every `2^k` slot writes. Level and C times are in groups.
///
/// **The window (Sec. 6.1's deamortization of CRebuild).** A C built at an epoch's end is
/// not in use at once: for the new epoch's first [`Self::window`] groups, the previous C
/// and the previous epoch's writes, kept as level `L = levels()` (levels `0..L` and the last
/// group, merged), stand in for it. Any half of each decodes, so U stays recoverable, and the
/// provider has the window to build the new C a piece at a time. Audits and repair read
/// what [`Self::filled_levels`] and [`Self::coded_time`] name, the window included. A C
/// built at creation, growth or a re-encode is in use at once ([`Self::rolled`] is false).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// `k`: U holds `2^k` slots, and C is rebuilt every `2^k` slot writes.
    pub log_capacity: u32,
    /// Slots per block of H: `2^group_log`, at most `2^k`.
    pub group_log: u32,
    /// Slot writes so far (absolute); the next write happens at this time.
    pub time: u64,
    /// Whether the current epoch began at the previous one's end (a CRebuild), not at
    /// creation, growth or a re-encode: then it opens with a window.
    pub rolled: bool,
}

impl Schedule {
    /// U's slots.
    pub fn capacity(&self) -> u64 {
        1 << self.log_capacity
    }

    /// Slots per block of H.
    pub fn group(&self) -> u64 {
        1 << self.group_log
    }

    /// A log of `2^log_capacity` slots in groups of `2^group_log`, at time 0.
    pub fn new(log_capacity: u32, group_log: u32) -> Schedule {
        Schedule { log_capacity, group_log, time: 0, rolled: false }
    }

    /// Whether the grouping fits the capacity and the bound.
    pub fn is_valid(&self) -> bool {
        self.group_log <= self.log_capacity && self.group_log <= MAX_GROUP_LOG
    }

    /// The levels of H: it holds up to `2^levels` groups.
    pub fn levels(&self) -> u32 {
        self.log_capacity.saturating_sub(self.group_log)
    }

    /// Groups completed so far: H's clock, and the time H's code and sealed checksums use.
    pub fn group_time(&self) -> u64 {
        self.time >> self.group_log
    }

    /// Writes of the group still open.
    pub fn pending(&self) -> u64 {
        self.time & (self.group() - 1)
    }

    fn epoch_groups(&self) -> u64 {
        self.group_time() & ((1 << self.levels()) - 1)
    }

    /// What the write at [`Self::time`] triggers: nothing until it completes a group; then
    /// the level is the number of filled levels below the first empty one.
    pub fn next_rebuild(&self) -> Rebuild {
        if self.pending() + 1 < self.group() {
            return Rebuild::Pending;
        }
        match self.epoch_groups().trailing_ones() {
            level if level >= self.levels() => Rebuild::Coded,
            level => Rebuild::Level(level),
        }
    }

    /// The groups an epoch that began at the previous one's end keeps the old C and the
    /// previous epoch's writes: half an epoch (none without levels: every group rebuilds C).
    pub fn window(&self) -> u64 {
        match self.levels() {
            0 => 0,
            levels => 1 << (levels - 1),
        }
    }

    /// Whether the new C is still being built: the old C and level `levels()` are in use.
    pub fn in_window(&self) -> bool {
        self.rolled && self.epoch_groups() < self.window()
    }

    /// The level the write at [`Self::time`] builds, if any: `ℓ` of [`Rebuild::Level`], and
    /// at an epoch's end level `levels()`, the window's.
    pub fn next_level(&self) -> Option<u32> {
        match self.next_rebuild() {
            Rebuild::Pending => None,
            Rebuild::Level(level) => Some(level),
            Rebuild::Coded => Some(self.levels()),
        }
    }

    /// The time moves past one write, and an epoch's end starts a window.
    pub fn advance(&mut self) {
        self.rolled |= self.next_rebuild() == Rebuild::Coded;
        self.time += 1;
    }

    /// Whether level `level` holds blocks now: bit `ℓ` of the groups within the epoch, and
    /// level `levels()` in a window.
    pub fn is_filled(&self, level: u32) -> bool {
        match level.cmp(&self.levels()) {
            std::cmp::Ordering::Less => (self.epoch_groups() >> level) & 1 == 1,
            std::cmp::Ordering::Equal => self.in_window(),
            std::cmp::Ordering::Greater => false,
        }
    }

    /// The levels that hold blocks, smallest first.
    pub fn filled_levels(&self) -> impl Iterator<Item = u32> + '_ {
        (0..=self.levels()).filter(|&level| self.is_filled(level))
    }

    /// The group time of a filled level's first block.
    pub fn level_start(&self, level: u32) -> Option<u64> {
        let start = match level == self.levels() {
            true => self.epoch_start().checked_sub(1 << level)?,
            false => (self.group_time() >> (level + 1)) << (level + 1),
        };
        self.is_filled(level).then_some(start)
    }

    /// When a filled level's slots were written, in groups done: the level is rebuilt by
    /// the write that completes its last group, so `start + 2^ℓ`. Sealed checksums are bound
    /// to this time (Sec. 5.4).
    pub fn level_time(&self, level: u32) -> Option<u64> {
        self.level_start(level).map(|start| start + (1 << level))
    }

    /// When the C in use was written, in groups done: `0` for the C built at initialisation,
    /// else the end of an epoch (CRebuild runs in its last write): the last one's, or in a
    /// window the one before ([`Self::in_window`]).
    pub fn coded_time(&self) -> u64 {
        let start = self.epoch_start();
        match self.in_window() {
            true => start - (1 << self.levels()),
            false => start,
        }
    }

    /// The group time the current epoch began: when its C was written, in use or not.
    pub fn epoch_start(&self) -> u64 {
        self.group_time() - self.epoch_groups()
    }

    /// The schedule's bytes wherever it is kept (the client's record, the store's state):
    /// `log_capacity:u32`, `group_log:u32`, `time:u64`, `rolled:u8`, little-endian.
    pub fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.log_capacity.to_le_bytes());
        out.extend_from_slice(&self.group_log.to_le_bytes());
        out.extend_from_slice(&self.time.to_le_bytes());
        out.push(u8::from(self.rolled));
    }

    /// A schedule as [`Schedule::put`] writes it, or as older layouts did: without its group
    /// (`grouped` false: writes ungrouped) or without the window flag (`windowed` false: the
    /// epoch opened without a window). `None` when cut short or the flag is neither 0 nor 1;
    /// the caller checks [`Schedule::is_valid`].
    pub fn take(r: &mut crate::codec::Reader<'_>, grouped: bool, windowed: bool) -> Option<Schedule> {
        let log_capacity = r.u32_le().ok()?;
        let group_log = if grouped { r.u32_le().ok()? } else { 0 };
        let time = r.u64_le().ok()?;
        let rolled = match windowed {
            true => [false, true].get(usize::from(r.u8().ok()?)).copied()?,
            false => false,
        };
        Some(Schedule { log_capacity, group_log, time, rolled })
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

    fn at(log_capacity: u32, time: u64) -> Schedule {
        Schedule { log_capacity, group_log: 0, time, rolled: false }
    }

    #[test]
    fn the_schedule_follows_the_binary_counter() {
        let mut schedule = at(3, 0);
        let mut rebuilds = Vec::new();
        for _ in 0..16 {
            rebuilds.push(schedule.next_rebuild());
            schedule.time += 1;
        }
        use Rebuild::{Coded, Level as L};
        let epoch = [L(0), L(1), L(0), L(2), L(0), L(1), L(0), Coded];
        assert_eq!(rebuilds, [epoch, epoch].concat());
        let at_6 = at(3, 6);
        assert_eq!(at_6.filled_levels().collect::<Vec<_>>(), [1, 2]);
        assert_eq!((at_6.level_start(1), at_6.level_start(2), at_6.level_start(0)), (Some(4), Some(0), None));
        assert_eq!(at(3, 13).level_start(2), Some(8));
        assert_eq!(at_6.level_time(1), Some(6));
        assert_eq!(at(3, 13).coded_time(), 8);
        assert_eq!(at_6.coded_time(), 0);
        // With n = 1 every write rebuilds C; each C has its own time.
        assert_eq!((1..4).map(|time| at(0, time).coded_time()).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn grouped_writes_rebuild_only_when_a_group_completes() {
        // U of 16 slots in groups of 4: H holds 4 groups in 2 levels; C every 16 writes.
        let mut schedule = Schedule::new(4, 2);
        let mut rebuilds = Vec::new();
        for _ in 0..32 {
            rebuilds.push(schedule.next_rebuild());
            schedule.time += 1;
        }
        use Rebuild::{Coded, Level as L, Pending as P};
        let epoch = [P, P, P, L(0), P, P, P, L(1), P, P, P, L(0), P, P, P, Coded];
        assert_eq!(rebuilds, [epoch, epoch].concat());
        let mid = Schedule { time: 25, ..Schedule::new(4, 2) };
        assert_eq!((mid.group_time(), mid.pending(), mid.levels()), (6, 1, 2));
        assert_eq!(mid.filled_levels().collect::<Vec<_>>(), [1]);
        assert_eq!((mid.level_start(1), mid.level_time(1), mid.coded_time()), (Some(4), Some(6), 4));
        // Grouping every write of U into one block leaves H without levels.
        let whole = Schedule { time: 3, ..Schedule::new(2, 2) };
        assert_eq!((whole.levels(), whole.next_rebuild()), (0, Rebuild::Coded));
        assert!(whole.is_valid() && !Schedule { group_log: 3, ..whole }.is_valid());
    }

    #[test]
    fn an_epoch_that_follows_another_opens_with_a_window() {
        // U of 16 slots in groups of 2: H has 3 levels, an epoch 8 groups, a window 4.
        let mut schedule = Schedule::new(4, 1);
        let mut seen = Vec::new();
        while schedule.time < 40 {
            schedule.advance();
            if schedule.pending() == 0 {
                let levels: Vec<u32> = schedule.filled_levels().collect();
                seen.push((schedule.group_time(), schedule.in_window(), levels, schedule.coded_time()));
            }
        }
        // The first epoch follows creation: no window. The second opens with one of 4
        // groups, in which level 3 (the first epoch's writes) and the first C are in use.
        assert_eq!(seen[7], (8, true, vec![3], 0));
        assert_eq!(seen[8], (9, true, vec![0, 3], 0));
        assert_eq!(seen[10], (11, true, vec![0, 1, 3], 0));
        assert_eq!(seen[11], (12, false, vec![2], 8));
        assert_eq!(seen[15], (16, true, vec![3], 8));
        assert_eq!(seen[19], (20, false, vec![2], 16));
        let at_9 = Schedule { time: 18, rolled: true, ..Schedule::new(4, 1) };
        assert_eq!((at_9.level_start(3), at_9.level_time(3), at_9.epoch_start()), (Some(0), Some(8), 8));
        // Growth or a re-encode starts an epoch without one.
        assert!(!Schedule { rolled: false, ..at_9 }.in_window());
        // Without levels every group rebuilds C, in use at once.
        let flat = Schedule { time: 3, rolled: true, ..Schedule::new(2, 2) };
        assert!(!flat.in_window() && flat.filled_levels().next().is_none());
    }

    proptest! {
        /// Lemma 2: every filled level, built group by group with HAdd, is the code of
        /// Eq. (1) of its blocks (each a group of writes side by side); and C, rebuilt every
        /// n writes, is Eq. (1) of all of U.
        #[test]
        fn hadd_builds_the_levels_of_equation_1(
            log_capacity in 0u32..5,
            group_log in 0u32..3,
            slot in 1usize..3,
            writes in 1usize..60,
            seed in proptest::collection::vec(any::<u64>(), 1..32),
        ) {
            let group_log = group_log.min(log_capacity);
            let h = log_capacity - group_log;
            let block_width = slot << group_log;
            let n = 1usize << log_capacity;
            let mut raw = vec![0u64; n * slot];
            let mut levels: Vec<Option<Vec<u64>>> = vec![None; h as usize];
            let mut coded: Option<Vec<u64>> = None;
            let mut written = Vec::new();
            for time in 0..writes as u64 {
                let schedule = Schedule { time, ..Schedule::new(log_capacity, group_log) };
                let block: Vec<u64> = (0..slot).map(|e| seed[(time as usize * 3 + e) % seed.len()] % P).collect();
                let address = (seed[time as usize % seed.len()] as usize) % n;
                raw[address * slot..(address + 1) * slot].copy_from_slice(&block);
                written.extend_from_slice(&block);
                let group = &written[written.len() - schedule.pending() as usize * slot - slot..];
                match schedule.next_rebuild() {
                    Rebuild::Pending => {}
                    Rebuild::Level(level) => {
                        let merged: Vec<Vec<u64>> = (0..level as usize).map(|i| levels[i].take().unwrap()).collect();
                        let refs: Vec<&[u64]> = merged.iter().map(Vec::as_slice).collect();
                        let t = schedule.group_time();
                        levels[level as usize] = Some(rebuild_level(&refs, group, block_width, h, t));
                    }
                    Rebuild::Coded => {
                        levels.iter_mut().for_each(|l| *l = None);
                        let code = encode(&raw, slot, log_capacity, 0);
                        prop_assert_eq!(&code, &equation_1(&raw, slot, log_capacity, 0));
                        coded = Some(code);
                    }
                }
                let after = Schedule { time: time + 1, ..Schedule::new(log_capacity, group_log) };
                for level in 0..h {
                    prop_assert_eq!(levels[level as usize].is_some(), after.is_filled(level));
                    if let (Some(held), Some(start)) = (&levels[level as usize], after.level_start(level)) {
                        let (from, to) = (start as usize * block_width, (start as usize + (1 << level)) * block_width);
                        let blocks = &written[from..to];
                        prop_assert_eq!(held, &equation_1(blocks, block_width, h, start));
                        prop_assert_eq!(held, &encode(blocks, block_width, h, start));
                    }
                }
                prop_assert_eq!(coded.is_some(), after.coded_time() > 0);
            }
        }
    }
}

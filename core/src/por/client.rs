//! The client's side of a batch of writes to the log: what it asks the provider for, what it
//! checks, and what it hands back (Sec. 5.4, with Sec. 6.1's batching).
//!
//! A batch is a list of slot writes to U, in order; each is one HAdd. The client's state is a
//! [`LogState`]: the schedule and U's root, a few dozen bytes. For a batch it
//!
//! 1. makes a [`WritePlan`] ([`plan`]): the U indices it writes (their old leaves and a proof
//!    are needed to move U's root), the filled levels the batch's rebuilds consume (their
//!    sealed checksums are needed to replay them), whether C is rebuilt (then every sealed
//!    checksum of U is needed), and whether U grows first;
//! 2. receives the provider's [`WriteContext`] and runs [`write`]: every answer is checked
//!    against its root and keys, every rebuild of the batch is replayed on checksums, and
//!    only the checksums of levels still filled at the end are sealed and sent back
//!    ([`Written`]). Levels built and consumed within one batch cost no bandwidth: that is
//!    what batching saves (Sec. 6.1).
//!
//! **Growth (App. A.3).** When a write goes beyond U's capacity `2^k`, U doubles (until it
//! fits) before the batch: its tree grows by a root of empty slots, C is re-encoded over the
//! larger U at once and H is emptied, as in a CRebuild. The time then jumps to the next
//! multiple of the new capacity ([`grown_schedule`]): times stay absolute and unique, and the
//! new epoch starts at a boundary, as the schedule's arithmetic assumes.

use super::checksum::{Checksum, ChecksumKey, OpenError, SealKey, SealedChecksum, ROWS};
use super::code::{rebuild_level, Rebuild, Schedule};
use super::raw_tree::{empty_root, grown_root, leaf_hash, raw_root, RawProof, RawProofError, RawTree};
use super::replay::{open_region, replay_coded_at, seal_region, ReplayError};
use super::{Region, SlotAddress};
use crate::Digest;
use std::collections::BTreeMap;

/// The client's whole PoR state for one log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogState {
    pub schedule: Schedule,
    /// The root of U's tree ([`super::raw_tree`]).
    pub raw_root: Digest,
}

impl LogState {
    /// A log of `2^log_capacity` empty slots, and the sealed checksums of its C (all zeros,
    /// written at time 0) for the provider to keep.
    pub fn new(log_capacity: u32, key: &SealKey) -> (LogState, Vec<SealedChecksum>) {
        let schedule = Schedule { log_capacity, time: 0 };
        let zeros = vec![Checksum::ZERO; 1 << log_capacity];
        let coded = replay_coded_at(log_capacity, 0, &zeros, key);
        (LogState { schedule, raw_root: empty_root(log_capacity) }, coded)
    }
}

/// The schedule after U grows to `2^log_capacity` slots at `schedule.time`: C is rebuilt at
/// the next multiple of the new capacity after the time, which starts the new epoch.
pub fn grown_schedule(schedule: &Schedule, log_capacity: u32) -> Schedule {
    let n = 1u64 << log_capacity;
    Schedule { log_capacity, time: (schedule.time / n + 1) * n }
}

/// What a batch of `count` writes leaves behind, from the schedule before it: the schedule
/// after it, the levels it builds that are still filled at its end (ascending), and whether
/// it rebuilds C (growth or an epoch's end). Client and provider both derive what is uploaded
/// from this.
pub fn batch_outcome(schedule: &Schedule, grow_to: Option<u32>, count: u64) -> (Schedule, Vec<u32>, bool) {
    let mut schedule = grow_to.map_or(*schedule, |k| grown_schedule(schedule, k));
    let start = schedule.time;
    let mut coded = grow_to.is_some();
    for _ in 0..count {
        coded |= schedule.next_rebuild() == Rebuild::Coded;
        schedule.time += 1;
    }
    let built = schedule.filled_levels().filter(|&l| schedule.level_time(l).is_some_and(|t| t > start)).collect();
    (schedule, built, coded)
}

/// What a batch needs from the provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WritePlan {
    /// U grows to `2^k` slots before the batch.
    pub grow_to: Option<u32>,
    /// The U indices written, ascending and distinct.
    pub indices: Vec<u64>,
    /// Filled levels (before the batch) that its rebuilds consume, ascending.
    pub levels: Vec<u32>,
    /// Whether C is rebuilt (after growth or at the end of an epoch): every sealed
    /// checksum of U is then needed.
    pub whole_raw: bool,
}

/// The provider's answer to a [`WritePlan`]. Nothing in it is trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteContext {
    /// The sealed checksum of each index of the plan now (`None`: never written).
    pub old: Vec<Option<SealedChecksum>>,
    /// Connects `old` to U's root (after growth, when the plan grows U).
    pub proof: RawProof,
    /// The sealed checksums of each level of the plan, X then Y.
    pub levels: Vec<Vec<SealedChecksum>>,
    /// Every slot's sealed checksum, when the plan asks for all of U.
    pub raw: Option<Vec<Option<SealedChecksum>>>,
}

/// What the client sends with the batch's slots, and the state it adopts once the provider
/// has made them durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub state: LogState,
    /// Each index's new sealed checksum, ascending.
    pub raw: Vec<(u64, SealedChecksum)>,
    /// The levels filled after the batch and built in it, with their sealed checksums.
    pub levels: Vec<(u32, Vec<SealedChecksum>)>,
    /// C's sealed checksums, when the batch rebuilt it.
    pub coded: Option<Vec<SealedChecksum>>,
}

/// Why a batch cannot be written, or why the provider's context is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("a batch writes at least one slot")]
    Empty,
    #[error("slot index {0} is beyond any capacity")]
    Index(u64),
    #[error("a written slot has {got} elements, not {want}")]
    Width { got: usize, want: usize },
    #[error("the slot written at U index {0} does not start with its index + 1, or has an element beyond 2^56")]
    Header(u64),
    #[error("the provider's context does not fit the plan")]
    Shape,
    #[error("U's proof: {0}")]
    RawProof(#[from] RawProofError),
    #[error("U's checksums do not match the client's root (stale or altered)")]
    RawRoot,
    #[error("U's sealed checksum of slot {index} does not open: {error}")]
    RawChecksum { index: u64, error: OpenError },
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// The plan for writing U slots `indices`, in that order.
pub fn plan(state: &LogState, indices: &[u64]) -> Result<WritePlan, WriteError> {
    let highest = *indices.iter().max().ok_or(WriteError::Empty)?;
    let mut schedule = state.schedule;
    let grow_to = match 64 - highest.leading_zeros() {
        need if need > super::raw_tree::MAX_LOG_CAPACITY => return Err(WriteError::Index(highest)),
        need if need > schedule.log_capacity => {
            schedule = grown_schedule(&schedule, need);
            Some(need)
        }
        _ => None,
    };
    let mut whole_raw = grow_to.is_some();
    // Levels built within the batch come from the client's own replay; only older ones are asked for.
    let mut built = vec![false; schedule.log_capacity as usize];
    let mut levels = Vec::new();
    for _ in indices {
        match schedule.next_rebuild() {
            Rebuild::Level(level) => {
                for below in 0..level {
                    if !built[below as usize] && !levels.contains(&below) {
                        levels.push(below);
                    }
                }
                built[level as usize] = true;
            }
            Rebuild::Coded => {
                whole_raw = true;
                built.fill(true);
            }
        }
        schedule.time += 1;
    }
    levels.sort_unstable();
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    Ok(WritePlan { grow_to, indices: sorted, levels, whole_raw })
}

/// Checks the provider's context and replays the batch: `slots` are the written slots in
/// order (`writes[i]` at U index `indices[i]` of the call to [`plan`]), flat.
pub fn write(
    state: &LogState,
    plan: &WritePlan,
    context: &WriteContext,
    writes: &[u64],
    slots: &[u64],
    seal: &SealKey,
    sums: &ChecksumKey,
) -> Result<Written, WriteError> {
    let width = sums.width();
    if slots.len() != writes.len() * width {
        return Err(WriteError::Width { got: slots.len() / writes.len().max(1), want: width });
    }
    let mut schedule = state.schedule;
    let mut root = state.raw_root;
    if let Some(k) = plan.grow_to {
        root = (schedule.log_capacity..k).fold(root, |root, k| grown_root(k, &root));
        schedule = grown_schedule(&schedule, k);
    }
    if context.old.len() != plan.indices.len() || context.levels.len() != plan.levels.len() {
        return Err(WriteError::Shape);
    }
    let old: Vec<(u64, Digest)> =
        plan.indices.iter().zip(&context.old).map(|(&i, sealed)| (i, leaf_hash(sealed.as_ref()))).collect();
    if raw_root(schedule.log_capacity, &old, &context.proof)? != root {
        return Err(WriteError::RawRoot);
    }
    // U's checksums as the rebuilds of C see them; only read when C is rebuilt.
    let mut raw = match (&context.raw, plan.whole_raw) {
        (Some(all), true) => Some(open_whole_raw(all, &root, schedule.log_capacity, seal)?),
        (None, false) => None,
        _ => return Err(WriteError::Shape),
    };
    let mut coded = None;
    if plan.grow_to.is_some() {
        let all = raw.as_ref().expect("growth asks for all of U");
        coded = Some(replay_coded_at(schedule.log_capacity, schedule.time, all, seal));
    }

    let mut levels: Vec<Option<(u64, Vec<u64>)>> = vec![None; schedule.log_capacity as usize];
    for (&level, sealed) in plan.levels.iter().zip(&context.levels) {
        let time = schedule.level_time(level).ok_or(WriteError::Shape)?;
        let rows = open_region(seal, Region::Level(level as u8), time, sealed, 2 << level, level)?;
        levels[level as usize] = Some((time, rows));
    }
    if writes.iter().collect::<std::collections::BTreeSet<_>>().into_iter().ne(plan.indices.iter()) {
        return Err(WriteError::Shape);
    }
    // Repair replays the levels onto U by this header (see `super::repair`); U's elements are
    // sectors, which the wire sends in 7 bytes (`super::wire`).
    let malformed = |(&i, s): &(&u64, &[u64])| s[0] != i + 1 || s.iter().any(|&e| e >> 56 != 0);
    if let Some((&index, _)) = writes.iter().zip(slots.chunks_exact(width)).find(malformed) {
        return Err(WriteError::Header(index));
    }
    let mut new_raw = BTreeMap::new();
    for (&index, slot) in writes.iter().zip(slots.chunks_exact(width)) {
        let sum = sums.checksum(slot);
        new_raw.insert(index, seal.seal(SlotAddress { region: Region::Raw, index }, 0, sum));
        if let Some(raw) = raw.as_mut() {
            raw[index as usize] = sum;
        }
        match schedule.next_rebuild() {
            Rebuild::Level(level) => {
                let below: Vec<&[u64]> = levels[..level as usize]
                    .iter()
                    .map(|l| l.as_ref().map(|(_, rows)| rows.as_slice()).ok_or(WriteError::Shape))
                    .collect::<Result<_, _>>()?;
                let rows = rebuild_level(&below, &sum.rows(), ROWS, schedule.log_capacity, schedule.time);
                levels[..level as usize].fill(None);
                levels[level as usize] = Some((schedule.time + 1, rows));
            }
            Rebuild::Coded => {
                let all = raw.as_ref().ok_or(WriteError::Shape)?;
                coded = Some(replay_coded_at(schedule.log_capacity, schedule.time + 1, all, seal));
                levels.fill(None);
            }
        }
        schedule.time += 1;
    }
    let (_, built, _) = batch_outcome(&state.schedule, plan.grow_to, writes.len() as u64);
    let levels = built
        .into_iter()
        .map(|level| {
            let (time, rows) = levels[level as usize].as_ref().expect("a level the batch built and left filled");
            (level, seal_region(seal, Region::Level(level as u8), *time, rows))
        })
        .collect();
    let new: Vec<(u64, Digest)> = new_raw.iter().map(|(&i, s)| (i, leaf_hash(Some(s)))).collect();
    let raw_root = raw_root(schedule.log_capacity, &new, &context.proof)?;
    Ok(Written { state: LogState { schedule, raw_root }, raw: new_raw.into_iter().collect(), levels, coded })
}

/// Opens every sealed checksum of U after checking them all against `root`.
fn open_whole_raw(
    all: &[Option<SealedChecksum>],
    root: &Digest,
    log_capacity: u32,
    seal: &SealKey,
) -> Result<Vec<Checksum>, WriteError> {
    if all.len() as u64 != 1 << log_capacity {
        return Err(WriteError::Shape);
    }
    let mut tree = RawTree::new(log_capacity);
    let leaves: Vec<(u64, Digest)> =
        all.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|s| (i as u64, leaf_hash(Some(s))))).collect();
    tree.set(&leaves);
    if tree.root() != *root {
        return Err(WriteError::RawRoot);
    }
    all.iter()
        .enumerate()
        .map(|(index, sealed)| match sealed {
            None => Ok(Checksum::ZERO),
            Some(sealed) => seal
                .open(SlotAddress { region: Region::Raw, index: index as u64 }, 0, sealed)
                .map_err(|error| WriteError::RawChecksum { index: index as u64, error }),
        })
        .collect()
}

/// Why slots read through U are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("the answer has the wrong shape for {0} slots")]
    Shape(usize),
    #[error("U's proof: {0}")]
    RawProof(#[from] RawProofError),
    #[error("U's checksums do not match the client's root (stale or altered)")]
    RawRoot,
    #[error("slot {index}'s sealed checksum does not open: {error}")]
    RawChecksum { index: u64, error: OpenError },
    #[error("slot {0} does not match its checksum")]
    Altered(u64),
}

/// The provider's answer to a read of some of U's slots. Nothing in it is trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRead {
    /// The slots, flat.
    pub slots: Vec<u64>,
    /// Their sealed checksums (`None`: never written).
    pub sealed: Vec<Option<SealedChecksum>>,
    /// Connects `sealed` to U's root.
    pub proof: RawProof,
}

/// Checks U's slots `indices` (ascending, distinct) as read from the provider: the sealed
/// checksums must be U's current ones (the root) and each slot must match its own. A slot
/// never written must be all zeros.
pub fn verify_read(
    state: &LogState,
    indices: &[u64],
    read: &RawRead,
    seal: &SealKey,
    sums: &ChecksumKey,
) -> Result<(), ReadError> {
    let RawRead { slots, sealed, proof } = read;
    let width = sums.width();
    if sealed.len() != indices.len() || slots.len() != indices.len() * width {
        return Err(ReadError::Shape(indices.len()));
    }
    let leaves: Vec<(u64, Digest)> = indices.iter().zip(sealed).map(|(&i, s)| (i, leaf_hash(s.as_ref()))).collect();
    if raw_root(state.schedule.log_capacity, &leaves, proof)? != state.raw_root {
        return Err(ReadError::RawRoot);
    }
    for ((&index, slot), sealed) in indices.iter().zip(slots.chunks_exact(width)).zip(sealed) {
        let want = match sealed {
            None => Checksum::ZERO,
            Some(s) => seal
                .open(SlotAddress { region: Region::Raw, index }, 0, s)
                .map_err(|error| ReadError::RawChecksum { index, error })?,
        };
        let empty_but_not_zero = sealed.is_none() && slot.iter().any(|&e| e != 0);
        if empty_but_not_zero || sums.checksum(slot) != want {
            return Err(ReadError::Altered(index));
        }
    }
    Ok(())
}

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
//! **Grouping (Sec. 6.1).** H's blocks are groups of `2^group_log` writes
//! ([`Schedule`]). The provider keeps the writes of the group still open aside (they are in U
//! too) and runs HAdd when the group completes; the client keeps the open group's checksum
//! ([`LogState::pending`], 16 bytes) and replays HAdd with it. A batch may *flush*: ⊥ writes
//! (all-zero slots, which U never sees and repair skips) complete the open group, so that
//! every write of the batch is in H when it returns.
//!
//! **Growth (App. A.3).** When a write goes beyond U's capacity `2^k`, U doubles (until it
//! fits) before the batch: its tree grows by a root of empty slots, C is re-encoded over the
//! larger U at once and H is emptied, as in a CRebuild. The time then jumps to the next
//! multiple of the new capacity ([`grown_schedule`]): times stay absolute and unique, and the
//! new epoch starts at a boundary, as the schedule's arithmetic assumes.

pub use super::batch::{coded_bytes, LogState, RawRead, WriteContext, WriteError, WritePlan, Written};
use super::checksum::{Checksum, ChecksumKey, OpenError, SealKey, SealedChecksum, ROWS};
use super::code::{rebuild_level, Rebuild, Schedule};
use super::heap::{encode_slot, SLOT_WIDTH};
use super::raw_tree::{grown_root, leaf_hash, raw_root, RawProof, RawProofError};
use super::replay::{open_region, seal_region};
use super::stream::{CodedSums, OpenedRaw, RawIntake, Upload};
use super::{Region, SlotAddress};
use crate::Digest;
use std::collections::BTreeMap;

/// The schedule after U grows to `2^log_capacity` slots at `schedule.time`: C is rebuilt at
/// the next multiple of the new capacity after the time, which starts the new epoch, and is
/// in use at once (no window).
pub fn grown_schedule(schedule: &Schedule, log_capacity: u32) -> Schedule {
    let n = 1u64 << log_capacity;
    Schedule { log_capacity, time: (schedule.time / n + 1) * n, rolled: false, ..*schedule }
}

/// The ⊥ writes that complete the open group after `writes` more writes from `schedule`,
/// when the batch flushes.
pub fn padding(schedule: &Schedule, writes: u64, flush: bool) -> u64 {
    let mask = schedule.group() - 1;
    if flush {
        (schedule.group() - (schedule.time.wrapping_add(writes) & mask)) & mask
    } else {
        0
    }
}

/// A batch's steps in order, from `schedule` (after any growth): each write (its U index and
/// slot, `slots` flat of `width` elements), then `None` for each ⊥ write that completes the
/// open group when the batch flushes.
pub fn steps<'a>(
    schedule: &Schedule,
    writes: &'a [u64],
    slots: &'a [u64],
    width: usize,
    flush: bool,
) -> impl Iterator<Item = Option<(u64, &'a [u64])>> + use<'a> {
    let pad = padding(schedule, writes.len() as u64, flush) as usize;
    writes.iter().copied().zip(slots.chunks_exact(width)).map(Some).chain(std::iter::repeat_n(None, pad))
}

/// What a batch of `writes` writes (then its ⊥ writes when it flushes) leaves behind, from
/// the schedule before it: the schedule after it, the levels it builds that are still filled
/// at its end (ascending), and the write times of the Cs it builds (growth, an epoch's end)
/// that are in use or next at its end (ascending: at most two, when it ends in a window
/// after an epoch it began). Client and provider both derive what is uploaded from this.
pub fn batch_outcome(
    schedule: &Schedule,
    grow_to: Option<u32>,
    writes: u64,
    flush: bool,
) -> (Schedule, Vec<u32>, Vec<u64>) {
    let mut schedule = grow_to.map_or(*schedule, |k| grown_schedule(schedule, k));
    let start = schedule.group_time();
    for _ in 0..writes + padding(&schedule, writes, flush) {
        schedule.advance();
    }
    let built = schedule.filled_levels().filter(|&l| schedule.level_time(l).is_some_and(|t| t > start)).collect();
    // A C the batch built: at growth (the grown epoch's start) or at an epoch's end after it.
    let new = |t: u64| t > start || (grow_to.is_some() && t == start);
    let mut coded = vec![schedule.coded_time()];
    if schedule.in_window() {
        coded.push(schedule.epoch_start());
    }
    coded.retain(|&t| new(t));
    (schedule, built, coded)
}

/// The plan for writing U slots `indices`, in that order, then flushing the open group when
/// `flush`.
pub fn plan(state: &LogState, indices: &[u64], flush: bool) -> Result<WritePlan, WriteError> {
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
    let mut built = vec![false; schedule.levels() as usize + 1];
    let mut levels = Vec::new();
    for _ in 0..indices.len() as u64 + padding(&schedule, indices.len() as u64, flush) {
        let rebuild = schedule.next_rebuild();
        if let Some(level) = schedule.next_level() {
            for below in 0..level {
                if !built[below as usize] && !levels.contains(&below) {
                    levels.push(below);
                }
            }
            built[level as usize] = true;
        }
        if rebuild == Rebuild::Coded {
            whole_raw = true;
            built.fill(true);
        }
        schedule.advance();
    }
    levels.sort_unstable();
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    Ok(WritePlan { grow_to, indices: sorted, levels, whole_raw, flush })
}

/// The plan of a batch that writes nothing and re-encodes C from U at U's capacity, emptying
/// H: what repair sends once U is whole, so that every part of the log is whole again
/// (levels or C whose bytes or sealed checksums the provider lost are replaced). It is
/// growth by no level: the time moves to the next multiple of the capacity, so C's new
/// sealed checksums are under keys never used before.
pub fn plan_reencode(state: &LogState) -> WritePlan {
    WritePlan {
        grow_to: Some(state.schedule.log_capacity),
        indices: Vec::new(),
        levels: Vec::new(),
        whole_raw: true,
        flush: false,
    }
}

/// The plan of a batch that writes nothing and keeps U's first `2^log_capacity` slots
/// (App. A.3's consolidation: "the client can rebuild and consolidate the log by suppressing
/// deleted items"): C is re-encoded over them and H emptied, as at growth. Every slot that
/// goes must be free (never written, or ⊥), which [`write`] checks against U's root before
/// anything is sent: the provider answers with all of U's sealed checksums.
pub fn plan_shrink(state: &LogState, log_capacity: u32) -> Result<WritePlan, WriteError> {
    let schedule = &state.schedule;
    if log_capacity >= schedule.log_capacity || log_capacity < schedule.group_log {
        return Err(WriteError::Shrink { to: log_capacity, from: schedule.log_capacity });
    }
    Ok(WritePlan { grow_to: Some(log_capacity), ..plan_reencode(state) })
}

/// Checks the provider's context and replays the batch: `slots` are the written slots in
/// order (`writes[i]` at U index `indices[i]` of the call to [`plan`]), flat. `sums` is the
/// log's grouped key ([`ChecksumKey::grouped`]). The whole context and upload at once: the
/// client takes a large context in parts ([`super::stream::ContextReader`]) and runs
/// [`write_opened`].
pub fn write(
    state: &LogState,
    plan: &WritePlan,
    context: &WriteContext,
    writes: &[u64],
    slots: &[u64],
    seal: &SealKey,
    sums: &ChecksumKey,
) -> Result<Written, WriteError> {
    let raw = match (RawIntake::new(state, plan, seal, sums)?, &context.raw) {
        (Some(mut intake), Some(all)) => {
            all.iter().try_for_each(|sealed| intake.push(sealed.as_ref()))?;
            Some(intake.finish()?)
        }
        (None, None) => None,
        _ => return Err(WriteError::Shape),
    };
    Ok(write_opened(state, plan, context, raw, writes, slots, seal, sums)?.seal_all(seal))
}

/// A replayed batch whose Cs are not sealed yet: what [`write`] returns once they are
/// ([`OpenedWrite::seal_all`]), or what the client uploads a part at a time
/// ([`OpenedWrite::upload`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedWrite {
    pub state: LogState,
    pub raw: Vec<(u64, SealedChecksum)>,
    pub levels: Vec<(u32, Vec<SealedChecksum>)>,
    pub coded: Vec<CodedSums>,
}

impl OpenedWrite {
    pub fn seal_all(self, seal: &SealKey) -> Written {
        let coded = self.coded.into_iter().map(|c| c.seal_all(seal)).collect();
        Written { state: self.state, raw: self.raw, levels: self.levels, coded }
    }

    /// The upload's bytes in parts of `part_bytes`, C sealed as it goes.
    pub fn upload(self, seal: &SealKey, part_bytes: usize) -> Upload<'_> {
        Upload::new(&self.raw, &self.levels, self.coded, seal, part_bytes)
    }
}

/// [`write`] with U's checksums already taken and checked (`raw`, from a
/// [`RawIntake`] for this state and plan; `context.raw` is not read).
#[allow(clippy::too_many_arguments)]
pub fn write_opened(
    state: &LogState,
    plan: &WritePlan,
    context: &WriteContext,
    raw: Option<OpenedRaw>,
    writes: &[u64],
    slots: &[u64],
    seal: &SealKey,
    sums: &ChecksumKey,
) -> Result<OpenedWrite, WriteError> {
    let width = sums.slot_width();
    if sums.width() != width << state.schedule.group_log {
        return Err(WriteError::Grouping { key: sums.width() / width.max(1), log: state.schedule.group_log });
    }
    if slots.len() != writes.len() * width {
        return Err(WriteError::Width { got: slots.len() / writes.len().max(1), want: width });
    }
    let mut schedule = state.schedule;
    let mut root = state.raw_root;
    let mut pending = state.pending;
    let shrink = plan.grow_to.is_some_and(|k| k < schedule.log_capacity);
    if let Some(k) = plan.grow_to {
        root = (schedule.log_capacity..k).fold(root, |root, k| grown_root(k, &root));
        schedule = grown_schedule(&schedule, k);
        // C is re-encoded over U, which holds the open group's writes too.
        pending = Checksum::ZERO;
    }
    if context.old.len() != plan.indices.len() || context.levels.len() != plan.levels.len() {
        return Err(WriteError::Shape);
    }
    if writes.is_empty() && plan.grow_to.is_none() {
        return Err(WriteError::Empty);
    }
    if writes.is_empty() && !context.proof.siblings.is_empty() {
        return Err(WriteError::Shape);
    }
    let old: Vec<(u64, Digest)> =
        plan.indices.iter().zip(&context.old).map(|(&i, sealed)| (i, leaf_hash(sealed.as_ref()))).collect();
    if moved_root(schedule.log_capacity, root, &old, &context.proof)? != root {
        return Err(WriteError::RawRoot);
    }
    // U's checksums as the rebuilds of C see them (ROWS elements a slot); only read when C
    // is rebuilt, and given up at the last C the batch builds.
    let mut raw: Option<Vec<u64>> = match (raw, plan.whole_raw) {
        (Some(opened), true) if opened.rows.len() == ROWS << schedule.log_capacity => {
            if shrink {
                root = opened.root;
            } else if opened.root != root {
                return Err(WriteError::RawRoot);
            }
            Some(opened.rows)
        }
        (None, false) => None,
        _ => return Err(WriteError::Shape),
    };
    let padded = writes.len() as u64 + padding(&schedule, writes.len() as u64, plan.flush);
    let coded_at_steps = {
        let mut s = schedule;
        (0..padded)
            .filter(|_| {
                let coded = s.next_rebuild() == Rebuild::Coded;
                s.advance();
                coded
            })
            .count()
    };
    let mut coded = BTreeMap::new();
    let log_capacity = schedule.log_capacity;
    let mut build_coded = |raw: &mut Option<Vec<u64>>, time: u64, last: bool| -> Result<(), WriteError> {
        let rows = if last { raw.take() } else { raw.clone() }.ok_or(WriteError::Shape)?;
        coded.insert(time, CodedSums { log_capacity, time, rows });
        Ok(())
    };
    if plan.grow_to.is_some() {
        build_coded(&mut raw, schedule.coded_time(), coded_at_steps == 0)?;
    }

    let mut levels: Vec<Option<(u64, Vec<u64>)>> = vec![None; schedule.levels() as usize + 1];
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
    let mut coded_left = coded_at_steps;
    for step in steps(&schedule, writes, slots, width, plan.flush) {
        // A ⊥ write adds nothing to the group's checksum: its slot is all zeros.
        if let Some((index, slot)) = step {
            let sum = sums.checksum(slot);
            new_raw.insert(index, seal.seal(SlotAddress { region: Region::Raw, index }, 0, sum));
            if let Some(raw) = raw.as_mut() {
                let at = index as usize * ROWS;
                raw[at..at + ROWS].copy_from_slice(&sum.rows());
            }
            pending = pending + sums.checksum_at(schedule.pending() as usize, slot);
        }
        let rebuild = schedule.next_rebuild();
        if let Some(level) = schedule.next_level() {
            let below: Vec<&[u64]> = levels[..level as usize]
                .iter()
                .map(|l| l.as_ref().map(|(_, rows)| rows.as_slice()).ok_or(WriteError::Shape))
                .collect::<Result<_, _>>()?;
            let rows = rebuild_level(&below, &pending.rows(), ROWS, schedule.levels(), schedule.group_time());
            levels[..level as usize].fill(None);
            levels[level as usize] = Some((schedule.group_time() + 1, rows));
            pending = Checksum::ZERO;
        }
        if rebuild == Rebuild::Coded {
            coded_left -= 1;
            build_coded(&mut raw, schedule.group_time() + 1, coded_left == 0)?;
        }
        schedule.advance();
    }
    let (_, built, coded_kept) = batch_outcome(&state.schedule, plan.grow_to, writes.len() as u64, plan.flush);
    let coded = coded_kept.iter().map(|t| coded.remove(t).expect("a C the batch built")).collect();
    let levels = built
        .into_iter()
        .map(|level| {
            let (time, rows) = levels[level as usize].as_ref().expect("a level the batch built and left filled");
            (level, seal_region(seal, Region::Level(level as u8), *time, rows))
        })
        .collect();
    let new: Vec<(u64, Digest)> = new_raw.iter().map(|(&i, s)| (i, leaf_hash(Some(s)))).collect();
    let raw_root = moved_root(schedule.log_capacity, root, &new, &context.proof)?;
    let state = LogState { schedule, raw_root, pending };
    Ok(OpenedWrite { state, raw: new_raw.into_iter().collect(), levels, coded })
}

/// Checks that every slot the plan writes is free: never written, or ⊥ (App. A.3: a deleted
/// block's slots hold ⊥ until a new copy takes them). `context` must be one [`write`]
/// accepted, so that its `old` checksums are U's. A client writing a new copy into slots the
/// provider named as free calls it before it sends anything: a provider that names a slot
/// holding data is caught here, and no byte of a live copy is overwritten.
pub fn check_free(
    plan: &WritePlan,
    context: &WriteContext,
    seal: &SealKey,
    sums: &ChecksumKey,
) -> Result<(), WriteError> {
    if sums.slot_width() != SLOT_WIDTH {
        return Err(WriteError::Width { got: sums.slot_width(), want: SLOT_WIDTH });
    }
    if context.old.len() != plan.indices.len() {
        return Err(WriteError::Shape);
    }
    for (&index, old) in plan.indices.iter().zip(&context.old) {
        let Some(sealed) = old else { continue };
        let sum = seal
            .open(SlotAddress { region: Region::Raw, index }, 0, sealed)
            .map_err(|error| WriteError::RawChecksum { index, error })?;
        if sum != sums.checksum(&encode_slot(index, None)) {
            return Err(WriteError::Occupied(index));
        }
    }
    Ok(())
}

/// U's root with `leaves` in place under `proof`; `root` itself when a re-encode writes no
/// leaf (its proof is empty, which [`write`] checks).
fn moved_root(
    log_capacity: u32,
    root: Digest,
    leaves: &[(u64, Digest)],
    proof: &RawProof,
) -> Result<Digest, WriteError> {
    match leaves {
        [] => Ok(root),
        _ => Ok(raw_root(log_capacity, leaves, proof)?),
    }
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
    let width = sums.slot_width();
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

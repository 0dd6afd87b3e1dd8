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
use super::code::{rebuild_level, Schedule};
use super::heap::{encode_slot, SLOT_WIDTH};
use super::raw_tree::{grown_root, leaf_hash, raw_root, RawProof, RawProofError};
use super::replay::{open_region, seal_region};
use super::stream::{CodedSums, OpenedRaw, RawIntake, Upload};
pub use super::walk::{batch_outcome, grown_schedule, padding};
use super::walk::{execute_now, walk, CodedAt, Executor, Step};
use super::{Region, SlotAddress};
use crate::Digest;
use std::collections::BTreeMap;

/// The plan for writing U slots `indices`, in that order, then flushing the open group when
/// `flush`.
pub fn plan(state: &LogState, indices: &[u64], flush: bool) -> Result<WritePlan, WriteError> {
    let highest = *indices.iter().max().ok_or(WriteError::Empty)?;
    let grow_to = match 64 - highest.leading_zeros() {
        need if need > super::raw_tree::MAX_LOG_CAPACITY => return Err(WriteError::Index(highest)),
        need if need > state.schedule.log_capacity => Some(need),
        _ => None,
    };
    let walk = walk(&state.schedule, grow_to, indices.len(), flush);
    let mut whole_raw = grow_to.is_some();
    // Levels built within the batch come from the client's own replay; only older ones are asked for.
    let mut built = vec![false; walk.start.levels() as usize + 1];
    let mut levels = Vec::new();
    for (_, step) in &walk.steps {
        match *step {
            Step::Level(level) => {
                for below in 0..level {
                    if !built[below as usize] && !levels.contains(&below) {
                        levels.push(below);
                    }
                }
                built[level as usize] = true;
            }
            Step::Coded(_) => {
                whole_raw = true;
                built.fill(true);
            }
            _ => {}
        }
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
        schedule = super::walk::grown_schedule(&schedule, k);
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
    let raw: Option<Vec<u64>> = match (raw, plan.whole_raw) {
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
    let walk = walk(&state.schedule, plan.grow_to, writes.len(), plan.flush);
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
    let mut replay =
        Replay { writes, slots, seal, sums, raw, pending, levels, new_raw: BTreeMap::new(), coded: BTreeMap::new() };
    execute_now(&walk, &mut replay)?;
    let Replay { levels, new_raw, mut coded, pending, .. } = replay;
    let (schedule, built, coded_kept) = walk.outcome();
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

/// The client's executor of a batch's walk: every rebuild replayed on checksums (Sec. 5.4),
/// U's new sealed checksums, and each C's checksums as of its build.
struct Replay<'a> {
    writes: &'a [u64],
    slots: &'a [u64],
    seal: &'a SealKey,
    sums: &'a ChecksumKey,
    /// U's checksums as the rebuilds of C see them (ROWS elements a slot): only when C is
    /// rebuilt, and given up at the last C the batch builds.
    raw: Option<Vec<u64>>,
    pending: Checksum,
    /// Each level's write time and checksums while the batch runs.
    levels: Vec<Option<(u64, Vec<u64>)>>,
    new_raw: BTreeMap<u64, SealedChecksum>,
    coded: BTreeMap<u64, CodedSums>,
}

impl Replay<'_> {
    /// CRebuild on checksums: C's checksums are U's, coded when sealed ([`CodedSums`]).
    fn build_coded(&mut self, at: &Schedule, coded: CodedAt) -> Result<(), WriteError> {
        let rows = if coded.last { self.raw.take() } else { self.raw.clone() }.ok_or(WriteError::Shape)?;
        let log_capacity = at.log_capacity;
        self.coded.insert(coded.time, CodedSums { log_capacity, time: coded.time, rows });
        Ok(())
    }
}

impl Executor for Replay<'_> {
    type Error = WriteError;

    async fn resize(&mut self, at: &Schedule, coded: CodedAt) -> Result<(), WriteError> {
        self.build_coded(at, coded)
    }

    async fn write(&mut self, at: &Schedule, write: Option<usize>) -> Result<(), WriteError> {
        // A ⊥ write adds nothing to the group's checksum: its slot is all zeros.
        let Some(i) = write else { return Ok(()) };
        let width = self.sums.slot_width();
        let (index, slot) = (self.writes[i], &self.slots[i * width..(i + 1) * width]);
        let sum = self.sums.checksum(slot);
        self.new_raw.insert(index, self.seal.seal(SlotAddress { region: Region::Raw, index }, 0, sum));
        if let Some(raw) = self.raw.as_mut() {
            let at = index as usize * ROWS;
            raw[at..at + ROWS].copy_from_slice(&sum.rows());
        }
        self.pending = self.pending + self.sums.checksum_at(at.pending() as usize, slot);
        Ok(())
    }

    async fn level(&mut self, at: &Schedule, level: u32) -> Result<(), WriteError> {
        let below: Vec<&[u64]> = self.levels[..level as usize]
            .iter()
            .map(|l| l.as_ref().map(|(_, rows)| rows.as_slice()).ok_or(WriteError::Shape))
            .collect::<Result<_, _>>()?;
        let rows = rebuild_level(&below, &self.pending.rows(), ROWS, at.levels(), at.group_time());
        self.levels[..level as usize].fill(None);
        self.levels[level as usize] = Some((at.group_time() + 1, rows));
        self.pending = Checksum::ZERO;
        Ok(())
    }

    async fn coded(&mut self, at: &Schedule, coded: CodedAt) -> Result<(), WriteError> {
        self.build_coded(at, coded)
    }
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

//! The provider's side of the log, in memory: U, the levels of H and C with their sealed
//! checksums, U's tree, and the writes of the open group (Sec. 6.1's grouping: H's blocks are
//! groups of writes, see [`Schedule`]). It answers a [`WritePlan`] with a [`WriteContext`], applies a
//! batch (running every rebuild on the slots themselves), answers audits and reads.
//!
//! This is the reference the persistent provider (in the server, over the store) is tested
//! against, and the honest party of the lying-provider tests. Nothing here checks the
//! client's sealed checksums: the provider cannot open them, and a client that uploads wrong
//! ones only harms itself. What it does check is shape, so that a malformed request is a
//! typed error and never a panic.

use super::audit::{prove_part, Part, PartProof, Pick};
use super::checksum::SealedChecksum;
use super::client::{RawRead, WriteContext, WritePlan, Written};
use super::code::{encode, rebuild_level_into, Schedule};
use super::field::P;
use super::raw_tree::{leaf_hash, RawProof, RawProofError, RawTree, MAX_LOG_CAPACITY};
use super::repair::RegionRead;
use super::walk::{batch_outcome, execute_now, grown_schedule, walk, CodedAt, Executor};
use super::Region;

/// A request the provider refuses (the client's bug or a hostile client).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    #[error("the plan does not fit the log (capacity 2^{log_capacity}, time {time})")]
    Plan { log_capacity: u32, time: u64 },
    #[error("the batch does not fit its plan")]
    Batch,
    #[error(transparent)]
    RawProof(#[from] RawProofError),
}

/// The schedule a plan starts from (after its growth), if the plan fits a log at `schedule`:
/// a growth within bounds (a shrink writes nothing and reads all of U), levels that are
/// filled, and U indices ascending, distinct and within the capacity. Every provider checks plans with this.
pub fn check_plan(schedule: &Schedule, plan: &WritePlan) -> Result<Schedule, ProviderError> {
    let refused = ProviderError::Plan { log_capacity: schedule.log_capacity, time: schedule.time };
    let schedule = match plan.grow_to {
        None => *schedule,
        Some(k) if k > MAX_LOG_CAPACITY => return Err(refused),
        // A shrink writes nothing, reads all of U, and keeps a valid schedule.
        Some(k) if k < schedule.log_capacity => {
            let shrunk = grown_schedule(schedule, k);
            if !plan.indices.is_empty() || !plan.levels.is_empty() || !plan.whole_raw || !shrunk.is_valid() {
                return Err(refused);
            }
            shrunk
        }
        Some(k) => grown_schedule(schedule, k),
    };
    if plan.levels.iter().any(|&l| !schedule.is_filled(l)) {
        return Err(refused);
    }
    let ascending = plan.indices.windows(2).all(|w| w[0] < w[1]);
    // Only a re-encode writes nothing ([`super::client::plan_reencode`]).
    let beyond = match plan.indices.last() {
        None => plan.grow_to.is_none(),
        Some(&last) => last >= schedule.capacity(),
    };
    if !ascending || beyond {
        return Err(RawProofError::Indices(schedule.log_capacity).into());
    }
    Ok(schedule)
}

/// The answer to a plan from what a provider holds: its schedule, U's tree and sealed
/// checksums, and each filled level's sealed checksums (`level_sealed`).
pub fn answer_plan(
    schedule: &Schedule,
    tree: &RawTree,
    raw_sealed: &[Option<SealedChecksum>],
    level_sealed: impl Fn(u32) -> Option<Vec<SealedChecksum>>,
    plan: &WritePlan,
) -> Result<WriteContext, ProviderError> {
    let after = check_plan(schedule, plan)?;
    let proof = match plan.grow_to {
        _ if plan.indices.is_empty() => RawProof { siblings: Vec::new() },
        None => tree.prove(&plan.indices)?,
        Some(k) => {
            let mut grown = tree.clone();
            (schedule.log_capacity..k).try_for_each(|_| grown.grow())?;
            grown.prove(&plan.indices)?
        }
    };
    let sealed_at = |i: u64| raw_sealed.get(i as usize).copied().flatten();
    let refused = ProviderError::Plan { log_capacity: schedule.log_capacity, time: schedule.time };
    let levels = plan.levels.iter().map(|&l| level_sealed(l).ok_or(refused.clone())).collect::<Result<_, _>>()?;
    // All of U before a shrink (the client checks what goes), after a growth.
    let raw = plan.whole_raw.then(|| (0..after.capacity().max(schedule.capacity())).map(sealed_at).collect());
    Ok(WriteContext { old: plan.indices.iter().map(|&i| sealed_at(i)).collect(), proof, levels, raw })
}

/// The batch's outcome ([`batch_outcome`]: the schedule after it, the levels and the write
/// times of the Cs it leaves behind) if the batch fits its (checked) plan: slots of `width`
/// canonical elements, one per write, writes within the capacity and covering the plan's
/// indices, and exactly the sealed checksums that outcome calls for.
pub fn fitting_outcome(
    schedule: &Schedule,
    width: usize,
    plan: &WritePlan,
    writes: &[u64],
    slots: &[u64],
    written: &Written,
) -> Option<(Schedule, Vec<u32>, Vec<u64>)> {
    let (after, built, coded) = batch_outcome(schedule, plan.grow_to, writes.len() as u64, plan.flush);
    let n = after.capacity();
    let fits = (!writes.is_empty() || plan.grow_to.is_some())
        && slots.len() == writes.len() * width
        && slots.iter().all(|&e| e < P)
        && writes.iter().all(|&i| i < n)
        && written.raw.iter().map(|r| r.0).eq(plan.indices.iter().copied())
        && writes.iter().collect::<std::collections::BTreeSet<_>>().into_iter().eq(plan.indices.iter())
        && written.levels.iter().map(|l| l.0).eq(built.iter().copied())
        && written.levels.iter().all(|(l, sealed)| sealed.len() as u64 == 2u64 << l)
        && written.coded.len() == coded.len()
        && written.coded.iter().all(|c| c.len() as u64 == 2 * n);
    fits.then_some((after, built, coded))
}

/// A level or C: its slots (X then Y, flat; a level's slots are groups) and their sealed
/// checksums.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stored {
    pub slots: Vec<u64>,
    pub sealed: Vec<SealedChecksum>,
}

/// The provider's log (see the module documentation).
#[derive(Clone, Debug)]
pub struct ProviderLog {
    schedule: Schedule,
    width: usize,
    /// U's slots, flat.
    pub raw: Vec<u64>,
    /// The writes of the open group, flat, in order (⊥ writes as zeros).
    pub staged: Vec<u64>,
    pub raw_sealed: Vec<Option<SealedChecksum>>,
    tree: RawTree,
    /// Level `ℓ` when filled; level `levels()` in a window.
    pub levels: Vec<Option<Stored>>,
    /// The C in use ([`Schedule::coded_time`]).
    pub coded: Stored,
    /// In a window, the C built at the epoch's end, in use once the window is over.
    pub coded_next: Option<Stored>,
}

impl ProviderLog {
    /// An empty log of `2^log_capacity` slots of `width` elements in groups of
    /// `2^group_log`; `coded` are the sealed checksums of its C, from
    /// [`super::client::LogState::new`].
    pub fn new(
        log_capacity: u32,
        group_log: u32,
        width: usize,
        coded: Vec<SealedChecksum>,
    ) -> Result<ProviderLog, ProviderError> {
        let n = 1usize << log_capacity.min(MAX_LOG_CAPACITY);
        let schedule = Schedule::new(log_capacity, group_log);
        if log_capacity > MAX_LOG_CAPACITY || !schedule.is_valid() || width == 0 || coded.len() != 2 * n {
            return Err(ProviderError::Plan { log_capacity, time: 0 });
        }
        Ok(ProviderLog {
            schedule,
            width,
            raw: vec![0; n * width],
            staged: Vec::new(),
            raw_sealed: vec![None; n],
            tree: RawTree::new(log_capacity),
            levels: vec![None; schedule.levels() as usize + 1],
            coded: Stored { slots: vec![0; 2 * n * width], sealed: coded },
            coded_next: None,
        })
    }

    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    pub fn width(&self) -> usize {
        self.width
    }

    /// Elements per slot of `region`: a level's slots are groups.
    pub fn region_width(&self, region: Region) -> usize {
        region.slot_width(self.width, self.schedule.group_log)
    }

    /// The answer to a plan, checked against the log's own schedule.
    pub fn context(&self, plan: &WritePlan) -> Result<WriteContext, ProviderError> {
        let level_sealed = |l: u32| self.levels.get(l as usize)?.as_ref().map(|s| s.sealed.clone());
        answer_plan(&self.schedule, &self.tree, &self.raw_sealed, level_sealed, plan)
    }

    /// Applies a batch: the slots `slots` (flat) written at U indices `writes`, in order, and
    /// the client's sealed checksums for what the batch rebuilt.
    pub fn apply(
        &mut self,
        plan: &WritePlan,
        writes: &[u64],
        slots: &[u64],
        written: &Written,
    ) -> Result<(), ProviderError> {
        // Everything is checked before anything changes: a refused batch leaves the log as it was.
        check_plan(&self.schedule, plan)?;
        let Some((_, _, coded_times)) = fitting_outcome(&self.schedule, self.width, plan, writes, slots, written)
        else {
            return Err(ProviderError::Batch);
        };
        // The sealed checksums of each C the batch builds, by write time; one it builds and
        // drops again within the batch has none, as nobody can audit it.
        let coded_sealed = coded_times.into_iter().zip(written.coded.iter().cloned()).collect();
        let walk = walk(&self.schedule, plan.grow_to, writes.len(), plan.flush);
        let mut reference = Reference { log: self, writes, slots, coded_sealed, buffer: Vec::new() };
        execute_now(&walk, &mut reference)?;
        for (level, sealed) in &written.levels {
            self.levels[*level as usize].as_mut().expect("a level the batch built and left filled").sealed =
                sealed.clone();
        }
        for &(index, sealed) in &written.raw {
            self.raw_sealed[index as usize] = Some(sealed);
        }
        let leaves: Vec<_> = written.raw.iter().map(|(i, s)| (*i, leaf_hash(Some(s)))).collect();
        self.tree.set(&leaves);
        Ok(())
    }

    /// U grows (or shrinks) to `2^k` slots, `at` the schedule after: C re-encoded over it,
    /// H emptied (App. A.3).
    fn resize(&mut self, at: &Schedule, coded: Vec<SealedChecksum>) -> Result<(), ProviderError> {
        let k = at.log_capacity;
        let n = 1usize << k;
        (self.schedule.log_capacity..k).try_for_each(|_| self.tree.grow())?;
        if k < self.schedule.log_capacity {
            self.tree.shrink(k);
        }
        self.schedule = *at;
        self.raw.resize(n * self.width, 0);
        self.raw_sealed.resize(n, None);
        self.coded = Stored { slots: encode(&self.raw, self.width, k, 0), sealed: coded };
        self.levels = vec![None; self.schedule.levels() as usize + 1];
        self.coded_next = None;
        self.staged.clear();
        Ok(())
    }

    /// A region's slots and sealed checksums.
    pub fn region(&self, region: Region) -> Option<&Stored> {
        match region {
            Region::Level(level) => self.levels.get(level as usize)?.as_ref(),
            Region::Coded => Some(&self.coded),
            Region::Raw => None,
        }
    }

    /// A region as [`super::repair`] takes it.
    pub fn region_read(&self, region: Region) -> Option<RegionRead> {
        let stored = self.region(region)?;
        let slots = stored.slots.chunks_exact(self.region_width(region)).map(|s| Some(s.to_vec())).collect();
        Some(RegionRead { slots, sealed: stored.sealed.clone() })
    }

    /// The answer to one part of an audit.
    pub fn prove(&self, part: &Part, picks: &[Pick]) -> Option<PartProof> {
        let stored = self.region(part.region)?;
        if picks.iter().any(|p| p.index as usize >= stored.sealed.len()) {
            return None;
        }
        let width = self.region_width(part.region);
        Some(prove_part(picks, width, |i| {
            let i = i as usize;
            (&stored.slots[i * width..(i + 1) * width], stored.sealed[i])
        }))
    }

    /// U's slots `indices` (ascending), their sealed checksums and the proof tying them to
    /// U's root: what a read through U returns.
    pub fn read(&self, indices: &[u64]) -> Result<RawRead, ProviderError> {
        let proof = self.tree.prove(indices)?;
        let w = self.width;
        let slots =
            indices.iter().flat_map(|&i| self.raw[i as usize * w..(i as usize + 1) * w].iter().copied()).collect();
        Ok(RawRead { slots, sealed: indices.iter().map(|&i| self.raw_sealed[i as usize]).collect(), proof })
    }
}

/// The reference's executor of a batch's walk: every rebuild run on the slots themselves.
struct Reference<'a> {
    log: &'a mut ProviderLog,
    writes: &'a [u64],
    slots: &'a [u64],
    /// The client's sealed checksums of each C the batch keeps, by write time.
    coded_sealed: std::collections::BTreeMap<u64, Vec<SealedChecksum>>,
    /// A level's allocation, reused.
    buffer: Vec<u64>,
}

impl Executor for Reference<'_> {
    type Error = ProviderError;

    async fn resize(&mut self, at: &Schedule, coded: CodedAt) -> Result<(), ProviderError> {
        let sealed = self.coded_sealed.remove(&coded.time).unwrap_or_default();
        self.log.resize(at, sealed)
    }

    async fn write(&mut self, _: &Schedule, write: Option<usize>) -> Result<(), ProviderError> {
        let width = self.log.width;
        let log = &mut *self.log;
        match write {
            Some(i) => {
                let (index, slot) = (self.writes[i], &self.slots[i * width..(i + 1) * width]);
                let at = index as usize * width;
                log.raw[at..at + width].copy_from_slice(slot);
                log.staged.extend_from_slice(slot);
            }
            None => log.staged.resize(log.staged.len() + width, 0),
        }
        Ok(())
    }

    /// At an epoch's end, the epoch's writes stay as level `levels()` for the window.
    async fn level(&mut self, at: &Schedule, level: u32) -> Result<(), ProviderError> {
        let log = &mut *self.log;
        let below: Vec<&[u64]> = log.levels[..level as usize]
            .iter()
            .map(|l| l.as_ref().expect("levels below the first empty one are filled").slots.as_slice())
            .collect();
        rebuild_level_into(&mut self.buffer, &below, &log.staged, log.staged.len(), at.levels(), at.group_time());
        log.staged.clear();
        log.levels[..level as usize].fill(None);
        let stale = log.levels[level as usize].take().map(|s| s.slots).unwrap_or_default();
        let slots = std::mem::replace(&mut self.buffer, stale);
        log.levels[level as usize] = Some(Stored { slots, sealed: Vec::new() });
        Ok(())
    }

    async fn coded(&mut self, at: &Schedule, coded: CodedAt) -> Result<(), ProviderError> {
        let slots = encode(&self.log.raw, self.log.width, at.log_capacity, 0);
        let sealed = self.coded_sealed.remove(&coded.time).unwrap_or_default();
        self.log.coded_next = Some(Stored { slots, sealed });
        Ok(())
    }

    /// Once the window is over (or never opened), its level goes and the next C is in use.
    async fn advanced(&mut self, now: &Schedule) -> Result<(), ProviderError> {
        let log = &mut *self.log;
        log.schedule = *now;
        if !now.in_window() {
            if let Some(next) = log.coded_next.take() {
                log.coded = next;
                log.levels[now.levels() as usize] = None;
            }
        }
        Ok(())
    }
}

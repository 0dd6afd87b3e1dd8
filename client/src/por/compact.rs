//! Consolidation that moves copies (App. A.3): when deletes have freed about half of U but
//! not its top, the copies past a power of two move down into the holes below it, and U
//! shrinks to it. Shrinking when the top is free already needs no move
//! ([`PorSession::consolidate`]).
//!
//! 1. **Plan** ([`vouch_core::por::moves`]), nothing written: the slots in use are those the current
//!    labels of the namespace's PoR versions name. Their blocks that reach past the target are
//!    found by walking their first slots (read and checked against U's root), and placed in
//!    the holes. The plan (target and moves) goes into the client's record, and the
//!    generation of layouts goes up by one, before anything is written.
//! 2. **Move**: each moved slot is read, checked against U's root, re-indexed
//!    (`vouch_core::por::heap::moved_slot`) and written at its new place. The holes are slots
//!    no label names (⊥, never written, or left by a copy a crash cut short), so nothing live
//!    is overwritten. The record counts the slots moved after each batch.
//! 3. **Relabel and free**: every version whose copy moved gets its label sealed again in the
//!    new generation, carried by batches that write ⊥ over the slots the moves left and every
//!    slot from the target on. The record counts the labels and slots of the batches seen
//!    applied, so this step, too, goes on where it stopped. A label the provider serves is
//!    never taken as done: it may come from a batch it refused and kept (seed 3529).
//! 4. **Shrink** to the target ([`plan_shrink`], which checks against U's checksums that
//!    every slot from it on is ⊥ or never written); then the record bounds older labels to the
//!    target: one a provider serves for a moved copy names slots past it, and is caught as
//!    stale ([`vouch_core::por::record::PorRecord::label_is_current`]) instead of freeing, or building
//!    on, slots that hold other data since.
//!
//! A crash anywhere leaves the consolidation in the record; the next PoR operation finishes
//! it before it reads any label. When the slots to move cannot be read (U lost, or a lie)
//! before the moves are made, it is dropped instead, so that repair is never held up by it. All of it runs under the commit lock, so the namespace does
//! not move meanwhile.

use super::PorSession;
use super::{copy, sealed_label, Batch, PorKeys, INITIAL_LOG_CAPACITY, REQUEST_SLOTS};
use crate::error::ClientError;
use crate::ledger::Committing;
use crate::reads::Reads;
use vouch_core::namespace::VersionRecord;
use vouch_core::por::client::plan_shrink;
use vouch_core::por::heap::{encode_slot, moved_slot, SLOT_WIDTH};
use vouch_core::por::layout::{Layout, Run};
use vouch_core::por::moves::{self, freed, moved};
use vouch_core::por::record::{Compacting, PorRecord};
use vouch_proto::por::PorLabel;

/// Labels per batch (the provider takes up to 16).
const LABELS_PER_BATCH: usize = 16;

/// A version with a copy, where its label says the copy is, and the generation it was
/// sealed in.
struct LiveCopy {
    version: VersionRecord,
    layout: Layout,
    generation: u64,
}

impl PorSession<'_> {
    /// Plans a consolidation that moves copies and carries it out, if one shrinks U (see the
    /// module documentation); else nothing.
    pub(super) async fn compact(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &mut PorRecord,
    ) -> Result<(), ClientError> {
        let copies = self.live_copies(commit, keys, record).await?;
        let layouts: Vec<Layout> = copies.into_iter().map(|c| c.layout).collect();
        let live = moves::union(layouts.iter().flat_map(|l| l.runs.iter().copied()));
        let schedule = record.at.log.schedule;
        let least = INITIAL_LOG_CAPACITY.max(schedule.group_log);
        let lowest = 1u64 << moves::least_target(&live, least);
        if lowest >= schedule.capacity() {
            return Ok(());
        }
        let mut blocks = Vec::new();
        for run in live.iter().filter(|r| r.first + r.slots > lowest) {
            let spans = match self.block_spans(keys, record, *run).await {
                Ok(spans) => spans,
                // Lost or lied about: no consolidation now (reads and repair meet it).
                Err(e) if e.violation_kind().is_some() => {
                    tracing::warn!("PoR log: no consolidation: {e}");
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            blocks.extend(spans.into_iter().filter(|&(at, slots)| at + slots > lowest));
        }
        let Some(plan) = moves::plan(&live, &blocks, &layouts, least, schedule.log_capacity) else {
            tracing::info!("PoR log: the copies past U's half do not fit in its holes; it keeps its size");
            return Ok(());
        };
        let slots: u64 = plan.moves.iter().map(|m| m.slots).sum();
        tracing::info!(
            "PoR log: consolidating U from 2^{} to 2^{} slots, moving {slots} slots",
            schedule.log_capacity,
            plan.log_target
        );
        record.generation += 1;
        record.compacting =
            Some(Compacting { log_target: plan.log_target, moves: plan.moves, moved: 0, freed: 0, relabeled: 0 });
        self.save(record)?;
        self.settle_compaction(commit, keys, record).await
    }

    /// Carries the consolidation the record names, if any, to its end, from where it stopped.
    pub(super) async fn settle_compaction(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &mut PorRecord,
    ) -> Result<(), ClientError> {
        let Some(plan) = record.compacting.clone() else { return Ok(()) };
        if let Err(e) = self.make_moves(keys, record, &plan).await {
            if e.violation_kind().is_none() {
                return Err(e);
            }
            // The slots to move are lost or lied about. Nothing live was written yet (only
            // holes), so the consolidation is dropped: U keeps its size, and reads of those
            // slots meet the violation for themselves, where repair can restore them.
            tracing::warn!("PoR log: the consolidation stops before its moves are made: {e}");
            record.compacting = None;
            return self.save(record);
        }
        self.relabel_and_free(commit, keys, record, &plan).await?;
        if record.at.log.schedule.log_capacity > plan.log_target {
            let planned =
                plan_shrink(&record.at.log, plan.log_target).map_err(|e| ClientError::State(e.to_string()))?;
            self.send(keys, record, planned, Batch::default()).await?;
        }
        let generation = record.generation;
        record.bound_labels(generation, 1 << plan.log_target);
        record.compacting = None;
        self.save(record)
    }

    /// Every version of the namespace's PoR files that has a copy, with its current label.
    async fn live_copies(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &PorRecord,
    ) -> Result<Vec<LiveCopy>, ClientError> {
        let reads = Reads::committed(self.client, commit);
        let mut out = Vec::new();
        for entry in reads.list().await? {
            if !copy::is_por_file(&entry.file) {
                continue;
            }
            for version in reads.log(&entry.name).await? {
                if version.len > 0 {
                    let (layout, generation) = self.sealed_location(keys, record, &version).await?;
                    out.push(LiveCopy { version, layout, generation });
                }
            }
        }
        Ok(out)
    }

    /// Where each block of the live run `run` starts and how many slots it takes, from its
    /// first slots, read a request at a time.
    async fn block_spans(&self, keys: &PorKeys, record: &PorRecord, run: Run) -> Result<Vec<(u64, u64)>, ClientError> {
        let end = run.first + run.slots;
        let (mut spans, mut head) = (Vec::new(), run.first);
        while head < end {
            let count = (end - head).min(REQUEST_SLOTS as u64);
            let slots = self.read(keys, &record.at.log, &(head..head + count).collect::<Vec<_>>()).await?;
            let (found, next) = copy::block_spans(head, &slots, head).map_err(|e| ClientError::State(e.to_string()))?;
            spans.extend(found);
            head = next;
        }
        if head != end {
            return Err(ClientError::State(format!("a block of U's slots {}+{} runs past them", run.first, run.slots)));
        }
        Ok(spans)
    }

    /// Step 2: the moves' slots, re-indexed, written at their new places, from the first not
    /// written yet.
    async fn make_moves(&self, keys: &PorKeys, record: &mut PorRecord, plan: &Compacting) -> Result<(), ClientError> {
        let mut done = 0u64;
        let mut batch = Batch::default();
        for m in &plan.moves {
            let mut at = 0;
            while at < m.slots {
                let count = (m.slots - at).min(REQUEST_SLOTS as u64);
                let written = plan.moved.saturating_sub(done).min(count);
                let indices: Vec<u64> = (m.from + at + written..m.from + at + count).collect();
                let slots = match indices.is_empty() {
                    true => Vec::new(),
                    false => self.read(keys, &record.at.log, &indices).await?,
                };
                for (&from, slot) in indices.iter().zip(slots.chunks_exact(SLOT_WIDTH)) {
                    let to = m.to + (from - m.from);
                    let slot = moved_slot(slot, from, to)
                        .map_err(|e| ClientError::State(format!("slot {from} of a live copy does not move: {e}")))?;
                    batch.writes.push(to);
                    batch.slots.extend(slot);
                    if batch.writes.len() == REQUEST_SLOTS {
                        self.moved(keys, record, std::mem::take(&mut batch)).await?;
                    }
                }
                (done, at) = (done + count, at + count);
            }
        }
        if !batch.writes.is_empty() {
            self.moved(keys, record, batch).await?;
        }
        Ok(())
    }

    /// A batch of moved slots, then the record says they are written.
    async fn moved(&self, keys: &PorKeys, record: &mut PorRecord, batch: Batch) -> Result<(), ClientError> {
        let count = batch.writes.len() as u64;
        self.batch(keys, record, batch).await?;
        record.compacting.as_mut().expect("a consolidation under way").moved += count;
        self.save(record)
    }

    /// Step 3: the moved copies' labels, sealed in the new generation, with ⊥ over the slots
    /// the consolidation frees.
    async fn relabel_and_free(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &mut PorRecord,
        plan: &Compacting,
    ) -> Result<(), ClientError> {
        let target = 1u64 << plan.log_target;
        let mut labels: Vec<PorLabel> = Vec::new();
        for copy in self.live_copies(commit, keys, record).await? {
            let after = moved(&copy.layout, &plan.moves);
            // A label of this generation was sealed by this step (so `after` is the layout
            // it gave), but whether a batch that carried it was applied only the record
            // knows: it stays in the list, and the record's count skips it once done.
            if copy.generation != record.generation && after == copy.layout {
                continue;
            }
            if after.end() > target {
                return Err(ClientError::State(format!(
                    "version {} of a PoR file would keep slots past 2^{} after its consolidation",
                    copy.version.number, plan.log_target
                )));
            }
            labels.push(sealed_label(keys, &copy.version, &after, record.generation));
        }
        let to_free: Vec<u64> = freed(&plan.moves, target, record.at.next_slot)
            .iter()
            .flat_map(|r| r.first..r.first + r.slots)
            .skip(plan.freed as usize)
            .collect();
        let labels = labels.get(plan.relabeled as usize..).unwrap_or_default();
        let (mut to_free, mut labels) = (to_free.as_slice(), labels);
        while !to_free.is_empty() || !labels.is_empty() {
            let (writes, rest) = to_free.split_at(to_free.len().min(REQUEST_SLOTS));
            let (carried, more) = labels.split_at(labels.len().min(LABELS_PER_BATCH));
            (to_free, labels) = (rest, more);
            let taken = writes.len() as u64;
            // Labels left once every slot is ⊥ ride on ⊥ written again over the target's slot.
            let writes = match writes.is_empty() {
                true if record.at.log.schedule.log_capacity > plan.log_target => vec![target],
                true => return Err(ClientError::State("a consolidation's labels outlived its shrink".into())),
                false => writes.to_vec(),
            };
            let slots = writes.iter().flat_map(|&i| encode_slot(i, None)).collect();
            let batch = Batch { writes, slots, labels: carried.to_vec(), into_free: false, copy: None };
            self.batch(keys, record, batch).await?;
            let progress = record.compacting.as_mut().expect("a consolidation under way");
            progress.freed += taken;
            progress.relabeled += carried.len() as u64;
            self.save(record)?;
        }
        Ok(())
    }
}

//! Deletes (App. A.3): when versions of a PoR file go (`vouch rm`, `vouch prune`), the slots
//! of their copies that no kept version shares are overwritten with ⊥. The log then stops
//! carrying their data (H and C lose it at their next rebuilds), and the provider names the
//! slots free, for new copies to take ([`vouch_core::por::layout::Allocator`]) once each is checked ⊥.
//!
//! When the deletes leave every slot of U from some power of two on free, U shrinks to the
//! slots below it ([`PorSession::consolidate`], App. A.3's consolidation); when they free half
//! of it elsewhere, the copies past the half move down first ([`super::compact`]).
//!
//! The slots are found before the commit, from the layouts the client sealed (a version
//! still proven, so a missing label is a lie), and written after the commit is accepted. The
//! dropped versions are named in the client's record before the commit: after a crash
//! between the two, the next PoR operation finds them gone from the namespace (the commit was
//! accepted) and writes their slots ⊥ then, or still there (it was not) and owes nothing. A
//! kept version's slots are never freed.

use super::PorSession;
use super::{Batch, PorKeys};
use crate::error::ClientError;
use crate::ledger::Committing;
use crate::reads::Reads;
use vouch_core::namespace::VersionRecord;
use vouch_core::por::client::plan_shrink;
use vouch_core::por::heap::{encode_slot, SLOT_WIDTH};
use vouch_core::por::layout::{self, Layout, Run};
use vouch_core::por::record::{Deleting, PorRecord};

/// The slots a commit frees, to be written ⊥ once it is accepted.
pub(crate) struct OwedDelete(Vec<u64>);

impl PorSession<'_> {
    /// Before a commit that drops the versions `gone` of the PoR file `name` and keeps `kept`:
    /// the slots only the dropped versions' copies hold. The versions are named in the record
    /// first, so that a crash before their ⊥ writes leaves them owed, not leaked.
    pub(crate) async fn owe_delete(
        &self,
        commit: &Committing<'_>,
        name: &str,
        gone: &[VersionRecord],
        kept: &[VersionRecord],
    ) -> Result<OwedDelete, ClientError> {
        let keys = self.keys()?;
        let mut record = self.begin(commit, &keys, false).await?;
        let gone_slots = layout::slots_of(&self.layouts(&keys, &record, gone).await?);
        let kept_slots = layout::slots_of(&self.layouts(&keys, &record, kept).await?);
        let copied: Vec<&VersionRecord> = gone.iter().filter(|v| v.len > 0).collect();
        if let Some(first) = copied.first() {
            let versions = copied.iter().map(|v| v.number).collect();
            record.deleting = Some(Deleting { name: name.to_string(), file: first.file, versions });
            self.save(&record)?;
        }
        Ok(OwedDelete(gone_slots.difference(&kept_slots).copied().collect()))
    }

    /// The layouts of the copies of `versions` (an empty version has none).
    async fn layouts(
        &self,
        keys: &PorKeys,
        record: &PorRecord,
        versions: &[VersionRecord],
    ) -> Result<Vec<Layout>, ClientError> {
        let mut out = Vec::with_capacity(versions.len());
        for v in versions.iter().filter(|v| v.len > 0) {
            out.push(self.location(keys, record, v).await?);
        }
        Ok(out)
    }

    /// After that commit (its lock still held): ⊥ over the slots it freed, in batches; then U
    /// shrinks if it can.
    pub(crate) async fn pay_delete(&self, commit: &Committing<'_>, owed: OwedDelete) -> Result<(), ClientError> {
        let keys = self.keys()?;
        let mut record = self.ready(&keys, false).await?;
        self.write_deleted(&keys, &mut record, &owed.0).await?;
        if record.deleting.take().is_some() {
            self.save(&record)?;
        }
        if owed.0.is_empty() {
            return Ok(());
        }
        self.consolidate(commit, &keys, &mut record).await
    }

    /// ⊥ over U's slots `indices`, in batches.
    async fn write_deleted(&self, keys: &PorKeys, record: &mut PorRecord, indices: &[u64]) -> Result<(), ClientError> {
        for writes in indices.chunks(super::REQUEST_SLOTS) {
            let slots: Vec<u64> = writes.iter().flat_map(|&i| encode_slot(i, None)).collect();
            debug_assert_eq!(slots.len(), writes.len() * SLOT_WIDTH);
            let batch = Batch { writes: writes.to_vec(), slots, labels: Vec::new(), into_free: false, copy: None };
            self.batch(keys, record, batch).await?;
        }
        Ok(())
    }

    /// Settles the delete the record names (see [`PorSession::owe_delete`]): if its commit was
    /// accepted (none of its versions is in the namespace any more), ⊥ over the slots only
    /// they held, from the labels this client sealed for them; else nothing is owed. Under the
    /// commit lock (`commit`), so the namespace does not move meanwhile.
    pub(super) async fn settle_delete(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &mut PorRecord,
    ) -> Result<(), ClientError> {
        let Some(deleting) = record.deleting.clone() else { return Ok(()) };
        let present: Vec<VersionRecord> = match Reads::committed(self.client, commit).log(&deleting.name).await {
            Ok(all) => all.into_iter().filter(|v| v.file == deleting.file).collect(),
            Err(ClientError::NotFound(_)) => Vec::new(),
            Err(e) => return Err(e),
        };
        if !present.iter().any(|v| deleting.versions.contains(&v.number)) {
            let mut gone = Vec::new();
            for &number in &deleting.versions {
                let key = [&deleting.file.0[..], &number.to_le_bytes()].concat();
                // No label: no copy was made (its copy was still owed), so no slot to free.
                gone.extend(self.label(keys, record, &key).await?.map(|(layout, _)| layout));
            }
            let kept = layout::slots_of(&self.layouts(keys, record, &present).await?);
            // Slots a shrink took away since are gone already.
            let owed: Vec<u64> =
                layout::slots_of(&gone).difference(&kept).copied().filter(|&slot| slot < record.at.next_slot).collect();
            tracing::info!("PoR log: a delete's {} slots were still owed ⊥; writing them", owed.len());
            self.write_deleted(keys, record, &owed).await?;
            record.deleting = None;
            self.save(record)?;
            return self.consolidate(commit, keys, record).await;
        }
        record.deleting = None;
        self.save(record)
    }

    /// App. A.3's consolidation: when every slot of U from some power of two on is free (the
    /// copies there were deleted), U shrinks to the slots below it ([`plan_shrink`]), so that
    /// the log's size, its rebuilds and its audits follow the data kept, not the most it ever
    /// held. When half of the slots used are free but the top is not, the copies there move
    /// down first ([`PorSession::compact`]). Where the free tail starts is the provider's word (its lowest free runs, up to
    /// [`layout::MAX_RUNS`]: a tail beyond them waits for a later delete); the shrink's batch
    /// checks it against U's checksums before anything is sent, so a provider that named a
    /// slot holding data free is caught.
    pub(super) async fn consolidate(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &mut PorRecord,
    ) -> Result<(), ClientError> {
        let schedule = record.at.log.schedule;
        let next = record.at.next_slot;
        let answer = self.allocator(record, next).await?;
        let free = answer.free_runs();
        let Some(target) = shrink_target(&free, next, schedule.log_capacity, schedule.group_log) else {
            // Half of the slots used are free, but not the top: copies move down. (The
            // provider's word only says whether to look: what is live is the labels' word.)
            let freed: u64 = free.iter().map(|r| r.slots).sum();
            if freed > 0 && freed * 2 >= next {
                return self.compact(commit, keys, record).await;
            }
            return Ok(());
        };
        let planned = plan_shrink(&record.at.log, target).map_err(|e| ClientError::State(e.to_string()))?;
        tracing::info!("PoR log: U's slots from {} on are free; it shrinks to 2^{target}", 1u64 << target);
        self.send(keys, record, planned, Batch::default()).await
    }
}

/// The capacity U may shrink to: `2^k` for the least `k` (at least the initial capacity and a
/// group) such that the slots from `2^k` to `next` (the first never written) are in the free
/// runs, if below the capacity `2^log_capacity`.
fn shrink_target(free: &[Run], next: u64, log_capacity: u32, group_log: u32) -> Option<u32> {
    // The free tail: the runs that reach `next` without a gap.
    let mut tail = next;
    for run in free.iter().rev() {
        if run.first + run.slots != tail {
            break;
        }
        tail = run.first;
    }
    let least = super::INITIAL_LOG_CAPACITY.max(group_log);
    let k = (64 - tail.saturating_sub(1).leading_zeros()).max(least);
    (k < log_capacity).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(list: &[(u64, u64)]) -> Vec<Run> {
        list.iter().map(|&(first, slots)| Run { first, slots }).collect()
    }

    #[test]
    fn u_shrinks_to_the_least_power_of_two_past_its_last_slot_in_use() {
        // Capacity 2^10, slots written up to 700, free from 100 on (in two runs): 2^7.
        assert_eq!(shrink_target(&runs(&[(5, 3), (100, 200), (300, 400)]), 700, 10, 4), Some(7));
        // A gap (slot 299 in use): free from 300 only, which needs 2^9.
        assert_eq!(shrink_target(&runs(&[(100, 199), (300, 400)]), 700, 10, 4), Some(9));
        // Nothing free at the end, or the tail not below half: no shrink.
        assert_eq!(shrink_target(&runs(&[(100, 200)]), 700, 10, 4), None);
        assert_eq!(shrink_target(&runs(&[(600, 100)]), 700, 10, 4), None);
        // Never written past 40: 2^6, but never below a group or the initial capacity.
        assert_eq!(shrink_target(&[], 40, 10, 4), Some(6));
        assert_eq!(shrink_target(&runs(&[(0, 40)]), 40, 10, 4), Some(4));
        assert_eq!(shrink_target(&runs(&[(0, 40)]), 40, 10, 8), Some(8));
        assert_eq!(shrink_target(&runs(&[(0, 16)]), 16, 4, 4), None);
    }
}

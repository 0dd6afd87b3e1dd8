//! [`PorLog::apply`]: a batch of writes made durable (see the module documentation for the
//! order of puts, commit and deletes).

use super::coded_build::NewCoded;
use super::error::PorStoreError;
use super::names::ObjectRef;
use super::objects;
use super::raw;
use super::run::{Outcome, Working};
use super::{Held, PorLog, MAX_LABELS, MAX_LABEL_KEY, MAX_LABEL_VALUE};
use crate::{MetaBatch, MetaStore, Repository};
use std::collections::{BTreeMap, HashSet};
use vouch_core::por::client::{WritePlan, Written};
use vouch_core::por::code::Schedule;
use vouch_core::por::provider::{check_plan, fitting_outcome, ProviderError};
use vouch_core::por::raw_tree::leaf_hash;
use vouch_core::por::Region;

/// A level after the batch, once its new object (if any) is put.
enum After {
    Kept,
    Emptied,
    New(Held),
}

impl PorLog {
    /// Applies a batch: the slots `slots` (flat) written at U indices `writes`, in order, and
    /// the client's sealed checksums for what the batch rebuilt. Durable when it returns Ok.
    /// Everything is checked before anything changes: a refused batch
    /// ([`PorStoreError::Refused`]) leaves the log as it was, in memory and in the store.
    pub async fn apply(
        &mut self,
        repo: &Repository,
        plan: &WritePlan,
        writes: &[u64],
        slots: &[u64],
        written: &Written,
    ) -> Result<(), PorStoreError> {
        self.apply_labelled(repo, (plan, writes, slots, written), &[]).await
    }

    /// [`PorLog::apply`] of a batch (plan, writes, slots, written), and `labels` (key, value)
    /// committed with it, atomically: after a crash either the batch and its labels are there
    /// or neither is. A label's key is at most [`MAX_LABEL_KEY`] bytes and its value at most
    /// [`MAX_LABEL_VALUE`].
    pub async fn apply_labelled(
        &mut self,
        repo: &Repository,
        (plan, writes, slots, written): (&WritePlan, &[u64], &[u64], &Written),
        labels: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<(), PorStoreError> {
        if labels.len() > MAX_LABELS
            || labels.iter().any(|(k, v)| k.is_empty() || k.len() > MAX_LABEL_KEY || v.len() > MAX_LABEL_VALUE)
        {
            return Err(PorStoreError::Refused(ProviderError::Batch));
        }
        check_plan(&self.schedule, plan)?;
        if fitting_outcome(&self.schedule, self.width, plan, writes, slots, written).is_none() {
            return Err(ProviderError::Batch.into());
        }
        let outcome = self.run(repo, plan, writes, slots).await?;
        self.store(repo, writes, slots, written, labels, outcome).await
    }

    /// The stored levels disagree with the schedule: not reachable from a record that decoded.
    pub(super) fn inconsistent(&self, level: usize) -> PorStoreError {
        PorStoreError::CorruptState {
            at: String::from_utf8_lossy(&self.names.state()).into_owned(),
            detail: format!("level {level} is not where the schedule says"),
        }
    }

    /// Puts the new objects, commits the batch, adopts it, deletes what it superseded.
    async fn store(
        &mut self,
        repo: &Repository,
        writes: &[u64],
        slots: &[u64],
        written: &Written,
        labels: &[(Vec<u8>, Vec<u8>)],
        outcome: Outcome,
    ) -> Result<(), PorStoreError> {
        let width = self.width;
        let group_width = width << outcome.schedule.group_log;
        let Outcome { schedule, levels, coded, coded_build, stash, stale_stash, staged, builds, created } = outcome;
        let sealed_of: BTreeMap<u32, &Vec<_>> = written.levels.iter().map(|(l, s)| (*l, s)).collect();
        let mut after: Vec<After> = Vec::with_capacity(levels.len());
        for (level, working) in levels.into_iter().enumerate() {
            after.push(match working {
                Working::Kept => After::Kept,
                Working::Empty => After::Emptied,
                Working::Built(slots) => {
                    let time = schedule.level_time(level as u32).ok_or_else(|| self.inconsistent(level))?;
                    let sealed = *sealed_of.get(&(level as u32)).ok_or(ProviderError::Batch)?;
                    let object = self.limits.object(Region::Level(level as u8), time, 2 << level, group_width);
                    objects::put(repo.blobs(), &self.names, &object, &slots, sealed, group_width).await?;
                    let small = slots.len() * 8 <= self.limits.cached_level_bytes;
                    After::New(Held { object, sealed: Some(sealed.clone()), cached: small.then_some(slots) })
                }
                Working::Building(object) => {
                    let sealed = *sealed_of.get(&(level as u32)).ok_or(ProviderError::Batch)?;
                    objects::put_sealed(repo.blobs(), &self.names, &object, sealed).await?;
                    After::New(Held { object, sealed: Some(sealed.clone()), cached: None })
                }
            });
        }
        // The C in use, then in a window the next: put if the batch encoded it (with the
        // client's sealed checksums, in that order), else one the log holds already.
        let wanted = [Some(schedule.coded_time()), schedule.in_window().then(|| schedule.epoch_start())];
        let mut sealed_lists = written.coded.iter();
        let mut new_coded = Vec::with_capacity(2);
        let mut coded = coded;
        for time in wanted.into_iter().flatten() {
            let held = match coded.remove(&time) {
                Some(made) => {
                    let sealed = sealed_lists.next().ok_or(ProviderError::Batch)?;
                    let object = match made {
                        NewCoded::Whole(slots) => {
                            let object = self.limits.object(Region::Coded, time, 2 * schedule.capacity(), width);
                            objects::put(repo.blobs(), &self.names, &object, &slots, sealed, width).await?;
                            object
                        }
                        NewCoded::Building(object) => {
                            objects::put_sealed(repo.blobs(), &self.names, &object, sealed).await?;
                            object
                        }
                    };
                    Held { object, sealed: Some(sealed.clone()), cached: None }
                }
                None => [Some(&self.coded), self.coded_next.as_ref()]
                    .into_iter()
                    .flatten()
                    .find(|held| held.object.time == time)
                    .cloned()
                    .ok_or_else(|| self.inconsistent(0))?,
            };
            new_coded.push(held);
        }
        if sealed_lists.next().is_some() {
            return Err(ProviderError::Batch.into());
        }
        let level_objects = after.iter().enumerate().filter_map(|(level, next)| match next {
            After::Kept => self.levels.get(level).and_then(Option::as_ref).map(|h| h.object),
            After::Emptied => None,
            After::New(held) => Some(held.object),
        });
        let coded_objects = new_coded.iter().map(|h| h.object);
        let record =
            self.record_at(schedule, level_objects.chain(coded_objects).collect(), &builds, coded_build.clone());
        // What the new state stops naming, of what the old one named and the batch put.
        // By folder: an object is its folder, whatever its segment size.
        let named: HashSet<String> = record.named().map(|o| self.names.group(&o)).collect();
        let superseded: Vec<ObjectRef> = self
            .named_objects()
            .into_iter()
            .chain(created)
            .collect::<HashSet<_>>()
            .into_iter()
            .filter(|o| !named.contains(&self.names.group(o)))
            .collect();

        let mut batch = MetaBatch::default();
        // A shrink (App. A.3): the slots that go were checked free by the client; their
        // entries go too, so that U grown again finds them never written.
        for index in schedule.capacity()..self.schedule.capacity() {
            if self.raw_sealed.get(index as usize).is_some_and(Option::is_some) {
                batch.delete(self.names.raw(index)).delete(self.names.raw_sealed(index)).delete(self.names.free(index));
            }
        }
        let last_write: BTreeMap<u64, &[u64]> = writes.iter().copied().zip(slots.chunks_exact(width)).collect();
        for (&index, slot) in &last_write {
            raw::put_slot(&mut batch, &self.names, index, slot);
        }
        for (index, sealed) in &written.raw {
            raw::put_sealed(&mut batch, &self.names, *index, sealed);
        }
        for (key, value) in labels {
            batch.put(self.names.label(key), value.clone());
        }
        if let Some(time) = stale_stash {
            for (key, _) in repo.meta().scan(&self.names.stash_prefix(time))? {
                batch.delete(key);
            }
        }
        if let Some(build) = &coded_build {
            for (index, slot) in &stash {
                batch.put(self.names.stash(build.time, *index), objects::to_bytes(slot).to_vec());
            }
        }
        if staged.is_empty() {
            batch.delete(self.names.staged());
        } else {
            batch.put(self.names.staged(), objects::to_bytes(&staged).to_vec());
        }
        batch.put(self.names.state(), record.to_bytes());
        // After an error here the batch is not committed, and nothing in memory has changed;
        // after it, memory follows with nothing awaited between (a dropped request or a
        // timeout cannot leave the log in memory behind the store).
        repo.commit_batch(&batch).await?;

        self.adopt(schedule, after, new_coded, written)?;
        self.builds = builds;
        self.coded_build = coded_build;
        self.staged = staged;
        // Deleted only once the log that stops naming them is copied (a rebuild from the
        // blobs must never name a deleted object); a cut here leaves them to the next open.
        if !superseded.is_empty() && repo.ship_log().await {
            for object in &superseded {
                if let Err(e) = objects::delete(repo.blobs(), &self.names, object).await {
                    tracing::warn!("PoR log: a superseded object stays until the next open: {e}");
                }
            }
        }
        Ok(())
    }

    /// The log in memory after a committed batch.
    fn adopt(
        &mut self,
        schedule: Schedule,
        after: Vec<After>,
        new_coded: Vec<Held>,
        written: &Written,
    ) -> Result<(), PorStoreError> {
        let k = schedule.log_capacity;
        for _ in self.tree.log_capacity()..k {
            // Cannot fail: the plan's capacity was checked against the bound.
            self.tree.grow().map_err(ProviderError::from)?;
        }
        if k < self.tree.log_capacity() {
            self.tree.shrink(k);
        }
        let mut old = std::mem::take(&mut self.levels);
        self.levels = after
            .into_iter()
            .enumerate()
            .map(|(level, next)| match next {
                After::Kept => old.get_mut(level).and_then(Option::take),
                After::Emptied => None,
                After::New(held) => Some(held),
            })
            .collect();
        let mut new_coded = new_coded.into_iter();
        self.coded = new_coded.next().ok_or_else(|| self.inconsistent(0))?;
        self.coded_next = new_coded.next();
        self.schedule = schedule;
        self.raw_sealed.resize(1 << k, None);
        for &(index, sealed) in &written.raw {
            self.raw_sealed[index as usize] = Some(sealed);
        }
        let leaves: Vec<_> = written.raw.iter().map(|(i, s)| (*i, leaf_hash(Some(s)))).collect();
        self.tree.set(&leaves);
        Ok(())
    }
}

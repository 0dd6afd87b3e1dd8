//! A batch's walk run on the stored log: the store's executor ([`StoreRun`]) computes every
//! rebuild in memory or as builds paced per group, and puts only the objects those builds need
//! before the commit ([`super::apply`] puts the rest, commits and adopts).

use super::build::Build;
use super::coded_build::{BatchU, CodedBuild, NewCoded};
use super::error::PorStoreError;
use super::names::ObjectRef;
use super::objects;
use super::PorLog;
use crate::Repository;
use std::collections::BTreeMap;
use vouch_core::por::client::WritePlan;
use vouch_core::por::code::{rebuild_level_into, Schedule};
use vouch_core::por::walk::{execute, walk, CodedAt, Executor};
use vouch_core::por::Region;

/// A level while a batch runs.
pub(super) enum Working {
    Empty,
    /// Unchanged since before the batch: still its stored object.
    Kept,
    /// Built by the batch.
    Built(Vec<u64>),
    /// A build the batch started (see `build`): its object is written over the writes after.
    Building(ObjectRef),
}

/// What a batch computed, before anything is stored.
pub(super) struct Outcome {
    pub(super) schedule: Schedule,
    pub(super) levels: Vec<Working>,
    /// Each C the batch made, by write time.
    pub(super) coded: BTreeMap<u64, NewCoded>,
    /// The C being built after the batch.
    pub(super) coded_build: Option<CodedBuild>,
    /// Slots of U the batch stashed for it (`coded_build`).
    pub(super) stash: BTreeMap<u64, Vec<u64>>,
    /// The write time of a C build whose committed stash is to go: its leaves are read, or
    /// growth dropped it.
    pub(super) stale_stash: Option<u64>,
    /// The writes of the group left open.
    pub(super) staged: Vec<u64>,
    /// The levels being built after the batch.
    pub(super) builds: Vec<Option<Build>>,
    /// Objects the batch put before its commit (builds' tails, levels a build consumed).
    pub(super) created: Vec<ObjectRef>,
}

impl PorLog {
    /// Every rebuild of the batch, in memory: levels below a rebuilt one come from the cache
    /// or the store, U (when C is rebuilt) from the metadata store.
    pub(super) async fn run(
        &self,
        repo: &Repository,
        plan: &WritePlan,
        writes: &[u64],
        slots: &[u64],
    ) -> Result<Outcome, PorStoreError> {
        let walk = walk(&self.schedule, plan.grow_to, writes.len(), plan.flush);
        let top = walk.start.levels() as usize;
        let resized = plan.grow_to.is_some();
        let coded_build = if resized { None } else { self.coded_build.clone() };
        let committed = coded_build.as_ref().map(|b| b.time);
        let mut run = StoreRun {
            log: self,
            repo,
            writes,
            slots,
            levels: match resized {
                true => (0..=top).map(|_| Working::Empty).collect(),
                false => self.levels.iter().map(|l| if l.is_some() { Working::Kept } else { Working::Empty }).collect(),
            },
            builds: if resized { vec![None; top + 1] } else { self.builds.clone() },
            coded_build,
            created: Vec::new(),
            // A resize re-encodes C over U, which holds the open group's writes: the group is closed.
            staged: if resized { Vec::new() } else { self.staged.clone() },
            u: BatchU { committed, ..BatchU::default() },
            coded: BTreeMap::new(),
            spare: vec![Vec::new(); top + 1],
        };
        execute(&walk, &mut run).await?;
        let StoreRun { levels, builds, coded_build, created, staged, u, coded, .. } = run;
        let stale_stash = self
            .coded_build
            .as_ref()
            .filter(|old| old.reads_u() && coded_build.as_ref().is_none_or(|b| b.time != old.time || !b.reads_u()))
            .map(|old| old.time);
        let stash = if coded_build.as_ref().is_some_and(CodedBuild::reads_u) { u.stash } else { BTreeMap::new() };
        Ok(Outcome { schedule: walk.end, levels, coded, coded_build, stash, stale_stash, staged, builds, created })
    }

    /// A level a rebuild consumes, in memory: built by the batch, or stored (a build still
    /// running is finished first: the pacing makes that a fallback).
    async fn input_slots(
        &self,
        repo: &Repository,
        (working, build, level): (&mut Working, &mut Option<Build>, usize),
        created: &mut Vec<ObjectRef>,
    ) -> Result<Vec<u64>, PorStoreError> {
        if let Some(mut running) = build.take() {
            self.finish_build(repo, &mut running, created).await?;
        }
        let width = self.region_width(Region::Level(0));
        match std::mem::replace(working, Working::Empty) {
            Working::Built(slots) => Ok(slots),
            Working::Kept => self.level_slots(repo, level).await,
            Working::Building(object) => Ok(objects::read_whole(repo.blobs(), &self.names, &object, width).await?),
            Working::Empty => Err(self.inconsistent(level)),
        }
    }

    /// A level a build consumes, as an object: stored already, or put now if the batch built
    /// it in memory.
    async fn input_object(
        &self,
        repo: &Repository,
        (level, time): (u32, u64),
        working: &mut Working,
        build: &mut Option<Build>,
        created: &mut Vec<ObjectRef>,
    ) -> Result<ObjectRef, PorStoreError> {
        if let Some(mut running) = build.take() {
            self.finish_build(repo, &mut running, created).await?;
        }
        let width = self.region_width(Region::Level(0));
        match std::mem::replace(working, Working::Empty) {
            Working::Kept => {
                let held = self.levels.get(level as usize).and_then(Option::as_ref);
                Ok(held.ok_or_else(|| self.inconsistent(level as usize))?.object)
            }
            Working::Building(object) => Ok(object),
            Working::Built(slots) => {
                let object = self.limits.object(Region::Level(level as u8), time, 2 << level, width);
                objects::put_segments(repo.blobs(), &self.names, &object, &slots, width).await?;
                created.push(object);
                Ok(object)
            }
            Working::Empty => Err(self.inconsistent(level as usize)),
        }
    }

    /// A level's slots for a rebuild: from the cache, else its object (strictly: a rebuild
    /// over lost bytes would store garbage the client cannot see until an audit).
    async fn level_slots(&self, repo: &Repository, level: usize) -> Result<Vec<u64>, PorStoreError> {
        let held = self.levels.get(level).and_then(Option::as_ref).ok_or_else(|| self.inconsistent(level))?;
        match &held.cached {
            Some(slots) => Ok(slots.clone()),
            None => {
                Ok(objects::read_whole(repo.blobs(), &self.names, &held.object, self.region_width(held.object.region))
                    .await?)
            }
        }
    }
}

/// The store's executor of a batch's walk: small levels rebuilt in memory, large ones as
/// builds paced per group (Sec. 6.1's deamortization), CRebuild over its window, and U's
/// slots a window's C build still reads stashed before they are overwritten.
struct StoreRun<'a> {
    log: &'a PorLog,
    repo: &'a Repository,
    writes: &'a [u64],
    slots: &'a [u64],
    levels: Vec<Working>,
    builds: Vec<Option<Build>>,
    coded_build: Option<CodedBuild>,
    created: Vec<ObjectRef>,
    staged: Vec<u64>,
    u: BatchU,
    coded: BTreeMap<u64, NewCoded>,
    /// A consumed level's allocation, reused when that level is built again in the batch.
    spare: Vec<Vec<u64>>,
}

impl Executor for StoreRun<'_> {
    type Error = PorStoreError;

    async fn resize(&mut self, at: &Schedule, coded: CodedAt) -> Result<(), PorStoreError> {
        let made = self.log.coded_at_once(self.repo, &self.u, (at.log_capacity, coded.time), &mut self.created).await?;
        self.coded.insert(coded.time, made);
        Ok(())
    }

    async fn write(&mut self, _: &Schedule, write: Option<usize>) -> Result<(), PorStoreError> {
        let width = self.log.width;
        match write {
            Some(i) => {
                let (index, slot) = (self.writes[i], &self.slots[i * width..(i + 1) * width]);
                self.log.stash_before_write(self.repo, self.coded_build.as_ref(), &mut self.u, index)?;
                self.u.written.insert(index, slot.to_vec());
                self.staged.extend_from_slice(slot);
            }
            None => self.staged.resize(self.staged.len() + width, 0),
        }
        Ok(())
    }

    /// At an epoch's end, the epoch's levels and last group become level `levels()`, kept
    /// for the window.
    async fn level(&mut self, at: &Schedule, level: u32) -> Result<(), PorStoreError> {
        let per_segment = self.log.build_segment();
        if level > per_segment.trailing_zeros() {
            self.start_build(at, level, per_segment).await
        } else {
            self.rebuild(at, level as usize).await
        }
    }

    /// CRebuild: over the window that opens now, else at once.
    async fn coded(&mut self, at: &Schedule, coded: CodedAt) -> Result<(), PorStoreError> {
        let (k, per_segment) = (at.log_capacity, self.log.coded_segment());
        if coded.windowed && per_segment < at.capacity() {
            let build = CodedBuild { time: coded.time, log_capacity: k, per_segment, done: 0 };
            self.coded.insert(coded.time, NewCoded::Building(build.stage(k)));
            self.coded_build = Some(build);
        } else {
            let made = self.log.coded_at_once(self.repo, &self.u, (k, coded.time), &mut self.created).await?;
            self.coded.insert(coded.time, made);
        }
        Ok(())
    }

    /// A group completed: the units of each build that are due now. The window's level is
    /// never consumed, so it stays as its tail and older levels.
    async fn group_done(&mut self, at: &Schedule) -> Result<(), PorStoreError> {
        let (log, repo, top) = (self.log, self.repo, at.levels() as usize);
        for slot in self.builds[..top].iter_mut() {
            let Some(build) = slot else { continue };
            while build.is_due(at.group_time() + 1) {
                log.build_unit(repo, build).await?;
                self.created.push(build.next());
            }
            if build.is_done() {
                *slot = None;
            }
        }
        if let Some(build) = self.coded_build.as_mut() {
            let elapsed = at.group_time() + 1 - build.time;
            while build.is_due(elapsed, at.window()) {
                self.created.push(log.coded_unit(repo, build, &self.u).await?);
            }
        }
        Ok(())
    }

    /// The window is over (or never opened): its level goes, the next C is in use, whole
    /// (the pacing finished it; finishing it here is a bug's fallback).
    async fn advanced(&mut self, now: &Schedule) -> Result<(), PorStoreError> {
        if !now.in_window() {
            let top = now.levels() as usize;
            self.levels[top] = Working::Empty;
            self.builds[top] = None;
            while let Some(build) = self.coded_build.as_mut().filter(|b| !b.is_done()) {
                self.created.push(self.log.coded_unit(self.repo, build, &self.u).await?);
            }
        }
        if self.coded_build.as_ref().is_some_and(|b| !b.reads_u()) {
            self.u.stash.clear();
        }
        self.coded_build = self.coded_build.take().filter(|b| !b.is_done());
        Ok(())
    }
}

impl StoreRun<'_> {
    /// A build: the levels of at most a segment per half now, the rest later.
    async fn start_build(&mut self, at: &Schedule, level: u32, per_segment: u64) -> Result<(), PorStoreError> {
        let (log, repo) = (self.log, self.repo);
        let first = per_segment.trailing_zeros();
        let time = at.group_time() + 1;
        let mut below = Vec::with_capacity(first as usize);
        for l in 0..first as usize {
            below.push(log.input_slots(repo, (&mut self.levels[l], &mut self.builds[l], l), &mut self.created).await?);
        }
        let refs: Vec<&[u64]> = below.iter().map(Vec::as_slice).collect();
        let mut tail = Vec::new();
        rebuild_level_into(&mut tail, &refs, &self.staged, self.staged.len(), at.levels(), time - 1);
        self.staged.clear();
        let mut older = Vec::new();
        for l in first..level {
            let (working, build) = (&mut self.levels[l as usize], &mut self.builds[l as usize]);
            older.push(log.input_object(repo, (l, time - (1 << l)), working, build, &mut self.created).await?);
        }
        let build = Build { level, time, merge: first, done: 0, per_segment, older };
        let group_width = log.region_width(Region::Level(0));
        objects::put_segments(repo.blobs(), &log.names, &build.tail(), &tail, group_width).await?;
        self.created.extend([build.tail(), build.next()]);
        self.levels[level as usize] = Working::Building(build.output());
        self.builds[level as usize] = Some(build);
        Ok(())
    }

    /// HRebuildX / HRebuildY at once, in memory.
    async fn rebuild(&mut self, at: &Schedule, level: usize) -> Result<(), PorStoreError> {
        let (log, repo) = (self.log, self.repo);
        let mut below = Vec::with_capacity(level);
        for l in 0..level {
            below.push(log.input_slots(repo, (&mut self.levels[l], &mut self.builds[l], l), &mut self.created).await?);
        }
        let refs: Vec<&[u64]> = below.iter().map(Vec::as_slice).collect();
        let mut out = std::mem::take(&mut self.spare[level]);
        rebuild_level_into(&mut out, &refs, &self.staged, self.staged.len(), at.levels(), at.group_time());
        self.staged.clear();
        for (l, consumed) in below.into_iter().enumerate() {
            self.spare[l] = consumed;
        }
        self.levels[level] = Working::Built(out);
        Ok(())
    }
}

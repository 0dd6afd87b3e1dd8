//! CRebuild over the window (Sec. 6.1's deamortization; the window is
//! `vouch_core::por::code::Schedule::in_window`): no batch encodes all of U.
//!
//! C is the code of all of U (`n = 2^k` slots), and that code is a merge tree (core's test
//! `c_is_the_merge_tree_of_its_leaves`). With `s` the slots per segment (a power of two below
//! `n`), the leaves are `encode(U[a·s..(a+1)·s], k, a·s)`, `2s` slots each (X then Y), and
//! merge `j` (`j = log2 s .. k`) makes each pair of neighbouring subtrees of `2^j` slots of U
//! one of `2^(j+1)` with `merge_range`'s butterflies, the older as `A_j`. Stage `j` is the
//! object `cstage-<j>-<T>` (`T` C's write time) of `2n` slots, subtree `i` at slot
//! `i·2^(j+1)`, X then Y; stage `k` is C itself, laid out as `encode` lays it out, so the
//! last merge writes C's own object.
//!
//! A unit is one leaf (reads `s` slots of U, writes two segments) or `s` butterflies per half
//! of one merge (reads two segments per half, writes two). The batch that ends an epoch starts
//! the build and stores C's sealed checksums (the client sent them with that batch); each
//! group completion in the window does the units due, spread evenly over the window's groups,
//! so C is whole when the window ends and comes into use. A C without a window (growth, a
//! re-encode, or one group per epoch) is made at once, in its batch: encoded in memory when
//! it is at most a segment per half, else by all its units one after the other, so that no
//! batch holds all of U in memory.
//!
//! **U as of the epoch's end.** The leaves read U while the window's writes change it. A
//! write to a slot no leaf has read yet first stashes the slot's old value (metadata,
//! `stash/<T>/<index>`, committed with the write), and a leaf reads the stash before U. The
//! stash is deleted by the batch that reads the last leaf.
//!
//! Crashes: as for the level builds (`build`), the state record names the units done, and a
//! unit writes only segments beyond them, so a crash before the commit leaves segments the
//! next attempt writes again, byte for byte.

use super::error::PorStoreError;
use super::names::ObjectRef;
use super::objects;
use super::raw::{self, RawSlot};
use super::PorLog;
use crate::{BlobStore, MetaStore, Repository, StoreError};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use vouch_core::por::build::merge_range;
use vouch_core::por::code::encode;
use vouch_core::por::Region;

/// A C being built: units `done..total()` are left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CodedBuild {
    /// C's write time (the epoch's start, in groups), its stages' and its stash's too.
    pub time: u64,
    /// `k`: C encodes `2^k` slots of U.
    pub log_capacity: u32,
    /// Slots per segment of the stages and of C: a power of two below `2^k`.
    pub per_segment: u64,
    /// Units done: the leaves first, then merge after merge.
    pub done: u64,
}

/// What a unit does.
#[derive(Debug, PartialEq, Eq)]
enum Unit {
    /// Encode leaf `a`: U's slots `a·s..(a+1)·s`.
    Leaf(u64),
    /// Butterflies `first..first + s` of merge `merge` of subtrees `2·pair` and `2·pair + 1`.
    Merge { merge: u32, pair: u64, first: u64 },
}

impl CodedBuild {
    fn leaf_log(&self) -> u32 {
        self.per_segment.trailing_zeros()
    }

    fn leaves(&self) -> u64 {
        (1u64 << self.log_capacity) / self.per_segment
    }

    /// Units of one merge: `n/2` butterflies per half, `s` a unit.
    fn per_merge(&self) -> u64 {
        self.leaves() / 2
    }

    pub fn total(&self) -> u64 {
        self.leaves() + u64::from(self.log_capacity - self.leaf_log()) * self.per_merge()
    }

    pub fn is_done(&self) -> bool {
        self.done == self.total()
    }

    /// Whether leaves are still to read U.
    pub fn reads_u(&self) -> bool {
        self.done < self.leaves()
    }

    /// Whether a leaf has read slot `index` of U already.
    pub fn has_read(&self, index: u64) -> bool {
        index / self.per_segment < self.done
    }

    fn next_unit(&self) -> Unit {
        if self.reads_u() {
            return Unit::Leaf(self.done);
        }
        let at = self.done - self.leaves();
        let merge = self.leaf_log() + (at / self.per_merge()) as u32;
        let per_pair = (1u64 << merge) / self.per_segment;
        let within = at % self.per_merge();
        Unit::Merge { merge, pair: within / per_pair, first: within % per_pair * self.per_segment }
    }

    /// The stage the next unit writes (`log2 s` for a leaf, `j + 1` for merge `j`), and units
    /// of it done.
    pub fn writing(&self) -> (u32, u64) {
        match self.next_unit() {
            Unit::Leaf(a) => (self.leaf_log(), a),
            Unit::Merge { merge, .. } => (merge + 1, (self.done - self.leaves()) % self.per_merge()),
        }
    }

    /// Stage `j`'s object; stage `k` is C's own.
    pub fn stage(&self, j: u32) -> ObjectRef {
        ObjectRef {
            region: Region::Coded,
            time: self.time,
            slots: 2 << self.log_capacity,
            per_segment: self.per_segment,
            stage: (j < self.log_capacity).then_some(j as u8),
        }
    }

    /// The segments of its input stage the next unit reads, if it is a merge: its two
    /// halves' older and newer runs, one segment each. Each segment of a stage is read by one
    /// unit of the merge that reads the stage, and by no other.
    fn merge_inputs(&self) -> Option<(ObjectRef, [u64; 4])> {
        let Unit::Merge { merge, pair, first } = self.next_unit() else { return None };
        let (m, s) = (1u64 << merge, self.per_segment);
        let older = |half: u64| 4 * m * pair + half * m + first;
        let segments = [older(0) / s, (older(0) + 2 * m) / s, older(1) / s, (older(1) + 2 * m) / s];
        Some((self.stage(merge), segments))
    }

    /// The stages the build still needs, C's own object aside: the one the next unit writes
    /// and, in a merge, the one it reads.
    pub fn objects(&self) -> Vec<ObjectRef> {
        if self.is_done() {
            return Vec::new();
        }
        let written = self.writing().0;
        let read = (written > self.leaf_log()).then(|| written - 1);
        [read, Some(written)].into_iter().flatten().filter(|&j| j < self.log_capacity).map(|j| self.stage(j)).collect()
    }

    /// Whether a unit is due once `elapsed` of the window's `window` groups are done: the
    /// units, spread evenly over the window, are all done by its last group.
    pub fn is_due(&self, elapsed: u64, window: u64) -> bool {
        self.done < (self.total() * elapsed.min(window)).div_ceil(window.max(1))
    }
}

/// A C a batch made (growth, a re-encode, an epoch's end).
pub(super) enum NewCoded {
    /// Encoded at once, in memory.
    Whole(Vec<u64>),
    /// Built by units: its object, whose segments they write.
    Building(ObjectRef),
}

/// U as a batch sees it: the metadata store's U under the batch's writes so far, and the
/// slots the batch stashed for the C being built.
#[derive(Default)]
pub(super) struct BatchU {
    pub written: HashMap<u64, Vec<u64>>,
    pub stash: BTreeMap<u64, Vec<u64>>,
    /// The write time of the C build whose stash has entries committed before the batch.
    pub committed: Option<u64>,
}

impl PorLog {
    /// Slots per segment of C and its stages: a power of two, at least one.
    pub(super) fn coded_segment(&self) -> u64 {
        let fits = (self.limits.segment_bytes / (self.width * 8)).max(1) as u64;
        1 << fits.ilog2()
    }

    /// Before the batch writes slot `index`: its value now goes to the stash if the C being
    /// built has not read it yet (and no earlier write stashed it).
    pub(super) fn stash_before_write(
        &self,
        repo: &Repository,
        build: Option<&CodedBuild>,
        u: &mut BatchU,
        index: u64,
    ) -> Result<(), PorStoreError> {
        let Some(build) = build else { return Ok(()) };
        if build.has_read(index) || u.stash.contains_key(&index) {
            return Ok(());
        }
        if u.committed == Some(build.time) && repo.meta().get(&self.names.stash(build.time, index))?.is_some() {
            return Ok(());
        }
        let now = self.u_now(repo, u, &[index])?.remove(0);
        u.stash.insert(index, now);
        Ok(())
    }

    /// Slots `indices` of U as the batch has them now; a written slot without a readable
    /// entry is an error, for C would be built over bytes that are not there.
    pub(super) fn u_now(&self, repo: &Repository, u: &BatchU, indices: &[u64]) -> Result<Vec<Vec<u64>>, PorStoreError> {
        let stored: Vec<u64> = indices.iter().copied().filter(|i| !u.written.contains_key(i)).collect();
        let mut entries = stored.iter().zip(raw::get_slots(repo.meta(), &self.names, self.width, &stored)?);
        let mut out = Vec::with_capacity(indices.len());
        for index in indices {
            out.push(match u.written.get(index) {
                Some(slot) => slot.clone(),
                None => {
                    let (&index, entry) = entries.next().expect("one entry per index not written");
                    self.strict_slot(index, entry)?
                }
            });
        }
        Ok(out)
    }

    fn strict_slot(&self, index: u64, entry: RawSlot) -> Result<Vec<u64>, PorStoreError> {
        let key = || String::from_utf8_lossy(&self.names.raw(index)).into_owned();
        match entry {
            RawSlot::Slot(slot) => Ok(slot),
            RawSlot::Absent if self.raw_sealed.get(index as usize).is_some_and(Option::is_some) => {
                Err(StoreError::NotFound { key: key() }.into())
            }
            RawSlot::Absent => Ok(vec![0; self.width]),
            RawSlot::Damaged => {
                Err(StoreError::Corrupt { at: key(), detail: "not a slot of field elements".into() }.into())
            }
        }
    }

    /// Slots `range` of U as they were at the end of `build`'s epoch, flat: the stash, else
    /// U now (the leaves not read yet are the slots nothing changed unstashed).
    fn epoch_end_slots(
        &self,
        repo: &Repository,
        build: &CodedBuild,
        u: &BatchU,
        range: Range<u64>,
    ) -> Result<Vec<u64>, PorStoreError> {
        let committed: Vec<Option<Vec<u8>>> = match u.committed == Some(build.time) {
            true => {
                repo.meta().get_many(&range.clone().map(|i| self.names.stash(build.time, i)).collect::<Vec<_>>())?
            }
            false => vec![None; range.clone().count()],
        };
        let unstashed: Vec<u64> = range
            .clone()
            .zip(&committed)
            .filter(|(i, c)| !u.stash.contains_key(i) && c.is_none())
            .map(|(i, _)| i)
            .collect();
        // The slots nothing stashed, read together.
        let mut now = self.u_now(repo, u, &unstashed)?.into_iter();
        let mut out = Vec::with_capacity(committed.len() * self.width);
        for (index, committed) in range.zip(committed) {
            let slot = match (u.stash.get(&index), committed) {
                (Some(slot), _) => slot.clone(),
                (None, Some(bytes)) => {
                    objects::elements(&bytes).filter(|s| s.len() == self.width).ok_or_else(|| {
                        let at = String::from_utf8_lossy(&self.names.stash(build.time, index)).into_owned();
                        StoreError::Corrupt { at, detail: "a stashed slot is not a slot of field elements".into() }
                    })?
                }
                (None, None) => now.next().expect("one slot read per index not stashed"),
            };
            out.extend_from_slice(&slot);
        }
        Ok(out)
    }

    /// C over U as the batch has it now, at once: encoded in memory when it is at most a
    /// segment per half, else built unit after unit (a few segments in memory, not all of U).
    /// The objects the units write go to `created`.
    pub(super) async fn coded_at_once(
        &self,
        repo: &Repository,
        u: &BatchU,
        (log_capacity, time): (u32, u64),
        created: &mut Vec<ObjectRef>,
    ) -> Result<NewCoded, PorStoreError> {
        let (n, s) = (1u64 << log_capacity, self.coded_segment());
        if n <= s {
            let all = self.u_now(repo, u, &(0..n).collect::<Vec<_>>())?.concat();
            return Ok(NewCoded::Whole(encode(&all, self.width, log_capacity, 0)));
        }
        let mut build = CodedBuild { time, log_capacity, per_segment: s, done: 0 };
        // Nothing is stashed for it: every leaf reads U now.
        let now = BatchU { committed: None, stash: BTreeMap::new(), written: u.written.clone() };
        while !build.is_done() {
            let inputs = build.merge_inputs();
            created.push(self.coded_unit(repo, &mut build, &now).await?);
            // What a merge read goes once its unit has written what it made of it: each stage
            // is read once, by the next merge, and no state names this build's stages (after a
            // crash the batch encodes C again from its leaves). So the encode holds about one C
            // on disk beside the C in use, not one per merge: at 2^20 slots of 4.7 KB, 10 GB
            // instead of 80.
            if let Some((stage, segments)) = inputs {
                for number in segments {
                    repo.blobs().delete(&self.names.segment(&stage, number)).await?;
                }
            }
        }
        Ok(NewCoded::Building(build.stage(log_capacity)))
    }

    /// The next unit of `build`; returns the object it wrote to.
    pub(super) async fn coded_unit(
        &self,
        repo: &Repository,
        build: &mut CodedBuild,
        u: &BatchU,
    ) -> Result<ObjectRef, PorStoreError> {
        let (width, s) = (self.width, build.per_segment);
        let out = build.stage(build.writing().0);
        match build.next_unit() {
            Unit::Leaf(a) => {
                let blocks = self.epoch_end_slots(repo, build, u, a * s..(a + 1) * s)?;
                let code = encode(&blocks, width, build.log_capacity, a * s);
                let (x, y) = code.split_at(s as usize * width);
                objects::put_segment(repo.blobs(), &self.names, &out, 2 * a, x).await?;
                objects::put_segment(repo.blobs(), &self.names, &out, 2 * a + 1, y).await?;
            }
            Unit::Merge { merge, pair, first } => {
                let (m, input) = (1u64 << merge, build.stage(merge));
                for half in 0..2 {
                    let older = 4 * m * pair + half * m + first;
                    let newer = older + 2 * m;
                    let mut low =
                        objects::read_range(repo.blobs(), &self.names, &input, width, older..older + s).await?;
                    let mut high =
                        objects::read_range(repo.blobs(), &self.names, &input, width, newer..newer + s).await?;
                    merge_range(&mut low, &mut high, width, merge, first);
                    let at = 4 * m * pair + half * 2 * m + first;
                    objects::put_segment(repo.blobs(), &self.names, &out, at / s, &low).await?;
                    objects::put_segment(repo.blobs(), &self.names, &out, (at + m) / s, &high).await?;
                }
            }
        }
        build.done += 1;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(log_capacity: u32, per_segment: u64) -> CodedBuild {
        CodedBuild { time: 8, log_capacity, per_segment, done: 0 }
    }

    #[test]
    fn units_cover_every_leaf_then_every_butterfly_of_every_merge_once() {
        for (k, s) in [(1, 1), (3, 2), (6, 4), (5, 16)] {
            let mut b = build(k, s);
            let mut butterflies: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
            let mut leaves = Vec::new();
            while !b.is_done() {
                match b.next_unit() {
                    Unit::Leaf(a) => leaves.push(a),
                    Unit::Merge { merge, pair, first } => {
                        assert!(leaves.len() as u64 == b.leaves(), "merges after every leaf");
                        butterflies.entry(merge).or_default().extend((first..first + s).map(|q| pair << 32 | q));
                    }
                }
                b.done += 1;
            }
            assert_eq!(leaves, (0..(1 << k) / s).collect::<Vec<_>>());
            assert_eq!(butterflies.keys().copied().collect::<Vec<_>>(), (s.trailing_zeros()..k).collect::<Vec<_>>());
            for (merge, done) in butterflies {
                let m = 1u64 << merge;
                let want: Vec<u64> =
                    (0..(1u64 << k) / (2 * m)).flat_map(|p| (0..m).map(move |q| p << 32 | q)).collect();
                assert_eq!(done, want, "merge {merge} of 2^{k} slots by {s}");
            }
        }
    }

    /// An encode at once deletes each segment a merge read once its unit is done: each
    /// segment of each stage must be read by exactly one unit, and only by merges.
    #[test]
    fn each_segment_of_a_stage_is_read_by_one_unit_of_its_merge() {
        for (k, s) in [(1, 1), (3, 2), (6, 4), (5, 16), (8, 8)] {
            let mut b = build(k, s);
            let mut read: BTreeMap<(Option<u8>, u64), u32> = BTreeMap::new();
            while !b.is_done() {
                match (b.next_unit(), b.merge_inputs()) {
                    (Unit::Leaf(_), inputs) => assert_eq!(inputs, None),
                    (Unit::Merge { merge, .. }, Some((stage, segments))) => {
                        assert_eq!(stage, b.stage(merge));
                        for number in segments {
                            *read.entry((stage.stage, number)).or_default() += 1;
                        }
                    }
                    (unit, None) => panic!("{unit:?} reads nothing"),
                }
                b.done += 1;
            }
            let segments = (2u64 << k) / s;
            let want: BTreeMap<(Option<u8>, u64), u32> =
                (s.trailing_zeros()..k).flat_map(|j| (0..segments).map(move |n| ((Some(j as u8), n), 1))).collect();
            assert_eq!(read, want, "2^{k} by {s}");
        }
    }

    #[test]
    fn units_are_spread_over_the_window_and_done_by_its_end() {
        for (k, s, window) in [(10, 8, 256), (6, 4, 2), (4, 2, 64), (20, 8192, 32768)] {
            let mut b = build(k, s);
            let (total, mut most) = (b.total(), 0);
            for elapsed in 1..=window {
                let mut now = 0;
                while b.is_due(elapsed, window) {
                    b.done += 1;
                    now += 1;
                }
                most = most.max(now);
            }
            assert!(b.is_done(), "2^{k} by {s} over {window}");
            assert!(most <= total.div_ceil(window), "{most} units at once of {total} over {window}");
        }
    }

    #[test]
    fn a_build_needs_the_stage_it_writes_and_the_one_it_reads() {
        let mut b = build(4, 2);
        let stages = |b: &CodedBuild| b.objects().iter().map(|o| o.stage).collect::<Vec<_>>();
        assert_eq!(stages(&b), [Some(1)], "the leaves write stage log2 s");
        b.done = b.leaves();
        assert_eq!((stages(&b), b.writing()), (vec![Some(1), Some(2)], (2, 0)));
        b.done = b.total() - 1;
        assert_eq!(stages(&b), [Some(3)], "the last merge writes C's own object");
        assert_eq!(b.stage(4).stage, None);
        b.done += 1;
        assert!(b.objects().is_empty());
        assert!(b.has_read(15) && !build(4, 2).has_read(0));
    }
}

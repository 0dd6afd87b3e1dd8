//! Deamortized rebuilds of large levels (Sec. 6.1; the pure steps are
//! `vouch_core::por::build`): no batch pays for a whole level.
//!
//! A level of at most one segment per half (`2^ℓ ≤ s` blocks, `s` the largest power of two
//! of blocks a segment holds) is rebuilt at once, in memory, as before. A larger one is a
//! [`Build`]: the batch that completes its last group does the first merges at once (the
//! levels below `s` and the group, into the tail `B_p`, `2^p = s`), stores the tail and the
//! level's sealed checksums, and keeps the larger levels it consumes (`A_p..A_(ℓ-1)`) as they
//! are. Each later group completion does the units that are due: a unit is `s` butterflies of
//! one merge, which reads one segment's worth of `A_j` and of the tail per half and writes four
//! whole segments of the next tail. The units are spread evenly over the `2^ℓ - 1` group
//! completions before the level is consumed, so no completion does more than one unit per
//! level being built, and the level is whole when the next rebuild needs it.
//!
//! Until then an audit of the level is answered from the tail and the levels not merged yet
//! (`finish_block`), and repair reads it the same way: whoever asks sees the level the client's
//! sealed checksums describe. The tail `B_j` is object `level-<j>-<T>` (`T` the level's write
//! time): the level itself is `B_ℓ`, so the last merge writes the level's own object.
//!
//! Crashes: the state record names each build's progress (merge, butterflies done) and its
//! objects. A unit writes segments of the next tail only, beyond the committed progress, so a
//! crash before the commit leaves segments the next attempt writes again, byte for byte.

use super::names::ObjectRef;
use super::objects;
use super::PorLog;
use crate::{Repository, StoreError};
use vouch_core::por::build::{finish_block, merge_range, source_block};
use vouch_core::por::Region;

/// A level being built: merges `merge..level` are left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Build {
    pub level: u32,
    /// The level's write time (its sealed checksums' and every tail's).
    pub time: u64,
    /// The next merge, `j`.
    pub merge: u32,
    /// Butterflies of merge `j` done, per half: a multiple of `per_segment`.
    pub done: u64,
    /// Blocks per segment of the tails and the level: a power of two.
    pub per_segment: u64,
    /// `A_j..A_(ℓ-1)`: the levels not merged yet, smallest first.
    pub older: Vec<ObjectRef>,
}

impl Build {
    /// `B_j`, whole.
    pub fn tail(&self) -> ObjectRef {
        self.tail_of(self.merge)
    }

    /// `B_(j+1)`, written so far up to `done`; the level's object at the last merge.
    pub fn next(&self) -> ObjectRef {
        self.tail_of(self.merge + 1)
    }

    /// The level's own object, whole once the build is done.
    pub fn output(&self) -> ObjectRef {
        self.tail_of(self.level)
    }

    fn tail_of(&self, merge: u32) -> ObjectRef {
        ObjectRef {
            region: Region::Level(merge as u8),
            time: self.time,
            slots: 2 << merge,
            per_segment: self.per_segment,
            stage: None,
        }
    }

    /// Every object the build still needs: the tail, the next tail, the older levels.
    pub fn objects(&self) -> impl Iterator<Item = ObjectRef> + '_ {
        [self.tail(), self.next()].into_iter().chain(self.older.iter().copied())
    }

    pub fn is_done(&self) -> bool {
        self.merge == self.level
    }

    /// Units (of `per_segment` butterflies) from the first merge `first` to the end.
    fn units_from(&self, first: u32) -> u64 {
        ((1u64 << self.level) - (1u64 << first)) / self.per_segment
    }

    fn units_left(&self) -> u64 {
        self.units_from(self.merge) - self.done / self.per_segment
    }

    /// Whether a unit is due once `group_time` groups are done: the build's units, spread
    /// evenly over the `2^ℓ - 1` completions after its start, must be done by the last one.
    pub fn is_due(&self, group_time: u64) -> bool {
        let first = self.per_segment.trailing_zeros();
        let total = self.units_from(first);
        let span = (1u64 << self.level) - 1;
        let elapsed = group_time.saturating_sub(self.time).min(span);
        let due = (total * elapsed).div_ceil(span);
        total - self.units_left() < due
    }
}

impl PorLog {
    /// Blocks per segment of a build's objects: a power of two, at least one.
    pub(super) fn build_segment(&self) -> u64 {
        let block_bytes = self.region_width(Region::Level(0)) * 8;
        let fits = (self.limits.segment_bytes / block_bytes).max(1) as u64;
        1 << fits.ilog2()
    }

    /// One unit of `build`: `per_segment` butterflies of its merge, per half.
    pub(super) async fn build_unit(&self, repo: &Repository, build: &mut Build) -> Result<(), StoreError> {
        let width = self.region_width(Region::Level(0));
        let (m, s, first) = (1u64 << build.merge, build.per_segment, build.done);
        let (older, tail, next) = (build.older[0], build.tail(), build.next());
        for half in 0..2 {
            let range = half * m + first..half * m + first + s;
            let mut low = objects::read_range(repo.blobs(), &self.names, &older, width, range.clone()).await?;
            let mut high = objects::read_range(repo.blobs(), &self.names, &tail, width, range).await?;
            merge_range(&mut low, &mut high, width, build.merge, first);
            let at = half * 2 * m + first;
            objects::put_segment(repo.blobs(), &self.names, &next, at / s, &low).await?;
            objects::put_segment(repo.blobs(), &self.names, &next, (at + m) / s, &high).await?;
        }
        build.done += s;
        if build.done == m {
            build.merge += 1;
            build.done = 0;
            build.older.remove(0);
        }
        Ok(())
    }

    /// Every unit left: a level about to be consumed that is not whole yet (the pacing makes
    /// that a bug's fallback, not a path).
    /// The tails it writes go to `created`, so the batch deletes them once superseded.
    pub(super) async fn finish_build(
        &self,
        repo: &Repository,
        build: &mut Build,
        created: &mut Vec<ObjectRef>,
    ) -> Result<(), StoreError> {
        while !build.is_done() {
            self.build_unit(repo, build).await?;
            created.push(build.next());
        }
        Ok(())
    }

    /// Slots `indices` of a level being built, computed from its tail and older levels.
    pub(super) async fn built_slots(
        &self,
        repo: &Repository,
        build: &Build,
        indices: &[u64],
    ) -> Result<Vec<Vec<u64>>, StoreError> {
        let width = self.region_width(Region::Level(0));
        let half = 1u64 << build.level;
        // For each object (the tail, then each older level), the block each index needs.
        let sources: Vec<(ObjectRef, u32)> = std::iter::once((build.tail(), build.merge))
            .chain(build.older.iter().enumerate().map(|(i, o)| (*o, build.merge + i as u32)))
            .collect();
        let mut blocks = Vec::with_capacity(sources.len());
        for (object, j) in &sources {
            let wanted: Vec<u64> = indices.iter().map(|&p| ((p / half) << j) + source_block(p % half, *j)).collect();
            blocks.push(objects::read_some(repo.blobs(), &self.names, object, width, &wanted).await?);
        }
        Ok(indices
            .iter()
            .enumerate()
            .map(|(at, &p)| {
                let older: Vec<&[u64]> = blocks[1..].iter().map(|b| b[at].as_slice()).collect();
                finish_block(&blocks[0][at], &older, build.merge, p % half)
            })
            .collect())
    }
}

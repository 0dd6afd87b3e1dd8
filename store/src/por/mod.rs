//! The provider's dynamic proof-of-retrievability log, persistent: one [`PorLog`] per owner,
//! over the repository's blob store and metadata store. It answers exactly as core's
//! in-memory reference ([`vouch_core::por::provider::ProviderLog`]) does, and is tested
//! against it batch by batch.
//!
//! # Layout
//!
//! Everything of a log is under `por/<name>/` (`<name>`: the owner's hash, see `names`):
//!
//! * **Levels of H and C** (blob store): one immutable object per region and write time,
//!   `level-<ℓ>-<time>/` or `coded-<time>/`, holding its slots (u64 little-endian, flat) in
//!   segments `slots-<n>` of at most [`SEGMENT_BYTES`] (the paper's ~50 MB sequential chunks:
//!   large sequential objects, never one object per slot), and its sealed checksums in
//!   `sealed` beside them. A rebuild writes a new object; nothing is overwritten in place.
//! * **U** (metadata store): one entry per written slot (its elements, 4.7 KB for the real
//!   width) and one per sealed checksum, so U's changes commit with the state. The
//!   repository copies the metadata's log to the blob store (`crate::repository`), so U
//!   reaches the backend too: at once after a batch that supersedes objects (below), else
//!   when the copy is due.
//! * **U's free index** (metadata store, `free/<index>`): an empty entry for each slot whose
//!   last write was ⊥ (App. A.3's delete), kept in step with U by the same batches; what
//!   [`PorLog::free_runs`] names to a client that looks for slots to reuse.
//! * **The state record** (metadata store, `state`): owner, width, schedule, the current
//!   objects with the segment size each was written with, and the progress of each level
//!   being built (`state`).
//! * **Builds** (blob store): a level being built keeps its tail `level-<j>-<T>` (`T` the
//!   level's write time) and the larger levels it consumed until its last merge (`build`);
//!   a C being built, the stages `cstage-<j>-<T>` its merges read and write (`coded_build`).
//! * **The open group** (metadata store, `staged`): the writes of the group H has not taken
//!   yet (Sec. 6.1's grouping: a level's slots are groups of writes side by side), flat;
//!   absent when no group is open. It commits with the state.
//!
//! A part whose `sealed` object the backend lost or damaged still opens: it answers audits
//! and repair as lost (its slots cannot be checked) until a re-encode of C from U replaces
//! it (`vouch repair`), and a batch that would consume it is refused as data lost.
//!
//! In memory: the schedule, every current sealed checksum (levels, C and U) and U's Merkle
//! tree (rebuilt at open from U's sealed checksums), and the slots of small levels (below).
//!
//! # A batch, and crashes
//!
//! **The window** (`vouch_core::por::code::Schedule::in_window`): the C a batch encodes at an
//! epoch's end is stored beside the C in use (`coded_next`, named in the state record after
//! it) and takes its place when the window is over; until then the epoch's writes are level
//! `levels()`, made like any level (a build for a large one) but never consumed, so no unit is
//! ever due on it: it is answered from its tail and older levels, and dropped with them when
//! the window ends. The new C is built over the window, a few segments per group completion
//! (`coded_build`), from U as of the epoch's end (window writes stash what C has not read:
//! `stash/<T>/<index>` in the metadata store).
//!
//!
//! [`PorLog::apply`] checks everything first (a refused batch changes nothing), runs its
//! rebuilds (`rebuild_level_into` in memory for a level of at most a segment per half, a
//! build for a larger one; `encode` for a C of at most a segment per half or without a
//! window, a C build for a larger one; see `build` and `coded_build` for the deamortized
//! builds and the units each group completion does), then: (1) puts the objects of the levels and C the batch leaves behind; (2) commits
//! ONE metadata batch: U's new slots and sealed checksums and the new state record; (3)
//! copies the metadata's log to the blob store and deletes the objects the new state no
//! longer names. A crash before (2) leaves the old state, and objects nothing names; after
//! it, the new state and superseded objects. [`PorLog::open`] deletes every object under the
//! log's folder that its state does not name, after the same copy. A new object's name
//! carries its write time, later than any current object's, so a batch never overwrites an
//! object the committed state names. Why the copy before deleting: a metadata store rebuilt
//! from the blobs alone must never find a state naming deleted objects (compaction and the
//! repository's own sweep wait for the copy too).
//!
//! One writer per owner: the caller serializes batches (and creation) of one log. After a
//! [`PorStoreError::Store`] from [`PorLog::apply`], the log in memory is the old one; a
//! caller in doubt reopens it.
//!
//! # Small levels in memory
//!
//! A rebuild of level `ℓ` reads every level below it. A level whose slots take at most
//! [`CACHED_LEVEL_BYTES`] (1 MiB) is kept in memory from the batch that builds it, so the
//! levels rebuilt most often (level `j` is consumed once every `2^(j+1)` writes) cost no
//! request; above that, a level's read is a few large sequential gets spread over at least
//! as many writes as the level has slots, and its bytes are what the rebuild reads anyway.
//! The bound makes the cache a geometric series: under 2 MiB per log (levels 0..2 at the real
//! width and grouping, 75 KB per block of 16 slots). Audits and reads never use the cache: they read the store, which
//! is what they are about.

mod apply;
mod build;
mod coded_build;
mod context;
mod error;
mod names;
mod objects;
mod open;
mod raw;
mod reads;
mod run;
mod state;

pub use error::PorStoreError;

use names::Names;
use names::ObjectRef;
use state::StateRecord;
use vouch_core::por::checksum::SealedChecksum;
use vouch_core::por::code::Schedule;
use vouch_core::por::raw_tree::RawTree;
use vouch_core::por::Region;

/// Most elements per slot a log takes (512 KiB slots; the real width is ~600).
pub const MAX_WIDTH: usize = 1 << 16;
/// Largest capacity `2^k` a log takes (core's bound: the field's 2-adicity).
pub use vouch_core::por::raw_tree::MAX_LOG_CAPACITY;
/// Most bytes of one segment object of a level or C.
pub const SEGMENT_BYTES: usize = 48 << 20;
/// Levels up to this many bytes stay in memory for the next rebuild (module documentation).
pub const CACHED_LEVEL_BYTES: usize = 1 << 20;

/// Most labels one batch carries ([`PorLog::apply_labelled`]).
pub const MAX_LABELS: usize = 16;
/// Most bytes of a label's key.
pub const MAX_LABEL_KEY: usize = 64;
/// Most bytes of a label's value.
pub const MAX_LABEL_VALUE: usize = 64 << 10;

/// A level being built: the merge it is at (its first merges are done at once, see
/// [`PorLog::builds`]) and the butterfly units of that merge done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelBuild {
    pub level: u32,
    pub merge: u32,
    pub done: u64,
}

/// The C being built: the stage its next unit writes (stage `k` is C's own object), the units
/// of that stage done, and the stage its leaves write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodedBuildAt {
    pub stage: u32,
    pub done: u64,
    pub leaves: u32,
}

#[derive(Clone, Copy, Debug)]
struct Limits {
    segment_bytes: usize,
    cached_level_bytes: usize,
}

/// A stored level or C: where, its sealed checksums, and (small levels) its slots.
#[derive(Clone, Debug)]
struct Held {
    object: ObjectRef,
    /// `None` when the backend lost or damaged them (found at open): the part can prove and
    /// repair nothing until repair replaces it (a re-encode of C from U empties H).
    sealed: Option<Vec<SealedChecksum>>,
    cached: Option<Vec<u64>>,
}

impl Held {
    /// The part's sealed checksums, or the data-lost error that says they are gone.
    fn sealed(&self, names: &Names) -> Result<&[SealedChecksum], crate::StoreError> {
        self.sealed.as_deref().ok_or_else(|| crate::StoreError::Corrupt {
            at: names.sealed(&self.object),
            detail: "the part's sealed checksums were lost; `vouch repair` re-encodes C from U".into(),
        })
    }
}

/// One owner's persistent PoR log (see the module documentation).
pub struct PorLog {
    owner: Vec<u8>,
    names: Names,
    width: usize,
    schedule: Schedule,
    /// Level `ℓ` when filled; level `levels()` in a window.
    levels: Vec<Option<Held>>,
    /// Level `ℓ` while it is being built (`build`).
    builds: Vec<Option<build::Build>>,
    /// The C in use.
    coded: Held,
    /// In a window, the C built at the epoch's end, in use once the window is over.
    coded_next: Option<Held>,
    /// That C while it is being built (`coded_build`).
    coded_build: Option<coded_build::CodedBuild>,
    /// The writes of the open group, flat.
    staged: Vec<u64>,
    raw_sealed: Vec<Option<SealedChecksum>>,
    tree: RawTree,
    limits: Limits,
}

impl std::fmt::Debug for PorLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PorLog")
            .field("owner", &String::from_utf8_lossy(&self.owner))
            .field("width", &self.width)
            .field("schedule", &self.schedule)
            .finish()
    }
}

impl PorLog {
    /// New objects are cut into segments of `segment_bytes` and levels up to
    /// `cached_level_bytes` are kept in memory, instead of the defaults
    /// ([`SEGMENT_BYTES`], [`CACHED_LEVEL_BYTES`]): smaller segments pace the
    /// deamortized rebuilds in smaller units.
    pub fn with_limits(mut self, segment_bytes: usize, cached_level_bytes: usize) -> Self {
        self.limits = Limits { segment_bytes, cached_level_bytes };
        let group_width = self.region_width(Region::Level(0));
        for held in self.levels.iter_mut().flatten() {
            if held.object.slots as usize * group_width * 8 > cached_level_bytes {
                held.cached = None;
            }
        }
        self
    }

    /// The levels being built (Sec. 6.1's deamortization), smallest first: what an operator
    /// sees of a rebuild spread over the groups that follow it.
    pub fn builds(&self) -> Vec<LevelBuild> {
        self.builds.iter().flatten().map(|b| LevelBuild { level: b.level, merge: b.merge, done: b.done }).collect()
    }

    /// The C being built over its window, if any.
    pub fn coded_build(&self) -> Option<CodedBuildAt> {
        let b = self.coded_build.as_ref()?;
        let (stage, done) = b.writing();
        Some(CodedBuildAt { stage, done, leaves: b.per_segment.trailing_zeros() })
    }

    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    pub fn width(&self) -> usize {
        self.width
    }

    /// Elements per slot of `region`: a level's slots are groups of writes.
    pub fn region_width(&self, region: Region) -> usize {
        region.slot_width(self.width, self.schedule.group_log)
    }

    /// The writes of the open group, flat (for repair: the client checks them against its
    /// checksum of the group).
    pub fn staged(&self) -> &[u64] {
        &self.staged
    }

    /// The value of the label `key` as last committed with a batch, if any.
    pub fn label(&self, repo: &crate::Repository, key: &[u8]) -> Result<Option<Vec<u8>>, PorStoreError> {
        Ok(crate::MetaStore::get(repo.meta(), &self.names.label(key))?)
    }

    /// Runs of U's ⊥ slots, ascending, as `(first, count)`: at most `most_runs` runs, and no
    /// more once they hold `most_slots` slots. A client reuses them for new copies after
    /// checking each against U's checksums; the provider's word alone frees nothing.
    pub fn free_runs(
        &self,
        repo: &crate::Repository,
        most_slots: u64,
        most_runs: usize,
    ) -> Result<Vec<(u64, u64)>, PorStoreError> {
        raw::free_runs(repo.meta(), &self.names, self.schedule.capacity(), most_slots, most_runs)
    }

    /// How many slots of U are stashed for the C being built: the window's overwrites of slots
    /// its leaves have not read yet, kept until they are read.
    pub fn stashed_slots(&self, repo: &crate::Repository) -> Result<usize, PorStoreError> {
        Ok(crate::MetaStore::scan(repo.meta(), &self.names.stashes())?.len())
    }

    /// Where U's slot `index` is kept in the metadata store (the log's layout there; its
    /// sealed checksum is kept apart).
    pub fn raw_slot_key(&self, index: u64) -> Vec<u8> {
        self.names.raw(index)
    }

    /// The stored level or C of `region`.
    fn held(&self, region: Region) -> Option<&Held> {
        match region {
            Region::Level(level) => self.levels.get(level as usize)?.as_ref(),
            Region::Coded => Some(&self.coded),
            Region::Raw => None,
        }
    }

    /// The current levels and Cs, in the state record's order.
    fn objects(&self) -> impl Iterator<Item = &ObjectRef> {
        self.levels.iter().flatten().chain([&self.coded]).chain(&self.coded_next).map(|h| &h.object)
    }

    /// Every object the state names: the levels, C, and what the builds still need.
    fn named_objects(&self) -> std::collections::HashSet<ObjectRef> {
        self.record().named().collect()
    }

    fn record(&self) -> StateRecord {
        self.record_at(self.schedule, self.objects().copied().collect(), &self.builds, self.coded_build.clone())
    }

    fn record_at(
        &self,
        schedule: Schedule,
        objects: Vec<ObjectRef>,
        builds: &[Option<build::Build>],
        coded_build: Option<coded_build::CodedBuild>,
    ) -> StateRecord {
        let builds = builds.iter().flatten().cloned().collect();
        StateRecord { owner: self.owner.clone(), width: self.width, schedule, objects, builds, coded_build }
    }
}

impl Limits {
    /// Where a new object of `slots` slots goes: segments of as many whole slots as fit.
    fn object(&self, region: Region, time: u64, slots: u64, width: usize) -> ObjectRef {
        let per_segment = (self.segment_bytes / (width * 8)).max(1) as u64;
        ObjectRef { region, time, slots, per_segment, stage: None }
    }
}

//! The harness of the PoR log tests: a [`Model`] (one client, core's in-memory reference
//! provider and a deterministic stream of batches) and a [`Run`]: the model beside a
//! persistent log ([`PorLog`]) fed the same batches and compared answer by answer.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::Path;
use vouch_core::por::audit::{parts, picks, verify_part};
use vouch_core::por::checksum::{ChecksumKey, SealKey, SealedChecksum};
use vouch_core::por::client::{plan, plan_reencode, verify_read, write, LogState, WriteContext, WritePlan, Written};
use vouch_core::por::provider::ProviderLog;
use vouch_store::por::CodedBuildAt;
use vouch_store::{BlobStore, MetaDb, ObjectBlobs, PorLog, Repository};

pub const WIDTH: usize = 4;
/// Blocks of H are pairs of writes (Sec. 6.1's grouping), so that every test also runs the
/// open group: kept aside, persisted, flushed.
pub const GROUP_LOG: u32 = 1;
pub const OWNER: &[u8] = b"alice/00112233445566778899aabbccddeeff";

/// Object segments and the cache bound, small enough that levels span several segments and
/// only the smallest are cached.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub segment_bytes: usize,
    pub cached_level_bytes: usize,
}

pub const SMALL: Limits = Limits { segment_bytes: 256, cached_level_bytes: 256 };

pub use vouch_testkit::Rng;

/// One batch, prepared by the client.
pub struct Prepared {
    pub plan: WritePlan,
    pub writes: Vec<u64>,
    pub slots: Vec<u64>,
    pub written: Written,
}

/// The client, the reference provider, and the batches to come.
pub struct Model {
    pub reference: ProviderLog,
    pub state: LogState,
    pub seal: SealKey,
    pub sums: ChecksumKey,
    pub rng: Rng,
    /// Slots written so far are `0..next` (fresh slots are appended, as heap inserts).
    pub next: u64,
    pub round: u64,
}

impl Model {
    /// A model of `2^log_capacity` slots, and the sealed checksums of its C.
    pub fn new(log_capacity: u32) -> (Model, Vec<SealedChecksum>) {
        Model::grouped(log_capacity, GROUP_LOG)
    }

    /// [`Model::new`] with blocks of H of `2^group_log` writes.
    pub fn grouped(log_capacity: u32, group_log: u32) -> (Model, Vec<SealedChecksum>) {
        let seal = SealKey::new(&[3; 32]);
        let (state, coded) = LogState::new(log_capacity, group_log, &seal);
        let reference = ProviderLog::new(log_capacity, group_log, WIDTH, coded.clone()).unwrap();
        let sums = ChecksumKey::grouped(&[4; 32], WIDTH, group_log);
        (Model { reference, state, seal, sums, rng: Rng::new(7), next: 0, round: 0 }, coded)
    }

    /// A model from capacity 2 after its random batches up to time `time` (which a batch
    /// must have ended at).
    pub fn replayed(time: u64, grow_until: u64) -> Model {
        let (mut model, _) = Model::new(1);
        while model.state.schedule.time < time {
            let writes = model.random_writes(grow_until);
            let plan = plan(&model.state, &writes, model.flush()).unwrap();
            let context = model.reference.context(&plan).unwrap();
            let p = model.prepare_with(&writes, plan, &context);
            model.apply_reference(&p);
        }
        assert_eq!(model.state.schedule.time, time, "no batch of the model ends there");
        model
    }

    /// Whether the next batch flushes the open group (every third does).
    pub fn flush(&self) -> bool {
        self.round % 3 == 2
    }

    /// The slot written at U index `index` as the batch's `position`-th write (an index
    /// written twice in a batch gets two contents: the last one counts).
    /// A slot of U: its index + 1, then sectors (below 2^56), as the client requires.
    pub fn slot(&self, index: u64, position: usize) -> Vec<u64> {
        let data = (1..WIDTH as u64).map(|e| {
            (self.round * 7919 + index * 104_729 + position as u64 * 31 + e).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 8
        });
        std::iter::once(index + 1).chain(data).collect()
    }

    /// `fresh` new slots appended and `overwrites` random ones of those written before.
    pub fn writes(&mut self, fresh: u64, overwrites: u64) -> Vec<u64> {
        let mut writes: Vec<u64> = (self.next..self.next + fresh).collect();
        self.next += fresh;
        for _ in 0..overwrites {
            let at = self.rng.below(writes.len() as u64 + 1) as usize;
            writes.insert(at, self.rng.below(self.next.max(1)));
        }
        writes
    }

    /// A random batch: a few fresh slots while fewer than `grow_until` exist, and overwrites.
    pub fn random_writes(&mut self, grow_until: u64) -> Vec<u64> {
        let fresh = if self.next < grow_until { 1 + self.rng.below(6) } else { 0 };
        let overwrites = if fresh == 0 { 4 + self.rng.below(16) } else { self.rng.below(3) };
        self.writes(fresh, overwrites)
    }

    /// The client's replay of a batch against a provider's context (checked against the
    /// reference's).
    pub fn prepare_with(&mut self, writes: &[u64], plan: WritePlan, context: &WriteContext) -> Prepared {
        self.round += 1;
        assert_eq!(context, &self.reference.context(&plan).unwrap(), "round {}: contexts differ", self.round);
        let slots: Vec<u64> = writes.iter().enumerate().flat_map(|(at, &i)| self.slot(i, at)).collect();
        let written = write(&self.state, &plan, context, writes, &slots, &self.seal, &self.sums).unwrap();
        Prepared { plan, writes: writes.to_vec(), slots, written }
    }

    /// The reference applies the batch, and the client adopts its state.
    pub fn apply_reference(&mut self, p: &Prepared) {
        self.reference.apply(&p.plan, &p.writes, &p.slots, &p.written).unwrap();
        self.state = p.written.state;
    }
}

/// A model and a persistent log side by side.
pub struct Run {
    pub model: Model,
    /// The metadata store (and, for the local backend, often the blobs).
    pub dir: tempfile::TempDir,
    pub blobs: ObjectBlobs,
    pub repo: Repository,
    pub log: PorLog,
    pub limits: Limits,
    /// Object folders of other owners' logs in the same blob store.
    pub other_folders: usize,
}

impl std::ops::Deref for Run {
    type Target = Model;
    fn deref(&self) -> &Model {
        &self.model
    }
}

impl std::ops::DerefMut for Run {
    fn deref_mut(&mut self) -> &mut Model {
        &mut self.model
    }
}

pub fn open_repo(blobs: &ObjectBlobs, dir: &Path) -> Repository {
    let meta = MetaDb::open(&dir.join("meta.redb")).unwrap();
    Repository::open(blobs.clone(), meta).unwrap()
}

impl Run {
    pub async fn new(blobs: ObjectBlobs, log_capacity: u32, limits: Limits) -> Run {
        Run::grouped(blobs, (log_capacity, GROUP_LOG), limits).await
    }

    /// [`Run::new`] with blocks of H of `2^group_log` writes.
    pub async fn grouped(blobs: ObjectBlobs, (log_capacity, group_log): (u32, u32), limits: Limits) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let repo = open_repo(&blobs, dir.path());
        let (model, coded) = Model::grouped(log_capacity, group_log);
        let log = PorLog::create(&repo, OWNER, (log_capacity, group_log), WIDTH, coded).await.unwrap();
        let log = log.with_limits(limits.segment_bytes, limits.cached_level_bytes);
        Run { model, dir, blobs, repo, log, limits, other_folders: 0 }
    }

    /// The log dropped and opened again from the store.
    pub async fn reopen_log(&mut self) {
        let log = PorLog::open(&self.repo, OWNER).await.unwrap().expect("the log exists");
        self.log = log.with_limits(self.limits.segment_bytes, self.limits.cached_level_bytes);
    }

    /// The repository closed (its metadata store too) and opened again, then the log.
    pub async fn reopen_repo(self) -> Run {
        let Run { model, dir, blobs, repo, log, limits, other_folders } = self;
        drop(log);
        drop(repo);
        let repo = open_repo(&blobs, dir.path());
        let log = PorLog::open(&repo, OWNER).await.unwrap().expect("the log exists");
        let log = log.with_limits(limits.segment_bytes, limits.cached_level_bytes);
        Run { model, dir, blobs, repo, log, limits, other_folders }
    }

    /// The client's plan and replay against the persistent log's context.
    pub fn prepare(&mut self, writes: &[u64]) -> Prepared {
        let plan = plan(&self.state, writes, self.flush()).unwrap();
        let context = self.log.context(&plan).unwrap();
        self.model.prepare_with(writes, plan, &context)
    }

    pub async fn batch(&mut self, writes: &[u64]) {
        let p = self.prepare(writes);
        self.log.apply(&self.repo, &p.plan, &p.writes, &p.slots, &p.written).await.unwrap();
        self.apply_reference(&p);
    }

    /// A re-encode of C from U (what repair sends), by the log and the reference.
    pub async fn reencode(&mut self) -> Result<(), vouch_store::PorStoreError> {
        let plan = plan_reencode(&self.state);
        let context = self.log.context(&plan)?;
        let p = self.model.prepare_with(&[], plan, &context);
        self.log.apply(&self.repo, &p.plan, &p.writes, &p.slots, &p.written).await?;
        self.apply_reference(&p);
        Ok(())
    }

    /// Everything both providers answer agrees, and the client accepts it: schedule, U read
    /// whole, every pick of every part and a few, each region, U's stored slots; and the
    /// blob store holds exactly the current objects.
    pub async fn check(&self) {
        let round = self.round;
        let schedule = self.state.schedule;
        assert_eq!((self.log.schedule(), self.reference.schedule()), (schedule, schedule), "round {round}");
        let all: Vec<u64> = (0..schedule.capacity()).collect();
        let read = self.log.read(&self.repo, &all).await.unwrap();
        assert_eq!(read, self.reference.read(&all).unwrap(), "round {round}: reads of U differ");
        verify_read(&self.state, &all, &read, &self.seal, &self.sums).unwrap();
        let stored = self.log.raw_slots(&self.repo, &all).await.unwrap();
        let want: Vec<Option<Vec<u64>>> = self.reference.raw.chunks_exact(WIDTH).map(|s| Some(s.to_vec())).collect();
        assert_eq!(stored, want, "round {round}: U's stored slots differ");
        let all_parts = parts(&schedule);
        for part in &all_parts {
            for chosen in [picks(&[5; 32], part, part.slots as usize), picks(&[round as u8; 32], part, 3)] {
                let proof = self.log.prove(&self.repo, part, &chosen).await.unwrap();
                assert_eq!(Some(&proof), self.reference.prove(part, &chosen).as_ref(), "round {round}: {part:?}");
                verify_part(&self.seal, &self.sums, part, &chosen, &proof).unwrap();
            }
            let region = self.log.region(&self.repo, part.region).await.unwrap();
            let stored = self.reference.region(part.region).unwrap();
            assert_eq!(region.sealed, stored.sealed, "round {round}: {part:?}");
            let width = self.reference.region_width(part.region);
            assert_eq!(width, self.log.region_width(part.region));
            let slots: Vec<Option<Vec<u64>>> = stored.slots.chunks_exact(width).map(|s| Some(s.to_vec())).collect();
            assert_eq!(region.slots, slots, "round {round}: {part:?}");
        }
        assert_eq!(self.log.staged(), self.reference.staged, "round {round}: the open groups differ");
        // A level being built also keeps its tail, the levels not merged yet, and the next
        // tail (unless it is the level's own object) once a unit wrote to it: after a crash,
        // perhaps before its committed progress says so.
        let builds = self.log.builds();
        let building: usize = builds
            .iter()
            .map(|b| 1 + usize::from(b.merge + 1 < b.level && b.done > 0) + (b.level - b.merge) as usize)
            .sum();
        let mut unsure = builds.iter().filter(|b| b.merge + 1 < b.level && b.done == 0).count();
        // A C being built keeps the stage a merge reads, and the stage its units write
        // (unless C's own object) once a unit wrote to it, or perhaps after a crash.
        let coding = match self.log.coded_build() {
            None => 0,
            Some(CodedBuildAt { stage, done, leaves }) => {
                let writes_stage = stage < schedule.log_capacity;
                unsure += usize::from(writes_stage && done == 0);
                usize::from(stage > leaves) + usize::from(writes_stage && done > 0)
            }
        };
        let folders = object_folders(&self.blobs).await.len() - self.other_folders;
        // In a window, the C being built is an object too, though no part yet.
        let named = all_parts.len() + building + coding + usize::from(schedule.in_window());
        assert!(
            (named..=named + unsure).contains(&folders),
            "round {round}: {folders} objects, not one per part and the builds' ({named})"
        );
    }
}

/// The object folders (`por/<owner>/<object>`) in the blob store.
pub async fn object_folders(blobs: &ObjectBlobs) -> BTreeSet<String> {
    blobs.list("por").await.unwrap().iter().map(|k| k.split('/').take(3).collect::<Vec<_>>().join("/")).collect()
}

/// The blob keys of the segments of the object of `region` (`level-<ℓ>` or `coded`), in order.
pub async fn segment_keys(blobs: &ObjectBlobs, region: &str) -> Vec<String> {
    object_keys(blobs, region, "/slots-").await
}

/// The blob key of the sealed checksums of the object of `region`.
pub async fn sealed_key(blobs: &ObjectBlobs, region: &str) -> String {
    object_keys(blobs, region, "/sealed").await.remove(0)
}

async fn object_keys(blobs: &ObjectBlobs, region: &str, part: &str) -> Vec<String> {
    let keys = blobs.list("por").await.unwrap();
    let of_region = |k: &String| k.split('/').nth(2).is_some_and(|o| o.starts_with(&format!("{region}-")));
    keys.into_iter().filter(|k| of_region(k) && k.contains(part)).collect()
}

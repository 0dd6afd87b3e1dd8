//! Creating a log, and opening it as last committed (with the sweep of what its state does
//! not name).

use super::names::Names;
use super::state::StateRecord;
use super::{
    objects, raw, Held, Limits, PorLog, PorStoreError, CACHED_LEVEL_BYTES, MAX_LOG_CAPACITY, MAX_WIDTH, SEGMENT_BYTES,
};
use crate::{BlobStore, MetaBatch, MetaStore, Repository, StoreError};
use vouch_core::por::checksum::SealedChecksum;
use vouch_core::por::code::Schedule;
use vouch_core::por::provider::ProviderError;
use vouch_core::por::raw_tree::{leaf_hash, RawTree};
use vouch_core::por::Region;

impl PorLog {
    /// A new empty log of `2^log_capacity` slots of `width` elements for `owner`, whose
    /// blocks of H are groups of `2^group_log` writes; `coded` are the sealed checksums of its
    /// C, from [`vouch_core::por::client::LogState::new`]. [`PorStoreError::Exists`] if the
    /// owner has one.
    pub async fn create(
        repo: &Repository,
        owner: &[u8],
        (log_capacity, group_log): (u32, u32),
        width: usize,
        coded: Vec<SealedChecksum>,
    ) -> Result<PorLog, PorStoreError> {
        let schedule = Schedule::new(log_capacity, group_log);
        if log_capacity > MAX_LOG_CAPACITY || !schedule.is_valid() || !(1..=MAX_WIDTH).contains(&width) {
            return Err(PorStoreError::Shape { log_capacity, width });
        }
        let n = 1u64 << log_capacity;
        if coded.len() as u64 != 2 * n {
            return Err(ProviderError::Plan { log_capacity, time: 0 }.into());
        }
        let names = Names::new(owner);
        if repo.meta().get(&names.state())?.is_some() {
            return Err(PorStoreError::Exists);
        }
        // Whatever is there was left by a creation that crashed before its commit.
        for key in repo.blobs().list(names.folder()).await? {
            repo.blobs().delete(&key).await?;
        }
        let limits = Limits { segment_bytes: SEGMENT_BYTES, cached_level_bytes: CACHED_LEVEL_BYTES };
        let object = limits.object(Region::Coded, 0, 2 * n, width);
        objects::put(repo.blobs(), &names, &object, &vec![0; 2 * n as usize * width], &coded, width).await?;
        let coded = Some(coded);
        let log = PorLog {
            owner: owner.to_vec(),
            names,
            width,
            schedule,
            levels: vec![None; schedule.levels() as usize + 1],
            builds: vec![None; schedule.levels() as usize + 1],
            coded: Held { object, sealed: coded, cached: None },
            coded_next: None,
            coded_build: None,
            staged: Vec::new(),
            raw_sealed: vec![None; n as usize],
            tree: RawTree::new(log_capacity),
            limits,
        };
        let mut batch = MetaBatch::default();
        batch.put(log.names.state(), log.record().to_bytes());
        repo.commit_batch(&batch).await?;
        Ok(log)
    }

    /// The owner's log as last committed, or `None` if it has none. Deletes the objects its
    /// state does not name (left by a batch that failed or crashed).
    pub async fn open(repo: &Repository, owner: &[u8]) -> Result<Option<PorLog>, PorStoreError> {
        let names = Names::new(owner);
        let Some(bytes) = repo.meta().get(&names.state())? else { return Ok(None) };
        let corrupt = |detail: String| PorStoreError::CorruptState {
            at: String::from_utf8_lossy(&names.state()).into_owned(),
            detail,
        };
        let record = StateRecord::from_bytes(&bytes).map_err(corrupt)?;
        if record.owner != owner {
            return Err(corrupt("the record names another owner".into()));
        }
        let k = record.schedule.log_capacity;
        let mut levels = vec![None; record.schedule.levels() as usize + 1];
        // The C in use, then in a window the next (the record's order, checked).
        let mut coded = Vec::new();
        for object in record.objects {
            let sealed = match objects::read_sealed(repo.blobs(), &names, &object).await {
                Ok(sealed) => Some(sealed),
                // Lost on the backend: the log opens, and that part answers "lost" until repair.
                Err(e @ (StoreError::NotFound { .. } | StoreError::BadRange { .. } | StoreError::Corrupt { .. })) => {
                    tracing::warn!("PoR log: {e}; audits fail that part until `vouch repair`");
                    None
                }
                Err(e) => return Err(e.into()),
            };
            let held = Held { object, sealed, cached: None };
            match object.region {
                Region::Level(level) => levels[level as usize] = Some(held),
                _ => coded.push(held),
            }
        }
        let mut coded = coded.into_iter();
        let (coded, coded_next) = (coded.next().ok_or_else(|| corrupt("no C".into()))?, coded.next());
        let mut builds = vec![None; record.schedule.levels() as usize + 1];
        for build in record.builds {
            let level = build.level as usize;
            builds[level] = Some(build);
        }
        let staged = match repo.meta().get(&names.staged())? {
            None => Vec::new(),
            Some(bytes) => objects::elements(&bytes)
                .filter(|_| bytes.len() % 8 == 0)
                .ok_or_else(|| corrupt("the open group is not field elements".into()))?,
        };
        if staged.len() as u64 != record.schedule.pending() * record.width as u64 {
            return Err(corrupt(format!(
                "the open group holds {} elements, not {} writes",
                staged.len(),
                record.schedule.pending()
            )));
        }
        let raw_sealed = raw::load_sealed(repo.meta(), &names, 1 << k)?;
        let mut tree = RawTree::new(k);
        let leaves: Vec<_> = raw_sealed
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i as u64, leaf_hash(Some(s)))))
            .collect();
        tree.set(&leaves);
        let log = PorLog {
            owner: owner.to_vec(),
            names,
            width: record.width,
            schedule: record.schedule,
            levels,
            builds,
            coded,
            coded_next,
            coded_build: record.coded_build,
            staged,
            raw_sealed,
            tree,
            limits: Limits { segment_bytes: SEGMENT_BYTES, cached_level_bytes: CACHED_LEVEL_BYTES },
        };
        log.sweep(repo).await?;
        Ok(Some(log))
    }

    /// Deletes the objects under the log's folder that its state does not name, once the
    /// metadata's log is in the blob store (see the module documentation).
    async fn sweep(&self, repo: &Repository) -> Result<(), PorStoreError> {
        let current: std::collections::HashSet<String> =
            self.named_objects().iter().map(|o| self.names.group(o)).collect();
        let orphans: Vec<String> = repo
            .blobs()
            .list(self.names.folder())
            .await?
            .into_iter()
            .filter(|key| self.names.group_of(key).is_none_or(|group| !current.contains(group)))
            .collect();
        if orphans.is_empty() {
            return Ok(());
        }
        repo.close().await?;
        for key in orphans {
            repo.blobs().delete(&key).await?;
        }
        Ok(())
    }
}

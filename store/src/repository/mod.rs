//! The one storage engine: blocks, block lists and records over a blob store and a metadata
//! store, like restic's repository over its small backend.
//!
//! What a caller sees: [`Repository::upload`] packs blocks (an owner's, each with an id and a
//! tag) into segments; a [`Commit`] gathers records, uploaded blocks, saved and deleted lists
//! and forgotten blocks, and [`Repository::commit`] makes it durable in one metadata batch;
//! reads take blocks by owner and id. Segment numbers, the inline-or-blob choice, index keys
//! and bookkeeping stay in here.
//!
//! **Crash semantics.** Blob segments are put before the batch that names them is committed,
//! and deleted only after a committed batch stopped naming them; so a committed index never
//! points at missing bytes, and a crash leaves at worst segment objects nobody names, which
//! [`Repository::sweep_orphans`] deletes before the provider serves. A small upload's segment
//! rides in the batch itself (one flush per small commit).
//!
//! **Rebuilding.** Every segment carries a table of its blocks (`crate::segments::table`),
//! and the metadata store's write-ahead log is copied to the blob store before it starts over
//! ([`log`]), with snapshots that bound the copies. So the blobs alone hold everything the
//! metadata store holds, and [`Repository::rebuild`] makes a lost or damaged metadata store
//! again; [`Repository::check`] verifies every segment against the index.

mod check;
mod commit;
mod compact;
mod log;
mod rebuild;
mod upload;

pub use check::{CheckReport, Problem};
pub use commit::Commit;
pub use compact::{Compaction, CompactionPolicy};
pub use rebuild::RebuildReport;
pub use upload::{StoredBlocks, Upload};

use crate::keys::{self, SegmentInfo};
use crate::lists;
use crate::meta::MetaDb;
use crate::segments::{self, Location, DEFAULT_SEGMENT_SIZE};
use crate::{Entry, MetaBatch, MetaStore, ObjectBlobs, StoreError};
use bytes::Bytes;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use vouch_core::FlexList;

/// A block read back: its tag and its bytes (checked against the index's checksum).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBlock {
    pub tag: Vec<u8>,
    pub data: Bytes,
}

/// The provider's storage: segments in a blob store, an index and records in a metadata store.
pub struct Repository {
    blobs: ObjectBlobs,
    meta: MetaDb,
    /// The next unreserved segment number: concurrent uploads pack into disjoint segments.
    next_segment: Arc<AtomicU64>,
    segment_size: usize,
    /// Held while a commit is resolved and made durable, and by compaction's switch: the
    /// bookkeeping a commit reads is never changed under it, and the log is copied whole.
    commits: tokio::sync::Mutex<log::LogState>,
    /// Held by a compaction run: one at a time (two would copy the same blocks).
    compacting: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Repository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository").field("blobs", &self.blobs).field("meta", &self.meta).finish()
    }
}

impl Repository {
    /// The repository over `blobs` and `meta`. A fresh store is stamped with this layout; a
    /// store of another layout is refused, never misread.
    pub fn open(blobs: ObjectBlobs, meta: MetaDb) -> Result<Self, StoreError> {
        // Before the stamp is committed: from its first batch on, the log is kept for copying.
        meta.keep_log();
        check_format(&meta)?;
        let next = next_segment(&meta)?;
        Ok(Repository {
            blobs,
            meta,
            next_segment: Arc::new(AtomicU64::new(next)),
            segment_size: DEFAULT_SEGMENT_SIZE,
            commits: tokio::sync::Mutex::new(log::LogState::default()),
            compacting: tokio::sync::Mutex::new(()),
        })
    }

    /// Seals blob segments at `size` bytes instead of [`DEFAULT_SEGMENT_SIZE`]: smaller
    /// segments are written (and compacted) sooner, larger ones mean fewer objects.
    pub fn with_segment_size(mut self, size: usize) -> Self {
        self.segment_size = size.max(1);
        self
    }

    /// Starts packing blocks of `owner` (opaque bytes naming whose they are, at most 64 KiB).
    pub fn upload(&self, owner: &[u8]) -> Result<Upload, StoreError> {
        Upload::new(owner, self.blobs.clone(), self.next_segment.clone(), self.segment_size)
    }

    /// An empty change; [`Repository::commit`] makes it durable.
    pub fn begin(&self) -> Commit {
        Commit::default()
    }

    // ---- records: the caller's own small entries, in key order ----

    pub fn record(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.meta.get(&keys::record(key))
    }

    /// Every record whose key starts with `prefix`, in key order, keys as they were put.
    pub fn records(&self, prefix: &[u8]) -> Result<Vec<Entry>, StoreError> {
        let strip = keys::RECORDS.len();
        Ok(self.meta.scan(&keys::record(prefix))?.into_iter().map(|(k, v)| (k[strip..].to_vec(), v)).collect())
    }

    // ---- blocks ----

    /// The index entries of `ids` of `owner`, read together.
    fn indexed(&self, owner: &[u8], ids: &[u64]) -> Result<Vec<(Location, Vec<u8>)>, StoreError> {
        let keys = ids.iter().map(|&id| keys::block(owner, id)).collect::<Result<Vec<_>, _>>()?;
        let values = self.meta.get_many(&keys)?;
        ids.iter()
            .zip(values)
            .map(|(id, value)| {
                let at = || format!("block {id} of {}", String::from_utf8_lossy(owner));
                let corrupt = |detail: &str| StoreError::Corrupt { at: at(), detail: detail.into() };
                let value = value.ok_or_else(|| corrupt("listed but not indexed"))?;
                let location = value.get(..Location::ENCODED_LEN).and_then(Location::from_bytes);
                Ok((location.ok_or_else(|| corrupt("short index entry"))?, value[Location::ENCODED_LEN..].to_vec()))
            })
            .collect()
    }

    /// The tags of blocks, without their bytes.
    pub fn block_tags(&self, owner: &[u8], ids: &[u64]) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self.indexed(owner, ids)?.into_iter().map(|(_, tag)| tag).collect())
    }

    /// Blocks of `owner`, in the order asked, each checked against its checksum: a damaged,
    /// torn or missing segment is [`StoreError::Corrupt`] and no bytes are returned.
    pub async fn read_blocks(&self, owner: &[u8], ids: &[u64]) -> Result<Vec<StoredBlock>, StoreError> {
        let mut indexed = self.indexed(owner, ids)?;
        // Compaction may move the blocks and delete their old segment between the index read
        // and the segment read: then read where they are now (a few times at most).
        for _ in 0..3 {
            let locations: Vec<Location> = indexed.iter().map(|(at, _)| *at).collect();
            match segments::read_blocks(&self.blobs, &self.meta, &locations).await {
                Ok(data) => {
                    let blocks = indexed.into_iter().zip(data).map(|((_, tag), data)| StoredBlock { tag, data });
                    return Ok(blocks.collect());
                }
                Err(e @ StoreError::Corrupt { .. }) => {
                    let now = self.indexed(owner, ids)?;
                    if now.iter().map(|(at, _)| *at).eq(locations) {
                        return Err(e);
                    }
                    indexed = now;
                }
                Err(e) => return Err(e),
            }
        }
        let locations: Vec<Location> = indexed.iter().map(|(at, _)| *at).collect();
        let data = segments::read_blocks(&self.blobs, &self.meta, &locations).await?;
        Ok(indexed.into_iter().zip(data).map(|((_, tag), data)| StoredBlock { tag, data }).collect())
    }

    // ---- lists ----

    /// The list saved under `name`; [`StoreError::NotFound`] if there is none, and stored
    /// bytes that do not rebuild the saved root are [`StoreError::Corrupt`].
    pub fn load_list(&self, name: &str) -> Result<FlexList, StoreError> {
        lists::load_list(&self.meta, name)
    }

    /// Makes `commit` durable, all of it or (after an error or a crash) nothing of it.
    ///
    /// Nothing is awaited after the durable write: a caller that updates its memory right
    /// after this returns cannot be cut off between the two (a request dropped by its
    /// connection, a timeout), which would leave its memory behind the store. So the log is
    /// copied, when due, before the write; the copy then holds the commits before this one.
    pub async fn commit(&self, commit: Commit) -> Result<(), StoreError> {
        let mut log = self.commits.lock().await;
        self.ship_if_due(&mut log).await;
        let batch = commit.resolve(self)?;
        self.meta.commit(&batch)
    }

    /// [`Repository::commit`] from synchronous code, for setting a repository up before it
    /// serves: refused while another commit is in progress. (The log is copied at a later
    /// commit.)
    pub fn commit_sync(&self, commit: Commit) -> Result<(), StoreError> {
        let _log = self.commits.try_lock().map_err(|_| StoreError::Backend {
            at: "the repository".into(),
            detail: "another commit is in progress".into(),
        })?;
        self.meta.commit(&commit.resolve(self)?)
    }

    /// Copies what the metadata store's log holds to the blob store (a clean shutdown's last
    /// step: a rebuild then needs nothing but the blobs).
    pub async fn close(&self) -> Result<(), StoreError> {
        let mut log = self.commits.lock().await;
        self.ship(&mut log).await
    }

    // ---- for the PoR logs (`crate::por`), which keep their own layout beside the blocks ----

    /// The blob store under the repository. Also for a caller's own objects kept beside the
    /// repository's (VICOS's object store, under `vicos/`): never under the repository's
    /// prefixes `segments/`, `log/`, `snapshot/` and `por/`, which it lists and deletes in.
    pub fn blobs(&self) -> &ObjectBlobs {
        &self.blobs
    }

    /// The metadata store under the repository: for tools that inspect it, and for tests that
    /// damage it as a failing disk would (what the repository and its logs keep there is theirs
    /// alone to change).
    pub fn meta(&self) -> &MetaDb {
        &self.meta
    }

    /// Commits a batch built outside a [`Commit`], under the commit lock, with nothing awaited
    /// after the durable write (see [`Repository::commit`]).
    pub(crate) async fn commit_batch(&self, batch: &MetaBatch) -> Result<(), StoreError> {
        let mut log = self.commits.lock().await;
        self.ship_if_due(&mut log).await;
        self.meta.commit(batch)
    }

    /// Copies the metadata log to the blob store now (what a caller needs before it deletes
    /// objects its last batch stopped naming): `false` if that failed (logged; tried again
    /// later).
    pub(crate) async fn ship_log(&self) -> bool {
        let mut log = self.commits.lock().await;
        match self.ship(&mut log).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("could not copy the metadata log to the blob store (tried again later): {e}");
                false
            }
        }
    }

    fn segment_info(&self, segment: u64) -> Result<Option<SegmentInfo>, StoreError> {
        match self.meta.get(&keys::segment(segment))? {
            None => Ok(None),
            Some(v) => SegmentInfo::from_bytes(&v).map(Some).ok_or_else(|| StoreError::Corrupt {
                at: "the metadata store".into(),
                detail: format!("bookkeeping of {} is malformed", segments::segment_name(segment)),
            }),
        }
    }

    /// Every committed segment and its bookkeeping.
    fn segment_infos(&self) -> Result<Vec<(u64, SegmentInfo)>, StoreError> {
        self.meta
            .scan(keys::SEGMENTS)?
            .into_iter()
            .map(|(k, v)| match (keys::parse_segment(&k), SegmentInfo::from_bytes(&v)) {
                (Some(id), Some(info)) => Ok((id, info)),
                _ => Err(StoreError::Corrupt {
                    at: "the metadata store".into(),
                    detail: format!("malformed segment entry {}", String::from_utf8_lossy(&k)),
                }),
            })
            .collect()
    }
}

/// The number the next new segment gets, as the store last recorded it.
fn next_segment(meta: &MetaDb) -> Result<u64, StoreError> {
    Ok(meta.get(keys::NEXT_SEGMENT)?.and_then(|v| v.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0))
}

fn check_format(meta: &MetaDb) -> Result<(), StoreError> {
    let refuse = |detail: String| Err(StoreError::Corrupt { at: "the metadata store".into(), detail });
    match meta.get(keys::STORE_FORMAT)? {
        Some(found) if found == keys::FORMAT => Ok(()),
        Some(found) => refuse(format!(
            "its storage layout is {:?}, this provider reads {:?}",
            String::from_utf8_lossy(&found),
            String::from_utf8_lossy(keys::FORMAT)
        )),
        None if !meta.is_empty()? => {
            refuse("written by an older vouch (segments without tables): start from an empty data directory".into())
        }
        None => meta.commit(MetaBatch::default().put(keys::STORE_FORMAT, keys::FORMAT)),
    }
}

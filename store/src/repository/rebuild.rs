//! Rebuilding a lost or damaged metadata store from the blobs.
//!
//! The damaged store and its log are moved aside (never deleted). A new store is filled by
//! replaying the copies in the blob store (`log`): the newest whole snapshot, the log copies
//! after it, then what the old local log still holds (its records are checksummed; a damaged
//! tail is left out). Then the index is checked against the segments' own tables: an entry
//! whose segment is gone or names another block there is pointed at the segment whose table
//! holds that block with the same length, checksum and tag, if one does (a compaction whose
//! switch the copies miss); and the bookkeeping is made again from what the blob store holds,
//! so no segment object is taken for an orphan. Whatever cannot be put right is reported, and
//! left for the client to judge: its root says whether the rebuilt state is the right one.
//! Last, a snapshot of the result is written, so that the copies cover it.

use super::check::{describe, index_entry, Problem, Survey};
use super::log::{log_key, snapshot_key, Copies};
use super::Repository;
use crate::keys::{self, SegmentInfo};
use crate::meta::{wal_path, MetaDb};
use crate::segments::{segment_of_key, Location, INLINE_BIT};
use crate::wal::{parse_log, read_file};
use crate::{BlobStore, MetaBatch, MetaStore, ObjectBlobs, StoreError};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// What a rebuild did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RebuildReport {
    /// Where the old metadata store and its log were moved.
    pub moved_aside: Vec<PathBuf>,
    /// The snapshot replayed first, if any, and how many log copies after it.
    pub snapshot: Option<String>,
    pub log_copies: usize,
    /// Batches replayed from the old local log.
    pub local_log_batches: usize,
    pub segments: usize,
    pub blocks: usize,
    /// Index entries pointed at the segment that holds their block.
    pub repointed_blocks: usize,
    /// The snapshot written of the rebuilt store.
    pub written_snapshot: Option<String>,
    pub problems: Vec<Problem>,
}

impl Repository {
    /// Makes the metadata store at `meta_path` again from `blobs` (and what its old log still
    /// holds), moving the old store aside; returns the repository over the rebuilt store.
    pub async fn rebuild(blobs: ObjectBlobs, meta_path: &Path) -> Result<(Repository, RebuildReport), StoreError> {
        let mut report = RebuildReport::default();
        let local_log = read_file(&wal_path(meta_path))?;
        report.local_log_batches = local_log.len();
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        for path in [meta_path.to_path_buf(), wal_path(meta_path)] {
            if let Some(aside) = move_aside(&path, stamp)? {
                report.moved_aside.push(aside);
            }
        }
        let meta = MetaDb::open(meta_path)?;
        meta.keep_log();
        replay(&blobs, &meta, &mut report).await?;
        // Not in the copies yet: through the new log, which keeps it until it is copied.
        let mut unshipped = MetaBatch::default();
        local_log.into_iter().for_each(|b| unshipped.append(b));
        if meta.get(keys::STORE_FORMAT)?.is_none() {
            // Nothing of the old store's beginning survived; the rest is this layout's.
            unshipped.put(keys::STORE_FORMAT, keys::FORMAT);
        }
        if !unshipped.is_empty() {
            meta.commit(&unshipped)?;
        }
        let repo = Repository::open(blobs, meta)?;
        repo.reconcile(&mut report).await?;
        report.written_snapshot = Some(snapshot_key(repo.snapshot(false).await?));
        Ok((repo, report))
    }

    /// Points index entries at the segments that hold their blocks, and makes the
    /// bookkeeping from the segments there are.
    async fn reconcile(&self, report: &mut RebuildReport) -> Result<(), StoreError> {
        let mut segments: BTreeSet<u64> = BTreeSet::new();
        for key in self.blobs.list("segments").await? {
            segments.extend(segment_of_key(&key));
        }
        for (key, _) in self.meta.scan(b"iseg/")? {
            let hex = std::str::from_utf8(&key[5..]).ok().and_then(|h| u64::from_str_radix(h, 16).ok());
            segments.extend(hex);
        }
        let survey = Survey::read(self, segments.iter().copied(), &mut report.problems).await?;
        report.segments = segments.len();
        // Where each block is, by its identity: built only if an entry needs it.
        let mut found: Option<Whereabouts> = None;
        let mut batch = MetaBatch::default();
        let mut live: HashMap<u64, SegmentInfo> = HashMap::new();
        for (key, value) in self.meta.scan(keys::BLOCKS)? {
            report.blocks += 1;
            let Some((owner, id, mut at, tag)) = index_entry(&key, &value) else {
                report.problems.push(Problem::new(describe(&key), "malformed index entry"));
                continue;
            };
            if let Err(why) = survey.matches(&owner, id, &at, &tag) {
                let found = found.get_or_insert_with(|| locate(&survey));
                let elsewhere =
                    found.get(&(owner.clone(), id)).into_iter().flatten().find(|l| {
                        l.len == at.len && l.check == at.check && survey.matches(&owner, id, l, &tag).is_ok()
                    });
                match elsewhere {
                    Some(l) => {
                        at = *l;
                        batch.put(key.clone(), [&at.to_bytes()[..], &tag].concat());
                        report.repointed_blocks += 1;
                    }
                    // Left as it is (reads of it report the data lost); its segment, if any
                    // is left, stays counted live so compaction does not take it for dead.
                    None => {
                        report.problems.push(Problem::new(describe(&key), format!("{why}, and no segment holds it")))
                    }
                }
            }
            let info = live.entry(at.segment).or_default();
            info.live_bytes += u64::from(at.len);
            info.live_blocks += 1;
        }
        for (key, _) in self.meta.scan(keys::SEGMENTS)? {
            batch.delete(key);
        }
        let mut next = self.next_segment.load(std::sync::atomic::Ordering::SeqCst);
        // Every object there is, readable or not, is in the bookkeeping: none is swept as an
        // orphan.
        for (id, surveyed) in &survey.segments {
            let Some(size) = surveyed.size else { continue };
            let info = SegmentInfo { size, ..live.get(id).copied().unwrap_or_default() };
            batch.put(keys::segment(*id), info.to_bytes());
            next = next.max((id & !INLINE_BIT) + 1);
        }
        batch.put(keys::NEXT_SEGMENT, next.to_le_bytes().to_vec());
        self.next_segment.store(next, std::sync::atomic::Ordering::SeqCst);
        let mut log = self.commits.lock().await;
        self.meta.commit(&batch)?;
        self.ship(&mut log).await
    }
}

/// Where blocks are, by owner and id.
type Whereabouts = HashMap<(Vec<u8>, u64), Vec<Location>>;

/// Every block every readable table names, by identity.
fn locate(survey: &Survey) -> Whereabouts {
    let mut out = Whereabouts::new();
    for (segment, surveyed) in &survey.segments {
        let Some(blocks) = &surveyed.blocks else { continue };
        for b in blocks.values() {
            let at = Location { segment: *segment, offset: b.offset, len: b.len, check: b.check };
            out.entry((b.owner.clone(), b.id)).or_default().push(at);
        }
    }
    out
}

/// Replays the copies in the blob store into the new store.
async fn replay(blobs: &ObjectBlobs, meta: &MetaDb, report: &mut RebuildReport) -> Result<(), StoreError> {
    let copies = Copies::list(blobs).await?;
    let mut from = None;
    for &seq in copies.snapshots.iter().rev() {
        let key = snapshot_key(seq);
        let (batches, whole) = parse_log(&blobs.get(&key).await?);
        if whole {
            meta.load(&batches)?;
            report.snapshot = Some(key);
            from = Some(seq);
            break;
        }
        report.problems.push(Problem::new(key, "damaged; an older snapshot is used"));
    }
    for &seq in copies.logs.iter().filter(|&&l| Some(l) > from) {
        let key = log_key(seq);
        let (batches, whole) = parse_log(&blobs.get(&key).await?);
        if !whole {
            report.problems.push(Problem::new(&key, "damaged; its batches after the damage are lost"));
        }
        meta.load(&batches)?;
        report.log_copies += 1;
    }
    Ok(())
}

/// Renames `path` to `path.damaged-<stamp>` (or `-<stamp>-<n>` if taken); `None` if there is
/// no such file.
fn move_aside(path: &Path, stamp: u64) -> Result<Option<PathBuf>, StoreError> {
    if !path.exists() {
        return Ok(None);
    }
    let name = path.file_name().map_or_else(|| "meta".into(), |n| n.to_string_lossy().into_owned());
    let mut aside = path.with_file_name(format!("{name}.damaged-{stamp}"));
    let mut n = 1;
    while aside.exists() {
        aside = path.with_file_name(format!("{name}.damaged-{stamp}-{n}"));
        n += 1;
    }
    let at = path.display().to_string();
    std::fs::rename(path, &aside).map_err(|e| crate::error::from_io(&at, &e, format!("moving it aside: {e}")))?;
    Ok(Some(aside))
}

//! Compaction: segments mostly dead are rewritten, their space given back.
//!
//! Every commit keeps each segment's live bytes (`seg/<id>`), so choosing is a scan of those
//! entries. A segment whose live bytes fall below [`CompactionPolicy::min_live`] of its size is
//! a victim, once the victims hold [`CompactionPolicy::min_garbage`] bytes of garbage together.
//! Its table says which blocks it holds; those the index still names there are copied into new
//! segments, which are put while commits and reads go on. Then, under the commit lock (writes
//! wait briefly; reads never), one batch re-points the moved entries that no commit changed
//! meanwhile and drops the victims' bookkeeping; the log is copied (so a rebuild from the
//! blobs knows the move); only then are the victims' objects deleted. A read that found a
//! moved block's old location just before the delete reads again where the index says now.
//!
//! A crash at any point leaves at worst objects nobody names (new segments before the switch,
//! victims after it), which the sweep at the next start deletes. A block whose bytes no longer
//! match its checksum is never copied (that would launder the damage): its segment stays as it
//! is, for `check` to report.

use super::upload::Written;
use super::Repository;
use crate::keys::{self, SegmentInfo};
use crate::segments::table::{SegmentBuilder, SegmentTable};
use crate::segments::{checksum, read_segment, segment_key, segment_name, Location, INLINE_BIT};
use crate::{BlobStore, MetaBatch, MetaStore, StoreError};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// When compaction rewrites segments.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionPolicy {
    /// A segment whose live bytes are below this fraction of its size is rewritten.
    pub min_live: f64,
    /// Only once the segments below `min_live` hold this many bytes of garbage together.
    pub min_garbage: u64,
    /// Most bytes of segments one run reads (the others wait for the next run).
    pub max_read: u64,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        CompactionPolicy { min_live: 0.5, min_garbage: 64 << 20, max_read: 1 << 30 }
    }
}

/// What a compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Compaction {
    pub rewritten_segments: usize,
    pub moved_blocks: usize,
    pub deleted_segments: usize,
    /// Bytes of the segments rewritten or deleted, less those of the new ones.
    pub reclaimed_bytes: u64,
}

/// A live block copied into a new segment.
struct Moved {
    key: Vec<u8>,
    /// The index entry as it was when the block was copied.
    was: Vec<u8>,
    to: Location,
    tag: Vec<u8>,
}

impl Repository {
    /// One compaction run as `policy` says (nothing if there is not enough garbage).
    pub async fn compact(&self, policy: &CompactionPolicy) -> Result<Compaction, StoreError> {
        let _one_at_a_time = self.compacting.lock().await;
        let mut victims: Vec<(u64, SegmentInfo)> = self
            .segment_infos()?
            .into_iter()
            .filter(|(_, info)| (info.live_bytes as f64) < policy.min_live * info.size as f64)
            .collect();
        let garbage: u64 = victims.iter().map(|(_, info)| info.garbage()).sum();
        if victims.is_empty() || garbage < policy.min_garbage {
            return Ok(Compaction::default());
        }
        // The emptiest first, as many as one run may read.
        victims.sort_by(|a, b| (a.1.live_bytes * b.1.size.max(1)).cmp(&(b.1.live_bytes * a.1.size.max(1))));
        let mut read = 0u64;
        victims.retain(|(_, info)| {
            let take = read == 0 || read + info.size <= policy.max_read;
            read += if take { info.size.max(1) } else { 0 };
            take
        });

        let mut out = Output::new(self);
        let mut done_victims = Vec::new();
        for (victim, info) in &victims {
            if info.live_blocks > 0 && !self.copy_live(*victim, &mut out).await? {
                continue;
            }
            done_victims.push((*victim, *info));
        }
        out.seal().await?;
        out.written.wait().await?;
        self.switch(out, &done_victims).await
    }

    /// Copies the blocks of `victim` that the index still names there into `out`; `false`
    /// (and a warning) if the victim cannot be moved as it is: missing, or damaged.
    async fn copy_live(&self, victim: u64, out: &mut Output<'_>) -> Result<bool, StoreError> {
        let name = segment_name(victim);
        let Some(bytes) = read_segment(&self.blobs, &self.meta, victim).await? else {
            tracing::warn!("compaction: {name} is missing; left for `check` to report");
            return Ok(false);
        };
        let table = match SegmentTable::parse(&bytes) {
            Ok(table) => table,
            Err(why) => {
                tracing::warn!("compaction: {name}: {why}; left as it is");
                return Ok(false);
            }
        };
        let keys = table.blocks.iter().map(|b| keys::block(&b.owner, b.id)).collect::<Result<Vec<_>, _>>()?;
        let values = self.meta.get_many(&keys)?;
        let mut live = Vec::new();
        for ((block, key), value) in table.blocks.into_iter().zip(keys).zip(values) {
            let here = Location { segment: victim, offset: block.offset, len: block.len, check: block.check };
            let Some(value) = value else { continue };
            if value.get(..Location::ENCODED_LEN).and_then(Location::from_bytes) != Some(here) {
                continue;
            }
            let data = bytes.slice(block.offset as usize..block.offset as usize + block.len as usize);
            if checksum(&data) != block.check || value[Location::ENCODED_LEN..] != block.tag[..] {
                tracing::warn!("compaction: {name}: block {} does not match its index entry; left as it is", block.id);
                return Ok(false);
            }
            live.push((block, key, value, data));
        }
        for (block, key, was, data) in live {
            let to = out.add(&block.owner, block.id, &block.tag, data, block.check).await?;
            out.pending.push(Moved { key, was, to, tag: block.tag });
        }
        Ok(true)
    }

    /// Commits the moves that still hold and forgets the victims, then deletes their objects.
    async fn switch(&self, mut out: Output<'_>, victims: &[(u64, SegmentInfo)]) -> Result<Compaction, StoreError> {
        let mut done = Compaction::default();
        if victims.is_empty() {
            return Ok(done);
        }
        let mut log = self.commits.lock().await;
        let now = self.meta.get_many(&out.moved.iter().map(|m| m.key.clone()).collect::<Vec<_>>())?;
        let mut batch = MetaBatch::default();
        let mut live: HashMap<u64, SegmentInfo> =
            out.segments.iter().map(|(id, size)| (*id, SegmentInfo { size: *size, ..Default::default() })).collect();
        for (moved, now) in out.moved.iter().zip(now) {
            // A block forgotten (or changed) since it was copied stays dead in its new segment.
            if now.as_ref() != Some(&moved.was) {
                continue;
            }
            batch.put(moved.key.clone(), [&moved.to.to_bytes()[..], &moved.tag].concat());
            let info = live.get_mut(&moved.to.segment).expect("moved into a new segment");
            info.live_bytes += u64::from(moved.to.len);
            info.live_blocks += 1;
            done.moved_blocks += 1;
        }
        for (id, info) in &live {
            batch.put(keys::segment(*id), info.to_bytes());
        }
        for (victim, info) in victims {
            batch.delete(keys::segment(*victim));
            if victim & INLINE_BIT != 0 {
                batch.delete(keys::inline_segment(*victim));
            }
            done.reclaimed_bytes += info.size;
            done.rewritten_segments += usize::from(info.live_blocks > 0);
        }
        done.reclaimed_bytes = done.reclaimed_bytes.saturating_sub(live.values().map(|i| i.size).sum());
        batch.put(keys::NEXT_SEGMENT, self.next_segment.load(Ordering::SeqCst).to_le_bytes().to_vec());
        self.meta.commit(&batch)?;
        out.written.hand_over();
        let shipped = self.ship(&mut log).await;
        drop(log);
        if let Err(e) = shipped {
            // The victims stay until the sweep at the next start, which copies the log first.
            tracing::warn!("compaction: could not copy the metadata log ({e}); old segments kept for now");
            return Ok(done);
        }
        for (victim, _) in victims {
            // An inline victim went with the switch's batch.
            if victim & INLINE_BIT == 0 {
                self.blobs.delete(&segment_key(*victim)).await?;
            }
            done.deleted_segments += 1;
        }
        Ok(done)
    }

    /// Deletes the segment objects that no committed entry names (an abandoned upload's, a
    /// crash's, a compaction's leftovers); returns how many. Only while nothing is being
    /// uploaded: a segment put but not yet committed looks like an orphan (the provider sweeps
    /// when it starts, before it serves).
    pub async fn sweep_orphans(&self) -> Result<usize, StoreError> {
        {
            // A compaction's switch must be in the copies before its victims go.
            let mut log = self.commits.lock().await;
            self.ship(&mut log).await?;
        }
        let named: std::collections::HashSet<u64> = self.segment_infos()?.into_iter().map(|(id, _)| id).collect();
        let mut deleted = 0;
        for key in self.blobs.list("segments").await? {
            if crate::segments::segment_of_key(&key).is_some_and(|id| !named.contains(&id)) {
                self.blobs.delete(&key).await?;
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    /// Housekeeping for a serving provider, run in the background: a compaction run as
    /// `policy` says, and a snapshot of the metadata when enough log copies have piled up.
    pub async fn maintain(&self, policy: &CompactionPolicy) -> Result<Compaction, StoreError> {
        let done = self.compact(policy).await?;
        self.snapshot_if_due().await?;
        Ok(done)
    }
}

/// New segments being filled by a compaction.
struct Output<'r> {
    repo: &'r Repository,
    current: SegmentBuilder,
    /// Moves into the current segment, without its number yet.
    pending: Vec<Moved>,
    moved: Vec<Moved>,
    /// (number, size) of each new segment.
    segments: Vec<(u64, u64)>,
    written: Written,
}

impl<'r> Output<'r> {
    fn new(repo: &'r Repository) -> Self {
        Output {
            repo,
            current: SegmentBuilder::default(),
            pending: Vec::new(),
            moved: Vec::new(),
            segments: Vec::new(),
            written: Written::new(repo.blobs.clone()),
        }
    }

    async fn add(
        &mut self,
        owner: &[u8],
        id: u64,
        tag: &[u8],
        data: bytes::Bytes,
        check: u64,
    ) -> Result<Location, StoreError> {
        if !self.current.is_empty() && self.current.data_len() + data.len() > self.repo.segment_size {
            self.seal().await?;
        }
        let len = data.len() as u32;
        let offset = self.current.add(owner, id, tag, data, check);
        // The segment number is filled in at the seal; `moved` gets the entry then.
        Ok(Location { segment: u64::MAX, offset, len, check })
    }

    async fn seal(&mut self) -> Result<(), StoreError> {
        if self.current.is_empty() {
            return Ok(());
        }
        let id = self.repo.next_segment.fetch_add(1, Ordering::SeqCst);
        let (parts, size) = std::mem::take(&mut self.current).seal();
        for mut m in self.pending.drain(..) {
            m.to.segment = id;
            self.moved.push(m);
        }
        self.segments.push((id, size as u64));
        self.written.put(id, parts).await
    }
}

//! Packing an owner's blocks into segments: [`Upload`], then [`StoredBlocks`] for a commit.
//!
//! Blocks are appended to an in-memory segment; each full segment is put in the background
//! (two at a time, so receiving goes on while the store works). What is left at the end is
//! kept inline (in the commit's metadata batch) when the whole upload is that small, else put
//! as one more blob segment. Segment numbers are given when a segment is sealed, so the
//! choice is made with the upload's size known.
//!
//! Blob segments of an upload that is dropped before its commit (an error, a limit, a dropped
//! connection, a refused commit) are deleted once their writes have ended; outside a runtime,
//! or when a delete fails, they wait for the sweep at the next start.

use crate::keys::{self, SegmentInfo};
use crate::segments::table::{SegmentBuilder, MAX_TAG};
use crate::segments::{checksum, segment_key, Location, INLINE_BIT, INLINE_MAX};
use crate::{BlobStore, ObjectBlobs, StoreError};
use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::task::JoinSet;

/// An index entry about to be committed: the block's id, location and tag.
pub(super) type NewEntry = (u64, Location, Vec<u8>);

/// Blocks of one owner being packed into segments.
#[derive(Debug)]
pub struct Upload {
    owner: Vec<u8>,
    next_segment: Arc<AtomicU64>,
    segment_size: usize,
    current: SegmentBuilder,
    /// Entries of the current segment, without its number yet.
    pending: Vec<NewEntry>,
    stored: StoredBlocks,
}

impl Upload {
    pub(super) fn new(
        owner: &[u8],
        blobs: ObjectBlobs,
        next_segment: Arc<AtomicU64>,
        segment_size: usize,
    ) -> Result<Self, StoreError> {
        keys::block_prefix(owner)?;
        Ok(Upload {
            owner: owner.to_vec(),
            next_segment,
            segment_size,
            current: SegmentBuilder::default(),
            pending: Vec::new(),
            stored: StoredBlocks {
                owner: owner.to_vec(),
                entries: Vec::new(),
                segments: Vec::new(),
                inline: Vec::new(),
                written: Written::new(blobs),
            },
        })
    }

    /// Adds a block (`id` names it within its owner; `tag` is kept beside it, at most 64 KiB).
    pub async fn add(&mut self, id: u64, tag: &[u8], data: Bytes) -> Result<(), StoreError> {
        if tag.len() > MAX_TAG || u32::try_from(data.len()).is_err() {
            return Err(StoreError::InvalidKey { key: format!("block {id}: a tag over 64 KiB or a block over 4 GiB") });
        }
        if !self.current.is_empty() && self.current.data_len() + data.len() > self.segment_size {
            self.seal_current(false).await?;
        }
        let check = checksum(&data);
        let len = data.len() as u32;
        let offset = self.current.add(&self.owner, id, tag, data, check);
        self.pending.push((id, Location { segment: 0, offset, len, check }, tag.to_vec()));
        Ok(())
    }

    /// Seals what is left: kept inline if the whole upload is small, else put in the
    /// background (call before other slow work, then [`Upload::finish`]).
    pub async fn seal(&mut self) -> Result<(), StoreError> {
        if self.current.is_empty() {
            return Ok(());
        }
        let small = self.stored.written.segments.is_empty() && self.current.data_len() <= INLINE_MAX;
        self.seal_current(small).await
    }

    async fn seal_current(&mut self, inline: bool) -> Result<(), StoreError> {
        let number = self.next_segment.fetch_add(1, Ordering::SeqCst);
        let id = if inline { number | INLINE_BIT } else { number };
        let (parts, size) = std::mem::take(&mut self.current).seal();
        let live_bytes = self.pending.iter().map(|(_, at, _)| u64::from(at.len)).sum();
        let live_blocks = self.pending.len() as u64;
        for (_, at, _) in &mut self.pending {
            at.segment = id;
        }
        self.stored.entries.append(&mut self.pending);
        self.stored.segments.push((id, SegmentInfo { size: size as u64, live_bytes, live_blocks }));
        if inline {
            self.stored.inline.push((id, parts.iter().flat_map(|p| p.iter().copied()).collect()));
            return Ok(());
        }
        self.stored.written.put(id, parts).await
    }

    /// Seals what is left and waits until every blob segment of the upload is stored: only
    /// then may a commit name them.
    pub async fn finish(mut self) -> Result<StoredBlocks, StoreError> {
        self.seal().await?;
        self.stored.written.wait().await?;
        Ok(self.stored)
    }
}

/// An upload's blocks, stored but not yet committed: add them to a [`crate::Commit`].
/// Dropped uncommitted, their blob segments are deleted.
#[derive(Debug)]
pub struct StoredBlocks {
    pub(super) owner: Vec<u8>,
    pub(super) entries: Vec<NewEntry>,
    pub(super) segments: Vec<(u64, SegmentInfo)>,
    /// Inline segments' bytes, written by the commit.
    pub(super) inline: Vec<(u64, Vec<u8>)>,
    written: Written,
}

impl StoredBlocks {
    /// How many blocks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// From here on the blob segments belong to the index: dropping deletes nothing.
    pub(super) fn hand_over(&mut self) {
        self.written.hand_over();
    }
}

/// Blob segments an upload or a compaction put (or is putting), deleted when dropped unless
/// handed over.
#[derive(Debug)]
pub(super) struct Written {
    blobs: ObjectBlobs,
    segments: Vec<u64>,
    writing: JoinSet<Result<(), StoreError>>,
}

impl Written {
    pub fn new(blobs: ObjectBlobs) -> Self {
        Written { blobs, segments: Vec::new(), writing: JoinSet::new() }
    }

    /// Waits until every segment put so far is stored.
    pub async fn wait(&mut self) -> Result<(), StoreError> {
        while let Some(done) = self.writing.join_next().await {
            joined(done)?;
        }
        Ok(())
    }

    /// From here on the segments belong to the index: dropping deletes nothing.
    pub fn hand_over(&mut self) {
        self.segments.clear();
    }

    /// Starts putting a segment (at most two at a time).
    pub async fn put(&mut self, id: u64, parts: Vec<Bytes>) -> Result<(), StoreError> {
        while self.writing.len() >= 2 {
            joined(self.writing.join_next().await.expect("two writes in flight"))?;
        }
        self.segments.push(id);
        let blobs = self.blobs.clone();
        self.writing.spawn(async move { blobs.put_parts(&segment_key(id), parts).await });
        Ok(())
    }
}

fn joined(done: Result<Result<(), StoreError>, tokio::task::JoinError>) -> Result<(), StoreError> {
    done.map_err(|e| StoreError::Backend { at: "a segment write".into(), detail: e.to_string() })?
}

impl Drop for Written {
    fn drop(&mut self) {
        if self.segments.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let segments = std::mem::take(&mut self.segments);
        let mut writing = std::mem::take(&mut self.writing);
        let blobs = self.blobs.clone();
        // After the writes in flight have ended: a write landing after the delete would leave
        // its segment behind.
        runtime.spawn(async move {
            while writing.join_next().await.is_some() {}
            for id in segments {
                match blobs.delete(&segment_key(id)).await {
                    Ok(()) => tracing::debug!(segment = id, "deleted a segment of an abandoned upload"),
                    Err(e) => tracing::warn!(segment = id, "abandoned upload: {e} (the next start sweeps it)"),
                }
            }
        });
    }
}

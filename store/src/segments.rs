//! Blocks packed into large immutable segment objects, never one object per small block.
//!
//! A [`SegmentPacker`] appends blocks to an in-memory segment until it reaches the segment size
//! (32 MiB by default, like the PoR paper's ~50 MB chunks), and records each block's
//! [`Location`]. A write is two steps, in this order: put the sealed segments, then commit the
//! metadata (index entries, lists, roots) in one [`crate::MetaBatch`]. A crash between the two
//! leaves unreferenced segments (garbage for compaction), never an index entry pointing at
//! bytes that are not there.

use crate::{BlobStore, StoreError};
use bytes::Bytes;
use std::ops::Range;

/// Default size at which a segment is sealed.
pub const DEFAULT_SEGMENT_SIZE: usize = 32 << 20;

/// Where a block's bytes are: a range of one segment, and a checksum of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    pub segment: u64,
    pub offset: u64,
    pub len: u32,
    /// XXH3-64 of the block: catches torn and corrupted segments at the store, before any
    /// bytes are served. Accidents, not attacks: a lying provider is caught by the PDP tags and
    /// list proofs on the client, so the store's check can be a fast non-cryptographic hash
    /// (it runs on every read; BLAKE3 here cost a third of the local read rate).
    pub check: u64,
}

/// The checksum [`Location::check`] keeps for `data`: XXH3-64, seed 0. The `xxh3` crate picks
/// AVX2 at run time (about 40 GB/s here against 22 GB/s for an SSE2-only build), which matters
/// because every read of a block pays for it.
pub(crate) fn checksum(data: &[u8]) -> u64 {
    xxh3::hash64_with_seed(data, 0)
}

impl Location {
    pub const ENCODED_LEN: usize = 28;

    /// `segment:u64le || offset:u64le || len:u32le || check:u64le`.
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0u8; Self::ENCODED_LEN];
        out[..8].copy_from_slice(&self.segment.to_le_bytes());
        out[8..16].copy_from_slice(&self.offset.to_le_bytes());
        out[16..20].copy_from_slice(&self.len.to_le_bytes());
        out[20..].copy_from_slice(&self.check.to_le_bytes());
        out
    }

    /// `None` unless `bytes` is exactly one encoded location.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let b: &[u8; Self::ENCODED_LEN] = bytes.try_into().ok()?;
        Some(Location {
            segment: u64::from_le_bytes(b[..8].try_into().ok()?),
            offset: u64::from_le_bytes(b[8..16].try_into().ok()?),
            len: u32::from_le_bytes(b[16..20].try_into().ok()?),
            check: u64::from_le_bytes(b[20..].try_into().ok()?),
        })
    }

    fn range(&self) -> Range<u64> {
        self.offset..self.offset + u64::from(self.len)
    }
}

/// The blob key of a segment.
pub fn segment_key(segment: u64) -> String {
    format!("segments/{segment:016x}")
}

/// A sealed segment: its blocks' buffers, written as one object without being copied together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    parts: Vec<Bytes>,
    len: usize,
}

impl Segment {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The segment's bytes in one buffer.
    pub(crate) fn concat(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        self.parts.iter().for_each(|p| out.extend_from_slice(p));
        out
    }
}

impl From<Bytes> for Segment {
    fn from(bytes: Bytes) -> Self {
        Segment { len: bytes.len(), parts: vec![bytes] }
    }
}

/// Packs blocks into segments numbered from `first_segment` on.
#[derive(Debug)]
pub struct SegmentPacker {
    next: u64,
    size: usize,
    current: Segment,
    sealed: Vec<(u64, Segment)>,
}

impl SegmentPacker {
    pub fn new(first_segment: u64, segment_size: usize) -> Self {
        SegmentPacker {
            next: first_segment,
            size: segment_size.max(1),
            current: Segment::default(),
            sealed: Vec::new(),
        }
    }

    /// Appends a copy of a block; returns where it will be once the segments are written.
    pub fn add(&mut self, data: &[u8]) -> Location {
        self.add_shared(Bytes::copy_from_slice(data))
    }

    /// Appends a block without copying it (the segment keeps a reference to `data`).
    pub fn add_shared(&mut self, data: Bytes) -> Location {
        if !self.current.is_empty() && self.current.len + data.len() > self.size {
            self.seal();
        }
        let at = Location {
            segment: self.next,
            offset: self.current.len as u64,
            len: data.len() as u32,
            check: checksum(&data),
        };
        self.current.len += data.len();
        self.current.parts.push(data);
        at
    }

    fn seal(&mut self) {
        self.sealed.push((self.next, std::mem::take(&mut self.current)));
        self.next += 1;
    }

    /// The segments to put, and the first segment number of the next batch.
    pub fn finish(mut self) -> (Vec<(u64, Segment)>, u64) {
        if !self.current.is_empty() {
            self.seal();
        }
        (self.sealed, self.next)
    }
}

/// The (number, size) of each segment, as [`crate::record_segments`] takes them.
pub fn segment_sizes(segments: &[(u64, Segment)]) -> Vec<(u64, usize)> {
    segments.iter().map(|(id, s)| (*id, s.len())).collect()
}

/// Puts sealed segments (two at a time). Call before committing the metadata that refers to them.
pub async fn put_segments<B: BlobStore>(blobs: &B, segments: Vec<(u64, Segment)>) -> Result<(), StoreError> {
    use futures::StreamExt;
    let mut puts = futures::stream::iter(segments)
        .map(|(id, segment)| async move { blobs.put_parts(&segment_key(id), segment.parts).await })
        .buffer_unordered(2);
    while let Some(done) = puts.next().await {
        done?;
    }
    Ok(())
}

/// Reads one block: a ranged read of its segment, checked against the index's checksum. A
/// segment that is shorter than the index says (torn) or whose bytes changed is
/// [`StoreError::Corrupt`], and no bytes are returned.
pub async fn read_block<B: BlobStore>(blobs: &B, at: &Location) -> Result<Bytes, StoreError> {
    Ok(read_blocks(blobs, std::slice::from_ref(at)).await?.pop().expect("one block asked, one read"))
}

/// Longest single ranged read [`read_blocks`] makes.
const MAX_RUN: u64 = 8 << 20;

/// Reads many blocks, each checked like [`read_block`], with one ranged read per run of blocks
/// that lie back to back in one segment (a file written in one go reads in a few requests,
/// not one per block).
pub async fn read_blocks<B: BlobStore>(blobs: &B, locations: &[Location]) -> Result<Vec<Bytes>, StoreError> {
    let mut out = Vec::with_capacity(locations.len());
    let mut i = 0;
    while i < locations.len() {
        let first = locations[i];
        let mut end = i + 1;
        while end < locations.len() {
            let (prev, next) = (locations[end - 1], locations[end]);
            let contiguous = next.segment == first.segment && next.offset == prev.offset + u64::from(prev.len);
            if !contiguous || next.offset + u64::from(next.len) - first.offset > MAX_RUN {
                break;
            }
            end += 1;
        }
        let last = locations[end - 1];
        let run = Location { len: (last.offset + u64::from(last.len) - first.offset) as u32, ..first };
        let bytes = read_range(blobs, &run, &locations[i..end]).await?;
        for at in &locations[i..end] {
            let start = (at.offset - first.offset) as usize;
            let block = bytes.slice(start..start + at.len as usize);
            if checksum(&block) != at.check {
                return Err(corrupt(at, "checksum mismatch"));
            }
            out.push(block);
        }
        i = end;
    }
    Ok(out)
}

pub(crate) fn corrupt(at: &Location, detail: &str) -> StoreError {
    let key = if at.is_inline() { format!("inline segment {:016x}", at.segment) } else { segment_key(at.segment) };
    StoreError::Corrupt {
        at: format!("{key} bytes {}..{}", at.offset, at.offset + u64::from(at.len)),
        detail: detail.into(),
    }
}

/// The bytes of `run` (a range covering `blocks`), with torn and missing segments reported
/// as corruption of the first block concerned.
async fn read_range<B: BlobStore>(blobs: &B, run: &Location, blocks: &[Location]) -> Result<Bytes, StoreError> {
    match blobs.get_range(&segment_key(run.segment), run.range()).await {
        Ok(bytes) => Ok(bytes),
        Err(StoreError::BadRange { .. }) => Err(corrupt(&blocks[0], "segment shorter than its index (torn)")),
        Err(StoreError::NotFound { .. }) => Err(corrupt(&blocks[0], "segment named by the index is missing")),
        Err(e) => Err(e),
    }
}

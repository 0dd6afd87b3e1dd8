//! Blocks packed into large immutable segment objects, never one object per small block.
//!
//! A segment holds the bytes of many blocks back to back, then a table naming each of them
//! ([`table`]). Most segments are objects of the blob store (`segments/<id>`, sealed at
//! [`DEFAULT_SEGMENT_SIZE`], like the PoR paper's ~50 MB chunks). A small commit's segment is
//! kept in the metadata store instead (`iseg/<id>`, numbered with [`INLINE_BIT`] set): written
//! by the commit's own transaction, it costs no flush of its own and no tiny object on S3
//! (like RocksDB's BlobDB keeping values under `min_blob_size` in the LSM tree).
//!
//! A block's index entry holds its [`Location`]: the segment, the range, and a checksum that
//! every read checks.

pub(crate) mod table;

use crate::keys;
use crate::meta::MetaDb;
use crate::{BlobStore, MetaStore, ObjectBlobs, StoreError};
use bytes::Bytes;
use std::collections::HashMap;
use std::ops::Range;

/// Size at which a blob segment is sealed.
pub const DEFAULT_SEGMENT_SIZE: usize = 32 << 20;
/// Set in the number of a segment kept in the metadata store.
pub(crate) const INLINE_BIT: u64 = 1 << 63;
/// Largest upload whose blocks are kept in the metadata store.
pub(crate) const INLINE_MAX: usize = 256 << 10;

/// Where a block's bytes are: a range of one segment, and a checksum of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Location {
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
    pub fn to_bytes(self) -> [u8; Self::ENCODED_LEN] {
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

    /// Whether the block is in a segment kept in the metadata store.
    pub fn is_inline(&self) -> bool {
        self.segment & INLINE_BIT != 0
    }

    fn range(&self) -> Range<u64> {
        self.offset..self.offset + u64::from(self.len)
    }
}

/// The blob key of a segment.
pub(crate) fn segment_key(segment: u64) -> String {
    format!("segments/{segment:016x}")
}

/// The segment number of a blob key, if it is a segment's.
pub(crate) fn segment_of_key(key: &str) -> Option<u64> {
    let hex = key.strip_prefix("segments/")?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

/// Names a segment in messages.
pub(crate) fn segment_name(segment: u64) -> String {
    if segment & INLINE_BIT != 0 {
        format!("inline segment {:016x}", segment & !INLINE_BIT)
    } else {
        segment_key(segment)
    }
}

pub(crate) fn corrupt(at: &Location, detail: &str) -> StoreError {
    StoreError::Corrupt {
        at: format!("{} bytes {}..{}", segment_name(at.segment), at.offset, at.offset + u64::from(at.len)),
        detail: detail.into(),
    }
}

/// A whole segment object, from the blob store or (inline) the metadata store; `None` if it
/// is not there.
pub(crate) async fn read_segment(
    blobs: &ObjectBlobs,
    meta: &MetaDb,
    segment: u64,
) -> Result<Option<Bytes>, StoreError> {
    if segment & INLINE_BIT != 0 {
        return Ok(meta.get(&keys::inline_segment(segment))?.map(Bytes::from));
    }
    match blobs.get(&segment_key(segment)).await {
        Ok(bytes) => Ok(Some(bytes)),
        Err(StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Longest single ranged read [`read_blocks`] makes.
const MAX_RUN: u64 = 8 << 20;

/// Reads blocks wherever they are, each checked against its checksum, in the order asked. A
/// segment that is shorter than the index says (torn), missing, or whose bytes changed is
/// [`StoreError::Corrupt`], and no bytes are returned. Blocks that lie back to back in one blob
/// segment are read with one ranged read per run (a file written in one go reads in a few
/// requests, not one per block).
pub(crate) async fn read_blocks(
    blobs: &ObjectBlobs,
    meta: &MetaDb,
    locations: &[Location],
) -> Result<Vec<Bytes>, StoreError> {
    let in_blobs: Vec<Location> = locations.iter().filter(|l| !l.is_inline()).copied().collect();
    let mut from_blobs = read_blob_blocks(blobs, &in_blobs).await?.into_iter();
    let mut inline: HashMap<u64, Bytes> = HashMap::new();
    let mut out = Vec::with_capacity(locations.len());
    for at in locations {
        if !at.is_inline() {
            out.push(from_blobs.next().expect("one read per blob location"));
            continue;
        }
        let segment = match inline.entry(at.segment) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let bytes = meta.get(&keys::inline_segment(at.segment))?;
                e.insert(Bytes::from(bytes.ok_or_else(|| corrupt(at, "inline segment missing"))?))
            }
        };
        out.push(slice_checked(segment, at)?);
    }
    Ok(out)
}

/// The block at `at` within a whole segment's bytes, checked.
pub(crate) fn slice_checked(segment: &Bytes, at: &Location) -> Result<Bytes, StoreError> {
    let end = at.offset.checked_add(u64::from(at.len)).filter(|&e| e <= segment.len() as u64);
    let end = end.ok_or_else(|| corrupt(at, "segment shorter than its index (torn)"))?;
    let block = segment.slice(at.offset as usize..end as usize);
    if checksum(&block) != at.check {
        return Err(corrupt(at, "checksum mismatch"));
    }
    Ok(block)
}

async fn read_blob_blocks(blobs: &ObjectBlobs, locations: &[Location]) -> Result<Vec<Bytes>, StoreError> {
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
        let bytes = read_range(blobs, &run, &locations[i]).await?;
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

/// The bytes of `run`, with torn and missing segments reported as corruption of `first`.
async fn read_range(blobs: &ObjectBlobs, run: &Location, first: &Location) -> Result<Bytes, StoreError> {
    match blobs.get_range(&segment_key(run.segment), run.range()).await {
        Ok(bytes) => Ok(bytes),
        Err(StoreError::BadRange { .. }) => Err(corrupt(first, "segment shorter than its index (torn)")),
        Err(StoreError::NotFound { .. }) => Err(corrupt(first, "segment named by the index is missing")),
        Err(e) => Err(e),
    }
}

//! Segment bookkeeping and compaction.
//!
//! Every committed segment has an entry `seg/<id>` (its size) in the metadata store, written in
//! the same batch as the index entries that point into it ([`record_segments`]). Compaction
//! rewrites the live blocks of mostly-dead segments into new ones and commits the moved index
//! entries before it deletes anything, so a committed index never points at missing bytes; a
//! crash at any point leaves at worst unreferenced segment objects, which the next compaction
//! deletes. Compaction assumes it is the only writer (the provider runs it under its write
//! lock): a segment that is put but not yet committed looks like garbage to it.

use crate::segments::{put_segments, read_block, segment_key, segment_sizes, Location, SegmentPacker};
use crate::{BlobStore, MetaBatch, MetaStore, StoreError};
use std::collections::{BTreeMap, HashSet};

const NEXT_SEGMENT: &[u8] = b"next-segment";

fn seg_entry(id: u64) -> Vec<u8> {
    format!("seg/{id:016x}").into_bytes()
}

/// The number the next new segment gets.
pub fn next_segment(meta: &impl MetaStore) -> Result<u64, StoreError> {
    Ok(meta.get(NEXT_SEGMENT)?.and_then(|v| v.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0))
}

/// Adds the bookkeeping for freshly packed segments to the batch that commits their index.
/// `segments` are (number, size in bytes).
pub fn record_segments(batch: &mut MetaBatch, segments: &[(u64, usize)], next: u64) {
    for &(id, size) in segments {
        batch.put(seg_entry(id), (size as u64).to_le_bytes().to_vec());
    }
    batch.put(NEXT_SEGMENT, next.to_le_bytes().to_vec());
}

/// What a compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Compaction {
    pub rewritten_segments: usize,
    pub moved_blocks: usize,
    pub deleted_segments: usize,
}

/// Rewrites every segment whose live bytes are below `min_live` (a fraction) of its size, and
/// deletes segment objects that no committed entry names. `index_prefix` selects the index
/// entries (values are encoded [`Location`]s).
pub async fn compact<B: BlobStore>(
    blobs: &B,
    meta: &impl MetaStore,
    index_prefix: &[u8],
    min_live: f64,
    segment_size: usize,
) -> Result<Compaction, StoreError> {
    let corrupt = |key: &[u8]| StoreError::Corrupt {
        at: "metadata".into(),
        detail: format!("entry {} is not a location", String::from_utf8_lossy(key)),
    };
    let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
    for (key, value) in meta.scan(b"seg/")? {
        let id = std::str::from_utf8(&key[4..]).ok().and_then(|h| u64::from_str_radix(h, 16).ok());
        let size = value.try_into().ok().map(u64::from_le_bytes);
        match (id, size) {
            (Some(id), Some(size)) => sizes.insert(id, size),
            _ => return Err(corrupt(&key)),
        };
    }
    let mut live: BTreeMap<u64, Vec<(Vec<u8>, Location)>> = BTreeMap::new();
    for (key, value) in meta.scan(index_prefix)? {
        let at = Location::from_bytes(&value).ok_or_else(|| corrupt(&key))?;
        live.entry(at.segment).or_default().push((key, at));
    }
    let sparse: Vec<u64> = sizes
        .iter()
        .filter(|(id, size)| {
            let used: u64 = live.get(id).map_or(0, |v| v.iter().map(|(_, at)| u64::from(at.len)).sum());
            (used as f64) < min_live * (**size as f64)
        })
        .map(|(id, _)| *id)
        .collect();

    let mut done = Compaction::default();
    if !sparse.is_empty() {
        let mut packer = SegmentPacker::new(next_segment(meta)?, segment_size);
        let mut batch = MetaBatch::default();
        for id in &sparse {
            for (key, at) in live.get(id).into_iter().flatten() {
                let data = read_block(blobs, at).await?;
                batch.put(key.clone(), packer.add_shared(data).to_bytes().to_vec());
                done.moved_blocks += 1;
            }
            batch.delete(seg_entry(*id));
        }
        let (segments, next) = packer.finish();
        record_segments(&mut batch, &segment_sizes(&segments), next);
        put_segments(blobs, segments).await?;
        meta.commit(&batch)?;
        done.rewritten_segments = sparse.len();
    }

    // Only now that nothing committed names them, delete the old segments and any orphans.
    done.deleted_segments = sweep_orphans(blobs, meta).await?;
    Ok(done)
}

/// Deletes the segment objects that no committed entry names (an abandoned upload's, a
/// crash's, a compaction's leftovers); returns how many. Like [`compact`], it must be the only
/// writer: a segment put but not yet committed looks like an orphan to it (the provider sweeps
/// when it starts, before it serves).
pub async fn sweep_orphans<B: BlobStore>(blobs: &B, meta: &impl MetaStore) -> Result<usize, StoreError> {
    let named: HashSet<String> = meta
        .scan(b"seg/")?
        .iter()
        .filter_map(|(k, _)| std::str::from_utf8(&k[4..]).ok().and_then(|h| u64::from_str_radix(h, 16).ok()))
        .map(segment_key)
        .collect();
    let mut deleted = 0;
    for key in blobs.list("segments").await? {
        if !named.contains(&key) && key.len() == segment_key(0).len() {
            blobs.delete(&key).await?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

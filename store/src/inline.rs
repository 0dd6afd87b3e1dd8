//! Small segments kept in the metadata store instead of the blob store.
//!
//! A commit of a few small blocks (a 20 KB edit) would otherwise pay for two flushes in a
//! row: its segment's, then the metadata transaction's that indexes it. Kept in the metadata
//! store (`iseg/<id>`), the segment is written by that same transaction: one flush, and no
//! tiny object per commit on S3 (like RocksDB's BlobDB keeping values under `min_blob_size`
//! in the LSM tree). Such segments are numbered with [`INLINE_BIT`] set, so a [`Location`]
//! says where to read, and each belongs to one commit's blocks; its owner deletes it with the
//! last of them ([`delete_inline_segment`]).

use crate::segments::{checksum, corrupt};
use crate::{read_blocks, BlobStore, Location, MetaBatch, MetaStore, Segment, StoreError};
use bytes::Bytes;
use std::collections::HashMap;

/// Set in the number of a segment kept in the metadata store.
pub const INLINE_BIT: u64 = 1 << 63;
/// Largest commit whose blocks are kept in the metadata store.
pub const INLINE_MAX: usize = 256 << 10;

impl Location {
    /// Whether the block is in a segment kept in the metadata store.
    pub fn is_inline(&self) -> bool {
        self.segment & INLINE_BIT != 0
    }
}

fn inline_key(segment: u64) -> Vec<u8> {
    format!("iseg/{segment:016x}").into_bytes()
}

/// Adds segments packed with [`INLINE_BIT`] numbers to the batch that indexes their blocks.
pub fn put_inline_segments(batch: &mut MetaBatch, segments: &[(u64, Segment)]) {
    for (id, segment) in segments {
        debug_assert!(id & INLINE_BIT != 0, "an inline segment's number has the inline bit");
        batch.put(inline_key(*id), segment.concat());
    }
}

/// Deletes an inline segment, once no index entry names it.
pub fn delete_inline_segment(batch: &mut MetaBatch, segment: u64) {
    batch.delete(inline_key(segment));
}

/// Reads blocks wherever they are (blob segments or inline ones), each checked against its
/// checksum like [`crate::read_block`], in the order asked.
pub async fn read_stored_blocks<B: BlobStore>(
    blobs: &B,
    meta: &impl MetaStore,
    locations: &[Location],
) -> Result<Vec<Bytes>, StoreError> {
    if !locations.iter().any(Location::is_inline) {
        return read_blocks(blobs, locations).await;
    }
    let in_blobs: Vec<Location> = locations.iter().filter(|l| !l.is_inline()).copied().collect();
    let mut from_blobs = read_blocks(blobs, &in_blobs).await?.into_iter();
    let mut segments: HashMap<u64, Bytes> = HashMap::new();
    let mut out = Vec::with_capacity(locations.len());
    for at in locations {
        if !at.is_inline() {
            out.push(from_blobs.next().expect("one read per blob location"));
            continue;
        }
        let segment = match segments.entry(at.segment) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let bytes = meta.get(&inline_key(at.segment))?.ok_or_else(|| corrupt(at, "inline segment missing"))?;
                e.insert(Bytes::from(bytes))
            }
        };
        let end = at.offset.checked_add(u64::from(at.len)).filter(|&e| e <= segment.len() as u64);
        let end = end.ok_or_else(|| corrupt(at, "inline segment shorter than its index"))?;
        let block = segment.slice(at.offset as usize..end as usize);
        if checksum(&block) != at.check {
            return Err(corrupt(at, "checksum mismatch"));
        }
        out.push(block);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MetaDb, ObjectBlobs, SegmentPacker};

    #[tokio::test]
    async fn inline_blocks_read_back_checked_beside_blob_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = ObjectBlobs::local(&dir.path().join("blobs")).unwrap();
        let meta = MetaDb::open(&dir.path().join("meta.redb")).unwrap();
        let mut packer = SegmentPacker::new(7 | INLINE_BIT, INLINE_MAX);
        let (a, b) = (packer.add(b"first block"), packer.add(b"second"));
        let (segments, _) = packer.finish();
        let mut batch = MetaBatch::default();
        put_inline_segments(&mut batch, &segments);
        meta.commit(&batch).unwrap();
        let mut blob_packer = SegmentPacker::new(8, INLINE_MAX);
        let c = blob_packer.add(b"in a blob");
        crate::put_segments(&blobs, blob_packer.finish().0).await.unwrap();
        assert!(a.is_inline() && !c.is_inline());

        let got = read_stored_blocks(&blobs, &meta, &[b, c, a]).await.unwrap();
        assert_eq!(got, [&b"second"[..], b"in a blob", b"first block"]);

        // Damaged or missing inline bytes are corruption, never served.
        let mut batch = MetaBatch::default();
        batch.put(inline_key(a.segment), b"first blocK second".to_vec());
        meta.commit(&batch).unwrap();
        let err = read_stored_blocks(&blobs, &meta, &[a]).await.unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        let mut batch = MetaBatch::default();
        delete_inline_segment(&mut batch, a.segment);
        meta.commit(&batch).unwrap();
        let err = read_stored_blocks(&blobs, &meta, &[b]).await.unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    }
}

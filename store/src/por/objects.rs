//! A level or C in the blob store: its slots in segments (u64 little-endian, flat, at most
//! [`super::SEGMENT_BYTES`] each: large sequential objects, never one per slot) and its
//! sealed checksums in one object beside them (56 bytes each).
//!
//! Three ways to read: whole and strict (a rebuild's input: anything missing, short or not
//! a field element is an error), some slots and strict (an audit), and whole and lenient
//! (repair: a slot whose bytes are missing, short or not field elements is `None`, an
//! erasure to the decoder).

use super::names::Names;
use super::names::ObjectRef;
use crate::{BlobStore, ObjectBlobs, StoreError};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use std::collections::BTreeMap;
use std::ops::Range;
use vouch_core::por::checksum::{SealedChecksum, SEALED_LEN};
use vouch_core::por::field::P;

/// Requests in flight at once for one object.
const PARALLEL: usize = 8;

pub(crate) fn to_bytes(elements: &[u64]) -> Bytes {
    elements.iter().flat_map(|e| e.to_le_bytes()).collect::<Vec<u8>>().into()
}

/// The elements of `bytes` (a multiple of 8 long), or `None` if one is not below p.
pub(crate) fn elements(bytes: &[u8]) -> Option<Vec<u64>> {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .map(|e| (e < P).then_some(e))
        .collect()
}

fn corrupt(key: &str, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt { at: key.to_string(), detail: detail.into() }
}

/// Puts an object: its segments, then its sealed checksums.
pub(crate) async fn put(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
    slots: &[u64],
    sealed: &[SealedChecksum],
    width: usize,
) -> Result<(), StoreError> {
    put_segments(blobs, names, object, slots, width).await?;
    put_sealed(blobs, names, object, sealed).await
}

/// Puts an object's sealed checksums alone (a level being built: its segments come later).
pub(crate) async fn put_sealed(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
    sealed: &[SealedChecksum],
) -> Result<(), StoreError> {
    let sealed: Vec<u8> = sealed.iter().flat_map(|s| s.to_bytes()).collect();
    blobs.put(&names.sealed(object), sealed.into()).await
}

/// Puts segment `number` of an object, whole (`slots` holds exactly its slots).
pub(crate) async fn put_segment(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
    number: u64,
    slots: &[u64],
) -> Result<(), StoreError> {
    blobs.put(&names.segment(object, number), to_bytes(slots)).await
}

/// Puts an object's segments alone: a level a build consumes, which no audit reads whole
/// (its sealed checksums are not needed, and a level built and consumed in one batch has none).
pub(crate) async fn put_segments(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
    slots: &[u64],
    width: usize,
) -> Result<(), StoreError> {
    futures::stream::iter(0..object.segments())
        .map(|number| {
            let range = object.segment_slots(number);
            put_segment(blobs, names, object, number, &slots[range.start as usize * width..range.end as usize * width])
        })
        .buffer_unordered(PARALLEL)
        .try_collect::<()>()
        .await
}

/// Removes an object's segments and sealed checksums (missing ones are fine).
pub(crate) async fn delete(blobs: &ObjectBlobs, names: &Names, object: &ObjectRef) -> Result<(), StoreError> {
    let keys = (0..object.segments()).map(|n| names.segment(object, n)).chain([names.sealed(object)]);
    futures::stream::iter(keys)
        .map(|key| async move { blobs.delete(&key).await })
        .buffer_unordered(PARALLEL)
        .try_collect()
        .await
}

pub(crate) async fn read_sealed(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
) -> Result<Vec<SealedChecksum>, StoreError> {
    let key = names.sealed(object);
    let bytes = blobs.get(&key).await?;
    if bytes.len() as u64 != object.slots * SEALED_LEN as u64 {
        return Err(corrupt(&key, format!("{} bytes for {} sealed checksums", bytes.len(), object.slots)));
    }
    Ok(bytes.chunks_exact(SEALED_LEN).map(|c| SealedChecksum::from_bytes(c.try_into().expect("56 bytes"))).collect())
}

/// Segment `number` whole; its length must be exactly its slots'.
async fn segment_strict(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
    number: u64,
    width: usize,
) -> Result<Vec<u64>, StoreError> {
    let key = names.segment(object, number);
    let bytes = blobs.get(&key).await?;
    let range = object.segment_slots(number);
    let want = (range.end - range.start) as usize * width * 8;
    if bytes.len() != want {
        return Err(corrupt(&key, format!("{} bytes, not {want}", bytes.len())));
    }
    elements(&bytes).ok_or_else(|| corrupt(&key, "an element is not below p"))
}

/// All of an object's slots, flat; anything missing, short or not field elements is an error.
pub(crate) async fn read_whole(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
    width: usize,
) -> Result<Vec<u64>, StoreError> {
    let parts: Vec<Vec<u64>> = futures::stream::iter(0..object.segments())
        .map(|number| segment_strict(blobs, names, object, number, width))
        .buffered(PARALLEL)
        .try_collect()
        .await?;
    Ok(parts.concat())
}

/// Slots `indices` (each below `object.slots`), in that order. A segment holding many of them
/// is read whole (one request instead of many: small levels, and audits that pick most
/// slots); otherwise each slot is a ranged read.
pub(crate) async fn read_some(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
    width: usize,
    indices: &[u64],
) -> Result<Vec<Vec<u64>>, StoreError> {
    let slot_bytes = width as u64 * 8;
    let mut by_segment: BTreeMap<u64, Vec<(usize, u64)>> = BTreeMap::new();
    for (at, &index) in indices.iter().enumerate() {
        by_segment.entry(index / object.per_segment).or_default().push((at, index));
    }
    let reads = by_segment.into_iter().map(|(number, wanted)| async move {
        let range = object.segment_slots(number);
        let mut out = Vec::with_capacity(wanted.len());
        if wanted.len() as u64 * 4 >= range.end - range.start {
            let segment = segment_strict(blobs, names, object, number, width).await?;
            for (at, index) in wanted {
                let from = (index - range.start) as usize * width;
                out.push((at, segment[from..from + width].to_vec()));
            }
        } else {
            let key = names.segment(object, number);
            for (at, index) in wanted {
                let from = (index - range.start) * slot_bytes;
                let bytes = blobs.get_range(&key, from..from + slot_bytes).await?;
                out.push((at, elements(&bytes).ok_or_else(|| corrupt(&key, "an element is not below p"))?));
            }
        }
        Ok::<_, StoreError>(out)
    });
    let parts: Vec<Vec<(usize, Vec<u64>)>> =
        futures::stream::iter(reads).buffer_unordered(PARALLEL).try_collect().await?;
    let mut slots: Vec<(usize, Vec<u64>)> = parts.into_iter().flatten().collect();
    slots.sort_unstable_by_key(|(at, _)| *at);
    Ok(slots.into_iter().map(|(_, slot)| slot).collect())
}

/// Slots `range` of an object, flat; anything missing, short or not field elements is an error.
pub(crate) async fn read_range(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
    width: usize,
    range: Range<u64>,
) -> Result<Vec<u64>, StoreError> {
    let want = range.end.min(object.slots).saturating_sub(range.start) as usize;
    let slots = read_lenient(blobs, names, object, width, range).await?;
    if slots.len() != want || slots.iter().any(Option::is_none) {
        return Err(corrupt(&names.group(object), "a slot a rebuild reads is missing or damaged"));
    }
    Ok(slots.into_iter().flatten().flatten().collect())
}

/// Slots `range` of an object as stored: `None` for each whose bytes are missing, cut short
/// or no field elements (what repair decodes around). Other failures (an unreachable store)
/// are errors: they say nothing about the bytes. Only the segments the range touches are
/// read, and of each only the range's bytes.
pub(crate) async fn read_lenient(
    blobs: &ObjectBlobs,
    names: &Names,
    object: &ObjectRef,
    width: usize,
    range: Range<u64>,
) -> Result<Vec<Option<Vec<u64>>>, StoreError> {
    let slot_bytes = width as u64 * 8;
    let range = range.start.min(object.slots)..range.end.min(object.slots);
    if range.is_empty() {
        return Ok(Vec::new());
    }
    let segments = range.start / object.per_segment..=(range.end - 1) / object.per_segment;
    let pages: Vec<Vec<Option<Vec<u64>>>> = futures::stream::iter(segments)
        .map(|number| {
            let range = range.clone();
            async move {
                let held = object.segment_slots(number);
                let (from, to) = (range.start.max(held.start), range.end.min(held.end));
                let bytes = (from - held.start) * slot_bytes..(to - held.start) * slot_bytes;
                let key = names.segment(object, number);
                let lost = |e: &StoreError| {
                    matches!(e, StoreError::NotFound { .. } | StoreError::BadRange { .. } | StoreError::Corrupt { .. })
                };
                let bytes = match blobs.get_range(&key, bytes.clone()).await {
                    Ok(page) => page,
                    // Cut short: what is left of the page.
                    Err(StoreError::BadRange { .. }) => match blobs.get(&key).await {
                        Ok(all) => {
                            let end = |at: u64| (at as usize).min(all.len());
                            all.slice(end(bytes.start)..end(bytes.end))
                        }
                        Err(e) if lost(&e) => Bytes::new(),
                        Err(e) => return Err(e),
                    },
                    Err(e) if lost(&e) => Bytes::new(),
                    Err(e) => return Err(e),
                };
                let slot_bytes = slot_bytes as usize;
                let slot = |i: usize| bytes.get(i * slot_bytes..(i + 1) * slot_bytes).and_then(elements);
                Ok((0..(to - from) as usize).map(slot).collect())
            }
        })
        .buffered(PARALLEL)
        .try_collect()
        .await?;
    Ok(pages.concat())
}

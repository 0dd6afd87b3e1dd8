//! U in the metadata store: one entry per written slot (its elements, little-endian) and one
//! per sealed checksum, beside the state record, so that a batch's writes to U commit with the
//! state that follows them. A slot never written has no entries and reads as zeros. A slot
//! whose last write was ⊥ also has an entry in the free index, which is what the provider
//! names when a client asks for free slots (the client checks each against U's checksums).

use super::error::PorStoreError;
use super::names::Names;
use super::objects::{elements, to_bytes};
use crate::meta::MetaDb;
use crate::{MetaBatch, MetaStore, StoreError};
use vouch_core::por::checksum::{SealedChecksum, SEALED_LEN};
use vouch_core::por::heap::is_deleted_slot;

/// Puts slot `index`, and keeps the free index in step with it.
pub(crate) fn put_slot(batch: &mut MetaBatch, names: &Names, index: u64, slot: &[u64]) {
    batch.put(names.raw(index), to_bytes(slot).to_vec());
    match is_deleted_slot(index, slot) {
        true => batch.put(names.free(index), Vec::new()),
        false => batch.delete(names.free(index)),
    };
}

/// Runs of U's ⊥ slots below `below`, ascending, as `(first, count)`: at most `most_runs`
/// runs, and no more once they hold `most_slots` slots.
pub(crate) fn free_runs(
    meta: &MetaDb,
    names: &Names,
    below: u64,
    most_slots: u64,
    most_runs: usize,
) -> Result<Vec<(u64, u64)>, PorStoreError> {
    let prefix = names.free_prefix();
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for (total, (key, _)) in (0u64..).zip(meta.scan(&prefix)?) {
        let Some(index) = Names::parse_index(&prefix, &key) else {
            let at = String::from_utf8_lossy(&key).into_owned();
            return Err(PorStoreError::CorruptState { at, detail: "not an index of U's free slots".into() });
        };
        if index >= below || total >= most_slots {
            break;
        }
        let open = runs.len();
        match runs.last_mut() {
            Some((first, count)) if *first + *count == index => *count += 1,
            _ if open < most_runs => runs.push((index, 1)),
            _ => break,
        }
    }
    Ok(runs)
}

pub(crate) fn put_sealed(batch: &mut MetaBatch, names: &Names, index: u64, sealed: &SealedChecksum) {
    batch.put(names.raw_sealed(index), sealed.to_bytes().to_vec());
}

/// U's sealed checksums (`None`: never written), for a U of `capacity` slots.
pub(crate) fn load_sealed(
    meta: &MetaDb,
    names: &Names,
    capacity: u64,
) -> Result<Vec<Option<SealedChecksum>>, PorStoreError> {
    let prefix = names.raw_sealed_prefix();
    let mut out = vec![None; capacity as usize];
    for (key, value) in meta.scan(&prefix)? {
        let index = Names::parse_index(&prefix, &key).filter(|&i| i < capacity);
        let bytes: Option<[u8; SEALED_LEN]> = value.as_slice().try_into().ok();
        match (index, bytes) {
            (Some(i), Some(bytes)) => out[i as usize] = Some(SealedChecksum::from_bytes(bytes)),
            _ => {
                let at = String::from_utf8_lossy(&key).into_owned();
                return Err(PorStoreError::CorruptState { at, detail: "not a sealed checksum of a slot of U".into() });
            }
        }
    }
    Ok(out)
}

/// What U holds for a slot.
pub(crate) enum RawSlot {
    Slot(Vec<u64>),
    /// No entry: a slot never written, unless its sealed checksum says otherwise.
    Absent,
    /// An entry of the wrong length or with an element not below p.
    Damaged,
}

/// The entries of slots `indices`, read together.
pub(crate) fn get_slots(
    meta: &MetaDb,
    names: &Names,
    width: usize,
    indices: &[u64],
) -> Result<Vec<RawSlot>, StoreError> {
    let keys: Vec<Vec<u8>> = indices.iter().map(|&i| names.raw(i)).collect();
    let decode = |value: Option<Vec<u8>>| match value {
        None => RawSlot::Absent,
        Some(v) if v.len() == width * 8 => elements(&v).map_or(RawSlot::Damaged, RawSlot::Slot),
        Some(_) => RawSlot::Damaged,
    };
    Ok(meta.get_many(&keys)?.into_iter().map(decode).collect())
}

//! Where the repository keeps each thing in the metadata store.
//!
//! * `r/<key>`: a caller's record (see [`crate::Repository::record`]);
//! * `b/<owner_len:u16be><owner><id:u64be>`: a block's index entry, its location
//!   ([`crate::segments::Location`]) then its tag; the owner's length first, so that one
//!   owner's prefix never covers another owner's blocks;
//! * `seg/<id:016x>`: a committed segment's size and live bytes and blocks ([`SegmentInfo`]);
//! * `iseg/<id:016x>`: an inline segment's bytes;
//! * `next-segment`: the number the next new segment gets;
//! * `root/`, `lchunk/`, `lref/`, `ldep/`, `lhide/`: saved lists (see `crate::lists`);
//! * `store-format`: the layout of all this, checked at open;
//! * `por/<owner's hash>/...`: PoR logs' state records and raw buffers (see `crate::por`).

use crate::StoreError;

pub(crate) const RECORDS: &[u8] = b"r/";
pub(crate) const BLOCKS: &[u8] = b"b/";
pub(crate) const SEGMENTS: &[u8] = b"seg/";
pub(crate) const NEXT_SEGMENT: &[u8] = b"next-segment";
pub(crate) const STORE_FORMAT: &[u8] = b"store-format";
/// Segments with tables, block index entries keyed by owner, records under `r/`.
pub(crate) const FORMAT: &[u8] = b"vouch store 1";

pub(crate) fn record(key: &[u8]) -> Vec<u8> {
    [RECORDS, key].concat()
}

pub(crate) fn block_prefix(owner: &[u8]) -> Result<Vec<u8>, StoreError> {
    let len = u16::try_from(owner.len())
        .map_err(|_| StoreError::InvalidKey { key: format!("a block owner of {} bytes", owner.len()) })?;
    let mut key = Vec::with_capacity(BLOCKS.len() + 2 + owner.len() + 8);
    key.extend_from_slice(BLOCKS);
    key.extend_from_slice(&len.to_be_bytes());
    key.extend_from_slice(owner);
    Ok(key)
}

pub(crate) fn block(owner: &[u8], id: u64) -> Result<Vec<u8>, StoreError> {
    let mut key = block_prefix(owner)?;
    key.extend_from_slice(&id.to_be_bytes());
    Ok(key)
}

/// The owner and id of a block index key.
pub(crate) fn parse_block(key: &[u8]) -> Option<(&[u8], u64)> {
    let rest = key.strip_prefix(BLOCKS)?;
    let len = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?) as usize;
    let owner = rest.get(2..2 + len)?;
    let id = u64::from_be_bytes(rest.get(2 + len..)?.try_into().ok()?);
    Some((owner, id))
}

pub(crate) fn segment(id: u64) -> Vec<u8> {
    format!("seg/{id:016x}").into_bytes()
}

pub(crate) fn parse_segment(key: &[u8]) -> Option<u64> {
    let hex = std::str::from_utf8(key.strip_prefix(SEGMENTS)?).ok()?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

pub(crate) fn inline_segment(id: u64) -> Vec<u8> {
    format!("iseg/{id:016x}").into_bytes()
}

/// A committed segment's bookkeeping: its object's size, and how much of it the index still
/// names. Kept up to date by every commit, so that choosing what to compact reads these
/// entries, not the whole index. The counts can only err high (a caller indexing an id of an
/// owner a second time does not uncount the first; the provider never does): a segment is
/// then compacted late, never early, for what moves or goes is decided by the index itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SegmentInfo {
    pub size: u64,
    pub live_bytes: u64,
    pub live_blocks: u64,
}

impl SegmentInfo {
    pub fn to_bytes(self) -> Vec<u8> {
        [self.size, self.live_bytes, self.live_blocks].iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let field = |i: usize| Some(u64::from_le_bytes(bytes.get(i * 8..i * 8 + 8)?.try_into().ok()?));
        (bytes.len() == 24).then_some(())?;
        Some(SegmentInfo { size: field(0)?, live_bytes: field(1)?, live_blocks: field(2)? })
    }

    /// Bytes no index entry names any more.
    pub fn garbage(&self) -> u64 {
        self.size.saturating_sub(self.live_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_keys_round_trip_and_one_owner_never_prefixes_another() {
        let key = block(b"alice/f", 42).unwrap();
        assert_eq!(parse_block(&key), Some((&b"alice/f"[..], 42)));
        assert!(key.starts_with(&block_prefix(b"alice/f").unwrap()));
        assert!(!block(b"alice/f/x", 1).unwrap().starts_with(&block_prefix(b"alice/f").unwrap()));
        assert!(block(&vec![0; 70_000], 1).is_err());
        assert_eq!(parse_segment(&segment(0xabc)), Some(0xabc));
        let info = SegmentInfo { size: 10, live_bytes: 4, live_blocks: 2 };
        assert_eq!(SegmentInfo::from_bytes(&info.to_bytes()), Some(info));
        assert_eq!(info.garbage(), 6);
    }
}

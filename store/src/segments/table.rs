//! The table at the end of every segment: which blocks it holds, whose they are, where.
//!
//! A segment object is `data || table || trailer`. The data region is the blocks' bytes back
//! to back (a block's offset counts from the segment's first byte); the table names each
//! block; the trailer finds and checks the table:
//!
//! * table: `owner_count:u32le || (len:u16le || owner)* || block_count:u32le ||
//!   (owner:u32le || id:u64le || offset:u64le || len:u32le || check:u64le || tag_len:u16le
//!   || tag)*` (`owner` indexes the owners listed first: a segment of one upload names its
//!   owner once);
//! * trailer ([`TRAILER`] bytes): `table_len:u64le || xxh3(table):u64le || magic`, the magic
//!   carrying the format's version.
//!
//! With it a segment says everything its index entries say, so the index can be checked
//! against the segments and rebuilt from them.

use bytes::Bytes;
use std::collections::HashMap;
use vouch_core::codec::Reader;

const MAGIC: &[u8; 8] = b"vouchSG1";
/// Bytes of the trailer.
pub(crate) const TRAILER: usize = 24;
/// Longest tag a table holds (an owner's length is bounded by its index key's).
pub(crate) const MAX_TAG: usize = u16::MAX as usize;

/// One block as its segment's table names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableBlock {
    pub owner: Vec<u8>,
    pub id: u64,
    pub offset: u64,
    pub len: u32,
    pub check: u64,
    pub tag: Vec<u8>,
}

/// A segment being packed: its blocks' buffers (never copied together) and its table.
#[derive(Debug, Default)]
pub(crate) struct SegmentBuilder {
    parts: Vec<Bytes>,
    len: usize,
    owners: Vec<Vec<u8>>,
    owner_index: HashMap<Vec<u8>, u32>,
    /// Encoded table entries.
    entries: Vec<u8>,
    blocks: u32,
}

impl SegmentBuilder {
    /// Bytes of block data so far.
    pub fn data_len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.blocks == 0
    }

    /// Appends a block (the caller checked the owner's and tag's lengths); returns its offset.
    pub fn add(&mut self, owner: &[u8], id: u64, tag: &[u8], data: Bytes, check: u64) -> u64 {
        let offset = self.len as u64;
        let next = self.owners.len() as u32;
        let index = *self.owner_index.entry(owner.to_vec()).or_insert_with(|| {
            self.owners.push(owner.to_vec());
            next
        });
        let e = &mut self.entries;
        e.extend_from_slice(&index.to_le_bytes());
        e.extend_from_slice(&id.to_le_bytes());
        e.extend_from_slice(&offset.to_le_bytes());
        e.extend_from_slice(&(data.len() as u32).to_le_bytes());
        e.extend_from_slice(&check.to_le_bytes());
        e.extend_from_slice(&(tag.len() as u16).to_le_bytes());
        e.extend_from_slice(tag);
        self.len += data.len();
        self.blocks += 1;
        self.parts.push(data);
        offset
    }

    /// The whole object: the blocks' buffers, then the table and trailer in one more buffer.
    pub fn seal(self) -> (Vec<Bytes>, usize) {
        let mut table =
            Vec::with_capacity(8 + self.entries.len() + self.owners.iter().map(|o| 2 + o.len()).sum::<usize>());
        table.extend_from_slice(&(self.owners.len() as u32).to_le_bytes());
        for owner in &self.owners {
            table.extend_from_slice(&(owner.len() as u16).to_le_bytes());
            table.extend_from_slice(owner);
        }
        table.extend_from_slice(&self.blocks.to_le_bytes());
        table.extend_from_slice(&self.entries);
        let check = xxh3::hash64_with_seed(&table, 0);
        table.extend_from_slice(&((table.len()) as u64).to_le_bytes());
        table.extend_from_slice(&check.to_le_bytes());
        table.extend_from_slice(MAGIC);
        let size = self.len + table.len();
        let mut parts = self.parts;
        parts.push(Bytes::from(table));
        (parts, size)
    }
}

/// A segment's table, read back: the length of its data region and its blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SegmentTable {
    pub data_len: u64,
    pub blocks: Vec<TableBlock>,
}

impl SegmentTable {
    /// Reads the table of a whole segment object; why not, if it is damaged or not a segment.
    pub fn parse(object: &[u8]) -> Result<SegmentTable, String> {
        let size = object.len();
        let trailer = size.checked_sub(TRAILER).map(|at| &object[at..]).ok_or("shorter than a segment's trailer")?;
        if &trailer[16..] != MAGIC {
            return Err("no segment trailer (not a segment of this format)".into());
        }
        let table_len = u64::from_le_bytes(trailer[..8].try_into().expect("8 bytes"));
        let check = u64::from_le_bytes(trailer[8..16].try_into().expect("8 bytes"));
        let data_len = (size - TRAILER)
            .checked_sub(usize::try_from(table_len).map_err(|_| "table length out of range")?)
            .ok_or("table longer than the segment")?;
        let table = &object[data_len..size - TRAILER];
        if xxh3::hash64_with_seed(table, 0) != check {
            return Err("table checksum mismatch".into());
        }
        let mut r = Reader::new(table);
        let bad = || "malformed table".to_string();
        let owner_count = r.u32_le().map_err(|_| bad())? as usize;
        let mut owners = Vec::with_capacity(owner_count.min(table.len() / 2));
        for _ in 0..owner_count {
            let n = r.u16_le().map_err(|_| bad())? as usize;
            owners.push(r.bytes(n).map_err(|_| bad())?.to_vec());
        }
        let count = r.u32_le().map_err(|_| bad())? as usize;
        let mut blocks = Vec::with_capacity(count.min(table.len() / 34));
        for _ in 0..count {
            let owner = owners.get(r.u32_le().map_err(|_| bad())? as usize).ok_or("owner index out of range")?.clone();
            let id = r.u64_le().map_err(|_| bad())?;
            let offset = r.u64_le().map_err(|_| bad())?;
            let len = r.u32_le().map_err(|_| bad())?;
            let check = r.u64_le().map_err(|_| bad())?;
            let n = r.u16_le().map_err(|_| bad())? as usize;
            let tag = r.bytes(n).map_err(|_| bad())?.to_vec();
            if offset.checked_add(u64::from(len)).is_none_or(|end| end > data_len as u64) {
                return Err(format!("block {id} lies outside the data region"));
            }
            blocks.push(TableBlock { owner, id, offset, len, check, tag });
        }
        if !r.is_empty() {
            return Err("bytes after the table's last entry".into());
        }
        Ok(SegmentTable { data_len: data_len as u64, blocks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concat(parts: &[Bytes]) -> Vec<u8> {
        parts.iter().flat_map(|p| p.iter().copied()).collect()
    }

    #[test]
    fn a_table_round_trips_and_any_damage_to_it_is_refused() {
        let mut b = SegmentBuilder::default();
        assert_eq!(b.add(b"alice/f1", 7, b"tag-7", Bytes::from_static(b"hello"), 11), 0);
        assert_eq!(b.add(b"bob/f2", 1, b"", Bytes::from_static(b"world!"), 12), 5);
        assert_eq!(b.add(b"alice/f1", 8, &[9; 40], Bytes::from_static(b"x"), 13), 11);
        let (parts, size) = b.seal();
        let object = concat(&parts);
        assert_eq!(object.len(), size);
        assert_eq!(&object[..12], b"helloworld!x", "the data region is the blocks back to back");
        let table = SegmentTable::parse(&object).unwrap();
        assert_eq!(table.data_len, 12);
        let ids: Vec<(&[u8], u64, u64, u32, u64)> =
            table.blocks.iter().map(|t| (&t.owner[..], t.id, t.offset, t.len, t.check)).collect();
        assert_eq!(ids, [(&b"alice/f1"[..], 7, 0, 5, 11), (b"bob/f2", 1, 5, 6, 12), (b"alice/f1", 8, 11, 1, 13)]);
        assert_eq!(table.blocks[2].tag, vec![9; 40]);

        // Any flipped byte in the table or trailer, or a cut anywhere, is refused; a flipped
        // byte in the data is not the table's business (the index's checksums catch it).
        for at in 12..object.len() {
            let mut damaged = object.clone();
            damaged[at] ^= 0x01;
            assert!(SegmentTable::parse(&damaged).is_err(), "flip at {at}");
        }
        for cut in 0..object.len() {
            assert!(SegmentTable::parse(&object[..cut]).is_err(), "cut at {cut}");
        }
        assert!(SegmentTable::parse(b"not a segment at all, just some bytes").is_err());
    }

    #[test]
    fn an_empty_segment_has_an_empty_table() {
        let (parts, size) = SegmentBuilder::default().seal();
        let table = SegmentTable::parse(&concat(&parts)).unwrap();
        assert_eq!((table.data_len, table.blocks.len(), size), (0, 0, TRAILER + 8));
    }
}

//! A version's PoR copy, pure: its FlexList blocks, each with the nonce and tag that make its
//! leaf, laid in consecutive fresh slots of U ([`vouch_core::por::heap`]); and the check that
//! what the provider serves from U is exactly that version.
//!
//! Each block is one heap block whose payload is `len:u32 || nonce:u64 || tag_len:u16 || tag
//! || data` (`len`: the bytes after it), so the blocks of a run of slots are found from the
//! slots alone. Nothing the provider says about the copy is trusted: the label that tells
//! where it is (`vouch_core::por::layout`) only says where to look. The slots are checked against U's root
//! (`verify_read`), then every block's tag under the client's key, then the FlexList root
//! and length the blocks make against the version record, which the namespace root proves.

use super::heap::{decode_slot, join_block, slots_for, split_block, Slot, SlotError, SlotKind, SLOT_WIDTH};
use crate::flexlist::{Block, BuildError, FlexList};
use crate::hash;
use crate::namespace::VersionRecord;
use crate::pdp::{FileId, Tagger};
use bytes::Bytes;

/// Why the blocks of a copy are refused: every one is the provider's doing (the slots were
/// checked against U's root before).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyError {
    #[error("slot {0} holds no data")]
    NoData(u64),
    #[error("slot {index}: {error}")]
    Slot { index: u64, error: SlotError },
    #[error("slot {0} starts no block")]
    NoBlock(u64),
    #[error("the block at slot {0} runs past the copy's end")]
    PastEnd(u64),
    #[error("the block at slot {0} is malformed")]
    Malformed(u64),
    #[error("block {0} of the copy does not match its tag")]
    Tag(usize),
    #[error("the copy's blocks make no list: {0}")]
    NoList(BuildError),
    #[error("the copy's blocks are not version {0} (another root or length)")]
    NotTheVersion(u64),
}

/// One block of a version as its PoR copy holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaggedData {
    pub nonce: u64,
    pub tag: Vec<u8>,
    pub data: Bytes,
}

/// Files whose ids start so have a PoR copy of every version: the id is under the namespace
/// root, so the provider cannot make a client forget that a copy is owed.
const POR_FILE_MARK: [u8; 4] = *b"PoR\x01";

/// A file id made of `random` bytes, marked for PoR or not: `None` when unmarked and `random`
/// starts with the mark (draw again).
pub fn file_id(random: [u8; 16], por: bool) -> Option<FileId> {
    let mut id = random;
    if por {
        id[..4].copy_from_slice(&POR_FILE_MARK);
    }
    (por || id[..4] != POR_FILE_MARK).then_some(FileId(id))
}

pub fn is_por_file(file: &FileId) -> bool {
    file.0[..4] == POR_FILE_MARK
}

/// The label's key of a version: its file id, then its number.
pub fn label_key(record: &VersionRecord) -> Vec<u8> {
    [&record.file.0[..], &record.number.to_le_bytes()].concat()
}

/// The slots a block of `tag_len` tag bytes and `data_len` data bytes takes in a copy.
pub fn block_slots(tag_len: usize, data_len: u64) -> u64 {
    slots_for(PAYLOAD_HEAD as u64 + tag_len as u64 + data_len)
}

/// `len:u32 || nonce:u64 || tag_len:u16` before a block's tag and data.
const PAYLOAD_HEAD: usize = 4 + 8 + 2;

fn payload(block: &TaggedData) -> Vec<u8> {
    let rest = PAYLOAD_HEAD - 4 + block.tag.len() + block.data.len();
    let mut out = Vec::with_capacity(4 + rest);
    out.extend_from_slice(&(rest as u32).to_le_bytes());
    out.extend_from_slice(&block.nonce.to_le_bytes());
    out.extend_from_slice(&(block.tag.len() as u16).to_le_bytes());
    out.extend_from_slice(&block.tag);
    out.extend_from_slice(&block.data);
    out
}

/// The slots each of `blocks` takes ([`block_slots`]).
pub fn slot_counts(blocks: &[TaggedData]) -> Vec<u64> {
    blocks.iter().map(|b| block_slots(b.tag.len(), b.data.len() as u64)).collect()
}

/// The U indices and slots (flat, in the same order) of `blocks` written from `starts` on,
/// block by block.
pub fn lay_out(starts: &[u64], blocks: &[TaggedData]) -> (Vec<u64>, Vec<u64>) {
    let (mut indices, mut slots) = (Vec::new(), Vec::new());
    for (&at, block) in starts.iter().zip(blocks) {
        let bytes = payload(block);
        slots.extend(split_block(at, &bytes));
        indices.extend(at..at + slots_for(bytes.len() as u64));
    }
    (indices, slots)
}

/// The blocks in U's slots `first..` (flat, as read and checked against U's root).
pub fn parse(first: u64, slots: &[u64]) -> Result<Vec<TaggedData>, CopyError> {
    let count = (slots.len() / SLOT_WIDTH) as u64;
    let mut blocks = Vec::new();
    let mut at = 0u64;
    while at < count {
        let index = first + at;
        let start = (at as usize) * SLOT_WIDTH;
        let head = match decode_slot(&slots[start..start + SLOT_WIDTH], Some(index)) {
            Ok(Slot::Written { kind: SlotKind::Data, payload, .. }) => payload,
            Ok(_) => return Err(CopyError::NoData(index)),
            Err(error) => return Err(CopyError::Slot { index, error }),
        };
        let rest = head.get(..4).ok_or(CopyError::NoBlock(index))?;
        let len = 4 + u64::from(u32::from_le_bytes(rest.try_into().expect("4 bytes")));
        let n = slots_for(len);
        if at + n > count {
            return Err(CopyError::PastEnd(index));
        }
        let end = start + n as usize * SLOT_WIDTH;
        let bytes = join_block(index, len, &slots[start..end]).map_err(|error| CopyError::Slot { index, error })?;
        blocks.push(unpack(&bytes[4..]).ok_or(CopyError::Malformed(index))?);
        at += n;
    }
    Ok(blocks)
}

/// Where the blocks from slot `head` on start and how many slots each takes, walking their
/// first slots through `slots` (U's slots `first..`, read and checked against U's root);
/// also the first slot past the last block found, where the walk goes on (it may be past
/// `slots`). `head` must start a block.
pub fn block_spans(first: u64, slots: &[u64], mut head: u64) -> Result<(Vec<(u64, u64)>, u64), CopyError> {
    let end = first + (slots.len() / SLOT_WIDTH) as u64;
    let mut spans = Vec::new();
    while head >= first && head < end {
        let start = (head - first) as usize * SLOT_WIDTH;
        let len = match decode_slot(&slots[start..start + SLOT_WIDTH], Some(head)) {
            Ok(Slot::Written { kind: SlotKind::Data, payload, .. }) if payload.len() >= 4 => {
                4 + u64::from(u32::from_le_bytes(payload[..4].try_into().expect("4 bytes")))
            }
            _ => return Err(CopyError::NoBlock(head)),
        };
        spans.push((head, slots_for(len)));
        head += slots_for(len);
    }
    Ok((spans, head))
}

fn unpack(bytes: &[u8]) -> Option<TaggedData> {
    let nonce = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let tag_len = u16::from_le_bytes(bytes.get(8..10)?.try_into().ok()?) as usize;
    let tag = bytes.get(10..10 + tag_len)?.to_vec();
    let data = Bytes::copy_from_slice(bytes.get(10 + tag_len..)?);
    Some(TaggedData { nonce, tag, data })
}

/// The blocks of a run of U's slots read a page at a time: a block a page cuts is held until
/// its last slot comes.
#[derive(Debug)]
pub struct RunParser {
    /// The U index of the first slot of `held`.
    first: u64,
    /// The slots of a block begun and not ended, flat.
    held: Vec<u64>,
}

impl RunParser {
    pub fn new(first: u64) -> RunParser {
        RunParser { first, held: Vec::new() }
    }

    /// The blocks that end in `slots`, the next slots of the run (flat, checked against U's
    /// root).
    pub fn feed(&mut self, slots: &[u64]) -> Result<Vec<TaggedData>, CopyError> {
        self.held.extend_from_slice(slots);
        let (spans, _) = block_spans(self.first, &self.held, self.first)?;
        let slots_held = (self.held.len() / SLOT_WIDTH) as u64;
        // The slots of the blocks that end within what is held.
        let whole = spans.iter().map(|&(head, n)| head - self.first + n).take_while(|&end| end <= slots_held).last();
        let whole = whole.unwrap_or(0);
        let blocks = parse(self.first, &self.held[..whole as usize * SLOT_WIDTH])?;
        self.held.drain(..whole as usize * SLOT_WIDTH);
        self.first += whole;
        Ok(blocks)
    }

    /// Checks that the run ended with its last block.
    pub fn finish(self) -> Result<(), CopyError> {
        match self.held.is_empty() {
            true => Ok(()),
            false => Err(CopyError::PastEnd(self.first)),
        }
    }
}

/// The first pass over a copy of `record`: each block's tag checks under `key`, and their
/// leaves, kept (48 bytes a block, not the data), make the record's root and length.
pub struct CopyCheck<'a> {
    key: &'a dyn Tagger,
    record: &'a VersionRecord,
    leaves: Vec<Block>,
}

impl std::fmt::Debug for CopyCheck<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyCheck").field("version", &self.record.number).field("blocks", &self.leaves.len()).finish()
    }
}

impl<'a> CopyCheck<'a> {
    pub fn new(key: &'a dyn Tagger, record: &'a VersionRecord) -> Self {
        CopyCheck { key, record, leaves: Vec::new() }
    }

    /// The copy's next block.
    pub fn add(&mut self, block: &TaggedData) -> Result<(), CopyError> {
        let i = self.leaves.len();
        if block.data.is_empty() || !self.key.check_block(&self.record.file, block.nonce, &block.data, &block.tag) {
            return Err(CopyError::Tag(i));
        }
        let leaf = hash::pdp_leaf(self.record.scheme as u8, block.nonce, &block.tag);
        self.leaves.push(Block::new(leaf, block.data.len() as u32, block.nonce));
        Ok(())
    }

    /// The blocks' leaves, once they make the version.
    pub fn finish(self) -> Result<Vec<Block>, CopyError> {
        let (root, len) = FlexList::root_of(&self.leaves).map_err(CopyError::NoList)?;
        if root != self.record.root || len != self.record.len {
            return Err(CopyError::NotTheVersion(self.record.number));
        }
        Ok(self.leaves)
    }
}

/// Whether `blocks` are exactly the version `record`: each block's tag checks under `key`,
/// and their leaves make the record's root and length.
pub fn check(key: &dyn Tagger, record: &VersionRecord, blocks: &[TaggedData]) -> Result<(), CopyError> {
    let mut check = CopyCheck::new(key, record);
    blocks.iter().try_for_each(|b| check.add(b))?;
    check.finish().map(|_| ())
}

/// Whether `block`, read again, is the block whose leaf `leaf` a first pass verified: the same
/// nonce, tag and length, and data its tag checks.
pub fn same_block(key: &dyn Tagger, record: &VersionRecord, leaf: &Block, block: &TaggedData) -> bool {
    leaf.block_ref == block.nonce
        && leaf.length as usize == block.data.len()
        && leaf.tag == hash::pdp_leaf(record.scheme as u8, block.nonce, &block.tag)
        && key.check_block(&record.file, block.nonce, &block.data, &block.tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks() -> Vec<TaggedData> {
        [1usize, 4000, 4096, 9000, 20_000]
            .iter()
            .enumerate()
            .map(|(i, &n)| TaggedData {
                nonce: i as u64 * 3,
                tag: vec![i as u8; 32],
                data: Bytes::from((0..n).map(|j| (j * 7 + i) as u8).collect::<Vec<_>>()),
            })
            .collect()
    }

    #[test]
    fn a_laid_out_copy_parses_back_and_malformed_runs_are_refused() {
        let blocks = blocks();
        let starts: Vec<u64> =
            slot_counts(&blocks).iter().scan(10, |at, n| Some(std::mem::replace(at, *at + n))).collect();
        let (indices, slots) = lay_out(&starts, &blocks);
        assert_eq!(indices, (10..10 + indices.len() as u64).collect::<Vec<_>>());
        assert_eq!(parse(10, &slots).unwrap(), blocks);
        // Read from the wrong first slot: the headers carry their own index.
        assert!(parse(11, &slots).is_err());
        // Cut inside a block.
        assert!(parse(10, &slots[..slots.len() - SLOT_WIDTH]).is_err());
        // A slot never written.
        let mut empty = slots.clone();
        empty[..SLOT_WIDTH].fill(0);
        assert!(parse(10, &empty).is_err());
    }

    #[test]
    fn a_run_read_in_pages_of_any_size_parses_to_its_blocks() {
        let blocks = blocks();
        let starts: Vec<u64> =
            slot_counts(&blocks).iter().scan(10, |at, n| Some(std::mem::replace(at, *at + n))).collect();
        let (_, slots) = lay_out(&starts, &blocks);
        let count = slots.len() / SLOT_WIDTH;
        for page in [1, 2, 3, 5, count] {
            let mut parser = RunParser::new(10);
            let mut got = Vec::new();
            for part in slots.chunks(page * SLOT_WIDTH) {
                got.extend(parser.feed(part).unwrap());
            }
            parser.finish().unwrap();
            assert_eq!(got, blocks, "pages of {page} slots");
        }
        // A run that ends inside a block is refused at its end.
        let mut parser = RunParser::new(10);
        let got = parser.feed(&slots[..slots.len() - SLOT_WIDTH]).unwrap();
        assert_eq!(got, blocks[..blocks.len() - 1]);
        assert!(parser.finish().is_err());
        // A page from another place: the headers carry their index.
        assert!(RunParser::new(11).feed(&slots).is_err());
    }

    #[test]
    fn the_blocks_of_a_copy_are_found_from_their_first_slots() {
        let blocks = blocks();
        let counts = slot_counts(&blocks);
        let starts: Vec<u64> = counts.iter().scan(10, |at, n| Some(std::mem::replace(at, *at + n))).collect();
        let (_, slots) = lay_out(&starts, &blocks);
        let spans: Vec<(u64, u64)> = starts.iter().copied().zip(counts.iter().copied()).collect();
        assert_eq!(block_spans(10, &slots, 10).unwrap(), (spans.clone(), 10 + counts.iter().sum::<u64>()));
        // Cut after the third block's first slot: the walk stops past it, where it goes on.
        let cut = (starts[2] - 10 + 1) as usize * SLOT_WIDTH;
        assert_eq!(block_spans(10, &slots[..cut], 10).unwrap(), (spans[..3].to_vec(), starts[3]));
        assert_eq!(
            block_spans(starts[2] + 1, &slots[cut..], starts[3]).unwrap(),
            (spans[3..].to_vec(), starts[4] + counts[4])
        );
        // A head slot that holds ⊥ is refused.
        let mut deleted = slots.clone();
        let at = (starts[1] - 10) as usize * SLOT_WIDTH;
        deleted[at..at + SLOT_WIDTH].copy_from_slice(&super::super::heap::encode_slot(starts[1], None));
        assert!(block_spans(10, &deleted, 10).is_err());
    }

    proptest::proptest! {
        /// Whatever a provider's slots hold (each header naming its index, as U's checksums
        /// force), parsing them answers blocks or an error, never a panic or a huge allocation.
        #[test]
        fn any_run_of_slots_parses_or_is_refused(
            payloads in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..9000), 1..4),
            noise in proptest::collection::vec((0usize..4000, 0u64..1 << 56), 0..8),
        ) {
            let mut slots = Vec::new();
            let mut at = 3;
            for bytes in &payloads {
                slots.extend(split_block(at, bytes));
                at += slots_for(bytes.len() as u64);
            }
            for (i, value) in noise {
                let i = i % slots.len();
                slots[i] = value;
            }
            if let Ok(blocks) = parse(3, &slots) {
                let bytes: usize = blocks.iter().map(|b| b.data.len() + b.tag.len()).sum();
                proptest::prop_assert!(bytes <= slots.len() * 7);
            }
        }
    }

    #[test]
    fn file_ids_carry_the_mark_only_when_asked() {
        let marked = [b'P', b'o', b'R', 1, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9];
        for random in [[0u8; 16], [7u8; 16], marked] {
            assert!(is_por_file(&file_id(random, true).unwrap()));
            assert_eq!(file_id(random, false).map(|id| is_por_file(&id)), (random != marked).then_some(false));
        }
        for b in blocks() {
            assert_eq!(
                block_slots(b.tag.len(), b.data.len() as u64),
                lay_out(&[0], &[b]).1.len() as u64 / SLOT_WIDTH as u64
            );
        }
    }
}

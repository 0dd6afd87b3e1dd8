//! Checks of block answers: a read's chunks against the proven version, and a block list
//! (for `sync`).

use crate::error::ClientError;
use crate::violation::ViolationKind;
use rayon::prelude::*;
use vouch_core::namespace::VersionRecord;
use vouch_core::pdp::Tagger;
use vouch_core::{hash, verify_multi_proof, MultiProof};
use vouch_proto::{BlockList, ErrorBody, ReadChunk};

/// A read of bytes `start..end` of a proven version, checked chunk by chunk as the stream
/// arrives: each chunk must continue where the one before ended, hold only blocks inside the
/// range, and verify ([`chunk`]); the stream must reach `end`.
#[derive(Clone, Debug)]
pub struct ReadCheck {
    record: VersionRecord,
    start: u64,
    end: u64,
    pos: u64,
}

/// Per block of a chunk: the part of it inside the range, and the block's (start, whole data).
pub type RangeParts<'c> = Vec<(&'c [u8], (u64, &'c [u8]))>;

impl ReadCheck {
    /// A read of `start..end` (clamped to the version's length) of the version `record`.
    pub fn new(record: VersionRecord, start: u64, end: u64) -> Result<ReadCheck, ClientError> {
        let end = end.min(record.len);
        if start > end {
            return Err(ClientError::BadInput(format!("range starts past the end ({} bytes)", record.len)));
        }
        Ok(ReadCheck { record, start, end, pos: start })
    }

    /// Checks the next chunk; returns its blocks' parts inside the range.
    pub fn chunk<'c>(&mut self, key: &impl Tagger, chunk: &'c ReadChunk) -> Result<RangeParts<'c>, ClientError> {
        let end = self.end;
        if self.pos >= end {
            return Err(ClientError::violation(
                ViolationKind::BlocksPastRange,
                format!("a chunk after the range's end {end}"),
            ));
        }
        let starts = self::chunk(key, &self.record, chunk, self.pos)?;
        let mut parts = Vec::with_capacity(starts.len());
        for (block_start, block) in starts.iter().zip(&chunk.blocks) {
            if *block_start >= end {
                return Err(ClientError::violation(
                    ViolationKind::BlocksPastRange,
                    format!("a block at byte {block_start}, past the range's end {end}"),
                ));
            }
            let data = &block.data;
            let from = self.pos.saturating_sub(*block_start) as usize;
            let to = (end.min(block_start + data.len() as u64) - block_start) as usize;
            parts.push((&data[from..to], (*block_start, &data[..])));
            self.pos = block_start + to as u64;
        }
        Ok(parts)
    }

    /// An error frame in the stream of `name`: the header proved the version, so it is not
    /// missing (nor is it lost: `DataLost`).
    pub fn stream_error(&self, name: &str, error: ErrorBody) -> ClientError {
        let what = format!("version {} of {name}, just proven by the read's header,", self.record.number);
        ClientError::from_server(error.code, error.message).not_found_is(ViolationKind::HiddenVersion, &what)
    }

    /// The end of the stream: the range must be complete. Returns the bytes read.
    pub fn finish(&self) -> Result<u64, ClientError> {
        if self.pos < self.end {
            return Err(ClientError::violation(
                ViolationKind::ShortStream,
                format!("the stream ended at byte {} of {}", self.pos, self.end),
            ));
        }
        Ok(self.end - self.start)
    }
}

/// One chunk of a read of the version `record` that must continue at byte `pos`: the list
/// proof of its blocks against the version root, each block's tag against its bytes under
/// `key`, and that the blocks follow each other from `pos` on. Returns each block's start.
pub fn chunk(key: &impl Tagger, record: &VersionRecord, chunk: &ReadChunk, pos: u64) -> Result<Vec<u64>, ClientError> {
    let (offsets, blocks) = (chunk.starts.len(), chunk.blocks.len());
    if blocks < offsets {
        return Err(ClientError::violation(
            ViolationKind::MissingBlock,
            format!("a read chunk of {offsets} offsets carries {blocks} blocks"),
        ));
    }
    if offsets == 0 || blocks != offsets {
        return Err(ClientError::violation(
            ViolationKind::MalformedAnswer,
            format!("a read chunk of {offsets} offsets carries {blocks} blocks"),
        ));
    }
    let bad = ViolationKind::BadReadProof;
    let proof = MultiProof::from_bytes(chunk.proof.to_vec()).map_err(ClientError::caught(bad))?;
    let proven = verify_multi_proof(&record.root, &chunk.starts, &proof).map_err(ClientError::caught(bad))?;
    let mut next = pos;
    for (i, p) in proven.iter().enumerate() {
        let contiguous = if i == 0 { p.start <= next && next < p.start + u64::from(p.length) } else { p.start == next };
        if !contiguous {
            return Err(ClientError::violation(
                ViolationKind::MisplacedBlock,
                format!("block at byte {} is not the one that follows byte {next}", p.start),
            ));
        }
        next = p.start + u64::from(p.length);
    }
    let scheme = record.scheme as u8;
    let file = record.file;
    let bad = proven.par_iter().zip(&chunk.blocks).position_any(|(p, b)| {
        b.data.len() != p.length as usize
            || !key.check_block(&file, b.nonce, &b.data, &b.tag)
            || hash::pdp_leaf(scheme, b.nonce, &b.tag) != p.tag
    });
    if let Some(i) = bad {
        return Err(ClientError::violation(
            ViolationKind::AlteredBlock,
            format!("block at byte {} was altered", proven[i].start),
        ));
    }
    Ok(proven.iter().map(|p| p.start).collect())
}

/// A block of a stored version, as its proven block list describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBlock {
    pub start: u64,
    pub len: u32,
    pub nonce: u64,
    pub tag: Vec<u8>,
}

/// A block list of the version `record`: the proof opens every block, in order, from byte 0
/// to the end, and each (nonce, tag) is its leaf's.
pub fn block_list(record: &VersionRecord, list: &BlockList) -> Result<Vec<StoredBlock>, ClientError> {
    if record.len == 0 {
        return if list.starts.is_empty() && list.blocks.is_empty() {
            Ok(Vec::new())
        } else {
            Err(ClientError::violation(ViolationKind::BlockListMismatch, "blocks listed for a version proven empty"))
        };
    }
    if list.starts.len() != list.blocks.len() || list.starts.is_empty() {
        return Err(ClientError::violation(
            ViolationKind::BlockListMismatch,
            format!("{} offsets and {} blocks listed", list.starts.len(), list.blocks.len()),
        ));
    }
    let bad = ViolationKind::BadBlockListProof;
    let proof = MultiProof::from_bytes(list.proof.to_vec()).map_err(ClientError::caught(bad))?;
    let proven = verify_multi_proof(&record.root, &list.starts, &proof).map_err(ClientError::caught(bad))?;
    let mut next = 0u64;
    let mut out = Vec::with_capacity(proven.len());
    for (p, b) in proven.iter().zip(&list.blocks) {
        if p.start != next || hash::pdp_leaf(record.scheme as u8, b.nonce, &b.tag) != p.tag {
            return Err(ClientError::violation(
                ViolationKind::BlockListMismatch,
                format!("the block at byte {} is not the one listed or not the one that follows", p.start),
            ));
        }
        next = p.start + u64::from(p.length);
        out.push(StoredBlock { start: p.start, len: p.length, nonce: b.nonce, tag: b.tag.to_vec() });
    }
    if next != record.len {
        return Err(ClientError::violation(
            ViolationKind::BlockListMismatch,
            format!("the blocks listed end at byte {next} of {}", record.len),
        ));
    }
    Ok(out)
}

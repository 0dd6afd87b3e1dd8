//! How a saved list is described: a full manifest naming its chunks, or a delta naming the
//! list it was edited from and the edits; and how a block sequence is cut into chunks.

use super::{corrupt, CHUNK_MAX, CHUNK_TARGET};
use crate::StoreError;
use vouch_core::codec::{CodecError, Reader};
use vouch_core::{Block, Digest, Edit};

/// Bytes of one block in a chunk: `tag:32 || length:u32le || block_ref:u64le`.
pub(super) const BLOCK_RECORD: usize = 44;
const CHUNK_INFO: usize = 44;
const FULL: u8 = 1;
const DELTA: u8 = 2;

/// One chunk of a list: its hash, and how many blocks and bytes of the file it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ChunkInfo {
    pub hash: Digest,
    pub blocks: u32,
    pub bytes: u64,
}

/// A saved list: its root and block count (checked on every load), and how to rebuild it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Manifest {
    pub root: Digest,
    pub blocks: u64,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Body {
    /// The whole block sequence, in chunks.
    Full { chunks: Vec<ChunkInfo> },
    /// The list `base` (`depth - 1` deltas above a full list) after one batch of edits.
    Delta { depth: u32, base: String, edits: Vec<Edit> },
}

impl Manifest {
    /// Deltas between this list and the full list it rests on.
    pub fn depth(&self) -> u32 {
        match &self.body {
            Body::Full { .. } => 0,
            Body::Delta { depth, .. } => *depth,
        }
    }

    /// `kind:u8 || root:32 || blocks:u64le ||` then, for a full list,
    /// `(hash:32 || blocks:u32le || bytes:u64le)*`; for a delta, `depth:u32le ||
    /// base_len:u16le || base || (kind:u8 || at:u64le || [block record])*` (kind 0 insert,
    /// 1 modify, 2 remove; a remove has no block).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.push(if matches!(self.body, Body::Full { .. }) { FULL } else { DELTA });
        out.extend_from_slice(&self.root.0);
        out.extend_from_slice(&self.blocks.to_le_bytes());
        match &self.body {
            Body::Full { chunks } => {
                for c in chunks {
                    out.extend_from_slice(&c.hash.0);
                    out.extend_from_slice(&c.blocks.to_le_bytes());
                    out.extend_from_slice(&c.bytes.to_le_bytes());
                }
            }
            Body::Delta { depth, base, edits } => {
                out.extend_from_slice(&depth.to_le_bytes());
                out.extend_from_slice(&(base.len() as u16).to_le_bytes());
                out.extend_from_slice(base.as_bytes());
                for e in edits {
                    let (kind, block) = match e {
                        Edit::Insert { block, .. } => (0u8, Some(block)),
                        Edit::Modify { block, .. } => (1, Some(block)),
                        Edit::Remove { .. } => (2, None),
                    };
                    out.push(kind);
                    out.extend_from_slice(&e.at().to_le_bytes());
                    if let Some(b) = block {
                        put_block(&mut out, b);
                    }
                }
            }
        }
        out
    }

    pub fn from_bytes(name: &str, bytes: &[u8]) -> Result<Self, StoreError> {
        let bad = || corrupt(name, "bad manifest");
        let mut r = Reader::new(bytes);
        let kind = r.bytes(1).map_err(|_| bad())?[0];
        let root = Digest(r.array().map_err(|_| bad())?);
        let blocks = u64::from_le_bytes(r.array().map_err(|_| bad())?);
        let body = match kind {
            FULL => {
                let mut chunks = Vec::with_capacity(r.remaining() / CHUNK_INFO);
                while !r.is_empty() {
                    let hash = Digest(r.array().map_err(|_| bad())?);
                    let count = u32::from_le_bytes(r.array().map_err(|_| bad())?);
                    chunks.push(ChunkInfo {
                        hash,
                        blocks: count,
                        bytes: u64::from_le_bytes(r.array().map_err(|_| bad())?),
                    });
                }
                if chunks.iter().map(|c| u64::from(c.blocks)).sum::<u64>() != blocks {
                    return Err(corrupt(name, "chunk block counts do not add up"));
                }
                Body::Full { chunks }
            }
            DELTA => {
                let depth = u32::from_le_bytes(r.array().map_err(|_| bad())?);
                let len = u16::from_le_bytes(r.array().map_err(|_| bad())?) as usize;
                let base = std::str::from_utf8(r.bytes(len).map_err(|_| bad())?).map_err(|_| bad())?.to_string();
                let mut edits = Vec::new();
                while !r.is_empty() {
                    let kind = r.bytes(1).map_err(|_| bad())?[0];
                    let at = u64::from_le_bytes(r.array().map_err(|_| bad())?);
                    edits.push(match kind {
                        0 => Edit::Insert { at, block: read_block(&mut r).map_err(|_| bad())? },
                        1 => Edit::Modify { at, block: read_block(&mut r).map_err(|_| bad())? },
                        2 => Edit::Remove { at },
                        _ => return Err(bad()),
                    });
                }
                Body::Delta { depth, base, edits }
            }
            _ => return Err(bad()),
        };
        Ok(Manifest { root, blocks, body })
    }
}

fn put_block(out: &mut Vec<u8>, b: &Block) {
    out.extend_from_slice(&b.tag.0);
    out.extend_from_slice(&b.length.to_le_bytes());
    out.extend_from_slice(&b.block_ref.to_le_bytes());
}

/// One block record: tag, length, reference.
fn read_block(r: &mut Reader<'_>) -> Result<Block, CodecError> {
    let tag = Digest(r.array()?);
    let length = r.u32_le()?;
    Ok(Block::new(tag, length, r.u64_le()?))
}

/// The blocks of one stored chunk.
pub(super) fn chunk_blocks(bytes: &[u8]) -> impl Iterator<Item = Block> + '_ {
    bytes.chunks_exact(BLOCK_RECORD).map(|r| read_block(&mut Reader::new(r)).expect("a whole record"))
}

/// Cuts a block sequence into chunks: after a block whose tag's first two bytes are 0
/// modulo [`CHUNK_TARGET`], or after [`CHUNK_MAX`] blocks.
#[derive(Default)]
pub(super) struct Chunker {
    bytes: Vec<u8>,
    blocks: u32,
    len: u64,
}

/// A chunk's bytes, blocks and file bytes.
pub(super) type Cut = (Vec<u8>, u32, u64);

impl Chunker {
    /// Adds a block; returns the chunk it ends, if it ends one.
    pub fn push(&mut self, b: &Block) -> Option<Cut> {
        put_block(&mut self.bytes, b);
        self.blocks += 1;
        self.len += u64::from(b.length);
        let boundary = u16::from_le_bytes([b.tag.0[0], b.tag.0[1]]).is_multiple_of(CHUNK_TARGET);
        (boundary || self.blocks as usize == CHUNK_MAX).then(|| self.take())
    }

    /// The last, unterminated chunk.
    pub fn finish(mut self) -> Option<Cut> {
        (self.blocks > 0).then(|| self.take())
    }

    fn take(&mut self) -> Cut {
        let chunk = (std::mem::take(&mut self.bytes), self.blocks, self.len);
        (self.blocks, self.len) = (0, 0);
        chunk
    }
}

//! The client's few bytes of state per file, and the steps that change them.

use super::{FileId, Salt, Tagger, MAX_BLOCK_LEN};
use crate::flexlist::{verify_multi_update_len, Block, Edit, UpdateProof, UpdateVerifyError};
use crate::hash::{self, Digest};
use rayon::prelude::*;

/// A block the client has tagged: what the provider stores, and the leaf the list gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaggedBlock {
    pub nonce: u64,
    pub length: u32,
    pub tag: Vec<u8>,
    /// The FlexList leaf: tag digest, length, and `block_ref` = nonce (the provider may keep
    /// its blocks under any reference; the nonce is unique in the file).
    pub leaf: Block,
}

/// A block is empty or longer than [`MAX_BLOCK_LEN`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a block must hold 1 to {MAX_BLOCK_LEN} bytes, not {0}")]
pub struct BadBlockLength(pub usize);

/// What the client keeps for one file: 72 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientFile {
    pub file: FileId,
    pub root: Digest,
    pub len: u64,
    /// The next unused nonce. A nonce is handed out again only after an attempt that never
    /// committed, and then under another attempt's salt: no two contents share a PRF input.
    pub next_nonce: u64,
}

impl ClientFile {
    /// State for a new, empty file.
    pub fn new(file: FileId) -> Self {
        ClientFile { file, root: crate::FlexList::new().root(), len: 0, next_nonce: 0 }
    }

    /// Tags `blocks` in parallel with consecutive nonces, in the upload attempt `salt` (fresh
    /// from a CSPRNG for each attempt). Feed a large file in batches (each a few MB of blocks),
    /// so memory stays bounded by one batch.
    pub fn tag_blocks<B: AsRef<[u8]> + Sync>(
        &mut self,
        tagger: &impl Tagger,
        salt: &Salt,
        blocks: &[B],
    ) -> Result<Vec<TaggedBlock>, BadBlockLength> {
        if let Some(bad) = blocks.iter().map(|b| b.as_ref().len()).find(|&n| n == 0 || n > MAX_BLOCK_LEN) {
            return Err(BadBlockLength(bad));
        }
        let first = self.next_nonce;
        self.next_nonce += blocks.len() as u64;
        let file = self.file;
        Ok(blocks
            .par_iter()
            .enumerate()
            .map(|(i, data)| {
                let data = data.as_ref();
                let nonce = first + i as u64;
                let tag = tagger.tag(&file, nonce, salt, data);
                let leaf = Block::new(hash::pdp_leaf(tagger.scheme() as u8, nonce, &tag), data.len() as u32, nonce);
                TaggedBlock { nonce, length: data.len() as u32, tag, leaf }
            })
            .collect())
    }

    /// Accepts the provider's list over an upload: the client computed `root` itself from the
    /// tagged blocks (the FlexList build is deterministic), so nothing is taken on trust.
    pub fn uploaded(&mut self, root: Digest, len: u64) {
        self.root = root;
        self.len = len;
    }

    /// verifyMultiUpdate for a batch of edits: on success the state moves to the new root.
    pub fn apply_update(&mut self, edits: &[Edit], proof: &UpdateProof) -> Result<Digest, UpdateVerifyError> {
        let (root, len) = verify_multi_update_len(&self.root, edits, proof)?;
        self.root = root;
        self.len = len;
        Ok(root)
    }
}

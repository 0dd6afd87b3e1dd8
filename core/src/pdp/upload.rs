//! Preprocessing a file as a stream: cut into blocks, tag in parallel, build the list.

use super::{BadBlockLength, ClientFile, FileId, Salt, TaggedBlock, Tagger, MAX_BLOCK_LEN};
use crate::flexlist::{Block, BuildError, FlexList};

/// Default block size: the smallest proof and the fastest proving in `vouch bench pdp`'s sweep
/// over 1-64 KB blocks for a 1 GB file (paper 001 found the same 16 KB optimum).
pub const DEFAULT_BLOCK_SIZE: usize = 16 << 10;

/// A file being uploaded: feed it bytes in pieces of any size ([`Upload::push`]); each
/// completed block is tagged (a batch at a time, in parallel) and handed to the caller's
/// `store`, so memory holds one batch of data plus 48 bytes per block for the list.
pub struct Upload<'k, T: Tagger> {
    tagger: &'k T,
    salt: Salt,
    client: ClientFile,
    block_size: usize,
    pending: Vec<u8>,
    leaves: Vec<Block>,
}

impl<T: Tagger> std::fmt::Debug for Upload<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Upload({} blocks of {} bytes so far)", self.leaves.len(), self.block_size)
    }
}

impl<'k, T: Tagger> Upload<'k, T> {
    /// An upload of a new file, in the attempt `salt` (fresh from a CSPRNG: see [`Salt`]).
    pub fn new(tagger: &'k T, salt: Salt, file: FileId, block_size: usize) -> Result<Self, BadBlockLength> {
        if block_size == 0 || block_size > MAX_BLOCK_LEN {
            return Err(BadBlockLength(block_size));
        }
        let client = ClientFile::new(file);
        Ok(Upload { tagger, salt, client, block_size, pending: Vec::new(), leaves: Vec::new() })
    }

    /// An upload of a new version of `file` whose nonces continue from `next_nonce` (the older
    /// versions' blocks keep theirs; the salt keeps a retried attempt apart from a refused one).
    pub fn continuing(
        tagger: &'k T,
        salt: Salt,
        file: FileId,
        block_size: usize,
        next_nonce: u64,
    ) -> Result<Self, BadBlockLength> {
        let mut upload = Self::new(tagger, salt, file, block_size)?;
        upload.client.next_nonce = next_nonce;
        Ok(upload)
    }

    /// Adds `bytes` to the file; tags the blocks they complete and passes each to `store` in
    /// file order, with its data.
    pub fn push(&mut self, mut bytes: &[u8], mut store: impl FnMut(&TaggedBlock, &[u8])) {
        if !self.pending.is_empty() {
            let take = (self.block_size - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < self.block_size {
                return;
            }
            let block = std::mem::take(&mut self.pending);
            self.tag_and_store(&[&block[..]], &mut store);
        }
        let whole = bytes.len() / self.block_size * self.block_size;
        let blocks: Vec<&[u8]> = bytes[..whole].chunks(self.block_size).collect();
        self.tag_and_store(&blocks, &mut store);
        self.pending.extend_from_slice(&bytes[whole..]);
    }

    /// Adds blocks the caller cut itself (content-defined chunks), in file order. One upload
    /// uses either this or [`Upload::push`], never both (a pending partial block would end up
    /// after these blocks).
    pub fn push_blocks(
        &mut self,
        blocks: &[&[u8]],
        mut store: impl FnMut(&TaggedBlock, &[u8]),
    ) -> Result<(), BadBlockLength> {
        debug_assert!(self.pending.is_empty(), "push_blocks after a partial push");
        if let Some(bad) = blocks.iter().map(|b| b.len()).find(|&n| n == 0 || n > MAX_BLOCK_LEN) {
            return Err(BadBlockLength(bad));
        }
        self.tag_and_store(blocks, &mut store);
        Ok(())
    }

    /// Tags the last, short block (if any), builds the list on every core, and returns the
    /// client's state (root computed here, not taken from the provider) and the provider's list.
    pub fn finish(mut self, mut store: impl FnMut(&TaggedBlock, &[u8])) -> Result<(ClientFile, FlexList), BuildError> {
        if !self.pending.is_empty() {
            let block = std::mem::take(&mut self.pending);
            self.tag_and_store(&[&block[..]], &mut store);
        }
        let list = FlexList::build_parallel(&self.leaves, rayon::current_num_threads())?;
        self.client.uploaded(list.root(), list.total_len());
        Ok((self.client, list))
    }

    fn tag_and_store(&mut self, blocks: &[&[u8]], store: &mut impl FnMut(&TaggedBlock, &[u8])) {
        let tagged = self.client.tag_blocks(self.tagger, &self.salt, blocks).expect("block sizes checked in new");
        for (t, data) in tagged.iter().zip(blocks) {
            store(t, data);
            self.leaves.push(t.leaf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdp::linear::LinearKey;

    #[test]
    fn streamed_upload_equals_one_batch_whatever_the_pieces() {
        let key = LinearKey::from_secret([3; 32]);
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 13 % 251) as u8).collect();
        let blocks: Vec<&[u8]> = data.chunks(700).collect();
        let mut batch = ClientFile::new(FileId([4; 16]));
        let tagged = batch.tag_blocks(&key, &[5; 16], &blocks).unwrap();
        let want = FlexList::build(&tagged.iter().map(|t| t.leaf).collect::<Vec<_>>()).unwrap();
        for piece in [1, 699, 700, 701, 4096, 10_000] {
            let mut upload = Upload::new(&key, [5; 16], FileId([4; 16]), 700).unwrap();
            let mut stored = Vec::new();
            for chunk in data.chunks(piece) {
                upload.push(chunk, |t, d| stored.push((t.clone(), d.to_vec())));
                assert!(upload.pending.len() < 700, "at most one partial block is held");
            }
            let (client, list) = upload.finish(|t, d| stored.push((t.clone(), d.to_vec()))).unwrap();
            assert_eq!(list.root(), want.root(), "pieces of {piece}");
            assert_eq!(client.root, want.root());
            assert_eq!(client.len, 10_000);
            assert_eq!(client.next_nonce, blocks.len() as u64);
            let back: Vec<u8> = stored.iter().flat_map(|(_, d)| d.clone()).collect();
            assert_eq!(back, data);
            assert_eq!(stored.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>(), tagged);
        }
    }

    #[test]
    fn bad_block_sizes_are_refused() {
        let key = LinearKey::from_secret([3; 32]);
        assert_eq!(Upload::new(&key, [0; 16], FileId([0; 16]), 0).unwrap_err(), BadBlockLength(0));
        assert!(Upload::new(&key, [0; 16], FileId([0; 16]), MAX_BLOCK_LEN + 1).is_err());
    }
}

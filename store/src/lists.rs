//! FlexLists persisted in the metadata store, so a restarted provider answers proofs without
//! the client and without re-reading any block.
//!
//! A list is saved as its block sequence, `(tag:32, length:u32le, block_ref:u64le)` per block,
//! cut into chunks where the blocks themselves say so (after a block whose tag's first two
//! bytes are 0 modulo [`CHUNK_TARGET`], or after [`CHUNK_MAX`] blocks). A chunk is stored once
//! under its BLAKE3 hash (`lchunk/<hash>`; BLAKE3 because a save hashes the whole list and it
//! is several times faster than SHA-256 here) with a reference count (`lref/<hash>`), and a list is a
//! manifest (`root/<name>`: root, block count, chunk hashes). Versions of a file share every
//! chunk an edit did not touch, and because boundaries follow the content, an insert changes
//! one chunk, not every chunk after it: saving a new version of a 1 GB file writes a few
//! chunks of ~45 KB, not 3 MB. The FlexList's shape is a function of its blocks alone, so the
//! rebuilt list is the saved one; a load checks each chunk's hash and the root.

use crate::{MetaBatch, MetaStore, StoreError};
use std::collections::HashMap;
use vouch_core::{Block, Digest, FlexList};

/// Average blocks per chunk (a power of two).
pub const CHUNK_TARGET: u16 = 1024;
/// Most blocks in one chunk.
pub const CHUNK_MAX: usize = 8192;
const BLOCK_RECORD: usize = 44;

fn manifest_key(name: &str) -> Vec<u8> {
    format!("root/{name}").into_bytes()
}

fn hex(d: &Digest) -> String {
    d.0.iter().map(|b| format!("{b:02x}")).collect()
}

fn chunk_key(d: &Digest) -> Vec<u8> {
    format!("lchunk/{}", hex(d)).into_bytes()
}

fn ref_key(d: &Digest) -> Vec<u8> {
    format!("lref/{}", hex(d)).into_bytes()
}

fn corrupt(name: &str, why: &str) -> StoreError {
    StoreError::Corrupt { at: format!("list {name}"), detail: why.to_string() }
}

/// A list's manifest: its root, block count and chunks.
struct Manifest {
    root: Digest,
    blocks: u64,
    chunks: Vec<Digest>,
}

impl Manifest {
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(40 + 32 * self.chunks.len());
        out.extend_from_slice(&self.root.0);
        out.extend_from_slice(&self.blocks.to_le_bytes());
        for c in &self.chunks {
            out.extend_from_slice(&c.0);
        }
        out
    }

    fn from_bytes(name: &str, bytes: &[u8]) -> Result<Self, StoreError> {
        if bytes.len() < 40 || !(bytes.len() - 40).is_multiple_of(32) {
            return Err(corrupt(name, "bad manifest"));
        }
        let digest = |b: &[u8]| Digest(b.try_into().expect("32 bytes"));
        Ok(Manifest {
            root: digest(&bytes[..32]),
            blocks: u64::from_le_bytes(bytes[32..40].try_into().expect("8 bytes")),
            chunks: bytes[40..].chunks_exact(32).map(digest).collect(),
        })
    }
}

/// The chunks of a block sequence, each as its stored bytes.
fn chunks(blocks: &[Block]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    let mut count = 0;
    for b in blocks {
        current.extend_from_slice(&b.tag.0);
        current.extend_from_slice(&b.length.to_le_bytes());
        current.extend_from_slice(&b.block_ref.to_le_bytes());
        count += 1;
        let boundary = u16::from_le_bytes([b.tag.0[0], b.tag.0[1]]) % CHUNK_TARGET == 0;
        if boundary || count == CHUNK_MAX {
            out.push(std::mem::take(&mut current));
            count = 0;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Saves and deletes lists in one metadata batch, keeping the chunks' reference counts.
/// Callers serialise writers (the provider holds its write lock).
pub struct ListWriter<'m, M: MetaStore> {
    meta: &'m M,
    /// Reference count per chunk touched: (count in the store, count after this batch).
    refs: HashMap<Digest, (u64, u64)>,
    new_chunks: HashMap<Digest, Vec<u8>>,
    manifests: Vec<(String, Option<Vec<u8>>)>,
}

impl<M: MetaStore> std::fmt::Debug for ListWriter<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ListWriter({} lists, {} new chunks)", self.manifests.len(), self.new_chunks.len())
    }
}

impl<'m, M: MetaStore> ListWriter<'m, M> {
    pub fn new(meta: &'m M) -> Self {
        ListWriter { meta, refs: HashMap::new(), new_chunks: HashMap::new(), manifests: Vec::new() }
    }

    fn count(&mut self, chunk: &Digest) -> Result<&mut (u64, u64), StoreError> {
        if !self.refs.contains_key(chunk) {
            let stored = match self.meta.get(&ref_key(chunk))? {
                Some(v) => u64::from_le_bytes(v.try_into().map_err(|_| corrupt("refs", "bad reference count"))?),
                None => 0,
            };
            self.refs.insert(*chunk, (stored, stored));
        }
        Ok(self.refs.get_mut(chunk).expect("inserted"))
    }

    /// The manifest `name` has now, counting this batch's changes.
    fn current(&self, name: &str) -> Result<Option<Manifest>, StoreError> {
        let pending = self.manifests.iter().rev().find(|(n, _)| n == name).map(|(_, m)| m.clone());
        let bytes = match pending {
            Some(m) => m,
            None => self.meta.get(&manifest_key(name))?,
        };
        bytes.map(|b| Manifest::from_bytes(name, &b)).transpose()
    }

    /// Stores `list` under `name`, replacing what was there.
    pub fn save(&mut self, name: &str, list: &FlexList) -> Result<(), StoreError> {
        self.delete(name)?;
        let blocks: Vec<Block> = list.iter().map(|l| l.block).collect();
        let mut hashes = Vec::new();
        for bytes in chunks(&blocks) {
            let hash = Digest(*blake3::hash(&bytes).as_bytes());
            let count = self.count(&hash)?;
            count.1 += 1;
            if count.0 == 0 {
                self.new_chunks.entry(hash).or_insert(bytes);
            }
            hashes.push(hash);
        }
        let manifest = Manifest { root: list.root(), blocks: blocks.len() as u64, chunks: hashes };
        self.manifests.push((name.to_string(), Some(manifest.to_bytes())));
        Ok(())
    }

    /// Forgets the list `name` (nothing if there is none).
    pub fn delete(&mut self, name: &str) -> Result<(), StoreError> {
        let Some(old) = self.current(name)? else { return Ok(()) };
        for chunk in &old.chunks {
            let count = self.count(chunk)?;
            count.1 = count.1.checked_sub(1).ok_or_else(|| corrupt(name, "reference count below zero"))?;
        }
        self.manifests.push((name.to_string(), None));
        Ok(())
    }

    /// Adds everything to `batch`: new chunks, reference counts (a chunk nobody uses any more
    /// goes), manifests.
    pub fn finish(self, batch: &mut MetaBatch) {
        for (hash, (before, after)) in &self.refs {
            match (before, after) {
                (_, 0) => {
                    batch.delete(chunk_key(hash));
                    batch.delete(ref_key(hash));
                }
                (b, a) if b == a => {}
                (_, a) => {
                    if let Some(bytes) = self.new_chunks.get(hash) {
                        batch.put(chunk_key(hash), bytes.clone());
                    }
                    batch.put(ref_key(hash), a.to_le_bytes().to_vec());
                }
            }
        }
        for (name, manifest) in self.manifests {
            match manifest {
                Some(bytes) => batch.put(manifest_key(&name), bytes),
                None => batch.delete(manifest_key(&name)),
            };
        }
    }
}

/// Adds to `batch` everything that stores `list` under `name` (replacing an older version).
pub fn save_list(batch: &mut MetaBatch, meta: &impl MetaStore, name: &str, list: &FlexList) -> Result<(), StoreError> {
    let mut writer = ListWriter::new(meta);
    writer.save(name, list)?;
    writer.finish(batch);
    Ok(())
}

/// Loads the list saved under `name`. A missing list is [`StoreError::NotFound`]; stored bytes
/// that do not hash to their chunk's name or do not rebuild the saved root are
/// [`StoreError::Corrupt`], never a silently different list.
pub fn load_list(meta: &impl MetaStore, name: &str) -> Result<FlexList, StoreError> {
    let saved = meta.get(&manifest_key(name))?.ok_or_else(|| StoreError::NotFound { key: format!("list {name}") })?;
    let manifest = Manifest::from_bytes(name, &saved)?;
    let mut blocks = Vec::with_capacity(manifest.blocks.min(1 << 24) as usize);
    for hash in &manifest.chunks {
        let bytes = meta.get(&chunk_key(hash))?.ok_or_else(|| corrupt(name, "a chunk is missing"))?;
        if Digest(*blake3::hash(&bytes).as_bytes()) != *hash || bytes.len() % BLOCK_RECORD != 0 {
            return Err(corrupt(name, "a chunk does not match its hash"));
        }
        for r in bytes.chunks_exact(BLOCK_RECORD) {
            let tag = Digest(r[..32].try_into().expect("32 bytes"));
            let length = u32::from_le_bytes(r[32..36].try_into().expect("4 bytes"));
            blocks.push(Block::new(tag, length, u64::from_le_bytes(r[36..].try_into().expect("8 bytes"))));
        }
    }
    if blocks.len() as u64 != manifest.blocks {
        return Err(corrupt(name, "block count differs from the manifest"));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let list = FlexList::build_parallel(&blocks, threads).map_err(|e| corrupt(name, &e.to_string()))?;
    if list.root() != manifest.root {
        return Err(corrupt(name, "stored blocks do not rebuild the stored root"));
    }
    Ok(list)
}

/// How many list chunks are stored, for tests that check nothing leaks.
#[doc(hidden)]
pub fn chunk_count(meta: &impl MetaStore) -> Result<usize, StoreError> {
    Ok(meta.scan(b"lchunk/")?.len())
}

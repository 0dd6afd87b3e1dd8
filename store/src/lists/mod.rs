//! FlexLists persisted in the metadata store, so a restarted provider answers proofs without
//! the client and without re-reading any block.
//!
//! A list is saved in one of two ways ([`manifest`]), under `root/<name>`:
//!
//! * **Full**: its block sequence, `(tag, length, block_ref)` per block, cut into chunks where
//!   the blocks themselves say so (after a block whose tag's first two bytes are 0 modulo
//!   [`CHUNK_TARGET`], or after [`CHUNK_MAX`] blocks). A chunk is stored once under its
//!   BLAKE3 hash (`lchunk/<hash>`; BLAKE3 because a full save hashes the whole list and it is
//!   several times faster than SHA-256 here) with a reference count (`lref/<hash>`). Lists
//!   share every chunk they have in common, and because cuts follow the content, an insert
//!   changes one chunk, not every chunk after it.
//! * **Delta**: the list it was edited from and the batch of edits, a few hundred bytes for
//!   a commit however large the file (a full save of a 1 GB file's list hashes 3 MB). A
//!   delta keeps its base alive (`ldep/<name>` counts a list's deltas); a deleted list that
//!   deltas still rest on is only marked (`lhide/<name>`) and goes with its last delta. At
//!   most [`MAX_DELTA_DEPTH`] deltas rest on one full list, so a load applies a bounded number
//!   of batches.
//!
//! The FlexList's shape is a function of its blocks alone, so the rebuilt list is the saved
//! one; a load checks each chunk's hash and every root and block count along the way.

mod manifest;

use crate::{MetaBatch, MetaStore, StoreError};
use manifest::{chunk_blocks, Body, ChunkInfo, Chunker, Cut, Manifest, BLOCK_RECORD};
use std::collections::HashMap;
use vouch_core::{Block, Digest, Edit, FlexList};

/// Average blocks per chunk (a power of two).
pub(crate) const CHUNK_TARGET: u16 = 1024;
/// Most blocks in one chunk.
pub(crate) const CHUNK_MAX: usize = 8192;
/// Most deltas between a saved list and the full list it rests on.
pub(crate) const MAX_DELTA_DEPTH: u32 = 32;

fn manifest_key(name: &str) -> Vec<u8> {
    format!("root/{name}").into_bytes()
}

fn dependents_key(name: &str) -> Vec<u8> {
    format!("ldep/{name}").into_bytes()
}

fn hidden_key(name: &str) -> Vec<u8> {
    format!("lhide/{name}").into_bytes()
}

fn hex(d: &Digest) -> String {
    base16ct::lower::encode_string(&d.0)
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

fn count_of(name: &str, value: Option<Vec<u8>>) -> Result<u64, StoreError> {
    value.map_or(Ok(0), |v| Ok(u64::from_le_bytes(v.try_into().map_err(|_| corrupt(name, "bad count"))?)))
}

/// A count kept in the store: (value in the store, value after this batch).
type Count = (u64, u64);

/// Saves and deletes lists in one metadata batch, keeping the reference counts. One writer
/// per batch (a second one would not see the first one's pending changes), and callers
/// serialise writers (the provider holds its write lock).
pub(crate) struct ListWriter<'m, M: MetaStore> {
    meta: &'m M,
    chunk_refs: HashMap<Digest, Count>,
    new_chunks: HashMap<Digest, Vec<u8>>,
    dependents: HashMap<String, Count>,
    /// Manifests and hidden marks set by this batch (`None`: deleted), the last one wins.
    manifests: HashMap<String, Option<Manifest>>,
    hidden: HashMap<String, bool>,
}

impl<M: MetaStore> std::fmt::Debug for ListWriter<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ListWriter({} lists, {} new chunks)", self.manifests.len(), self.new_chunks.len())
    }
}

impl<'m, M: MetaStore> ListWriter<'m, M> {
    pub fn new(meta: &'m M) -> Self {
        ListWriter {
            meta,
            chunk_refs: HashMap::new(),
            new_chunks: HashMap::new(),
            dependents: HashMap::new(),
            manifests: HashMap::new(),
            hidden: HashMap::new(),
        }
    }

    fn chunk_refs(&mut self, chunk: &Digest) -> Result<&mut Count, StoreError> {
        if !self.chunk_refs.contains_key(chunk) {
            let stored = count_of("refs", self.meta.get(&ref_key(chunk))?)?;
            self.chunk_refs.insert(*chunk, (stored, stored));
        }
        Ok(self.chunk_refs.get_mut(chunk).expect("inserted"))
    }

    fn dependents(&mut self, name: &str) -> Result<&mut Count, StoreError> {
        if !self.dependents.contains_key(name) {
            let stored = count_of(name, self.meta.get(&dependents_key(name))?)?;
            self.dependents.insert(name.to_string(), (stored, stored));
        }
        Ok(self.dependents.get_mut(name).expect("inserted"))
    }

    fn is_hidden(&self, name: &str) -> Result<bool, StoreError> {
        match self.hidden.get(name) {
            Some(&h) => Ok(h),
            None => Ok(self.meta.get(&hidden_key(name))?.is_some()),
        }
    }

    /// The manifest `name` has now, counting this batch's changes.
    fn current(&self, name: &str) -> Result<Option<Manifest>, StoreError> {
        match self.manifests.get(name) {
            Some(m) => Ok(m.clone()),
            None => self.meta.get(&manifest_key(name))?.map(|b| Manifest::from_bytes(name, &b)).transpose(),
        }
    }

    /// Stores `list` under `name` in full, replacing what was there.
    pub fn save(&mut self, name: &str, list: &FlexList) -> Result<(), StoreError> {
        self.clear(name)?;
        let mut chunks = Vec::new();
        let mut chunker = Chunker::default();
        for l in list.iter() {
            if let Some(cut) = chunker.push(&l.block) {
                chunks.push(self.add_chunk(cut)?);
            }
        }
        if let Some(cut) = chunker.finish() {
            chunks.push(self.add_chunk(cut)?);
        }
        let manifest = Manifest { root: list.root(), blocks: list.block_count() as u64, body: Body::Full { chunks } };
        self.manifests.insert(name.to_string(), Some(manifest));
        Ok(())
    }

    /// Stores `list` under `name`, where `list` is the list saved as `base` after `edits`:
    /// as a delta of a few hundred bytes, or in full when `base` is missing or already
    /// [`MAX_DELTA_DEPTH`] deltas above a full list.
    pub fn save_edited(&mut self, name: &str, base: &str, list: &FlexList, edits: &[Edit]) -> Result<(), StoreError> {
        let depth = match self.current(base)? {
            Some(m) if !self.is_hidden(base)? && m.depth() < MAX_DELTA_DEPTH && base != name => m.depth() + 1,
            _ => return self.save(name, list),
        };
        self.clear(name)?;
        self.dependents(base)?.1 += 1;
        let body = Body::Delta { depth, base: base.to_string(), edits: edits.to_vec() };
        let manifest = Manifest { root: list.root(), blocks: list.block_count() as u64, body };
        self.manifests.insert(name.to_string(), Some(manifest));
        Ok(())
    }

    /// Makes room to save under `name`: a list that deltas rest on cannot be replaced.
    fn clear(&mut self, name: &str) -> Result<(), StoreError> {
        if self.dependents(name)?.1 > 0 {
            return Err(StoreError::Backend {
                at: format!("list {name}"),
                detail: "other lists are saved as edits of it; it cannot be replaced".into(),
            });
        }
        self.delete(name)
    }

    /// Forgets the list `name` (nothing if there is none). One that deltas rest on stays,
    /// hidden, until the last of them goes.
    pub fn delete(&mut self, name: &str) -> Result<(), StoreError> {
        if self.current(name)?.is_none() || self.is_hidden(name)? {
            return Ok(());
        }
        if self.dependents(name)?.1 > 0 {
            self.hidden.insert(name.to_string(), true);
            return Ok(());
        }
        let mut next = Some(name.to_string());
        while let Some(name) = next.take() {
            let Some(old) = self.current(&name)? else { break };
            self.manifests.insert(name.clone(), None);
            if self.is_hidden(&name)? {
                self.hidden.insert(name.clone(), false);
            }
            match old.body {
                Body::Full { chunks } => {
                    for c in &chunks {
                        let count = self.chunk_refs(&c.hash)?;
                        count.1 = count.1.checked_sub(1).ok_or_else(|| corrupt(&name, "reference count below zero"))?;
                    }
                }
                Body::Delta { base, .. } => {
                    let count = self.dependents(&base)?;
                    count.1 = count.1.checked_sub(1).ok_or_else(|| corrupt(&base, "dependents below zero"))?;
                    if count.1 == 0 && self.is_hidden(&base)? {
                        next = Some(base);
                    }
                }
            }
        }
        Ok(())
    }

    /// Counts a chunk of a list being saved, keeping its bytes if the store lacks them.
    fn add_chunk(&mut self, (bytes, blocks, len): Cut) -> Result<ChunkInfo, StoreError> {
        let hash = Digest(*blake3::hash(&bytes).as_bytes());
        let count = self.chunk_refs(&hash)?;
        count.1 += 1;
        if count.0 == 0 {
            self.new_chunks.entry(hash).or_insert(bytes);
        }
        Ok(ChunkInfo { hash, blocks, bytes: len })
    }

    /// Adds everything to `batch`: new chunks, counts (a chunk nobody uses any more goes),
    /// hidden marks, manifests.
    pub fn finish(self, batch: &mut MetaBatch) {
        for (hash, (before, after)) in &self.chunk_refs {
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
        for (name, (before, after)) in &self.dependents {
            match (before, after) {
                (_, 0) => batch.delete(dependents_key(name)),
                (b, a) if b == a => continue,
                (_, a) => batch.put(dependents_key(name), a.to_le_bytes().to_vec()),
            };
        }
        for (name, hidden) in &self.hidden {
            if *hidden {
                batch.put(hidden_key(name), Vec::new());
            } else {
                batch.delete(hidden_key(name));
            }
        }
        for (name, manifest) in self.manifests {
            match manifest {
                Some(m) => batch.put(manifest_key(&name), m.to_bytes()),
                None => batch.delete(manifest_key(&name)),
            };
        }
    }
}

/// Loads the list saved under `name`. A missing list is [`StoreError::NotFound`]; stored bytes
/// that do not hash to their chunk's name, or do not rebuild the saved roots, are
/// [`StoreError::Corrupt`], never a silently different list.
pub(crate) fn load_list(meta: &impl MetaStore, name: &str) -> Result<FlexList, StoreError> {
    let load = |at: &str| -> Result<Manifest, StoreError> {
        match meta.get(&manifest_key(at))? {
            Some(bytes) => Manifest::from_bytes(at, &bytes),
            None if at == name => Err(StoreError::NotFound { key: format!("list {name}") }),
            None => Err(corrupt(name, &format!("its base list {at} is missing"))),
        }
    };
    // The deltas from `name` down to the full list they rest on.
    let mut deltas = Vec::new();
    let mut manifest = load(name)?;
    while let Body::Delta { base, .. } = &manifest.body {
        if deltas.len() > MAX_DELTA_DEPTH as usize {
            return Err(corrupt(name, "too many deltas"));
        }
        let below = load(base)?;
        deltas.push(std::mem::replace(&mut manifest, below));
    }
    let Body::Full { chunks } = &manifest.body else { unreachable!("the loop ends at a full list") };
    let mut list = load_full(meta, name, &manifest, chunks)?;
    for delta in deltas.iter().rev() {
        let Body::Delta { edits, .. } = &delta.body else { unreachable!("only deltas were kept") };
        list.apply(edits).map_err(|e| corrupt(name, &format!("a saved edit does not apply: {e}")))?;
        if list.root() != delta.root || list.block_count() as u64 != delta.blocks {
            return Err(corrupt(name, "saved edits do not rebuild the saved root"));
        }
    }
    Ok(list)
}

fn load_full(
    meta: &impl MetaStore,
    name: &str,
    manifest: &Manifest,
    chunks: &[ChunkInfo],
) -> Result<FlexList, StoreError> {
    let mut blocks: Vec<Block> = Vec::with_capacity(manifest.blocks.min(1 << 24) as usize);
    for chunk in chunks {
        let bytes = meta.get(&chunk_key(&chunk.hash))?.ok_or_else(|| corrupt(name, "a chunk is missing"))?;
        if Digest(*blake3::hash(&bytes).as_bytes()) != chunk.hash || bytes.len() != BLOCK_RECORD * chunk.blocks as usize
        {
            return Err(corrupt(name, "a chunk does not match its hash"));
        }
        blocks.extend(chunk_blocks(&bytes));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let list = FlexList::build_parallel(&blocks, threads).map_err(|e| corrupt(name, &e.to_string()))?;
    if list.root() != manifest.root || list.block_count() as u64 != manifest.blocks {
        return Err(corrupt(name, "stored blocks do not rebuild the stored root"));
    }
    Ok(list)
}

/// The names of the saved lists (hidden ones too).
pub(crate) fn list_names(meta: &impl MetaStore) -> Result<Vec<String>, StoreError> {
    let names = meta.scan(b"root/")?.into_iter().map(|(k, _)| String::from_utf8_lossy(&k[5..]).into_owned());
    Ok(names.collect())
}

#[cfg(test)]
mod tests;

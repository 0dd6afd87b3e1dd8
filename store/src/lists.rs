//! FlexLists persisted in the metadata store, so a restarted provider answers proofs without
//! the client and without re-reading any block.
//!
//! A list is saved as its block sequence, `(tag:32, length:u32le, block_ref:u64le)` per block,
//! in values of up to [`BLOCKS_PER_CHUNK`] blocks under `list/<name>/<chunk:08x>`, and loaded
//! by the parallel build. The FlexList's shape is a function of its blocks alone, so the
//! rebuilt list is the saved one, root included; the load checks that root against the one
//! saved beside it.

use crate::{MetaBatch, MetaStore, StoreError};
use vouch_core::{Block, Digest, FlexList};

/// Blocks per stored value (2.9 MB).
pub const BLOCKS_PER_CHUNK: usize = 1 << 16;
const BLOCK_RECORD: usize = 44;

fn chunk_key(name: &str, chunk: usize) -> Vec<u8> {
    format!("list/{name}/{chunk:08x}").into_bytes()
}

fn root_key(name: &str) -> Vec<u8> {
    format!("root/{name}").into_bytes()
}

/// Adds to `batch` everything that stores `list` under `name` (replacing an older version).
/// `old_chunks` is how many chunks the previous version had (see [`load_list`]).
pub fn save_list(batch: &mut MetaBatch, name: &str, list: &FlexList, old_chunks: usize) -> usize {
    let blocks: Vec<Block> = list.iter().map(|l| l.block).collect();
    let chunks = blocks.len().div_ceil(BLOCKS_PER_CHUNK);
    for (i, part) in blocks.chunks(BLOCKS_PER_CHUNK).enumerate() {
        let mut value = Vec::with_capacity(part.len() * BLOCK_RECORD);
        for b in part {
            value.extend_from_slice(&b.tag.0);
            value.extend_from_slice(&b.length.to_le_bytes());
            value.extend_from_slice(&b.block_ref.to_le_bytes());
        }
        batch.put(chunk_key(name, i), value);
    }
    for stale in chunks..old_chunks {
        batch.delete(chunk_key(name, stale));
    }
    let mut root = list.root().0.to_vec();
    root.extend_from_slice(&(chunks as u64).to_le_bytes());
    batch.put(root_key(name), root);
    chunks
}

/// Loads the list saved under `name`; returns it and its number of chunks. A missing list is
/// [`StoreError::NotFound`]; stored bytes that do not rebuild the saved root are
/// [`StoreError::Corrupt`], never a silently different list.
pub fn load_list(meta: &impl MetaStore, name: &str) -> Result<(FlexList, usize), StoreError> {
    let corrupt = |why: &str| StoreError::Corrupt { at: format!("list {name}"), detail: why.to_string() };
    let saved = meta.get(&root_key(name))?.ok_or_else(|| StoreError::NotFound { key: format!("list {name}") })?;
    if saved.len() != 40 {
        return Err(corrupt("bad root record"));
    }
    let root = Digest(saved[..32].try_into().expect("32 bytes"));
    let chunks = u64::from_le_bytes(saved[32..].try_into().expect("8 bytes")) as usize;
    let entries = meta.scan(format!("list/{name}/").as_bytes())?;
    if entries.len() != chunks {
        return Err(corrupt("chunk count differs from the root record"));
    }
    let mut blocks = Vec::with_capacity(chunks * BLOCKS_PER_CHUNK);
    for (i, (key, value)) in entries.iter().enumerate() {
        if *key != chunk_key(name, i) || value.len() % BLOCK_RECORD != 0 {
            return Err(corrupt("malformed chunk"));
        }
        for r in value.chunks_exact(BLOCK_RECORD) {
            let tag = Digest(r[..32].try_into().expect("32 bytes"));
            let length = u32::from_le_bytes(r[32..36].try_into().expect("4 bytes"));
            blocks.push(Block::new(tag, length, u64::from_le_bytes(r[36..].try_into().expect("8 bytes"))));
        }
    }
    let list = FlexList::build_parallel(&blocks, rayon_threads()).map_err(|e| corrupt(&e.to_string()))?;
    if list.root() != root {
        return Err(corrupt("stored blocks do not rebuild the stored root"));
    }
    Ok((list, chunks))
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

//! A change to the repository, gathered by its caller and resolved into one metadata batch
//! under the repository's commit lock (so the bookkeeping it reads is current, whatever
//! compaction did meanwhile).

use super::{Repository, StoredBlocks};
use crate::keys::{self, SegmentInfo};
use crate::lists::ListWriter;
use crate::segments::{Location, INLINE_BIT};
use crate::{MetaBatch, MetaStore, StoreError};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use vouch_core::{Edit, FlexList};

/// Records, blocks and lists that change together.
#[derive(Debug, Default)]
pub struct Commit {
    records: MetaBatch,
    blocks: Vec<StoredBlocks>,
    /// Uploads of blocks already indexed, whose entries move to the new copies.
    replaced: Vec<StoredBlocks>,
    lists: Vec<ListChange>,
    /// Per owner, the ids of its committed blocks to keep; the others are forgotten.
    forget: Vec<(Vec<u8>, HashSet<u64>)>,
}

#[derive(Debug)]
enum ListChange {
    Save { name: String, list: Arc<FlexList> },
    SaveEdited { name: String, base: String, list: Arc<FlexList>, edits: Vec<Edit> },
    Delete { name: String },
}

impl Commit {
    pub fn put_record(&mut self, key: &[u8], value: impl Into<Vec<u8>>) -> &mut Self {
        self.records.put(keys::record(key), value);
        self
    }

    pub fn delete_record(&mut self, key: &[u8]) -> &mut Self {
        self.records.delete(keys::record(key));
        self
    }

    /// Indexes an upload's blocks (and writes its inline segment).
    pub fn add_blocks(&mut self, blocks: StoredBlocks) -> &mut Self {
        self.blocks.push(blocks);
        self
    }

    /// Indexes an upload of blocks the owner has already (a copy of their bytes written again
    /// after the old one was damaged): their entries move to the new copies, and the old
    /// copies count as garbage of their segments, for compaction to reclaim.
    pub fn replace_blocks(&mut self, blocks: StoredBlocks) -> &mut Self {
        self.replaced.push(blocks);
        self
    }

    /// Stores `list` under `name` in full, replacing what was there.
    pub fn save_list(&mut self, name: &str, list: Arc<FlexList>) -> &mut Self {
        self.lists.push(ListChange::Save { name: name.into(), list });
        self
    }

    /// Stores `list`, the list saved as `base` after `edits`, under `name`: as a delta of a few
    /// hundred bytes while the chain of deltas is short, else in full.
    pub fn save_edited_list(&mut self, name: &str, base: &str, list: Arc<FlexList>, edits: Vec<Edit>) -> &mut Self {
        self.lists.push(ListChange::SaveEdited { name: name.into(), base: base.into(), list, edits });
        self
    }

    /// Forgets the list `name` (a list that deltas rest on stays, hidden, until they go).
    pub fn delete_list(&mut self, name: &str) -> &mut Self {
        self.lists.push(ListChange::Delete { name: name.into() });
        self
    }

    /// Forgets every committed block of `owner` whose id is not in `keep`. Their space comes
    /// back when compaction rewrites their segments (an inline segment goes with its last
    /// block, in this commit).
    pub fn forget_blocks_except(&mut self, owner: &[u8], keep: HashSet<u64>) -> &mut Self {
        self.forget.push((owner.to_vec(), keep));
        self
    }

    /// Takes `other`'s changes, after this one's: changes made durable together.
    pub fn absorb(&mut self, other: Commit) -> &mut Self {
        let Commit { records, blocks, replaced, lists, forget } = other;
        self.records.append(records);
        self.blocks.extend(blocks);
        self.replaced.extend(replaced);
        self.lists.extend(lists);
        self.forget.extend(forget);
        self
    }

    /// The batch that makes this change durable, read against the store as it is now.
    pub(super) fn resolve(mut self, repo: &Repository) -> Result<MetaBatch, StoreError> {
        let mut batch = std::mem::take(&mut self.records);
        let mut lists = ListWriter::new(&repo.meta);
        for change in std::mem::take(&mut self.lists) {
            match change {
                ListChange::Save { name, list } => lists.save(&name, &list)?,
                ListChange::SaveEdited { name, base, list, edits } => lists.save_edited(&name, &base, &list, &edits)?,
                ListChange::Delete { name } => lists.delete(&name)?,
            }
        }
        lists.finish(&mut batch);

        let mut segments: HashMap<u64, SegmentInfo> = HashMap::new();
        for stored in &self.replaced {
            for (id, _, _) in &stored.entries {
                let Some(value) = repo.meta.get(&keys::block(&stored.owner, *id)?)? else { continue };
                let at = old_location(&stored.owner, *id, &value)?;
                drop_from(&mut segments, repo, at)?;
            }
        }
        self.blocks.append(&mut self.replaced);
        for stored in &mut self.blocks {
            for (id, at, tag) in &stored.entries {
                batch.put(keys::block(&stored.owner, *id)?, [&at.to_bytes()[..], tag].concat());
            }
            segments.extend(stored.segments.iter().copied());
            for (id, bytes) in std::mem::take(&mut stored.inline) {
                batch.put(keys::inline_segment(id), bytes);
            }
        }
        for (owner, keep) in &self.forget {
            for (key, value) in repo.meta.scan(&keys::block_prefix(owner)?)? {
                let Some((_, id)) = keys::parse_block(&key) else { continue };
                if keep.contains(&id) {
                    continue;
                }
                let at = old_location(owner, id, &value)?;
                batch.delete(key);
                drop_from(&mut segments, repo, at)?;
            }
        }
        for (id, info) in &segments {
            if info.live_blocks == 0 && id & INLINE_BIT != 0 {
                // An inline segment goes with its last block; a blob segment waits for
                // compaction, which deletes the object after a commit stops naming it.
                batch.delete(keys::inline_segment(*id));
                batch.delete(keys::segment(*id));
            } else {
                batch.put(keys::segment(*id), info.to_bytes());
            }
        }
        batch.put(keys::NEXT_SEGMENT, repo.next_segment.load(Ordering::SeqCst).to_le_bytes().to_vec());
        for stored in &mut self.blocks {
            stored.hand_over();
        }
        Ok(batch)
    }
}

/// Where an index entry says block `id` of `owner` is.
fn old_location(owner: &[u8], id: u64, value: &[u8]) -> Result<Location, StoreError> {
    value.get(..Location::ENCODED_LEN).and_then(Location::from_bytes).ok_or_else(|| StoreError::Corrupt {
        at: format!("block {id} of {}", String::from_utf8_lossy(owner)),
        detail: "short index entry".into(),
    })
}

/// The block at `at` is no longer live in its segment.
fn drop_from(segments: &mut HashMap<u64, SegmentInfo>, repo: &Repository, at: Location) -> Result<(), StoreError> {
    let info = match segments.get_mut(&at.segment) {
        Some(info) => info,
        None => {
            let stored = repo.segment_info(at.segment)?.unwrap_or_default();
            segments.entry(at.segment).or_insert(stored)
        }
    };
    info.live_bytes = info.live_bytes.saturating_sub(u64::from(at.len));
    info.live_blocks = info.live_blocks.saturating_sub(1);
    Ok(())
}

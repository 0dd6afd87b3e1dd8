//! The provider's side of a namespace: its entries in name order under the namespace
//! FlexList, held in memory so that a lookup or a commit costs O(log n) in the number of
//! names, not a scan.
//!
//! Shaped like jmt's tree: the structure does no I/O. It is loaded once from the entries the
//! caller reads ([`NamespaceTree::load`]); a change is first proven without touching the tree
//! ([`NamespaceTree::prove_update`], which also gives the [`EntryBatch`] the caller persists),
//! then applied once the caller has made it durable ([`NamespaceTree::apply`]). Readers in
//! between see only durable state, and a change that is never made durable leaves no trace.
//!
//! A lookup by name is a binary search over positions (each a rank search down the list), so
//! O(log² n) node visits and O(log n) name comparisons. Each leaf's `block_ref`, which the
//! hashes do not cover, names the slot of its entry.

use super::{lookup_indices, EntryRecord, Found, LookupProof};
use crate::flexlist::{Block, BuildError, Edit, EditError, MultiProof, ProofError, UpdateProof};
use crate::hash::Digest;
use crate::FlexList;

/// Why entries cannot form a namespace, or a change cannot be made to one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("entries out of name order at {0:?}")]
    OutOfOrder(String),
    #[error(transparent)]
    Name(#[from] super::RecordError),
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Proof(#[from] ProofError),
    /// An insert or modify brings a leaf that is not the entry given with it.
    #[error("an edit's leaf is not the entry it brings")]
    WrongLeaf,
    /// A leaf whose slot holds no entry (a bug, reported rather than a panic).
    #[error("a namespace leaf names no entry")]
    Dangling,
}

/// What a change does to the stored entries: the caller writes `put` and deletes `delete`
/// in the batch that makes the change durable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryBatch {
    pub put: Vec<EntryRecord>,
    pub delete: Vec<String>,
}

/// One client's namespace, as the provider holds it.
#[derive(Clone, Debug, Default)]
pub struct NamespaceTree {
    list: FlexList,
    /// Entries by slot; a leaf's `block_ref` is its slot.
    slots: Vec<Option<EntryRecord>>,
    free: Vec<u64>,
}

fn in_slot(entry: &EntryRecord, slot: u64) -> Block {
    let leaf = entry.leaf();
    Block::new(leaf.tag, leaf.length, slot)
}

impl NamespaceTree {
    /// The namespace of `entries`, which must be in strictly increasing name order (the order
    /// of their keys in the provider's store).
    pub fn load(entries: Vec<EntryRecord>) -> Result<Self, TreeError> {
        if let Some(w) = entries.windows(2).find(|w| w[0].name >= w[1].name) {
            return Err(TreeError::OutOfOrder(w[1].name.clone()));
        }
        let leaves: Vec<Block> = entries.iter().enumerate().map(|(i, e)| in_slot(e, i as u64)).collect();
        let list = FlexList::build(&leaves)?;
        Ok(NamespaceTree { list, slots: entries.into_iter().map(Some).collect(), free: Vec::new() })
    }

    /// Number of names.
    pub fn len(&self) -> u64 {
        self.list.total_len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The namespace root (what the client holds).
    pub fn root(&self) -> Digest {
        self.list.root()
    }

    /// The entry at position `index`.
    pub fn entry(&self, index: u64) -> Result<&EntryRecord, TreeError> {
        let found = self.list.search(index).ok_or(TreeError::Dangling)?;
        self.slots.get(found.block.block_ref as usize).and_then(Option::as_ref).ok_or(TreeError::Dangling)
    }

    /// Every entry, in name order.
    pub fn entries(&self) -> impl Iterator<Item = Result<&EntryRecord, TreeError>> + '_ {
        self.list
            .iter()
            .map(|l| self.slots.get(l.block.block_ref as usize).and_then(Option::as_ref).ok_or(TreeError::Dangling))
    }

    /// Where `name` is, or would be inserted.
    pub fn find(&self, name: &str) -> Result<Found, TreeError> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.entry(mid)?.name.as_str() < name {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo < self.len() {
            let entry = self.entry(lo)?;
            if entry.name == name {
                return Ok(Found::At { index: lo, entry: entry.clone() });
            }
        }
        Ok(Found::Absent { index: lo })
    }

    /// The lookup proof of `name` (what [`super::verify_lookup`] checks), and what it found.
    pub fn lookup(&self, name: &str) -> Result<(LookupProof, Found), TreeError> {
        let found = self.find(name)?;
        let (index, present) = match &found {
            Found::At { index, .. } => (*index, true),
            Found::Absent { index } => (*index, false),
        };
        let indices = lookup_indices(index, self.len(), present);
        let proof = if self.is_empty() { None } else { Some(self.list.prove(&indices)?) };
        let entries = indices.iter().map(|&i| self.entry(i).cloned()).collect::<Result<_, _>>()?;
        Ok((LookupProof { index, entries, proof }, found))
    }

    /// The proof of every position (a listing; [`super::verify_listing`]); none when empty.
    pub fn listing_proof(&self) -> Result<Option<MultiProof>, TreeError> {
        if self.is_empty() {
            return Ok(None);
        }
        let indices: Vec<u64> = (0..self.len()).collect();
        Ok(Some(self.list.prove(&indices)?))
    }

    /// The update proof of `edits` (offsets are positions before the batch), each insert or
    /// modify bringing `entry`'s leaf, and the entries to store; the tree is not changed.
    ///
    /// Each insert or modify must keep names in strictly increasing order against the
    /// entries around its position (a wrong position is refused here, before a proof is made;
    /// the client's lookup checks independently that the neighbours bracket the name).
    pub fn prove_update(
        &self,
        edits: &[Edit],
        entry: Option<&EntryRecord>,
    ) -> Result<(UpdateProof, EntryBatch), TreeError> {
        let mut batch = EntryBatch::default();
        for (edit, old) in edits.iter().zip(self.checked(edits, entry)?) {
            match edit {
                Edit::Insert { .. } | Edit::Modify { .. } => {
                    let entry = entry.ok_or(TreeError::WrongLeaf)?;
                    if let Some(old) = old.filter(|old| old.name != entry.name) {
                        batch.delete.push(old.name.clone());
                    }
                    batch.put.push(entry.clone());
                }
                Edit::Remove { .. } => batch.delete.extend(old.map(|old| old.name.clone())),
            }
        }
        Ok((self.list.prove_update(edits)?, batch))
    }

    /// Applies `edits` (as [`NamespaceTree::prove_update`] proved them); returns the new root.
    pub fn apply(&mut self, edits: &[Edit], entry: Option<&EntryRecord>) -> Result<Digest, TreeError> {
        self.checked(edits, entry)?;
        let mut freed = Vec::new();
        for edit in edits {
            if let Edit::Modify { at, .. } | Edit::Remove { at } = *edit {
                freed.push(self.list.search(at).ok_or(TreeError::Dangling)?.block.block_ref);
            }
        }
        // Every edit checked: from here on a failure can only come from the list itself.
        let placed: Vec<Edit> = edits
            .iter()
            .map(|edit| match (*edit, entry) {
                (Edit::Insert { at, .. }, Some(entry)) => {
                    Edit::Insert { at, block: in_slot(entry, self.take_slot(entry.clone())) }
                }
                (Edit::Modify { at, .. }, Some(entry)) => {
                    Edit::Modify { at, block: in_slot(entry, self.take_slot(entry.clone())) }
                }
                (edit, _) => edit,
            })
            .collect();
        match self.list.apply(&placed) {
            Ok(root) => {
                // The slots go back only once the list no longer names them.
                for slot in freed {
                    self.release_slot(slot);
                }
                Ok(root)
            }
            Err(e) => {
                for edit in &placed {
                    if let Edit::Insert { block, .. } | Edit::Modify { block, .. } = edit {
                        self.release_slot(block.block_ref);
                    }
                }
                Err(e.into())
            }
        }
    }

    /// Checks every edit before any is made: each insert or modify brings `entry`'s own leaf
    /// (tag and length), each modify or remove names a position that exists. Returns the
    /// entry each edit replaces or removes.
    fn checked(&self, edits: &[Edit], entry: Option<&EntryRecord>) -> Result<Vec<Option<&EntryRecord>>, TreeError> {
        let leaf = entry.map(EntryRecord::leaf);
        let brings_entry = |block: &Block| leaf.is_some_and(|l| l.tag == block.tag && l.length == block.length);
        edits
            .iter()
            .map(|edit| {
                if let Edit::Insert { block, .. } | Edit::Modify { block, .. } = edit {
                    if !brings_entry(block) {
                        return Err(TreeError::WrongLeaf);
                    }
                }
                if let (Edit::Insert { at, .. } | Edit::Modify { at, .. }, Some(entry)) = (*edit, entry) {
                    self.check_place(at, matches!(edit, Edit::Modify { .. }), &entry.name)?;
                }
                match *edit {
                    Edit::Insert { .. } => Ok(None),
                    Edit::Modify { at, .. } | Edit::Remove { at } if at >= self.len() => {
                        Err(EditError::OutOfRange { at, len: self.len() }.into())
                    }
                    Edit::Modify { at, .. } | Edit::Remove { at } => Ok(Some(self.entry(at)?)),
                }
            })
            .collect()
    }

    /// Whether `name` belongs at `at`: after the entry before and, if `replaces`, before the
    /// entry after the one replaced; otherwise before the entry now at `at`.
    fn check_place(&self, at: u64, replaces: bool, name: &str) -> Result<(), TreeError> {
        let after = if replaces { at.saturating_add(1) } else { at };
        let before = match at.checked_sub(1) {
            Some(i) if i < self.len() => Some(self.entry(i)?),
            _ => None,
        };
        let next = if after < self.len() { Some(self.entry(after)?) } else { None };
        if before.is_some_and(|b| b.name.as_str() >= name) || next.is_some_and(|n| n.name.as_str() <= name) {
            return Err(TreeError::OutOfOrder(name.to_string()));
        }
        Ok(())
    }

    fn take_slot(&mut self, entry: EntryRecord) -> u64 {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(entry);
                slot
            }
            None => {
                self.slots.push(Some(entry));
                self.slots.len() as u64 - 1
            }
        }
    }

    fn release_slot(&mut self, slot: u64) {
        if let Some(s) = self.slots.get_mut(slot as usize) {
            if s.take().is_some() {
                self.free.push(slot);
            }
        }
    }
}

#[cfg(test)]
#[path = "tree_tests.rs"]
pub(super) mod tests;

//! Edits and multiUpdate (Alg. 3.1) on the provider's list.
//!
//! A batch of edits works like a patch: every offset refers to the file *before* the batch, as
//! a diff of the stored version against the new one produces them. Modify and remove name the
//! block holding a byte; insert names a block boundary, and several inserts at one boundary go
//! in the order given. A single edit is a batch of one.
//!
//! The provider opens the union of the search paths the batch needs (each touched block and the
//! block before it, whose tower the change can reach), applies the edits to the opened region
//! and rebuilds it, hashing each affected node once (calculateMultiHash, Alg. 3.3). The client
//! repeats the same two steps on the proof ([`super::verify_multi_update`]).

use super::build::Item;
use super::{height_for_tag, Block, MAX_TOTAL_LEN};

/// One change to a file, with offsets into the file as it was before the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Put `block` in front of the block that starts at byte `at` (`at` = file length appends).
    Insert { at: u64, block: Block },
    /// Replace the block holding byte `at` by `block` (any length).
    Modify { at: u64, block: Block },
    /// Delete the block holding byte `at`.
    Remove { at: u64 },
}

impl Edit {
    /// The byte offset the edit names.
    pub fn at(&self) -> u64 {
        match *self {
            Edit::Insert { at, .. } | Edit::Modify { at, .. } | Edit::Remove { at } => at,
        }
    }

    fn new_block(&self) -> Option<&Block> {
        match self {
            Edit::Insert { block, .. } | Edit::Modify { block, .. } => Some(block),
            Edit::Remove { .. } => None,
        }
    }
}

/// Why a batch of edits cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("edit at byte {at} brings an empty block")]
    EmptyBlock { at: u64 },
    #[error("edit at byte {at} is past the end of the file ({len} bytes)")]
    OutOfRange { at: u64, len: u64 },
    #[error("insert at byte {at} is not at a block boundary")]
    NotABoundary { at: u64 },
    #[error("two edits of the batch change the block holding byte {at}")]
    Conflict { at: u64 },
    #[error("the file would exceed {} bytes", MAX_TOTAL_LEN)]
    TooLong,
    #[error("the list has no room for more nodes")]
    TooManyNodes,
    /// The list's own proof of a batch did not rebuild (a bug, reported rather than a panic).
    #[error("the list's proof of the batch does not rebuild: {0}")]
    Unprovable(String),
}

/// [`apply_edits`] failed: a bad batch, or (client side) a proof that does not open enough.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ApplyError {
    Edit(EditError),
    /// The edit at this offset needs a node that the opened region keeps closed.
    Closed {
        at: u64,
    },
}

impl From<EditError> for ApplyError {
    fn from(e: EditError) -> Self {
        ApplyError::Edit(e)
    }
}

/// Applies `edits` to an opened region (the items of a whole list, in file order) and returns
/// the new items. A change may only follow an opened leaf: a kept subtree's shape depends on
/// the element after it, so that element must stay as it is.
pub(crate) fn apply_edits<R: Copy>(items: Vec<Item<R>>, edits: &[Edit]) -> Result<Vec<Item<R>>, ApplyError> {
    let len: u64 = items.iter().map(Item::len).sum();
    check_edits(edits, len)?;
    let mut order: Vec<&Edit> = edits.iter().collect();
    // Inserts before the other edits at the same offset; the sort is stable.
    order.sort_by_key(|e| (e.at(), !matches!(e, Edit::Insert { .. })));
    let mut next = order.into_iter().peekable();
    let mut out = Vec::with_capacity(items.len() + edits.len());
    let mut start = 0u64;
    let mut prev_open = false;
    for (i, item) in items.into_iter().enumerate() {
        let end = start + item.len();
        // Inserts at the boundary in front of this item (never in front of the left sentinel).
        while let Some(Edit::Insert { at, block }) = next.peek().copied() {
            if i == 0 || *at != start {
                break;
            }
            if !prev_open {
                return Err(ApplyError::Closed { at: *at });
            }
            out.push(Item::Leaf { block: *block, height: height_for_tag(&block.tag) });
            next.next();
        }
        // Edits inside this item.
        let mut replace: Option<Option<Block>> = None;
        while let Some(edit) = next.peek().copied() {
            if edit.at() >= end {
                break;
            }
            let at = edit.at();
            match (edit, item.is_leaf()) {
                (_, false) => return Err(ApplyError::Closed { at }),
                (Edit::Insert { .. }, true) => return Err(EditError::NotABoundary { at }.into()),
                (_, true) if !prev_open => return Err(ApplyError::Closed { at }),
                (_, true) if replace.is_some() => return Err(EditError::Conflict { at }.into()),
                (edit, true) => replace = Some(edit.new_block().copied()),
            }
            next.next();
        }
        prev_open = item.is_leaf();
        match replace {
            None => out.push(item),
            Some(Some(block)) => out.push(Item::Leaf { block, height: height_for_tag(&block.tag) }),
            Some(None) => {}
        }
        start = end;
    }
    match next.next() {
        Some(edit) => Err(ApplyError::Closed { at: edit.at() }),
        None => Ok(out),
    }
}

/// Checks what can be checked without the list's shape.
pub(super) fn check_edits(edits: &[Edit], len: u64) -> Result<(), EditError> {
    // An upper bound: what the batch adds, ignoring what it removes.
    let mut new_len = i128::from(len);
    for edit in edits {
        let at = edit.at();
        let in_range = match edit {
            Edit::Insert { .. } => at <= len,
            _ => at < len,
        };
        if !in_range {
            return Err(EditError::OutOfRange { at, len });
        }
        if let Some(block) = edit.new_block() {
            if block.length == 0 {
                return Err(EditError::EmptyBlock { at });
            }
            new_len += i128::from(block.length);
        }
    }
    if new_len > i128::from(MAX_TOTAL_LEN) {
        return Err(EditError::TooLong);
    }
    Ok(())
}

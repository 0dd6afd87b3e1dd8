//! The right-to-left builder that every FlexList algorithm shares.
//!
//! The builder turns a left-to-right sequence of [`Item`]s into the canonical FlexList over
//! them. An item is either an explicit block (a leaf to create) or an existing subtree that is
//! kept as it is (a "dummy" node of Alg. A.1 on the client, an untouched node on the server).
//! Processing right to left, a stack holds the top node of every element that is still visible
//! from the left (heights strictly increasing downwards); an element of height `h` takes the
//! visible elements of height `<= h` as its after-neighbours, one level at a time, creating one
//! inner node per such link. This is buildFlexList of paper [17], generalised to subtrees.

use super::{Block, MAX_TOTAL_LEN, SENTINEL_HEIGHT};
use crate::hash::{self, Digest};

/// One element of the sequence a FlexList is built over.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Item<R> {
    /// A block whose leaf (and tower) is built here. `height` is the element's height
    /// ([`super::height_for_tag`] for blocks, fixed for sentinels).
    Leaf { block: Block, height: u8 },
    /// An existing subtree, kept whole. Its first element has height `height`; the subtree
    /// already holds that element's nodes up to level `base`, and every other element inside it
    /// is lower than the element that follows the subtree.
    Sub { node: R, rank: u64, height: u8, base: u8 },
}

impl<R> Item<R> {
    /// Bytes this item spans.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Item::Leaf { block, .. } => u64::from(block.length),
            Item::Sub { rank, .. } => *rank,
        }
    }

    pub(crate) fn is_leaf(&self) -> bool {
        matches!(self, Item::Leaf { .. })
    }
}

/// Why a build over subtrees failed: only possible when the subtrees come from a proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The items do not describe a canonical FlexList (levels out of order, stray sentinel).
    Shape,
    /// A rank exceeded [`super::MAX_TOTAL_LEN`].
    RankOverflow,
    /// The arena ran out of 32-bit node indices.
    TooManyNodes,
}

/// Where built nodes go: the provider's arena, or (on the client) just hashes and ranks.
pub(crate) trait Sink {
    type Ref: Copy;
    /// A leaf for `block` whose after-neighbour is `after`.
    fn leaf(&mut self, block: &Block, after: Option<Self::Ref>) -> Result<Self::Ref, Fault>;
    /// An inner node at `level`.
    fn node(&mut self, level: u8, below: Self::Ref, after: Self::Ref) -> Result<Self::Ref, Fault>;
}

/// Builds the canonical FlexList over `items`, which must start with the left sentinel (height
/// [`SENTINEL_HEIGHT`], as a leaf or inside a subtree) and end with the right sentinel. Returns
/// the root.
pub(crate) fn build<S: Sink, I>(sink: &mut S, items: I) -> Result<S::Ref, Fault>
where
    I: DoubleEndedIterator<Item = Item<S::Ref>>,
{
    let mut stack: Vec<(u8, S::Ref)> = Vec::with_capacity(64);
    for item in items.rev() {
        let (mut cur, mut level, height) = match item {
            Item::Leaf { block, height } => {
                let after = match stack.last() {
                    Some(&(0, r)) => {
                        stack.pop();
                        Some(r)
                    }
                    _ => None,
                };
                (sink.leaf(&block, after)?, 0, height)
            }
            Item::Sub { node, height, base, .. } => (node, base, height),
        };
        while let Some(&(h, after)) = stack.last() {
            if h > height {
                break;
            }
            if h <= level {
                // The subtree claimed to be complete up to `level`, yet a lower element follows.
                return Err(Fault::Shape);
            }
            stack.pop();
            cur = sink.node(h, cur, after)?;
            level = h;
        }
        stack.push((height, cur));
    }
    match stack.as_slice() {
        [(SENTINEL_HEIGHT, root)] => Ok(*root),
        _ => Err(Fault::Shape),
    }
}

/// Why [`super::FlexList::build`] refused its input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// Blocks must hold at least one byte; only sentinels are empty.
    #[error("block {index} is empty")]
    EmptyBlock { index: usize },
    /// The blocks add up to more than [`super::MAX_TOTAL_LEN`] bytes.
    #[error("blocks add up to more than {} bytes", super::MAX_TOTAL_LEN)]
    TooLong,
    /// More nodes than 32-bit node indices can address.
    #[error("too many blocks for one list")]
    TooManyBlocks,
}

/// A subtree known by hash and rank only (a "dummy node" of Alg. A.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HashRef {
    pub hash: Digest,
    pub rank: u64,
}

/// Builds nothing but hashes and ranks: the client's side of the builder.
pub(crate) struct HashSink;

impl Sink for HashSink {
    type Ref = HashRef;

    fn leaf(&mut self, block: &Block, after: Option<HashRef>) -> Result<HashRef, Fault> {
        let (after_rank, after_hash) = after.map_or((0, Digest::ZERO), |a| (a.rank, a.hash));
        let rank = u64::from(block.length) + after_rank;
        if rank > MAX_TOTAL_LEN {
            return Err(Fault::RankOverflow);
        }
        Ok(HashRef { hash: hash::flex_leaf(u64::from(block.length), &block.tag, after_rank, &after_hash), rank })
    }

    fn node(&mut self, level: u8, below: HashRef, after: HashRef) -> Result<HashRef, Fault> {
        let rank = below.rank + after.rank;
        if rank > MAX_TOTAL_LEN {
            return Err(Fault::RankOverflow);
        }
        Ok(HashRef { hash: hash::flex_node(level, below.rank, &below.hash, after.rank, &after.hash), rank })
    }
}

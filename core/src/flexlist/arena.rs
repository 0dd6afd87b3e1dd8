//! The provider's FlexList: nodes in one arena, built sequentially or in parallel (Sec. 3.1).

use super::build::{build, BuildError, Fault, Item, Sink};
use super::pages::Paged;
use super::{height_for_tag, Block, Located, MAX_TOTAL_LEN, SENTINEL_HEIGHT};
use crate::hash::{self, Digest};

/// "No node" in a child index.
pub(crate) const NIL: u32 = u32::MAX;

/// Parts smaller than this are not worth a thread of their own.
pub(super) const MIN_PART: usize = 4096;

/// A node: 48 bytes. Leaves (level 0) keep their block in [`LeafSlot`] `below`.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Node {
    pub hash: Digest,
    /// Inner node: index of the below node. Leaf: index of its [`LeafSlot`].
    pub below: u32,
    /// Index of the after node, or [`NIL`].
    pub after: u32,
    rank_lo: u32,
    rank_hi: u16,
    pub level: u8,
}

impl Node {
    pub fn rank(&self) -> u64 {
        u64::from(self.rank_lo) | (u64::from(self.rank_hi) << 32)
    }

    fn set_rank(&mut self, rank: u64) {
        debug_assert!(rank <= MAX_TOTAL_LEN);
        self.rank_lo = rank as u32;
        self.rank_hi = (rank >> 32) as u16;
    }

    pub fn is_leaf(&self) -> bool {
        self.level == 0
    }

    fn leaf(slot: u32, block: &Block, after: Option<(u32, &Node)>) -> Node {
        let (after, after_rank, after_hash) = match after {
            Some((i, n)) => (i, n.rank(), n.hash),
            None => (NIL, 0, Digest::ZERO),
        };
        let rank = u64::from(block.length) + after_rank;
        let hash = hash::flex_leaf(u64::from(block.length), &block.tag, after_rank, &after_hash);
        let mut node = Node { hash, below: slot, after, ..Node::default() };
        node.set_rank(rank);
        node
    }

    fn inner(level: u8, below: (u32, &Node), after: (u32, &Node)) -> Node {
        let rank = below.1.rank() + after.1.rank();
        let mut node = Node {
            hash: hash::flex_node(level, below.1.rank(), &below.1.hash, after.1.rank(), &after.1.hash),
            below: below.0,
            after: after.0,
            level,
            ..Node::default()
        };
        node.set_rank(rank);
        node
    }
}

/// What a leaf keeps besides its node: 40 bytes.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct LeafSlot {
    pub tag: Digest,
    pub block_ref: u64,
}

/// The provider's FlexList over one file.
///
/// Pure data structure: no I/O. Callers persist it (see the storage layer) and feed it edits.
#[derive(Clone, Debug)]
pub struct FlexList {
    pub(crate) nodes: Paged<Node>,
    pub(crate) leaves: Paged<LeafSlot>,
    pub(crate) free_nodes: Vec<u32>,
    pub(crate) free_leaves: Vec<u32>,
    pub(crate) root: u32,
    pub(crate) blocks: usize,
}

pub(crate) fn left_sentinel<R>() -> Item<R> {
    Item::Leaf { block: Block::new(Digest::ZERO, 0, u64::MAX), height: SENTINEL_HEIGHT }
}

pub(crate) fn right_sentinel<R>() -> Item<R> {
    Item::Leaf { block: Block::new(Digest::ZERO, 0, u64::MAX), height: 0 }
}

pub(super) fn block_item<R>(block: &Block) -> Item<R> {
    Item::Leaf { block: *block, height: height_for_tag(&block.tag) }
}

impl Default for FlexList {
    fn default() -> Self {
        Self::new()
    }
}

impl FlexList {
    /// An empty list: just the two sentinels.
    pub fn new() -> Self {
        Self::build(&[]).expect("empty build cannot fail")
    }

    /// buildFlexList: the list over `blocks`, in O(n), on the calling thread.
    pub fn build(blocks: &[Block]) -> Result<Self, BuildError> {
        check_blocks(blocks)?;
        let mut list = FlexList::empty();
        let items = std::iter::once(left_sentinel())
            .chain(blocks.iter().map(block_item))
            .chain(std::iter::once(right_sentinel()));
        let root = build(&mut ArenaSink { list: &mut list }, items).map_err(|_| BuildError::TooManyBlocks)?;
        list.root = root;
        list.blocks = blocks.len();
        Ok(list)
    }

    /// The root and length of the list over `blocks`, without building it (hashes and ranks
    /// only, as a client checks a proof): what checks a whole file held as its blocks' leaves.
    pub fn root_of(blocks: &[Block]) -> Result<(Digest, u64), BuildError> {
        check_blocks(blocks)?;
        let items = std::iter::once(left_sentinel())
            .chain(blocks.iter().map(block_item))
            .chain(std::iter::once(right_sentinel()));
        let root = build(&mut super::build::HashSink, items).map_err(|_| BuildError::TooLong)?;
        Ok((root.hash, root.rank))
    }

    pub(super) fn empty() -> Self {
        FlexList {
            nodes: Paged::default(),
            leaves: Paged::default(),
            free_nodes: Vec::new(),
            free_leaves: Vec::new(),
            root: NIL,
            blocks: 0,
        }
    }

    /// The root digest: the client's whole state for this file.
    pub fn root(&self) -> Digest {
        self.nodes[self.root].hash
    }

    /// Length of the file in bytes.
    pub fn total_len(&self) -> u64 {
        self.nodes[self.root].rank()
    }

    /// Number of blocks (sentinels excluded).
    pub fn block_count(&self) -> usize {
        self.blocks
    }

    /// The block holding byte `index` (search by byte index, Sec. 2), or `None` past the end.
    pub fn search(&self, index: u64) -> Option<Located> {
        if index >= self.total_len() {
            return None;
        }
        let mut at = self.root;
        let mut rest = index;
        loop {
            let node = &self.nodes[at];
            if node.is_leaf() {
                let len = node.rank() - self.rank_of(node.after);
                if rest < len {
                    return Some(Located { start: index - rest, block: self.block_at(node) });
                }
                rest -= len;
                at = node.after;
            } else {
                let below = self.nodes[node.below].rank();
                if rest < below {
                    at = node.below;
                } else {
                    rest -= below;
                    at = node.after;
                }
            }
        }
    }

    /// The blocks from the one holding byte `index` to the end, in file order, without
    /// visiting the blocks before it (what saving an edited list's changed part needs).
    ///
    /// Every node has one parent, so the walk is `search`'s descent that remembers, as
    /// [`FlexList::iter`] does, the `after` subtrees it passes by going below.
    pub fn iter_from(&self, index: u64) -> impl Iterator<Item = Located> + '_ {
        // Pending subtrees with the offset each starts at, the next on top.
        let mut stack: Vec<(u32, u64)> = Vec::new();
        if index < self.total_len() {
            let (mut at, mut start) = (self.root, 0u64);
            loop {
                let node = &self.nodes[at];
                let below =
                    if node.is_leaf() { node.rank() - self.rank_of(node.after) } else { self.rank_of(node.below) };
                if index < start + below {
                    if node.is_leaf() {
                        stack.push((at, start));
                        break;
                    }
                    if node.after != NIL {
                        stack.push((node.after, start + below));
                    }
                    at = node.below;
                } else {
                    start += below;
                    at = node.after;
                }
            }
        }
        std::iter::from_fn(move || loop {
            let (at, start) = stack.pop()?;
            let node = &self.nodes[at];
            if node.is_leaf() {
                let block = self.block_at(node);
                if node.after != NIL {
                    stack.push((node.after, start + u64::from(block.length)));
                }
                if block.length == 0 {
                    continue; // a sentinel
                }
                return Some(Located { start, block });
            }
            if node.after != NIL {
                stack.push((node.after, start + self.rank_of(node.below)));
            }
            stack.push((node.below, start));
        })
    }

    /// All blocks in file order, with their offsets.
    pub fn iter(&self) -> impl Iterator<Item = Located> + '_ {
        let mut stack = vec![self.root];
        let mut start = 0u64;
        std::iter::from_fn(move || loop {
            let at = stack.pop()?;
            let node = &self.nodes[at];
            if node.after != NIL {
                stack.push(node.after);
            }
            if node.is_leaf() {
                let block = self.block_at(node);
                if block.length == 0 {
                    continue; // a sentinel
                }
                let located = Located { start, block };
                start += u64::from(block.length);
                return Some(located);
            }
            stack.push(node.below);
        })
    }

    /// Number of live nodes (leaves, inner nodes and the sentinels' nodes).
    pub fn node_count(&self) -> usize {
        self.nodes.len() - self.free_nodes.len()
    }

    /// Bytes of memory the list holds (node and leaf arenas and free lists, by capacity),
    /// excluding block data.
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity_bytes()
            + self.leaves.capacity_bytes()
            + (self.free_nodes.capacity() + self.free_leaves.capacity()) * 4
    }

    pub(crate) fn rank_of(&self, at: u32) -> u64 {
        if at == NIL {
            0
        } else {
            self.nodes[at].rank()
        }
    }

    pub(crate) fn block_at(&self, leaf: &Node) -> Block {
        let slot = &self.leaves[leaf.below];
        let length = (leaf.rank() - self.rank_of(leaf.after)) as u32;
        Block { tag: slot.tag, length, block_ref: slot.block_ref }
    }

    /// Returns opened nodes (and the leaf slots of opened leaves) to the free lists.
    pub(crate) fn release(&mut self, nodes: &[u32]) {
        for &at in nodes {
            let node = self.nodes[at];
            if node.is_leaf() {
                self.free_leaves.push(node.below);
            }
            self.free_nodes.push(at);
        }
    }
}

pub(super) fn check_blocks(blocks: &[Block]) -> Result<(), BuildError> {
    let mut total = 0u64;
    for (index, b) in blocks.iter().enumerate() {
        if b.length == 0 {
            return Err(BuildError::EmptyBlock { index });
        }
        total += u64::from(b.length);
        if total > MAX_TOTAL_LEN {
            return Err(BuildError::TooLong);
        }
    }
    Ok(())
}

/// Builds into the list's arena, reusing freed slots first.
pub(crate) struct ArenaSink<'a> {
    pub list: &'a mut FlexList,
}

impl ArenaSink<'_> {
    fn push_node(&mut self, node: Node) -> Result<u32, Fault> {
        let list = &mut *self.list;
        if let Some(at) = list.free_nodes.pop() {
            list.nodes[at] = node;
            return Ok(at);
        }
        list.nodes.push(node).ok_or(Fault::TooManyNodes)
    }
}

impl Sink for ArenaSink<'_> {
    type Ref = u32;

    fn leaf(&mut self, block: &Block, after: Option<u32>) -> Result<u32, Fault> {
        let list = &mut *self.list;
        let slot_data = LeafSlot { tag: block.tag, block_ref: block.block_ref };
        let slot = match list.free_leaves.pop() {
            Some(at) => {
                list.leaves[at] = slot_data;
                at
            }
            None => list.leaves.push(slot_data).ok_or(Fault::TooManyNodes)?,
        };
        let node = Node::leaf(slot, block, after.map(|a| (a, &list.nodes[a])));
        self.push_node(node)
    }

    fn node(&mut self, level: u8, below: u32, after: u32) -> Result<u32, Fault> {
        let nodes = &self.list.nodes;
        let node = Node::inner(level, (below, &nodes[below]), (after, &nodes[after]));
        self.push_node(node)
    }
}

//! A FlexList built on several threads at once, with the root [`FlexList::build`] makes.

use super::arena::{
    block_item, check_blocks, left_sentinel, right_sentinel, ArenaSink, FlexList, LeafSlot, Node, MIN_PART,
};
use super::build::{build, BuildError, Item};
use super::pages::Paged;
use super::reveal::Opening;
use super::{Block, SENTINEL_HEIGHT};
use rayon::prelude::*;

impl FlexList {
    /// The parallel build of Sec. 3.1 on up to `threads` threads of the current rayon pool.
    ///
    /// The blocks are split into contiguous parts; each part is built on its own thread, behind
    /// an inner left sentinel of its own, into arena pages reserved for it. *Unify* then opens
    /// the nodes along each part's left spine (the inner sentinel's tower) and right spine (the
    /// path to the part's last block), which are the only nodes that depend on the neighbouring
    /// parts, drops the inner sentinels and rebuilds those spines. The result is the list
    /// [`FlexList::build`] makes, with the same root.
    pub fn build_parallel(blocks: &[Block], threads: usize) -> Result<Self, BuildError> {
        let parts = threads.min(blocks.len() / MIN_PART).max(1);
        if parts == 1 {
            return Self::build(blocks);
        }
        check_blocks(blocks)?;
        let bounds: Vec<(usize, usize)> =
            (0..parts).map(|k| (blocks.len() * k / parts, blocks.len() * (k + 1) / parts)).collect();
        // Page numbers for each part: room for its leaves and at most as many inner nodes.
        let mut first_pages = Vec::with_capacity(parts);
        let (mut node_page, mut leaf_page) = (0, 0);
        for &(lo, hi) in &bounds {
            first_pages.push((node_page, leaf_page));
            node_page += Paged::<Node>::pages_for(2 * (hi - lo + 2));
            leaf_page += Paged::<LeafSlot>::pages_for(hi - lo + 2);
        }
        let built: Vec<Result<FlexList, BuildError>> = (0..parts)
            .into_par_iter()
            .map(|k| {
                let (lo, hi) = bounds[k];
                let mut part = FlexList::empty();
                part.nodes = Paged::starting_at(first_pages[k].0);
                part.leaves = Paged::starting_at(first_pages[k].1);
                let items = std::iter::once(left_sentinel())
                    .chain(blocks[lo..hi].iter().map(block_item))
                    .chain((k == parts - 1).then(right_sentinel));
                part.root = build(&mut ArenaSink { list: &mut part }, items).map_err(|_| BuildError::TooManyBlocks)?;
                Ok(part)
            })
            .collect();
        let mut list = FlexList::empty();
        let mut roots = Vec::with_capacity(parts);
        for part in built {
            let part = part?;
            roots.push(part.root);
            list.nodes.absorb(part.nodes);
            list.leaves.absorb(part.leaves);
        }
        list.blocks = blocks.len();
        list.unify(&bounds, &roots, blocks)?;
        Ok(list)
    }

    /// Joins the parts' lists into one (see [`FlexList::build_parallel`]).
    fn unify(&mut self, bounds: &[(usize, usize)], roots: &[u32], blocks: &[Block]) -> Result<(), BuildError> {
        let last = roots.len() - 1;
        let mut opening = Opening::default();
        for (k, &root) in roots.iter().enumerate() {
            let part_len: u64 = blocks[bounds[k].0..bounds[k].1].iter().map(|b| u64::from(b.length)).sum();
            let mut targets = Vec::with_capacity(2);
            if k > 0 {
                targets.push(-1); // the inner sentinel's tower
            }
            if k < last {
                targets.push(part_len as i64 - 1); // the right spine
            }
            let first_item = opening.items.len();
            self.open(root, &targets, &mut opening, false);
            if k > 0 {
                let sentinel = opening.items.remove(first_item);
                debug_assert!(matches!(sentinel, Item::Leaf { height: SENTINEL_HEIGHT, .. }));
            }
        }
        self.release(&opening.nodes);
        let root = build(&mut ArenaSink { list: self }, opening.items.into_iter());
        self.root = root.map_err(|_| BuildError::TooManyBlocks)?;
        Ok(())
    }
}

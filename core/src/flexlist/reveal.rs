//! Opening the provider's list along search paths: genMultiProof, and the first half of
//! multiUpdate.
//!
//! One depth-first walk from the root follows the search paths of a sorted set of targets at
//! once, splitting the set at every node (Alg. 3.2 hashMulti does the same with its
//! intersection stack). Every node on a path is *opened*: it is written once to the proof, and
//! its subtree turns into [`Item`]s for the builder: the opened leaves, and the untouched
//! subtrees hanging off the paths.

use super::arena::{FlexList, NIL};
use super::build::Item;
use super::proof::{record, MultiProof, ProofError, CHILD_NONE, CHILD_OPAQUE, CHILD_OPEN, PROOF_VERSION};
use super::SENTINEL_HEIGHT;
use crate::codec::put_varint;

/// The result of [`FlexList::open`].
#[derive(Default)]
pub(crate) struct Opening {
    /// The opened region as builder items, in file order.
    pub items: Vec<Item<u32>>,
    /// The opened nodes, which a rebuild replaces.
    pub nodes: Vec<u32>,
    /// The opened region in the proof encoding (records only; no version byte).
    pub proof: Vec<u8>,
}

enum Task {
    Open { at: u32, height: u8, lo: usize, hi: usize, shift: i64 },
    Emit(Item<u32>),
}

impl FlexList {
    /// Opens the union of the search paths from `root` to `targets`: byte offsets relative to
    /// `root`'s subtree, sorted, where `-1` names the left sentinel. `root` must be owned by a
    /// (possibly inner) left sentinel. The root is always opened.
    pub(crate) fn open(&self, root: u32, targets: &[i64], out: &mut Opening, with_proof: bool) {
        let mut tasks = vec![Task::Open { at: root, height: SENTINEL_HEIGHT, lo: 0, hi: targets.len(), shift: 0 }];
        while let Some(task) = tasks.pop() {
            let (at, height, lo, hi, shift) = match task {
                Task::Emit(item) => {
                    out.items.push(item);
                    continue;
                }
                Task::Open { at, height, lo, hi, shift } => (at, height, lo, hi, shift),
            };
            out.nodes.push(at);
            let node = &self.nodes[at];
            let ts = &targets[lo..hi];
            if node.is_leaf() {
                let block = self.block_at(node);
                let len = i64::from(block.length);
                let split = if node.after == NIL { hi } else { lo + ts.partition_point(|&t| t - shift < len) };
                let after = self.child(node.after, 0, 0, split, hi, shift + len);
                if with_proof {
                    out.proof.push(record::LEAF | kind(&after) << record::AFTER_SHIFT);
                    out.proof.extend_from_slice(&block.tag.0);
                    put_varint(&mut out.proof, u64::from(block.length));
                    self.write_opaque(&after, &mut out.proof);
                }
                out.items.push(Item::Leaf { block, height });
                tasks.extend(after);
            } else {
                let below_rank = self.nodes[node.below].rank() as i64;
                let split = lo + ts.partition_point(|&t| t - shift < below_rank);
                let below = self.child(node.below, height, node.level - 1, lo, split, shift);
                let after = self.child(node.after, node.level, node.level, split, hi, shift + below_rank);
                if with_proof {
                    out.proof.push(
                        record::INNER | kind(&below) << record::BELOW_SHIFT | kind(&after) << record::AFTER_SHIFT,
                    );
                    out.proof.push(node.level);
                    self.write_opaque(&below, &mut out.proof);
                    self.write_opaque(&after, &mut out.proof);
                }
                tasks.extend(after);
                tasks.extend(below);
            }
        }
    }

    /// The task for a child: open it if targets go there, else keep it as a subtree item.
    fn child(&self, at: u32, height: u8, base: u8, lo: usize, hi: usize, shift: i64) -> Option<Task> {
        if at == NIL {
            None
        } else if lo < hi {
            Some(Task::Open { at, height, lo, hi, shift })
        } else {
            Some(Task::Emit(Item::Sub { node: at, rank: self.rank_of(at), height, base }))
        }
    }

    fn write_opaque(&self, child: &Option<Task>, out: &mut Vec<u8>) {
        if let Some(Task::Emit(Item::Sub { node, rank, .. })) = child {
            out.extend_from_slice(&self.nodes[*node].hash.0);
            put_varint(out, *rank);
        }
    }
}

fn kind(child: &Option<Task>) -> u8 {
    match child {
        None => CHILD_NONE,
        Some(Task::Emit(_)) => CHILD_OPAQUE,
        Some(Task::Open { .. }) => CHILD_OPEN,
    }
}

impl FlexList {
    /// genMultiProof: one proof for the blocks holding each of `indices` (byte offsets).
    pub fn prove(&self, indices: &[u64]) -> Result<MultiProof, ProofError> {
        if indices.is_empty() {
            return Err(ProofError::EmptyChallenge);
        }
        let len = self.total_len();
        let mut targets = Vec::with_capacity(indices.len());
        for &index in indices {
            if index >= len {
                return Err(ProofError::IndexOutOfRange { index, len });
            }
            targets.push(index as i64);
        }
        targets.sort_unstable();
        targets.dedup();
        let mut opening = Opening::default();
        opening.proof.push(PROOF_VERSION);
        self.open(self.root, &targets, &mut opening, true);
        Ok(MultiProof::from_trusted(opening.proof))
    }
}

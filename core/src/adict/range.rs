//! A page of the dictionary: the keys whose paths lie in a range, with a proof that the tree
//! holds no other key there. A listing too large for one message goes page by page, each
//! page's range starting after the last path of the page before.
//!
//! The proof is the tree pruned to the range: every subtree that holds a leaf of the range
//! is opened down to its leaves, every other subtree is shown by its hash alone. The client
//! recomputes the root from it and checks that no subtree shown by its hash could hold a path
//! of the range, which its place in the tree (the path prefix on the way to it) tells. The
//! provider picks nothing a client takes on trust: where a page ends is the path of its last
//! key, and a page that claims to reach the end covers every path after its start.

use super::{key_path, leaf_hash, node_hash, ProofError};
use crate::hash::Digest;

/// One node of a pruned tree, in pre-order (an inner node, then its left subtree, then its
/// right).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeNode {
    /// An inner node whose subtrees follow.
    Inner,
    /// A subtree that holds no leaf of the range (or nothing at all: [`Digest::ZERO`]).
    Hidden(Digest),
    /// A leaf outside the range, beside the range's own.
    Outside { path: Digest, value_hash: Digest },
    /// A leaf of the range: its key, which the client hashes to its path.
    Inside { key: Vec<u8>, value_hash: Digest },
}

/// Paths `after < path <= upto`; no `after`: from the first path; no `upto`: to the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathRange {
    pub after: Option<Digest>,
    pub upto: Option<Digest>,
}

impl PathRange {
    pub fn contains(&self, path: &Digest) -> bool {
        self.after.is_none_or(|a| *path > a) && self.upto.is_none_or(|u| *path <= u)
    }

    /// Whether no path with the first `depth` bits of `prefix` (the rest zero) is in range.
    pub(super) fn misses(&self, prefix: &Digest, depth: usize) -> bool {
        let (mut lowest, mut highest) = (*prefix, *prefix);
        if depth < 256 {
            // The bits from `depth` on: the rest of its byte, then whole bytes.
            let rest = 0xffu8 >> (depth % 8);
            lowest.0[depth / 8] &= !rest;
            highest.0[depth / 8] |= rest;
            lowest.0[depth / 8 + 1..].fill(0);
            highest.0[depth / 8 + 1..].fill(0xff);
        }
        self.after.is_some_and(|a| highest <= a) || self.upto.is_some_and(|u| lowest > u)
    }
}

/// The root the pruned tree `nodes` hashes to, and the keys of the range in path order.
/// Refuses a tree that is out of form (too deep, cut short, or with nodes left over), a
/// leaf of the range shown as outside it or the reverse, and a hidden subtree where a path
/// of the range could be. The caller compares the root with the authenticated one.
pub fn verify_range(nodes: &[RangeNode], range: &PathRange) -> Result<(Digest, Vec<Vec<u8>>), ProofError> {
    walk(nodes, Some(range))
}

/// The root a pruned tree hashes to, whatever its range (for a page whose range is not
/// known: one pending before the operation a REPLY answers).
pub fn range_root(nodes: &[RangeNode]) -> Result<Digest, ProofError> {
    walk(nodes, None).map(|(root, _)| root)
}

fn walk(nodes: &[RangeNode], range: Option<&PathRange>) -> Result<(Digest, Vec<Vec<u8>>), ProofError> {
    let mut walk = Walk { nodes, next: 0, range, keys: Vec::new() };
    let root = walk.subtree(Digest::ZERO, 0)?;
    if walk.next != nodes.len() {
        return Err(ProofError::Malformed("nodes after the pruned tree"));
    }
    Ok((root, walk.keys))
}

struct Walk<'a> {
    nodes: &'a [RangeNode],
    next: usize,
    /// None: the root only, no range checked.
    range: Option<&'a PathRange>,
    keys: Vec<Vec<u8>>,
}

impl Walk<'_> {
    /// The hash of the subtree at `depth` whose place has the path prefix `prefix`.
    fn subtree(&mut self, prefix: Digest, depth: usize) -> Result<Digest, ProofError> {
        let node = self.nodes.get(self.next).ok_or(ProofError::Malformed("a pruned tree cut short"))?;
        self.next += 1;
        let range = self.range;
        match node {
            RangeNode::Hidden(hash) if *hash == Digest::ZERO || range.is_none_or(|r| r.misses(&prefix, depth)) => {
                Ok(*hash)
            }
            RangeNode::Hidden(_) => Err(ProofError::Malformed("a hidden subtree where the range may hold a key")),
            RangeNode::Outside { path, value_hash } if range.is_none_or(|r| !r.contains(path)) => {
                Ok(leaf_hash(path, value_hash))
            }
            RangeNode::Outside { .. } => Err(ProofError::Malformed("a leaf of the range shown as outside it")),
            RangeNode::Inside { key, value_hash } => {
                let path = key_path(key);
                if range.is_some_and(|r| !r.contains(&path)) {
                    return Err(ProofError::Malformed("a key outside the range shown in it"));
                }
                self.keys.push(key.clone());
                Ok(leaf_hash(&path, value_hash))
            }
            RangeNode::Inner if depth >= 256 => Err(ProofError::Malformed("deeper than a path")),
            RangeNode::Inner => {
                let left = self.subtree(prefix, depth + 1)?;
                let right = self.subtree(right_of(prefix, depth), depth + 1)?;
                Ok(node_hash(&left, &right))
            }
        }
    }
}

/// The path prefix of the right child of the node at `depth` with prefix `prefix`.
pub(super) fn right_of(mut prefix: Digest, depth: usize) -> Digest {
    prefix.0[depth / 8] |= 0x80 >> (depth % 8);
    prefix
}

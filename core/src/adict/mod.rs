//! ADICT, the authenticated dictionary of VICOS (paper 003, Sec. 4.2, Alg. 4–5): short values
//! under byte-string keys, with O(log n) proofs of presence and of absence, and updates a
//! client computes from a proof alone.
//!
//! The tree is a compressed sparse Merkle tree over the keys' paths `H(key)` (256 bits): a
//! leaf `H(path || H(value))` sits at the shallowest depth where no other key shares its path
//! prefix, an inner node hashes its two children, and an empty subtree hashes to zero. The
//! paper's successor leaves prove absence in a sorted list; here the path to an empty subtree,
//! or to the one other leaf that holds the key's place, does. A leaf's hash does not depend on
//! its depth, so a deletion moves a lone sibling leaf up without rehashing it.
//!
//! Canonical form (no inner node has a leaf and an empty child, or two empty children) makes
//! the root a function of the contents alone: every client computes the same root after the
//! same operations. The server's tree ([`Tree`]) is persistent: a version costs O(depth), so it
//! can answer for a sequence of pending operations without copying itself.
//!
//! Everything here is pure: [`Tree`] is the server's state, [`Proof`] and the `*_root`
//! functions are the client's side.

mod proof;
mod range;
mod tree;

pub use proof::{root_of_all, Bottom, Proof, ProofError};
pub use range::{range_root, verify_range, PathRange, RangeNode};
pub use tree::Tree;

use crate::hash::{keyed, keyed_pair, Digest, Keyed};

/// A key's path: which child to take at each depth.
pub fn key_path(key: &[u8]) -> Digest {
    keyed(Keyed::AdictKey, key)
}

pub fn value_hash(value: &[u8]) -> Digest {
    keyed(Keyed::AdictValue, value)
}

fn leaf_hash(path: &Digest, value: &Digest) -> Digest {
    keyed_pair(Keyed::AdictLeaf, path, value)
}

/// An inner node; an empty subtree is [`Digest::ZERO`] (no input hashes to it).
fn node_hash(left: &Digest, right: &Digest) -> Digest {
    keyed_pair(Keyed::AdictNode, left, right)
}

/// Bit `depth` of `path`, most significant first: 0 goes left, 1 right.
fn bit(path: &Digest, depth: usize) -> bool {
    path.0[depth / 8] & (0x80 >> (depth % 8)) != 0
}

/// The node above `node` (at `depth + 1`, on `path`'s side) and `sibling`.
fn parent(path: &Digest, depth: usize, node: &Digest, sibling: &Digest) -> Digest {
    match bit(path, depth) {
        false => node_hash(node, sibling),
        true => node_hash(sibling, node),
    }
}

#[cfg(test)]
mod tests;

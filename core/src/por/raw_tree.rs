//! U's authenticated structure (Sec. 5.4): a Merkle tree over the sealed checksums of the raw
//! buffer U, whose root the client keeps.
//!
//! U's checksums are sealed under one key (`PRF(sk0, 1)`) with no write time, so a sealed
//! checksum proves only that the client once wrote it for that slot; the tree makes it the
//! *current* one. A read of U, a write to U and the replay of CRebuild (which needs every
//! checksum of U) all check what the server gives against the client's root.
//!
//! The tree is perfect, over `2^k` leaves (U's capacity). Leaf `i` is
//! `H(0x40 || sealed_i)`, or `H(0x40)` for a slot never written; inner nodes are
//! `H(0x41 || height || left || right)`. A leaf's position is bound by the path itself, and the
//! sealed checksum is bound to its slot's address by its cipher (`checksum`).
//!
//! [`RawTree`] is the server's whole tree; a [`RawProof`] holds the sibling hashes that
//! connect a set of leaves to the root ([`RawTree::prove`]), and [`raw_root`] is what the
//! client computes from it: once with the old leaves (which must give its root) and once with
//! the new ones (the root it adopts).

use super::checksum::{SealedChecksum, SEALED_LEN};
use crate::hash::{sha256, sha256_two_blocks, Domain};
use crate::Digest;

/// Largest `k` a log (its tree, a proof's verifier) accepts: C over `2^k` slots needs a
/// `2^(k+1)`-th root of unity, and the field's 2-adicity is 32. 2^31 slots of 4 KiB are 8 TiB.
pub const MAX_LOG_CAPACITY: u32 = super::field::TWO_ADICITY - 1;

/// The hash of a leaf: its slot's sealed checksum, or `None` for a slot never written.
pub fn leaf_hash(sealed: Option<&SealedChecksum>) -> Digest {
    let mut buf = [0u8; 1 + SEALED_LEN];
    buf[0] = Domain::PorRawLeaf as u8;
    match sealed {
        Some(sealed) => {
            buf[1..].copy_from_slice(&sealed.to_bytes());
            sha256_two_blocks(&buf)
        }
        None => sha256(&buf[..1]),
    }
}

/// The hash of an inner node `height` levels above the leaves.
pub fn node_hash(height: u32, left: &Digest, right: &Digest) -> Digest {
    let mut buf = [0u8; 66];
    buf[0] = Domain::PorRawNode as u8;
    buf[1] = height as u8;
    buf[2..34].copy_from_slice(&left.0);
    buf[34..66].copy_from_slice(&right.0);
    sha256_two_blocks(&buf)
}

/// The root of a subtree of `2^height` slots never written.
pub fn empty_root(height: u32) -> Digest {
    (1..=height).fold(leaf_hash(None), |below, h| node_hash(h, &below, &below))
}

/// The sibling hashes connecting a set of leaves to the root, in the order [`raw_root`]
/// consumes them: bottom level first, left to right within a level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawProof {
    pub siblings: Vec<Digest>,
}

impl RawProof {
    /// `count:u32le || siblings`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + 32 * self.siblings.len());
        out.extend_from_slice(&(self.siblings.len() as u32).to_le_bytes());
        self.siblings.iter().for_each(|d| out.extend_from_slice(&d.0));
        out
    }

    /// Decodes untrusted bytes; the count is checked against the length before anything is
    /// allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<RawProof, RawProofError> {
        let (count, rest) = bytes.split_first_chunk::<4>().ok_or(RawProofError::Encoding)?;
        let count = u32::from_le_bytes(*count) as usize;
        if rest.len() != count.checked_mul(32).ok_or(RawProofError::Encoding)? {
            return Err(RawProofError::Encoding);
        }
        let siblings = rest.chunks_exact(32).map(|c| Digest(c.try_into().expect("32 bytes"))).collect();
        Ok(RawProof { siblings })
    }
}

/// Why a proof over U's tree does not give a root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RawProofError {
    #[error("leaf indices must be distinct, ascending and below the capacity 2^{0}")]
    Indices(u32),
    #[error("the proof has {got} sibling hashes, not {want}")]
    Length { got: usize, want: usize },
    #[error("the proof's bytes are not a sibling list")]
    Encoding,
    #[error("capacity 2^{0} is beyond the largest accepted")]
    Capacity(u32),
}

/// The root of a tree of `2^log_capacity` leaves computed from some of them (`leaves`:
/// index and leaf hash, ascending, distinct) and the sibling hashes in `proof`. The proof must
/// have exactly the siblings needed: one short, one extra, or leaves out of order are errors.
pub fn raw_root(log_capacity: u32, leaves: &[(u64, Digest)], proof: &RawProof) -> Result<Digest, RawProofError> {
    if log_capacity > MAX_LOG_CAPACITY {
        return Err(RawProofError::Capacity(log_capacity));
    }
    let in_order = leaves.windows(2).all(|w| w[0].0 < w[1].0);
    if leaves.is_empty() || !in_order || leaves.last().expect("nonempty").0 >> log_capacity != 0 {
        return Err(RawProofError::Indices(log_capacity));
    }
    let want = sibling_count(log_capacity, leaves.iter().map(|l| l.0));
    if proof.siblings.len() != want {
        return Err(RawProofError::Length { got: proof.siblings.len(), want });
    }
    let mut siblings = proof.siblings.iter();
    let mut level: Vec<(u64, Digest)> = leaves.to_vec();
    for height in 1..=log_capacity {
        let mut up = Vec::with_capacity(level.len());
        let mut i = 0;
        while i < level.len() {
            let (pos, hash) = level[i];
            let (left, right) = if pos & 1 == 0 && level.get(i + 1).is_some_and(|n| n.0 == pos + 1) {
                i += 1;
                (hash, level[i].1)
            } else {
                let sibling = *siblings.next().expect("count checked above");
                if pos & 1 == 0 {
                    (hash, sibling)
                } else {
                    (sibling, hash)
                }
            };
            up.push((pos / 2, node_hash(height, &left, &right)));
            i += 1;
        }
        level = up;
    }
    Ok(level[0].1)
}

/// How many siblings a proof of `indices` (ascending, distinct) needs.
fn sibling_count(log_capacity: u32, indices: impl Iterator<Item = u64>) -> usize {
    let mut level: Vec<u64> = indices.collect();
    let mut count = 0;
    for _ in 0..log_capacity {
        let mut up: Vec<u64> = Vec::with_capacity(level.len());
        let mut i = 0;
        while i < level.len() {
            if level[i] & 1 == 0 && level.get(i + 1) == Some(&(level[i] + 1)) {
                i += 1;
            } else {
                count += 1;
            }
            up.push(level[i] / 2);
            i += 1;
        }
        level = up;
    }
    count
}

/// The server's whole tree, in heap order: node 1 is the root, node `v` has children `2v` and
/// `2v + 1`, leaf `i` is node `2^k + i`.
#[derive(Clone, Debug)]
pub struct RawTree {
    log_capacity: u32,
    nodes: Vec<Digest>,
}

impl RawTree {
    /// A tree of `2^log_capacity` slots never written.
    ///
    /// # Panics
    /// Beyond [`MAX_LOG_CAPACITY`] (a caller's bug; the capacity is the client's choice).
    pub fn new(log_capacity: u32) -> RawTree {
        assert!(log_capacity <= MAX_LOG_CAPACITY, "capacity within MAX_LOG_CAPACITY");
        let n = 1usize << log_capacity;
        let mut nodes = vec![Digest::ZERO; 2 * n];
        let mut empty = leaf_hash(None);
        for height in 0..=log_capacity {
            let first = n >> height;
            nodes[first..2 * first].fill(empty);
            empty = node_hash(height + 1, &empty, &empty);
        }
        RawTree { log_capacity, nodes }
    }

    pub fn log_capacity(&self) -> u32 {
        self.log_capacity
    }

    pub fn root(&self) -> Digest {
        self.nodes[1]
    }

    /// The leaf hash of slot `index`.
    pub fn leaf(&self, index: u64) -> Digest {
        self.nodes[(1usize << self.log_capacity) + index as usize]
    }

    /// Sets leaves (`index`, leaf hash) and recomputes each touched node once.
    ///
    /// # Panics
    /// When an index is beyond the capacity (a caller's bug: the server checks requests).
    pub fn set(&mut self, leaves: &[(u64, Digest)]) {
        let n = 1u64 << self.log_capacity;
        let mut touched: Vec<usize> = leaves
            .iter()
            .map(|&(index, hash)| {
                assert!(index < n, "leaf within the capacity");
                let v = (n + index) as usize;
                self.nodes[v] = hash;
                v
            })
            .collect();
        for height in 1..=self.log_capacity {
            touched.iter_mut().for_each(|v| *v /= 2);
            touched.sort_unstable();
            touched.dedup();
            for &v in &touched {
                self.nodes[v] = node_hash(height, &self.nodes[2 * v], &self.nodes[2 * v + 1]);
            }
        }
    }

    /// The proof connecting `indices` (ascending, distinct, below the capacity) to the root.
    pub fn prove(&self, indices: &[u64]) -> Result<RawProof, RawProofError> {
        let n = 1u64 << self.log_capacity;
        if indices.is_empty() || !indices.windows(2).all(|w| w[0] < w[1]) || indices[indices.len() - 1] >= n {
            return Err(RawProofError::Indices(self.log_capacity));
        }
        let mut siblings = Vec::new();
        let mut level: Vec<u64> = indices.to_vec();
        for height in 0..self.log_capacity {
            let first = (n >> height) as usize;
            let mut up = Vec::with_capacity(level.len());
            let mut i = 0;
            while i < level.len() {
                let pos = level[i];
                if pos & 1 == 0 && level.get(i + 1) == Some(&(pos + 1)) {
                    i += 1;
                } else {
                    siblings.push(self.nodes[first + (pos ^ 1) as usize]);
                }
                up.push(pos / 2);
                i += 1;
            }
            level = up;
        }
        Ok(RawProof { siblings })
    }

    /// Doubles the capacity (App. A.3, U grows): the old tree becomes the left half of the
    /// new one, the right half is slots never written. The new root is
    /// `H(k + 1, old root, empty_root(k))`, which the client computes without a proof.
    pub fn grow(&mut self) -> Result<(), RawProofError> {
        let k = self.log_capacity + 1;
        if k > MAX_LOG_CAPACITY {
            return Err(RawProofError::Capacity(k));
        }
        let mut grown = RawTree::new(k);
        let old_n = 1usize << self.log_capacity;
        for height in 0..=self.log_capacity {
            let (old_first, new_first) = (old_n >> height, (2 * old_n) >> height);
            grown.nodes[new_first..new_first + old_first].copy_from_slice(&self.nodes[old_first..2 * old_first]);
        }
        grown.nodes[1] = node_hash(k, &grown.nodes[2], &grown.nodes[3]);
        *self = grown;
        Ok(())
    }
}

impl RawTree {
    /// Keeps the first `2^log_capacity` slots (App. A.3's consolidation, U shrinks): the tree
    /// becomes its leftmost subtree of that height. Nothing is checked about the slots that
    /// go; the client checks them free before it asks ([`super::client::plan_shrink`]).
    ///
    /// # Panics
    /// When `log_capacity` is not below the capacity (a caller's bug: plans are checked).
    pub fn shrink(&mut self, log_capacity: u32) {
        assert!(log_capacity < self.log_capacity, "a shrink keeps fewer slots");
        let (old_n, n) = (1usize << self.log_capacity, 1usize << log_capacity);
        let mut shrunk = RawTree::new(log_capacity);
        for height in 0..=log_capacity {
            let (old_first, new_first) = (old_n >> height, n >> height);
            shrunk.nodes[new_first..2 * new_first].copy_from_slice(&self.nodes[old_first..old_first + new_first]);
        }
        *self = shrunk;
    }
}

/// The root after [`RawTree::grow`], from the root before it.
pub fn grown_root(log_capacity: u32, root: &Digest) -> Digest {
    node_hash(log_capacity + 1, root, &empty_root(log_capacity))
}

/// U's root computed from its leaves in slot order, holding one digest per height: how the
/// client checks all of U's sealed checksums as they arrive, in parts, without a tree of
/// `2^k` nodes ([`RawTree`] holds 64 bytes per slot). Subtrees never written cost no hash.
#[derive(Clone, Debug)]
pub struct RootBuilder {
    /// Completed subtrees still waiting for their right sibling: (height, root), heights
    /// strictly decreasing.
    pending: Vec<(u32, Digest)>,
    /// `empty[h]` is [`empty_root`]`(h)`, grown as needed.
    empty: Vec<Digest>,
    leaves: u64,
}

impl Default for RootBuilder {
    fn default() -> Self {
        RootBuilder::new()
    }
}

impl RootBuilder {
    pub fn new() -> RootBuilder {
        RootBuilder { pending: Vec::new(), empty: vec![leaf_hash(None)], leaves: 0 }
    }

    /// Adds the next leaf.
    pub fn push(&mut self, leaf: Digest) {
        let mut node = (0, leaf);
        while let Some(&(height, left)) = self.pending.last().filter(|p| p.0 == node.0) {
            self.pending.pop();
            let up = height + 1;
            if self.empty.len() <= up as usize {
                let below = self.empty[height as usize];
                self.empty.push(node_hash(up, &below, &below));
            }
            let empty = self.empty[height as usize];
            node = match left == empty && node.1 == empty {
                true => (up, self.empty[up as usize]),
                false => (up, node_hash(up, &left, &node.1)),
            };
        }
        self.pending.push(node);
        self.leaves += 1;
    }

    /// How many leaves were added.
    pub fn leaves(&self) -> u64 {
        self.leaves
    }

    /// The root of the leaves so far, when they are a whole tree (a power of two of them).
    pub fn root(&self) -> Option<Digest> {
        match self.pending.as_slice() {
            [(_, root)] => Some(*root),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sealed(byte: u8) -> SealedChecksum {
        SealedChecksum::from_bytes([byte; SEALED_LEN])
    }

    #[test]
    fn a_shrunk_tree_is_the_tree_of_the_slots_it_keeps() {
        let mut tree = RawTree::new(6);
        let leaves: Vec<(u64, Digest)> =
            [0u64, 3, 9, 17, 40, 63].iter().map(|&i| (i, leaf_hash(Some(&sealed(i as u8))))).collect();
        tree.set(&leaves);
        for k in [0, 2, 4, 5] {
            let mut shrunk = tree.clone();
            shrunk.shrink(k);
            let mut fresh = RawTree::new(k);
            fresh.set(&leaves.iter().copied().filter(|(i, _)| *i < 1 << k).collect::<Vec<_>>());
            assert_eq!((shrunk.log_capacity(), shrunk.root()), (k, fresh.root()), "2^{k}");
            assert_eq!(shrunk.prove(&[0]).unwrap(), fresh.prove(&[0]).unwrap());
        }
    }

    /// The root from every leaf, level by level: the definition.
    fn naive_root(leaves: &[Digest]) -> Digest {
        let mut level = leaves.to_vec();
        let mut height = 0;
        while level.len() > 1 {
            height += 1;
            level = level.chunks(2).map(|p| node_hash(height, &p[0], &p[1])).collect();
        }
        level[0]
    }

    fn tree_with(k: u32, written: &[(u64, u8)]) -> (RawTree, Vec<Digest>) {
        let mut tree = RawTree::new(k);
        let mut leaves = vec![leaf_hash(None); 1 << k];
        let set: Vec<(u64, Digest)> = written.iter().map(|&(i, b)| (i, leaf_hash(Some(&sealed(b))))).collect();
        for &(i, h) in &set {
            leaves[i as usize] = h;
        }
        tree.set(&set);
        (tree, leaves)
    }

    #[test]
    fn an_empty_tree_has_the_empty_root() {
        for k in 0..6 {
            assert_eq!(RawTree::new(k).root(), empty_root(k));
            assert_eq!(RawTree::new(k).root(), naive_root(&vec![leaf_hash(None); 1 << k]));
        }
        assert_ne!(leaf_hash(None), leaf_hash(Some(&sealed(0))));
    }

    proptest! {
        /// The builder's root is the tree's, and a prefix of `2^j` leaves is the root of
        /// the first `2^j` slots (what a shrink keeps).
        #[test]
        fn a_root_built_leaf_by_leaf_is_the_trees(
            k in 0u32..8,
            written in proptest::collection::vec((any::<u64>(), any::<u8>()), 0..40),
        ) {
            let n = 1u64 << k;
            let written: Vec<(u64, u8)> = written.into_iter().map(|(i, b)| (i % n, b)).collect();
            let (tree, leaves) = tree_with(k, &written);
            let mut builder = RootBuilder::new();
            for (i, leaf) in leaves.iter().enumerate() {
                if i.is_power_of_two() {
                    prop_assert_eq!(builder.root(), Some(naive_root(&leaves[..i])));
                } else if i > 2 {
                    prop_assert_eq!(builder.root(), None);
                }
                builder.push(*leaf);
            }
            prop_assert_eq!(builder.leaves(), n);
            prop_assert_eq!(builder.root(), Some(tree.root()));
        }
    }

    proptest! {
        #[test]
        fn proofs_give_the_root_before_and_after_an_update(
            k in 0u32..7,
            written in proptest::collection::vec((any::<u64>(), any::<u8>()), 0..20),
            touched in proptest::collection::btree_set(any::<u64>(), 1..10),
            byte in any::<u8>(),
        ) {
            let n = 1u64 << k;
            let written: Vec<(u64, u8)> = written.into_iter().map(|(i, b)| (i % n, b)).collect();
            let (mut tree, _) = tree_with(k, &written);
            let indices: Vec<u64> = touched.into_iter().map(|i| i % n).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
            let proof = tree.prove(&indices).unwrap();
            let old: Vec<(u64, Digest)> = indices.iter().map(|&i| (i, tree.leaf(i))).collect();
            prop_assert_eq!(raw_root(k, &old, &proof).unwrap(), tree.root());
            prop_assert_eq!(RawProof::from_bytes(&proof.to_bytes()).unwrap(), proof.clone());

            let new: Vec<(u64, Digest)> = indices.iter().map(|&i| (i, leaf_hash(Some(&sealed(byte))))).collect();
            let client_root = raw_root(k, &new, &proof).unwrap();
            tree.set(&new);
            prop_assert_eq!(client_root, tree.root());
            let mut leaves: Vec<Digest> = (0..n).map(|i| tree.leaf(i)).collect();
            prop_assert_eq!(naive_root(&leaves), tree.root());

            tree.grow().unwrap();
            leaves.extend(vec![leaf_hash(None); n as usize]);
            prop_assert_eq!(tree.root(), naive_root(&leaves));
            prop_assert_eq!(tree.root(), grown_root(k, &client_root));
        }
    }

    #[test]
    fn a_lying_proof_gives_another_root_or_an_error() {
        let (tree, _) = tree_with(4, &[(3, 1), (4, 2), (9, 3)]);
        let indices = [3, 4, 10];
        let proof = tree.prove(&indices).unwrap();
        let leaves: Vec<(u64, Digest)> = indices.iter().map(|&i| (i, tree.leaf(i))).collect();
        assert_eq!(raw_root(4, &leaves, &proof).unwrap(), tree.root());

        // A stale leaf (the slot's previous sealed checksum) or another slot's leaf.
        let mut stale = leaves.clone();
        stale[0].1 = leaf_hash(Some(&sealed(0)));
        assert_ne!(raw_root(4, &stale, &proof).unwrap(), tree.root());
        let mut moved = leaves.clone();
        moved[2].0 = 9;
        assert_ne!(raw_root(4, &moved, &proof).unwrap(), tree.root());
        // A sibling changed, one missing, one extra.
        for i in 0..proof.siblings.len() {
            let mut bad = proof.clone();
            bad.siblings[i].0[0] ^= 1;
            assert_ne!(raw_root(4, &leaves, &bad).unwrap(), tree.root());
        }
        let mut short = proof.clone();
        short.siblings.pop();
        assert!(matches!(raw_root(4, &leaves, &short), Err(RawProofError::Length { .. })));
        let mut long = proof.clone();
        long.siblings.push(Digest::ZERO);
        assert!(matches!(raw_root(4, &leaves, &long), Err(RawProofError::Length { .. })));
        // Leaves out of order, repeated or beyond the capacity.
        for bad in [vec![leaves[1], leaves[0]], vec![leaves[0], leaves[0]], vec![(16, leaves[0].1)], vec![]] {
            assert_eq!(raw_root(4, &bad, &proof), Err(RawProofError::Indices(4)));
        }
        assert_eq!(raw_root(MAX_LOG_CAPACITY + 1, &leaves, &proof), Err(RawProofError::Capacity(MAX_LOG_CAPACITY + 1)));
        // Another capacity: the heights are in the hashes.
        assert!(raw_root(5, &leaves, &proof).map_or(true, |root| root != tree.root()));
    }

    #[test]
    fn proof_bytes_are_checked_before_allocation() {
        assert_eq!(RawProof::from_bytes(&[]), Err(RawProofError::Encoding));
        assert_eq!(RawProof::from_bytes(&u32::MAX.to_le_bytes()), Err(RawProofError::Encoding));
        let mut bytes = RawProof { siblings: vec![Digest([1; 32])] }.to_bytes();
        bytes.push(0);
        assert_eq!(RawProof::from_bytes(&bytes), Err(RawProofError::Encoding));
    }
}

//! FlexList: the length-based authenticated skip list of FlexDPDP (paper 000, Sec. 2-3).
//!
//! # Structure
//!
//! Each element (a block, or one of the two sentinels) has a *height*. Following the paper's
//! "optimal" FlexList, only the nodes a search needs exist: an element of height `h` owns a leaf
//! node (level 0) and an inner node at each level `l <= h` at which it has an *after* neighbour,
//! that is, where the next element of height `>= l` has height exactly `l`. Every other tower
//! node would only point below and is left out (the paper's Fig. 2 removes such a node). The
//! result is a binary tree: an inner node has a *below* child (the same element, one level down)
//! and an *after* child (the next element at its level); a leaf's *after* child is the next
//! element if that element has height 0.
//!
//! * `rank` = bytes reachable from the node: `below.rank + after.rank`, and for a leaf
//!   `length + after.rank`. The root's rank is the file length.
//! * `hash` = SHA-256 with a domain byte ([`crate::hash`]) over the node's *children's* ranks
//!   and hashes: an inner node hashes (level, below rank, below hash, after rank, after hash); a
//!   leaf hashes (block length, tag, after rank, after hash). An absent after child counts as
//!   rank 0 and [`Digest::ZERO`]. A node's own rank is the sum, never hashed on its own.
//!
//! # Invariant: every length and rank a verifier uses is bound to the root
//!
//! A proof sends some children *opaque*, as (hash, rank), and the verifier computes offsets
//! from those ranks. A rank that only its own node hashed would be free: the prover could move
//! `z` bytes from an unopened neighbour's rank to an opened leaf's length, keep every sum, and
//! so every hash, and stretch a block over its neighbour's bytes. So each rank and each length
//! is an input of its *parent's* hash (the leaf's length of its own), and any change to one of
//! them changes the root. `tamper_tests` moves length between a leaf and an unopened
//! neighbour in every kind of proof and checks that it is caught.
//! * The left sentinel has infinite height and owns the root; the right sentinel has height 0.
//!   Both have length 0 and tag [`Digest::ZERO`].
//!
//! # Levels: reproducible, and the list is history-independent
//!
//! A block's height is a pure function of its tag ([`height_for_tag`]): the number of trailing
//! zero bits of a 64-bit mix of the tag's first 8 bytes, capped at [`MAX_HEIGHT`] (so `p = 1/2`
//! per level). The client computes tags, so it reproduces every level in verifyMultiUpdate, and
//! the server cannot choose them. Because the shape is a function of the sequence of
//! (tag, length) pairs alone, the root after any sequence of updates equals the root of a fresh
//! build over the same blocks. The tests check exactly that.
//!
//! `p = 1/2` rather than `1/4`: both give a search path of about `2 log2 n` steps, but with
//! `p = 1/2` a quarter of the vertical steps collapse into one node, so paths (and proofs) hold
//! about `1.5 log2 n` nodes instead of `1.9 log2 n`, for 1.5 nodes per block.
//!
//! # Algorithms (one mechanism for build, updates and verification)
//!
//! The canonical shape lets one right-to-left builder ([`build`]) serve every algorithm:
//!
//! * **buildFlexList** (paper [17]) is the builder over the blocks, O(n), right to left.
//! * **Parallel build** (Sec. 3.1) builds parts on a thread pool, each with its own left
//!   sentinel, then *unifies*: it opens the nodes along each part's left and right spine, drops
//!   the inner sentinels and rebuilds only those spines. The root is identical to the sequential
//!   build's.
//! * **genMultiProof** ([`FlexList::prove`]) walks the search paths of all challenged indices at
//!   once and writes each node once ([`MultiProof`]).
//! * **multiUpdate** (Alg. 3.1) opens the union of the search paths the edits need (hashMulti,
//!   Alg. 3.2, collects the same set), applies all edits to that opened region, and rebuilds it
//!   bottom-up, hashing every affected node exactly once (calculateMultiHash, Alg. 3.3). The
//!   opened region, encoded, is the update proof.
//! * **verifyMultiUpdate** (Alg. A.2) checks the proof against the old root, turns it into a
//!   temporary FlexList (Alg. A.1 constructTemporaryFlexList: revealed nodes plus "dummy"
//!   subtrees known only by hash and rank), applies the same edits, rebuilds, and compares roots.

mod arena;
mod build;
mod edit;
mod pages;
mod parallel;
mod proof;
mod reveal;
#[doc(hidden)]
pub mod tamper;
#[cfg(test)]
mod tamper_tests;
#[cfg(test)]
mod tests;
mod update;

pub use arena::FlexList;
pub use build::BuildError;
pub use edit::{Edit, EditError};
pub use proof::{
    verify_multi_proof, verify_multi_proof_len, verify_multi_update, verify_multi_update_len, MultiProof, ProofError,
    ProvenBlock, UpdateProof, UpdateVerifyError, PROOF_VERSION,
};

use crate::hash::Digest;

/// Largest total length of one list, in bytes (ranks are stored in 48 bits: 256 TiB).
pub const MAX_TOTAL_LEN: u64 = (1 << 48) - 1;

/// Highest level a block can get from [`height_for_tag`].
pub const MAX_HEIGHT: u8 = 32;

/// Height of the left sentinel: above every block.
pub(crate) const SENTINEL_HEIGHT: u8 = u8::MAX;

/// One block as the FlexList sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    /// Commitment to the block's identity and content (the PDP tag or its digest). Hashed into
    /// the leaf, and the source of the block's level.
    pub tag: Digest,
    /// Length in bytes; at least 1.
    pub length: u32,
    /// Where the provider keeps the bytes. Not authenticated: the tag is.
    pub block_ref: u64,
}

impl Block {
    pub fn new(tag: Digest, length: u32, block_ref: u64) -> Self {
        Block { tag, length, block_ref }
    }
}

/// A block found by [`FlexList::search`], with its byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Located {
    /// Offset of the block's first byte in the file.
    pub start: u64,
    pub block: Block,
}

/// The level of a block with this tag: reproducible by anyone who knows the tag.
///
/// Trailing zeros of a SplitMix64 finaliser over the tag's first 8 bytes: a fair coin per level
/// even when the tag is not itself uniformly random (test data, structured tags).
pub fn height_for_tag(tag: &Digest) -> u8 {
    let mut x = u64::from_le_bytes(tag.0[..8].try_into().expect("8 bytes"));
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x.trailing_zeros() as u8).min(MAX_HEIGHT)
}

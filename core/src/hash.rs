//! Domain-separated hashing for every authenticated structure in vouch.
//!
//! **Choice: SHA-256, except VICOS.** FlexList hashes many short inputs (81-82 bytes per
//! node). With the SHA extensions (SHA-NI), SHA-256 of such an input costs two compression
//! calls and runs about twice as fast as BLAKE3, whose strength is long inputs and SIMD across
//! many chunks. The `sha2` crate detects SHA-NI at run time.
//!
//! The ADICT's nodes are two digests, 64 bytes: exactly one BLAKE3 block, but two SHA-256
//! blocks, since SHA-256's padding spills into a second one. So the ADICT hashes with BLAKE3 in
//! keyed mode, one key per kind ([`Keyed`]): one compression per node. Measured on one core of
//! a 2.5 GHz x86-64 without SHA-NI: 72 ns per node, where SHA-256 of the 65-byte node input
//! took 760 ns; with SHA-NI, SHA-256 of it took about 130 ns on earlier machines. AIP's hash
//! chain and the contents of VICOS objects hash with BLAKE3 too: a member hashes one link for
//! every operation it is shown, and BLAKE3 hashes longer inputs on several SIMD lanes at once.
//!
//! This module is the one dispatch point for both.
//!
//! **Domain separation.** Every SHA-256 input starts with one byte that names its kind
//! ([`Domain`]), and every kind has a fixed-length layout, so two different kinds (or two
//! different nodes) can never share an input. A BLAKE3 kind is its key instead: the key is
//! `blake3::derive_key` of the kind's context string.

use sha2::{Digest as _, Sha256};
use std::fmt;
use std::sync::LazyLock;

/// Length in bytes of a [`Digest`].
pub const DIGEST_LEN: usize = 32;

/// A 32-byte hash output (SHA-256, or BLAKE3 for a [`Keyed`] kind).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Digest(pub [u8; DIGEST_LEN]);

impl Digest {
    /// The all-zero digest: the hash of an absent child.
    pub const ZERO: Digest = Digest([0; DIGEST_LEN]);

    /// The digest's bytes.
    pub fn as_bytes(&self) -> &[u8; DIGEST_LEN] {
        &self.0
    }

    /// Lower-case hex, 64 characters.
    pub fn to_hex(&self) -> String {
        base16ct::lower::encode_string(&self.0)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({}..)", &self.to_hex()[..12])
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// The first byte of every hash input.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// FlexList leaf node: `0x02 || length:u64le || tag:32 || after_rank:u64le || after:32`.
    FlexLeaf = 0x02,
    /// FlexList inner node: `0x03 || level:u8 || below_rank:u64le || below:32 || after_rank:u64le
    /// || after:32`.
    FlexNode = 0x03,
    /// Free-form data hashed by higher layers (block contents, test data).
    Data = 0x10,
    /// The FlexList tag of a PDP-tagged block: `0x20 || scheme:u8 || nonce:u64le || tag`, the
    /// tag's length fixed by the scheme.
    PdpLeaf = 0x20,
    /// A namespace leaf: `0x30 ||` an entry record's encoding (`crate::namespace`).
    NamespaceEntry = 0x30,
    /// A version-list leaf: `0x31 ||` a version record's encoding (`crate::namespace`).
    NamespaceVersion = 0x31,
    /// A leaf of the PoR buffer U's Merkle tree: `0x40 || sealed checksum:56`, or `0x40` alone
    /// for a slot never written (`crate::por::raw_tree`).
    PorRawLeaf = 0x40,
    /// An inner node of U's Merkle tree: `0x41 || height:u8 || left:32 || right:32`.
    PorRawNode = 0x41,
    // 0x50-0x53 named the ADICT's kinds while it hashed with SHA-256; they are not reused.
    // 0x58 named AIP's hash chain while it hashed with SHA-256; it is not reused.
}

/// A kind of input hashed with BLAKE3 in keyed mode: VICOS's (`crate::adict`, `crate::aip`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keyed {
    /// The path of a key in the authenticated dictionary: the key's bytes.
    AdictKey,
    /// A value in the authenticated dictionary: the value's bytes.
    AdictValue,
    /// A leaf of the dictionary's tree: `key path:32 || value hash:32`.
    AdictLeaf,
    /// An inner node of the dictionary's tree: `left:32 || right:32`.
    AdictNode,
    /// An entry of AIP's hash chain (`crate::aip`): `previous:32 || length:u64le || op ||
    /// position:u64le || client:u32le`.
    AipChain,
    /// The contents of a VICOS object, whose hash its dictionary entry holds (paper 003,
    /// Alg. 6).
    VicosObject,
}

impl Keyed {
    /// The context each kind's key is derived from (`blake3::derive_key`); a kind's hash
    /// changes with it, so these strings are part of the format.
    const CONTEXTS: [&'static str; 6] = [
        "vouch 2026-11-26 ADICT key path",
        "vouch 2026-11-26 ADICT value",
        "vouch 2026-11-26 ADICT leaf",
        "vouch 2026-11-26 ADICT inner node",
        "vouch 2026-11-26 AIP hash chain",
        "vouch 2026-11-26 VICOS object",
    ];

    fn key(self) -> &'static [u8; 32] {
        static KEYS: LazyLock<[[u8; 32]; 6]> = LazyLock::new(|| Keyed::CONTEXTS.map(|c| blake3::derive_key(c, b"")));
        &KEYS[self as usize]
    }
}

/// BLAKE3 of `bytes` keyed by `kind`'s key.
#[inline]
pub fn keyed(kind: Keyed, bytes: &[u8]) -> Digest {
    Digest(*blake3::keyed_hash(kind.key(), bytes).as_bytes())
}

/// A BLAKE3 hasher keyed by `kind`'s key, for an input hashed as it arrives.
pub fn keyed_hasher(kind: Keyed) -> blake3::Hasher {
    blake3::Hasher::new_keyed(kind.key())
}

/// BLAKE3 of `left || right` keyed by `kind`'s key: 64 bytes, one compression.
#[inline]
pub fn keyed_pair(kind: Keyed, left: &Digest, right: &Digest) -> Digest {
    let mut buf = [0u8; 2 * DIGEST_LEN];
    buf[..DIGEST_LEN].copy_from_slice(&left.0);
    buf[DIGEST_LEN..].copy_from_slice(&right.0);
    keyed(kind, &buf)
}

/// Hash of a FlexList leaf node: its own block's length and tag, and its after child's rank
/// and hash. Every length and rank a verifier reads is an input of some hash on the path to
/// the root (see the invariant in [`crate::flexlist`]).
#[inline]
pub fn flex_leaf(length: u64, tag: &Digest, after_rank: u64, after: &Digest) -> Digest {
    let mut buf = [0u8; 81];
    buf[0] = Domain::FlexLeaf as u8;
    buf[1..9].copy_from_slice(&length.to_le_bytes());
    buf[9..41].copy_from_slice(&tag.0);
    buf[41..49].copy_from_slice(&after_rank.to_le_bytes());
    buf[49..81].copy_from_slice(&after.0);
    sha256_two_blocks(&buf)
}

/// Hash of a FlexList inner node: its level and both children's ranks and hashes.
#[inline]
pub fn flex_node(level: u8, below_rank: u64, below: &Digest, after_rank: u64, after: &Digest) -> Digest {
    let mut buf = [0u8; 82];
    buf[0] = Domain::FlexNode as u8;
    buf[1] = level;
    buf[2..10].copy_from_slice(&below_rank.to_le_bytes());
    buf[10..42].copy_from_slice(&below.0);
    buf[42..50].copy_from_slice(&after_rank.to_le_bytes());
    buf[50..82].copy_from_slice(&after.0);
    sha256_two_blocks(&buf)
}

/// Hash of arbitrary data under [`Domain::Data`].
pub fn data(bytes: &[u8]) -> Digest {
    in_domain(Domain::Data, bytes)
}

/// Hash of `bytes` under `domain`: `domain || bytes`, for kinds whose encoding is
/// self-delimiting (records, free-form data).
pub fn in_domain(domain: Domain, bytes: &[u8]) -> Digest {
    let mut h = Sha256::new();
    h.update([domain as u8]);
    h.update(bytes);
    Digest(h.finalize().into())
}

/// The digest a FlexList leaf keeps for a PDP-tagged block: it commits to the block's identity
/// (nonce) and its homomorphic tag, and through [`crate::height_for_tag`] gives its level.
pub fn pdp_leaf(scheme: u8, nonce: u64, tag: &[u8]) -> Digest {
    let mut h = Sha256::new();
    h.update([Domain::PdpLeaf as u8, scheme]);
    h.update(nonce.to_le_bytes());
    h.update(tag);
    Digest(h.finalize().into())
}

/// Plain SHA-256 (no domain byte); used for baselines and by the domain functions above.
#[inline]
pub fn sha256(bytes: &[u8]) -> Digest {
    Digest(Sha256::digest(bytes).into())
}

/// SHA-256 of an input of 56 to 119 bytes (every tree node here: a domain byte, digests and
/// ranks), which pads to exactly two blocks: the same digest as [`sha256`], by one call of the
/// compression function over the padded blocks, without the streaming hasher's buffering. An
/// ADICT put or a FlexList path update hashes ~20 of these; this way makes an ADICT put ~7% faster.
#[inline]
pub fn sha256_two_blocks<const N: usize>(input: &[u8; N]) -> Digest {
    use sha2::digest::generic_array::GenericArray;
    const IV: [u32; 8] =
        [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    const { assert!(N >= 56 && N <= 119, "two blocks hold 56 to 119 bytes and their padding") };
    let mut padded = [0u8; 128];
    padded[..N].copy_from_slice(input);
    padded[N] = 0x80; // the padding's first bit, then zeros, then the length in bits
    padded[120..].copy_from_slice(&(N as u64 * 8).to_be_bytes());
    let blocks = [*GenericArray::from_slice(&padded[..64]), *GenericArray::from_slice(&padded[64..])];
    let mut state = IV;
    sha2::compress256(&mut state, &blocks);
    let mut out = [0u8; DIGEST_LEN];
    for (bytes, word) in out.chunks_exact_mut(4).zip(state) {
        bytes.copy_from_slice(&word.to_be_bytes());
    }
    Digest(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_block_hash_is_sha256() {
        fn check<const N: usize>(seed: u32) {
            let input: [u8; N] =
                std::array::from_fn(|i| (seed.wrapping_mul(2_654_435_761) >> (i % 24)) as u8 ^ i as u8);
            assert_eq!(sha256_two_blocks(&input), sha256(&input), "{N} bytes, seed {seed}");
        }
        for seed in 0..50 {
            check::<56>(seed);
            check::<57>(seed);
            check::<65>(seed);
            check::<66>(seed);
            check::<81>(seed);
            check::<82>(seed);
            check::<119>(seed);
        }
    }

    #[test]
    fn sha256_test_vector() {
        // FIPS 180-2 "abc".
        assert_eq!(sha256(b"abc").to_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn domains_separate_same_payload() {
        let d = Digest([7; 32]);
        assert_ne!(flex_leaf(5, &d, 0, &d), flex_node(0, 5, &d, 0, &d));
        assert_ne!(flex_node(1, 5, &d, 0, &d), flex_node(2, 5, &d, 0, &d));
        assert_ne!(flex_node(1, 5, &d, 0, &d), flex_node(1, 6, &d, 0, &d));
        // Moving rank between the two children changes the hash although the sum stays.
        assert_ne!(flex_node(1, 5, &d, 3, &d), flex_node(1, 6, &d, 2, &d));
        assert_ne!(flex_leaf(5, &d, 3, &d), flex_leaf(6, &d, 2, &d));
    }

    #[test]
    fn node_hash_vector() {
        // Pins the node layout: a change to the encoding must change this value on purpose.
        let h = flex_node(3, 0x0102, &Digest([1; 32]), 0x0304, &Digest([2; 32]));
        let mut buf = vec![0x03, 3];
        buf.extend_from_slice(&0x0102u64.to_le_bytes());
        buf.extend_from_slice(&[1; 32]);
        buf.extend_from_slice(&0x0304u64.to_le_bytes());
        buf.extend_from_slice(&[2; 32]);
        assert_eq!(h, sha256(&buf));
    }

    #[test]
    fn record_domains_are_pinned() {
        // Namespace and version leaves keep the bytes they had before they moved here.
        assert_eq!(in_domain(Domain::NamespaceEntry, b"e"), sha256(b"\x30e"));
        assert_eq!(in_domain(Domain::NamespaceVersion, b"v"), sha256(b"\x31v"));
        assert_eq!(data(b"d"), sha256(b"\x10d"));
    }

    #[test]
    fn leaf_hash_vector() {
        let h = flex_leaf(0x0a0b, &Digest([1; 32]), 0x0c0d, &Digest([2; 32]));
        let mut buf = vec![0x02];
        buf.extend_from_slice(&0x0a0bu64.to_le_bytes());
        buf.extend_from_slice(&[1; 32]);
        buf.extend_from_slice(&0x0c0du64.to_le_bytes());
        buf.extend_from_slice(&[2; 32]);
        assert_eq!(h, sha256(&buf));
    }
}

//! Provable data possession over FlexList (DPDP, paper 001; FlexDPDP, paper 000).
//!
//! # Protocol
//!
//! * **Upload.** The client cuts a file into blocks and gives each a *nonce* (its identity: a
//!   per-file counter) and the attempt's random [`Salt`], so a modified block never shares a
//!   PRF value with its old version, nor a retried upload with a refused one. It tags each
//!   block with a homomorphic tag bound to (file, nonce, salt, length), never to the block's
//!   position, since inserts shift positions. The FlexList leaf of the block
//!   holds [`crate::hash::pdp_leaf`]`(scheme, nonce, tag)`, so the root authenticates data
//!   (through the tag), order, lengths and tags at once. The client keeps the root, the length
//!   and the next nonce ([`ClientFile`]).
//! * **Challenge.** From a fresh client seed, `c` byte offsets uniform over the file and a
//!   coefficient per offset ([`Challenge`]; `c` = 460 by default: a provider that lost 1% of the
//!   bytes passes with probability `0.99^460 < 1%`). Offsets, not block numbers: with blocks
//!   of any size, sampling bytes protects every byte equally and needs no block count. Two
//!   offsets in one block challenge it once, with the first offset's coefficient.
//! * **Proof** ([`PossessionProof`], [`prove`]): the FlexList multi-proof of the offsets, the
//!   nonce and tag of each challenged block, and the aggregate of the challenged blocks under
//!   the coefficients ([`Aggregate`]).
//! * **Verification** ([`verify_possession`]): the multi-proof against the client's root, each
//!   (nonce, tag) against its leaf, then the scheme's homomorphic equation ([`Auditor`]).
//!
//! # Tag schemes
//!
//! One trait pair serves every scheme: a [`Tagger`] (the key owner) makes tags, an [`Auditor`]
//! checks the homomorphic equation. [`linear`] is the default: a secret-key linear tag over
//! Z_p (Shacham–Waters private style), fast enough to tag at memory speed. [`rsa`] is DPDP's
//! `g^m mod N`: slower, but anyone holding the public key can audit.

mod challenge;
mod client;
mod field;
pub mod linear;
mod proof;
pub mod rsa;
#[cfg(test)]
mod rsa_tests;
#[cfg(test)]
mod tests;
mod upload;

pub use challenge::{Challenge, DEFAULT_CHALLENGE};
pub use client::{BadBlockLength, ClientFile, TaggedBlock};
/// The prover's linear aggregate, exposed for benchmarks: `mu_j = sum_i nu_i * m_ij`.
pub use linear::aggregate as aggregate_linear;
pub use proof::{
    prove, verify_possession, Aggregate, DecodeError, Held, PossessionError, PossessionProof, ProofBlock, ProveError,
    POSSESSION_PROOF_VERSION,
};
pub use upload::{Upload, DEFAULT_BLOCK_SIZE};

/// Largest block a tag scheme accepts, in bytes.
pub const MAX_BLOCK_LEN: usize = 1 << 20;

/// Identity of a file: part of every tag's PRF input, so a tag never verifies in another file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId(pub [u8; 16]);

/// Which tag scheme made a file's tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SchemeId {
    /// [`linear`]: secret-key linear tags over Z_p, p = 2^61 - 1.
    Linear = 1,
    /// [`rsa`] with a 1024-bit modulus (the paper's size).
    Rsa1024 = 2,
    /// [`rsa`] with a 2048-bit modulus.
    Rsa2048 = 3,
}

impl SchemeId {
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(SchemeId::Linear),
            2 => Some(SchemeId::Rsa1024),
            3 => Some(SchemeId::Rsa2048),
            _ => None,
        }
    }

    /// Length of one tag in bytes.
    pub fn tag_len(self) -> usize {
        match self {
            SchemeId::Linear => linear::TAG_LEN,
            SchemeId::Rsa1024 => 128,
            SchemeId::Rsa2048 => 256,
        }
    }
}

/// Random bytes drawn from a CSPRNG for every upload attempt (put, edit, sync) and part of
/// each tag's PRF input, so that no two attempts share one, even when an attempt reuses the
/// nonces of one whose commit the provider refused or never answered.
pub type Salt = [u8; 16];

/// The key owner's side of a scheme: makes tags, and checks a block against its tag.
pub trait Tagger: Sync {
    fn scheme(&self) -> SchemeId;

    /// The tag of block `data` with identity (`file`, `nonce`), made in the upload attempt
    /// `salt`: [`SchemeId::tag_len`] bytes. `data` is at most [`MAX_BLOCK_LEN`] bytes.
    fn tag(&self, file: &FileId, nonce: u64, salt: &Salt, data: &[u8]) -> Vec<u8>;

    /// Whether `tag` is the tag of `data` with identity (`file`, `nonce`), for any salt the tag
    /// carries. Never panics, whatever the provider sent.
    fn check_block(&self, file: &FileId, nonce: u64, data: &[u8], tag: &[u8]) -> bool;
}

/// One challenged block as the verifier sees it: authenticated identity, tag and length, and
/// the challenge's coefficient.
#[derive(Clone, Copy, Debug)]
pub struct Challenged<'a> {
    pub nonce: u64,
    pub length: u32,
    pub coefficient: u64,
    pub tag: &'a [u8],
}

/// The verifier's side of a scheme: checks the homomorphic equation.
pub trait Auditor {
    fn scheme(&self) -> SchemeId;

    /// Whether `aggregate` is the combination of the challenged blocks' data under their
    /// coefficients, as their tags attest. The blocks' nonces, lengths and tags are already
    /// authenticated; this checks only the data.
    fn check(&self, file: &FileId, blocks: &[Challenged<'_>], aggregate: &Aggregate) -> bool;
}

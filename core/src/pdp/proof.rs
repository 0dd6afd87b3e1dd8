//! Possession proofs: what the provider sends for a [`Challenge`], its byte layout, and
//! how both sides compute and check it.

use super::{field, linear, rsa, Auditor, Challenge, Challenged, FileId, SchemeId, MAX_BLOCK_LEN};
use crate::codec::{put_varint, CodecError, Reader};
use crate::flexlist::{verify_multi_proof, FlexList, MultiProof, ProofError, ProvenBlock};
use crate::hash::{self, Digest};
use std::collections::HashSet;

/// Encoding version of [`PossessionProof`].
pub const POSSESSION_PROOF_VERSION: u8 = 1;

/// The challenged blocks' data combined under the challenge's coefficients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// Linear scheme: `mu_j = sum_i nu_i * m_ij mod p` per sector `j` of the longest
    /// challenged block.
    Sectors(Vec<u64>),
    /// RSA schemes: `M = sum_i nu_i * m_i` over the integers, little-endian 64-bit words with
    /// no trailing zero word.
    Integer(Vec<u64>),
}

impl Aggregate {
    fn words(&self) -> &[u64] {
        match self {
            Aggregate::Sectors(w) | Aggregate::Integer(w) => w,
        }
    }
}

/// Most words an RSA aggregate can have: the longest block plus coefficient and count bits.
const MAX_INTEGER_WORDS: usize = MAX_BLOCK_LEN / 8 + 2;

/// One challenged block's identity and tag, as the provider sends them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofBlock {
    pub nonce: u64,
    pub tag: Vec<u8>,
}

/// The provider's answer to a [`Challenge`].
///
/// Layout (version 1): `version:u8 || scheme:u8 || varint(list_len) || multi-proof ||
/// varint(blocks) || (nonce:u64le || tag)* || aggregate`, where the linear aggregate is
/// `varint(sectors) || (element:u64le)*`, each element below p, and the RSA aggregate is
/// `varint(words) || (word:u64le)*`, the last word nonzero. Blocks come in the order of their
/// first challenged offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PossessionProof {
    pub scheme: SchemeId,
    pub list: MultiProof,
    pub blocks: Vec<ProofBlock>,
    pub aggregate: Aggregate,
}

/// Why untrusted bytes are not a possession proof.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error("unknown possession-proof version {0}")]
    Version(u8),
    #[error("unknown tag scheme {0}")]
    Scheme(u8),
    #[error("a count of {0} does not fit in the input")]
    Count(u64),
    #[error("aggregate element not below the field modulus")]
    NotInField,
    #[error("aggregate integer has a trailing zero word")]
    NonCanonical,
    #[error(transparent)]
    List(#[from] ProofError),
    #[error("{0} trailing bytes")]
    Trailing(usize),
}

impl PossessionProof {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mu = self.aggregate.words();
        let mut out = Vec::with_capacity(self.list.len() + self.blocks.len() * 32 + mu.len() * 8 + 16);
        out.extend_from_slice(&[POSSESSION_PROOF_VERSION, self.scheme as u8]);
        put_varint(&mut out, self.list.len() as u64);
        out.extend_from_slice(self.list.as_bytes());
        put_varint(&mut out, self.blocks.len() as u64);
        for b in &self.blocks {
            out.extend_from_slice(&b.nonce.to_le_bytes());
            out.extend_from_slice(&b.tag);
        }
        put_varint(&mut out, mu.len() as u64);
        for m in mu {
            out.extend_from_slice(&m.to_le_bytes());
        }
        out
    }

    /// Parses untrusted bytes; checks the structure, not yet the proof.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != POSSESSION_PROOF_VERSION {
            return Err(DecodeError::Version(version));
        }
        let scheme_byte = r.u8()?;
        let scheme = SchemeId::from_byte(scheme_byte).ok_or(DecodeError::Scheme(scheme_byte))?;
        let list_len = r.varint()?;
        let list = r.bytes(usize::try_from(list_len).map_err(|_| DecodeError::Count(list_len))?)?;
        let list = MultiProof::from_bytes(list.to_vec())?;
        let tag_len = scheme.tag_len();
        let count = bounded_count(&mut r, 8 + tag_len)?;
        let mut blocks = Vec::with_capacity(count);
        for _ in 0..count {
            let nonce = r.u64_le()?;
            blocks.push(ProofBlock { nonce, tag: r.bytes(tag_len)?.to_vec() });
        }
        let count = bounded_count(&mut r, 8)?;
        let limit = if scheme == SchemeId::Linear { linear::MAX_SECTORS } else { MAX_INTEGER_WORDS };
        if count > limit {
            return Err(DecodeError::Count(count as u64));
        }
        let mut words = Vec::with_capacity(count);
        for _ in 0..count {
            words.push(r.u64_le()?);
        }
        if !r.is_empty() {
            return Err(DecodeError::Trailing(r.remaining()));
        }
        let aggregate = if scheme == SchemeId::Linear {
            if words.iter().any(|&m| m >= field::P) {
                return Err(DecodeError::NotInField);
            }
            Aggregate::Sectors(words)
        } else {
            if words.last() == Some(&0) {
                return Err(DecodeError::NonCanonical);
            }
            Aggregate::Integer(words)
        };
        Ok(PossessionProof { scheme, list, blocks, aggregate })
    }
}

/// Reads a count of records of `record_len` bytes each, refusing one the input cannot hold
/// (so a hostile count never drives an allocation).
fn bounded_count(r: &mut Reader<'_>, record_len: usize) -> Result<usize, DecodeError> {
    let count = r.varint()?;
    match usize::try_from(count) {
        Ok(n) if n.checked_mul(record_len).is_some_and(|bytes| bytes <= r.remaining()) => Ok(n),
        _ => Err(DecodeError::Count(count)),
    }
}

/// A block as the provider holds it.
#[derive(Clone, Copy, Debug)]
pub struct Held<'a> {
    pub nonce: u64,
    pub tag: &'a [u8],
    pub data: &'a [u8],
}

/// The provider cannot answer a challenge.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProveError {
    #[error("challenge does not fit the list: {0}")]
    List(#[from] ProofError),
    #[error("block {block_ref} is not held")]
    Missing { block_ref: u64 },
    #[error("block {block_ref} holds {held} bytes, the list says {listed}")]
    WrongLength { block_ref: u64, held: usize, listed: u32 },
}

/// The provider's answer to `challenge` over `list`. `fetch` returns the held block behind a
/// leaf's `block_ref`; the caller reads them from storage (this function does no I/O).
pub fn prove<'a>(
    scheme: SchemeId,
    list: &FlexList,
    challenge: &Challenge,
    mut fetch: impl FnMut(u64) -> Option<Held<'a>>,
) -> Result<PossessionProof, ProveError> {
    let (offsets, coefficients) = challenge.expand(list.total_len());
    let multi = list.prove(&offsets)?;
    let mut seen = HashSet::with_capacity(offsets.len());
    let mut blocks = Vec::with_capacity(offsets.len());
    let mut weighted = Vec::with_capacity(offsets.len());
    for (&at, &coefficient) in offsets.iter().zip(&coefficients) {
        let located = list.search(at).ok_or(ProofError::IndexOutOfRange { index: at, len: list.total_len() })?;
        if !seen.insert(located.start) {
            continue;
        }
        let block_ref = located.block.block_ref;
        let held = fetch(block_ref).ok_or(ProveError::Missing { block_ref })?;
        if held.data.len() != located.block.length as usize {
            return Err(ProveError::WrongLength { block_ref, held: held.data.len(), listed: located.block.length });
        }
        blocks.push(ProofBlock { nonce: held.nonce, tag: held.tag.to_vec() });
        weighted.push((coefficient, held.data));
    }
    let aggregate = match scheme {
        SchemeId::Linear => Aggregate::Sectors(linear::aggregate(weighted)),
        SchemeId::Rsa1024 | SchemeId::Rsa2048 => Aggregate::Integer(rsa::aggregate(weighted)),
    };
    Ok(PossessionProof { scheme, list: multi, blocks, aggregate })
}

/// Why a possession proof was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PossessionError {
    #[error("proof uses tag scheme {got:?}, the file uses {expected:?}")]
    SchemeMismatch { expected: SchemeId, got: SchemeId },
    #[error("skip-list proof rejected: {0}")]
    List(#[from] ProofError),
    #[error("proof carries {got} challenged blocks, the challenge hits {expected}")]
    BlockCount { expected: usize, got: usize },
    #[error("nonce and tag of the block at byte {start} do not match its leaf")]
    LeafMismatch { start: u64 },
    #[error("aggregate has the wrong kind or size (at most {expected} elements, got {got})")]
    AggregateShape { expected: usize, got: usize },
    #[error("the aggregate does not match the tags: data lost or altered")]
    Equation,
}

/// Checks `proof` against the client's state (`root`, `file_len`) for `challenge`.
pub fn verify_possession(
    auditor: &impl Auditor,
    file: &FileId,
    root: &Digest,
    file_len: u64,
    challenge: &Challenge,
    proof: &PossessionProof,
) -> Result<(), PossessionError> {
    let expected = auditor.scheme();
    if proof.scheme != expected {
        return Err(PossessionError::SchemeMismatch { expected, got: proof.scheme });
    }
    let (offsets, coefficients) = challenge.expand(file_len);
    let proven = verify_multi_proof(root, &offsets, &proof.list)?;
    let mut seen = HashSet::with_capacity(proven.len());
    let distinct: Vec<(&ProvenBlock, u64)> =
        proven.iter().zip(coefficients).filter(|(b, _)| seen.insert(b.start)).collect();
    if distinct.len() != proof.blocks.len() {
        return Err(PossessionError::BlockCount { expected: distinct.len(), got: proof.blocks.len() });
    }
    let mut challenged = Vec::with_capacity(distinct.len());
    for ((leaf, coefficient), held) in distinct.iter().zip(&proof.blocks) {
        if held.tag.len() != expected.tag_len() || hash::pdp_leaf(expected as u8, held.nonce, &held.tag) != leaf.tag {
            return Err(PossessionError::LeafMismatch { start: leaf.start });
        }
        challenged.push(Challenged {
            nonce: held.nonce,
            length: leaf.length,
            coefficient: *coefficient,
            tag: &held.tag,
        });
    }
    let longest = challenged.iter().map(|b| b.length as usize).max().unwrap_or(0).min(MAX_BLOCK_LEN);
    let got = proof.aggregate.words().len();
    // The most elements the aggregate may have (exactly that many for the linear scheme).
    let (linear, limit) = match expected {
        SchemeId::Linear => (true, field::sectors(longest)),
        SchemeId::Rsa1024 | SchemeId::Rsa2048 => (false, longest.div_ceil(8) + 2),
    };
    let shape_ok = match &proof.aggregate {
        Aggregate::Sectors(_) => linear && got == limit,
        Aggregate::Integer(_) => !linear && got <= limit,
    };
    if !shape_ok {
        return Err(PossessionError::AggregateShape { expected: limit, got });
    }
    if !auditor.check(file, &challenged, &proof.aggregate) {
        return Err(PossessionError::Equation);
    }
    Ok(())
}

//! Multi-proofs: their byte encoding, and verification on the client (verifyMultiProof,
//! constructTemporaryFlexList Alg. A.1, verifyMultiUpdate Alg. A.2).
//!
//! # Encoding, version 1
//!
//! ```text
//! proof   = version:u8 (= 1) record+
//! record  = leaf | inner                      (pre-order: node, its below subtree, its after subtree)
//! leaf    = header tag:32 length:varint [after]
//! inner   = header level:u8 [below] [after]
//! header  = bit 0: 0 leaf, 1 inner | bits 1-2: below kind | bits 3-4: after kind | bits 5-7: zero
//! kind    = 0 none | 1 opaque (hash:32 rank:varint follow in the record) | 2 open (a record follows later)
//! ```
//!
//! Varints are unsigned LEB128 in their shortest form; a node's own rank and hash are never
//! sent: the verifier recomputes them from its children. Each node appears once, so the proof
//! for a set of challenged indices is the union of their search paths without repetition.
//!
//! Decoding never panics and allocates at most in proportion to the input: every record takes
//! at least two bytes.

use super::build::{build, Fault, HashRef, HashSink, Item, Sink};
use super::edit::{apply_edits, ApplyError, Edit, EditError};
use super::{Block, MAX_HEIGHT, MAX_TOTAL_LEN, SENTINEL_HEIGHT};
use crate::codec::{put_varint, CodecError, Reader};
use crate::hash::{Digest, DIGEST_LEN};

/// The encoding version this build writes and reads.
pub const PROOF_VERSION: u8 = 1;

pub(crate) mod record {
    pub const LEAF: u8 = 0;
    pub const INNER: u8 = 1;
    pub const BELOW_SHIFT: u8 = 1;
    pub const AFTER_SHIFT: u8 = 3;
}
pub(crate) const CHILD_NONE: u8 = 0;
pub(crate) const CHILD_OPAQUE: u8 = 1;
pub(crate) const CHILD_OPEN: u8 = 2;

/// Why a proof was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("malformed proof: {0}")]
    Codec(#[from] CodecError),
    #[error("unsupported proof version {0}")]
    Version(u8),
    #[error("malformed proof: bad node header {0:#04x}")]
    BadHeader(u8),
    #[error("malformed proof: node level {0} out of place")]
    BadLevel(u8),
    #[error("malformed proof: block length {0} too large")]
    BadLength(u64),
    #[error("malformed proof: bytes after the last node")]
    TrailingBytes,
    #[error("proof claims more than {} bytes", MAX_TOTAL_LEN)]
    RankOverflow,
    #[error("proof does not match the root")]
    RootMismatch,
    #[error("challenge is empty")]
    EmptyChallenge,
    #[error("challenged byte {index} is past the end of the file ({len} bytes)")]
    IndexOutOfRange { index: u64, len: u64 },
    #[error("proof does not open the path to byte {at}")]
    Incomplete { at: u64 },
    #[error("proof opens nodes that no challenged path needs")]
    Superfluous,
    #[error("proof does not describe a canonical FlexList")]
    NotCanonical,
}

/// Why an update proof was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UpdateVerifyError {
    /// The proof is malformed, does not match the old root, or does not cover the edits.
    #[error(transparent)]
    Proof(#[from] ProofError),
    /// The edits themselves are invalid for the (authenticated) old file.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The provider's new root is not the one the edits produce.
    #[error("the provider's new root does not match the edits")]
    NewRootMismatch,
}

/// A proof of the nodes on the search paths of several byte indices (genMultiProof's output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiProof {
    bytes: Vec<u8>,
}

impl MultiProof {
    pub(crate) fn from_trusted(bytes: Vec<u8>) -> Self {
        MultiProof { bytes }
    }

    /// Parses an untrusted encoding, checking its structure (not yet against a root).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, ProofError> {
        decode(&bytes)?;
        Ok(MultiProof { bytes })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Encoded size in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Number of nodes the proof opens.
    pub fn node_count(&self) -> usize {
        decode(&self.bytes).map_or(0, |nodes| nodes.len())
    }
}

/// multiUpdate's answer: the opened region of the old list and the provider's new root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateProof {
    pub new_root: Digest,
    pub proof: MultiProof,
}

impl UpdateProof {
    /// `new_root:32 || multi-proof`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(DIGEST_LEN + self.proof.len());
        out.extend_from_slice(&self.new_root.0);
        out.extend_from_slice(self.proof.as_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProofError> {
        let mut r = Reader::new(bytes);
        let new_root = r.digest()?;
        let proof = MultiProof::from_bytes(r.bytes(r.remaining())?.to_vec())?;
        Ok(UpdateProof { new_root, proof })
    }
}

/// One challenged block, as proven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProvenBlock {
    /// Offset of the block's first byte.
    pub start: u64,
    pub length: u32,
    pub tag: Digest,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Child {
    None,
    Opaque(HashRef),
    Open(u32),
}

/// A decoded node of the temporary FlexList.
#[derive(Clone, Debug)]
pub(crate) struct ProofNode {
    pub level: u8,
    pub tag: Digest,
    pub length: u64,
    pub below: Child,
    pub after: Child,
    hash: Digest,
    rank: u64,
    /// Where the node's record lies in the encoding (for tests that cut proofs apart).
    span: std::ops::Range<usize>,
}

fn read_child(r: &mut Reader<'_>, kind: u8) -> Result<Child, ProofError> {
    Ok(match kind {
        CHILD_NONE => Child::None,
        CHILD_OPAQUE => {
            let hash = r.digest()?;
            let rank = r.varint()?;
            if rank > MAX_TOTAL_LEN {
                return Err(ProofError::RankOverflow);
            }
            Child::Opaque(HashRef { hash, rank })
        }
        _ => Child::Open(u32::MAX), // set when the child's record is read
    })
}

/// The decoded records of an untrusted proof, not yet checked against any root.
pub(crate) fn decode_nodes(bytes: &[u8]) -> Result<Vec<ProofNode>, ProofError> {
    decode(bytes)
}

/// Encodes decoded records again, in the same pre-order (a node, its below subtree, its after
/// subtree): `encode_nodes(&decode_nodes(p)?) == p` for every well-formed proof.
pub(crate) fn encode_nodes(nodes: &[ProofNode]) -> Vec<u8> {
    fn kind(child: Child) -> u8 {
        match child {
            Child::None => CHILD_NONE,
            Child::Opaque(_) => CHILD_OPAQUE,
            Child::Open(_) => CHILD_OPEN,
        }
    }
    fn opaque(out: &mut Vec<u8>, child: Child) {
        if let Child::Opaque(r) = child {
            out.extend_from_slice(&r.hash.0);
            put_varint(out, r.rank);
        }
    }
    let mut out = vec![PROOF_VERSION];
    let mut stack = vec![0usize];
    while let Some(i) = stack.pop() {
        let n = &nodes[i];
        let inner = u8::from(n.level > 0);
        out.push(inner | kind(n.below) << record::BELOW_SHIFT | kind(n.after) << record::AFTER_SHIFT);
        if n.level > 0 {
            out.push(n.level);
            opaque(&mut out, n.below);
        } else {
            out.extend_from_slice(&n.tag.0);
            put_varint(&mut out, n.length);
        }
        opaque(&mut out, n.after);
        for child in [n.after, n.below] {
            if let Child::Open(j) = child {
                stack.push(j as usize);
            }
        }
    }
    out
}

/// constructTemporaryFlexList (Alg. A.1), first half: decodes the records into a tree and checks
/// the levels. Memory: one node (about 150 bytes) per record, and records average well over 16
/// bytes, so at most about 10 bytes per input byte.
fn decode(bytes: &[u8]) -> Result<Vec<ProofNode>, ProofError> {
    let mut r = Reader::new(bytes);
    let version = r.u8()?;
    if version != PROOF_VERSION {
        return Err(ProofError::Version(version));
    }
    let mut nodes: Vec<ProofNode> = Vec::new();
    // Open child slots still to be filled: (parent, is_after). The below slot is on top.
    let mut pending: Vec<(usize, bool)> = Vec::new();
    loop {
        let slot = pending.pop();
        if slot.is_none() && !nodes.is_empty() {
            break;
        }
        let record_start = bytes.len() - r.remaining();
        let header = r.u8()?;
        let (below_kind, after_kind) = ((header >> record::BELOW_SHIFT) & 3, (header >> record::AFTER_SHIFT) & 3);
        let inner = header & 1 == record::INNER;
        let bad_kinds = if inner { below_kind == CHILD_NONE || after_kind == CHILD_NONE } else { below_kind != 0 };
        if header >> 5 != 0 || below_kind == 3 || after_kind == 3 || bad_kinds {
            return Err(ProofError::BadHeader(header));
        }
        let mut node = ProofNode {
            level: 0,
            tag: Digest::ZERO,
            length: 0,
            below: Child::None,
            after: Child::None,
            hash: Digest::ZERO,
            rank: 0,
            span: 0..0,
        };
        if inner {
            node.level = r.u8()?;
            if node.level == 0 || node.level > MAX_HEIGHT {
                return Err(ProofError::BadLevel(node.level));
            }
            node.below = read_child(&mut r, below_kind)?;
        } else {
            node.tag = r.digest()?;
            node.length = r.varint()?;
            if node.length > u64::from(u32::MAX) {
                return Err(ProofError::BadLength(node.length));
            }
        }
        node.after = read_child(&mut r, after_kind)?;
        node.span = record_start..bytes.len() - r.remaining();
        let index = nodes.len();
        if let Some((parent, is_after)) = slot {
            let p = &mut nodes[parent];
            let fits = if p.level == 0 {
                node.level == 0
            } else if is_after {
                node.level <= p.level
            } else {
                node.level < p.level
            };
            if !fits {
                return Err(ProofError::BadLevel(node.level));
            }
            let child = if is_after { &mut p.after } else { &mut p.below };
            *child = Child::Open(index as u32);
        }
        if after_kind == CHILD_OPEN {
            pending.push((index, true));
        }
        if below_kind == CHILD_OPEN {
            pending.push((index, false));
        }
        nodes.push(node);
    }
    if !r.is_empty() {
        return Err(ProofError::TrailingBytes);
    }
    Ok(nodes)
}

/// Computes every node's rank and hash bottom-up. Children come after their parent in the
/// encoding, so one backward pass suffices.
fn compute_hashes(nodes: &mut [ProofNode]) -> Result<(), ProofError> {
    for i in (0..nodes.len()).rev() {
        let n = &nodes[i];
        let after = child_ref(nodes, n.after);
        let computed = if n.level == 0 {
            HashSink.leaf(&Block::new(n.tag, n.length as u32, 0), after)
        } else {
            let (Some(below), Some(after)) = (child_ref(nodes, n.below), after) else {
                return Err(ProofError::NotCanonical);
            };
            HashSink.node(n.level, below, after)
        };
        let HashRef { hash, rank } = computed.map_err(|_| ProofError::RankOverflow)?;
        nodes[i].rank = rank;
        nodes[i].hash = hash;
    }
    Ok(())
}

/// The byte range of every record of a well-formed proof, in order.
#[cfg(test)]
pub(crate) fn record_spans(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    decode(bytes).expect("well-formed proof").into_iter().map(|n| n.span).collect()
}

fn child_ref(nodes: &[ProofNode], child: Child) -> Option<HashRef> {
    match child {
        Child::None => None,
        Child::Opaque(r) => Some(r),
        Child::Open(i) => nodes.get(i as usize).map(|n| HashRef { hash: n.hash, rank: n.rank }),
    }
}

fn decode_against(root: &Digest, proof: &MultiProof) -> Result<Vec<ProofNode>, ProofError> {
    let mut nodes = decode(proof.as_bytes())?;
    compute_hashes(&mut nodes)?;
    if nodes[0].hash != *root {
        return Err(ProofError::RootMismatch);
    }
    Ok(nodes)
}

/// verifyMultiProof: checks `proof` against the client's `root` and returns the block holding
/// each challenged byte index, in the order of `indices`. The proof must open exactly the
/// union of the challenged search paths.
pub fn verify_multi_proof(root: &Digest, indices: &[u64], proof: &MultiProof) -> Result<Vec<ProvenBlock>, ProofError> {
    verify_multi_proof_len(root, indices, proof).map(|(blocks, _)| blocks)
}

/// [`verify_multi_proof`], also returning the list's total length (the root's rank, which the
/// root hash authenticates): a verifier that must see every block learns how many there are.
pub fn verify_multi_proof_len(
    root: &Digest,
    indices: &[u64],
    proof: &MultiProof,
) -> Result<(Vec<ProvenBlock>, u64), ProofError> {
    if indices.is_empty() {
        return Err(ProofError::EmptyChallenge);
    }
    let nodes = decode_against(root, proof)?;
    let len = nodes[0].rank;
    let mut visited = vec![false; nodes.len()];
    let mut out = Vec::with_capacity(indices.len());
    for &index in indices {
        if index >= len {
            return Err(ProofError::IndexOutOfRange { index, len });
        }
        let open = |child: Child| match child {
            Child::Open(i) => Ok(i as usize),
            _ => Err(ProofError::Incomplete { at: index }),
        };
        let (mut at, mut rest) = (0usize, index);
        loop {
            visited[at] = true;
            let n = &nodes[at];
            if n.level == 0 {
                if rest < n.length {
                    out.push(ProvenBlock { start: index - rest, length: n.length as u32, tag: n.tag });
                    break;
                }
                rest -= n.length;
                at = open(n.after)?;
            } else {
                let below = child_ref(&nodes, n.below).map_or(0, |b| b.rank);
                if rest < below {
                    at = open(n.below)?;
                } else {
                    rest -= below;
                    at = open(n.after)?;
                }
            }
        }
    }
    if visited.contains(&false) {
        return Err(ProofError::Superfluous);
    }
    Ok((out, len))
}

/// verifyMultiUpdate (Alg. A.2): checks the opened region against `old_root`, applies `edits`
/// to the temporary FlexList built from it, and returns the new root if it equals the
/// provider's.
pub fn verify_multi_update(
    old_root: &Digest,
    edits: &[Edit],
    proof: &UpdateProof,
) -> Result<Digest, UpdateVerifyError> {
    verify_multi_update_len(old_root, edits, proof).map(|(root, _)| root)
}

/// [`verify_multi_update`], also returning the file's new length (the new root's rank).
pub fn verify_multi_update_len(
    old_root: &Digest,
    edits: &[Edit],
    proof: &UpdateProof,
) -> Result<(Digest, u64), UpdateVerifyError> {
    let (root, len) = updated_root(old_root, edits, &proof.proof)?;
    if root != proof.new_root {
        return Err(UpdateVerifyError::NewRootMismatch);
    }
    Ok((root, len))
}

/// The root and length that `edits` give the list `proof` opens under `old_root`.
pub(crate) fn updated_root(
    old_root: &Digest,
    edits: &[Edit],
    proof: &MultiProof,
) -> Result<(Digest, u64), UpdateVerifyError> {
    let nodes = decode_against(old_root, proof)?;
    let items = apply_edits(flatten(&nodes), edits).map_err(|e| match e {
        ApplyError::Edit(e) => UpdateVerifyError::Edit(e),
        ApplyError::Closed { at } => ProofError::Incomplete { at }.into(),
    })?;
    let root = build(&mut HashSink, items.into_iter()).map_err(|f| match f {
        Fault::RankOverflow => ProofError::RankOverflow,
        Fault::Shape | Fault::TooManyNodes => ProofError::NotCanonical,
    })?;
    Ok((root.hash, root.rank))
}

/// The temporary FlexList as builder items: opened leaves and dummy subtrees, in file order.
fn flatten(nodes: &[ProofNode]) -> Vec<Item<HashRef>> {
    let mut items = Vec::with_capacity(nodes.len() * 2);
    let mut stack = vec![(Child::Open(0), SENTINEL_HEIGHT, SENTINEL_HEIGHT)];
    while let Some((child, height, base)) = stack.pop() {
        match child {
            Child::None => {}
            Child::Opaque(r) => items.push(Item::Sub { node: r, rank: r.rank, height, base }),
            Child::Open(i) => {
                let n = &nodes[i as usize];
                if n.level == 0 {
                    let block = Block::new(n.tag, n.length as u32, 0);
                    items.push(Item::Leaf { block, height });
                    stack.push((n.after, 0, 0));
                } else {
                    stack.push((n.after, n.level, n.level));
                    stack.push((n.below, height, n.level - 1));
                }
            }
        }
    }
    items
}

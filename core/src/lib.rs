//! vouch-core: the pure part of vouch. No I/O, no async, no unsafe code.
//!
//! * [`hash`]: the one hash dispatch point: domain-separated SHA-256, and keyed BLAKE3 for VICOS
//!   (ADICT, AIP's hash chain, objects).
//! * [`flexlist`]: FlexList, the authenticated skip list of FlexDPDP, with multi-proofs and
//!   batched, verifiable updates.
//! * [`pdp`]: provable data possession over FlexList: homomorphic tags, challenges, proofs.
//! * [`namespace`]: names and versions under one root: the client's checks, the provider's
//!   [`namespace::NamespaceTree`] (a change is proven first, as a batch its caller persists,
//!   then applied), and [`namespace::NamespaceOps`], the namespace as an [`aip::Functionality`]
//!   (VICOS Sec. 2.3) that AIP runs over.
//! * [`aip`]: AIP, VICOS's protocol for many clients of one untrusted server (Alg. 1–3), its
//!   wire format ([`aip::wire`]), and ADICT ([`adict`]) as its dictionary.
//! * [`por`]: dynamic proofs of retrievability (paper 002): the code, checksums, replayed rebuilds, audits.
//! * [`codec`]: the canonical byte layouts everything above is hashed and sent in.
//!
//! Higher layers (storage, server, client) persist and transport what this crate computes;
//! this crate imports none of them.
#![forbid(unsafe_code)]
#![warn(missing_debug_implementations)]

pub mod adict;
pub mod aip;
pub mod codec;
pub mod envelope;
pub mod flexlist;
#[doc(hidden)]
pub mod fuzz_targets;
pub mod hash;
pub mod namespace;
pub mod pdp;
pub mod por;

pub use flexlist::{
    height_for_tag, verify_multi_proof, verify_multi_proof_len, verify_multi_update, verify_multi_update_len, Block,
    BuildError, Edit, EditError, FlexList, Located, MultiProof, ProofError, ProvenBlock, UpdateProof,
    UpdateVerifyError,
};
pub use hash::Digest;

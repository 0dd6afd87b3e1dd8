//! Aggregated audits (Sec. 5.5), one part per filled level of H and one for C, so that a
//! report says which level failed.
//!
//! The client sends a 32-byte seed; both sides expand it into the same `λ` distinct slot
//! indices and nonzero coefficients per part ([`picks`]). The server answers each part with
//! the picked slots' sealed checksums and one aggregate slot `B* = Σ c_i·B_i`
//! ([`prove_part`]); the client opens the checksums at the part's address and write time
//! and checks `σ(B*) = Σ c_i·σ_i` ([`verify_part`]).
//!
//! A part catches a server that lost or altered more than half of a level (it could no
//! longer be decoded) unless all `λ` picks fall on intact slots: probability below `2^-λ`.
//!
//! A level's slots are groups of writes (Sec. 6.1), so its aggregate is a group wide: the
//! price of grouping is paid by audits, not by writes.

use super::checksum::{Checksum, ChecksumKey, OpenError, SealKey, SealedChecksum, SEALED_LEN};
use super::code::Schedule;
use super::field::{add, mul, P};
use super::{Region, SlotAddress};

/// One part of an audit: a region, how many slots it has and when they were written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub region: Region,
    pub slots: u64,
    pub time: u64,
}

/// The parts an audit at this point covers: every filled level, smallest first, then C.
pub fn parts(schedule: &Schedule) -> Vec<Part> {
    let levels = schedule.filled_levels().map(|level| Part {
        region: Region::Level(level as u8),
        slots: 2 << level,
        time: schedule.level_time(level).expect("filled"),
    });
    let coded = Part { region: Region::Coded, slots: 2 * schedule.capacity(), time: schedule.coded_time() };
    levels.chain(std::iter::once(coded)).collect()
}

/// A challenged slot and its coefficient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    pub index: u64,
    pub coefficient: u64,
}

/// `min(λ, slots)` distinct indices of `part` and their nonzero coefficients, expanded from
/// the audit's seed (BLAKE3 in derive-key mode, one stream per part).
pub fn picks(seed: &[u8; 32], part: &Part, lambda: usize) -> Vec<Pick> {
    let mut hasher = blake3::Hasher::new_derive_key("vouch por audit picks v1");
    hasher.update(seed).update(&SlotAddress { region: part.region, index: part.slots }.to_bytes());
    let mut stream = hasher.finalize_xof();
    let mut next = || {
        let mut word = [0; 8];
        stream.fill(&mut word);
        u64::from_le_bytes(word)
    };
    let want = (lambda as u64).min(part.slots) as usize;
    let mut chosen: Vec<u64> = Vec::with_capacity(want);
    while chosen.len() < want {
        // Rejection keeps indices uniform; a repeat is drawn again.
        let zone = u64::MAX - u64::MAX % part.slots;
        let raw = next();
        let index = raw % part.slots;
        if raw < zone && !chosen.contains(&index) {
            chosen.push(index);
        }
    }
    chosen
        .into_iter()
        .map(|index| {
            let coefficient = loop {
                let c = next();
                if c != 0 && c < P {
                    break c;
                }
            };
            Pick { index, coefficient }
        })
        .collect()
}

/// The server's answer to one part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartProof {
    pub sealed: Vec<SealedChecksum>,
    /// `B* = Σ c_i·B_i`, one slot.
    pub aggregate: Vec<u64>,
}

/// Why the bytes of a [`PartProof`] were refused before any check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofDecodeError {
    #[error("a proof for {picks} picks of {width} elements has {want} bytes, not {got}")]
    Length { got: usize, want: usize, picks: usize, width: usize },
    #[error("an aggregate element is not below p")]
    NotCanonical,
}

impl PartProof {
    /// The sealed checksums, then the aggregate's elements (8 bytes each, little-endian).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.sealed.len() * SEALED_LEN + self.aggregate.len() * 8);
        self.sealed.iter().for_each(|s| out.extend_from_slice(&s.to_bytes()));
        self.aggregate.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        out
    }

    /// Decodes the answer to `picks` picks of slots of `width` elements: the verifier knows
    /// both, so the length is checked before anything is allocated.
    pub fn from_bytes(bytes: &[u8], picks: usize, width: usize) -> Result<PartProof, ProofDecodeError> {
        let want = picks.saturating_mul(SEALED_LEN).saturating_add(width.saturating_mul(8));
        if bytes.len() != want {
            return Err(ProofDecodeError::Length { got: bytes.len(), want, picks, width });
        }
        let (sealed, aggregate) = bytes.split_at(picks * SEALED_LEN);
        let sealed = sealed
            .chunks_exact(SEALED_LEN)
            .map(|c| SealedChecksum::from_bytes(c.try_into().expect("SEALED_LEN bytes")))
            .collect();
        let aggregate: Vec<u64> =
            aggregate.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        if aggregate.iter().any(|&v| v >= P) {
            return Err(ProofDecodeError::NotCanonical);
        }
        Ok(PartProof { sealed, aggregate })
    }
}

/// The server's side: `read(index)` gives a picked slot and its sealed checksum.
pub fn prove_part<'a>(
    picks: &[Pick],
    width: usize,
    mut read: impl FnMut(u64) -> (&'a [u64], SealedChecksum),
) -> PartProof {
    let mut aggregate = vec![0; width];
    let mut sealed = Vec::with_capacity(picks.len());
    for pick in picks {
        let (slot, checksum) = read(pick.index);
        for (acc, &v) in aggregate.iter_mut().zip(slot) {
            *acc = add(*acc, mul(pick.coefficient, v));
        }
        sealed.push(checksum);
    }
    PartProof { sealed, aggregate }
}

/// Why a part of an audit failed: each is the server's fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditFailure {
    #[error("the answer has {got} sealed checksums for {want} picks, or an aggregate of the wrong shape")]
    Malformed { got: usize, want: usize },
    #[error("the sealed checksum of slot {index} does not open at its address and time: {error}")]
    Checksum { index: u64, error: OpenError },
    #[error("the aggregate slot does not match the checksums: some challenged slot is not what was written")]
    AggregateMismatch,
}

/// The client's check of one part.
pub fn verify_part(
    seal: &SealKey,
    checksums: &ChecksumKey,
    part: &Part,
    picks: &[Pick],
    proof: &PartProof,
) -> Result<(), AuditFailure> {
    let malformed = AuditFailure::Malformed { got: proof.sealed.len(), want: picks.len() };
    if proof.sealed.len() != picks.len()
        || proof.aggregate.len() != checksums.region_width(part.region)
        || proof.aggregate.iter().any(|&v| v >= P)
    {
        return Err(malformed);
    }
    let mut sums = Vec::with_capacity(picks.len());
    for (pick, sealed) in picks.iter().zip(&proof.sealed) {
        let addr = SlotAddress { region: part.region, index: pick.index };
        let sum =
            seal.open(addr, part.time, sealed).map_err(|error| AuditFailure::Checksum { index: pick.index, error })?;
        sums.push(sum);
    }
    let coefficients: Vec<u64> = picks.iter().map(|p| p.coefficient).collect();
    if Checksum::combine(&coefficients, &sums) != checksums.checksum(&proof.aggregate) {
        return Err(AuditFailure::AggregateMismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz_targets::{reference_por_part, reference_por_proof, POR_WIDTH};

    #[test]
    fn proofs_round_trip_and_hostile_bytes_are_refused() {
        let r = reference_por_part();
        let proof = reference_por_proof();
        let bytes = proof.to_bytes();
        assert_eq!(PartProof::from_bytes(&bytes, r.picks.len(), POR_WIDTH), Ok(proof.clone()));
        assert_eq!(verify_part(&r.seal, &r.sums, &r.part, &r.picks, &proof), Ok(()));
        // A count the verifier did not ask for, in either direction, is refused by length.
        for (picks, width) in [(r.picks.len() + 1, POR_WIDTH), (r.picks.len(), POR_WIDTH - 1), (usize::MAX, 1)] {
            assert!(matches!(PartProof::from_bytes(&bytes, picks, width), Err(ProofDecodeError::Length { .. })));
        }
        let mut big = bytes.clone();
        let last = big.len() - 8;
        big[last..].copy_from_slice(&P.to_le_bytes());
        assert_eq!(PartProof::from_bytes(&big, r.picks.len(), POR_WIDTH), Err(ProofDecodeError::NotCanonical));
    }

    #[test]
    fn picks_are_distinct_cover_small_parts_and_follow_the_seed() {
        let part = Part { region: Region::Level(5), slots: 64, time: 3 };
        let a = picks(&[1; 32], &part, 20);
        let mut indices: Vec<u64> = a.iter().map(|p| p.index).collect();
        indices.sort_unstable();
        indices.dedup();
        assert_eq!(indices.len(), 20);
        assert!(a.iter().all(|p| p.index < 64 && p.coefficient != 0 && p.coefficient < P));
        assert_eq!(a, picks(&[1; 32], &part, 20));
        assert_ne!(a, picks(&[2; 32], &part, 20));
        assert_eq!(picks(&[1; 32], &Part { slots: 4, ..part }, 20).len(), 4);
    }
}

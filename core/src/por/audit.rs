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

use super::checksum::{Checksum, ChecksumKey, OpenError, SealKey, SealedChecksum};
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
        || proof.aggregate.len() != checksums.width()
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

//! Challenges: which bytes the provider must prove it holds, and with which coefficients.

use super::field;

/// Offsets per challenge unless the client asks otherwise: a provider missing 1% of a file's
/// bytes passes with probability 0.99^460 < 1% (paper 001, Sec. 8).
pub const DEFAULT_CHALLENGE: u32 = 460;

/// A challenge: a fresh random seed from the client and the number of offsets.
///
/// Everything else follows from the seed: [`Challenge::expand`] draws `count` byte offsets,
/// uniform over the file, and a nonzero coefficient per offset, from BLAKE3's XOF. A fresh seed
/// per challenge means no precomputed answer and no replayed proof passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub seed: [u8; 32],
    pub count: u32,
}

impl Challenge {
    pub fn new(seed: [u8; 32], count: u32) -> Self {
        Challenge { seed, count }
    }

    /// The challenged byte offsets of a file of `file_len` bytes and their coefficients.
    /// Empty for an empty file.
    pub fn expand(&self, file_len: u64) -> (Vec<u64>, Vec<u64>) {
        if file_len == 0 {
            return (Vec::new(), Vec::new());
        }
        let mut h = blake3::Hasher::new_derive_key("vouch pdp 2026 challenge");
        h.update(&self.seed);
        let mut xof = h.finalize_xof();
        let mut offsets = Vec::with_capacity(self.count as usize);
        let mut coefficients = Vec::with_capacity(self.count as usize);
        let mut buf = [0u8; 24];
        while offsets.len() < self.count as usize {
            xof.fill(&mut buf);
            // 64 random bits scaled to the file length: bias at most len / 2^64.
            let r = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
            let coefficient = field::from_random(buf[8..].try_into().expect("16 bytes"));
            if coefficient == 0 {
                continue;
            }
            offsets.push(((u128::from(r) * u128::from(file_len)) >> 64) as u64);
            coefficients.push(coefficient);
        }
        (offsets, coefficients)
    }
}

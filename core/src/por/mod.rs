//! Dynamic proofs of retrievability (paper 002, Shi–Stefanov–Papamanthou): the pure part.
//!
//! Built so far: the field ([`field`], Sec. 4.6) and Fig. 4's butterfly step [`mix`], the
//! kernel of HRebuildX / HRebuildY and of CRebuild. The buffers U / C / H, HAdd, the
//! homomorphic checksums and the audits build on these.
//!
//! A level holds fixed-size slots (each `slot` elements), stored flat: slot `i` of a level is
//! `level[i * slot..(i + 1) * slot]`. A slot's elements are independent codes of the same
//! shape (Sec. 4.6: the mix runs on each segment of a block).

pub mod checksum;
pub mod field;

use field::{add, mul, sub};

/// The buffer a codeword slot lives in (Sec. 4.1): a level of the hierarchical log H, the
/// erasure-coded copy C, or the raw buffer U.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Region {
    /// Level `ℓ` of H; its slots are numbered `0..2^(ℓ+1)` (X then Y).
    Level(u8),
    /// The erasure-coded copy C; slots `0..2n` (X then Y).
    Coded,
    /// The raw buffer U; slot `i` is the i-th slot of the heap.
    Raw,
}

/// A slot's place: what a checksum's one-time key is bound to, with the slot's write time
/// (Sec. 5.4 `PRF(sk0, 0, addr, t)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlotAddress {
    pub region: Region,
    pub index: u64,
}

impl SlotAddress {
    /// The canonical bytes: the region (`ℓ` for a level, 0xFE for C, 0xFF for U), then the
    /// index, little-endian.
    pub fn to_bytes(self) -> [u8; 9] {
        let region = match self.region {
            Region::Level(level) => level,
            Region::Coded => 0xFE,
            Region::Raw => 0xFF,
        };
        let mut out = [0; 9];
        out[0] = region;
        out[1..].copy_from_slice(&self.index.to_le_bytes());
        out
    }
}

/// Fig. 4 `mix(A0, A1)`: from two arrays of `h` slots, the array of `2h` slots
/// `A[i] = A0[i] + ν^i·A1[i]`, `A[i + h] = A0[i] - ν^i·A1[i]`, for `nu` a primitive
/// `2h`-th root of unity. (When A0 and A1 are the size-h transforms of the even and the odd
/// elements of x, A is the size-2h transform of x: one Cooley–Tukey step.)
///
/// # Panics
/// When the arrays differ in length or are not whole slots (a caller's bug, not input).
pub fn mix(a0: &[u64], a1: &[u64], slot: usize, nu: u64) -> Vec<u64> {
    assert!(a0.len() == a1.len() && slot > 0 && a0.len().is_multiple_of(slot), "mix of two arrays of whole slots");
    let half = a0.len();
    let mut out = vec![0; 2 * half];
    let (lo, hi) = out.split_at_mut(half);
    let mut twiddle = 1;
    for (((lo, hi), a0), a1) in
        lo.chunks_exact_mut(slot).zip(hi.chunks_exact_mut(slot)).zip(a0.chunks_exact(slot)).zip(a1.chunks_exact(slot))
    {
        butterfly(lo, hi, a0, a1, twiddle);
        twiddle = mul(twiddle, nu);
    }
    out
}

/// `lo = a0 + c·a1`, `hi = a0 - c·a1`, elementwise: the loop all of the code's time is in.
#[inline]
fn butterfly(lo: &mut [u64], hi: &mut [u64], a0: &[u64], a1: &[u64], c: u64) {
    for (((lo, hi), &x), &y) in lo.iter_mut().zip(hi.iter_mut()).zip(a0).zip(a1) {
        let t = mul(c, y);
        *lo = add(x, t);
        *hi = sub(x, t);
    }
}

#[cfg(test)]
mod tests {
    use super::field::{pow, root_of_unity, P};
    use super::*;
    use proptest::prelude::*;

    /// The size-n transform of each slot position, straight from the definition:
    /// `X[i] = sum_j x[j]·w^(ij)`.
    fn dft(x: &[u64], slot: usize, w: u64) -> Vec<u64> {
        let n = x.len() / slot;
        let mut out = vec![0; x.len()];
        for i in 0..n {
            for j in 0..n {
                let c = pow(w, (i * j) as u64);
                for s in 0..slot {
                    out[i * slot + s] = add(out[i * slot + s], mul(c, x[j * slot + s]));
                }
            }
        }
        out
    }

    /// Slots `start, start + 2, ...` of `x`.
    fn every_other(x: &[u64], slot: usize, start: usize) -> Vec<u64> {
        x.chunks_exact(slot).skip(start).step_by(2).flatten().copied().collect()
    }

    proptest! {
        #[test]
        fn mix_is_one_step_of_the_transform(
            log_half in 0u32..5,
            slot in 1usize..4,
            seed in proptest::collection::vec(any::<u64>(), 64 * 3),
        ) {
            let n = 2usize << log_half;
            let x: Vec<u64> = seed[..n * slot].iter().map(|v| v % P).collect();
            let w = root_of_unity(log_half + 1).unwrap();
            let w2 = mul(w, w);
            let even = dft(&every_other(&x, slot, 0), slot, w2);
            let odd = dft(&every_other(&x, slot, 1), slot, w2);
            prop_assert_eq!(mix(&even, &odd, slot, w), dft(&x, slot, w));
        }
    }
}

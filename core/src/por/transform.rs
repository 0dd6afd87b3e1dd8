//! The butterfly network of Fig. 3: Fig. 4's `mix`, the whole transform built from it, and
//! its inverse. Everything here works on arrays of fixed-size *slots* stored flat (slot `i`
//! is `data[i * slot..(i + 1) * slot]`); a slot's elements are independent codes of the same
//! shape (Sec. 4.6: the mix runs on each segment of a block), so one twiddle serves a whole
//! slot and the inner loop is a plain elementwise [`butterfly`].
//!
//! **Order.** [`forward`] reads its input in *time order* and treats it as the bit-reversed
//! coefficient vector of a polynomial: for `x` of `2^c` slots it outputs
//! `E[q] = Σ_s x_s · ω^(ψ_c(s)·q)`, `ω` a primitive `2^c`-th root of unity. This is exactly
//! what repeated `mix(older, newer)` builds (the older half are the "even" inputs of a
//! Cooley–Tukey step), so a level of the log, built write by write, equals `forward` of its
//! blocks in the order they were written.

use super::field::{add, inv, mul, root_of_unity, sub};

/// `ψ_c(i)` (Sec. 4.4.1): `i` with its `bits` least significant bits reversed. The paper's
/// examples: `ψ_3(1) = 4`, `ψ_2(1) = 2`.
pub fn psi(bits: u32, i: u64) -> u64 {
    assert!(bits < 64, "ψ of at most 63 bits");
    if bits == 0 {
        return i;
    }
    let low = i & ((1 << bits) - 1);
    (i ^ low) | (low.reverse_bits() >> (64 - bits))
}

/// Fig. 4 `mix(A0, A1)`: from two arrays of `h` slots, the array of `2h` slots
/// `A[i] = A0[i] + ν^i·A1[i]`, `A[i + h] = A0[i] - ν^i·A1[i]`, for `nu` a primitive
/// `2h`-th root of unity.
///
/// # Panics
/// When the arrays differ in length or are not whole slots (a caller's bug, not input).
pub fn mix(a0: &[u64], a1: &[u64], slot: usize, nu: u64) -> Vec<u64> {
    assert!(a0.len() == a1.len(), "mix of two arrays of the same length");
    let mut out = [a0, a1].concat();
    mix_in_place(&mut out, slot, nu);
    out
}

/// [`mix`] in place: `group` holds `A0 ‖ A1` and becomes `A`.
pub fn mix_in_place(group: &mut [u64], slot: usize, nu: u64) {
    assert!(slot > 0 && group.len().is_multiple_of(2 * slot), "mix of two arrays of whole slots");
    let (a0, a1) = group.split_at_mut(group.len() / 2);
    let mut twiddle = 1;
    for (x, y) in a0.chunks_exact_mut(slot).zip(a1.chunks_exact_mut(slot)) {
        butterfly(x, y, twiddle);
        twiddle = mul(twiddle, nu);
    }
}

/// `x, y ← x + c·y, x - c·y`, elementwise: the loop all of the code's time is in. A vector
/// kernel ([`vouch_simd::butterfly_prefix`], when the CPU has one) does the longest prefix of
/// whole vectors, the scalar loop the rest; the results are the same bit for bit.
#[inline]
pub fn butterfly(x: &mut [u64], y: &mut [u64], c: u64) {
    let done = vouch_simd::butterfly_prefix(x, y, c);
    butterfly_scalar(&mut x[done..], &mut y[done..], c);
}

/// [`butterfly`] one element at a time.
#[inline]
fn butterfly_scalar(x: &mut [u64], y: &mut [u64], c: u64) {
    for (x, y) in x.iter_mut().zip(y.iter_mut()) {
        let t = mul(c, *y);
        let a = *x;
        *x = add(a, t);
        *y = sub(a, t);
    }
}

/// The inverse step of [`butterfly`] without the halving: `x, y ← x + y, (x - y)·c⁻¹`
/// (given `c_inv`). Applying it to `mix`'s output gives twice its input. Vector kernel and
/// scalar loop as in [`butterfly`].
#[inline]
fn unbutterfly(x: &mut [u64], y: &mut [u64], c_inv: u64) {
    let done = vouch_simd::unbutterfly_prefix(x, y, c_inv);
    unbutterfly_scalar(&mut x[done..], &mut y[done..], c_inv);
}

/// [`unbutterfly`] one element at a time.
#[inline]
fn unbutterfly_scalar(x: &mut [u64], y: &mut [u64], c_inv: u64) {
    for (x, y) in x.iter_mut().zip(y.iter_mut()) {
        let (a, b) = (*x, *y);
        *x = add(a, b);
        *y = mul(sub(a, b), c_inv);
    }
}

/// The number of slots in `data` and its log2.
///
/// # Panics
/// When `data` is not a power-of-two number of whole slots.
fn slots_log2(data: &[u64], slot: usize) -> (usize, u32) {
    assert!(slot > 0 && data.len().is_multiple_of(slot), "whole slots");
    let n = data.len() / slot;
    assert!(n.is_power_of_two(), "a power-of-two number of slots");
    (n, n.trailing_zeros())
}

/// `ν^0 .. ν^(half-1)` for `ν` a primitive `2·half`-th root of unity, or its inverse.
fn twiddles(half: usize, inverse: bool) -> Vec<u64> {
    let nu = root_of_unity(half.trailing_zeros() + 1).expect("transform size within the field's 2-adicity");
    let nu = if inverse { inv(nu).expect("a root of unity is nonzero") } else { nu };
    std::iter::successors(Some(1), |&t| Some(mul(t, nu))).take(half).collect()
}

/// The transform of `data` in place: the whole butterfly network, stage by stage (see the
/// module documentation for the order).
pub fn forward(data: &mut [u64], slot: usize) {
    let (n, _) = slots_log2(data, slot);
    let mut half = 1;
    while half < n {
        let table = twiddles(half, false);
        for group in data.chunks_exact_mut(2 * half * slot) {
            let (a0, a1) = group.split_at_mut(half * slot);
            for ((x, y), &c) in a0.chunks_exact_mut(slot).zip(a1.chunks_exact_mut(slot)).zip(&table) {
                butterfly(x, y, c);
            }
        }
        half *= 2;
    }
}

/// The inverse of [`forward`]: evaluations at the `2^c`-th roots of unity, in natural order,
/// back to the time-ordered input.
pub fn inverse(data: &mut [u64], slot: usize) {
    let (n, log_n) = slots_log2(data, slot);
    let mut half = n / 2;
    while half >= 1 {
        let table = twiddles(half, true);
        for group in data.chunks_exact_mut(2 * half * slot) {
            let (a0, a1) = group.split_at_mut(half * slot);
            for ((x, y), &c) in a0.chunks_exact_mut(slot).zip(a1.chunks_exact_mut(slot)).zip(&table) {
                unbutterfly(x, y, c);
            }
        }
        half /= 2;
    }
    let n_inv = inv(1 << log_n).expect("n is nonzero in Z_p");
    scale(data, n_inv);
}

/// `data ← c·data`, elementwise.
pub fn scale(data: &mut [u64], c: u64) {
    if c != 1 {
        data.iter_mut().for_each(|v| *v = mul(*v, c));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::field::{pow, P};
    use super::*;
    use proptest::prelude::*;

    /// `E[q] = Σ_s x_s·ω^(ψ_c(s)·q)`, straight from the definition.
    pub(crate) fn naive_transform(x: &[u64], slot: usize) -> Vec<u64> {
        let n = x.len() / slot;
        let bits = n.trailing_zeros();
        let w = root_of_unity(bits).unwrap();
        let mut out = vec![0; x.len()];
        for q in 0..n {
            for s in 0..n {
                let c = pow(w, psi(bits, s as u64) * q as u64);
                for e in 0..slot {
                    out[q * slot + e] = add(out[q * slot + e], mul(c, x[s * slot + e]));
                }
            }
        }
        out
    }

    #[test]
    fn psi_reverses_the_low_bits_only() {
        assert_eq!(psi(3, 1), 4);
        assert_eq!(psi(2, 1), 2);
        assert_eq!(psi(0, 5), 5);
        assert_eq!(psi(2, 0b1101), 0b1110);
        for i in 0..64 {
            assert_eq!(psi(6, psi(6, i)), i);
        }
    }

    fn elements(seed: &[u64], len: usize) -> Vec<u64> {
        seed.iter().cycle().take(len).map(|v| v % P).collect()
    }

    proptest! {
        /// The vector kernel (when this CPU has one; see `vouch_simd::kernel_name`) and the
        /// scalar loop agree bit for bit, on lengths that are and are not whole vectors.
        #[test]
        fn butterflies_equal_the_scalar_loop(
            xy in proptest::collection::vec((0..P, 0..P), 0..100),
            c in prop_oneof![Just(0u64), Just(1), Just(P - 1), 0..P],
        ) {
            let (x, y): (Vec<u64>, Vec<u64>) = xy.into_iter().unzip();
            let (mut kx, mut ky, mut sx, mut sy) = (x.clone(), y.clone(), x.clone(), y.clone());
            butterfly(&mut kx, &mut ky, c);
            butterfly_scalar(&mut sx, &mut sy, c);
            prop_assert_eq!((&kx, &ky), (&sx, &sy), "butterfly, kernel {}", vouch_simd::kernel_name());
            let (mut kx, mut ky, mut sx, mut sy) = (x.clone(), y.clone(), x, y);
            unbutterfly(&mut kx, &mut ky, c);
            unbutterfly_scalar(&mut sx, &mut sy, c);
            prop_assert_eq!((&kx, &ky), (&sx, &sy), "unbutterfly, kernel {}", vouch_simd::kernel_name());
        }

        #[test]
        fn mix_is_one_step_of_the_transform(
            log_half in 0u32..5,
            slot in 1usize..4,
            seed in proptest::collection::vec(any::<u64>(), 1..64),
        ) {
            let half = 1usize << log_half;
            let x = elements(&seed, 2 * half * slot);
            let (older, newer) = x.split_at(half * slot);
            let nu = root_of_unity(log_half + 1).unwrap();
            let mixed = mix(&naive_transform(older, slot), &naive_transform(newer, slot), slot, nu);
            prop_assert_eq!(mixed, naive_transform(&x, slot));
        }

        /// Slots of 8 elements and more run the vector kernel too (when there is one).
        #[test]
        fn forward_is_the_transform_and_inverse_undoes_it(
            log_n in 0u32..7,
            slot in prop_oneof![1usize..4, 8usize..20],
            seed in proptest::collection::vec(any::<u64>(), 1..64),
        ) {
            let x = elements(&seed, (1 << log_n) * slot);
            let mut e = x.clone();
            forward(&mut e, slot);
            prop_assert_eq!(&e, &naive_transform(&x, slot));
            inverse(&mut e, slot);
            prop_assert_eq!(e, x);
        }
    }
}

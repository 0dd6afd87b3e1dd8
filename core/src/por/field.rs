//! The field of the PoR code: Z_p with p = 2^64 - 2^32 + 1 ("Goldilocks").
//!
//! **Why this prime.** Paper 002 (Sec. 4.6) asks for a prime `p = α·2^k + 1` that fits a
//! machine word, with a 2n-th root of unity for a level of n blocks. This one is
//! `(2^32 - 1)·2^32 + 1`:
//! * its multiplicative group has order divisible by 2^32, so levels up to 2^31 blocks have
//!   their roots of unity (Fig. 4's `w`, `ν`);
//! * every element fits a `u64`, a product fits a `u128`, and reduction needs no division:
//!   `2^64 ≡ 2^32 - 1` and `2^96 ≡ -1 (mod p)` ([`reduce`]);
//! * a block is read as sectors of 7 bytes, exactly as the linear tags read it
//!   ([`crate::pdp`]), and every 56-bit sector is an element. A codeword element takes 8
//!   bytes, so the code's overhead is 2x (Eq. 1) times 8/7. (A 32-bit prime such as
//!   3·2^30 + 1 would hold 3 bytes per 4: 4/3.)

/// The modulus, 2^64 - 2^32 + 1.
pub const P: u64 = 0xffff_ffff_0000_0001;

/// 2^64 mod p.
const EPSILON: u64 = (1 << 32) - 1;

/// A generator of the multiplicative group Z_p^*.
pub const GENERATOR: u64 = 7;

/// log2 of the largest power of two dividing p - 1.
pub const TWO_ADICITY: u32 = 32;

/// Bytes per sector of a block (see the module documentation).
pub const SECTOR_BYTES: usize = 7;

/// Reduces any `u128` modulo [`P`] to the canonical range `0..P`.
#[inline]
pub fn reduce(x: u128) -> u64 {
    let (lo, hi) = (x as u64, (x >> 64) as u64);
    let (hi_hi, hi_lo) = (hi >> 32, hi & EPSILON);
    // lo - hi_hi·2^96 (2^96 ≡ -1); a borrow took 2^64 ≡ EPSILON away too many.
    let (mut t, borrow) = lo.overflowing_sub(hi_hi);
    if borrow {
        t = t.wrapping_sub(EPSILON);
    }
    // + hi_lo·2^64 (≡ hi_lo·EPSILON, below 2^64); a carry dropped 2^64 ≡ EPSILON.
    let (sum, carry) = t.overflowing_add(hi_lo * EPSILON);
    let sum = if carry { sum + EPSILON } else { sum };
    if sum >= P {
        sum - P
    } else {
        sum
    }
}

/// `a + b mod p` of canonical elements.
#[inline]
pub fn add(a: u64, b: u64) -> u64 {
    let (s, carry) = a.overflowing_add(b);
    // a + b < 2p < 2^65: a carry means s + 2^64 ≡ s + EPSILON, which then stays below p.
    let s = if carry { s + EPSILON } else { s };
    if s >= P {
        s - P
    } else {
        s
    }
}

/// `a - b mod p` of canonical elements.
#[inline]
pub fn sub(a: u64, b: u64) -> u64 {
    let (d, borrow) = a.overflowing_sub(b);
    if borrow {
        d.wrapping_add(P)
    } else {
        d
    }
}

/// `a · b mod p`.
#[inline]
pub fn mul(a: u64, b: u64) -> u64 {
    reduce(u128::from(a) * u128::from(b))
}

/// `base^exp mod p`.
pub fn pow(mut base: u64, mut exp: u64) -> u64 {
    let mut acc = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = mul(acc, base);
        }
        base = mul(base, base);
        exp >>= 1;
    }
    acc
}

/// The inverse of a nonzero element (Fermat: `a^(p-2)`); `None` for zero.
pub fn inv(a: u64) -> Option<u64> {
    (!a.is_multiple_of(P)).then(|| pow(a % P, P - 2))
}

/// A primitive `2^log_order`-th root of unity; `None` past [`TWO_ADICITY`].
pub fn root_of_unity(log_order: u32) -> Option<u64> {
    (log_order <= TWO_ADICITY).then(|| pow(GENERATOR, (P - 1) >> log_order))
}

/// How many sectors a block of `len` bytes has.
pub fn sectors(len: usize) -> usize {
    len.div_ceil(SECTOR_BYTES)
}

/// A block's bytes as field elements, 7 bytes each, the last one padded with zeros.
pub fn to_elements(data: &[u8]) -> Vec<u64> {
    data.chunks(SECTOR_BYTES)
        .map(|c| {
            let mut word = [0u8; 8];
            word[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(word)
        })
        .collect()
}

/// The first `len` bytes the sectors `elements` hold; `None` when an element is not a sector
/// (56 bits) or there are too few of them: a decoded block that is not one.
pub fn from_elements(elements: &[u64], len: usize) -> Option<Vec<u8>> {
    if elements.len() != sectors(len) || elements.iter().any(|&e| e >> 56 != 0) {
        return None;
    }
    let mut out: Vec<u8> = elements.iter().flat_map(|e| e.to_le_bytes()[..SECTOR_BYTES].to_vec()).collect();
    out.truncate(len);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(x: u128) -> u64 {
        (x % u128::from(P)) as u64
    }

    #[test]
    fn reduction_at_the_edges() {
        let p = u128::from(P);
        for x in [
            0,
            1,
            p - 1,
            p,
            p + 1,
            2 * p - 1,
            u128::from(u64::MAX),
            (p - 1) * (p - 1),
            u128::MAX,
            1 << 96,
            (1 << 96) - 1,
        ] {
            assert_eq!(reduce(x), naive(x), "{x:#x}");
        }
        assert_eq!(add(P - 1, P - 1), P - 2);
        assert_eq!(sub(0, 1), P - 1);
        assert_eq!(inv(0), None);
    }

    #[test]
    fn the_generator_generates_and_roots_have_exact_order() {
        // p - 1 = 2^32 · 3 · 5 · 17 · 257 · 65537.
        let factors = [2u64, 3, 5, 17, 257, 65537];
        assert_eq!(factors.iter().skip(1).product::<u64>() << 32, P - 1);
        for q in factors {
            assert_ne!(pow(GENERATOR, (P - 1) / q), 1, "order divides (p-1)/{q}");
        }
        for k in [0, 1, 2, 10, 31, 32] {
            let w = root_of_unity(k).unwrap();
            assert_eq!(pow(w, 1 << k), 1, "2^{k}-th root");
            if k > 0 {
                assert_eq!(pow(w, 1 << (k - 1)), P - 1, "primitive: w^(n/2) = -1");
            }
        }
        assert_eq!(root_of_unity(33), None);
    }

    proptest! {
        #[test]
        fn arithmetic_agrees_with_u128(a in any::<u64>(), b in any::<u64>(), x in any::<u128>()) {
            prop_assert_eq!(reduce(x), naive(x));
            let (a, b) = (a % P, b % P);
            prop_assert_eq!(add(a, b), naive(u128::from(a) + u128::from(b)));
            prop_assert_eq!(sub(a, b), naive(u128::from(a) + u128::from(P) - u128::from(b)));
            prop_assert_eq!(mul(a, b), naive(u128::from(a) * u128::from(b)));
            if a != 0 {
                prop_assert_eq!(mul(a, inv(a).unwrap()), 1);
            }
        }

        #[test]
        fn blocks_round_trip_through_elements(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let elements = to_elements(&data);
            prop_assert_eq!(elements.len(), sectors(data.len()));
            prop_assert!(elements.iter().all(|&e| e < P));
            prop_assert_eq!(from_elements(&elements, data.len()), Some(data));
        }
    }

    #[test]
    fn elements_that_are_not_sectors_are_refused() {
        assert_eq!(from_elements(&[1 << 56], 7), None);
        assert_eq!(from_elements(&[1, 2], 7), None);
    }
}

//! Decoding a level of H, or C, from any half of its slots (Lemma 1).
//!
//! A level of `m` blocks is `P` (degree below `m`) evaluated at the `N = 2m` powers of `μ`
//! ([`super::code`]), so this is Reed–Solomon erasure decoding over the multiplicative
//! subgroup of order `N`, done with transforms only:
//!
//! 1. `Λ(y) = Π_(e erased) (y - μ^e)`, from a product tree ([`vanishing_polynomial`]);
//! 2. `R = P·Λ` has degree below `2m`, and its value at every `μ^q` is known: zero where
//!    a slot was erased, `P(μ^q)·Λ(μ^q)` elsewhere; one inverse transform gives `R`;
//! 3. on the coset `g·μ^q`, where `Λ` has no roots, `P = R / Λ` pointwise, and one more
//!    inverse transform gives `P`'s coefficients: the blocks.
//!
//! Steps 2 and 3 run on whole slots (one scalar per slot), so their cost per byte is that of
//! the butterfly; `Λ` is computed once per erasure pattern. When X or Y is whole, one
//! inverse transform of it suffices.
//!
//! Decoding trusts the slots it is given: with exactly `m` of them any values decode to
//! *some* blocks, and a whole X or Y is decoded without looking at the rest. Slots are
//! checked against their checksums first; in the general case, with more than `m` slots,
//! slots that do not lie on one codeword are reported ([`DecodeError::NotACodeword`]).

use super::code::untwist;
use super::field::{inv, mul, pow, root_of_unity, sub, GENERATOR};
use super::transform::{forward, inverse, psi, scale};

/// Why a level could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{have} of {total} slots are left; decoding needs {}", total / 2)]
    TooFewSlots { have: usize, total: usize },
    #[error("the slots do not lie on one codeword")]
    NotACodeword,
    #[error("a level has a power-of-two number of slots, at least 2, each of the slot size")]
    Shape,
}

/// The `m = slots.len() / 2` blocks (time order) of the level whose first block was written
/// at `start` (`0` for C, with `log_capacity` its level), from its codeword `slots` (X then
/// Y; `None` for a slot that is lost or failed its check).
pub fn decode(slots: &[Option<&[u64]>], slot: usize, log_capacity: u32, start: u64) -> Result<Vec<u64>, DecodeError> {
    let total = slots.len();
    if total < 2 || !total.is_power_of_two() || slot == 0 || slots.iter().flatten().any(|s| s.len() != slot) {
        return Err(DecodeError::Shape);
    }
    let m = total / 2;
    let have = slots.iter().flatten().count();
    if have < m {
        return Err(DecodeError::TooFewSlots { have, total });
    }
    let (x, y) = slots.split_at(m);
    if let Some(x) = whole(x) {
        let mut blocks = x;
        inverse(&mut blocks, slot);
        return Ok(blocks);
    }
    if let Some(mut y) = whole(y) {
        // Y/c is the transform of x_s·μ^ψ(s): undo the transform, then the powers of μ.
        untwist(&mut y, log_capacity, start);
        inverse(&mut y, slot);
        let mu_inv = inv(root_of_unity(m.trailing_zeros() + 1).expect("level within 2-adicity")).expect("nonzero");
        let bits = m.trailing_zeros();
        for (s, block) in y.chunks_exact_mut(slot).enumerate() {
            scale(block, pow(mu_inv, psi(bits, s as u64)));
        }
        return Ok(y);
    }
    erasure_decode(x, y, slot, log_capacity, start)
}

/// The slots concatenated, when none is missing.
fn whole(slots: &[Option<&[u64]>]) -> Option<Vec<u64>> {
    slots.iter().all(Option::is_some).then(|| slots.iter().flatten().flat_map(|s| s.iter().copied()).collect())
}

/// The general case: steps 1-3 of the module documentation.
fn erasure_decode(
    x: &[Option<&[u64]>],
    y: &[Option<&[u64]>],
    slot: usize,
    log_capacity: u32,
    start: u64,
) -> Result<Vec<u64>, DecodeError> {
    let m = x.len();
    let n = 2 * m;
    let bits = n.trailing_zeros();
    let mu = root_of_unity(bits).expect("level within the field's 2-adicity");
    // E[2j] = X[j], E[2j+1] = Y[j]/c: P at every power of μ, natural order.
    let at = |q: usize| if q.is_multiple_of(2) { x[q / 2] } else { y[q / 2] };
    let erased: Vec<u64> = (0..n).filter(|&q| at(q).is_none()).map(|q| pow(mu, q as u64)).collect();
    let lambda = vanishing_polynomial(&erased);
    let lambda_at_roots = evaluate(&lambda, n, 1);
    let lambda_at_coset = evaluate(&lambda, n, GENERATOR);

    let mut values = vec![0; n * slot];
    let c_inv = inv(super::code::twist(log_capacity, start)).expect("nonzero");
    for (q, out) in values.chunks_exact_mut(slot).enumerate() {
        if let Some(known) = at(q) {
            let factor = if q.is_multiple_of(2) { lambda_at_roots[q] } else { mul(lambda_at_roots[q], c_inv) };
            out.iter_mut().zip(known).for_each(|(o, &v)| *o = mul(v, factor));
        }
    }
    inverse(&mut values, slot); // R's coefficients, bit-reversed
    let g_powers = powers(GENERATOR, n);
    for (s, coefficient) in values.chunks_exact_mut(slot).enumerate() {
        scale(coefficient, g_powers[psi(bits, s as u64) as usize]);
    }
    forward(&mut values, slot); // R(g·μ^q)
    for (q, value) in values.chunks_exact_mut(slot).enumerate() {
        scale(value, inv(lambda_at_coset[q]).expect("Λ has no roots on the coset"));
    }
    inverse(&mut values, slot); // P(g·y)'s coefficients, bit-reversed
    let g_inv_powers = powers(inv(GENERATOR).expect("nonzero"), n);
    let mut blocks = Vec::with_capacity(m * slot);
    for (s, coefficient) in values.chunks_exact_mut(slot).enumerate() {
        scale(coefficient, g_inv_powers[psi(bits, s as u64) as usize]);
        // Position s holds the coefficient ψ(s): even positions are those below m, the
        // blocks in time order; odd ones are degree m and up, zero on a codeword.
        if s.is_multiple_of(2) {
            blocks.extend_from_slice(coefficient);
        } else if coefficient.iter().any(|&c| c != 0) {
            return Err(DecodeError::NotACodeword);
        }
    }
    Ok(blocks)
}

/// `1, a, a², ..., a^(n-1)`.
fn powers(a: u64, n: usize) -> Vec<u64> {
    std::iter::successors(Some(1), |&p| Some(mul(p, a))).take(n).collect()
}

/// The polynomial `coefficients` (natural order, fewer than `n`) at `shift·μ^q` for every
/// `q < n`, `μ` a primitive `n`-th root of unity.
fn evaluate(coefficients: &[u64], n: usize, shift: u64) -> Vec<u64> {
    let bits = n.trailing_zeros();
    let mut storage = vec![0; n];
    let mut power = 1;
    for (u, &c) in coefficients.iter().enumerate() {
        storage[psi(bits, u as u64) as usize] = mul(c, power);
        power = mul(power, shift);
    }
    forward(&mut storage, 1);
    storage
}

/// The monic polynomial whose roots are `roots`, coefficients in natural order: a product
/// tree, transforms for the large products.
pub(crate) fn vanishing_polynomial(roots: &[u64]) -> Vec<u64> {
    if roots.len() <= 64 {
        let mut poly = vec![1];
        for &r in roots {
            // poly·(y - r)
            let mut next = vec![0; poly.len() + 1];
            for (i, &c) in poly.iter().enumerate() {
                next[i + 1] = super::field::add(next[i + 1], c);
                next[i] = sub(next[i], mul(c, r));
            }
            poly = next;
        }
        return poly;
    }
    let (left, right) = roots.split_at(roots.len() / 2);
    multiply(&vanishing_polynomial(left), &vanishing_polynomial(right))
}

/// The product of two polynomials (natural order) through the transform.
fn multiply(a: &[u64], b: &[u64]) -> Vec<u64> {
    let len = a.len() + b.len() - 1;
    let n = len.next_power_of_two();
    let bits = n.trailing_zeros();
    let spread = |p: &[u64]| {
        let mut storage = vec![0; n];
        for (u, &c) in p.iter().enumerate() {
            storage[psi(bits, u as u64) as usize] = c;
        }
        forward(&mut storage, 1);
        storage
    };
    let mut product: Vec<u64> = spread(a).iter().zip(spread(b)).map(|(&x, y)| mul(x, y)).collect();
    inverse(&mut product, 1);
    (0..len).map(|u| product[psi(bits, u as u64) as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::super::code::encode;
    use super::super::field::P;
    use super::*;
    use proptest::prelude::*;

    fn level(level: u32, slot: usize, seed: u64) -> Vec<u64> {
        let mut state = seed | 1;
        (0..(1usize << level) * slot)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % P
            })
            .collect()
    }

    fn erase<'a>(code: &'a [u64], slot: usize, erased: &[bool]) -> Vec<Option<&'a [u64]>> {
        code.chunks_exact(slot).zip(erased).map(|(s, &gone)| (!gone).then_some(s)).collect()
    }

    fn round_trip(blocks: &[u64], slot: usize, k: u32, start: u64, erased: &[bool]) -> Result<Vec<u64>, DecodeError> {
        let code = encode(blocks, slot, k, start);
        decode(&erase(&code, slot, erased), slot, k, start)
    }

    #[test]
    fn adversarial_halves_decode() {
        let (k, l, slot) = (6, 4, 2);
        let m = 1usize << l;
        let blocks = level(l, slot, 7);
        let start = 3 * m as u64;
        type Pattern<'a> = Box<dyn Fn(usize) -> bool + 'a>;
        let patterns: Vec<(&str, Pattern)> = vec![
            ("all of X", Box::new(|i| i < m)),
            ("all of Y", Box::new(|i| i >= m)),
            ("the first half of X and of Y", Box::new(|i| i % m < m / 2)),
            ("every other slot", Box::new(|i| i % 2 == 0)),
            ("a run across X and Y", Box::new(|i| (m / 2..m / 2 + m).contains(&i))),
            ("nothing", Box::new(|_| false)),
            ("one slot", Box::new(|i| i == 5)),
        ];
        for (name, pattern) in patterns {
            let erased: Vec<bool> = (0..2 * m).map(&pattern).collect();
            assert_eq!(round_trip(&blocks, slot, k, start, &erased).as_ref(), Ok(&blocks), "{name}");
        }
    }

    #[test]
    fn more_than_half_erased_is_refused() {
        let blocks = level(3, 1, 9);
        let erased: Vec<bool> = (0..16).map(|i| i < 9).collect();
        assert_eq!(round_trip(&blocks, 1, 5, 0, &erased), Err(DecodeError::TooFewSlots { have: 7, total: 16 }));
    }

    #[test]
    fn a_wrong_slot_among_more_than_half_is_seen() {
        let (k, slot) = (4, 3);
        let blocks = level(3, slot, 11);
        let mut code = encode(&blocks, slot, k, 8);
        code[5 * slot + 1] ^= 1;
        let erased: Vec<bool> = (0..16).map(|i| i == 0 || i == 9).collect();
        assert_eq!(decode(&erase(&code, slot, &erased), slot, k, 8), Err(DecodeError::NotACodeword));
    }

    #[test]
    fn large_levels_decode_through_the_product_tree() {
        let l = 9;
        let m = 1usize << l;
        let blocks = level(l, 1, 13);
        let erased: Vec<bool> = (0..2 * m).map(|i| (i * 7919) % (2 * m) < m).collect();
        assert_eq!(erased.iter().filter(|&&e| e).count(), m);
        assert_eq!(round_trip(&blocks, 1, 12, 5 * m as u64, &erased), Ok(blocks));
    }

    #[test]
    fn malformed_levels_are_refused() {
        let s = [1u64, 2];
        assert_eq!(decode(&[Some(&s[..])], 2, 3, 0), Err(DecodeError::Shape));
        assert_eq!(decode(&[Some(&s[..]), Some(&s[..1])], 2, 3, 0), Err(DecodeError::Shape));
        assert_eq!(decode(&[Some(&s[..]); 3], 2, 3, 0), Err(DecodeError::Shape));
    }

    #[test]
    fn products_of_vanishing_polynomials_vanish_at_their_roots() {
        let roots: Vec<u64> = (0..200u64).map(|i| i * i + 3).collect();
        let poly = vanishing_polynomial(&roots);
        assert_eq!(poly.len(), 201);
        let at = |y: u64| poly.iter().rev().fold(0, |acc, &c| super::super::field::add(mul(acc, y), c));
        assert!(roots.iter().all(|&r| at(r) == 0));
        assert_ne!(at(2), 0);
    }

    proptest! {
        /// Lemma 1: any half of the slots of a level recovers its blocks.
        #[test]
        fn any_half_of_a_level_recovers_it(
            l in 0u32..7,
            slot in 1usize..3,
            seed in any::<u64>(),
            epoch_block in any::<u64>(),
            keep in proptest::collection::vec(any::<u64>(), 128),
        ) {
            let k = 7;
            let m = 1usize << l;
            let start = (epoch_block % (1 << (k - l))) << l;
            let blocks = level(l, slot, seed);
            // Erase exactly m slots, chosen by a random shuffle.
            let mut order: Vec<usize> = (0..2 * m).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, (keep[i % keep.len()] % (i as u64 + 1)) as usize);
            }
            let mut erased = vec![false; 2 * m];
            order[..m].iter().for_each(|&i| erased[i] = true);
            prop_assert_eq!(round_trip(&blocks, slot, k, start, &erased), Ok(blocks));
        }
    }
}

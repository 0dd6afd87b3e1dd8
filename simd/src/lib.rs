//! vouch-simd: vector kernels for the PoR code's field, Z_p with p = 2^64 - 2^32 + 1
//! ("Goldilocks"), behind one safe dispatch point.
//!
//! **Why a separate crate.** `vouch-core` is `forbid(unsafe_code)`, and should stay so: it
//! holds every structure a client's trust rests on. Vector intrinsics need `unsafe` (loads and
//! stores through pointers, calls into code compiled for a CPU feature), so they live here, in
//! the one crate of the workspace that has any. Everything else about the field (its
//! arithmetic, its roots of unity, the transform) stays in `vouch_core::por`; this crate holds
//! only what a vector kernel needs, and no scalar Goldilocks code: core finishes what a kernel
//! leaves with its own scalar loop.
//!
//! **Dispatch.** [`butterfly_prefix`] and [`unbutterfly_prefix`] are safe functions that
//! run a kernel on the longest prefix of their arrays that is a whole number of vectors
//! ([`LANES`] elements) and return how many elements they did; the caller does the rest.
//! Which kernel runs is decided once per process ([`kernel_name`]):
//! * `"avx512"`: on x86_64 when the CPU has AVX-512F (checked at run time);
//! * `"portable"`: everywhere else, or when the environment variable `VOUCH_SIMD` is
//!   `portable` (to compare the two in tests and benchmarks). It does nothing: both
//!   functions return 0 and the caller's scalar loop does everything.
//!
//! **The reduction.** Inputs are canonical (`< p`) and so are outputs, bit for bit what the
//! scalar code computes. With `ε = 2^32 - 1`, `2^64 ≡ ε` and `2^96 ≡ -1 (mod p)`. Lanes are
//! 64 bits and the only vector multiplication is 32 × 32 → 64 bits (`vpmuludq`), so a product
//! `a·c` is put together from the four partial products of the 32-bit halves into
//! `hi·2^64 + lo`. With `hi = h1·2^32 + h0`, `hi·2^64 = h1·2^96 + h0·2^64 ≡ h0·ε - h1`, so
//! the product is `≡ lo + v - ε` for `v = h0·ε + (ε - h1)`: one more `vpmuludq`, and `ε - h1`
//! is the top half of `!hi`. `v` lies in `0..=2^64 - 2^32`, so forming it neither borrows nor
//! overflows. Then `s = lo + v`, wrapping:
//! * on a carry, the dropped `2^64 ≡ ε` cancels the `- ε`: the result is `s`, which is at
//!   most `p - 2`;
//! * otherwise the result is `s - ε`, at most `p - 1`; unless `s < ε`, when that is negative
//!   and `p` is added: `s - 2ε`, wrapping.
//!
//! Carries and borrows are unsigned compares into mask registers (`vpcmpuq`) that select a
//! masked add or subtract. The multiplier is the same for all lanes of a butterfly, so its
//! halves are broadcast once per call. Sums and differences of canonical elements:
//! `a - b` adds `p` back on a borrow; `a + b` is computed as `a - (p - b)`, which needs no
//! carry out of 64 bits.
//!
//! **Speed.** A butterfly of eight lanes is about 30 vector instructions. The vector shift
//! units are the busiest, so `ε` reaches the kernel through [`std::hint::black_box`] once per
//! call: otherwise the compiler, seeing the constant, turns `h0·ε` into a shift, a mask and a
//! subtraction, which measured about 8% slower on Zen 4 than the multiplication.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, missing_docs)]

use std::sync::OnceLock;

/// Elements per vector: a kernel does a multiple of this many.
pub const LANES: usize = 8;

/// The kernel this process runs, decided once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

fn kernel() -> Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    *KERNEL.get_or_init(detect)
}

fn detect() -> Kernel {
    if std::env::var_os("VOUCH_SIMD").is_some_and(|v| v == "portable") {
        return Kernel::Portable;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        return Kernel::Avx512;
    }
    Kernel::Portable
}

/// The kernel [`butterfly_prefix`] and [`unbutterfly_prefix`] run in this process:
/// `"avx512"` or `"portable"` (which does nothing; see the crate documentation).
pub fn kernel_name() -> &'static str {
    match kernel() {
        Kernel::Portable => "portable",
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => "avx512",
    }
}

/// The length a kernel works on: the shorter array's, rounded down to whole vectors.
fn prefix(x: &[u64], y: &[u64]) -> usize {
    x.len().min(y.len()) / LANES * LANES
}

/// `x[i], y[i] ← x[i] + c·y[i], x[i] - c·y[i] (mod p)` for `i` in a prefix of whole vectors,
/// and its length (0 on the portable kernel). The caller does the rest, `x[n..]` and
/// `y[n..]`, which are untouched.
///
/// Every element of `x`, `y` and `c` must be canonical (`< p`); then so is every result.
/// (Others give some unspecified values, never undefined behaviour.)
#[inline]
pub fn butterfly_prefix(x: &mut [u64], y: &mut [u64], c: u64) -> usize {
    match kernel() {
        Kernel::Portable => 0,
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => {
            let n = prefix(x, y);
            // SAFETY: `kernel()` is `Avx512` only when the CPU has AVX-512F (`detect`), the
            // one feature the kernel is compiled for.
            unsafe { avx512::butterfly(&mut x[..n], &mut y[..n], c) };
            n
        }
    }
}

/// `x[i], y[i] ← x[i] + y[i], (x[i] - y[i])·c_inv (mod p)` (the inverse of
/// [`butterfly_prefix`] for `c_inv = c⁻¹`, up to a factor 2) for `i` in a prefix of whole
/// vectors, and its length (0 on the portable kernel); otherwise as [`butterfly_prefix`].
#[inline]
pub fn unbutterfly_prefix(x: &mut [u64], y: &mut [u64], c_inv: u64) -> usize {
    match kernel() {
        Kernel::Portable => 0,
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => {
            let n = prefix(x, y);
            // SAFETY: as in `butterfly_prefix`: AVX-512F was detected.
            unsafe { avx512::unbutterfly(&mut x[..n], &mut y[..n], c_inv) };
            n
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! The AVX-512F kernel: eight lanes of 64 bits. See the crate documentation for the math.

    use super::LANES;
    use std::arch::x86_64::*;

    /// The modulus p = 2^64 - 2^32 + 1.
    const P: u64 = 0xffff_ffff_0000_0001;
    /// ε = 2^64 mod p = 2^32 - 1, also the mask of a lane's low half.
    const EPSILON: u64 = (1 << 32) - 1;

    /// A multiplier shared by all lanes, as its halves in each lane's low 32 bits (the bits
    /// `vpmuludq` reads), and ε, opaque to the compiler (see "Speed" in the crate
    /// documentation).
    #[derive(Clone, Copy)]
    struct Multiplier {
        lo: __m512i,
        hi: __m512i,
        eps: __m512i,
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn multiplier(c: u64) -> Multiplier {
        Multiplier {
            lo: _mm512_set1_epi64((c & EPSILON) as i64),
            hi: _mm512_set1_epi64((c >> 32) as i64),
            eps: std::hint::black_box(splat(EPSILON)),
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn splat(v: u64) -> __m512i {
        _mm512_set1_epi64(v as i64)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load(v: &[u64; LANES]) -> __m512i {
        // SAFETY: `v` is 64 readable bytes; the load is unaligned (no alignment needed).
        unsafe { _mm512_loadu_epi64(v.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store(v: &mut [u64; LANES], value: __m512i) {
        // SAFETY: `v` is 64 writable bytes, borrowed exclusively; the store is unaligned.
        unsafe { _mm512_storeu_epi64(v.as_mut_ptr().cast(), value) }
    }

    /// `a - b mod p`, lanewise, of canonical elements.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sub(a: __m512i, b: __m512i) -> __m512i {
        let d = _mm512_sub_epi64(a, b);
        let borrow = _mm512_cmplt_epu64_mask(a, b);
        _mm512_mask_add_epi64(d, borrow, d, splat(P))
    }

    /// `a·m mod p`, lanewise, canonical (for any `a` and multiplier below 2^64).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn mul(a: __m512i, m: Multiplier) -> __m512i {
        let eps = m.eps;
        // The 128-bit product from the four partial products of 32-bit halves.
        let a_hi = _mm512_srli_epi64::<32>(a);
        let ll = _mm512_mul_epu32(a, m.lo);
        let lh = _mm512_mul_epu32(a, m.hi);
        let hl = _mm512_mul_epu32(a_hi, m.lo);
        let hh = _mm512_mul_epu32(a_hi, m.hi);
        // Middle sums: each below (2^32 - 1)·2^32 + 2^32 - 1 < 2^64, no carry.
        let t0 = _mm512_add_epi64(hl, _mm512_srli_epi64::<32>(ll));
        let t1 = _mm512_add_epi64(lh, _mm512_and_si512(t0, eps));
        let hi = _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64::<32>(t0)), _mm512_srli_epi64::<32>(t1));
        // lo = t1's low half above ll's low half: swap t1's 32-bit halves into the odd dwords.
        let lo = _mm512_mask_shuffle_epi32::<_MM_PERM_CDAB>(ll, 0xaaaa, t1);
        reduce(lo, hi, m.eps)
    }

    /// `hi·2^64 + lo mod p`, canonical, for any `lo` and `hi` (`eps` is ε in every lane).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn reduce(lo: __m512i, hi: __m512i, eps: __m512i) -> __m512i {
        // v = (hi mod 2^32)·ε + (ε - (hi >> 32)), in 0..=2^64 - 2^32; the value is lo + v - ε.
        let not_hi = _mm512_xor_si512(hi, _mm512_set1_epi64(-1));
        let v = _mm512_add_epi64(_mm512_mul_epu32(hi, eps), _mm512_srli_epi64::<32>(not_hi));
        let s = _mm512_add_epi64(lo, v);
        // A carry dropped 2^64 ≡ ε: s is the value. Otherwise s - ε, or s - 2ε if that borrowed.
        let no_carry = _mm512_cmpge_epu64_mask(s, v);
        let borrow = _mm512_mask_cmplt_epu64_mask(no_carry, s, eps);
        let r = _mm512_mask_sub_epi64(s, no_carry, s, eps);
        _mm512_mask_sub_epi64(r, borrow, r, eps)
    }

    /// See [`super::butterfly_prefix`]; `x` and `y` are whole vectors of the same length.
    ///
    /// Safe to call only on a CPU with AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) fn butterfly(x: &mut [u64], y: &mut [u64], c: u64) {
        let (x, _) = x.as_chunks_mut::<LANES>();
        let (y, _) = y.as_chunks_mut::<LANES>();
        let c = multiplier(c);
        let p = splat(P);
        for (x, y) in x.iter_mut().zip(y.iter_mut()) {
            let a = load(x);
            let t = mul(load(y), c);
            // a + t = a - (p - t): p - t is in 1..=p, and a borrow means the sum is below p.
            store(x, sub(a, _mm512_sub_epi64(p, t)));
            store(y, sub(a, t));
        }
    }

    /// See [`super::unbutterfly_prefix`]; `x` and `y` are whole vectors of the same length.
    ///
    /// Safe to call only on a CPU with AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) fn unbutterfly(x: &mut [u64], y: &mut [u64], c_inv: u64) {
        let (x, _) = x.as_chunks_mut::<LANES>();
        let (y, _) = y.as_chunks_mut::<LANES>();
        let c_inv = multiplier(c_inv);
        let p = splat(P);
        for (x, y) in x.iter_mut().zip(y.iter_mut()) {
            let (a, b) = (load(x), load(y));
            store(x, sub(a, _mm512_sub_epi64(p, b)));
            store(y, mul(sub(a, b), c_inv));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: u64 = 0xffff_ffff_0000_0001;

    // The reference: plain u128 arithmetic, nothing shared with the kernel.
    fn add(a: u64, b: u64) -> u64 {
        ((u128::from(a) + u128::from(b)) % u128::from(P)) as u64
    }
    fn sub(a: u64, b: u64) -> u64 {
        ((u128::from(a) + u128::from(P) - u128::from(b)) % u128::from(P)) as u64
    }
    fn mul(a: u64, b: u64) -> u64 {
        ((u128::from(a) * u128::from(b)) % u128::from(P)) as u64
    }

    fn butterfly_reference(x: &mut [u64], y: &mut [u64], c: u64) {
        for (x, y) in x.iter_mut().zip(y.iter_mut()) {
            let (a, t) = (*x, mul(c, *y));
            (*x, *y) = (add(a, t), sub(a, t));
        }
    }

    fn unbutterfly_reference(x: &mut [u64], y: &mut [u64], c_inv: u64) {
        for (x, y) in x.iter_mut().zip(y.iter_mut()) {
            let (a, b) = (*x, *y);
            (*x, *y) = (add(a, b), mul(sub(a, b), c_inv));
        }
    }

    /// Runs a prefix kernel and checks it against the reference: the returned length is the
    /// whole-vector prefix (0 on the portable kernel), that prefix equals the reference and
    /// the rest is untouched.
    fn check(
        kernel: fn(&mut [u64], &mut [u64], u64) -> usize,
        reference: fn(&mut [u64], &mut [u64], u64),
        x: &[u64],
        y: &[u64],
        c: u64,
    ) -> Result<(), TestCaseError> {
        let (mut kx, mut ky) = (x.to_vec(), y.to_vec());
        let done = kernel(&mut kx, &mut ky, c);
        let expected = if kernel_name() == "avx512" { x.len().min(y.len()) / LANES * LANES } else { 0 };
        prop_assert_eq!(done, expected, "kernel {}", kernel_name());
        let (mut rx, mut ry) = (x[..done].to_vec(), y[..done].to_vec());
        reference(&mut rx, &mut ry, c);
        prop_assert_eq!(&kx[..done], &rx[..], "x, c = {:#x}", c);
        prop_assert_eq!(&ky[..done], &ry[..], "y, c = {:#x}", c);
        prop_assert_eq!(&kx[done..], &x[done..], "x past the prefix");
        prop_assert_eq!(&ky[done..], &y[done..], "y past the prefix");
        Ok(())
    }

    fn check_both(x: &[u64], y: &[u64], c: u64) -> Result<(), TestCaseError> {
        check(butterfly_prefix, butterfly_reference, x, y, c)?;
        check(unbutterfly_prefix, unbutterfly_reference, x, y, c)
    }

    const EDGES: [u64; 14] = [
        0,
        1,
        2,
        P - 1,
        P - 2,
        1 << 32,
        (1 << 32) - 1,
        (1 << 32) + 1,
        1 << 63,
        (1 << 63) - 1,
        (1 << 63) + 1,
        P - (1 << 32),
        0xffff_fffe_ffff_ffff,
        0x8000_0000_ffff_ffff,
    ];

    /// The pseudo-random canonical elements of a seed (splitmix64, rejecting non-canonical).
    fn elements(seed: u64, len: usize) -> Vec<u64> {
        let mut state = seed;
        let mut next = move || loop {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let z = z ^ (z >> 31);
            if z < P {
                return z;
            }
        };
        (0..len).map(|_| next()).collect()
    }

    #[test]
    fn the_kernel_is_named_and_honours_the_override() {
        let name = kernel_name();
        assert!(name == "avx512" || name == "portable", "{name}");
        if std::env::var_os("VOUCH_SIMD").is_some_and(|v| v == "portable") {
            assert_eq!(name, "portable");
        }
        #[cfg(target_arch = "x86_64")]
        if std::env::var_os("VOUCH_SIMD").is_none() {
            assert_eq!(name == "avx512", std::arch::is_x86_feature_detected!("avx512f"));
        }
    }

    #[test]
    fn every_pair_of_edge_values_under_edge_multipliers() {
        // Every (x, y) pair of edge values, laid out across lanes, for each edge multiplier.
        let pairs: Vec<(u64, u64)> = EDGES.iter().flat_map(|&a| EDGES.iter().map(move |&b| (a, b))).collect();
        let (x, y): (Vec<u64>, Vec<u64>) = pairs.into_iter().unzip();
        for c in EDGES.into_iter().chain(elements(1, 8)) {
            check_both(&x, &y, c).unwrap();
            check_both(&y, &x, c).unwrap();
        }
    }

    #[test]
    fn every_length_up_to_40() {
        for len in 0..40 {
            let x = elements(2 * len as u64, len);
            let y = elements(2 * len as u64 + 1, len);
            for c in [0, 1, P - 1, elements(len as u64 + 100, 1)[0]] {
                check_both(&x, &y, c).unwrap();
            }
        }
        // Arrays of different lengths: the prefix is the shorter one's.
        check_both(&elements(3, 21), &elements(4, 17), 5).unwrap();
        check_both(&elements(3, 9), &elements(4, 33), 5).unwrap();
    }

    /// Products whose reduction takes each branch: a carry out of `lo + v`, none, and none
    /// with `s < ε` (2^48 · 2^48 = 2^96 ≡ -1 is one: `lo = 0`, `v = ε - 1`).
    #[test]
    fn products_that_hit_every_correction() {
        let big = [
            P - 1,
            P - 2,
            P - (1 << 32),
            (1 << 63) + 5,
            0xffff_fffe_ffff_ffff,
            0xffff_0000_ffff_0000,
            1 << 48,
            (1 << 48) + 3,
            1 << 40,
        ];
        let x = elements(7, 72);
        let y: Vec<u64> = big.iter().cycle().take(72).copied().collect();
        for c in big.into_iter().chain([1 << 32, (1 << 32) - 1, 1 << 56, 2, 3]) {
            check_both(&x, &y, c).unwrap();
        }
    }

    fn canonical() -> impl Strategy<Value = u64> {
        prop_oneof![
            3 => 0..P,
            1 => proptest::sample::select(EDGES.to_vec()),
            1 => (P - 1024)..P,
            1 => ((1u64 << 63) - 512)..((1u64 << 63) + 512),
            1 => ((1u64 << 32) - 512)..((1u64 << 32) + 512),
        ]
    }

    proptest! {
        #[test]
        fn the_kernels_agree_with_the_reference(
            xy in proptest::collection::vec((canonical(), canonical()), 0..40),
            c in prop_oneof![Just(0u64), Just(1), Just(P - 1), canonical()],
        ) {
            let (x, y): (Vec<u64>, Vec<u64>) = xy.into_iter().unzip();
            check_both(&x, &y, c)?;
        }
    }
}

//! Arithmetic in Z_p with the Mersenne prime p = 2^61 - 1, the field of the linear tags.
//!
//! **Why this prime.** A product of two field elements fits in a `u128`, and reduction mod a
//! Mersenne prime is two shifts and an add, with no division. Blocks are read as *sectors* of
//! 7 bytes (56 bits, always below p), so a sector times a coefficient stays below 2^117 and up to
//! 2^10 such products add up in one `u128` before a reduction ([`Acc`]). That inner loop (load,
//! mask, multiply, add) is what makes tagging run at memory speed. One element gives 61 bits of
//! soundness against a forged aggregate; the tag scheme uses two independent lanes for 122.

/// The modulus, 2^61 - 1.
pub const P: u64 = (1 << 61) - 1;

/// Bytes per sector: 56 bits, so every sector is a field element.
pub const SECTOR_BYTES: usize = 7;

/// Products of a sector and an element that a `u128` can add up before it must be reduced.
pub const ACC_BATCH: usize = 1 << 10;

/// Reduces any `u128` modulo [`P`] to the canonical range `0..P`.
#[inline]
pub fn reduce(x: u128) -> u64 {
    // x = hi * 2^61 + lo = hi + lo (mod p); two folds bring x below 2^62.
    let x = (x & P as u128) + (x >> 61);
    let x = (x & P as u128) + (x >> 61);
    let x = x as u64;
    let x = (x & P) + (x >> 61);
    if x >= P {
        x - P
    } else {
        x
    }
}

#[inline]
pub fn add(a: u64, b: u64) -> u64 {
    let s = a + b;
    if s >= P {
        s - P
    } else {
        s
    }
}

#[inline]
pub fn mul(a: u64, b: u64) -> u64 {
    reduce(u128::from(a) * u128::from(b))
}

/// Number of sectors of a block of `len` bytes.
pub fn sectors(len: usize) -> usize {
    len.div_ceil(SECTOR_BYTES)
}

/// Sector `j` of `data` (zero past its end).
#[inline]
pub fn sector(data: &[u8], j: usize) -> u64 {
    let start = j * SECTOR_BYTES;
    if start + 8 <= data.len() {
        u64::from_le_bytes(data[start..start + 8].try_into().expect("8 bytes")) & ((1 << 56) - 1)
    } else {
        let mut buf = [0u8; 8];
        let tail = data.get(start..).unwrap_or(&[]);
        let n = tail.len().min(SECTOR_BYTES);
        buf[..n].copy_from_slice(&tail[..n]);
        u64::from_le_bytes(buf)
    }
}

/// Interprets 16 uniformly random bytes as a field element (bias below 2^-67).
pub fn from_random(bytes: [u8; 16]) -> u64 {
    reduce(u128::from_le_bytes(bytes))
}

/// `sum_j coeffs[j] * sector_j(data)` for every lane at once: the linear part of a tag.
///
/// `coeffs[j]` holds sector `j`'s coefficient for each lane; `data` may be shorter than
/// `coeffs` (missing sectors are zero) but not longer.
pub fn inner_products<const L: usize>(coeffs: &[[u64; L]], data: &[u8]) -> [u64; L] {
    debug_assert!(sectors(data.len()) <= coeffs.len());
    let mut out = [0u64; L];
    let whole = data.len().saturating_sub(1) / SECTOR_BYTES; // sectors readable as 8-byte loads
    let mut j = 0;
    while j < sectors(data.len()) {
        let end = (j + ACC_BATCH).min(sectors(data.len()));
        let mut acc = [0u128; L];
        while j < end.min(whole) {
            let word = u64::from_le_bytes(data[j * SECTOR_BYTES..j * SECTOR_BYTES + 8].try_into().expect("8 bytes"));
            let m = u128::from(word & ((1 << 56) - 1));
            for (a, c) in acc.iter_mut().zip(&coeffs[j]) {
                *a += m * u128::from(*c);
            }
            j += 1;
        }
        while j < end {
            let m = u128::from(sector(data, j));
            for (a, c) in acc.iter_mut().zip(&coeffs[j]) {
                *a += m * u128::from(*c);
            }
            j += 1;
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = add(*o, reduce(a));
        }
    }
    out
}

/// Adds `coeffs[k] * sector_j(blocks[k])` to `acc[j]` for every sector of every block: `K`
/// blocks' share of the aggregate in one pass over `acc` (one read-modify-write of `acc[j]`
/// per `K` products). `acc` must have room for every sector; callers reduce it before
/// [`ACC_BATCH`] products have been added to an element.
pub fn add_scaled<const K: usize>(acc: &mut [u128], coeffs: [u64; K], blocks: [&[u8]; K]) {
    let c = coeffs.map(u128::from);
    let whole = blocks.iter().map(|d| d.len().saturating_sub(1) / SECTOR_BYTES).min().unwrap_or(0);
    for (j, a) in acc.iter_mut().enumerate().take(whole) {
        let at = j * SECTOR_BYTES;
        let mut sum = 0u128;
        for (ck, data) in c.iter().zip(&blocks) {
            let word = u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
            sum += ck * u128::from(word & ((1 << 56) - 1));
        }
        *a += sum;
    }
    for (ck, data) in c.iter().zip(&blocks) {
        for (j, a) in acc.iter_mut().enumerate().take(sectors(data.len())).skip(whole) {
            *a += ck * u128::from(sector(data, j));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive_mod(x: u128) -> u64 {
        (x % u128::from(P)) as u64
    }

    #[test]
    fn reduce_edges() {
        for x in [0, 1, P as u128, P as u128 + 1, 2 * P as u128, u128::MAX, u128::from(u64::MAX), 1 << 122] {
            assert_eq!(reduce(x), naive_mod(x), "{x}");
        }
    }

    proptest! {
        #[test]
        fn reduce_matches_modulo(x in any::<u128>()) {
            prop_assert_eq!(reduce(x), naive_mod(x));
        }

        #[test]
        fn inner_product_matches_naive(data in proptest::collection::vec(any::<u8>(), 0..300), seed in any::<u64>()) {
            let n = sectors(data.len()) + 3;
            let coeffs: Vec<[u64; 2]> = (0..n as u64)
                .map(|j| [naive_mod(u128::from(seed ^ j) << 40 | 12345), naive_mod(u128::from(j.wrapping_mul(seed)))])
                .collect();
            let got = inner_products(&coeffs, &data);
            for lane in 0..2 {
                let want = (0..sectors(data.len())).fold(0u64, |s, j| add(s, mul(coeffs[j][lane], sector(&data, j))));
                prop_assert_eq!(got[lane], want);
            }
            let mut acc = vec![0u128; sectors(data.len())];
            add_scaled(&mut acc, [coeffs[0][0]], [&data]);
            for (j, a) in acc.iter().enumerate() {
                prop_assert_eq!(reduce(*a), mul(coeffs[0][0], sector(&data, j)));
            }
            // Four blocks of different lengths in one pass.
            let parts = [&data[..], &data[data.len() / 2..], &data[..data.len() / 3], &data[1.min(data.len())..]];
            let mut acc = vec![0u128; sectors(data.len())];
            add_scaled(&mut acc, [coeffs[0][0], coeffs[1][1], coeffs[2][0], 5], parts);
            for (j, a) in acc.iter().enumerate() {
                let want = parts.iter().zip([coeffs[0][0], coeffs[1][1], coeffs[2][0], 5])
                    .fold(0, |s, (d, c)| add(s, mul(c, sector(d, j))));
                prop_assert_eq!(reduce(*a), want);
            }
        }
    }

    #[test]
    fn sectors_cover_every_byte_once() {
        let data: Vec<u8> = (0..22u8).collect();
        let mut back = Vec::new();
        for j in 0..sectors(data.len()) {
            back.extend_from_slice(&sector(&data, j).to_le_bytes()[..SECTOR_BYTES]);
        }
        back.truncate(data.len());
        assert_eq!(back, data);
    }
}

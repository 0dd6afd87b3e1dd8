//! Deamortized level rebuilds (Sec. 6.1: "a standard deamortization trick [...] to spread the
//! hierarchical encoding work over time"): the pure steps.
//!
//! A rebuild of level `ℓ` ([`super::code::rebuild_level`], HRebuildX / HRebuildY) is a chain
//! of merges. The tail starts as the new group's code; merge `j` mixes level `j` (`A_j`, the
//! older) with the tail (`B_j`, the code of the `2^j` groups after it) into `B_(j+1)`, the code
//! of `2^(j+1)` groups, and `B_ℓ` is the level. Merge `j` is `2^j` butterflies per half
//! (X, then Y, alike), butterfly `q` on block `q` of `A_j` and of `B_j` only:
//!
//! `B_(j+1)[q] = A_j[q] + ν^q·B_j[q]`, `B_(j+1)[q + 2^j] = A_j[q] - ν^q·B_j[q]`,
//! `ν` a primitive `2^(j+1)`-th root of unity.
//!
//! So any range of a merge's butterflies can be done on its own ([`merge_range`]): a provider
//! does the first merges at once, then the rest a range at a time over the writes that follow,
//! as long as the level is whole before the next rebuild consumes it. Until then a block of the
//! level follows from the tail and the levels not merged yet ([`finish_block`]), which is how
//! an audit of a level still being built is answered.

use super::field::{pow, root_of_unity};
use super::transform::butterfly;

/// `ν` of merge `merge`: a primitive `2^(merge+1)`-th root of unity.
fn merge_root(merge: u32) -> u64 {
    root_of_unity(merge + 1).expect("a level within the field's 2-adicity")
}

/// Butterflies `first..first + count` of merge `merge` on one half, in place: `older` holds
/// blocks `first..` of `A_j`'s half and becomes blocks `first..` of `B_(j+1)`'s half; `tail`
/// holds the same blocks of `B_j`'s half and becomes blocks `2^j + first..`.
///
/// # Panics
/// When the two differ in length or are not whole blocks (a caller's bug).
pub fn merge_range(older: &mut [u64], tail: &mut [u64], block: usize, merge: u32, first: u64) {
    assert!(block > 0 && older.len() == tail.len() && older.len().is_multiple_of(block), "whole blocks, alike");
    let nu = merge_root(merge);
    let mut twiddle = pow(nu, first);
    for (a, b) in older.chunks_exact_mut(block).zip(tail.chunks_exact_mut(block)) {
        butterfly(a, b, twiddle);
        twiddle = super::field::mul(twiddle, nu);
    }
}

/// Block `q` of a half of level `merge + older.len()` from the tail after merges
/// `0..merge` (`tail` is block `q mod 2^merge` of that half of `B_merge`) and block
/// `q mod 2^i` of the same half of each level `i` not merged yet (`older[i - merge]`).
pub fn finish_block(tail: &[u64], older: &[&[u64]], merge: u32, q: u64) -> Vec<u64> {
    let mut value = tail.to_vec();
    for (step, a) in older.iter().enumerate() {
        let j = merge + step as u32;
        let half = 1u64 << j;
        let at = q & (2 * half - 1);
        let mut low = a.to_vec();
        butterfly(&mut low, &mut value, pow(merge_root(j), at & (half - 1)));
        if at < half {
            value = low;
        }
    }
    value
}

/// Where block `q` of a half of a level comes from in level (or tail) `j`: its block
/// `q mod 2^j` of the same half.
pub fn source_block(q: u64, j: u32) -> u64 {
    q & ((1 << j) - 1)
}

#[cfg(test)]
mod tests {
    use super::super::code::{encode, rebuild_level};
    use super::*;
    use proptest::prelude::*;

    const BLOCK: usize = 3;
    const K: u32 = 9;

    /// Levels `0..level` and a group, each block `BLOCK` elements (below p), from a seed.
    fn inputs(level: u32, seed: u64) -> (Vec<Vec<u64>>, Vec<u64>) {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> 8
        };
        let levels = (0..level).map(|j| (0..(2usize << j) * BLOCK).map(|_| next()).collect()).collect();
        let group = (0..BLOCK).map(|_| next()).collect();
        (levels, group)
    }

    /// Half `h` of a flat level of `2^(j+1)` blocks.
    fn half(level: &[u64], h: usize) -> &[u64] {
        let size = level.len() / 2;
        &level[h * size..(h + 1) * size]
    }

    proptest! {
        /// The chain done a range at a time, in any cut, is the rebuild done at once.
        #[test]
        fn merges_in_ranges_are_the_rebuild(level in 1u32..7, prefix in 0u32..7, cut in 0u32..6, seed: u64, time in 0u64..64) {
            let prefix = prefix.min(level - 1);
            let (levels, group) = inputs(level, seed);
            let refs: Vec<&[u64]> = levels.iter().map(Vec::as_slice).collect();
            let whole = rebuild_level(&refs, &group, BLOCK, K, (time << level) + (1 << level) - 1);
            // The first `prefix` merges at once, as a provider starts a build.
            let mut tail = rebuild_level(&refs[..prefix as usize], &group, BLOCK, K, (time << level) + (1 << level) - 1);
            for j in prefix..level {
                let m = 1usize << j;
                let step = (1usize << cut).min(m);
                let mut next = vec![0; 4 * m * BLOCK];
                for h in 0..2 {
                    for first in (0..m).step_by(step) {
                        let range = first * BLOCK..(first + step) * BLOCK;
                        let mut older = half(&levels[j as usize], h)[range.clone()].to_vec();
                        let mut newer = half(&tail, h)[range].to_vec();
                        merge_range(&mut older, &mut newer, BLOCK, j, first as u64);
                        let out = h * 2 * m * BLOCK;
                        next[out + first * BLOCK..out + (first + step) * BLOCK].copy_from_slice(&older);
                        next[out + (m + first) * BLOCK..out + (m + first + step) * BLOCK].copy_from_slice(&newer);
                    }
                }
                tail = next;
            }
            prop_assert_eq!(tail, whole);
        }

        /// CRebuild as a merge tree, which is how a provider builds C over a window: the
        /// leaves are `encode` of runs of `2^leaf` slots of U at their own start, and merging
        /// neighbours (the older first) a range at a time ends at `encode` of all of U.
        #[test]
        fn c_is_the_merge_tree_of_its_leaves(k in 1u32..8, leaf in 0u32..8, cut in 0u32..6, seed: u64) {
            let leaf = leaf.min(k);
            let u = inputs(k, seed).0.pop().expect("level k - 1 holds 2^k blocks");
            let u = u.as_slice();
            let runs = 1usize << (k - leaf);
            let size = (1usize << leaf) * BLOCK;
            // Stage j: subtree i is `2^(j+1)` blocks, X then Y, at block `i * 2^(j+1)`.
            let mut stage: Vec<u64> = (0..runs)
                .flat_map(|a| encode(&u[a * size..(a + 1) * size], BLOCK, k, (a << leaf) as u64))
                .collect();
            for j in leaf..k {
                let m = 1usize << j;
                let step = (1usize << cut).min(m);
                let mut next = vec![0; stage.len()];
                for pair in 0..(1usize << (k - j - 1)) {
                    let (older, newer, out) = (2 * pair * 2 * m, (2 * pair + 1) * 2 * m, pair * 4 * m);
                    for h in 0..2 {
                        for first in (0..m).step_by(step) {
                            let at = |base: usize| (base + h * m + first) * BLOCK..(base + h * m + first + step) * BLOCK;
                            let mut low = stage[at(older)].to_vec();
                            let mut high = stage[at(newer)].to_vec();
                            merge_range(&mut low, &mut high, BLOCK, j, first as u64);
                            let put = |base: usize| (out + base + first) * BLOCK..(out + base + first + step) * BLOCK;
                            next[put(h * 2 * m)].copy_from_slice(&low);
                            next[put(h * 2 * m + m)].copy_from_slice(&high);
                        }
                    }
                }
                stage = next;
            }
            prop_assert_eq!(stage, encode(u, BLOCK, k, 0));
        }

        /// Any block of the level follows from the tail and the levels not merged yet.
        #[test]
        fn a_block_follows_from_the_tail_and_the_older_levels(level in 1u32..7, merge in 0u32..7, seed: u64, pick: u64) {
            let merge = merge.min(level - 1);
            let (levels, group) = inputs(level, seed);
            let refs: Vec<&[u64]> = levels.iter().map(Vec::as_slice).collect();
            let time = (1 << level) - 1;
            let whole = rebuild_level(&refs, &group, BLOCK, K, time);
            let tail = rebuild_level(&refs[..merge as usize], &group, BLOCK, K, time);
            let m = 1u64 << level;
            let (h, q) = ((pick % (2 * m) / m) as usize, pick % m);
            let block = |flat: &[u64], j: u32| {
                let at = source_block(q, j) as usize * BLOCK;
                half(flat, h)[at..at + BLOCK].to_vec()
            };
            let older: Vec<Vec<u64>> = (merge..level).map(|j| block(&levels[j as usize], j)).collect();
            let older: Vec<&[u64]> = older.iter().map(Vec::as_slice).collect();
            let got = finish_block(&block(&tail, merge), &older, merge, q);
            prop_assert_eq!(got, block(&whole, level));
        }
    }
}

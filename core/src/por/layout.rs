//! Where a version's copy is in U: a list of runs of consecutive slots, each holding whole
//! blocks of the version, in order. A new version reuses the runs of the version before it
//! for every block it keeps, and only its new blocks take fresh slots, so an edit in the
//! middle of a large file costs PoR writes for the blocks it wrote, never a rewrite of the
//! rest (the "O(log n) PoR writes for the blocks it touches").
//!
//! New blocks go first into ⊥ slots (App. A.3: a deleted copy's slots hold ⊥ until a new
//! copy takes them), first fit among the runs the provider names free, then into fresh slots
//! past the last one used ([`Allocator`]). The provider's word frees nothing: before a batch
//! is sent, every slot it writes is checked never written or ⊥ against U's own checksums
//! (`crate::por::client::check_free`).
//!
//! The layout travels as a label the provider keeps with the batch that finishes the copy.
//! It is sealed with a MAC under the client's key, bound to the label's key (file id and
//! version): the provider can withhold a label (a PoR file's version without one is a lie),
//! but cannot forge or move one, so a new layout built on an old one is built on what the
//! client itself wrote. What the runs hold is still checked on every read (U's root, the
//! tags, the version's root).
//!
//! A consolidation ([`super::compact`]) moves copies and seals their labels again; the old
//! label of a moved copy names slots that may hold other data later, so a provider must not
//! be able to serve it in place of the new one. Each label carries the **generation** of the
//! log's layouts it was sealed in (the consolidations before it; a label of generation 0 has
//! no such field and is sealed as before generations existed), under its MAC, and the client's
//! record keeps, per consolidation, the end of the slots it kept: a label sealed before it that
//! names a slot past that end is stale ([`super::record::PorRecord::label_is_current`]).

use blake3::Hasher;
use std::collections::HashMap;
use std::hash::Hash;

/// Most runs one layout may have: past it, a new version is copied whole, which makes one run
/// (the label then stays within the provider's 64 KiB).
pub const MAX_RUNS: usize = 1024;
const RUN_BYTES: usize = 16;
const GENERATION_BYTES: usize = 8;
const MAC_BYTES: usize = 32;

/// Slots `first..first + slots` of U.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub first: u64,
    pub slots: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub runs: Vec<Run>,
}

/// The key that seals layouts (derived from the client's secret).
pub struct LayoutKey([u8; 32]);

/// Never prints the key.
impl std::fmt::Debug for LayoutKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LayoutKey(..)")
    }
}

impl LayoutKey {
    pub fn derive(secret: &[u8; 32]) -> LayoutKey {
        LayoutKey(blake3::derive_key("vouch por layout key v1", secret))
    }

    fn mac(&self, label: &[u8], runs: &[u8]) -> [u8; MAC_BYTES] {
        let mut h = Hasher::new_keyed(&self.0);
        h.update(&(label.len() as u64).to_le_bytes()).update(label).update(runs);
        *h.finalize().as_bytes()
    }
}

impl Layout {
    /// One run of `slots` slots from `first`.
    #[cfg(test)]
    fn single(first: u64, slots: u64) -> Layout {
        Layout { runs: vec![Run { first, slots }] }
    }

    pub fn slots(&self) -> u64 {
        self.runs.iter().map(|r| r.slots).sum()
    }

    /// One past the last slot it names (0 for no runs).
    pub fn end(&self) -> u64 {
        self.runs.iter().map(|r| r.first.saturating_add(r.slots)).max().unwrap_or(0)
    }

    /// The label's value for label key `label`, sealed in `generation`: the runs, the
    /// generation (only when not 0), then their MAC.
    pub fn seal(&self, key: &LayoutKey, label: &[u8], generation: u64) -> Vec<u8> {
        let mut out: Vec<u8> =
            self.runs.iter().flat_map(|r| [r.first.to_le_bytes(), r.slots.to_le_bytes()]).flatten().collect();
        if generation > 0 {
            out.extend_from_slice(&generation.to_le_bytes());
        }
        let mac = key.mac(label, &out);
        out.extend_from_slice(&mac);
        out
    }

    /// The layout a label's value holds and the generation it was sealed in, if the client
    /// sealed it for `label`; `None` for anything else (the wrong size, another label's,
    /// forged). Whether it is still current is the record's to say.
    pub fn open(key: &LayoutKey, label: &[u8], value: &[u8]) -> Option<(Layout, u64)> {
        let sealed = value.len().checked_sub(MAC_BYTES)?;
        let (sealed, mac) = value.split_at(sealed);
        // The runs are whole 16-byte records: 8 bytes more is the generation.
        let (runs, generation) = match sealed.len() % RUN_BYTES {
            0 => (sealed, 0),
            GENERATION_BYTES => {
                let (runs, generation) = sealed.split_at(sealed.len() - GENERATION_BYTES);
                (runs, u64::from_le_bytes(generation.try_into().ok()?))
            }
            _ => return None,
        };
        if runs.is_empty() || runs.len() / RUN_BYTES > MAX_RUNS || (generation == 0 && sealed.len() != runs.len()) {
            return None;
        }
        // A keyed BLAKE3 output compared in constant time (`blake3::Hash`'s `PartialEq`).
        if blake3::Hash::from(key.mac(label, sealed)) != blake3::Hash::from(<[u8; MAC_BYTES]>::try_from(mac).ok()?) {
            return None;
        }
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let runs = runs.chunks_exact(RUN_BYTES).map(|r| Run { first: word(&r[..8]), slots: word(&r[8..]) }).collect();
        Some((Layout { runs }, generation))
    }

    /// Where every block of the version this layout holds starts, by its id, from the slots
    /// each takes (`blocks`: id and slot count, in the version's order). `None` when the
    /// blocks do not fill the runs exactly, block by block.
    pub fn starts<K: Hash + Eq + Clone>(&self, blocks: &[(K, u64)]) -> Option<HashMap<K, u64>> {
        let mut starts = HashMap::with_capacity(blocks.len());
        let mut blocks = blocks.iter();
        for run in &self.runs {
            let mut at = run.first;
            let end = run.first.checked_add(run.slots)?;
            while at < end {
                let (id, slots) = blocks.next()?;
                starts.insert(id.clone(), at);
                at = at.checked_add(*slots)?;
            }
            if at != end {
                return None;
            }
        }
        blocks.next().is_none().then_some(starts)
    }
}

/// Where a copy's new blocks go: free runs (⊥ slots), first fit, then fresh slots from `next`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocator {
    free: Vec<Run>,
    next: u64,
}

impl Allocator {
    pub fn new(free: Vec<Run>, next: u64) -> Allocator {
        Allocator { free, next }
    }

    /// Fresh slots only: one run for a whole copy.
    pub fn fresh(next: u64) -> Allocator {
        Allocator::new(Vec::new(), next)
    }

    /// The runs of ⊥ slots it still holds, ascending.
    pub fn free_runs(&self) -> Vec<Run> {
        self.free.clone()
    }

    /// The first of `slots` consecutive slots for a new block.
    fn take(&mut self, slots: u64) -> u64 {
        if let Some(run) = self.free.iter_mut().find(|r| r.slots >= slots) {
            let at = run.first;
            (run.first, run.slots) = (run.first + slots, run.slots - slots);
            return at;
        }
        let at = self.next;
        self.next += slots;
        at
    }
}

/// The runs of ⊥ slots a provider named free, checked for shape: at most `most`, each
/// non-empty, ascending and apart, all below `next` (the slots from `next` on are fresh
/// anyway: a provider that names slots past it would have U grow for nothing). Whether each
/// slot is ⊥ is checked when a batch writes it.
pub fn free_runs(runs: &[(u64, u64)], next: u64, most: usize) -> Result<Vec<Run>, String> {
    if runs.len() > most {
        return Err(format!("{} runs of free slots, not at most {most}", runs.len()));
    }
    let mut end = 0;
    for &(first, slots) in runs {
        let last = first.checked_add(slots).filter(|&e| slots > 0 && first >= end && e <= next);
        end = last.ok_or_else(|| format!("free slots {first}+{slots}: empty, out of order, or past slot {next}"))?;
    }
    Ok(runs.iter().map(|&(first, slots)| Run { first, slots }).collect())
}

/// `slots` slots from `first` appended to `runs`, joining the last run when they follow it.
pub fn extend(runs: &mut Vec<Run>, first: u64, slots: u64) {
    match runs.last_mut() {
        Some(run) if run.first + run.slots == first => run.slots += slots,
        _ => runs.push(Run { first, slots }),
    }
}

/// The layout of a whole copy of blocks of `slots` slots each, in order, and where each
/// starts; `None` when it would pass [`MAX_RUNS`] (free runs too scattered).
pub fn whole(slots: &[u64], alloc: &mut Allocator) -> Option<(Layout, Vec<u64>)> {
    let mut runs = Vec::new();
    let starts: Vec<u64> = slots
        .iter()
        .map(|&n| {
            let at = alloc.take(n);
            extend(&mut runs, at, n);
            at
        })
        .collect();
    (!runs.is_empty() && runs.len() <= MAX_RUNS).then_some((Layout { runs }, starts))
}

/// The layout of a new version (`blocks`: id and slot count of each, in order) that keeps
/// the slots of `old` (the layout of a version of the same file whose blocks were `old_blocks`)
/// for every block they share, with the others placed by `alloc`. A block's id names its
/// content (the leaf of its nonce and tag). Also says which of `blocks` are new and where each
/// starts (they are to be written there). `None` when `old` does not fit `old_blocks` or the
/// layout would pass [`MAX_RUNS`]: the version is then copied whole.
pub fn reuse<K: Hash + Eq + Clone>(
    old: &Layout,
    old_blocks: &[(K, u64)],
    blocks: &[(K, u64)],
    alloc: &mut Allocator,
) -> Option<(Layout, Vec<(usize, u64)>)> {
    let starts = old.starts(old_blocks)?;
    let mut runs: Vec<Run> = Vec::new();
    let mut new = Vec::new();
    for (i, (id, slots)) in blocks.iter().enumerate() {
        let first = match starts.get(id) {
            Some(&at) => at,
            None => {
                let at = alloc.take(*slots);
                new.push((i, at));
                at
            }
        };
        extend(&mut runs, first, *slots);
    }
    (!runs.is_empty() && runs.len() <= MAX_RUNS).then_some((Layout { runs }, new))
}

/// Every slot of `layouts` (each slot once).
pub fn slots_of(layouts: &[Layout]) -> std::collections::BTreeSet<u64> {
    layouts.iter().flat_map(|l| &l.runs).flat_map(|r| r.first..r.first + r.slots).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_layout_opens_only_under_its_key_and_label() {
        let key = LayoutKey::derive(&[1; 32]);
        let layout = Layout { runs: vec![Run { first: 0, slots: 5 }, Run { first: 90, slots: 2 }] };
        let value = layout.seal(&key, b"file-1", 0);
        assert_eq!(Layout::open(&key, b"file-1", &value), Some((layout.clone(), 0)));
        assert_eq!(Layout::open(&key, b"file-2", &value), None, "another version's label");
        assert_eq!(Layout::open(&LayoutKey::derive(&[2; 32]), b"file-1", &value), None, "another client's");
        let mut moved = value.clone();
        moved[0] ^= 1;
        assert_eq!(Layout::open(&key, b"file-1", &moved), None, "a run moved");
        assert_eq!(Layout::open(&key, b"file-1", &value[..value.len() - 1]), None);
        assert_eq!(Layout::open(&key, b"file-1", &value[RUN_BYTES..]), None, "a run dropped");
        assert_eq!(Layout::open(&key, b"", &[]), None);
        let empty = Layout { runs: Vec::new() }.seal(&key, b"file-1", 0);
        assert_eq!(Layout::open(&key, b"file-1", &empty), None, "no runs");
    }

    #[test]
    fn a_label_carries_the_generation_it_was_sealed_in_under_its_mac() {
        let key = LayoutKey::derive(&[1; 32]);
        let layout = Layout { runs: vec![Run { first: 7, slots: 3 }] };
        let value = layout.seal(&key, b"file-1", 5);
        assert_eq!(value.len(), RUN_BYTES + GENERATION_BYTES + MAC_BYTES);
        assert_eq!(Layout::open(&key, b"file-1", &value), Some((layout.clone(), 5)));
        // Another generation written in, or the generation cut off: not sealed so.
        let mut other = value.clone();
        other[RUN_BYTES] = 4;
        assert_eq!(Layout::open(&key, b"file-1", &other), None);
        let cut = [&value[..RUN_BYTES], &value[RUN_BYTES + GENERATION_BYTES..]].concat();
        assert_eq!(Layout::open(&key, b"file-1", &cut), None);
        // Generation 0 is only ever the old form, never spelled out.
        let mut zero = layout.seal(&key, b"file-1", 0)[..RUN_BYTES].to_vec();
        zero.extend_from_slice(&0u64.to_le_bytes());
        let mac = key.mac(b"file-1", &zero);
        zero.extend_from_slice(&mac);
        assert_eq!(Layout::open(&key, b"file-1", &zero), None);
        assert_eq!(layout.end(), 10);
    }

    #[test]
    fn a_new_version_keeps_the_slots_of_its_unchanged_blocks() {
        // Old: blocks 1, 2, 3, 4 of 2, 1, 3, 1 slots at 10..17.
        let old = Layout::single(10, 7);
        let old_blocks = [(1, 2), (2, 1), (3, 3), (4, 1)];
        // New: 2 replaced by 9 (4 slots), 5 inserted after 4, 1 removed.
        let blocks = [(9, 4), (3, 3), (4, 1), (5, 2)];
        let (layout, new) = reuse(&old, &old_blocks, &blocks, &mut Allocator::fresh(40)).unwrap();
        assert_eq!(new, [(0, 40), (3, 44)]);
        assert_eq!(
            layout.runs,
            [Run { first: 40, slots: 4 }, Run { first: 13, slots: 4 }, Run { first: 44, slots: 2 }]
        );
        assert_eq!(layout.slots(), 10);
        // Nothing changed: the old layout itself.
        assert_eq!(reuse(&old, &old_blocks, &old_blocks, &mut Allocator::fresh(40)).unwrap(), (old.clone(), vec![]));
        // An old layout that does not fit its blocks is not built on.
        let fresh = &mut Allocator::fresh(40);
        assert_eq!(reuse(&Layout::single(10, 6), &old_blocks, &blocks, fresh), None);
        assert_eq!(reuse(&Layout::single(10, 8), &old_blocks, &blocks, fresh), None);
        let split_inside_a_block = Layout { runs: vec![Run { first: 10, slots: 1 }, Run { first: 11, slots: 6 }] };
        assert_eq!(reuse(&split_inside_a_block, &old_blocks, &blocks, fresh), None);
        // With free runs: new blocks take the first that fits, else fresh slots.
        let mut alloc = Allocator::new(vec![Run { first: 2, slots: 3 }, Run { first: 20, slots: 5 }], 40);
        let (layout, new) = reuse(&old, &old_blocks, &blocks, &mut alloc).unwrap();
        assert_eq!(new, [(0, 20), (3, 2)]);
        assert_eq!(layout.runs, [Run { first: 20, slots: 4 }, Run { first: 13, slots: 4 }, Run { first: 2, slots: 2 }]);
        assert_eq!(alloc, Allocator::new(vec![Run { first: 4, slots: 1 }, Run { first: 24, slots: 1 }], 40));
    }

    #[test]
    fn too_many_runs_mean_a_whole_copy() {
        let old_blocks: Vec<(u64, u64)> = (0..3000).map(|n| (n, 1)).collect();
        let old = Layout::single(0, 3000);
        // Every other block replaced: one run per block.
        let blocks: Vec<(u64, u64)> = (0..3000).map(|n| (if n % 2 == 0 { n } else { 10_000 + n }, 1)).collect();
        assert_eq!(reuse(&old, &old_blocks, &blocks, &mut Allocator::fresh(5000)), None);
        // A whole copy into free runs of one slot each: past the bound too.
        let scattered: Vec<Run> = (0..3000).map(|n| Run { first: 2 * n, slots: 1 }).collect();
        assert_eq!(whole(&[1; 2000], &mut Allocator::new(scattered, 6000)), None);
    }

    #[test]
    fn free_runs_must_be_apart_ascending_and_below_the_fresh_slots() {
        assert_eq!(
            free_runs(&[(0, 2), (5, 1)], 6, 2),
            Ok(vec![Run { first: 0, slots: 2 }, Run { first: 5, slots: 1 }])
        );
        assert_eq!(free_runs(&[], 0, 0), Ok(vec![]));
        for bad in [&[(0, 2), (1, 1)][..], &[(5, 1), (0, 2)], &[(0, 0)], &[(5, 2)], &[(u64::MAX, 2)], &[(0, 1); 3]] {
            assert!(free_runs(bad, 6, 2).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_whole_copy_fills_free_runs_first_and_joins_adjacent_blocks() {
        let mut alloc = Allocator::new(vec![Run { first: 3, slots: 2 }, Run { first: 9, slots: 4 }], 50);
        let (layout, starts) = whole(&[2, 3, 1, 2], &mut alloc).unwrap();
        assert_eq!(starts, [3, 9, 12, 50]);
        assert_eq!(layout.runs, [Run { first: 3, slots: 2 }, Run { first: 9, slots: 4 }, Run { first: 50, slots: 2 }]);
        assert_eq!(slots_of(&[layout]).into_iter().collect::<Vec<_>>(), [3, 4, 9, 10, 11, 12, 50, 51]);
    }
}

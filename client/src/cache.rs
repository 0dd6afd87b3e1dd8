//! The portal's cache of verified answers (Iris Sec. 7.2): lookups and the listing, stamped
//! with the root they were checked against, and blocks, keyed by the version root they were
//! checked against. A hit needs no provider at all.
//!
//! Why a hit is as good as a fresh check:
//! * A block is cached under its version's root (the FlexList root of the version's blocks,
//!   which binds each block's bytes and offset) only after it verified against that root; a
//!   version's blocks never change, so they never go stale.
//! * A lookup or the listing is served only while the client's root is still the one it was
//!   checked against. A commit of this client moves the stamp to the new root
//!   ([`ReadCache::carry`]): the commit's proof shows only the committed name changed, so its
//!   entries are dropped, the listing takes its new entry, and every other answer still holds.
//!   Any other change of the root (settling an interrupted commit) leaves the stamp behind:
//!   everything stamped is a miss from then on.
//!
//! Blocks are evicted least recently used first when their bytes pass the capacity.

use crate::root::Root;
use crate::verify::{RangeParts, Verified};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use vouch_core::namespace::{EntryRecord, VersionRecord};

/// How well the cache does, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Reads, lookups and listings answered from the cache.
    pub hits: u64,
    /// Those that went to the provider.
    pub misses: u64,
    /// Bytes of blocks held, and the most it holds.
    pub bytes: u64,
    pub capacity: u64,
}

/// Lookups kept per MiB of capacity (a lookup is a few hundred bytes; blocks are the bulk).
const LOOKUPS_PER_MIB: u64 = 64;

/// The cache of a client ([`crate::Client::cache`]): off (capacity 0) until it is given a
/// size. Sound for a client that is its root's only writer, as one opened on a directory is
/// (see the module documentation).
#[derive(Default)]
pub struct ReadCache {
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Default)]
struct Inner {
    capacity: u64,
    /// The root the lookups and the listing hold under (`None`: nothing stamped).
    root: Option<Root>,
    /// (name, version asked) -> the verified version, or `None` when proven absent.
    lookups: HashMap<(String, Option<u64>), Option<Verified>>,
    listing: Option<Vec<EntryRecord>>,
    /// Version root -> block start -> (block bytes, last use).
    blocks: HashMap<[u8; 32], BTreeMap<u64, (Bytes, u64)>>,
    /// Last use -> (version root, block start): the eviction order.
    uses: BTreeMap<u64, ([u8; 32], u64)>,
    clock: u64,
    bytes: u64,
}

impl ReadCache {
    /// Keeps up to `capacity` bytes of verified blocks (and lookups and the listing in
    /// proportion) to serve reads without the provider; 0, the default, turns the cache off and
    /// empties it.
    pub fn resize(&self, capacity: u64) {
        let mut inner = self.lock();
        inner.capacity = capacity;
        if capacity == 0 {
            *inner = Inner::default();
        }
        inner.evict();
    }

    /// The cache's hits, misses and size.
    pub fn stats(&self) -> CacheStats {
        let inner = self.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bytes: inner.bytes,
            capacity: inner.capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts an answer served from the cache (`hit`) or from the provider.
    pub(crate) fn count(&self, hit: bool) {
        let counter = if hit { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The lookup of (`name`, `want`) checked against `root`, if kept: `Some(None)` when the
    /// name was proven absent.
    pub(crate) fn lookup(&self, root: &Root, name: &str, want: Option<u64>) -> Option<Option<Verified>> {
        let inner = self.lock();
        if inner.capacity == 0 {
            return None;
        }
        match inner.root == Some(*root) {
            true => inner.lookups.get(&(name.to_string(), want)).cloned(),
            false => None,
        }
    }

    /// Keeps a lookup checked against `checked`, if that is still the client's root `current`.
    pub(crate) fn keep_lookup(
        &self,
        checked: &Root,
        current: &Root,
        name: &str,
        want: Option<u64>,
        answer: Option<&Verified>,
    ) {
        let mut inner = self.lock();
        if inner.restamp(checked, current) {
            if inner.lookups.len() as u64 >= LOOKUPS_PER_MIB * (inner.capacity >> 20).max(1) {
                inner.lookups.clear();
            }
            inner.lookups.insert((name.to_string(), want), answer.cloned());
        }
    }

    pub(crate) fn listing(&self, root: &Root) -> Option<Vec<EntryRecord>> {
        let inner = self.lock();
        if inner.capacity == 0 {
            return None;
        }
        match inner.root == Some(*root) {
            true => inner.listing.clone(),
            false => None,
        }
    }

    pub(crate) fn keep_listing(&self, checked: &Root, current: &Root, listing: &[EntryRecord]) {
        let mut inner = self.lock();
        if inner.restamp(checked, current) {
            inner.listing = Some(listing.to_vec());
        }
    }

    /// A commit of `name` moved the root from `old` to `new`, and left `name` as `entry`
    /// (`None`: removed): every other answer stamped `old` holds under `new`.
    pub(crate) fn carry(&self, old: &Root, new: &Root, name: &str, entry: Option<&EntryRecord>) {
        let mut inner = self.lock();
        if inner.root != Some(*old) {
            return;
        }
        inner.root = Some(*new);
        inner.lookups.retain(|(n, _), _| n != name);
        if let Some(listing) = inner.listing.as_mut() {
            let at = listing.binary_search_by(|e| e.name.as_str().cmp(name));
            match (at, entry) {
                (Ok(i), Some(e)) => listing[i] = e.clone(),
                (Ok(i), None) => {
                    listing.remove(i);
                }
                (Err(i), Some(e)) => listing.insert(i, e.clone()),
                (Err(_), None) => {}
            }
        }
    }

    /// Writes bytes `range` of the version `verified` (clamped to its length) into `out`, when
    /// every block covering them is kept; the number of blocks, or `None` (nothing written).
    pub(crate) fn read(&self, verified: &Verified, range: &Range<u64>, out: &mut Vec<Bytes>) -> Option<u64> {
        let mut inner = self.lock();
        if inner.capacity == 0 {
            return None;
        }
        let (start, end, key) = (range.start, range.end.min(verified.record.len), verified.record.root.0);
        let mut found = Vec::new();
        let mut pos = start;
        if let Some(blocks) = inner.blocks.get(&key) {
            let first = blocks.range(..=start).next_back().map_or(start, |(s, _)| *s);
            pos = first;
            for (&s, (data, used)) in blocks.range(first..) {
                if pos >= end || s != pos {
                    break;
                }
                found.push((s, data.clone(), *used));
                pos = s + data.len() as u64;
            }
        }
        if start > end || pos < end {
            return None;
        }
        for (s, data, used) in &found {
            inner.touch(key, *s, *used);
            let from = start.saturating_sub(*s) as usize;
            let to = (end - s).min(data.len() as u64) as usize;
            out.push(data.slice(from..to));
        }
        Some(found.len() as u64)
    }

    /// Keeps the blocks of `parts` (each one's start and bytes), checked against `version`'s
    /// root.
    pub(crate) fn keep_blocks(&self, version: &VersionRecord, parts: &RangeParts<'_>) {
        let mut inner = self.lock();
        for (_, (start, block)) in parts {
            inner.keep(version.root.0, *start, block);
        }
    }

    /// The most bytes of a version the client is writing it keeps for the cache (a quarter of
    /// it); `None` when the cache is off.
    pub(crate) fn written_limit(&self) -> Option<u64> {
        let capacity = self.lock().capacity;
        (capacity > 0).then_some(capacity / 4)
    }

    /// Keeps the blocks of a version this client wrote (and whose commit it accepted): they
    /// are its own bytes, the version's root computed from them.
    pub(crate) fn keep_written(&self, version: &VersionRecord, blocks: &[vouch_core::por::copy::TaggedData]) {
        let covered: u64 = blocks.iter().map(|b| b.data.len() as u64).sum();
        if covered != version.len {
            return; // not kept whole (past the limit)
        }
        let mut inner = self.lock();
        let mut start = 0;
        for block in blocks {
            inner.keep(version.root.0, start, &block.data);
            start += block.data.len() as u64;
        }
    }
}

impl Inner {
    /// Keeps `block`, at `start` of the version whose root is `key` (nothing when the cache is
    /// off or the block takes more than a quarter of it).
    fn keep(&mut self, key: [u8; 32], start: u64, block: &[u8]) {
        if self.capacity == 0 || block.len() as u64 > self.capacity / 4 {
            return;
        }
        if let Some(&(ref old, used)) = self.blocks.get(&key).and_then(|b| b.get(&start)) {
            // Kept already (a block's bytes at its start never change): a use.
            debug_assert_eq!(old.len(), block.len());
            self.touch(key, start, used);
            return;
        }
        let now = self.tick();
        self.blocks.entry(key).or_default().insert(start, (Bytes::copy_from_slice(block), now));
        self.uses.insert(now, (key, start));
        self.bytes += block.len() as u64;
        self.evict();
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The block at `start` of version `key`, last used at `used`, is used now.
    fn touch(&mut self, key: [u8; 32], start: u64, used: u64) {
        let now = self.tick();
        self.uses.remove(&used);
        self.uses.insert(now, (key, start));
        if let Some(entry) = self.blocks.get_mut(&key).and_then(|b| b.get_mut(&start)) {
            entry.1 = now;
        }
    }

    /// Whether an answer checked against `checked` may be kept, the client's root being
    /// `current`: it may under the stamp, or as the first of a new stamp when it is current.
    fn restamp(&mut self, checked: &Root, current: &Root) -> bool {
        if self.capacity == 0 {
            return false;
        }
        if self.root == Some(*checked) {
            return true;
        }
        if checked != current {
            return false;
        }
        self.root = Some(*checked);
        self.lookups.clear();
        self.listing = None;
        true
    }

    fn evict(&mut self) {
        while self.bytes > self.capacity {
            let Some((_, (key, start))) = self.uses.pop_first() else { break };
            let Some(blocks) = self.blocks.get_mut(&key) else { continue };
            if let Some((data, _)) = blocks.remove(&start) {
                self.bytes -= data.len() as u64;
            }
            if blocks.is_empty() {
                self.blocks.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vouch_core::pdp::{FileId, SchemeId};
    use vouch_core::Digest;

    fn version(root: u8, len: u64) -> Verified {
        let file = FileId([root; 16]);
        Verified {
            entry: EntryRecord { name: "f".into(), file, versions_root: Digest([0; 32]), versions: 1, next_version: 2 },
            record: VersionRecord {
                number: 1,
                scheme: SchemeId::Linear,
                file,
                root: Digest([root; 32]),
                len,
                next_nonce: 0,
                time: 0,
            },
        }
    }

    fn root(n: u8) -> Root {
        Root { digest: Digest([n; 32]), len: n as u64 }
    }

    fn read(cache: &ReadCache, v: &Verified, range: Range<u64>) -> Option<Vec<u8>> {
        let mut parts = Vec::new();
        cache.read(v, &range, &mut parts)?;
        Some(parts.concat())
    }

    #[test]
    fn a_range_is_served_only_when_every_block_under_it_is_kept() {
        let cache = ReadCache::default();
        cache.resize(1 << 20);
        let v = version(1, 30);
        cache.lock().keep(v.record.root.0, 0, &[1; 10]);
        cache.lock().keep(v.record.root.0, 20, &[3; 10]);
        assert_eq!(read(&cache, &v, 2..8), Some(vec![1; 6]));
        assert_eq!(read(&cache, &v, 5..25), None, "the block at 10 is missing");
        cache.lock().keep(v.record.root.0, 10, &[2; 10]);
        let whole = read(&cache, &v, 0..u64::MAX).unwrap();
        assert_eq!(whole, [[1; 10], [2; 10], [3; 10]].concat());
        assert_eq!(read(&cache, &v, 30..30), Some(vec![]));
        assert_eq!(read(&cache, &v, 31..40), None, "past the end is the provider's to refuse");
        assert_eq!(read(&cache, &version(2, 30), 0..10), None, "another version's blocks are not these");
    }

    #[test]
    fn the_least_recently_used_blocks_go_first_and_the_size_stays_under_the_capacity() {
        let cache = ReadCache::default();
        cache.resize(40);
        let v = version(1, 100);
        for start in [0, 10, 20, 30] {
            cache.lock().keep(v.record.root.0, start, &[start as u8; 10]);
        }
        assert!(read(&cache, &v, 0..10).is_some());
        cache.lock().keep(v.record.root.0, 40, &[4; 10]);
        assert_eq!(cache.stats().bytes, 40);
        assert!(read(&cache, &v, 0..10).is_some(), "used last, kept");
        assert!(read(&cache, &v, 10..20).is_none(), "the least recently used went");
        cache.resize(0);
        assert_eq!((cache.stats().bytes, read(&cache, &v, 0..10)), (0, None));
    }

    #[test]
    fn answers_hold_under_their_root_and_a_commit_carries_all_but_its_name() {
        let cache = ReadCache::default();
        cache.resize(1 << 20);
        let (a, b) = (version(1, 10), version(2, 10));
        cache.keep_lookup(&root(1), &root(1), "a", None, Some(&a));
        cache.keep_lookup(&root(1), &root(1), "b", None, Some(&b));
        cache.keep_lookup(&root(1), &root(1), "gone", None, None);
        cache.keep_lookup(&root(0), &root(1), "stale", None, Some(&a));
        assert_eq!(cache.lookup(&root(1), "stale", None), None, "checked against an older root");
        assert_eq!(cache.lookup(&root(2), "a", None), None, "another root");
        assert_eq!(cache.lookup(&root(1), "gone", None), Some(None));
        let entry = |name: &str| EntryRecord { name: name.into(), ..a.entry.clone() };
        cache.keep_listing(&root(1), &root(1), &[entry("a"), entry("b")]);
        cache.carry(&root(1), &root(2), "a", None);
        assert_eq!(cache.lookup(&root(2), "a", None), None, "the committed name is dropped");
        assert_eq!(cache.lookup(&root(2), "b", None), Some(Some(b.clone())));
        assert_eq!(cache.listing(&root(2)), Some(vec![entry("b")]));
        cache.carry(&root(2), &root(3), "c", Some(&entry("c")));
        cache.carry(&root(3), &root(4), "0", Some(&entry("0")));
        assert_eq!(cache.listing(&root(4)), Some(vec![entry("0"), entry("b"), entry("c")]));
        cache.carry(&root(1), &root(9), "b", None);
        assert_eq!(cache.lookup(&root(4), "b", None), Some(Some(b)), "a carry from another root is ignored");
        // A root adopted some other way (settling): the stamp stays behind, all misses.
        assert_eq!((cache.lookup(&root(5), "b", None), cache.listing(&root(5))), (None, None));
    }
}

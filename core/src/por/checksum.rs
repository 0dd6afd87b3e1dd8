//! Homomorphic checksums `σ = M·B` (paper 002, Sec. 5.3) and their sealed form on the server
//! (Sec. 5.4).
//!
//! With checksums the server rebuilds H and C itself and the client replays each rebuild on
//! checksums alone: HRebuild and CRebuild only add slots and scale them by public constants,
//! and `σ` is linear. An audit (Sec. 5.5) checks the server's `B* = Σ c_i·B_i` against
//! [`Checksum::combine`] of the sealed checksums it returns.

use super::field::{self, add, mul, reduce, P, SECTOR_BYTES};
use super::{Region, SlotAddress};
use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use std::fmt;

/// Rows of M. Two blocks collide only when their difference is orthogonal to both rows of the
/// secret M: probability `p^-2 ≈ 2^-128`, for a server that never sees M nor a checksum in
/// the clear (checksums are stored sealed, [`SealKey`]).
pub const ROWS: usize = 2;

/// The secret matrix M (`ROWS × width`, `width` the elements of a slot), derived from a
/// 32-byte secret so the client keeps only the secret.
#[derive(Clone)]
pub struct ChecksumKey {
    /// Column `j` of M: the weights of element `j` in each row, side by side for the loop.
    columns: Vec<[u64; ROWS]>,
    /// Elements of one slot of U or C; [`Self::width`] is a whole block of H, a group of
    /// slots (Sec. 6.1).
    slot_width: usize,
}

impl fmt::Debug for ChecksumKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChecksumKey")
            .field("width", &self.columns.len())
            .field("slot_width", &self.slot_width)
            .finish_non_exhaustive()
    }
}

/// `σ(B)`: one field element per row of M.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Checksum([u64; ROWS]);

/// `Σ c_i·column_i` of any `u64` factors without reducing each product: per row, the
/// products' low and high halves summed apart (neither sum can overflow: below 2^64 terms of
/// below 2^64), reduced once. A step is a multiply and two add-with-carry pairs per row.
#[derive(Default)]
struct WideSum {
    low: [u128; ROWS],
    high: [u128; ROWS],
}

impl WideSum {
    #[inline(always)]
    fn add_scaled(&mut self, c: u64, column: &[u64; ROWS]) {
        self.add_wide(column.map(|m| u128::from(m) * u128::from(c)));
    }

    #[inline(always)]
    fn add_wide(&mut self, v: [u128; ROWS]) {
        for ((low, high), v) in self.low.iter_mut().zip(&mut self.high).zip(v) {
            *low += u128::from(v as u64);
            *high += v >> 64;
        }
    }

    /// `low + high·2^64`, with `2^64 ≡ 2^32 - 1 (mod p)`.
    fn finish(self) -> Checksum {
        Checksum(std::array::from_fn(|r| add(reduce(self.low[r]), mul(reduce(self.high[r]), (1 << 32) - 1))))
    }
}

/// `σ(A) + σ(B) = σ(A + B)`.
impl std::ops::Add for Checksum {
    type Output = Checksum;

    fn add(self, other: Checksum) -> Checksum {
        Checksum(std::array::from_fn(|r| add(self.0[r], other.0[r])))
    }
}

impl Checksum {
    /// `σ` of the zero block.
    pub const ZERO: Checksum = Checksum([0; ROWS]);

    /// The row values, canonical field elements.
    pub fn rows(self) -> [u64; ROWS] {
        self.0
    }

    /// A checksum from its rows, if they are canonical field elements (a stored one).
    pub fn from_canonical(rows: [u64; ROWS]) -> Option<Checksum> {
        rows.iter().all(|&r| r < P).then_some(Checksum(rows))
    }

    /// A checksum computed on checksums (a replayed rebuild): rows already canonical.
    pub(crate) fn from_rows(rows: [u64; ROWS]) -> Checksum {
        debug_assert!(rows.iter().all(|&r| r < P), "canonical rows");
        Checksum(rows)
    }

    /// `c·σ(B) = σ(c·B)`.
    #[must_use]
    pub fn scale(self, c: u64) -> Checksum {
        Checksum(self.0.map(|v| mul(c, v)))
    }

    /// `Σ c_i·σ_i`: the client's side of an aggregated audit (Sec. 5.5), to compare with the
    /// checksum of the server's `Σ c_i·B_i`.
    ///
    /// # Panics
    /// When there are not as many coefficients as checksums (a caller's bug).
    pub fn combine(coeffs: &[u64], sums: &[Checksum]) -> Checksum {
        assert_eq!(coeffs.len(), sums.len(), "one coefficient per checksum");
        let mut acc = WideSum::default();
        for (&c, sum) in coeffs.iter().zip(sums) {
            acc.add_scaled(c, &sum.0);
        }
        acc.finish()
    }

    fn to_bytes(self) -> [u8; 16] {
        let mut out = [0; 16];
        out[..8].copy_from_slice(&self.0[0].to_le_bytes());
        out[8..].copy_from_slice(&self.0[1].to_le_bytes());
        out
    }
}

/// Sectors per group of [`ChecksumKey::checksum_bytes`]'s loop: 8 sectors are 56 bytes, and
/// each is one unaligned 8-byte load inside the group.
const GROUP: usize = 8;
const GROUP_BYTES: usize = GROUP * SECTOR_BYTES;
const SECTOR_MASK: u64 = (1 << 56) - 1;

impl ChecksumKey {
    /// M for slots of `width` elements. Entries are uniform in Z_p: BLAKE3's XOF (key
    /// derivation mode) read as `u64`s, those `≥ p` rejected. Column by column, so the
    /// matrix of a narrower width is a prefix of a wider one's.
    pub fn new(secret: &[u8; 32], width: usize) -> Self {
        Self::grouped(secret, width, 0)
    }

    /// M for a log of slots of `slot_width` elements whose blocks of H are groups of
    /// `2^group_log` slots (Sec. 6.1): `width = slot_width·2^group_log`. A slot of U or C is
    /// checked with the first `slot_width` columns; slot `j` of a group with the `j`-th
    /// `slot_width` columns ([`Self::checksum_at`]), so that the checksum of a group is the
    /// sum of its slots' and no two positions of a group share their weights.
    pub fn grouped(secret: &[u8; 32], slot_width: usize, group_log: u32) -> Self {
        let width = slot_width << group_log;
        let mut hasher = blake3::Hasher::new_derive_key("vouch por checksum matrix v1");
        hasher.update(secret);
        let mut xof = hasher.finalize_xof();
        // Read a page of the stream at a time: a fill of 8 bytes computes a whole block.
        let (mut page, mut at) = ([0u8; 4096], 4096);
        let mut next = || loop {
            if at == page.len() {
                xof.fill(&mut page);
                at = 0;
            }
            let v = u64::from_le_bytes(page[at..at + 8].try_into().expect("8 bytes"));
            at += 8;
            if v < P {
                return v;
            }
        };
        let columns = (0..width).map(|_| std::array::from_fn(|_| next())).collect();
        ChecksumKey { columns, slot_width }
    }

    /// Elements per block of H (a group of slots).
    pub fn width(&self) -> usize {
        self.columns.len()
    }

    /// Elements per slot of U and C.
    pub fn slot_width(&self) -> usize {
        self.slot_width
    }

    /// Elements per slot of `region`: a block of H is a group of U's slots.
    pub fn region_width(&self, region: Region) -> usize {
        match region {
            Region::Level(_) => self.width(),
            Region::Coded | Region::Raw => self.slot_width,
        }
    }

    /// The part of a group's checksum that its slot at `position` adds: `σ` over the
    /// columns of that position.
    ///
    /// # Panics
    /// When the slot does not fit that position (a caller's bug).
    pub fn checksum_at(&self, position: usize, elements: &[u64]) -> Checksum {
        let from = position * self.slot_width;
        assert!(elements.len() <= self.slot_width && from < self.width(), "a slot within the group");
        let mut acc = WideSum::default();
        for (&x, column) in elements.iter().zip(&self.columns[from..]) {
            acc.add_scaled(x, column);
        }
        acc.finish()
    }

    /// `σ = M·B` of one slot; missing trailing elements count as zero. Elements may be any
    /// `u64` (codeword elements included) and are read modulo p.
    ///
    /// # Panics
    /// When the slot has more than [`Self::width`] elements.
    pub fn checksum(&self, elements: &[u64]) -> Checksum {
        assert!(elements.len() <= self.width(), "a slot of at most the key's width");
        let mut acc = WideSum::default();
        for (&x, column) in elements.iter().zip(&self.columns) {
            acc.add_scaled(x, column);
        }
        acc.finish()
    }

    /// `checksum(&field::to_elements(block))` without the vector: sectors read in place.
    ///
    /// # Panics
    /// When the block has more than [`Self::width`] sectors.
    pub fn checksum_bytes(&self, block: &[u8]) -> Checksum {
        assert!(field::sectors(block.len()) <= self.width(), "a block of at most the key's width");
        let mut acc = WideSum::default();
        let (groups, tail) = block.as_chunks::<GROUP_BYTES>();
        let (column_groups, _) = self.columns.as_chunks::<GROUP>();
        for (group, columns) in groups.iter().zip(column_groups) {
            // A sector is below 2^56, so a group's products (below 2^120 each) sum in a u128.
            let mut partial = [0u128; ROWS];
            for (k, column) in columns.iter().enumerate() {
                // Sector k at bytes 7k..7k+7; the last one's 8-byte load ends at the group's end.
                let x = if k + 1 < GROUP {
                    u64::from_le_bytes(group[k * 7..k * 7 + 8].try_into().expect("8 bytes")) & SECTOR_MASK
                } else {
                    u64::from_le_bytes(group[GROUP_BYTES - 8..].try_into().expect("8 bytes")) >> 8
                };
                for (partial, &m) in partial.iter_mut().zip(column) {
                    *partial += u128::from(m) * u128::from(x);
                }
            }
            acc.add_wide(partial);
        }
        for (sector, column) in tail.chunks(SECTOR_BYTES).zip(&self.columns[groups.len() * GROUP..]) {
            let mut word = [0u8; 8];
            word[..sector.len()].copy_from_slice(sector);
            acc.add_scaled(u64::from_le_bytes(word), column);
        }
        acc.finish()
    }
}

/// Bytes of a [`SealedChecksum`]: nonce 24, ciphertext 16, tag 16.
pub const SEALED_LEN: usize = 24 + 16 + 16;

/// `σ̃ = AE.E_κ(σ)` as stored next to its slot on the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SealedChecksum([u8; SEALED_LEN]);

impl SealedChecksum {
    pub fn to_bytes(self) -> [u8; SEALED_LEN] {
        self.0
    }

    pub fn from_bytes(bytes: [u8; SEALED_LEN]) -> Self {
        SealedChecksum(bytes)
    }
}

/// A sealed checksum the client must reject: the server misbehaved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("sealed checksum fails authentication (other slot, other write time, or altered)")]
    Forged,
    #[error("sealed checksum decrypts to an element not below p")]
    NotCanonical,
}

/// The client's sealing keys, from the master secret `sk0`.
///
/// **Times are absolute.** `time` is the slot's write time as a counter that never wraps. A
/// counter taken modulo some n (a level's rebuild period, say) would repeat `(addr, t mod n)`
/// and let the server hand back an older epoch's slot with its still-valid sealed checksum.
///
/// **Refused batches.** A batch the provider refuses without applying has still handed it
/// sealed checksums of H and C for times after the log's; the batch sent in its place seals
/// the same `(addr, t)` over other content. Were both under one key, the provider would hold
/// two authentic versions of a level and could mix their slots past every audit. So the key
/// of H and C also binds the **incarnation** in force when `t` was sealed ([`Incarnations`]):
/// it rises whenever a sent batch settles as not applied, and what the refused batch sealed
/// opens under no key the client uses again.
#[derive(Clone)]
pub struct SealKey {
    master: [u8; 32],
    /// `PRF(sk0, 1)`: U's fixed key (its slots' last-write times are not predictable; U's
    /// root, which the client keeps, binds its checksums to the write history).
    raw: [u8; 32],
    /// `PRF(sk0, 2)`: the key of the synthetic nonces.
    nonce: [u8; 32],
    incarnations: Incarnations,
}

/// Which incarnation of the log's write history sealed each time: `base` plus the refusals
/// counted in `ends` before it. An end is the group time a refused batch started from, with how
/// many batches were refused from there: everything such a batch sealed is at a later time,
/// under the incarnation before the end, and everything sealed for those times since is under
/// a later one.
///
/// Ends older than every sealed checksum still in use (C's time,
/// [`super::code::Schedule::coded_time`]) fold into `base` ([`Incarnations::fold_before`]), so
/// the list holds the points of the current epoch where batches were refused: one entry per
/// point, however many refusals there, and a new point only after a batch was applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Incarnations {
    pub base: u64,
    /// `(group time, refusals there)`, ascending by time.
    pub ends: Vec<(u64, u64)>,
}

impl Incarnations {
    /// The incarnation that sealed group time `time`.
    pub fn at(&self, time: u64) -> u64 {
        self.base + self.ends.iter().filter(|&&(end, _)| end < time).map(|&(_, count)| count).sum::<u64>()
    }

    /// How many batches settled as not applied in all: the incarnation new seals are under,
    /// which only rises.
    pub fn refusals(&self) -> u64 {
        self.base + self.ends.iter().map(|&(_, count)| count).sum::<u64>()
    }

    /// A batch sent from group time `time` settled as not applied: what it sealed (at later
    /// times) is void from now on.
    pub fn end(&mut self, time: u64) {
        match self.ends.binary_search_by_key(&time, |&(end, _)| end) {
            Ok(at) => self.ends[at].1 += 1,
            Err(at) => self.ends.insert(at, (time, 1)),
        }
    }

    /// No sealed checksum before group time `oldest` is opened again: ends before it are
    /// behind every time still in use, and count in `base` alone.
    pub fn fold_before(&mut self, oldest: u64) {
        let folded = self.ends.partition_point(|&(end, _)| end < oldest);
        self.base += self.ends.drain(..folded).map(|(_, count)| count).sum::<u64>();
    }
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey(..)")
    }
}

/// `addr ‖ t`: bound to every sealed checksum as associated data, for U (one fixed key) the
/// only binding to its slot.
fn associated_data(addr: SlotAddress, time: u64) -> [u8; 17] {
    let mut out = [0; 17];
    out[..9].copy_from_slice(&addr.to_bytes());
    out[9..].copy_from_slice(&time.to_le_bytes());
    out
}

impl SealKey {
    pub fn new(master: &[u8; 32]) -> Self {
        let prf = |input: &[u8]| *blake3::keyed_hash(master, input).as_bytes();
        SealKey { master: *master, raw: prf(&[1]), nonce: prf(&[2]), incarnations: Incarnations::default() }
    }

    /// The same keys, with H's and C's bound to `incarnations` (the client's record of them).
    pub fn in_incarnations(&self, incarnations: &Incarnations) -> SealKey {
        SealKey { incarnations: incarnations.clone(), ..self.clone() }
    }

    /// κ: `PRF(sk0, 0, addr, t)` for H and C in incarnation 0, `PRF(sk0, 3, addr, t, i)` in
    /// incarnation `i > 0`, `PRF(sk0, 1)` for U. The PRF is keyed BLAKE3; the first input
    /// byte separates the uses, and each use has one input length.
    fn slot_key(&self, addr: SlotAddress, time: u64) -> [u8; 32] {
        if addr.region == Region::Raw {
            return self.raw;
        }
        match self.incarnations.at(time) {
            0 => {
                let mut input = [0; 18];
                input[1..].copy_from_slice(&associated_data(addr, time));
                *blake3::keyed_hash(&self.master, &input).as_bytes()
            }
            incarnation => {
                let mut input = [3; 26];
                input[1..18].copy_from_slice(&associated_data(addr, time));
                input[18..].copy_from_slice(&incarnation.to_le_bytes());
                *blake3::keyed_hash(&self.master, &input).as_bytes()
            }
        }
    }

    /// Seals `sum` for slot `addr` written at `time`. The nonce is synthetic (a keyed hash of
    /// `addr`, `time` and `sum`): a slot rewritten under the same `(addr, t)` with other
    /// content never reuses a nonce with another plaintext (which would leak the plaintexts'
    /// XOR and the Poly1305 key, so forgeries); and sealing stays deterministic, with no RNG.
    pub fn seal(&self, addr: SlotAddress, time: u64, sum: Checksum) -> SealedChecksum {
        self.seal_bytes(addr, time, sum.to_bytes())
    }

    fn seal_bytes(&self, addr: SlotAddress, time: u64, mut text: [u8; 16]) -> SealedChecksum {
        let ad = associated_data(addr, time);
        let mut hasher = blake3::Hasher::new_keyed(&self.nonce);
        hasher.update(&ad).update(&text);
        let nonce: [u8; 24] = hasher.finalize().as_bytes()[..24].try_into().expect("24 bytes");
        let cipher = XChaCha20Poly1305::new(&self.slot_key(addr, time).into());
        let tag = cipher
            .encrypt_inout_detached(&XNonce::from(nonce), &ad, text.as_mut_slice().into())
            .expect("16 bytes are within XChaCha20Poly1305's limits");
        let mut out = [0; SEALED_LEN];
        out[..24].copy_from_slice(&nonce);
        out[24..40].copy_from_slice(&text);
        out[40..].copy_from_slice(&tag);
        SealedChecksum(out)
    }

    /// The checksum sealed for slot `addr` at `time`; an error when it was sealed for
    /// another slot, time or key, or altered. (The nonce needs no recheck: it is an input
    /// of the authenticated decryption.)
    pub fn open(&self, addr: SlotAddress, time: u64, sealed: &SealedChecksum) -> Result<Checksum, OpenError> {
        let (nonce, rest) = sealed.0.split_at(24);
        let (text, tag) = rest.split_at(16);
        let mut text: [u8; 16] = text.try_into().expect("16 bytes");
        let (nonce, tag) = (nonce.try_into().expect("24 bytes"), tag.try_into().expect("16 bytes"));
        let cipher = XChaCha20Poly1305::new(&self.slot_key(addr, time).into());
        cipher
            .decrypt_inout_detached(nonce, &associated_data(addr, time), text.as_mut_slice().into(), tag)
            .map_err(|_| OpenError::Forged)?;
        let rows: [u64; ROWS] =
            std::array::from_fn(|r| u64::from_le_bytes(text[r * 8..r * 8 + 8].try_into().expect("8 bytes")));
        if rows.iter().any(|&v| v >= P) {
            return Err(OpenError::NotCanonical);
        }
        Ok(Checksum(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::field::to_elements;
    use super::*;
    use proptest::prelude::*;

    const SECRET: [u8; 32] = [7; 32];

    /// `M·B` one reduced product at a time.
    fn naive(key: &ChecksumKey, elements: &[u64]) -> Checksum {
        let mut rows = [0; ROWS];
        for (&x, column) in elements.iter().zip(&key.columns) {
            for (row, &m) in rows.iter_mut().zip(column) {
                *row = add(*row, mul(m, x));
            }
        }
        Checksum(rows)
    }

    /// Canonical elements, often at the top of the range where the wide sum carries.
    fn element() -> impl Strategy<Value = u64> {
        prop_oneof![0..P, (P - 1000)..P, Just(P - 1), 0u64..(1 << 56)]
    }

    fn slot(max: usize) -> impl Strategy<Value = Vec<u64>> {
        proptest::collection::vec(element(), 0..max)
    }

    proptest! {
        #[test]
        fn checksum_agrees_with_the_naive_model(x in slot(300)) {
            let key = ChecksumKey::new(&SECRET, 300);
            prop_assert_eq!(key.checksum(&x), naive(&key, &x));
        }

        #[test]
        fn checksum_is_linear(x in slot(80), y in slot(80), a in element(), b in element()) {
            let key = ChecksumKey::new(&SECRET, 80);
            let len = x.len().max(y.len());
            let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
            let mixed: Vec<u64> = (0..len).map(|i| add(mul(a, at(&x, i)), mul(b, at(&y, i)))).collect();
            let (cx, cy) = (key.checksum(&x), key.checksum(&y));
            prop_assert_eq!(key.checksum(&mixed), cx.scale(a) + cy.scale(b));
            prop_assert_eq!(key.checksum(&mixed), Checksum::combine(&[a, b], &[cx, cy]));
        }

        #[test]
        fn checksum_bytes_reads_the_sectors(block in proptest::collection::vec(any::<u8>(), 0..700), extra in 0usize..3) {
            let key = ChecksumKey::new(&SECRET, field::sectors(block.len()) + extra);
            prop_assert_eq!(key.checksum_bytes(&block), key.checksum(&to_elements(&block)));
        }

        /// A group's checksum is its slots' at their positions; U's slots use the first
        /// position, and swapping two slots of a group changes it.
        #[test]
        fn a_group_sums_its_slots_at_their_positions(group in proptest::collection::vec(slot(6), 4)) {
            let key = ChecksumKey::grouped(&SECRET, 6, 2);
            prop_assert_eq!((key.width(), key.slot_width()), (24, 6));
            let flat: Vec<u64> = group.iter().flat_map(|s| {
                let mut s = s.clone();
                s.resize(6, 0);
                s
            }).collect();
            let parts = group.iter().enumerate().fold(Checksum::ZERO, |acc, (j, s)| acc + key.checksum_at(j, s));
            prop_assert_eq!(key.checksum(&flat), parts);
            prop_assert_eq!(key.checksum_at(0, &group[0]), ChecksumKey::new(&SECRET, 6).checksum(&group[0]));
            let mut swapped = flat.clone();
            swapped[..6].copy_from_slice(&flat[6..12]);
            swapped[6..12].copy_from_slice(&flat[..6]);
            prop_assume!(flat[..6] != flat[6..12]);
            prop_assert_ne!(key.checksum(&swapped), key.checksum(&flat));
        }

        #[test]
        fn one_changed_element_changes_the_checksum(x in slot(100), at in any::<prop::sample::Index>(), delta in 1..P) {
            prop_assume!(!x.is_empty());
            let key = ChecksumKey::new(&SECRET, 100);
            let mut y = x.clone();
            let i = at.index(y.len());
            y[i] = add(y[i], delta);
            prop_assert_ne!(key.checksum(&x), key.checksum(&y));
        }

        #[test]
        fn sealed_checksums_open_where_sealed(level in any::<u8>(), index in any::<u64>(), time in any::<u64>(), x in slot(8)) {
            let (key, seal) = (ChecksumKey::new(&SECRET, 8), SealKey::new(&SECRET));
            let sum = key.checksum(&x);
            for region in [Region::Level(level), Region::Coded, Region::Raw] {
                let addr = SlotAddress { region, index };
                let sealed = SealedChecksum::from_bytes(seal.seal(addr, time, sum).to_bytes());
                prop_assert_eq!(seal.open(addr, time, &sealed), Ok(sum));
            }
        }
    }

    #[test]
    fn full_slots_at_the_top_of_the_range_carry_correctly() {
        let key = ChecksumKey::new(&SECRET, 5000);
        let x = vec![P - 1; 5000];
        assert_eq!(key.checksum(&x), naive(&key, &x));
        assert_eq!(key.checksum_bytes(&[0xff; 7 * 5000]), naive(&key, &[(1 << 56) - 1; 5000]));
    }

    /// The matrix is BLAKE3's stream read 8 bytes at a time, entries `≥ p` skipped, column
    /// after column, however many bytes the derivation reads at once (past one page here).
    #[test]
    fn the_matrix_is_the_stream_read_word_by_word() {
        let key = ChecksumKey::new(&SECRET, 700);
        let mut hasher = blake3::Hasher::new_derive_key("vouch por checksum matrix v1");
        hasher.update(&SECRET);
        let mut xof = hasher.finalize_xof();
        let word = || {
            let mut w = [0; 8];
            xof.fill(&mut w);
            Some(u64::from_le_bytes(w))
        };
        let expected: Vec<u64> = std::iter::from_fn(word).filter(|&v| v < P).take(700 * ROWS).collect();
        assert_eq!(key.columns.iter().flatten().copied().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn the_matrix_follows_the_secret_only() {
        let key = ChecksumKey::new(&SECRET, 64);
        assert_eq!(key.columns, ChecksumKey::new(&SECRET, 64).columns);
        assert_eq!(key.columns[..10], ChecksumKey::new(&SECRET, 10).columns[..]);
        assert!(key.columns.iter().flatten().all(|&m| m < P));
        let other = ChecksumKey::new(&[8; 32], 64);
        assert!(key.columns.iter().zip(&other.columns).all(|(a, b)| a[0] != b[0] && a[1] != b[1]));
        let shown = format!("{key:?} {:?}", SealKey::new(&SECRET));
        assert!(!shown.contains(&key.columns[0][0].to_string()) && !shown.contains("7, 7"), "{shown}");
    }

    const TIME: u64 = 1000;

    /// A slot of H and one of U: U's key is fixed, so only the associated data binds it.
    fn slots() -> [SlotAddress; 2] {
        [Region::Level(3), Region::Raw].map(|region| SlotAddress { region, index: 5 })
    }

    #[test]
    fn a_sealed_checksum_opens_only_at_its_slot_and_time_under_its_key() {
        let (seal, sum) = (SealKey::new(&SECRET), Checksum([1, 2]));
        for addr in slots() {
            let sealed = seal.seal(addr, TIME, sum);
            assert_eq!(seal.open(addr, TIME, &sealed), Ok(sum));
            let regions = [Region::Level(3), Region::Level(4), Region::Coded, Region::Raw];
            let moved = regions.map(|region| SlotAddress { region, ..addr }).into_iter().filter(|&a| a != addr);
            let indices = [4, 6].map(|index| SlotAddress { index, ..addr });
            for (other, time) in
                moved.chain(indices).map(|a| (a, TIME)).chain([TIME - 1, TIME + 1, TIME + (1 << 32)].map(|t| (addr, t)))
            {
                assert_eq!(seal.open(other, time, &sealed), Err(OpenError::Forged), "{other:?} at {time}");
            }
            assert_eq!(SealKey::new(&[8; 32]).open(addr, TIME, &sealed), Err(OpenError::Forged));
            for bit in 0..SEALED_LEN * 8 {
                let mut bytes = sealed.to_bytes();
                bytes[bit / 8] ^= 1 << (bit % 8);
                let flipped = SealedChecksum::from_bytes(bytes);
                assert_eq!(seal.open(addr, TIME, &flipped), Err(OpenError::Forged), "{addr:?} bit {bit}");
            }
        }
    }

    #[test]
    fn sealing_is_deterministic_and_nonces_follow_the_content() {
        let seal = SealKey::new(&SECRET);
        for addr in slots() {
            let sealed = seal.seal(addr, TIME, Checksum([1, 2]));
            assert_eq!(seal.seal(addr, TIME, Checksum([1, 2])), sealed);
            assert_ne!(seal.seal(addr, TIME, Checksum([1, 3])).to_bytes()[..24], sealed.to_bytes()[..24]);
        }
    }

    /// The provider refuses a batch from group time 10 after it was handed the batch's
    /// sealed checksums (a level at time 11); the batch sent in its place seals time 11 over
    /// other content. What the refused batch sealed opens under no key the client uses since,
    /// so the two versions of the level cannot be mixed; what was sealed before the refusal
    /// still opens.
    #[test]
    fn a_level_sealed_in_a_refused_batch_does_not_open_after_the_refusal() {
        let addr = SlotAddress { region: Region::Level(2), index: 1 };
        let before = SealKey::new(&SECRET);
        let kept = before.seal(addr, 10, Checksum([5, 6]));
        let refused = before.seal(addr, 11, Checksum([1, 2]));
        let mut incarnations = Incarnations::default();
        incarnations.end(10);
        let after = before.in_incarnations(&incarnations);
        assert_eq!(after.open(addr, 11, &refused), Err(OpenError::Forged), "the refused batch's seal is void");
        let retried = after.seal(addr, 11, Checksum([3, 4]));
        assert_eq!(after.open(addr, 11, &retried), Ok(Checksum([3, 4])));
        assert_eq!(after.open(addr, 10, &kept), Ok(Checksum([5, 6])), "sealed before the refusal");
        // U's key is not the incarnation's: its root binds U's checksums.
        let raw = SlotAddress { region: Region::Raw, index: 1 };
        assert_eq!(after.open(raw, 0, &before.seal(raw, 0, Checksum([7, 8]))), Ok(Checksum([7, 8])));
        // Two refusals from one time: each one's seals are void.
        incarnations.end(10);
        let twice = before.in_incarnations(&incarnations);
        assert_eq!(twice.open(addr, 11, &retried), Err(OpenError::Forged));
        // Folding ends before every time in use keeps every key.
        let mut folded = incarnations.clone();
        folded.fold_before(11);
        assert_eq!((folded.base, folded.ends.as_slice()), (2, &[][..]));
        assert_eq!(incarnations.ends, vec![(10, 2)], "two refusals from one point take one entry");
        assert_eq!(
            before.in_incarnations(&folded).open(addr, 11, &twice.seal(addr, 11, Checksum([1, 1]))),
            Ok(Checksum([1, 1]))
        );
        folded.fold_before(5);
        assert_eq!(folded.at(11), 2);
    }

    #[test]
    fn an_authentic_element_not_below_p_is_refused() {
        let (seal, addr) = (SealKey::new(&SECRET), slots()[0]);
        let sealed = seal.seal_bytes(addr, TIME, [0xff; 16]);
        assert_eq!(seal.open(addr, TIME, &sealed), Err(OpenError::NotCanonical));
    }
}

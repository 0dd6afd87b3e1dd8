//! A batch that re-encodes C (growth, an epoch's end, a re-encode or a shrink) in parts: the
//! client's memory for it is U's checksums, 16 bytes per slot, whatever the log's size.
//!
//! Such a batch reads every sealed checksum of U (57 bytes a slot on the wire) and uploads
//! every sealed checksum of C (112 bytes per slot of U). Held whole, with U's tree and C's
//! code beside them, that was some 500 bytes per slot: 4 GB at 2^23 slots. Here
//!
//! * [`ContextReader`] takes the provider's answer in parts as they arrive: the small head
//!   (the plan's old checksums, proof and levels) whole, then U's sealed checksums one at a
//!   time into a [`RawIntake`], which opens each, keeps its checksum, and checks them all
//!   against U's root at the end with a [`RootBuilder`] (one digest per height);
//! * [`super::client::write_opened`] replays the batch on those checksums and keeps, for
//!   each C the batch builds, the checksums of U it is built from ([`CodedSums`]);
//! * [`Upload`] writes the upload's bytes a part at a time, sealing C as it goes: C's first
//!   half `X = F·u` is transformed in place, sealed and sent, then undone (`u = F⁻¹·X`),
//!   twisted and transformed again into `Y` (CRebuild, Eq. (1)). One buffer, no second copy.
//!
//! Nothing here does I/O: the client feeds bytes in and takes parts out.

use super::batch::{LogState, WriteContext, WriteError, WritePlan};
use super::checksum::{Checksum, ChecksumKey, SealKey, SealedChecksum, ROWS, SEALED_LEN};
use super::code::twist;
use super::heap::encode_slot;
use super::raw_tree::{grown_root, leaf_hash, RootBuilder};
use super::transform::{forward, inverse, scale};
use super::wire::{read_context_head, PorWireError};
use super::{Region, SlotAddress};
use crate::codec::put_varint;
use crate::Digest;

/// U's checksums at the capacity a batch re-encodes C over, opened and checked against U's
/// root: `rows` holds [`ROWS`] elements per slot, in slot order (zeros for a slot never
/// written); `root` is U's root at that capacity (a shrink's is the root of the slots kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedRaw {
    pub rows: Vec<u64>,
    pub root: Digest,
}

impl OpenedRaw {
    /// Slot `index`'s checksum.
    pub fn checksum(&self, index: u64) -> Option<Checksum> {
        let at = index as usize * ROWS;
        let rows = self.rows.get(at..at + ROWS)?;
        Some(Checksum::from_rows(rows.try_into().expect("ROWS elements")))
    }
}

/// U's sealed checksums, taken in slot order as they arrive.
pub struct RawIntake<'k> {
    seal: &'k SealKey,
    /// How many slots the provider sends: U's capacity after growth, before a shrink.
    slots: u64,
    /// U's root over those slots.
    root: Digest,
    /// A shrink keeps the first `2^k` slots; every later one must be free (never written,
    /// or ⊥ under this key).
    keep: Option<(u32, &'k ChecksumKey)>,
    tree: RootBuilder,
    kept_root: Option<Digest>,
    rows: Vec<u64>,
    first_error: Option<WriteError>,
}

impl<'k> RawIntake<'k> {
    /// The intake for `plan` from `state`, or `None` when the plan needs no sealed checksum of
    /// U beyond its own indices.
    pub fn new(
        state: &LogState,
        plan: &WritePlan,
        seal: &'k SealKey,
        sums: &'k ChecksumKey,
    ) -> Result<Option<RawIntake<'k>>, WriteError> {
        let now = state.schedule.log_capacity;
        let (log_slots, root, keep) = match (plan.whole_raw, plan.grow_to) {
            (false, None) => return Ok(None),
            (false, Some(_)) => return Err(WriteError::Shape),
            (true, None) => (now, state.raw_root, None),
            (true, Some(k)) if k >= now => (k, (now..k).fold(state.raw_root, |root, k| grown_root(k, &root)), None),
            (true, Some(k)) => (now, state.raw_root, Some((k, sums))),
        };
        let kept = keep.map_or(log_slots, |(k, _)| k);
        Ok(Some(RawIntake {
            seal,
            slots: 1 << log_slots,
            root,
            keep,
            tree: RootBuilder::new(),
            kept_root: None,
            rows: Vec::with_capacity(ROWS << kept),
            first_error: None,
        }))
    }

    /// How many slots the provider sends.
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// The next slot's sealed checksum (`None`: never written). A checksum that does not open,
    /// or a slot a shrink drops that holds data, is reported by [`RawIntake::finish`], after
    /// the root: a wrong set of checksums is first of all not U's.
    pub fn push(&mut self, sealed: Option<&SealedChecksum>) -> Result<(), WriteError> {
        let index = self.tree.leaves();
        if index >= self.slots {
            return Err(WriteError::Shape);
        }
        self.tree.push(leaf_hash(sealed));
        let sum = match sealed.map(|s| self.seal.open(SlotAddress { region: Region::Raw, index }, 0, s)) {
            None => Checksum::ZERO,
            Some(Ok(sum)) => sum,
            Some(Err(error)) => {
                self.first_error.get_or_insert(WriteError::RawChecksum { index, error });
                Checksum::ZERO
            }
        };
        match self.keep {
            Some((k, sums)) if index >> k != 0 => {
                if sealed.is_some() && sum != sums.checksum(&encode_slot(index, None)) {
                    self.first_error.get_or_insert(WriteError::Occupied(index));
                }
            }
            _ => self.rows.extend(sum.rows()),
        }
        if self.keep.is_some_and(|(k, _)| self.tree.leaves() == 1 << k) {
            self.kept_root = self.tree.root();
        }
        Ok(())
    }

    /// U's checksums, once every slot came, their root is U's and each opened.
    pub fn finish(self) -> Result<OpenedRaw, WriteError> {
        if self.tree.leaves() != self.slots {
            return Err(WriteError::Shape);
        }
        if self.tree.root() != Some(self.root) {
            return Err(WriteError::RawRoot);
        }
        if let Some(error) = self.first_error {
            return Err(error);
        }
        let root = self.kept_root.unwrap_or(self.root);
        Ok(OpenedRaw { rows: self.rows, root })
    }
}

/// Why the provider's answer to a plan is refused while it arrives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// Not the encoding of a context for the plan (malformed).
    #[error(transparent)]
    Wire(#[from] PorWireError),
    /// Well formed, but U's checksums are not the client's (a lie about the log).
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// The provider's answer to a plan ([`WriteContext`]'s bytes), taken in parts as they
/// arrive: the head is kept whole (it is bounded by the plan: [`head_bytes`]), U's sealed
/// checksums go one by one into a [`RawIntake`].
pub struct ContextReader<'k> {
    total: u64,
    received: u64,
    head_limit: u64,
    buf: Vec<u8>,
    phase: Phase<'k>,
}

enum Phase<'k> {
    Head(Option<RawIntake<'k>>),
    Raw { context: WriteContext, intake: RawIntake<'k>, left: u64 },
    Done { context: WriteContext, raw: Option<RawIntake<'k>> },
}

impl<'k> ContextReader<'k> {
    /// A reader of an answer of `total` bytes (as the provider announced it) to `plan`.
    pub fn new(
        state: &LogState,
        plan: &WritePlan,
        total: u64,
        seal: &'k SealKey,
        sums: &'k ChecksumKey,
    ) -> Result<ContextReader<'k>, WriteError> {
        let intake = RawIntake::new(state, plan, seal, sums)?;
        let log_capacity = plan.grow_to.unwrap_or(0).max(state.schedule.log_capacity);
        let head_limit = head_bytes(plan, log_capacity);
        Ok(ContextReader { total, received: 0, head_limit, buf: Vec::new(), phase: Phase::Head(intake) })
    }

    /// Bytes taken so far: the offset of the next part.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Whether the answer has bytes still to come.
    pub fn wants_more(&self) -> bool {
        self.received < self.total
    }

    /// The next part of the answer.
    pub fn feed(&mut self, part: &[u8]) -> Result<(), ContextError> {
        if part.len() as u64 > self.total - self.received {
            return Err(PorWireError::Trailing.into());
        }
        self.received += part.len() as u64;
        self.buf.extend_from_slice(part);
        if let Phase::Head(_) = self.phase {
            if (self.buf.len() as u64) < self.head_limit.min(self.total) {
                return Ok(());
            }
            let Phase::Head(intake) = std::mem::replace(&mut self.phase, Phase::Head(None)) else { unreachable!() };
            let (context, raw_count, used) = read_context_head(&self.buf)?;
            self.buf.drain(..used);
            self.phase = match (raw_count, intake) {
                (None, intake) => Phase::Done { context, raw: intake },
                (Some(count), Some(intake)) if count == intake.slots() => Phase::Raw { context, intake, left: count },
                (Some(_), _) => return Err(WriteError::Shape.into()),
            };
        }
        if let Phase::Raw { intake, left, .. } = &mut self.phase {
            let mut at = 0;
            while *left > 0 {
                let Some(&tag) = self.buf.get(at) else { break };
                let sealed = match tag {
                    0 => None,
                    1 => match self.buf.get(at + 1..at + 1 + SEALED_LEN) {
                        Some(bytes) => Some(SealedChecksum::from_bytes(bytes.try_into().expect("SEALED_LEN bytes"))),
                        None => break,
                    },
                    _ => return Err(PorWireError::Tag.into()),
                };
                intake.push(sealed.as_ref())?;
                at += 1 + sealed.map_or(0, |_| SEALED_LEN);
                *left -= 1;
            }
            self.buf.drain(..at);
        }
        if let Phase::Raw { left: 0, .. } = self.phase {
            let Phase::Raw { context, intake, .. } = std::mem::replace(&mut self.phase, Phase::Head(None)) else {
                unreachable!()
            };
            self.phase = Phase::Done { context, raw: Some(intake) };
        }
        Ok(())
    }

    /// The context's head (its `raw` is `None`) and U's checksums when the plan needs them,
    /// once the whole answer came.
    pub fn finish(self) -> Result<(WriteContext, Option<OpenedRaw>), ContextError> {
        match self.phase {
            _ if self.received != self.total => Err(PorWireError::Codec(crate::codec::CodecError::Truncated).into()),
            Phase::Done { .. } if !self.buf.is_empty() => Err(PorWireError::Trailing.into()),
            Phase::Done { context, raw: None } => Ok((context, None)),
            Phase::Done { context, raw: Some(intake) } => Ok((context, Some(intake.finish()?))),
            Phase::Head(_) | Phase::Raw { .. } => Err(PorWireError::Codec(crate::codec::CodecError::Truncated).into()),
        }
    }
}

/// The most bytes a context's head can take for `plan` at U's capacity `2^log_capacity`:
/// the old checksums of its indices, a proof of at most `k` siblings each, its levels'
/// sealed checksums, and the counts and tags.
pub fn head_bytes(plan: &WritePlan, log_capacity: u32) -> u64 {
    let indices = plan.indices.len() as u64;
    let levels: u64 = plan.levels.iter().map(|&l| 10 + (2u64 << l) * SEALED_LEN as u64).sum();
    30 + indices * (1 + SEALED_LEN as u64) + 10 + indices * u64::from(log_capacity) * 32 + levels + 11
}

/// A C the batch builds, as the checksums of U it is built from (CRebuild, on checksums):
/// sealed only as it is uploaded ([`Upload`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodedSums {
    pub log_capacity: u32,
    pub time: u64,
    /// U's checksums, [`ROWS`] elements per slot.
    pub rows: Vec<u64>,
}

impl CodedSums {
    /// How many sealed checksums C has: two per slot of U.
    pub fn sealed_count(&self) -> u64 {
        2 << self.log_capacity
    }

    /// C's sealed checksums in order, a part of at most `per_part` at a time.
    pub fn sealed_parts(self, seal: &SealKey, per_part: usize) -> SealedParts<'_> {
        SealedParts { seal, per_part: per_part.max(1), coded: self, next: 0, half: Half::Raw }
    }

    /// All of C's sealed checksums at once (small logs, tests).
    pub fn seal_all(self, seal: &SealKey) -> Vec<SealedChecksum> {
        self.sealed_parts(seal, usize::MAX).flatten().collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Half {
    /// The buffer holds U's checksums.
    Raw,
    /// It holds `X = F·u`.
    X,
    /// It holds `Y = F·(D·u)`.
    Y,
}

/// C's sealed checksums a part at a time: X's (slots `0..n`), then Y's (`n..2n`).
pub struct SealedParts<'s> {
    seal: &'s SealKey,
    per_part: usize,
    coded: CodedSums,
    next: u64,
    half: Half,
}

impl Iterator for SealedParts<'_> {
    type Item = Vec<SealedChecksum>;

    fn next(&mut self) -> Option<Vec<SealedChecksum>> {
        let n = 1u64 << self.coded.log_capacity;
        let rows = &mut self.coded.rows;
        match (self.half, self.next) {
            (Half::Raw, _) => {
                forward(rows, ROWS);
                self.half = Half::X;
            }
            (Half::X, next) if next == n => {
                // Undo X (exact in Z_p), twist each slot, transform again (Eq. (1)'s D·F).
                inverse(rows, ROWS);
                for (s, slot) in rows.chunks_exact_mut(ROWS).enumerate() {
                    scale(slot, twist(self.coded.log_capacity, s as u64));
                }
                forward(rows, ROWS);
                self.half = Half::Y;
            }
            (Half::Y, next) if next == 2 * n => return None,
            _ => {}
        }
        let first = self.next % n;
        let count = (n - first).min(self.per_part as u64);
        let part = rows[(first as usize) * ROWS..((first + count) as usize) * ROWS]
            .chunks_exact(ROWS)
            .enumerate()
            .map(|(i, r)| {
                let sum = Checksum::from_rows(r.try_into().expect("ROWS elements"));
                let addr = SlotAddress { region: Region::Coded, index: self.next + i as u64 };
                self.seal.seal(addr, self.coded.time, sum)
            })
            .collect();
        self.next += count;
        Some(part)
    }
}

/// A batch's upload in parts of `part_bytes` (the last one shorter): the same bytes as
/// [`super::client::Written::upload_bytes`], with C sealed as it is written.
pub struct Upload<'s> {
    part_bytes: usize,
    pending: Vec<u8>,
    coded: std::vec::IntoIter<CodedSums>,
    current: Option<SealedParts<'s>>,
    seal: &'s SealKey,
}

/// Sealed checksums sealed per step of an [`Upload`]: bounded, small next to a part.
const SEALED_PER_STEP: usize = 4096;

impl<'s> Upload<'s> {
    /// The upload of `raw` (each written index's new sealed checksum), `levels` and the Cs.
    pub fn new(
        raw: &[(u64, SealedChecksum)],
        levels: &[(u32, Vec<SealedChecksum>)],
        coded: Vec<CodedSums>,
        seal: &'s SealKey,
        part_bytes: usize,
    ) -> Upload<'s> {
        let mut pending = Vec::new();
        put_varint(&mut pending, raw.len() as u64);
        for (index, sealed) in raw {
            put_varint(&mut pending, *index);
            pending.extend_from_slice(&sealed.to_bytes());
        }
        put_varint(&mut pending, levels.len() as u64);
        for (level, sealed) in levels {
            pending.push(*level as u8);
            put_varint(&mut pending, sealed.len() as u64);
            sealed.iter().for_each(|s| pending.extend_from_slice(&s.to_bytes()));
        }
        put_varint(&mut pending, coded.len() as u64);
        Upload { part_bytes: part_bytes.max(1), pending, coded: coded.into_iter(), current: None, seal }
    }
}

impl Iterator for Upload<'_> {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        while self.pending.len() < self.part_bytes {
            if let Some(part) = self.current.as_mut().and_then(Iterator::next) {
                part.iter().for_each(|s| self.pending.extend_from_slice(&s.to_bytes()));
            } else if let Some(coded) = self.coded.next() {
                put_varint(&mut self.pending, coded.sealed_count());
                self.current = Some(coded.sealed_parts(self.seal, SEALED_PER_STEP));
            } else {
                break;
            }
        }
        if self.pending.is_empty() {
            return None;
        }
        let rest = self.pending.split_off(self.part_bytes.min(self.pending.len()));
        Some(std::mem::replace(&mut self.pending, rest))
    }
}

// Keys are never printed: each shows how far it got.
impl std::fmt::Debug for RawIntake<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawIntake").field("slots", &self.slots).field("taken", &self.tree.leaves()).finish()
    }
}

impl std::fmt::Debug for ContextReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextReader").field("total", &self.total).field("received", &self.received).finish()
    }
}

impl std::fmt::Debug for SealedParts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedParts").field("time", &self.coded.time).field("next", &self.next).finish()
    }
}

impl std::fmt::Debug for Upload<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upload").field("part_bytes", &self.part_bytes).field("pending", &self.pending.len()).finish()
    }
}

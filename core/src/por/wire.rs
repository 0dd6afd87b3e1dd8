//! Canonical byte layouts of what client and provider exchange for the PoR log: write plans,
//! contexts, uploads, reads of U and regions for repair.
//!
//! Counts are canonical varints ([`crate::codec`]); a sealed checksum is its 56 bytes, an
//! element of a level or of C 8 bytes little-endian and below p, an element of U (a slot as
//! written: a 7-byte sector or a header below 2^56) 7 bytes, so that a 4 KiB slot costs 4116
//! bytes on the wire, not 4704; an optional value a tag byte (0 absent, 1 present). Every count is checked against the bytes left before anything is allocated, and
//! trailing bytes are refused, so one message has one encoding and a hostile count cannot
//! make the reader allocate.

use super::batch::{LogState, RawRead, WriteContext, WritePlan, Written};
use super::checksum::{Checksum, SealedChecksum, SEALED_LEN};
use super::code::Schedule;
use super::field::{P, SECTOR_BYTES};
use super::raw_tree::{RawProof, MAX_LOG_CAPACITY};
use super::repair::RegionRead;
use crate::codec::{put_varint, CodecError, Reader};

/// Bytes that are no PoR message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PorWireError {
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error("a count exceeds the bytes that follow it")]
    Count,
    #[error("an option tag is neither 0 nor 1")]
    Tag,
    #[error("an element is not below p")]
    NotCanonical,
    #[error("a capacity or level is out of range")]
    Range,
    #[error("bytes after the end of the message")]
    Trailing,
}

struct Out(Vec<u8>);

impl Out {
    fn count(&mut self, n: usize) {
        put_varint(&mut self.0, n as u64);
    }
    fn sealed(&mut self, s: &SealedChecksum) {
        self.0.extend_from_slice(&s.to_bytes());
    }
    fn sealed_list(&mut self, list: &[SealedChecksum]) {
        self.count(list.len());
        list.iter().for_each(|s| self.sealed(s));
    }
    fn optional_sealed_list(&mut self, list: &[Option<SealedChecksum>]) {
        self.count(list.len());
        for s in list {
            self.0.push(u8::from(s.is_some()));
            s.iter().for_each(|s| self.sealed(s));
        }
    }
    fn elements(&mut self, list: &[u64]) {
        self.count(list.len());
        list.iter().for_each(|v| self.0.extend_from_slice(&v.to_le_bytes()));
    }
    /// # Panics
    /// When an element is not below 2^56 (U's slots are checked by `client::write`).
    fn sectors(&mut self, list: &[u64]) {
        self.count(list.len());
        for v in list {
            assert!(v >> 56 == 0, "U's elements are sectors");
            self.0.extend_from_slice(&v.to_le_bytes()[..SECTOR_BYTES]);
        }
    }
    fn proof(&mut self, proof: &RawProof) {
        self.count(proof.siblings.len());
        proof.siblings.iter().for_each(|d| self.0.extend_from_slice(&d.0));
    }
}

struct In<'a>(Reader<'a>);

impl In<'_> {
    /// A count of items of at least `min` bytes each that the input can still hold.
    fn count(&mut self, min: usize) -> Result<usize, PorWireError> {
        let n = self.0.varint()?;
        if n.saturating_mul(min as u64) > self.0.remaining() as u64 {
            return Err(PorWireError::Count);
        }
        Ok(n as usize)
    }
    fn tag(&mut self) -> Result<bool, PorWireError> {
        match self.0.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(PorWireError::Tag),
        }
    }
    fn sealed(&mut self) -> Result<SealedChecksum, PorWireError> {
        let bytes = self.0.bytes(SEALED_LEN)?;
        Ok(SealedChecksum::from_bytes(bytes.try_into().expect("SEALED_LEN bytes")))
    }
    fn sealed_list(&mut self) -> Result<Vec<SealedChecksum>, PorWireError> {
        let n = self.count(SEALED_LEN)?;
        (0..n).map(|_| self.sealed()).collect()
    }
    fn optional_sealed_list(&mut self) -> Result<Vec<Option<SealedChecksum>>, PorWireError> {
        let n = self.count(1)?;
        (0..n).map(|_| if self.tag()? { self.sealed().map(Some) } else { Ok(None) }).collect()
    }
    fn elements(&mut self) -> Result<Vec<u64>, PorWireError> {
        let n = self.count(8)?;
        let out: Vec<u64> = (0..n).map(|_| self.0.u64_le()).collect::<Result<_, _>>()?;
        if out.iter().any(|&v| v >= P) {
            return Err(PorWireError::NotCanonical);
        }
        Ok(out)
    }
    fn sectors(&mut self) -> Result<Vec<u64>, PorWireError> {
        let n = self.count(SECTOR_BYTES)?;
        (0..n)
            .map(|_| {
                let mut word = [0; 8];
                word[..SECTOR_BYTES].copy_from_slice(self.0.bytes(SECTOR_BYTES)?);
                Ok(u64::from_le_bytes(word))
            })
            .collect()
    }
    fn proof(&mut self) -> Result<RawProof, PorWireError> {
        let n = self.count(32)?;
        Ok(RawProof { siblings: (0..n).map(|_| self.0.digest()).collect::<Result<_, _>>()? })
    }
    fn level(&mut self) -> Result<u32, PorWireError> {
        let level = u32::from(self.0.u8()?);
        if level >= MAX_LOG_CAPACITY {
            return Err(PorWireError::Range);
        }
        Ok(level)
    }
    fn end<T>(self, value: T) -> Result<T, PorWireError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(PorWireError::Trailing)
        }
    }
}

fn decode<T>(bytes: &[u8], read: impl FnOnce(&mut In) -> Result<T, PorWireError>) -> Result<T, PorWireError> {
    let mut input = In(Reader::new(bytes));
    let value = read(&mut input)?;
    input.end(value)
}

impl WritePlan {
    /// `grow_to:u8 (0: none, else k + 1) || whole_raw:u8 || flush:u8 || count || indices (varints) ||
    /// count || levels (u8)`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out =
            Out(vec![self.grow_to.map_or(0, |k| k as u8 + 1), u8::from(self.whole_raw), u8::from(self.flush)]);
        out.count(self.indices.len());
        self.indices.iter().for_each(|&i| put_varint(&mut out.0, i));
        out.count(self.levels.len());
        out.0.extend(self.levels.iter().map(|&l| l as u8));
        out.0
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<WritePlan, PorWireError> {
        decode(bytes, |r| {
            let grow_to = match r.0.u8()? {
                0 => None,
                k if u32::from(k) <= MAX_LOG_CAPACITY + 1 => Some(u32::from(k) - 1),
                _ => return Err(PorWireError::Range),
            };
            let whole_raw = r.tag()?;
            let flush = r.tag()?;
            let n = r.count(1)?;
            let indices = (0..n).map(|_| r.0.varint()).collect::<Result<_, _>>()?;
            let n = r.count(1)?;
            let levels = (0..n).map(|_| r.level()).collect::<Result<_, _>>()?;
            Ok(WritePlan { grow_to, indices, levels, whole_raw, flush })
        })
    }
}

impl WriteContext {
    /// `old (optional sealed list) || proof || count || level sealed lists || optional U`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Out(Vec::new());
        out.optional_sealed_list(&self.old);
        out.proof(&self.proof);
        out.count(self.levels.len());
        self.levels.iter().for_each(|l| out.sealed_list(l));
        out.0.push(u8::from(self.raw.is_some()));
        self.raw.iter().for_each(|raw| out.optional_sealed_list(raw));
        out.0
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<WriteContext, PorWireError> {
        decode(bytes, |r| {
            let old = r.optional_sealed_list()?;
            let proof = r.proof()?;
            let n = r.count(1)?;
            let levels = (0..n).map(|_| r.sealed_list()).collect::<Result<_, _>>()?;
            let raw = if r.tag()? { Some(r.optional_sealed_list()?) } else { None };
            Ok(WriteContext { old, proof, levels, raw })
        })
    }
}

/// The head of a [`WriteContext`]'s bytes (the context without U, whose `raw` is `None`),
/// how many sealed checksums of U follow it (`None`: the context has no U), and how many
/// bytes the head took. The count is not checked against the bytes given: they may be only
/// the first part of a long answer ([`super::stream::ContextReader`]).
pub(crate) fn read_context_head(bytes: &[u8]) -> Result<(WriteContext, Option<u64>, usize), PorWireError> {
    let mut r = In(Reader::new(bytes));
    let old = r.optional_sealed_list()?;
    let proof = r.proof()?;
    let n = r.count(1)?;
    let levels = (0..n).map(|_| r.sealed_list()).collect::<Result<_, _>>()?;
    let raw = if r.tag()? { Some(r.0.varint()?) } else { None };
    Ok((WriteContext { old, proof, levels, raw: None }, raw, bytes.len() - r.0.remaining()))
}

impl Written {
    /// The upload without the client's next state: `count || (index varint, sealed) ||
    /// count || (level:u8, sealed list) || count || C sealed list`.
    pub fn upload_bytes(&self) -> Vec<u8> {
        let mut out = Out(Vec::new());
        out.count(self.raw.len());
        for (index, sealed) in &self.raw {
            put_varint(&mut out.0, *index);
            out.sealed(sealed);
        }
        out.count(self.levels.len());
        for (level, sealed) in &self.levels {
            out.0.push(*level as u8);
            out.sealed_list(sealed);
        }
        out.count(self.coded.len());
        self.coded.iter().for_each(|c| out.sealed_list(c));
        out.0
    }

    /// The upload as the provider reads it; `state` is the provider's own business (it keeps
    /// its schedule), so it is filled with the schedule given.
    pub fn from_upload_bytes(bytes: &[u8], schedule: Schedule) -> Result<Written, PorWireError> {
        decode(bytes, |r| {
            let n = r.count(1 + SEALED_LEN)?;
            let raw = (0..n).map(|_| Ok((r.0.varint()?, r.sealed()?))).collect::<Result<_, PorWireError>>()?;
            let n = r.count(2)?;
            let levels = (0..n).map(|_| Ok((r.level()?, r.sealed_list()?))).collect::<Result<_, PorWireError>>()?;
            let n = r.count(1)?;
            let coded = (0..n).map(|_| r.sealed_list()).collect::<Result<_, PorWireError>>()?;
            let state = LogState { schedule, raw_root: crate::Digest::ZERO, pending: Checksum::ZERO };
            Ok(Written { state, raw, levels, coded })
        })
    }
}

impl RawRead {
    /// `sectors || optional sealed list || proof`.
    ///
    /// # Panics
    /// When a slot element is not below 2^56 (not a slot of U).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Out(Vec::new());
        out.sectors(&self.slots);
        out.optional_sealed_list(&self.sealed);
        out.proof(&self.proof);
        out.0
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<RawRead, PorWireError> {
        decode(bytes, |r| Ok(RawRead { slots: r.sectors()?, sealed: r.optional_sealed_list()?, proof: r.proof()? }))
    }
}

impl RegionRead {
    /// `count || (tag, elements) per slot || sealed list`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Out(Vec::new());
        out.count(self.slots.len());
        for slot in &self.slots {
            out.0.push(u8::from(slot.is_some()));
            slot.iter().for_each(|s| out.elements(s));
        }
        out.sealed_list(&self.sealed);
        out.0
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<RegionRead, PorWireError> {
        decode(bytes, |r| {
            let n = r.count(1)?;
            let slots =
                (0..n).map(|_| if r.tag()? { r.elements().map(Some) } else { Ok(None) }).collect::<Result<_, _>>()?;
            Ok(RegionRead { slots, sealed: r.sealed_list()? })
        })
    }
}

/// A list of sealed checksums (C's at a log's creation): `count || sealed`.
pub fn sealed_list_to_bytes(list: &[SealedChecksum]) -> Vec<u8> {
    let mut out = Out(Vec::new());
    out.sealed_list(list);
    out.0
}

pub fn sealed_list_from_bytes(bytes: &[u8]) -> Result<Vec<SealedChecksum>, PorWireError> {
    decode(bytes, |r| r.sealed_list())
}

/// U's slots as sent in a write: `sectors` (flat).
///
/// # Panics
/// When an element is not below 2^56 (not a slot of U).
pub fn slots_to_bytes(slots: &[u64]) -> Vec<u8> {
    let mut out = Out(Vec::new());
    out.sectors(slots);
    out.0
}

pub fn slots_from_bytes(bytes: &[u8]) -> Result<Vec<u64>, PorWireError> {
    decode(bytes, |r| r.sectors())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz_targets::reference_por_messages;

    #[test]
    fn messages_round_trip() {
        let m = reference_por_messages();
        assert_eq!(WritePlan::from_bytes(&m.plan.to_bytes()), Ok(m.plan.clone()));
        assert_eq!(WriteContext::from_bytes(&m.context.to_bytes()), Ok(m.context.clone()));
        let upload = Written::from_upload_bytes(&m.written.upload_bytes(), m.written.state.schedule).unwrap();
        assert_eq!((&upload.raw, &upload.levels, &upload.coded), (&m.written.raw, &m.written.levels, &m.written.coded));
        assert_eq!(RawRead::from_bytes(&m.read.to_bytes()), Ok(m.read.clone()));
        assert_eq!(RegionRead::from_bytes(&m.region.to_bytes()), Ok(m.region.clone()));
        assert_eq!(slots_from_bytes(&slots_to_bytes(&m.slots)), Ok(m.slots.clone()));
        let coded = m.written.coded[0].clone();
        assert_eq!(sealed_list_from_bytes(&sealed_list_to_bytes(&coded)), Ok(coded));
        assert!(m.context.raw.is_some() && !m.written.coded.is_empty(), "the reference exercises every option");
        assert!(m.region.slots.iter().any(Option::is_none));
    }

    #[test]
    fn hostile_bytes_are_refused_without_allocating() {
        let m = reference_por_messages();
        // A count of 2^62 items: refused by length, never allocated.
        let mut huge = Vec::new();
        put_varint(&mut huge, 1 << 62);
        assert_eq!(RawRead::from_bytes(&huge), Err(PorWireError::Count));
        assert_eq!(RegionRead::from_bytes(&huge), Err(PorWireError::Count));
        assert_eq!(slots_from_bytes(&huge), Err(PorWireError::Count));
        let mut trailing = m.plan.to_bytes();
        trailing.push(0);
        assert_eq!(WritePlan::from_bytes(&trailing), Err(PorWireError::Trailing));
        let mut tag = m.context.to_bytes();
        tag[1] = 2; // the first old checksum's tag
        assert_eq!(WriteContext::from_bytes(&tag), Err(PorWireError::Tag));
        let mut region = Vec::new();
        put_varint(&mut region, 1);
        region.push(1);
        region.extend_from_slice(&slots_to_bytes(&[0])[..1]);
        region.extend_from_slice(&P.to_le_bytes());
        put_varint(&mut region, 0);
        assert_eq!(RegionRead::from_bytes(&region), Err(PorWireError::NotCanonical));
        let mut grow = m.plan.to_bytes();
        grow[0] = 41;
        assert_eq!(WritePlan::from_bytes(&grow), Err(PorWireError::Range));
        let bytes = m.written.upload_bytes();
        for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            assert!(Written::from_upload_bytes(&bytes[..cut], m.written.state.schedule).is_err());
        }
    }
}

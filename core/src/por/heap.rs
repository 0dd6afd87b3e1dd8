//! The slot heap: how vouch's variable-size blocks fit the PoR log's fixed-size slots.
//!
//! The paper's PoR stores fixed-size blocks at addresses 0..n (the buffer U); vouch's files
//! are FlexLists of variable-size, content-defined blocks with inserts and deletes anywhere.
//! The two meet in a heap of fixed-size **slots** beneath the FlexList:
//!
//! * A block of `len` bytes occupies `⌈len / SLOT_DATA_BYTES⌉` consecutive slots of U (at
//!   least one). Each slot holds up to [`SLOT_DATA_BYTES`] of the block, as 7-byte sectors
//!   (field elements), after a two-element header: the slot's own U index + 1, and its kind
//!   and payload length. A slot written to U is also one write of the PoR log (HAdd): it
//!   enters level 0 of H with its header, so every slot of H and C says where in U it belongs
//!   and repair can replay the levels onto the U decoded from C.
//! * **Insert**: the blocks an edit adds are written to fresh slots; nothing else moves. An
//!   edit in the middle of a 1 GB file costs the PoR writes of the blocks it touches, never a
//!   rewrite of the rest: the FlexList still orders the file, the heap only keeps its blocks.
//! * **Delete** (App. A.3): a removed block's slots are overwritten with ⊥ ([`SlotKind::Deleted`]),
//!   which is a PoR write like any other, so the log and C stop carrying the data (at their
//!   next rebuilds). A ⊥ slot is free: a later insert may take it, once the client has checked
//!   against U's own checksum that it is ⊥ ([`super::client::check_free`]), so U grows only
//!   when the slots in use do. When every slot from some power of two on is free, U shrinks
//!   to the slots below it ([`super::client::plan_shrink`], App. A.3's consolidation).
//! * **Which slots hold a block** is the provider's index, not the client's state: the client
//!   reads the slots the provider names, checks each against U's tree
//!   ([`super::raw_tree`]) and its sealed checksum, checks the headers (index, kind, lengths:
//!   [`join_block`]), and checks the joined bytes against the block's digest in the FlexList.
//!   A provider that names the wrong slots is caught by that last check.
//!
//! Empty slots (never written) are all zeros, so a fresh U and its code C are zeros too.

use super::field::{from_elements, to_elements, SECTOR_BYTES};

/// Bytes of block data per slot (the paper's 4 KB block).
pub const SLOT_DATA_BYTES: usize = 4096;
/// Elements of block data per slot.
pub const DATA_ELEMENTS: usize = SLOT_DATA_BYTES.div_ceil(SECTOR_BYTES);
/// Header elements: U index + 1, then kind and payload length.
pub const HEADER_ELEMENTS: usize = 2;
/// Elements per slot: every slot of U, H and C has this width.
pub const SLOT_WIDTH: usize = HEADER_ELEMENTS + DATA_ELEMENTS;

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// Part of a block: its payload has up to `SLOT_DATA_BYTES` bytes (none for an empty block).
    Data,
    /// ⊥: the block it held was deleted.
    Deleted,
}

impl SlotKind {
    fn code(self) -> u64 {
        match self {
            SlotKind::Data => 1,
            SlotKind::Deleted => 2,
        }
    }
}

/// A slot read back and checked for shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Never written.
    Empty,
    /// Written at U index `index`.
    Written { index: u64, kind: SlotKind, payload: Vec<u8> },
}

/// A slot whose elements are no encoding of [`encode_slot`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    #[error("a slot has {0} elements, not {SLOT_WIDTH}")]
    Width(usize),
    #[error("the slot's header is malformed")]
    Header,
    #[error("the slot's payload is not a canonical encoding of its length")]
    Payload,
    #[error("the slot says it belongs at U index {got}, not {want}")]
    Index { got: u64, want: u64 },
    #[error("the slots of a block do not hold a block of {0} bytes")]
    Block(u64),
}

/// The slots a block of `len` bytes occupies.
pub fn slots_for(len: u64) -> u64 {
    len.div_ceil(SLOT_DATA_BYTES as u64).max(1)
}

/// The elements of slot `index` holding `payload` (at most [`SLOT_DATA_BYTES`]), or ⊥ when
/// `payload` is `None`.
///
/// # Panics
/// When the payload is too long or the index is beyond 2^56 - 2 (a caller's bug).
pub fn encode_slot(index: u64, payload: Option<&[u8]>) -> Vec<u64> {
    assert!(index < (1 << 56) - 1, "U index within a sector");
    let mut out = Vec::with_capacity(SLOT_WIDTH);
    let (kind, bytes) = match payload {
        Some(bytes) => (SlotKind::Data, bytes),
        None => (SlotKind::Deleted, &[][..]),
    };
    assert!(bytes.len() <= SLOT_DATA_BYTES, "a slot's payload fits the slot");
    out.push(index + 1);
    out.push(kind.code() << 32 | bytes.len() as u64);
    out.extend(to_elements(bytes));
    out.resize(SLOT_WIDTH, 0);
    out
}

/// Whether `elements` are exactly ⊥ at U index `index` ([`encode_slot`] with no payload),
/// without decoding a payload: a data slot is told apart by its second element.
pub fn is_deleted_slot(index: u64, elements: &[u64]) -> bool {
    elements.len() == SLOT_WIDTH
        && elements[1] == SlotKind::Deleted.code() << 32
        && elements[0] == index.wrapping_add(1)
        && elements[HEADER_ELEMENTS..].iter().all(|&e| e == 0)
}

/// Reads a slot's elements; `want` is the U index the slot must say it has (every slot of U,
/// and every slot repair decodes, is checked against where it is).
pub fn decode_slot(elements: &[u64], want: Option<u64>) -> Result<Slot, SlotError> {
    if elements.len() != SLOT_WIDTH {
        return Err(SlotError::Width(elements.len()));
    }
    if elements.iter().all(|&e| e == 0) {
        return Ok(Slot::Empty);
    }
    let (index, meta) = (elements[0], elements[1]);
    let len = (meta & 0xffff_ffff) as usize;
    let kind = match meta >> 32 {
        1 if len <= SLOT_DATA_BYTES => SlotKind::Data,
        2 if len == 0 => SlotKind::Deleted,
        _ => return Err(SlotError::Header),
    };
    let index = index.checked_sub(1).ok_or(SlotError::Header)?;
    if let Some(want) = want.filter(|&w| w != index) {
        return Err(SlotError::Index { got: index, want });
    }
    let data = &elements[HEADER_ELEMENTS..];
    let sectors = len.div_ceil(SECTOR_BYTES);
    let payload = from_elements(&data[..sectors], len).ok_or(SlotError::Payload)?;
    // Canonical: padding is zero, so one payload has one encoding.
    if data[sectors..].iter().any(|&e| e != 0) || to_elements(&payload) != data[..sectors] {
        return Err(SlotError::Payload);
    }
    Ok(Slot::Written { index, kind, payload })
}

/// Slot `from`'s elements as slot `to`'s: the same kind and payload, the header naming `to`
/// (a consolidation moving a copy down, App. A.3). Only a data slot that says it is at `from`
/// moves.
pub fn moved_slot(elements: &[u64], from: u64, to: u64) -> Result<Vec<u64>, SlotError> {
    match decode_slot(elements, Some(from))? {
        Slot::Written { kind: SlotKind::Data, .. } => {}
        _ => return Err(SlotError::Header),
    }
    assert!(to < (1 << 56) - 1, "U index within a sector");
    let mut out = elements.to_vec();
    out[0] = to + 1;
    Ok(out)
}

/// The slots of a block written at U indices `first..`: flat, [`slots_for`] slots of
/// [`SLOT_WIDTH`] elements.
pub fn split_block(first: u64, block: &[u8]) -> Vec<u64> {
    let mut out = Vec::with_capacity(slots_for(block.len() as u64) as usize * SLOT_WIDTH);
    if block.is_empty() {
        out.extend(encode_slot(first, Some(&[])));
    }
    for (i, chunk) in block.chunks(SLOT_DATA_BYTES).enumerate() {
        out.extend(encode_slot(first + i as u64, Some(chunk)));
    }
    out
}

/// The block of `len` bytes from its slots at U indices `first..` (flat elements). Every slot
/// must be data at its own index, every slot but the last full, and the lengths must add up.
pub fn join_block(first: u64, len: u64, slots: &[u64]) -> Result<Vec<u8>, SlotError> {
    let count = slots_for(len);
    if slots.len() as u64 != count * SLOT_WIDTH as u64 {
        return Err(SlotError::Block(len));
    }
    let mut out = Vec::with_capacity(len as usize);
    for (i, slot) in slots.chunks_exact(SLOT_WIDTH).enumerate() {
        match decode_slot(slot, Some(first + i as u64))? {
            Slot::Written { kind: SlotKind::Data, payload, .. } => {
                let want = (len - out.len() as u64).min(SLOT_DATA_BYTES as u64);
                if payload.len() as u64 != want {
                    return Err(SlotError::Block(len));
                }
                out.extend_from_slice(&payload);
            }
            _ => return Err(SlotError::Block(len)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn blocks_round_trip_through_their_slots(
            first in 0u64..1 << 40,
            block in proptest::collection::vec(any::<u8>(), 0..3 * SLOT_DATA_BYTES + 5),
        ) {
            let slots = split_block(first, &block);
            prop_assert_eq!(slots.len() as u64, slots_for(block.len() as u64) * SLOT_WIDTH as u64);
            prop_assert!(slots.iter().all(|&e| e >> 56 == 0), "every element is a sector");
            prop_assert_eq!(join_block(first, block.len() as u64, &slots).unwrap(), block.clone());
            // Moved slot by slot, they are the block at its new place.
            let moved: Vec<u64> = slots
                .chunks(SLOT_WIDTH)
                .enumerate()
                .flat_map(|(i, s)| moved_slot(s, first + i as u64, 7 + i as u64).unwrap())
                .collect();
            prop_assert_eq!(moved, split_block(7, &block));
            prop_assert!(moved_slot(&slots[..SLOT_WIDTH], first + 1, 7).is_err());
            prop_assert!(moved_slot(&encode_slot(first, None), first, 7).is_err(), "⊥ does not move");
            // The same slots at another place, or for another length, are refused.
            prop_assert!(join_block(first + 1, block.len() as u64, &slots).is_err());
            prop_assert!(join_block(first, block.len() as u64 + 1, &slots).is_err());
            if !block.is_empty() {
                prop_assert!(join_block(first, block.len() as u64 - 1, &slots).is_err());
            }
        }
    }

    #[test]
    fn deleted_and_empty_slots_are_what_they_say() {
        let deleted = encode_slot(7, None);
        assert_eq!(
            decode_slot(&deleted, Some(7)),
            Ok(Slot::Written { index: 7, kind: SlotKind::Deleted, payload: vec![] })
        );
        assert!(is_deleted_slot(7, &encode_slot(7, None)));
        assert!(!is_deleted_slot(8, &encode_slot(7, None)), "another index");
        assert!(!is_deleted_slot(7, &encode_slot(7, Some(b""))), "empty data is data");
        let mut padded = encode_slot(7, None);
        padded[SLOT_WIDTH - 1] = 1;
        assert!(!is_deleted_slot(7, &padded), "not canonical");
        assert_eq!(decode_slot(&vec![0; SLOT_WIDTH], Some(3)), Ok(Slot::Empty));
        // ⊥ in place of a block's slot is not the block.
        assert_eq!(join_block(7, 10, &deleted), Err(SlotError::Block(10)));
        assert_eq!(decode_slot(&deleted, Some(8)), Err(SlotError::Index { got: 7, want: 8 }));
    }

    #[test]
    fn malformed_slots_are_refused() {
        let good = encode_slot(2, Some(b"hello"));
        let wrong = |f: &dyn Fn(&mut Vec<u64>)| {
            let mut s = good.clone();
            f(&mut s);
            decode_slot(&s, Some(2)).unwrap_err()
        };
        assert_eq!(wrong(&|s| s[1] = 3 << 32 | 5), SlotError::Header);
        assert_eq!(wrong(&|s| s[1] = 1 << 32 | (SLOT_DATA_BYTES as u64 + 1)), SlotError::Header);
        assert_eq!(wrong(&|s| s[1] = 2 << 32 | 5), SlotError::Header);
        assert_eq!(wrong(&|s| s[0] = 0), SlotError::Header);
        assert_eq!(wrong(&|s| s[2] |= 1 << 60), SlotError::Payload);
        // Bytes beyond the length, in the last sector or after it.
        assert_eq!(wrong(&|s| s[2] |= 0xff << 40), SlotError::Payload);
        assert_eq!(wrong(&|s| s[SLOT_WIDTH - 1] = 1), SlotError::Payload);
        assert_eq!(decode_slot(&good[1..], None), Err(SlotError::Width(SLOT_WIDTH - 1)));
    }
}

//! Dynamic proofs of retrievability (paper 002, Shi–Stefanov–Papamanthou): the pure part.
//!
//! Built so far:
//! * [`field`]: Z_p for p = 2^64 - 2^32 + 1 and why (Sec. 4.6);
//! * [`transform`]: Fig. 4's `mix`, the butterfly network of Fig. 3 and its inverse;
//! * [`code`]: Eq. (1), HAdd's [`code::Schedule`] with Sec. 6.1's grouping (a block of H is
//!   a group of writes, so H costs one sealed checksum per group), HRebuildX / HRebuildY
//!   ([`code::rebuild_level`]) and CRebuild ([`code::encode`]);
//! * [`decode`]: any half of a level's slots recovers its blocks (Lemma 1);
//! * [`build`]: Sec. 6.1's deamortization: a level's rebuild as merges whose butterflies can
//!   be done a range at a time, and a block of a level still being built;
//! * [`checksum`]: homomorphic checksums `σ = M·B` (Sec. 5.3) and their sealed form under
//!   one-time keys bound to a slot's address and write time (Sec. 5.4);
//! * [`replay`]: the client's replay of every rebuild on sealed checksums (Sec. 5.4), so the
//!   server can rebuild H and C itself;
//! * [`audit`]: aggregated audits, one part per filled level and one for C (Sec. 5.5);
//! * [`raw_tree`]: U's authenticated structure, a Merkle tree over its sealed checksums;
//! * [`heap`]: the slot heap beneath FlexList: how variable-size blocks occupy fixed-size
//!   slots, inserts into free or fresh slots and deletes as ⊥ (App. A.3), and
//!   [`client::check_free`], which lets a new copy reuse ⊥ slots only;
//! * [`client`] and [`provider`]: a batch of writes end to end (Sec. 6.1's batching), growth
//!   of U and its shrinking once its top is free (App. A.3's consolidation,
//!   [`client::plan_shrink`]), and reads through U; the provider here is the in-memory
//!   reference;
//! * [`repair`]: U recovered from C and the levels, any half of each; and once U is whole, a
//!   re-encode of C from U ([`client::plan_reencode`]) replaces every damaged part;
//! * [`stream`]: a batch that re-encodes C taken and uploaded in parts, so that the client
//!   holds U's checksums alone (16 bytes a slot), whatever the log's size;
//! * [`wire`]: the canonical byte layouts of the log's messages.
//!
//! Persisting the provider's side is `vouch_store::PorLog`'s; serving it, the provider's
//! `por-*` operations.
//!
//! **The window.** CRebuild at an epoch's end is not needed at once: for half an epoch the
//! old C and the epoch's writes, kept as level `levels()`, stand in for the new C
//! ([`code::Schedule::in_window`]), so a provider has that long to build it; audits, repair
//! and the client's replays follow the schedule through it. The store builds the new C over
//! the window a few segments per group completion, as a merge tree of [`build::merge_range`]
//! butterflies over leaves encoded from U as of the epoch's end.
//!
//! A level holds fixed-size slots (each `slot` elements), stored flat: slot `i` of a level is
//! `level[i * slot..(i + 1) * slot]`. A slot's elements are independent codes of the same
//! shape (Sec. 4.6: the mix runs on each segment of a block), so the same functions run on
//! blocks (the server) and on their checksums (the client's simulation, Sec. 5.4).

pub mod audit;
pub mod batch;
pub mod build;
pub mod checksum;
pub mod client;
pub mod code;
pub mod copy;
pub mod decode;
pub mod field;
pub mod heap;
pub mod layout;
pub mod moves;
pub mod provider;
pub mod raw_tree;
pub mod record;
pub mod repair;
pub mod replay;
pub mod stream;
pub mod transform;
pub mod walk;
pub mod wire;

#[cfg(test)]
mod audit_stats_tests;
#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod free_tests;
#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod reencode_tests;
#[cfg(test)]
mod shrink_tests;
#[cfg(test)]
mod stream_tests;

/// The buffer a codeword slot lives in (Sec. 4.1): a level of the hierarchical log H, the
/// erasure-coded copy C, or the raw buffer U.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Region {
    /// Level `ℓ` of H; its slots are numbered `0..2^(ℓ+1)` (X then Y).
    Level(u8),
    /// The erasure-coded copy C; slots `0..2n` (X then Y).
    Coded,
    /// The raw buffer U; slot `i` is the i-th slot of the heap.
    Raw,
}

impl Region {
    /// Elements per slot of this region in a log of `width`-element slots whose blocks of H
    /// are groups of `2^group_log` writes: a level's slots are groups, side by side.
    pub fn slot_width(self, width: usize, group_log: u32) -> usize {
        match self {
            Region::Level(_) => width << group_log,
            Region::Coded | Region::Raw => width,
        }
    }

    /// The region's byte, wherever a region is named in bytes (a sealed checksum's address,
    /// the store's record, a request for a region): `ℓ` for a level, 0xFE for C, 0xFF for U.
    pub fn to_byte(self) -> u8 {
        match self {
            Region::Level(level) => level,
            Region::Coded => 0xFE,
            Region::Raw => 0xFF,
        }
    }

    /// The region a byte names ([`Region::to_byte`]).
    pub fn from_byte(byte: u8) -> Region {
        match byte {
            0xFE => Region::Coded,
            0xFF => Region::Raw,
            level => Region::Level(level),
        }
    }
}

/// A slot's place: what a checksum's one-time key is bound to, with the slot's write time
/// (Sec. 5.4 `PRF(sk0, 0, addr, t)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlotAddress {
    pub region: Region,
    pub index: u64,
}

impl SlotAddress {
    /// The canonical bytes: the region (`ℓ` for a level, 0xFE for C, 0xFF for U), then the
    /// index, little-endian.
    pub fn to_bytes(self) -> [u8; 9] {
        let mut out = [0; 9];
        out[0] = self.region.to_byte();
        out[1..].copy_from_slice(&self.index.to_le_bytes());
        out
    }
}

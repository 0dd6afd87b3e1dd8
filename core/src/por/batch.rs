//! The values a batch of writes to the log passes between the client and the provider (Sec.
//! 5.4): the client's [`LogState`], its [`WritePlan`], the provider's [`WriteContext`], and
//! what the client hands back ([`Written`]); and a read of U's slots ([`RawRead`]). The
//! client's steps over them are in [`super::client`], their bytes in [`super::wire`].

use super::checksum::{Checksum, OpenError, SealKey, SealedChecksum};
use super::code::Schedule;
use super::raw_tree::{empty_root, RawProof, RawProofError};
use super::replay::{replay_coded_at, ReplayError};
use crate::Digest;

/// The client's whole PoR state for one log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogState {
    pub schedule: Schedule,
    /// The root of U's tree ([`super::raw_tree`]).
    pub raw_root: Digest,
    /// The checksum of the open group's writes so far, under the grouped key
    /// ([`ChecksumKey::grouped`]): the block HAdd replays when the group completes. Zero when
    /// no group is open.
    pub pending: Checksum,
}

impl LogState {
    /// A log of `2^log_capacity` empty slots whose blocks of H are groups of `2^group_log`,
    /// and the sealed checksums of its C (all zeros, written at time 0) for the provider to
    /// keep.
    ///
    /// # Panics
    /// When the grouping does not fit the capacity ([`Schedule::is_valid`]): a caller's bug.
    pub fn new(log_capacity: u32, group_log: u32, key: &SealKey) -> (LogState, Vec<SealedChecksum>) {
        let schedule = Schedule::new(log_capacity, group_log);
        assert!(schedule.is_valid(), "a group of at most U's slots");
        let zeros = vec![Checksum::ZERO; 1 << log_capacity];
        let coded = replay_coded_at(log_capacity, 0, &zeros, key);
        (LogState { schedule, raw_root: empty_root(log_capacity), pending: Checksum::ZERO }, coded)
    }
}

/// What a batch needs from the provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WritePlan {
    /// C is re-encoded over U of `2^k` slots before the batch, and H emptied: U grows when
    /// `k` is above its capacity ([`plan`](super::client::plan)); at the capacity it is a
    /// re-encode alone ([`plan_reencode`](super::client::plan_reencode)); below it, U shrinks
    /// to its first `2^k` slots ([`plan_shrink`](super::client::plan_shrink)).
    pub grow_to: Option<u32>,
    /// The U indices written, ascending and distinct.
    pub indices: Vec<u64>,
    /// Filled levels (before the batch) that its rebuilds consume, ascending.
    pub levels: Vec<u32>,
    /// Whether C is rebuilt (after growth or at the end of an epoch): every sealed
    /// checksum of U is then needed.
    pub whole_raw: bool,
    /// Whether ⊥ writes complete the group the batch leaves open
    /// ([`padding`](super::client::padding)).
    pub flush: bool,
}

impl WritePlan {
    /// Bytes of the C the provider encodes at once to apply this batch, in a log of
    /// `width`-element slots: all of C (`2 · 2^k` slots) when U grows, is re-encoded or shrinks
    /// to `2^k` slots; none otherwise (an epoch's C is built over its window, a few units per
    /// group, and a batch's levels are bounded by its writes). The one part of a batch's work
    /// that grows with the log rather than with the batch: both sides scale their deadline for
    /// the batch with it (`vouch_proto::por::por_apply_allowance`).
    pub fn coded_bytes_at_once(&self, width: usize) -> u64 {
        self.grow_to.map_or(0, |k| coded_bytes(k, width))
    }
}

/// Bytes of C over U of `2^log_capacity` slots of `width` elements: `2 · 2^k` slots.
pub fn coded_bytes(log_capacity: u32, width: usize) -> u64 {
    (2u64 << log_capacity).saturating_mul(width as u64 * 8)
}

/// The provider's answer to a [`WritePlan`]. Nothing in it is trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteContext {
    /// The sealed checksum of each index of the plan now (`None`: never written).
    pub old: Vec<Option<SealedChecksum>>,
    /// Connects `old` to U's root (after growth, when the plan grows U).
    pub proof: RawProof,
    /// The sealed checksums of each level of the plan, X then Y.
    pub levels: Vec<Vec<SealedChecksum>>,
    /// Every slot's sealed checksum, when the plan asks for all of U.
    pub raw: Option<Vec<Option<SealedChecksum>>>,
}

/// What the client sends with the batch's slots, and the state it adopts once the provider
/// has made them durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub state: LogState,
    /// Each index's new sealed checksum, ascending.
    pub raw: Vec<(u64, SealedChecksum)>,
    /// The levels filled after the batch and built in it, with their sealed checksums.
    pub levels: Vec<(u32, Vec<SealedChecksum>)>,
    /// The sealed checksums of each C the batch built that is in use or next at its end, in
    /// the order of [`batch_outcome`](super::client::batch_outcome)'s times.
    pub coded: Vec<Vec<SealedChecksum>>,
}

/// Why a batch cannot be written, or why the provider's context is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("a batch writes at least one slot")]
    Empty,
    #[error("slot index {0} is beyond any capacity")]
    Index(u64),
    #[error("a written slot has {got} elements, not {want}")]
    Width { got: usize, want: usize },
    #[error("the checksum key groups {key} slots, the log 2^{log}")]
    Grouping { key: usize, log: u32 },
    #[error("the slot written at U index {0} does not start with its index + 1, or has an element beyond 2^56")]
    Header(u64),
    #[error("the provider's context does not fit the plan")]
    Shape,
    #[error("U's proof: {0}")]
    RawProof(#[from] RawProofError),
    #[error("U's checksums do not match the client's root (stale or altered)")]
    RawRoot,
    #[error("U's sealed checksum of slot {index} does not open: {error}")]
    RawChecksum { index: u64, error: OpenError },
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("slot {0} of U, named free, holds data: neither never written nor ⊥")]
    Occupied(u64),
    #[error("U of 2^{from} slots cannot shrink to 2^{to}")]
    Shrink { to: u32, from: u32 },
}

/// The provider's answer to a read of some of U's slots. Nothing in it is trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRead {
    /// The slots, flat.
    pub slots: Vec<u64>,
    /// Their sealed checksums (`None`: never written).
    pub sealed: Vec<Option<SealedChecksum>>,
    /// Connects `sealed` to U's root.
    pub proof: RawProof,
}

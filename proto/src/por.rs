//! Messages of the PoR log (paper 002): one log of fixed-size slots per client, written in
//! batches, audited per level, read and repaired through U. The byte fields carry
//! `vouch_core::por::wire` layouts, which the receiver decodes and checks.
//!
//! | operation | request | response |
//! |---|---|---|
//! | `por-init` | [`PorInitRequest`] | [`PorStatus`] |
//! | `por-status` | [`PorStatusRequest`] | [`PorStatus`] |
//! | `por-plan` | [`PorPlanRequest`] | [`PorContext`] |
//! | `por-write` | [`PorWriteRequest`] | [`PorStatus`] |
//! | `por-read` | [`PorReadRequest`] | [`PorReadAnswer`] |
//! | `por-audit` | [`PorAuditRequest`] | [`PorAuditAnswer`] |
//! | `por-region` | [`PorRegionRequest`] | [`PorRegionAnswer`] |
//! | `por-restore` | [`PorRestoreRequest`] | [`PorStatus`] |
//! | `por-label` | [`PorLabelRequest`] | [`PorLabelAnswer`] |
//! | `por-free` | [`PorFreeRequest`] | [`PorFreeAnswer`] |
//! | `por-more` | [`PorMoreRequest`] | [`PorMoreAnswer`] |
//! | `por-stage` | [`PorStageRequest`] | [`PorStaged`] |
//!
//! **Parts.** A plan's answer (all of U's sealed checksums when C is rebuilt) and a batch's
//! upload (all of C's) grow with the log, past one message at about 2^20 slots. Each travels
//! in parts of at most [`POR_PART_BYTES`]: the answer's first part with its `total`, the rest
//! by `por-more`; the upload's parts but the last by `por-stage`, the last in the batch,
//! which names how many bytes were staged before it.
//!
//! **Deadlines.** A batch whose plan encodes C at once (growth of U, a re-encode, a shrink) makes
//! the provider read and write all of C, several times over: minutes at 2^20 slots. Its
//! `por-write` may take [`por_apply_allowance`] longer than an ordinary request, on both sides,
//! and the provider applies it in a task of its own that no deadline and no dropped
//! connection cuts short (a batch cut midway is lost work, and the same cut at every retry
//! would keep the copy owed for ever). A request for a log waits for a batch being applied
//! to it (then answers for the log after it), so a client that stopped waiting for the
//! answer settles the batch at its next PoR request as it settles a lost answer.
//!
//! **Fences.** A batch the client found not applied may still be on its way (held by a proxy,
//! a slow network). Before it settles one so, the client asks for the status again with a
//! `fence`: from that answer on the provider refuses every batch sent under an earlier
//! incarnation ([`PorWriteRequest::incarnation`]), so the batch the client gave up is never
//! applied after; if it came just before the fence, the answer shows it applied.

use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;

/// Creates the client's log: `2^log_capacity` empty slots, blocks of H of `2^group_log` writes
/// (Sec. 6.1's grouping), and the sealed checksums of its C.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorInitRequest {
    pub log_capacity: u8,
    pub group_log: u8,
    /// `vouch_core::por::wire::sealed_list_to_bytes`.
    pub coded: ByteBuf,
}

/// The log's status. `fence` above 0 closes a batch the client is settling: from this
/// answer on, the provider refuses every batch sent under an incarnation below it (see
/// [`PorWriteRequest::incarnation`]), so that a batch still on its way when the client found
/// it not applied is never applied after.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorStatusRequest {
    pub fence: u64,
}

/// The provider's schedule of the log (what it says; the client trusts its own).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorStatus {
    pub log_capacity: u8,
    pub time: u64,
}

/// A write plan (`WritePlan::to_bytes`), and the most bytes of its answer in one message
/// (at most [`POR_PART_BYTES`]; the parts after the first by `por-more`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorPlanRequest {
    pub plan: ByteBuf,
    pub part: u32,
}

/// The most bytes of a plan's answer or a batch's upload in one message (see the module
/// documentation); well under `MAX_MESSAGE` with a batch's slots beside it.
pub const POR_PART_BYTES: usize = 24 << 20;

/// The most bytes a batch's upload may stage, or a plan's answer hold: C's sealed checksums of
/// a log of `2^23` slots (32 GiB of PoR data) and more.
pub const POR_MAX_PARTS_BYTES: u64 = 2 << 30;

/// The slowest an honest provider is taken to encode C at once, in bytes of C per second
/// (the encode reads and writes C about `log2` of its segments times over: at 2^20 slots of
/// 4.7 KB, a 10 GB C in eight passes).
pub const POR_ENCODE_MIN_RATE: u64 = 4 << 20;

/// How much longer than an ordinary request a `por-write` may take whose batch encodes
/// `coded_bytes` of C at once (`vouch_core::por::client::WritePlan::coded_bytes_at_once`): those
/// bytes at [`POR_ENCODE_MIN_RATE`]. Zero for a batch that encodes no C at once. The client
/// waits this long beyond its own deadline for the answer (and for the provider's time while
/// a batch of its is in flight), the provider beyond its own for the apply to end before it
/// answers that the batch is still being applied.
pub fn por_apply_allowance(coded_bytes: u64) -> std::time::Duration {
    std::time::Duration::from_secs(coded_bytes.div_ceil(POR_ENCODE_MIN_RATE))
}

/// The answer to a plan (`WriteContext::to_bytes`): its first `context.len()` bytes of
/// `total`; the rest by `por-more`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorContext {
    pub context: ByteBuf,
    pub total: u64,
}

/// More of the last plan's answer, from `offset`, in a part of the size the plan asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorMoreRequest {
    pub offset: u64,
}

/// At most [`POR_PART_BYTES`] of the last plan's answer, from the offset asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorMoreAnswer {
    pub part: ByteBuf,
}

/// A part of the next batch's upload at `offset` of it (0 starts a new one, dropping any
/// staged before).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorStageRequest {
    pub offset: u64,
    pub part: ByteBuf,
}

/// The bytes of the next batch's upload staged so far.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorStaged {
    pub staged: u64,
}

/// A batch: the plan again, the U indices in write order, the slots (`slots_to_bytes`), the
/// client's sealed checksums (`Written::upload_bytes`), and labels the provider keeps with
/// the batch, atomically (the client's index of where its files are; it checks what they
/// lead to, never trusts them). The writes listed in `deleted` are ⊥ (App. A.3's delete):
/// their slots follow from their index alone and are not in `slots`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorWriteRequest {
    pub plan: ByteBuf,
    pub writes: Vec<u64>,
    pub deleted: Vec<u64>,
    pub slots: ByteBuf,
    /// The last part of the upload: the whole upload is the `staged` bytes staged before it
    /// (`por-stage`), then these.
    pub upload: ByteBuf,
    pub staged: u64,
    pub labels: Vec<PorLabel>,
    /// How many of the client's batches settled as not applied before this one was sent (the
    /// incarnation its seals are under): refused below the last fence
    /// ([`PorStatusRequest::fence`]).
    pub incarnation: u64,
}

/// An opaque key and value the client attaches to a batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorLabel {
    pub key: ByteBuf,
    pub value: ByteBuf,
}

/// The value of a label, as last written with a batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorLabelRequest {
    pub key: ByteBuf,
}

/// `None`: no batch carried that label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorLabelAnswer {
    pub value: Option<ByteBuf>,
}

/// Runs of U's ⊥ slots (App. A.3's deleted slots) that a new copy may take: up to
/// `most_slots` slots in up to `most_runs` runs. The client checks each slot it takes against
/// U's checksums before it writes (`vouch_core::por::client::check_free`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorFreeRequest {
    pub most_slots: u64,
    pub most_runs: u32,
}

/// `(first, count)` runs, ascending and apart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorFreeAnswer {
    pub runs: Vec<(u64, u64)>,
}

/// U's slots at `indices` (ascending, distinct).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorReadRequest {
    pub indices: Vec<u64>,
}

/// `RawRead::to_bytes`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorReadAnswer {
    pub read: ByteBuf,
}

/// An aggregated audit: `lambda` picks per part, expanded from `seed` on both sides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorAuditRequest {
    pub seed: [u8; 32],
    pub lambda: u32,
}

/// One answer per part, in the order of `vouch_core::por::audit::parts` of the provider's
/// schedule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorAuditAnswer {
    pub parts: Vec<PorPartAnswer>,
}

/// One part of an audit: its proof, or the provider's word that the part's bytes are lost
/// (the client reports that part failed and goes on with the others; a lost part is never
/// believed to be fine).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PorPartAnswer {
    /// `PartProof::to_bytes`.
    Proof(ByteBuf),
    /// Why the provider cannot prove the part.
    Lost(String),
}

impl PorPartAnswer {
    /// Bytes on the wire of the proof (0 for a lost part).
    pub fn proof_len(&self) -> usize {
        match self {
            PorPartAnswer::Proof(bytes) => bytes.len(),
            PorPartAnswer::Lost(_) => 0,
        }
    }
}

/// Slots `first..first + count` of a level (`region` = ℓ) or of C (`region` = 0xFE), for
/// repair, which reads a region a page at a time. A level's slots are groups of writes; the
/// provider bounds a page by the writes it carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorRegionRequest {
    pub region: u8,
    pub first: u64,
    pub count: u32,
}

/// `RegionRead::to_bytes` of the page (cut to the region's end).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorRegionAnswer {
    pub region: ByteBuf,
}

/// Repaired slots of U written back (`slots_to_bytes`, one per index, ascending).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PorRestoreRequest {
    pub indices: Vec<u64>,
    pub slots: ByteBuf,
}

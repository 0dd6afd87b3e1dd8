//! Files stored with retrievability (paper 002, Shi–Stefanov–Papamanthou): every version of a
//! PoR file also has a copy in the client's PoR log, one erasure-coded log of fixed-size slots
//! per client, which the provider keeps beside its block store. The client keeps O(1) bytes of
//! it ([`record`]): the log's schedule, U's root and the next fresh slot.
//!
//! * **Which files.** A file is PoR from its first version on (`vouch put --por`): its file id
//!   carries a mark ([`copy::is_por_file`]), and the id is under the namespace root, so every
//!   version of it owes a copy, and a provider that says it has none is caught, never believed.
//! * **A copy** is the version's blocks with their nonces and tags in runs of slots
//!   ([`copy`]), written in batches through HAdd; the last batch carries a label, kept by the
//!   provider atomically with it, that says where the runs are ([`layout`]: sealed with a MAC
//!   under the client's key, so the provider can withhold a label but not forge or move one).
//!   A put copies the whole version into fresh slots; an edit or a sync keeps the runs of the
//!   version before it and writes only its new blocks ([`edit`]). Reading a copy (`get --por`)
//!   checks the slots against U's root, then each block's tag, then the root the blocks make
//!   against the version record.
//! * **Deletes** ([`delete`]): `vouch rm` and `vouch prune` write ⊥ over the slots only the
//!   dropped versions' copies held; new blocks take ⊥ slots the provider names free before
//!   fresh ones ([`layout::Allocator`]), each checked ⊥ against U's checksums first. When the
//!   top of U is free, U shrinks; when half of it is free elsewhere, the copies past the half
//!   move down first and their labels are sealed again in a new generation ([`compact`]), so
//!   that a label from before the move is caught as stale.
//! * **Crashes.** A batch whose answer was lost is settled by the provider's time: the time
//!   before it (not applied) or after it (applied, checked by reading one of its slots under
//!   the new root); anything else is a lie. A version whose copy may be missing (its commit was
//!   about to be sent) is named in the record before the commit, and copied, from a verified
//!   read of the version, by the next PoR operation; the versions a delete drops likewise, and
//!   their slots are written ⊥ by the next PoR operation if the commit was accepted. A
//!   consolidation stopped part way is in the record, and the next PoR operation finishes it.
//! * **Repair** (`vouch repair NAME`): when U's slots of a copy are lost or damaged, U is
//!   decoded from C and the filled levels, each read a page at a time until half of its slots
//!   match their sealed checksums (any half decodes it), the copy is checked as a read would
//!   check it, and its runs are written back. The client holds U in memory while it decodes.
//!
//! Lock order: the commit lock, then the PoR lock.

mod compact;
mod delete;
mod edit;
mod repair;
mod streamed;

use vouch_core::por::copy::{self, is_por_file, TaggedData};

use crate::client::Client;
use crate::commit::Commit;
use crate::error::ClientError;
use crate::ledger::Committing;
use crate::reads::Reads;
use crate::violation::ViolationKind;
use serde_bytes::ByteBuf;
use std::borrow::Cow;
use std::io::Write;
use std::time::{Duration, Instant};
use vouch_core::namespace::VersionRecord;
use vouch_core::por::audit::{parts, picks, verify_part, PartProof};
use vouch_core::por::checksum::{ChecksumKey, SealKey};
use vouch_core::por::client::{
    check_free, coded_bytes, plan, verify_read, write_opened, LogState, RawRead, WriteContext, WritePlan,
};
use vouch_core::por::code::{Schedule, DEFAULT_GROUP_LOG};
use vouch_core::por::copy::{label_key, CopyCheck};
use vouch_core::por::heap::{encode_slot, is_deleted_slot, SLOT_WIDTH};
use vouch_core::por::layout::{self, Allocator, Layout, LayoutKey};
use vouch_core::por::record::{InFlight, LogPoint, PorRecord};
use vouch_core::por::repair::{recover_gathered, regions, Gathered, RegionRead};
use vouch_core::por::stream::{ContextError, ContextReader, OpenedRaw, Upload};
use vouch_core::por::wire::{sealed_list_to_bytes, slots_to_bytes};
use vouch_core::por::Region;
use vouch_proto::por::*;

/// U's capacity when a client creates its log (`2^k` slots; it doubles as it fills): one
/// group of H.
const INITIAL_LOG_CAPACITY: u32 = DEFAULT_GROUP_LOG;
/// Most slots per batch or read request (the provider takes up to 8192).
const REQUEST_SLOTS: usize = 4096;

/// Most bytes of a version a put keeps in memory for its PoR copy; a larger version's copy is
/// read back from the provider a batch at a time ([`streamed`]), so that a copy's memory stays
/// bounded at any file size.
pub(crate) const POR_KEEP_BYTES: u64 = 64 << 20;

/// The fewest picks per part an audit a user runs may ask for (`vouch audit --por`, the
/// gateway's `por_lambda`): a part missing half its slots passes with probability
/// `2^-lambda`, and below this that is no proof.
pub const MIN_POR_LAMBDA: u32 = 32;
/// Refused batches within one epoch after which the next PoR operation first starts a new
/// epoch (a re-encode of C from U), which folds their incarnations' ends into one number.
const MAX_INCARNATION_ENDS: usize = 16;

/// The log's keys: the checksum matrix and the sealing key, derived from the client's secret.
pub(crate) struct PorKeys {
    seal: SealKey,
    /// The checksum matrix for [`DEFAULT_GROUP_LOG`].
    sums: ChecksumKey,
    checksum_secret: [u8; 32],
    layout: LayoutKey,
}

impl PorKeys {
    pub(crate) fn derive(secret: &[u8; 32]) -> PorKeys {
        let seal = SealKey::new(&blake3::derive_key("vouch por seal key v1", secret));
        let checksum_secret = blake3::derive_key("vouch por checksum key v1", secret);
        let sums = ChecksumKey::grouped(&checksum_secret, SLOT_WIDTH, DEFAULT_GROUP_LOG);
        PorKeys { seal, sums, checksum_secret, layout: LayoutKey::derive(secret) }
    }

    /// The sealing keys of H and C in the incarnations of `record`.
    fn seal_in(&self, record: &PorRecord) -> SealKey {
        self.seal.in_incarnations(&record.incarnations)
    }

    /// The checksum matrix of a log grouped as `schedule` says (a log made before grouping
    /// has groups of one write).
    fn sums_for(&self, schedule: &Schedule) -> Cow<'_, ChecksumKey> {
        match schedule.group_log {
            DEFAULT_GROUP_LOG => Cow::Borrowed(&self.sums),
            other => Cow::Owned(ChecksumKey::grouped(&self.checksum_secret, SLOT_WIDTH, other)),
        }
    }
}

/// What `vouch get --por` and `vouch repair` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PorCopyReport {
    pub name: String,
    pub version: u64,
    pub bytes: u64,
    pub blocks: usize,
    /// U's slots the copy occupies.
    pub slots: u64,
    /// Slots of U that could not be read or did not verify (repair only).
    pub damaged: bool,
    /// Slots written back from C and H (repair only).
    pub restored: u64,
    /// Parts of the log (`level-<ℓ>`, `coded`) that failed their audit and were replaced by a
    /// re-encode of C from U (repair only).
    pub healed: Vec<String>,
    /// Why the parts that failed are not replaced yet (repair only): U still has lost slots.
    pub unhealed: Option<String>,
    /// Blocks of the provider's block store (what a plain `get` reads) that failed their
    /// checks and were written again from the verified PoR copy (repair only).
    pub healed_blocks: u64,
    pub seconds: f64,
}

/// One part of a PoR audit: a level of H, or C.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PorPartReport {
    /// `level-<ℓ>` or `coded`.
    pub region: String,
    pub slots: u64,
    pub time: u64,
    pub picks: usize,
    pub verified: bool,
    /// Why it failed.
    pub problem: Option<String>,
}

/// A PoR audit of the whole log: a report per level and for C.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PorAuditReport {
    pub log_capacity: u32,
    pub time: u64,
    pub slots_used: u64,
    pub lambda: u32,
    pub parts: Vec<PorPartReport>,
    /// One version of a PoR file, at random, checked for its copy (`vouch audit --por`; none
    /// when no PoR file has bytes, or in repair's own audits).
    pub copy: Option<PorPartReport>,
    pub proof_bytes: usize,
    pub verified: bool,
    pub seconds: f64,
}

fn region_name(region: Region) -> String {
    match region {
        Region::Level(l) => format!("level-{l}"),
        Region::Coded => "coded".into(),
        Region::Raw => "raw".into(),
    }
}

/// A batch's writes: U indices in write order, their slots (flat, in the same order), and
/// the labels it carries.
#[derive(Default)]
struct Batch {
    writes: Vec<u64>,
    slots: Vec<u64>,
    labels: Vec<PorLabel>,
    /// Whether every slot written must be free (never written, or ⊥): a new copy's are.
    into_free: bool,
    /// The version (by number) and layout of the copy whose label it carries: kept in the
    /// record from when the batch has passed its checks until it is seen applied.
    copy: Option<(u64, Layout)>,
}

/// How much longer than a call the provider may take to answer while `flight` may be being
/// applied: as long as its batch may take. A batch that encodes C at once (growth, a
/// re-encode, a shrink) encodes the C of the log after it; any other batch takes less.
fn flight_allowance(flight: &InFlight) -> Duration {
    por_apply_allowance(coded_bytes(flight.after.log.schedule.log_capacity, SLOT_WIDTH))
}

/// The writes whose slots are ⊥, and the other writes' slots (flat, in order).
fn split_deleted(writes: &[u64], slots: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let mut deleted = Vec::new();
    let mut data = Vec::with_capacity(slots.len());
    for (&index, slot) in writes.iter().zip(slots.chunks_exact(SLOT_WIDTH)) {
        match is_deleted_slot(index, slot) {
            true => deleted.push(index),
            false => data.extend_from_slice(slot),
        }
    }
    (deleted, data)
}

/// The label that says where `version`'s copy is, sealed in `generation` (the record's).
fn sealed_label(keys: &PorKeys, version: &VersionRecord, layout: &Layout, generation: u64) -> PorLabel {
    let key = label_key(version);
    PorLabel { value: ByteBuf::from(layout.seal(&keys.layout, &key, generation)), key: ByteBuf::from(key) }
}

/// The client's PoR log ([`Client::por`]), for the time of one operation: every step of a
/// PoR copy, read, delete, consolidation, audit and repair, over the client's transport, state
/// and keys. Its public operations read a PoR file through U ([`PorSession::get`]), repair
/// one ([`PorSession::repair`]) and audit the log ([`PorSession::audit`]); each runs under
/// the client's commit lock.
pub struct PorSession<'c> {
    client: &'c Client,
}

impl std::fmt::Debug for PorSession<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PorSession").field("client", self.client).finish()
    }
}

impl Client {
    /// The client's PoR log: reads through it, repairs and audits of it (see [`PorSession`]).
    pub fn por(&self) -> PorSession<'_> {
        PorSession { client: self }
    }
}

impl PorSession<'_> {
    fn keys(&self) -> Result<PorKeys, ClientError> {
        Ok(PorKeys::derive(&self.client.keys.owner()?.por_secret()))
    }

    fn save(&self, record: &PorRecord) -> Result<(), ClientError> {
        self.client.ledger.store().save_por(&record.to_bytes())
    }

    /// A request about the client's log, which exists once [`PorSession::ready`] found or
    /// made it: a "not found" is the provider losing it, never an answer.
    async fn call<R: vouch_proto::Rpc>(&self, request: &R) -> Result<R::Answer, ClientError> {
        self.call_within(request, Duration::ZERO).await
    }

    /// [`PorSession::call`], with `extra` time for the provider's work.
    async fn call_within<R: vouch_proto::Rpc>(&self, request: &R, extra: Duration) -> Result<R::Answer, ClientError> {
        self.client.remote.call_within(request, extra).await.map_err(|e| match e {
            ClientError::NotFound(message) => ClientError::violation(
                ViolationKind::DataLost,
                format!("the provider answers that the client's PoR log is gone: {message}"),
            ),
            e => e,
        })
    }

    /// The client's PoR record with nothing in flight: created with the log when `create`,
    /// and a batch whose answer was lost settled.
    async fn ready(&self, keys: &PorKeys, create: bool) -> Result<PorRecord, ClientError> {
        let saved = self
            .client
            .ledger
            .store()
            .load_por()?
            .map(|bytes| PorRecord::from_bytes(&bytes))
            .transpose()
            .map_err(|e| ClientError::State(format!("{e} (file `por` in the state directory)")))?;
        // A batch in flight may still be being applied (its answer was not waited for to the
        // end): the provider answers once it is, so the call may take as long as the batch.
        let wait = saved.as_ref().and_then(|r| r.in_flight.as_ref()).map_or(Duration::ZERO, flight_allowance);
        let status = match self.client.remote.call_within(&PorStatusRequest::default(), wait).await {
            Ok(status) => Some(status),
            Err(ClientError::NotFound(_)) => None,
            Err(e) => return Err(e),
        };
        let mut record = match (saved, &status) {
            (Some(record), _) => record,
            (None, Some(status)) => {
                return Err(ClientError::State(format!(
                    "this client has no PoR record, yet the provider keeps a PoR log for it (capacity 2^{}, time {}): \
                     the record was lost from the client's state (or the provider answers for a log this client \
                     never made); the log cannot be checked without it",
                    status.log_capacity, status.time
                )))
            }
            (None, None) if !create => {
                return Err(ClientError::NotFound("this client has no PoR log (`vouch put --por` makes one)".into()))
            }
            (None, None) => {
                // Saved first: a log at time 0 with nothing written is made again if the
                // provider never got the request.
                let record = PorRecord::new(LogState::new(INITIAL_LOG_CAPACITY, DEFAULT_GROUP_LOG, &keys.seal).0);
                self.save(&record)?;
                record
            }
        };
        let status = match status {
            Some(status) => status,
            None if record.at.log.schedule.time == 0 && record.at.next_slot == 0 => {
                let coded = LogState::new(INITIAL_LOG_CAPACITY, DEFAULT_GROUP_LOG, &keys.seal).1;
                let init = PorInitRequest {
                    log_capacity: INITIAL_LOG_CAPACITY as u8,
                    group_log: DEFAULT_GROUP_LOG as u8,
                    coded: ByteBuf::from(sealed_list_to_bytes(&coded)),
                };
                self.call(&init).await?
            }
            None => {
                return Err(ClientError::violation(ViolationKind::DataLost, "the provider lost the client's PoR log"))
            }
        };
        let mut at = (u32::from(status.log_capacity), status.time);
        let point = |p: &LogPoint| (p.log.schedule.log_capacity, p.log.schedule.time);
        let fenced = record.in_flight.is_some() && at == point(&record.at);
        if fenced {
            // Not applied so far. The fence makes sure it never is (a request still on its way
            // is refused from this answer on); it may have come just before: then it is applied.
            let fence = PorStatusRequest { fence: record.incarnations.refusals() + 1 };
            let status = self.call_within(&fence, wait).await?;
            at = (u32::from(status.log_capacity), status.time);
        }
        match record.in_flight {
            _ if at == point(&record.at) => {
                if record.in_flight.take().is_some() {
                    // Not applied: what the batch sealed for H and C is void from now on.
                    record.incarnations.end(record.at.log.schedule.group_time());
                    self.save(&record)?;
                }
            }
            Some(flight) if at == point(&flight.after) => {
                // Applied, the provider says: one of its slots must read under the new root.
                match self.read(keys, &flight.after.log, &[flight.probe]).await {
                    Ok(_) => {}
                    // Its bytes are lost, it says: an honest fault that repair heals from C
                    // and H (which need the log at its new point), or a lie that every read
                    // under the new root catches. Either way the client must go on from there.
                    Err(e) if e.violation_kind() == Some(ViolationKind::DataLost) => {
                        tracing::warn!("the PoR batch in flight is applied, and its probe slot is lost: {e}")
                    }
                    Err(e) => return Err(e),
                }
                record.applied(flight.after);
                if fenced {
                    // It came just before its fence: the next batch goes under the next
                    // incarnation. The end is at the log's time, so nothing sealed is voided.
                    record.incarnations.end(flight.after.log.schedule.group_time());
                }
                self.save(&record)?;
            }
            _ => {
                return Err(ClientError::violation(
                    ViolationKind::NeitherOldNorNew,
                    format!("the PoR log is at capacity 2^{} and time {}, not where the client left it", at.0, at.1),
                ))
            }
        }
        Ok(record)
    }

    /// One batch, with checked rebuilds. It flushes the open group, so that every write is in
    /// H (and can be repaired) when it returns.
    async fn batch(&self, keys: &PorKeys, record: &mut PorRecord, batch: Batch) -> Result<(), ClientError> {
        let planned = plan(&record.at.log, &batch.writes, true)
            .map_err(|e| ClientError::BadInput(format!("a PoR write: {e}")))?;
        self.send(keys, record, planned, batch).await
    }

    /// Sends a planned batch (see [`PorSession::batch`]); a re-encode writes no slot.
    async fn send(
        &self,
        keys: &PorKeys,
        record: &mut PorRecord,
        planned: WritePlan,
        batch: Batch,
    ) -> Result<(), ClientError> {
        let Batch { writes, slots, labels, into_free, copy } = batch;
        let log = record.at.log;
        let sums = keys.sums_for(&log.schedule);
        let seal = keys.seal_in(record);
        // At growth the answer and the upload hold a sealed checksum per slot of U and of C
        // (60 MB and 117 MB at 2^20 slots): both travel in parts, taken and sealed as they
        // go, so that the client holds U's checksums alone (16 bytes a slot).
        let (context, raw) = self.context(&log, &planned, (&seal, &sums), ViolationKind::BadPorWrite).await?;
        let written = write_opened(&log, &planned, &context, raw, &writes, &slots, &seal, &sums)
            .map_err(ClientError::caught(ViolationKind::BadPorWrite))?;
        if into_free {
            check_free(&planned, &context, &seal, &sums).map_err(ClientError::caught(ViolationKind::BadPorWrite))?;
        }
        drop(context);
        // A shrink takes the slots from the new capacity on away: they are fresh again.
        let next_slot =
            record.at.next_slot.max(writes.iter().max().map_or(0, |m| m + 1)).min(written.state.schedule.capacity());
        let after = LogPoint { log: written.state, next_slot };
        // A re-encode leaves U's root as it was: any slot reads under it.
        record.in_flight = Some(InFlight { after, probe: writes.first().copied().unwrap_or(0) });
        if copy.is_some() {
            record.copy_layout = copy;
        }
        self.save(record)?;
        // ⊥ slots follow from their index: only the others travel.
        let (deleted, data) = split_deleted(&writes, &slots);
        let (staged, upload) = self.stage(written.upload(&seal, self.client.remote.por_part_bytes())).await?;
        let request = PorWriteRequest {
            plan: ByteBuf::from(planned.to_bytes()),
            writes,
            deleted,
            slots: ByteBuf::from(slots_to_bytes(&data)),
            upload: ByteBuf::from(upload),
            staged,
            labels,
            incarnation: record.incarnations.refusals(),
        };
        let allowance = por_apply_allowance(planned.coded_bytes_at_once(SLOT_WIDTH));
        match self.call_within(&request, allowance).await {
            Ok(status)
                if (u32::from(status.log_capacity), status.time)
                    == (after.log.schedule.log_capacity, after.log.schedule.time) =>
            {
                record.applied(after);
                self.save(record)
            }
            Ok(status) => Err(ClientError::violation(
                ViolationKind::BadPorWrite,
                format!(
                    "after the batch the log is said to be at time {}, not {}",
                    status.time, after.log.schedule.time
                ),
            )),
            // Applied or not: the provider's time says which, now or at the next operation. A
            // batch seen applied (its probe read under the new root) is done, whatever the
            // answer was: the provider may have said it was still applying it, or the client
            // stopped waiting first (the status waits for an apply under way).
            Err(e) => {
                if let Ok(settled) = self.ready(keys, false).await {
                    let applied = settled.at == after;
                    *record = settled;
                    if applied {
                        tracing::info!("the PoR batch whose answer failed ({e}) is applied");
                        return Ok(());
                    }
                }
                Err(e)
            }
        }
    }

    /// The provider's answer to `planned` from `log`, taken in parts when it is larger than
    /// one message (all of U's sealed checksums, when C is rebuilt): its head, and U's
    /// checksums checked against the client's root when the plan needs them. Checksums that
    /// are not U's are reported as `lie`.
    async fn context(
        &self,
        log: &LogState,
        planned: &WritePlan,
        (seal, sums): (&SealKey, &ChecksumKey),
        lie: ViolationKind,
    ) -> Result<(WriteContext, Option<OpenedRaw>), ClientError> {
        let refused = |e: ContextError| match e {
            ContextError::Wire(e) => ClientError::violation(ViolationKind::MalformedAnswer, e.to_string()),
            ContextError::Write(e) => ClientError::violation(lie, e.to_string()),
        };
        let part = self.client.remote.por_part_bytes() as u32;
        let answer: PorContext = self.call(&PorPlanRequest { plan: ByteBuf::from(planned.to_bytes()), part }).await?;
        if answer.total > POR_MAX_PARTS_BYTES || (answer.context.len() as u64) > answer.total {
            let why =
                format!("a plan's answer of {} bytes in all, {} in its first part", answer.total, answer.context.len());
            return Err(ClientError::violation(ViolationKind::MalformedAnswer, why));
        }
        let mut reader = ContextReader::new(log, planned, answer.total, seal, sums)
            .map_err(|e| ClientError::BadInput(format!("a PoR plan: {e}")))?;
        reader.feed(&answer.context).map_err(refused)?;
        drop(answer);
        while reader.wants_more() {
            let offset = reader.received();
            let more: PorMoreAnswer = self.call(&PorMoreRequest { offset }).await?;
            if more.part.is_empty() {
                let why = format!("an empty part of a plan's answer at byte {offset}");
                return Err(ClientError::violation(ViolationKind::MalformedAnswer, why));
            }
            reader.feed(&more.part).map_err(refused)?;
        }
        reader.finish().map_err(refused)
    }

    /// Stages all but the last part of a batch's upload (all of C's sealed checksums, when C
    /// is rebuilt, grow past one message): how many bytes it staged, and the last part, which
    /// goes with the batch. The parts are made as they go ([`Upload`]).
    async fn stage(&self, upload: Upload<'_>) -> Result<(u64, Vec<u8>), ClientError> {
        let mut parts = upload.peekable();
        let mut staged = 0u64;
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                return Ok((staged, part));
            }
            let end = staged + part.len() as u64;
            let request = PorStageRequest { offset: staged, part: ByteBuf::from(part) };
            let answer: PorStaged = self.call(&request).await?;
            if answer.staged != end {
                let why = format!("{} bytes staged after a part that ends at {end}", answer.staged);
                return Err(ClientError::violation(ViolationKind::MalformedAnswer, why));
            }
            staged = end;
        }
        Ok((staged, Vec::new()))
    }

    /// Writes the copy of version `version` (its blocks, in order), whole: into ⊥ slots the
    /// provider names free where they fit, else fresh ones.
    async fn copy(
        &self,
        keys: &PorKeys,
        record: &mut PorRecord,
        version: &VersionRecord,
        blocks: &[TaggedData],
    ) -> Result<(), ClientError> {
        if blocks.is_empty() {
            return Ok(());
        }
        let counts = copy::slot_counts(blocks);
        let mut alloc = self.allocator(record, counts.iter().sum()).await?;
        let (layout, starts) = match layout::whole(&counts, &mut alloc) {
            Some(placed) => placed,
            None => layout::whole(&counts, &mut Allocator::fresh(record.at.next_slot)).expect("fresh slots: one run"),
        };
        let (writes, slots) = copy::lay_out(&starts, blocks);
        self.write_copy(keys, record, version, &layout, (writes, slots), true).await
    }

    /// Where new blocks of `most_slots` slots in all may go: the runs of ⊥ slots the provider
    /// names, checked for shape here (each is checked free again, against U's checksums,
    /// before a batch writes it), then fresh slots.
    async fn allocator(&self, record: &PorRecord, most_slots: u64) -> Result<Allocator, ClientError> {
        if most_slots == 0 {
            return Ok(Allocator::fresh(record.at.next_slot));
        }
        let request = PorFreeRequest { most_slots, most_runs: layout::MAX_RUNS as u32 };
        let answer: PorFreeAnswer = self.call(&request).await?;
        let runs = layout::free_runs(&answer.runs, record.at.next_slot, layout::MAX_RUNS)
            .map_err(ClientError::caught(ViolationKind::MalformedAnswer))?;
        Ok(Allocator::new(runs, record.at.next_slot))
    }

    /// Writes a copy's slots (`writes`, and the slots flat in the same order) in batches,
    /// each checked to write only free slots when `into_free`; the last carries the label of
    /// `version`'s `layout`. With no slots, a ⊥ write of the next fresh slot carries it. The
    /// layout is in the record from when that last batch passed its checks until it is seen
    /// applied.
    async fn write_copy(
        &self,
        keys: &PorKeys,
        record: &mut PorRecord,
        version: &VersionRecord,
        layout: &Layout,
        (mut writes, mut slots): (Vec<u64>, Vec<u64>),
        into_free: bool,
    ) -> Result<(), ClientError> {
        let label = sealed_label(keys, version, layout, record.generation);
        if writes.is_empty() {
            writes = vec![record.at.next_slot];
            slots = encode_slot(record.at.next_slot, None);
        }
        let batches = writes.len().div_ceil(REQUEST_SLOTS);
        for (i, (writes, slots)) in
            writes.chunks(REQUEST_SLOTS).zip(slots.chunks(REQUEST_SLOTS * SLOT_WIDTH)).enumerate()
        {
            let (labels, copy) = match i + 1 == batches {
                true => (vec![label.clone()], Some((version.number, layout.clone()))),
                false => (Vec::new(), None),
            };
            let batch = Batch { writes: writes.to_vec(), slots: slots.to_vec(), labels, into_free, copy };
            self.batch(keys, record, batch).await?;
        }
        record.copy_layout = None;
        Ok(())
    }

    /// U's slots `indices` (ascending), read and checked against `log`'s root.
    async fn read(&self, keys: &PorKeys, log: &LogState, indices: &[u64]) -> Result<Vec<u64>, ClientError> {
        let mut slots = Vec::with_capacity(indices.len() * SLOT_WIDTH);
        for part in indices.chunks(REQUEST_SLOTS) {
            let answer: PorReadAnswer = self.call(&PorReadRequest { indices: part.to_vec() }).await?;
            let read =
                RawRead::from_bytes(&answer.read).map_err(ClientError::caught(ViolationKind::MalformedAnswer))?;
            verify_read(log, part, &read, &keys.seal, &keys.sums)
                .map_err(ClientError::caught(ViolationKind::BadPorRead))?;
            slots.extend(read.slots);
        }
        Ok(slots)
    }

    /// Where the copy of `version` is, as the label the client sealed says (the provider keeps
    /// it, and cannot forge or move one). A PoR file's version without one is a lie.
    async fn location(
        &self,
        keys: &PorKeys,
        record: &PorRecord,
        version: &VersionRecord,
    ) -> Result<Layout, ClientError> {
        Ok(self.sealed_location(keys, record, version).await?.0)
    }

    /// [`PorSession::location`], with the generation its label was sealed in.
    async fn sealed_location(
        &self,
        keys: &PorKeys,
        record: &PorRecord,
        version: &VersionRecord,
    ) -> Result<(Layout, u64), ClientError> {
        let Some((layout, generation)) = self.label(keys, record, &label_key(version)).await? else {
            return Err(ClientError::violation(
                ViolationKind::UnprovenNotFound,
                format!("it says version {} of a PoR file has no copy in the log", version.number),
            ));
        };
        let outside =
            |r: &layout::Run| r.slots == 0 || r.first.checked_add(r.slots).is_none_or(|end| end > record.at.next_slot);
        if let Some(run) = layout.runs.iter().find(|r| outside(r)) {
            return Err(ClientError::violation(
                ViolationKind::BadPorCopy,
                format!("the copy is said to be at slots {}+{}, outside those written", run.first, run.slots),
            ));
        }
        Ok((layout, generation))
    }

    /// The layout the label `key` holds and the generation it was sealed in, if the provider
    /// has one: sealed by this client for that key and still current, or a lie.
    async fn label(
        &self,
        keys: &PorKeys,
        record: &PorRecord,
        key: &[u8],
    ) -> Result<Option<(Layout, u64)>, ClientError> {
        let answer: PorLabelAnswer = self.call(&PorLabelRequest { key: ByteBuf::from(key.to_vec()) }).await?;
        let Some(value) = answer.value else { return Ok(None) };
        let (layout, generation) = Layout::open(&keys.layout, key, &value).ok_or_else(|| {
            ClientError::violation(ViolationKind::BadPorCopy, "the copy's label is not one this client sealed for it")
        })?;
        if !record.label_is_current(generation, &layout) {
            return Err(ClientError::violation(
                ViolationKind::BadPorCopy,
                format!(
                    "the copy's label is stale: sealed in generation {generation}, it names slots up to {} that a \
                     later consolidation moved copies out of",
                    layout.end()
                ),
            ));
        }
        Ok(Some((layout, generation)))
    }

    /// Makes the copy a commit to `name` may have left owed (see the module documentation).
    /// Only the client's own record says whether it is made (a batch seen applied); the
    /// provider's word (a label it shows) settles nothing. A copy whose batches had begun is
    /// written again into the same slots ([`PorSession::copy_again`]).
    async fn settle_copy(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &mut PorRecord,
    ) -> Result<(), ClientError> {
        let Some(name) = record.copying.clone() else { return Ok(()) };
        match Reads::committed(self.client, commit).version(&name, None).await {
            Ok(latest) if is_por_file(&latest.record.file) && latest.record.len > 0 => {
                // Kept in the record until the label's batch is seen applied: a batch refused on
                // the way leaves it there for the next try.
                let again = match &record.copy_layout {
                    Some((number, layout)) if *number == latest.record.number => Some(layout.clone()),
                    _ => None,
                };
                self.copy_streamed(commit, keys, record, &name, &latest.record, again).await?;
            }
            Ok(_) | Err(ClientError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        record.copying = None;
        record.copy_layout = None;
        self.save(record)
    }

    /// The PoR record, ready for an operation under the commit lock.
    async fn begin(&self, commit: &Committing<'_>, keys: &PorKeys, create: bool) -> Result<PorRecord, ClientError> {
        let mut record = self.ready(keys, create).await?;
        self.settle(commit, keys, &mut record).await?;
        if record.incarnations.ends.len() >= MAX_INCARNATION_ENDS {
            // Many batches refused in this epoch: a new one (C re-encoded from U, H emptied)
            // leaves no seal of an older incarnation in use.
            let planned = vouch_core::por::client::plan_reencode(&record.at.log);
            self.send(keys, &mut record, planned, Batch::default()).await?;
        }
        Ok(record)
    }

    /// Finishes what an operation cut short left in the record.
    async fn settle(&self, commit: &Committing<'_>, keys: &PorKeys, record: &mut PorRecord) -> Result<(), ClientError> {
        // A consolidation under way first: labels are believed only once it is done.
        self.settle_compaction(commit, keys, record).await?;
        // The delete first: a copy must not take slots a delete still owes ⊥.
        self.settle_delete(commit, keys, record).await?;
        self.settle_copy(commit, keys, record).await
    }

    /// Before a commit that makes a new version of the PoR file `name`: the copy is owed.
    pub(crate) async fn owe_copy(&self, commit: &Committing<'_>, name: &str) -> Result<(), ClientError> {
        let keys = self.keys()?;
        let mut record = self.begin(commit, &keys, true).await?;
        record.copying = Some(name.to_string());
        self.save(&record)
    }

    /// After that commit: the copy of `version`, from `blocks` when the caller has them, else
    /// from a verified read of the version.
    pub(crate) async fn pay_copy(
        &self,
        commit: &Committing<'_>,
        name: &str,
        version: &VersionRecord,
        blocks: Option<Vec<TaggedData>>,
    ) -> Result<(), ClientError> {
        let keys = self.keys()?;
        let mut record = self.ready(&keys, false).await?;
        match blocks {
            // Kept by the put: all of the version (see `POR_KEEP_BYTES`).
            Some(b) if b.iter().map(|b| b.data.len() as u64).sum::<u64>() == version.len => {
                self.copy(&keys, &mut record, version, &b).await?
            }
            _ => self.copy_streamed(commit, &keys, &mut record, name, version, None).await?,
        }
        record.copying = None;
        self.save(&record)
    }

    /// The verified copy of a version of a PoR file, with where it is: read through U, or
    /// taken from `raw` (all of U, as repair decoded it).
    async fn copy_of(
        &self,
        keys: &PorKeys,
        record: &PorRecord,
        version: &VersionRecord,
        raw: Option<&[u64]>,
    ) -> Result<(Layout, Vec<TaggedData>), ClientError> {
        let layout = self.location(keys, record, version).await?;
        let mut blocks = Vec::new();
        for run in &layout.runs {
            let slots = match raw {
                None => {
                    self.read(keys, &record.at.log, &(run.first..run.first + run.slots).collect::<Vec<_>>()).await?
                }
                Some(raw) => raw
                    .get(run.first as usize * SLOT_WIDTH..(run.first + run.slots) as usize * SLOT_WIDTH)
                    .ok_or_else(|| ClientError::violation(ViolationKind::BadPorCopy, "the copy lies outside U"))?
                    .to_vec(),
            };
            blocks.extend(copy::parse(run.first, &slots).map_err(ClientError::caught(ViolationKind::BadPorCopy))?);
        }
        copy::check(self.client.keys.owner()?, version, &blocks)
            .map_err(ClientError::caught(ViolationKind::BadPorCopy))?;
        Ok((layout, blocks))
    }

    /// Calls `each` with every block of the copy at `layout`, in order, read through U a page
    /// of [`REQUEST_SLOTS`] at a time (each page checked against U's root): a copy of any size
    /// in the memory of a page and a block.
    async fn walk(
        &self,
        keys: &PorKeys,
        record: &PorRecord,
        layout: &Layout,
        mut each: impl FnMut(TaggedData) -> Result<(), ClientError> + Send,
    ) -> Result<(), ClientError> {
        for run in &layout.runs {
            let mut parser = copy::RunParser::new(run.first);
            let end = run.first + run.slots;
            for page in (run.first..end).step_by(REQUEST_SLOTS) {
                let indices: Vec<u64> = (page..end.min(page + REQUEST_SLOTS as u64)).collect();
                let slots = self.read(keys, &record.at.log, &indices).await?;
                parser
                    .feed(&slots)
                    .map_err(ClientError::caught(ViolationKind::BadPorCopy))?
                    .into_iter()
                    .try_for_each(&mut each)?;
            }
            parser.finish().map_err(ClientError::caught(ViolationKind::BadPorCopy))?;
        }
        Ok(())
    }

    /// The proven version of a PoR file, or why there is none.
    async fn version(
        &self,
        commit: &Committing<'_>,
        name: &str,
        want: Option<u64>,
    ) -> Result<VersionRecord, ClientError> {
        let v = Reads::committed(self.client, commit).version(name, want).await?;
        if !is_por_file(&v.record.file) {
            return Err(ClientError::BadInput(format!("{name} was stored without --por: it has no PoR copy")));
        }
        Ok(v.record)
    }

    /// Streams a version of the PoR file `name`, read through U alone (not the provider's
    /// block store), verified, into `out`.
    pub async fn get(
        &self,
        name: &str,
        want: Option<u64>,
        out: &mut (impl Write + Send),
    ) -> Result<PorCopyReport, ClientError> {
        let started = Instant::now();
        let keys = self.keys()?;
        let commit = Commit::begin(self.client).await?;
        let version = self.version(&commit.lock, name, want).await?;
        let record = self.begin(&commit.lock, &keys, false).await?;
        let key = self.client.keys.owner()?;
        let (layout, leaves) = match version.len {
            0 => (Layout { runs: Vec::new() }, Vec::new()),
            _ => {
                let layout = self.location(&keys, &record, &version).await?;
                // Pass one: the whole copy is checked (every tag, then the root and length its
                // leaves make) before a byte is written; only the leaves are kept.
                let mut check = CopyCheck::new(key, &version);
                self.walk(&keys, &record, &layout, |b| {
                    check.add(&b).map_err(ClientError::caught(ViolationKind::BadPorCopy))
                })
                .await?;
                let leaves = check.finish().map_err(ClientError::caught(ViolationKind::BadPorCopy))?;
                (layout, leaves)
            }
        };
        // Pass two: the same blocks read again, each held to its verified leaf (and its data to
        // its tag) before it is written. A provider that answers otherwise the second time is
        // caught, and what was written is a prefix of the verified version.
        let mut written = 0;
        self.walk(&keys, &record, &layout, |b| {
            if !leaves.get(written).is_some_and(|leaf| copy::same_block(key, &version, leaf, &b)) {
                let why = format!("block {written} of the copy differs when read again");
                return Err(ClientError::violation(ViolationKind::BadPorCopy, why));
            }
            written += 1;
            out.write_all(&b.data).map_err(ClientError::io("writing the output"))
        })
        .await?;
        if written != leaves.len() {
            let why = format!("the copy has {written} blocks when read again, not {}", leaves.len());
            return Err(ClientError::violation(ViolationKind::BadPorCopy, why));
        }
        Ok(PorCopyReport {
            name: name.into(),
            version: version.number,
            bytes: version.len,
            blocks: leaves.len(),
            slots: layout.slots(),
            damaged: false,
            restored: 0,
            healed: Vec::new(),
            unhealed: None,
            healed_blocks: 0,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

impl PorAuditReport {
    /// The failed audit as an error (for callers that stop at the first lie).
    pub fn into_result(self) -> Result<PorAuditReport, ClientError> {
        match self.parts.iter().chain(&self.copy).find(|p| !p.verified) {
            None => Ok(self),
            Some(p) => Err(ClientError::violation(
                ViolationKind::BadPorAudit,
                format!("{}: {}", p.region, p.problem.as_deref().unwrap_or("failed")),
            )),
        }
    }
}

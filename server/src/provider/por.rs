//! The PoR log of each client (paper 002): created, written in batches, audited, read and
//! repaired over `vouch_store::PorLog`. The provider computes every rebuild; the client
//! checks everything against its own schedule, U's root and its keys (`vouch_core::por`).
//!
//! One log per client, of slots of `vouch_core::por::heap::SLOT_WIDTH` elements. Each log is
//! opened at its first use in this process and kept; its requests are serialised by its own
//! lock (`PorLog` needs one writer), so clients' logs are written side by side.
//!
//! **Time.** A request waits for its log's lock as long as the request holding it takes, and
//! the log's opening at its first use takes as long as the log's size needs: neither is cut
//! short (a cut opening would be cut again at every retry). Once a request holds the log, its
//! work is bounded by [`REQUEST_TIMEOUT`], except a batch's apply ([`PorLogs::write`]):
//! a batch that encodes C at once (growth, a re-encode, a shrink) reads and writes all of C
//! several times over, minutes at 2^20 slots, and is bounded by its work alone. Cutting it
//! would be a crash at every attempt (the store keeps the log as it was, so nothing is lost,
//! but the batch would never be applied); the HTTP layer runs it in a task of its own for the
//! same reason, so that neither its own deadline nor a dropped connection cuts it either.
//! Requests that wait behind it answer for the log after it.

use super::{ProviderError, Refusal};
use serde_bytes::ByteBuf;
use std::collections::HashMap;
use std::sync::Arc;
use vouch_core::por::audit::{parts, picks};
use vouch_core::por::client::{WritePlan, Written};
use vouch_core::por::heap::{encode_slot, SLOT_WIDTH};
use vouch_core::por::provider::ProviderError as PlanRefused;
use vouch_core::por::wire::{sealed_list_from_bytes, slots_from_bytes, PorWireError};
use vouch_core::por::Region;
use vouch_proto::por::{
    PorAuditAnswer, PorAuditRequest, PorContext, PorFreeAnswer, PorFreeRequest, PorInitRequest, PorLabelAnswer,
    PorLabelRequest, PorMoreAnswer, PorMoreRequest, PorPartAnswer, PorPlanRequest, PorReadAnswer, PorReadRequest,
    PorRegionAnswer, PorRegionRequest, PorRestoreRequest, PorStageRequest, PorStaged, PorStatus, PorStatusRequest,
    PorWriteRequest, POR_MAX_PARTS_BYTES, POR_PART_BYTES,
};
use vouch_store::por::{MAX_LOG_CAPACITY, MAX_WIDTH};
use vouch_store::{PorLog, PorStoreError, Repository, StoreError};

use crate::limits::REQUEST_TIMEOUT;

/// Most picks per part of one audit.
pub const MAX_POR_LAMBDA: u32 = 4096;
/// Most slots one request may read, write or restore.
pub const MAX_POR_SLOTS: usize = 8192;
/// Most runs of free slots one answer names.
pub const MAX_POR_FREE_RUNS: usize = 4096;

/// A request [`PorLogs`] refuses.
#[derive(Debug, thiserror::Error)]
pub enum PorError {
    // ---- the log ----
    #[error("no PoR log; create one with por-init")]
    NoLog,
    #[error("this client already has a PoR log")]
    Exists,
    #[error(
        "a log of 2^{log_capacity} slots of {width} elements is not accepted (at most 2^{MAX_LOG_CAPACITY} \
         slots of 1..={MAX_WIDTH} elements)"
    )]
    Shape { log_capacity: u32, width: usize },
    /// The plan or batch does not fit the log (the log checks it as every provider does).
    #[error("request refused: {0}")]
    Refused(#[source] PlanRefused),
    #[error("an audit asks for {region:?}, which the log does not hold, or for a slot beyond it")]
    NotHeld { region: Region },
    #[error("{region:?} is not a region the log pages (a level it holds, or C)")]
    NoRegion { region: Region },
    #[error("{region:?} has {slots} slots; the page starts at {first}")]
    PagePastEnd { region: Region, slots: u64, first: u64 },
    #[error("lambda must be 1 to {MAX_POR_LAMBDA}, not {lambda}")]
    Lambda { lambda: u32 },

    // ---- messages ----
    #[error("malformed write plan: {0}")]
    BadPlan(#[source] PorWireError),
    #[error("malformed slots: {0}")]
    BadSlots(#[source] PorWireError),
    #[error("malformed checksums of C: {0}")]
    BadChecksums(#[source] PorWireError),
    #[error("malformed upload of a batch: {0}")]
    BadUpload(#[source] PorWireError),
    #[error("{count} slots in one request; at most {MAX_POR_SLOTS}")]
    TooManySlots { count: usize },
    #[error("{elements} elements for {indices} indices: one slot of {width} elements per index")]
    SlotsPerIndex { elements: usize, indices: usize, width: usize },

    // ---- ⊥ writes ----
    #[error("⊥ writes are slots of the heap's width ({SLOT_WIDTH} elements), not of {width}")]
    DeletesNeedHeapSlots { width: usize },
    #[error("the ⊥ writes are not among the writes")]
    DeletedNotWritten,
    #[error("{elements} elements of slots do not fit the {writes} writes that are not ⊥")]
    SlotsDoNotFit { elements: usize, writes: usize },
    #[error("a ⊥ write at {index}, beyond any U index")]
    DeletedPastIndex { index: u64 },

    // ---- parts of large messages, batches ----
    #[error("a plan's answer of {bytes} bytes; at most {POR_MAX_PARTS_BYTES}")]
    AnswerTooLarge { bytes: u64 },
    #[error("no part of the last plan's answer at {offset} (it has {more} bytes more)")]
    NoSuchPart { offset: u64, more: u64 },
    #[error(
        "a part of {part} bytes at {offset}: an upload may not pass {POR_MAX_PARTS_BYTES} bytes, nor a part \
         {POR_PART_BYTES}"
    )]
    UploadTooLarge { offset: u64, part: usize },
    #[error("a part at {offset} of an upload staged to {staged}")]
    PartOutOfStep { offset: u64, staged: usize },
    #[error("a batch after {said} bytes staged; {staged} are")]
    StagedMismatch { said: u64, staged: usize },
    #[error("a batch of incarnation {incarnation} after the client settled it as not applied (fence {fence})")]
    Fenced { incarnation: u64, fence: u64 },
}

impl PorError {
    pub(crate) fn refusal(&self) -> Refusal {
        use PorError::*;
        match self {
            NoLog | NotHeld { .. } | NoRegion { .. } => Refusal::NotFound,
            Exists | Fenced { .. } => Refusal::Conflict,
            TooManySlots { .. } | AnswerTooLarge { .. } | UploadTooLarge { .. } => Refusal::TooLarge,
            Shape { .. }
            | Refused(_)
            | PagePastEnd { .. }
            | Lambda { .. }
            | BadPlan(_)
            | BadSlots(_)
            | BadChecksums(_)
            | BadUpload(_)
            | SlotsPerIndex { .. }
            | DeletesNeedHeapSlots { .. }
            | DeletedNotWritten
            | SlotsDoNotFit { .. }
            | DeletedPastIndex { .. }
            | NoSuchPart { .. }
            | PartOutOfStep { .. }
            | StagedMismatch { .. } => Refusal::BadRequest,
        }
    }

    /// The protocol's code of the refusal.
    pub fn code(&self) -> vouch_proto::ErrorCode {
        self.refusal().code()
    }
}

/// The provider's logs, by client: each behind its own lock, `None` until opened or made.
type LogMap = std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<PorLog>>>>>;

/// A client's messages too large for one (see `vouch_proto::por`'s parts): the answer to its
/// last plan, and the upload of its next batch staged so far.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    /// The answer past its first part, and the size of its parts.
    answer: Vec<u8>,
    part: usize,
    upload: Vec<u8>,
    /// A batch of the client's is being applied, in a task of its own (see the module
    /// documentation): the one at a time a client may have, so that a client cannot pile up
    /// batches that outlive their requests.
    applying: bool,
    /// Batches sent under an incarnation below this are refused: the client settled one as
    /// not applied ([`PorStatusRequest::fence`]). Kept in memory: a request still on its way
    /// when the provider stops dies with its connection.
    fence: u64,
}

/// The smallest part of a plan's answer a client may ask for.
const MIN_POR_PART: usize = 4 << 10;

/// The PoR logs' slots and objects: the heap's slots (`SLOT_WIDTH` elements) and the store's
/// segments, except in tests at scale ([`PorLogs::with_shape`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PorShape {
    width: usize,
    /// `None`: the store's own.
    segment_bytes: Option<usize>,
}

impl Default for PorShape {
    fn default() -> Self {
        PorShape { width: SLOT_WIDTH, segment_bytes: None }
    }
}

impl PorShape {
    /// `log` with this shape's segments.
    fn limits(self, log: PorLog) -> PorLog {
        match self.segment_bytes {
            Some(segment_bytes) => log.with_limits(segment_bytes, vouch_store::por::CACHED_LEVEL_BYTES),
            None => log,
        }
    }
}

type PorParts = std::sync::Mutex<HashMap<String, Parts>>;

impl From<PorStoreError> for ProviderError {
    fn from(e: PorStoreError) -> Self {
        match e {
            PorStoreError::Refused(e) => PorError::Refused(e).into(),
            PorStoreError::Shape { log_capacity, width } => PorError::Shape { log_capacity, width }.into(),
            PorStoreError::Exists => PorError::Exists.into(),
            PorStoreError::NotHeld { region } => PorError::NotHeld { region }.into(),
            // Bytes the log needs are gone: data lost until the client repairs it.
            PorStoreError::Store(StoreError::NotFound { key }) => lost(&key, "missing"),
            PorStoreError::Store(StoreError::BadRange { key, .. }) => lost(&key, "cut short"),
            PorStoreError::CorruptState { at, detail } => lost(&at, detail),
            PorStoreError::Store(e) => ProviderError::Store(e),
        }
    }
}

fn lost(at: &str, detail: impl ToString) -> ProviderError {
    ProviderError::Store(StoreError::Corrupt { at: at.to_string(), detail: detail.to_string() })
}

fn owner(client: &str) -> Vec<u8> {
    format!("{client}/por").into_bytes()
}

fn status(log: &PorLog) -> PorStatus {
    let schedule = log.schedule();
    PorStatus { log_capacity: schedule.log_capacity as u8, time: schedule.time }
}

fn bounded(count: usize) -> Result<(), PorError> {
    if count > MAX_POR_SLOTS {
        return Err(PorError::TooManySlots { count });
    }
    Ok(())
}

/// A batch's slots, flat in write order, with the ⊥ slots of the writes in `deleted` (a
/// subset of `writes`) put in among the others (`data`, flat in write order).
fn with_deleted(writes: &[u64], deleted: &[u64], data: Vec<u64>, width: usize) -> Result<Vec<u64>, PorError> {
    if deleted.is_empty() {
        return Ok(data);
    }
    if width != SLOT_WIDTH {
        return Err(PorError::DeletesNeedHeapSlots { width });
    }
    let deleted: std::collections::HashSet<u64> = deleted.iter().copied().collect();
    let all: std::collections::HashSet<u64> = writes.iter().copied().collect();
    let data_writes = writes.iter().filter(|i| !deleted.contains(i)).count();
    if !deleted.is_subset(&all) {
        return Err(PorError::DeletedNotWritten);
    }
    if data.len() != data_writes * SLOT_WIDTH {
        return Err(PorError::SlotsDoNotFit { elements: data.len(), writes: data_writes });
    }
    if let Some(&index) = deleted.iter().find(|&&i| i >= MAX_SLOT_INDEX) {
        return Err(PorError::DeletedPastIndex { index });
    }
    let mut data = data.chunks_exact(SLOT_WIDTH);
    let mut out = Vec::with_capacity(writes.len() * SLOT_WIDTH);
    for index in writes {
        match deleted.contains(index) {
            true => out.extend(encode_slot(*index, None)),
            false => out.extend_from_slice(data.next().expect("counted above")),
        }
    }
    Ok(out)
}

/// Past every index a slot's header can carry (`encode_slot`).
const MAX_SLOT_INDEX: u64 = (1 << 56) - 1;

/// The PoR logs of a provider's clients, one each, over its repository.
#[derive(Debug)]
pub struct PorLogs {
    repo: Arc<Repository>,
    /// Per client, its log (see the module documentation).
    logs: LogMap,
    /// Per client, the parts of its last plan's answer and of its next batch's upload.
    parts: PorParts,
    /// The shape of the logs: the heap's slots, but in tests at scale.
    shape: PorShape,
}

impl PorLogs {
    pub(super) fn over(repo: Arc<Repository>) -> Self {
        PorLogs { repo, logs: LogMap::default(), parts: PorParts::default(), shape: PorShape::default() }
    }

    /// Logs of `width`-element slots, their objects in segments of `segment_bytes`, instead
    /// of the heap's slots and the store's segments: for tests of the log at scale (2^21
    /// slots of two elements are 32 MB; of the heap's, 10 GB). ⊥ writes need the heap's
    /// slots.
    pub(super) fn with_shape(&mut self, width: usize, segment_bytes: usize) {
        self.shape = PorShape { width, segment_bytes: Some(segment_bytes) };
    }

    /// `work` on the client's log, opened from the store at its first use: within
    /// [`REQUEST_TIMEOUT`] once the log is held (the wait for it and its opening are not
    /// counted; see the module documentation).
    async fn with_log<T>(
        &self,
        client: &str,
        work: impl AsyncFnOnce(&mut PorLog, &vouch_store::Repository) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        self.with_log_within(client, Some(REQUEST_TIMEOUT), work).await
    }

    /// [`PorLogs::with_log`] with `work` bounded by `limit` (`None`: by its own end).
    async fn with_log_within<T>(
        &self,
        client: &str,
        limit: Option<std::time::Duration>,
        work: impl AsyncFnOnce(&mut PorLog, &vouch_store::Repository) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        let slot = self.slot(client);
        let mut held = slot.lock().await;
        if held.is_none() {
            let log = PorLog::open(&self.repo, &owner(client)).await?.ok_or(PorError::NoLog)?;
            *held = Some(self.shape.limits(log));
        }
        let work = work(held.as_mut().expect("opened above"), &self.repo);
        match limit {
            None => work.await,
            Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
                Err(ProviderError::Store(StoreError::Backend {
                    at: "the PoR log".into(),
                    detail: format!("the request took longer than {limit:?}"),
                }))
            }),
        }
    }

    /// Marks a batch of the client's as being applied in a task of its own; `false` when one
    /// already is (the HTTP layer then refuses the batch). [`PorLogs::applied`] unmarks it.
    pub(crate) fn applying(&self, client: &str) -> bool {
        self.with_parts(client, |parts| !std::mem::replace(&mut parts.applying, true))
    }

    /// The client's batch marked by [`PorLogs::applying`] has ended, applied or not.
    pub(crate) fn applied(&self, client: &str) {
        self.with_parts(client, |parts| parts.applying = false)
    }

    /// The lock of the client's log.
    fn slot(&self, client: &str) -> Arc<tokio::sync::Mutex<Option<PorLog>>> {
        // Held for a map lookup only: never across an await.
        let mut logs = self.logs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        logs.entry(client.to_string()).or_default().clone()
    }

    pub async fn init(&self, client: &str, req: &PorInitRequest) -> Result<PorStatus, ProviderError> {
        let coded = sealed_list_from_bytes(&req.coded).map_err(PorError::BadChecksums)?;
        let slot = self.slot(client);
        let mut held = slot.lock().await;
        let shape = (u32::from(req.log_capacity), u32::from(req.group_log));
        let log = PorLog::create(&self.repo, &owner(client), shape, self.shape.width, coded).await?;
        let answer = status(&log);
        *held = Some(self.shape.limits(log));
        Ok(answer)
    }

    /// The log's status, after the fence is raised (under the log's lock: a batch being
    /// applied is applied first, one that comes after is refused).
    pub async fn status(&self, client: &str, req: &PorStatusRequest) -> Result<PorStatus, ProviderError> {
        self.with_log(client, async |log, _| {
            self.with_parts(client, |parts| parts.fence = parts.fence.max(req.fence));
            Ok(status(log))
        })
        .await
    }

    pub async fn plan(&self, client: &str, req: &PorPlanRequest) -> Result<PorContext, ProviderError> {
        let plan = WritePlan::from_bytes(&req.plan).map_err(PorError::BadPlan)?;
        bounded(plan.indices.len())?;
        let mut context = self.with_log(client, async |log, _| Ok(log.context(&plan)?.to_bytes())).await?;
        let total = context.len() as u64;
        if total > POR_MAX_PARTS_BYTES {
            return Err(PorError::AnswerTooLarge { bytes: total }.into());
        }
        let part = (req.part as usize).clamp(MIN_POR_PART, POR_PART_BYTES);
        let rest = context.split_off(context.len().min(part));
        self.with_parts(client, |parts| (parts.answer, parts.part) = (rest, part));
        Ok(PorContext { context: ByteBuf::from(context), total })
    }

    /// More of the last plan's answer: `offset` counts from its start (the first part was in
    /// the plan's own answer).
    pub async fn more(&self, client: &str, req: &PorMoreRequest) -> Result<PorMoreAnswer, ProviderError> {
        self.with_parts(client, |parts| {
            let more = parts.answer.len() as u64;
            let at = req.offset.checked_sub(parts.part as u64).filter(|&at| at < more);
            let at = at.ok_or(PorError::NoSuchPart { offset: req.offset, more })? as usize;
            let end = (at + parts.part).min(parts.answer.len());
            let part = ByteBuf::from(parts.answer[at..end].to_vec());
            if end == parts.answer.len() {
                // All of it asked for: the memory goes (a lost last part means a new plan).
                parts.answer = Vec::new();
            }
            Ok(PorMoreAnswer { part })
        })
    }

    /// A part of the client's next batch's upload.
    pub async fn stage(&self, client: &str, req: &PorStageRequest) -> Result<PorStaged, ProviderError> {
        if req.part.len() > POR_PART_BYTES || req.offset.saturating_add(req.part.len() as u64) > POR_MAX_PARTS_BYTES {
            return Err(PorError::UploadTooLarge { offset: req.offset, part: req.part.len() }.into());
        }
        self.with_parts(client, |parts| {
            if req.offset == 0 {
                parts.upload.clear();
            }
            if req.offset != parts.upload.len() as u64 {
                return Err(PorError::PartOutOfStep { offset: req.offset, staged: parts.upload.len() }.into());
            }
            parts.upload.extend_from_slice(&req.part);
            Ok(PorStaged { staged: parts.upload.len() as u64 })
        })
    }

    /// `work` on the client's parts, under the map's lock (never held across an await).
    fn with_parts<T>(&self, client: &str, work: impl FnOnce(&mut Parts) -> T) -> T {
        let mut all = self.parts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        work(all.entry(client.to_string()).or_default())
    }

    pub async fn write(&self, client: &str, req: &PorWriteRequest) -> Result<PorStatus, ProviderError> {
        self.write_slowly(client, req, std::time::Duration::ZERO).await
    }

    /// [`PorLogs::write`], its apply begun `delay` after the log is held (a slow
    /// provider, `vouch_misbehave::Misbehave::SlowPorWrite`; zero for the honest one).
    pub async fn write_slowly(
        &self,
        client: &str,
        req: &PorWriteRequest,
        delay: std::time::Duration,
    ) -> Result<PorStatus, ProviderError> {
        let plan = WritePlan::from_bytes(&req.plan).map_err(PorError::BadPlan)?;
        bounded(req.writes.len())?;
        let data = slots_from_bytes(&req.slots).map_err(PorError::BadSlots)?;
        let slots = with_deleted(&req.writes, &req.deleted, data, self.shape.width)?;
        let upload = match req.staged {
            0 => std::borrow::Cow::Borrowed(&req.upload[..]),
            staged => {
                let mut upload = self.with_parts(client, |parts| std::mem::take(&mut parts.upload));
                if upload.len() as u64 != staged {
                    return Err(PorError::StagedMismatch { said: staged, staged: upload.len() }.into());
                }
                upload.extend_from_slice(&req.upload);
                std::borrow::Cow::Owned(upload)
            }
        };
        // Bounded by its own work alone (see the module documentation).
        self.with_log_within(client, None, async |log, repo| {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let fence = self.with_parts(client, |parts| parts.fence);
            if req.incarnation < fence {
                return Err(PorError::Fenced { incarnation: req.incarnation, fence }.into());
            }
            let written = Written::from_upload_bytes(&upload, log.schedule()).map_err(PorError::BadUpload)?;
            let labels: Vec<(Vec<u8>, Vec<u8>)> =
                req.labels.iter().map(|l| (l.key.to_vec(), l.value.to_vec())).collect();
            let started = std::time::Instant::now();
            log.apply_labelled(repo, (&plan, &req.writes, &slots, &written), &labels).await?;
            let seconds = started.elapsed().as_secs_f64();
            if plan.grow_to.is_some() || seconds >= 1.0 {
                let schedule = log.schedule();
                tracing::info!(
                    client,
                    seconds,
                    log_capacity = schedule.log_capacity,
                    time = schedule.time,
                    writes = req.writes.len(),
                    reencoded = plan.grow_to.is_some(),
                    "PoR batch applied"
                );
            }
            Ok(status(log))
        })
        .await
    }

    pub async fn label(&self, client: &str, req: &PorLabelRequest) -> Result<PorLabelAnswer, ProviderError> {
        self.with_log(client, async |log, repo| {
            Ok(PorLabelAnswer { value: log.label(repo, &req.key)?.map(ByteBuf::from) })
        })
        .await
    }

    pub async fn free(&self, client: &str, req: &PorFreeRequest) -> Result<PorFreeAnswer, ProviderError> {
        let most_runs = (req.most_runs as usize).min(MAX_POR_FREE_RUNS);
        self.with_log(client, async |log, repo| {
            Ok(PorFreeAnswer { runs: log.free_runs(repo, req.most_slots, most_runs)? })
        })
        .await
    }

    pub async fn read(&self, client: &str, req: &PorReadRequest) -> Result<PorReadAnswer, ProviderError> {
        bounded(req.indices.len())?;
        self.with_log(client, async |log, repo| {
            Ok(PorReadAnswer { read: ByteBuf::from(log.read(repo, &req.indices).await?.to_bytes()) })
        })
        .await
    }

    /// One proof per part of the provider's schedule; the client checks them against its own.
    pub async fn audit(&self, client: &str, req: &PorAuditRequest) -> Result<PorAuditAnswer, ProviderError> {
        if req.lambda == 0 || req.lambda > MAX_POR_LAMBDA {
            return Err(PorError::Lambda { lambda: req.lambda }.into());
        }
        self.with_log(client, async |log, repo| {
            let mut answers = Vec::new();
            for part in parts(&log.schedule()) {
                let chosen = picks(&req.seed, &part, req.lambda as usize);
                answers.push(match log.prove(repo, &part, &chosen).await {
                    Ok(proof) => PorPartAnswer::Proof(ByteBuf::from(proof.to_bytes())),
                    // One part's bytes lost: said for that part, and the others still proven.
                    Err(PorStoreError::Store(
                        e @ (StoreError::NotFound { .. } | StoreError::BadRange { .. } | StoreError::Corrupt { .. }),
                    )) => PorPartAnswer::Lost(e.to_string()),
                    Err(e) => return Err(e.into()),
                });
            }
            Ok(PorAuditAnswer { parts: answers })
        })
        .await
    }

    pub async fn region(&self, client: &str, req: &PorRegionRequest) -> Result<PorRegionAnswer, ProviderError> {
        let region = Region::from_byte(req.region);
        self.with_log(client, async |log, repo| {
            let schedule = log.schedule();
            let slots = match region {
                Region::Level(level) if u32::from(level) <= schedule.levels() => 2u64 << level,
                Region::Level(_) | Region::Raw => return Err(PorError::NoRegion { region }.into()),
                Region::Coded => 2 * schedule.capacity(),
            };
            // A level's slots are groups of writes: the bound is on U's slots they carry.
            let group = log.region_width(region) / log.width();
            bounded((req.count as usize).saturating_mul(group))?;
            if req.first >= slots {
                return Err(PorError::PagePastEnd { region, slots, first: req.first }.into());
            }
            let page = req.first..req.first.saturating_add(u64::from(req.count));
            Ok(PorRegionAnswer { region: ByteBuf::from(log.region_range(repo, region, page).await?.to_bytes()) })
        })
        .await
    }

    pub async fn restore(&self, client: &str, req: &PorRestoreRequest) -> Result<PorStatus, ProviderError> {
        bounded(req.indices.len())?;
        let slots = slots_from_bytes(&req.slots).map_err(PorError::BadSlots)?;
        let width = self.shape.width;
        if slots.len() != req.indices.len() * width {
            return Err(PorError::SlotsPerIndex { elements: slots.len(), indices: req.indices.len(), width }.into());
        }
        let slots: Vec<(u64, Vec<u64>)> =
            req.indices.iter().copied().zip(slots.chunks_exact(width).map(<[u64]>::to_vec)).collect();
        self.with_log(client, async |log, repo| {
            log.restore(repo, &slots).await?;
            Ok(status(log))
        })
        .await
    }
}

//! What the HTTP front asks of a provider, as one object-safe trait: each operation, and the
//! housekeeping the server runs beside them.
//!
//! Every method has a body that runs the honest step of one of the [`Provider`]'s services
//! (its [`Files`](crate::Files), [`PorLogs`](crate::PorLogs) or [`Groups`](crate::Groups),
//! reached through [`Service::honest`]), so [`Provider`] serves by naming itself, and a
//! decorator (the liar, in its own crate) overrides only the operations it changes. The
//! services do not implement this trait, so a body cannot call itself. The front holds an
//! `Arc<dyn Service>`: handlers are compiled once, whatever serves behind them.

use crate::provider::{Provider, ProviderError, PutState, ReadPlan};
use crate::vicos::{CosReader, CosUpload};
use crate::Limits;
use bytes::Bytes;
use futures::future::BoxFuture;
use vouch_core::namespace::VersionRecord;
use vouch_core::pdp::{FileId, SchemeId};
use vouch_proto::por::*;
use vouch_proto::vicos::*;
use vouch_proto::{
    Attempt, AuditAnswer, AuditRequest, BlockList, CommitStagedRequest, Committed, CommittedPuts, EditRequest,
    HealBlocksRequest, HealedBlocks, LastCommit, Listing, Located, Log, PruneRequest, ReadChunk, RemoveRequest,
    StagedUpload, WireBlock,
};
use vouch_store::{Compaction, CompactionPolicy};

/// An operation's answer, on its way.
pub type Answer<'a, T> = BoxFuture<'a, Result<T, ProviderError>>;

/// A provider as the server sees it. See the module docs.
pub trait Service: Send + Sync + std::fmt::Debug + 'static {
    /// The honest provider that does the work (itself, or the one a decorator wraps).
    fn honest(&self) -> &Provider;

    // Files and the namespace: reads.

    fn located(&self, client: &str, name: &str, want: Option<u64>) -> Result<Located, ProviderError> {
        self.honest().files().located(client, name, want)
    }

    fn listing(&self, client: &str) -> Result<Listing, ProviderError> {
        self.honest().files().listing(client)
    }

    fn log(&self, client: &str, name: &str) -> Result<Log, ProviderError> {
        self.honest().files().log(client, name)
    }

    fn read_plan(
        &self,
        client: &str,
        name: &str,
        want: Option<u64>,
        start: u64,
        end: u64,
    ) -> Result<(Located, ReadPlan), ProviderError> {
        self.honest().files().read_plan(client, name, want, start, end)
    }

    fn read_chunk<'a>(&'a self, client: &'a str, plan: &'a ReadPlan, starts: &'a [u64]) -> Answer<'a, ReadChunk> {
        Box::pin(self.honest().files().read_chunk(client, plan, starts))
    }

    fn block_list(&self, client: &str, name: &str, want: Option<u64>) -> Result<BlockList, ProviderError> {
        self.honest().files().block_list(client, name, want)
    }

    fn audit<'a>(&'a self, client: &'a str, req: &'a AuditRequest, max_bytes: u64) -> Answer<'a, AuditAnswer> {
        Box::pin(self.honest().files().audit(client, req, max_bytes))
    }

    fn last_commit<'a>(&'a self, client: &'a str, name: &'a str, attempts: &'a [Attempt]) -> Answer<'a, LastCommit> {
        Box::pin(self.honest().files().last_commit(client, name, attempts))
    }

    fn heal_blocks<'a>(&'a self, client: &'a str, req: &'a HealBlocksRequest) -> Answer<'a, HealedBlocks> {
        Box::pin(self.honest().files().heal_blocks(client, req))
    }

    // Files and the namespace: changes.

    fn put_blocks<'a>(&'a self, put: &'a mut PutState, blocks: Vec<WireBlock>) -> Answer<'a, ()> {
        Box::pin(self.honest().files().put_blocks(put, blocks))
    }

    fn begin_stage(
        &self,
        client: &str,
        name: &str,
        file: FileId,
        scheme: SchemeId,
        attempt: Attempt,
    ) -> Result<PutState, ProviderError> {
        self.honest().files().begin_stage(client, name, file, scheme, attempt)
    }

    fn stage_upload<'a>(
        &'a self,
        put: PutState,
        record: VersionRecord,
        limits: &'a Limits,
    ) -> Answer<'a, StagedUpload> {
        Box::pin(self.honest().files().stage_upload(put, record, limits))
    }

    fn commit_staged<'a>(
        &'a self,
        client: &'a str,
        req: &'a CommitStagedRequest,
        limits: &'a Limits,
    ) -> Answer<'a, CommittedPuts> {
        Box::pin(self.honest().files().commit_staged(client, req, limits))
    }

    fn edit<'a>(&'a self, client: &'a str, req: EditRequest) -> Answer<'a, Committed> {
        Box::pin(self.honest().files().edit(client, req))
    }

    fn remove<'a>(&'a self, client: &'a str, req: &'a RemoveRequest) -> Answer<'a, Committed> {
        Box::pin(self.honest().files().remove(client, req))
    }

    fn prune<'a>(&'a self, client: &'a str, req: &'a PruneRequest) -> Answer<'a, Committed> {
        Box::pin(self.honest().files().prune(client, req))
    }

    // PoR logs.

    fn por_init<'a>(&'a self, client: &'a str, req: &'a PorInitRequest) -> Answer<'a, PorStatus> {
        Box::pin(self.honest().por().init(client, req))
    }

    fn por_status<'a>(&'a self, client: &'a str, req: &'a PorStatusRequest) -> Answer<'a, PorStatus> {
        Box::pin(self.honest().por().status(client, req))
    }

    fn por_plan<'a>(&'a self, client: &'a str, req: &'a PorPlanRequest) -> Answer<'a, PorContext> {
        Box::pin(self.honest().por().plan(client, req))
    }

    fn por_write<'a>(&'a self, client: &'a str, req: &'a PorWriteRequest) -> Answer<'a, PorStatus> {
        Box::pin(self.honest().por().write(client, req))
    }

    fn por_label<'a>(&'a self, client: &'a str, req: &'a PorLabelRequest) -> Answer<'a, PorLabelAnswer> {
        Box::pin(self.honest().por().label(client, req))
    }

    fn por_free<'a>(&'a self, client: &'a str, req: &'a PorFreeRequest) -> Answer<'a, PorFreeAnswer> {
        Box::pin(self.honest().por().free(client, req))
    }

    fn por_read<'a>(&'a self, client: &'a str, req: &'a PorReadRequest) -> Answer<'a, PorReadAnswer> {
        Box::pin(self.honest().por().read(client, req))
    }

    fn por_audit<'a>(&'a self, client: &'a str, req: &'a PorAuditRequest) -> Answer<'a, PorAuditAnswer> {
        Box::pin(self.honest().por().audit(client, req))
    }

    fn por_more<'a>(&'a self, client: &'a str, req: &'a PorMoreRequest) -> Answer<'a, PorMoreAnswer> {
        Box::pin(self.honest().por().more(client, req))
    }

    fn por_stage<'a>(&'a self, client: &'a str, req: &'a PorStageRequest) -> Answer<'a, PorStaged> {
        Box::pin(self.honest().por().stage(client, req))
    }

    fn por_region<'a>(&'a self, client: &'a str, req: &'a PorRegionRequest) -> Answer<'a, PorRegionAnswer> {
        Box::pin(self.honest().por().region(client, req))
    }

    fn por_restore<'a>(&'a self, client: &'a str, req: &'a PorRestoreRequest) -> Answer<'a, PorStatus> {
        Box::pin(self.honest().por().restore(client, req))
    }

    // VICOS groups and their objects.

    fn aip_create<'a>(&'a self, req: &'a AipCreate, caller: &'a str) -> Answer<'a, AipAck> {
        Box::pin(self.honest().groups().create(req, caller))
    }

    fn aip_admit<'a>(&'a self, req: &'a AipAdmit, caller: &'a str) -> Answer<'a, AipAck> {
        Box::pin(self.honest().groups().admit(req, caller))
    }

    fn aip_invoke<'a>(&'a self, req: &'a AipInvoke, caller: &'a str) -> Answer<'a, AipReply> {
        Box::pin(self.honest().groups().invoke(req, caller))
    }

    fn aip_commit<'a>(&'a self, req: &'a AipCommit, caller: &'a str) -> Answer<'a, AipWork> {
        Box::pin(self.honest().groups().commit(req, caller))
    }

    fn aip_commit_auth<'a>(&'a self, req: &'a AipCommitAuth, caller: &'a str) -> Answer<'a, AipWork> {
        Box::pin(self.honest().groups().commit_auth(req, caller))
    }

    fn aip_work<'a>(&'a self, req: &'a AipWorkRequest, caller: &'a str) -> Answer<'a, AipWork> {
        Box::pin(self.honest().groups().work(req, caller))
    }

    fn aip_history<'a>(&'a self, req: &'a AipHistory, caller: &'a str) -> Answer<'a, AipHistoryPage> {
        Box::pin(self.honest().groups().history(req, caller))
    }

    fn cos_begin_put(&self, object: &CosObject, max: u64, caller: &str) -> Result<CosUpload, ProviderError> {
        self.honest().groups().begin_put(object, max, caller)
    }

    fn cos_write<'a>(&'a self, upload: &'a mut CosUpload, bytes: Bytes) -> Answer<'a, ()> {
        Box::pin(upload.write(bytes))
    }

    fn cos_finish(&self, upload: CosUpload) -> Answer<'_, AipAck> {
        Box::pin(async move { upload.finish().await.map(|()| AipAck {}) })
    }

    fn cos_abort(&self, upload: CosUpload) -> BoxFuture<'_, ()> {
        Box::pin(upload.abort())
    }

    fn cos_get<'a>(&'a self, object: &'a CosObject, caller: &'a str) -> Answer<'a, CosReader> {
        Box::pin(self.honest().groups().get(object, caller))
    }

    fn cos_delete<'a>(&'a self, req: &'a CosDelete, caller: &'a str) -> Answer<'a, AipAck> {
        Box::pin(self.honest().groups().delete(req, caller))
    }

    // Housekeeping.

    fn sweep_orphans(&self) -> Answer<'_, usize> {
        Box::pin(self.honest().sweep_orphans())
    }

    fn maintain<'a>(&'a self, policy: &'a CompactionPolicy) -> Answer<'a, Compaction> {
        Box::pin(self.honest().maintain(policy))
    }

    fn close(&self) -> Answer<'_, ()> {
        Box::pin(self.honest().close())
    }
}

/// The honest provider serves as it is.
impl Service for Provider {
    fn honest(&self) -> &Provider {
        self
    }
}

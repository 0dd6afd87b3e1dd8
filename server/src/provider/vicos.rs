//! VICOS's requests (paper 003, Sec. 4), over the provider's repository: the groups'
//! sequencers journal in its metadata store, their objects live in its blob store. The work
//! is in `crate::vicos`; here is what it needs of the provider.

use super::ProviderError;
use crate::vicos::{cos, CosReader, CosUpload, Sequencer};
use std::sync::Arc;
use vouch_proto::vicos::{
    AipAck, AipAdmit, AipCommit, AipCommitAuth, AipCreate, AipHistory, AipHistoryPage, AipInvoke, AipReply, AipWork,
    AipWorkRequest, CosDelete, CosObject,
};
use vouch_store::Repository;

/// The VICOS groups of a provider: their sequencers (journalled in the repository's metadata)
/// and their objects (in its blob store). Groups are shared, not per client.
#[derive(Debug)]
pub struct Groups {
    repo: Arc<Repository>,
    sequencer: Sequencer,
}

impl Groups {
    pub(super) fn over(repo: Arc<Repository>) -> Self {
        Groups { repo, sequencer: Sequencer::default() }
    }

    // `caller`: the provider client sending the message; each member of a group speaks
    // through one (`crate::vicos::sequencer`).

    pub async fn create(&self, req: &AipCreate, caller: &str) -> Result<AipAck, ProviderError> {
        self.sequencer.create(&self.repo, req, caller).await
    }

    pub async fn admit(&self, req: &AipAdmit, caller: &str) -> Result<AipAck, ProviderError> {
        self.sequencer.admit(&self.repo, req, caller).await
    }

    pub async fn invoke(&self, req: &AipInvoke, caller: &str) -> Result<AipReply, ProviderError> {
        self.sequencer.invoke(&self.repo, req, caller).await
    }

    pub async fn commit(&self, req: &AipCommit, caller: &str) -> Result<AipWork, ProviderError> {
        self.sequencer.commit(&self.repo, req, caller).await
    }

    pub async fn commit_auth(&self, req: &AipCommitAuth, caller: &str) -> Result<AipWork, ProviderError> {
        self.sequencer.commit_auth(&self.repo, req, caller).await
    }

    pub async fn work(&self, req: &AipWorkRequest, caller: &str) -> Result<AipWork, ProviderError> {
        self.sequencer.work(&self.repo, req, caller).await
    }

    pub async fn history(&self, req: &AipHistory, caller: &str) -> Result<AipHistoryPage, ProviderError> {
        self.sequencer.history(&self.repo, req, caller).await
    }

    /// `(b, t)` of a group: its last applied and last invoked operation (for tests and logs).
    pub async fn progress(&self, group: &str) -> Result<(u64, u64), ProviderError> {
        self.sequencer.progress(&self.repo, group).await
    }

    /// How many VICOS groups hold their sequencer's state in memory now (the others replay
    /// their journal at their next message): for monitoring, and the tests of eviction.
    pub fn in_memory(&self) -> usize {
        self.sequencer.loaded()
    }

    /// The most bytes of a group's history one answer shows ([`crate::Limits::aip_page_bytes`]).
    pub fn set_page_bytes(&self, bytes: usize) {
        self.sequencer.set_page_bytes(bytes);
    }

    /// How long an answered COMMIT may wait for its journal write
    /// ([`crate::Limits::vicos_flush_after`]).
    pub fn set_flush_after(&self, after: std::time::Duration) {
        self.sequencer.set_flush_after(after);
    }

    /// Makes every entry the groups' sequencers hold in memory durable (a clean shutdown: the
    /// COMMITs answered before they were durable).
    pub async fn flush(&self) {
        self.sequencer.flush(&self.repo).await;
    }

    /// Groups unused this long leave memory ([`crate::Limits::group_idle`]).
    pub fn set_idle(&self, idle: std::time::Duration) {
        self.sequencer.set_idle(idle);
    }

    /// Starts a `cos-put` of at most `max` bytes, by provider client `caller` (one of the
    /// group's members').
    pub fn begin_put(&self, object: &CosObject, max: u64, caller: &str) -> Result<CosUpload, ProviderError> {
        self.sequencer.reaches_objects(&self.repo, &object.group, caller)?;
        cos::begin_put(self.repo.blobs(), object, max)
    }

    pub async fn get(&self, object: &CosObject, caller: &str) -> Result<CosReader, ProviderError> {
        self.sequencer.reaches_objects(&self.repo, &object.group, caller)?;
        cos::get(self.repo.blobs(), object).await
    }

    pub async fn delete(&self, req: &CosDelete, caller: &str) -> Result<AipAck, ProviderError> {
        self.sequencer.reaches_objects(&self.repo, &req.group, caller)?;
        let deleted = cos::delete(self.repo.blobs(), req).await?;
        tracing::debug!(group = req.group, deleted, "cos-del");
        Ok(AipAck {})
    }
}

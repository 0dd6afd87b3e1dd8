//! VICOS's requests (paper 003, Sec. 4), over the provider's repository: the groups'
//! sequencers journal in its metadata store, their objects live in its blob store. The work
//! is in `crate::vicos`; here is what it needs of the provider.

use super::{Provider, ProviderError};
use crate::vicos::{cos, CosReader, CosUpload};
use bytes::Bytes;
use vouch_proto::vicos::{
    AipAck, AipAdmit, AipCommit, AipCommitAuth, AipCreate, AipHistory, AipHistoryPage, AipInvoke, AipReply, AipWork,
    AipWorkRequest, CosDelete, CosObject,
};

impl Provider {
    // `caller`: the provider client sending the message; each member of a group speaks
    // through one (`crate::vicos::sequencer`).

    pub async fn aip_create(&self, req: &AipCreate, caller: &str) -> Result<AipAck, ProviderError> {
        self.vicos.create(&self.repo, req, caller).await
    }

    pub async fn aip_admit(&self, req: &AipAdmit, caller: &str) -> Result<AipAck, ProviderError> {
        self.vicos.admit(&self.repo, req, caller).await
    }

    pub async fn aip_invoke(&self, req: &AipInvoke, caller: &str) -> Result<AipReply, ProviderError> {
        self.vicos.invoke(&self.repo, req, caller).await
    }

    pub async fn aip_commit(&self, req: &AipCommit, caller: &str) -> Result<AipWork, ProviderError> {
        self.vicos.commit(&self.repo, req, caller).await
    }

    pub async fn aip_commit_auth(&self, req: &AipCommitAuth, caller: &str) -> Result<AipWork, ProviderError> {
        self.vicos.commit_auth(&self.repo, req, caller).await
    }

    pub async fn aip_work(&self, req: &AipWorkRequest, caller: &str) -> Result<AipWork, ProviderError> {
        self.vicos.work(&self.repo, req, caller).await
    }

    pub async fn aip_history(&self, req: &AipHistory, caller: &str) -> Result<AipHistoryPage, ProviderError> {
        self.vicos.history(&self.repo, req, caller).await
    }

    /// `(b, t)` of a group: its last applied and last invoked operation (for tests and logs).
    pub async fn aip_progress(&self, group: &str) -> Result<(u64, u64), ProviderError> {
        self.vicos.progress(&self.repo, group).await
    }

    /// How many VICOS groups hold their sequencer's state in memory now (the others replay
    /// their journal at their next message): for monitoring, and the tests of eviction.
    pub fn vicos_groups_in_memory(&self) -> usize {
        self.vicos.loaded()
    }

    /// The most bytes of a group's history one answer shows ([`crate::Limits::aip_page_bytes`]).
    pub fn set_aip_page_bytes(&self, bytes: usize) {
        self.vicos.set_page_bytes(bytes);
    }

    /// Groups unused this long leave memory ([`crate::Limits::group_idle`]).
    pub fn set_group_idle(&self, idle: std::time::Duration) {
        self.vicos.set_idle(idle);
    }

    /// Starts a `cos-put` of at most `max` bytes, by provider client `caller` (one of the
    /// group's members').
    pub fn cos_begin_put(&self, object: &CosObject, max: u64, caller: &str) -> Result<CosUpload, ProviderError> {
        self.vicos.reaches_objects(&self.repo, &object.group, caller)?;
        cos::begin_put(self.repo.blobs(), object, max)
    }

    pub async fn cos_write(&self, upload: &mut CosUpload, bytes: Bytes) -> Result<(), ProviderError> {
        upload.write(bytes).await
    }

    pub async fn cos_finish(&self, upload: CosUpload) -> Result<AipAck, ProviderError> {
        upload.finish().await.map(|()| AipAck {})
    }

    pub async fn cos_abort(&self, upload: CosUpload) {
        upload.abort().await
    }

    pub async fn cos_get(&self, object: &CosObject, caller: &str) -> Result<CosReader, ProviderError> {
        self.vicos.reaches_objects(&self.repo, &object.group, caller)?;
        cos::get(self.repo.blobs(), object).await
    }

    pub async fn cos_delete(&self, req: &CosDelete, caller: &str) -> Result<AipAck, ProviderError> {
        self.vicos.reaches_objects(&self.repo, &req.group, caller)?;
        let deleted = cos::delete(self.repo.blobs(), req).await?;
        tracing::debug!(group = req.group, deleted, "cos-del");
        Ok(AipAck {})
    }
}

//! VICOS's requests (paper 003, Sec. 4), passed through for now: the place where a lying
//! sequencer or object store (a forked history, a replayed REPLY, an altered object) goes,
//! through the honest provider's steps as the other lies do.

use super::Misbehaving;
use crate::provider::ProviderError;
use crate::vicos::{CosReader, CosUpload};
use bytes::Bytes;
use vouch_proto::vicos::{
    AipAck, AipCommit, AipCommitAuth, AipCreate, AipInvoke, AipReply, AipWork, AipWorkRequest, CosDelete, CosObject,
};

impl Misbehaving {
    pub async fn aip_create(&self, req: &AipCreate) -> Result<AipAck, ProviderError> {
        self.honest.aip_create(req).await
    }

    pub async fn aip_invoke(&self, req: &AipInvoke) -> Result<AipReply, ProviderError> {
        self.honest.aip_invoke(req).await
    }

    pub async fn aip_commit(&self, req: &AipCommit) -> Result<AipWork, ProviderError> {
        self.honest.aip_commit(req).await
    }

    pub async fn aip_commit_auth(&self, req: &AipCommitAuth) -> Result<AipWork, ProviderError> {
        self.honest.aip_commit_auth(req).await
    }

    pub async fn aip_work(&self, req: &AipWorkRequest) -> Result<AipWork, ProviderError> {
        self.honest.aip_work(req).await
    }

    pub fn cos_begin_put(&self, object: &CosObject, max: u64) -> Result<CosUpload, ProviderError> {
        self.honest.cos_begin_put(object, max)
    }

    pub async fn cos_write(&self, upload: &mut CosUpload, bytes: Bytes) -> Result<(), ProviderError> {
        self.honest.cos_write(upload, bytes).await
    }

    pub async fn cos_finish(&self, upload: CosUpload) -> Result<AipAck, ProviderError> {
        self.honest.cos_finish(upload).await
    }

    pub async fn cos_abort(&self, upload: CosUpload) {
        self.honest.cos_abort(upload).await
    }

    pub async fn cos_get(&self, object: &CosObject) -> Result<CosReader, ProviderError> {
        self.honest.cos_get(object).await
    }

    pub async fn cos_delete(&self, req: &CosDelete) -> Result<AipAck, ProviderError> {
        self.honest.cos_delete(req).await
    }
}

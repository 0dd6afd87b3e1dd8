//! VICOS's requests (paper 003, Sec. 4), passed through for now: the place where a lying
//! sequencer or object store (a forked history, a replayed REPLY, an altered object) goes,
//! through the honest provider's steps as the other lies do.

use super::{Misbehave, Misbehaving, FORK_OPERATIONS};
use crate::provider::ProviderError;
use crate::vicos::{CosReader, CosUpload};
use bytes::Bytes;

/// The second history of a forked group (a test double's: the name could be a real group's).
fn fork_of(group: &str) -> String {
    format!("{group}--fork")
}
use vouch_proto::vicos::{
    AipAck, AipAdmit, AipCommit, AipCommitAuth, AipCreate, AipHistory, AipHistoryPage, AipInvoke, AipReply, AipWork,
    AipWorkRequest, CosDelete, CosObject,
};

impl Misbehaving {
    pub async fn aip_create(&self, req: &AipCreate, caller: &str) -> Result<AipAck, ProviderError> {
        let ack = self.honest.aip_create(req, caller).await?;
        if self.lie == Misbehave::ForkAip {
            self.honest.aip_create(&AipCreate { group: fork_of(&req.group), ..req.clone() }, caller).await?;
        }
        Ok(ack)
    }

    /// Under [`Misbehave::ForkAip`], a member is admitted to the fork too: its messages may
    /// go to either history.
    pub async fn aip_admit(&self, req: &AipAdmit, caller: &str) -> Result<AipAck, ProviderError> {
        let ack = self.honest.aip_admit(req, caller).await?;
        if self.lie == Misbehave::ForkAip {
            self.honest.aip_admit(&AipAdmit { group: fork_of(&req.group), ..req.clone() }, caller).await?;
        }
        Ok(ack)
    }

    pub async fn aip_invoke(&self, req: &AipInvoke, caller: &str) -> Result<AipReply, ProviderError> {
        if self.lie == Misbehave::ForkAip && !req.from.is_multiple_of(2) {
            // Counted at INVOKE: a member's operation runs wholly on the history it began on.
            let mut counts = self.fork_invokes.lock().expect("fork counts");
            let count = counts.entry((req.group.clone(), req.from)).or_default();
            *count += 1;
        }
        self.honest.aip_invoke(&AipInvoke { group: self.routed(&req.group, req.from), ..req.clone() }, caller).await
    }

    pub async fn aip_commit(&self, req: &AipCommit, caller: &str) -> Result<AipWork, ProviderError> {
        self.honest.aip_commit(&AipCommit { group: self.routed(&req.group, req.from), ..req.clone() }, caller).await
    }

    pub async fn aip_commit_auth(&self, req: &AipCommitAuth, caller: &str) -> Result<AipWork, ProviderError> {
        let group = self.routed(&req.group, req.from);
        self.honest.aip_commit_auth(&AipCommitAuth { group, ..req.clone() }, caller).await
    }

    pub async fn aip_work(&self, req: &AipWorkRequest, caller: &str) -> Result<AipWork, ProviderError> {
        self.honest.aip_work(&AipWorkRequest { group: self.routed(&req.group, req.from), ..req.clone() }, caller).await
    }

    pub async fn aip_history(&self, req: &AipHistory, caller: &str) -> Result<AipHistoryPage, ProviderError> {
        self.honest.aip_history(&AipHistory { group: self.routed(&req.group, req.from), ..req.clone() }, caller).await
    }

    /// The group a member's AIP message goes to: under [`Misbehave::ForkAip`], an odd
    /// member's messages go to the fork until it invokes its operation number
    /// `FORK_OPERATIONS + 1` (counted at INVOKE, so an operation runs wholly on one history).
    fn routed(&self, group: &str, from: u32) -> String {
        if self.lie != Misbehave::ForkAip || from.is_multiple_of(2) {
            return group.to_string();
        }
        let counts = self.fork_invokes.lock().expect("fork counts");
        match counts.get(&(group.to_string(), from)).copied().unwrap_or(0) <= FORK_OPERATIONS {
            true => fork_of(group),
            false => group.to_string(),
        }
    }

    pub fn cos_begin_put(&self, object: &CosObject, max: u64, caller: &str) -> Result<CosUpload, ProviderError> {
        self.honest.cos_begin_put(object, max, caller)
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

    pub async fn cos_get(&self, object: &CosObject, caller: &str) -> Result<CosReader, ProviderError> {
        self.honest.cos_get(object, caller).await
    }

    pub async fn cos_delete(&self, req: &CosDelete, caller: &str) -> Result<AipAck, ProviderError> {
        self.honest.cos_delete(req, caller).await
    }
}

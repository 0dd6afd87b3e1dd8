//! Lies about changes: refused, miscounted, forgotten or unanswered commits.

use super::{Misbehave, Misbehaving};
use crate::provider::{ProviderError, PutState, Staged};
use crate::Limits;
use std::sync::atomic::Ordering;
use vouch_core::namespace::VersionRecord;
use vouch_core::pdp::{FileId, SchemeId};
use vouch_core::Edit;
use vouch_proto::{
    Attempt, CommitStagedRequest, Committed, EditRequest, PruneRequest, RemoveRequest, StagedUpload, WireBlock,
};
use vouch_store::StoreError;

impl Misbehaving {
    pub async fn begin_put(
        &self,
        client: &str,
        name: &str,
        file: FileId,
        scheme: SchemeId,
        attempt: Attempt,
    ) -> Result<PutState, ProviderError> {
        self.honest.begin_put(client, name, file, scheme, attempt).await
    }

    pub async fn put_blocks(&self, put: &mut PutState, blocks: Vec<WireBlock>) -> Result<(), ProviderError> {
        self.receive(&blocks);
        self.honest.put_blocks(put, blocks).await
    }

    pub async fn finish_put(&self, put: PutState, record: VersionRecord) -> Result<Committed, ProviderError> {
        self.refuse_once()?;
        let staged = self.honest.stage_put(put, record).await?;
        self.commit(staged).await
    }

    pub fn begin_stage(
        &self,
        client: &str,
        name: &str,
        file: FileId,
        scheme: SchemeId,
        attempt: Attempt,
    ) -> Result<PutState, ProviderError> {
        self.honest.begin_stage(client, name, file, scheme, attempt)
    }

    pub async fn stage_upload(
        &self,
        put: PutState,
        record: VersionRecord,
        limits: &Limits,
    ) -> Result<StagedUpload, ProviderError> {
        self.honest.stage_upload(put, record, limits).await
    }

    pub async fn commit_staged(
        &self,
        client: &str,
        req: &CommitStagedRequest,
        limits: &Limits,
    ) -> Result<Committed, ProviderError> {
        self.refuse_once()?;
        let staged = self.honest.stage_staged(client, req, limits).await?;
        self.commit(staged).await
    }

    pub async fn edit(&self, client: &str, req: EditRequest) -> Result<Committed, ProviderError> {
        self.receive(&req.blocks);
        self.refuse_once()?;
        let staged = self.honest.stage_edit(client, req).await?;
        self.commit(staged).await
    }

    pub async fn remove(&self, client: &str, req: &RemoveRequest) -> Result<Committed, ProviderError> {
        self.refuse_once()?;
        let staged = self.honest.stage_remove(client, req).await?;
        self.commit(staged).await
    }

    pub async fn prune(&self, client: &str, req: &PruneRequest) -> Result<Committed, ProviderError> {
        self.refuse_once()?;
        let staged = self.honest.stage_prune(client, req).await?;
        self.commit(staged).await
    }

    pub async fn sweep_orphans(&self) -> Result<usize, ProviderError> {
        self.honest.sweep_orphans().await
    }

    pub async fn maintain(
        &self,
        policy: &vouch_store::CompactionPolicy,
    ) -> Result<vouch_store::Compaction, ProviderError> {
        self.honest.maintain(policy).await
    }

    pub async fn close(&self) -> Result<(), ProviderError> {
        self.honest.close().await
    }

    /// [`Misbehave::RefuseCommit`] keeps the (nonce, tag) of every block it receives.
    fn receive(&self, blocks: &[WireBlock]) {
        if self.lie == Misbehave::RefuseCommit {
            let mut received = self.received.lock().expect("received tags");
            received.extend(blocks.iter().map(|b| (b.nonce, b.tag.to_vec())));
        }
    }

    /// [`Misbehave::RefuseCommit`] refuses the first change after a start, once its blocks
    /// are received.
    fn refuse_once(&self) -> Result<(), ProviderError> {
        if self.lie == Misbehave::RefuseCommit && !self.refused.swap(true, Ordering::SeqCst) {
            return Err(ProviderError::Store(StoreError::Backend {
                at: "the commit".into(),
                detail: "blocks received, commit refused on purpose (refuse-commit)".into(),
            }));
        }
        Ok(())
    }

    /// The honest commit's steps, with this provider's lie between them.
    async fn commit(&self, staged: Staged<'_>) -> Result<Committed, ProviderError> {
        let miscount = self.lie == Misbehave::WrongCount;
        let mut planned = self.honest.plan(staged)?;
        if miscount && planned.name_exists() {
            add_one(planned.version_edits());
        }
        let mut proven = self.honest.prove_versions(planned)?;
        if miscount && !proven.appends_to_existing() {
            add_one(proven.namespace_edits());
        }
        let prepared = self.honest.prove_namespace(proven)?;
        match self.lie {
            // Valid proofs for a change never made durable: later answers come from before it.
            Misbehave::Rollback => Ok(prepared.committed.clone()),
            Misbehave::DropAnswer => {
                self.honest.apply(prepared).await?;
                Err(ProviderError::Store(StoreError::Backend {
                    at: "the answer".into(),
                    detail: "committed, then lost on purpose (drop-answer)".into(),
                }))
            }
            Misbehave::SlowCommit => {
                tokio::time::sleep(super::SLOW_COMMIT).await;
                let committed = self.honest.apply(prepared).await?;
                tokio::time::sleep(super::SLOW_COMMIT).await;
                Ok(committed)
            }
            _ => self.honest.apply(prepared).await,
        }
    }
}

/// [`Misbehave::WrongCount`]: an insert made twice, or one more position removed than asked
/// (a version appended twice or one more pruned; a new name entered twice, or a removal
/// that takes the next name too); every proof is then honest for what the provider did.
fn add_one(edits: &mut Vec<Edit>) {
    match edits.first().cloned() {
        Some(insert @ Edit::Insert { .. }) => edits.push(insert),
        Some(Edit::Remove { .. }) => {
            let last = edits.iter().map(|e| e.at()).max().unwrap_or(0);
            edits.push(Edit::Remove { at: last + 1 });
        }
        _ => {}
    }
}

//! Lies about changes: refused, miscounted, forgotten or unanswered commits.

use super::{Misbehave, Misbehaving};
use std::sync::atomic::Ordering;
use vouch_core::Edit;
use vouch_proto::{CommitStagedRequest, Committed, CommittedPuts, EditRequest, PruneRequest, RemoveRequest, WireBlock};
use vouch_server::Limits;
use vouch_server::{committed_puts, only_outcome, Batch, Planned, Proven, ProviderError, PutState, Steps};
use vouch_store::StoreError;

impl Misbehaving {
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

    /// The honest commit's steps, with this provider's lie between them: each change's
    /// outcome.
    async fn commit(&self, batch: Batch<'_>) -> Result<Vec<Result<Committed, ProviderError>>, ProviderError> {
        let mut steps = Lies { wrong_count: self.lie == Misbehave::WrongCount };
        let prepared = self.honest.files().prepare(batch, &mut steps).await?;
        match self.lie {
            // Valid proofs for changes never made durable: later answers come from before them.
            Misbehave::Rollback => Ok(self.honest.files().discard(prepared)),
            Misbehave::DropAnswer => {
                self.honest.files().apply(prepared).await?;
                Err(ProviderError::Store(StoreError::Backend {
                    at: "the answer".into(),
                    detail: "committed, then lost on purpose (drop-answer)".into(),
                }))
            }
            Misbehave::SlowCommit => {
                tokio::time::sleep(super::SLOW_COMMIT).await;
                let committed = self.honest.files().apply(prepared).await?;
                tokio::time::sleep(super::SLOW_COMMIT).await;
                Ok(committed)
            }
            _ => self.honest.files().apply(prepared).await,
        }
    }

    /// [`Misbehaving::commit`] of a batch of one change.
    async fn commit_one(&self, batch: Batch<'_>) -> Result<Committed, ProviderError> {
        only_outcome(self.commit(batch).await?)
    }
}

/// The lies told between a change's steps.
struct Lies {
    wrong_count: bool,
}

impl Steps for Lies {
    fn planned(&mut self, planned: &mut Planned) {
        if self.wrong_count && planned.name_exists() {
            add_one(planned.version_edits());
        }
    }

    fn proven(&mut self, proven: &mut Proven) {
        if self.wrong_count && !proven.appends_to_existing() {
            add_one(proven.namespace_edits());
        }
    }
}

pub(crate) async fn put_blocks(
    liar: &Misbehaving,
    put: &mut PutState,
    blocks: Vec<WireBlock>,
) -> Result<(), ProviderError> {
    liar.receive(&blocks);
    liar.honest.files().put_blocks(put, blocks).await
}

pub(crate) async fn commit_staged(
    liar: &Misbehaving,
    client: &str,
    req: &CommitStagedRequest,
    limits: &Limits,
) -> Result<CommittedPuts, ProviderError> {
    liar.refuse_once()?;
    let staged = liar.honest.files().stage_staged(client, req, limits).await?;
    Ok(committed_puts(&liar.commit(staged).await?))
}

pub(crate) async fn edit(liar: &Misbehaving, client: &str, req: EditRequest) -> Result<Committed, ProviderError> {
    liar.receive(&req.blocks);
    liar.refuse_once()?;
    let staged = liar.honest.files().stage_edit(client, req).await?;
    liar.commit_one(staged).await
}

pub(crate) async fn remove(liar: &Misbehaving, client: &str, req: &RemoveRequest) -> Result<Committed, ProviderError> {
    liar.refuse_once()?;
    let staged = liar.honest.files().stage_remove(client, req).await?;
    liar.commit_one(staged).await
}

pub(crate) async fn prune(liar: &Misbehaving, client: &str, req: &PruneRequest) -> Result<Committed, ProviderError> {
    liar.refuse_once()?;
    let staged = liar.honest.files().stage_prune(client, req).await?;
    liar.commit_one(staged).await
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

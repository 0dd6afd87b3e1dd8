//! The client's side of commit intents (see [`crate::Intent`]): a change left unsettled (its
//! answer lost) is settled from proven state before anything else talks to the provider.

use crate::client::Client;
use crate::error::ClientError;
use crate::intent::Settled;
use crate::ledger::Committing;
use vouch_proto::{LastCommit, LastCommitRequest};

impl Client {
    /// Whether a change was sent and not yet settled (its answer lost, or not checked yet).
    pub fn has_unsettled_change(&self) -> bool {
        self.ledger.pending().is_some()
    }

    /// Settles a change left unsettled, unless a commit is in flight (it settles first, and
    /// the intent it records is its own). Every read calls this first.
    pub(crate) async fn settle(&self) -> Result<(), ClientError> {
        if self.ledger.pending().is_none() {
            return Ok(());
        }
        let Some(commit) = self.ledger.try_lock() else { return Ok(()) };
        self.settle_locked(&commit).await
    }

    /// Settles the unsettled change, against proven state: adopts the root after it when the
    /// provider proves it applied, keeps the root when it proves the state before.
    pub(crate) async fn settle_locked(&self, commit: &Committing<'_>) -> Result<(), ClientError> {
        let Some(intent) = self.ledger.pending() else { return Ok(()) };
        let answer: LastCommit = self
            .remote
            .call(&LastCommitRequest { name: intent.name.clone(), attempt: intent.attempt })
            .await
            .map_err(|e| e.absence_unproven("the last commit"))?;
        match intent.settle(&answer)? {
            Settled::Applied(root) => {
                tracing::info!(name = %intent.name, "an interrupted change was applied; its new root adopted");
                self.ledger.adopt(commit, root)
            }
            Settled::NotApplied => {
                // The root stays as it is (after an accepted answer it is already the new one:
                // a provider that then went back is caught by the next answer).
                tracing::info!(name = %intent.name, "an interrupted change was not applied");
                self.ledger.forget(commit)
            }
        }
    }
}

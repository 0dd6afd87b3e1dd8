//! The client's side of commit intents (see [`crate::intent`]): record one before a commit
//! leaves, forget it once the answer is accepted, and settle a leftover one before anything
//! else talks to the provider.

use crate::client::Client;
use crate::error::ClientError;
use crate::intent::{self, Intent, Settled};
use crate::state::Root;
use vouch_proto::Op;
use vouch_proto::{LastCommit, LastCommitRequest};

impl Client {
    fn pending(&self) -> std::sync::MutexGuard<'_, Option<Intent>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a change was sent and not yet settled (its answer lost, or not checked yet).
    pub fn has_unsettled_change(&self) -> bool {
        self.pending().is_some()
    }

    /// Records `intent` durably; call before its commit request leaves.
    pub(crate) fn intend(&self, intent: Intent) -> Result<(), ClientError> {
        intent::record(&self.state.dir, &intent)?;
        *self.pending() = Some(intent);
        Ok(())
    }

    /// Takes the intent from the state directory (one written where `intend` could not be
    /// called: a put records it in its upload task).
    pub(crate) fn reload_pending(&self) -> Result<(), ClientError> {
        *self.pending() = intent::load(&self.state.dir)?;
        Ok(())
    }

    /// Records the root after an accepted change, then forgets the change's intent (in this
    /// order: a crash in between leaves an intent that settles to this same root).
    pub(crate) fn adopt(&self, root: Root) -> Result<(), ClientError> {
        self.state.save_root(root)?;
        intent::clear(&self.state.dir)?;
        *self.pending() = None;
        Ok(())
    }

    /// Settles a change left unsettled, against proven state: adopts the root after it when
    /// the provider proves it applied, keeps the root when it proves the state before. Every
    /// operation that talks to the provider calls this first.
    pub(crate) async fn settle(&self) -> Result<(), ClientError> {
        if self.pending().is_none() {
            return Ok(());
        }
        let _one = self.settling.lock().await;
        let Some(intent) = self.pending().clone() else { return Ok(()) };
        let answer: LastCommit = self
            .remote
            .call(Op::LastCommit, &LastCommitRequest { name: intent.name.clone() })
            .await
            .map_err(|e| e.absence_unproven("the last commit"))?;
        match intent.settle(&answer)? {
            Settled::Applied(root) => {
                tracing::info!(name = %intent.name, "an interrupted change was applied; its new root adopted");
                self.adopt(root)
            }
            Settled::NotApplied => {
                // The root stays as it is (after an accepted answer it is already the new one:
                // a provider that then went back is caught by the next answer).
                tracing::info!(name = %intent.name, "an interrupted change was not applied");
                intent::clear(&self.state.dir)?;
                *self.pending() = None;
                Ok(())
            }
        }
    }
}

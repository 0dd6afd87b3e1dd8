//! Settling a change whose answer the client never got: the client asks `last-commit` and
//! verifies, against the root it held before the change, either the lookup of the name (the
//! change was not applied) or the stored answer of the last commit (it was).
//!
//! The answer must describe a settled state: a change of the same client still in flight (a
//! put whose client died after its last frame, an edit being applied) could commit just after
//! a "not applied" answer, and the client would then take the provider's honest state for a
//! lie. So every change holds its client's gate for reading while it runs, and `last-commit`
//! waits for the gate's write side.

use super::*;
use tokio::sync::{OwnedRwLockReadGuard, RwLock};
use vouch_proto::LastCommit;

impl Provider {
    fn gate(&self, client: &str) -> Arc<RwLock<()>> {
        let mut gates = self.changes.lock().expect("change gates");
        gates.entry(client.to_string()).or_default().clone()
    }

    /// Held by a change of `client` for as long as it may still commit.
    pub(super) async fn changing(&self, client: &str) -> OwnedRwLockReadGuard<()> {
        self.gate(client).read_owned().await
    }

    /// The lookup of `name` in the current namespace and the last commit's stored answer, once
    /// no change of `client` is in flight.
    pub async fn last_commit(&self, client: &str, name: &str) -> Result<LastCommit, ProviderError> {
        vouch_core::namespace::check_name(name).map_err(bad)?;
        let _settled = self.gate(client).write_owned().await;
        let (answer, _) = self.lookup(client, name)?;
        let committed = match self.repo.record(&keys::last_commit(client))? {
            None => None,
            Some(bytes) => Some(vouch_proto::decode(&bytes).map_err(|e| corrupt("the last commit's answer", e))?),
        };
        Ok(LastCommit { lookup: wire_lookup(&answer), committed })
    }
}

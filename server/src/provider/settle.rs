//! Settling a change whose answer the client never got: the client asks `last-commit` and
//! verifies, against the root it held before the change, either the lookup of the name (the
//! change was not applied) or the stored answer of the last commit (it was).
//!
//! The answer must describe a settled state: a change of the same client still in flight (a
//! put whose client died after its last frame, an edit being applied) could commit just after
//! a "not applied" answer, and the client would then take the provider's honest state for a
//! lie. So every change holds its client's gate for reading while it runs, and `last-commit`
//! waits for the gate's write side. A change that reaches the gate only after `last-commit`
//! (its request was still in transit when its client died and the next one settled it) finds
//! its [`Attempt`] marked settled and is refused.
//!
//! Settled attempts are kept in memory: a restart of the provider drops every request in
//! transit, so none can arrive later.

use super::*;
use std::collections::VecDeque;
use tokio::sync::{OwnedRwLockReadGuard, RwLock};
use vouch_proto::{Attempt, LastCommit, Outcome, MAX_GROUP};

/// How many settled attempts a client's gate remembers. One settling's (up to a group
/// commit's [`MAX_GROUP`]) suffices for a client that crashes once; a few more cover crashes
/// in a row while old requests are still in transit.
const SETTLED_KEPT: usize = 8 * MAX_GROUP;

/// A client's change gate: held for reading by each change in flight, for writing by
/// `last-commit`; it holds the attempts settled lately.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    settled: VecDeque<Attempt>,
}

/// A change's hold on its client's gate (see [`Files::changing`]).
pub(crate) type InFlight = OwnedRwLockReadGuard<Gate>;

impl Gate {
    fn settle(&mut self, attempt: Attempt) {
        if !self.settled.contains(&attempt) {
            if self.settled.len() == SETTLED_KEPT {
                self.settled.pop_front();
            }
            self.settled.push_back(attempt);
        }
    }
}

impl Files {
    fn gate(&self, client: &str) -> Arc<RwLock<Gate>> {
        let mut gates = self.changes.lock().expect("change gates");
        gates.entry(client.to_string()).or_default().clone()
    }

    /// Held by a change of `client` for as long as it may still commit; refused when one of
    /// the change's attempts (one per change committed at once) was settled already.
    pub(super) async fn changing(&self, client: &str, attempts: &[Attempt]) -> Result<InFlight, ProviderError> {
        let gate = self.gate(client).read_owned().await;
        if attempts.iter().any(|a| gate.settled.contains(a)) {
            return Err(FilesError::Settled.into());
        }
        Ok(gate)
    }

    /// The lookup of `name` in the current namespace and the last commit's stored outcomes,
    /// once no change of `client` is in flight; `attempts` are settled from here on.
    pub async fn last_commit(
        &self,
        client: &str,
        name: &str,
        attempts: &[Attempt],
    ) -> Result<LastCommit, ProviderError> {
        vouch_core::namespace::check_name(name).map_err(FilesError::BadName)?;
        if attempts.is_empty() || attempts.len() > MAX_GROUP {
            return Err(FilesError::GroupSize { puts: attempts.len(), max: MAX_GROUP }.into());
        }
        let mut gate = self.gate(client).write_owned().await;
        for attempt in attempts {
            gate.settle(*attempt);
            self.drop_staged(client, attempt);
        }
        let (answer, _) = self.lookup(client, name)?;
        Ok(LastCommit { lookup: wire_lookup(&answer), committed: self.last_outcomes(client)? })
    }

    /// The outcomes of the last commit of `client` (kept as one change's answer before group
    /// commits).
    fn last_outcomes(&self, client: &str) -> Result<Vec<Outcome>, ProviderError> {
        let damaged = |e| corrupt("the last commit's answer", e);
        if let Some(bytes) = self.repo.record(&keys::last_commit(client))? {
            return vouch_proto::decode(&bytes).map_err(damaged);
        }
        match self.repo.record(&keys::last_commit_of_one(client))? {
            Some(bytes) => Ok(vec![Outcome::Committed(vouch_proto::decode(&bytes).map_err(damaged)?)]),
            None => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Blocks;
    use serde_bytes::ByteBuf;
    use vouch_proto::{CommitStagedRequest, StagedPut};

    #[test]
    fn a_gate_remembers_the_latest_settled_attempts() {
        let mut gate = Gate::default();
        let attempt = |i: usize| Attempt((i as u128).to_le_bytes());
        for i in 0..SETTLED_KEPT + 3 {
            gate.settle(attempt(i));
            gate.settle(attempt(i));
        }
        assert_eq!(gate.settled.len(), SETTLED_KEPT);
        assert!(!gate.settled.contains(&attempt(2)));
        assert!(gate.settled.contains(&attempt(3)));
        assert!(gate.settled.contains(&attempt(SETTLED_KEPT + 2)));
    }

    /// A change's request that reaches the provider after its attempt was settled (its
    /// client died with it in transit) is refused, of every kind; other attempts go on.
    #[tokio::test]
    async fn a_change_arriving_after_its_attempt_was_settled_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let provider = Provider::open_dir(dir.path(), &Blocks::Local).unwrap();
        let provider = provider.files();
        let (settled, fresh) = (Attempt([1; 16]), Attempt([2; 16]));
        provider.last_commit("c", "f", &[settled]).await.unwrap();
        let refused = |r: Result<(), ProviderError>, what: &str| {
            assert!(matches!(r, Err(ProviderError::Files(FilesError::Settled))), "{what}: {r:?}");
        };
        let record = ByteBuf::from(vec![0; 8]);
        let staged = CommitStagedRequest { puts: vec![StagedPut { name: "f".into(), attempt: settled, record }] };
        refused(provider.commit_staged("c", &staged, &crate::Limits::default()).await.map(drop), "put");
        let edit = EditRequest { name: "f".into(), base: 1, edits: vec![], blocks: vec![], time: 0, attempt: settled };
        refused(provider.edit("c", edit).await.map(drop), "edit");
        refused(provider.remove("c", &RemoveRequest { name: "f".into(), attempt: settled }).await.map(drop), "remove");
        let prune = PruneRequest { name: "f".into(), versions: vec![1], attempt: settled };
        refused(provider.prune("c", &prune).await.map(drop), "prune");
        // Another attempt, or another client's, is not fenced.
        assert!(provider.changing("c", &[fresh]).await.is_ok());
        assert!(provider.changing("d", &[settled]).await.is_ok());
        assert!(provider.changing("c", &[fresh, settled]).await.is_err(), "one settled attempt fences the group");
    }
}

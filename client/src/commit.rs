//! A commit in progress ([`Commit`]): the client's commit lock held from the proven lookup a
//! change starts from to the adoption of the root after it (the concurrency model is in the
//! crate documentation). Its reads are checked against the current root alone, which cannot
//! move under it (`Commit::reads`, in `crate::reads`).
//!
//! Also the client's side of commit intents (see [`crate::Intent`]): a change left unsettled
//! (its answer lost) is settled from proven state before anything else talks to the provider
//! ([`Commit::begin`], [`Commit::settle_pending`]); and the commits that drop what is stored,
//! [`Client::remove`] and [`Client::prune`]. Puts and edits commit through this type too
//! (`crate::put`, `crate::staged`, `crate::edits`).

use crate::client::Client;
use crate::error::ClientError;
use crate::intent::{new_attempt, Intent, Planned, Settled};
use crate::ledger::Committing;
use crate::root::Root;
use crate::verify::{self, valid_name};
use crate::violation::ViolationKind;
use crate::waiting::StagedCommit;
use vouch_core::namespace::{Change, EntryRecord, Found, VersionRecord};
use vouch_core::por::copy::is_por_file;
use vouch_proto::{Attempt, Committed, LastCommit, LastCommitRequest, PruneRequest, RemoveRequest};

/// A commit in progress: the client's commit lock, held while it lives, over a settled root.
pub(crate) struct Commit<'a> {
    pub(crate) client: &'a Client,
    /// The commit lock: what the PoR log's steps under a commit take as proof of it.
    pub(crate) lock: Committing<'a>,
}

impl<'a> Commit<'a> {
    /// Waits for the commit lock and settles a change left unsettled: a commit starts from
    /// a settled root.
    pub(crate) async fn begin(client: &'a Client) -> Result<Commit<'a>, ClientError> {
        let commit = Commit { client, lock: client.ledger.lock().await };
        commit.settle().await?;
        Ok(commit)
    }

    /// Settles a change left unsettled, unless a commit is in flight (it settles first, and
    /// the intent it records is its own). Every read calls this first.
    pub(crate) async fn settle_pending(client: &Client) -> Result<(), ClientError> {
        if client.ledger.pending().is_none() {
            return Ok(());
        }
        let Some(lock) = client.ledger.try_lock() else { return Ok(()) };
        Commit { client, lock }.settle().await
    }

    /// Settles the unsettled change, against proven state: adopts the root after it when the
    /// provider proves it applied, keeps the root when it proves the state before.
    async fn settle(&self) -> Result<(), ClientError> {
        let ledger = &self.client.ledger;
        let Some(intent) = ledger.pending() else { return Ok(()) };
        let answer: LastCommit = self
            .client
            .remote
            .call(&LastCommitRequest { name: intent.name().into(), attempts: intent.attempts() })
            .await
            .map_err(|e| e.absence_unproven("the last commit"))?;
        match intent.settle(&answer)? {
            Settled::Applied(root) => {
                tracing::info!(name = %intent.name(), "an interrupted change was applied; its new root adopted");
                ledger.adopt(&self.lock, root)
            }
            Settled::NotApplied => {
                // The root stays as it is (after an accepted answer it is already the new one:
                // a provider that then went back is caught by the next answer).
                tracing::info!(name = %intent.name(), "an interrupted change was not applied");
                ledger.forget(&self.lock)
            }
        }
    }

    /// Commits the upload staged under `attempt` as version `record` of `name`, alone (a
    /// group of one, see `crate::group`): `found` is the name at the root now.
    pub(crate) async fn commit_staged(
        &self,
        name: &str,
        found: &Found,
        record: VersionRecord,
        attempt: Attempt,
    ) -> Result<Committed, ClientError> {
        let proven = (found.clone(), self.client.ledger.root());
        let put = StagedCommit { name: name.into(), record, attempt, proven };
        let mut outcomes = self.commit_puts(std::slice::from_ref(&put)).await?;
        outcomes.pop().unwrap_or_else(|| {
            Err(ClientError::violation(ViolationKind::MalformedAnswer, "a commit of one put without its outcome"))
        })
    }

    /// Checks the commit's proofs and, when they hold, records the new root (and forgets the
    /// commit's intent: the change is settled). The answer's lookup must show `found`, when
    /// given.
    pub(crate) fn accept(
        &self,
        name: &str,
        found: Option<&Found>,
        change: &Change,
        answer: &Committed,
    ) -> Result<Option<EntryRecord>, ClientError> {
        let old = self.client.ledger.root();
        let (root, entry) = verify::commit(&old, name, found, change, answer)?;
        self.client.ledger.adopt(&self.lock, root)?;
        self.client.cache.carry(&old, &root, name, entry.as_ref());
        Ok(entry)
    }
}

impl Client {
    /// Whether a change was sent and not yet settled (its answer lost, or not checked yet).
    pub fn has_unsettled_change(&self) -> bool {
        self.ledger.pending().is_some()
    }

    /// The namespace root after settling a change left unsettled, if there is one (asks the
    /// provider then): the root to hand to a third-party auditor.
    pub async fn settled_root(&self) -> Result<Root, ClientError> {
        Commit::settle_pending(self).await?;
        Ok(self.root())
    }

    /// Removes `name` and all its versions.
    pub async fn remove(&self, name: &str) -> Result<(), ClientError> {
        valid_name(name)?;
        let commit = Commit::begin(self).await?;
        // Proven present: a "not found" from here on is a lie.
        let latest = commit.reads().version(name, None).await?;
        let freed = match is_por_file(&latest.entry.file) {
            true => Some(self.por().owe_delete(&commit.lock, name, &commit.reads().log(name).await?, &[]).await?),
            false => None,
        };
        let attempt = new_attempt();
        self.ledger.intend(Intent::one(self.root(), name, Planned::Remove, attempt))?;
        let answer: Committed = self
            .remote
            .call(&RemoveRequest { name: name.into(), attempt })
            .await
            .map_err(|e| e.absence_unproven(name))?;
        let found = Found::At { index: verify::lookup_from_wire(&answer.lookup)?.index, entry: latest.entry };
        commit.accept(name, Some(&found), &Change::Remove, &answer)?;
        match freed {
            Some(freed) => self.por().pay_delete(&commit.lock, freed).await,
            None => Ok(()),
        }
    }

    /// Drops old versions of `name` (never the latest).
    pub async fn prune(&self, name: &str, versions: &[u64]) -> Result<(), ClientError> {
        valid_name(name)?;
        let commit = Commit::begin(self).await?;
        let all = commit.reads().log(name).await?;
        let latest = commit.reads().version(name, None).await?;
        let mut positions = Vec::new();
        for v in versions {
            let p = all
                .iter()
                .position(|r| r.number == *v)
                .ok_or_else(|| ClientError::NotFound(format!("version {v} of {name}")))?;
            if p + 1 == all.len() {
                return Err(ClientError::BadInput("the latest version cannot be pruned".into()));
            }
            positions.push(p as u64);
        }
        let freed = match is_por_file(&latest.entry.file) {
            true => {
                let (mut gone, mut kept) = (Vec::new(), Vec::new());
                for (p, v) in all.iter().enumerate() {
                    let side = if positions.contains(&(p as u64)) { &mut gone } else { &mut kept };
                    side.push(*v);
                }
                Some(self.por().owe_delete(&commit.lock, name, &gone, &kept).await?)
            }
            false => None,
        };
        // Every version pruned is in the proven log: a "not found" from here on is a lie.
        let attempt = new_attempt();
        self.ledger.intend(Intent::one(self.root(), name, Planned::Prune(positions.clone()), attempt))?;
        let answer: Committed = self
            .remote
            .call(&PruneRequest { name: name.into(), versions: versions.to_vec(), attempt })
            .await
            .map_err(|e| e.absence_unproven(&format!("{name} or a version of it")))?;
        let found = Found::At { index: verify::lookup_from_wire(&answer.lookup)?.index, entry: latest.entry };
        commit.accept(name, Some(&found), &Change::Prune(positions), &answer)?;
        match freed {
            Some(freed) => self.por().pay_delete(&commit.lock, freed).await,
            None => Ok(()),
        }
    }
}

//! Changes of one client committed at once, in steps, each a plain value the next one takes:
//!
//! 1. [`Batch`]: the changes staged (each one's blocks stored and its new block list built),
//!    the write lock and the client's change gate held (`write.rs`: `stage_edit`, ...; a
//!    group of staged puts, `staged.rs`);
//! 2. for each change in turn, [`Planned`]: the name's lookup and the edits of its version
//!    list; then [`Proven`]: the version list updated with its proof, and the namespace's
//!    edits; then its namespace update proven and applied to the namespace in memory, so that
//!    the next change is proven over the namespace this one leaves;
//! 3. [`Prepared`]: every change's outcome (its answer, or why it was refused: a refused one
//!    changed nothing), and the one repository commit that makes the applied ones durable;
//! 4. applied: that commit made, the new lists cached.
//!
//! From the first change's plan to the durable write, the client's applying gate is held for
//! writing: no read answers from the namespace in memory while it is ahead of the store.
//! Should the write fail, the namespace in memory is dropped, and the next use loads what is
//! durable.
//!
//! The honest provider runs the steps in a row ([`Files::commit`]). The lying decorator (the
//! `vouch-misbehave` crate) passes its own [`Steps`] to change what it lies about between
//! them, and may skip the durable write ([`Files::discard`]), so that this file holds no lie
//! and every lie still comes with proofs honest for what the provider did.

use super::settle::InFlight;
use super::*;
use tokio::sync::{MutexGuard, OwnedRwLockWriteGuard};
use vouch_core::namespace::CommitPlan;
use vouch_core::{Digest, UpdateProof};
use vouch_proto::{CommittedPuts, ErrorBody, Outcome};
use write::NewList;

/// One change ready to commit: its blocks stored, its new block list built.
pub struct Staged {
    pub(super) name: String,
    pub(super) change: Change,
    pub(super) new_list: Option<NewList>,
    /// An edit's proof of its block-list update.
    pub(super) file_update: Option<Vec<u8>>,
    /// The change's blocks, stored, committed with the change.
    pub(super) blocks: Option<StoredBlocks>,
}

impl Staged {
    /// A change that stores no block (a remove, a prune).
    pub(super) fn without_blocks(name: &str, change: Change) -> Self {
        Staged { name: name.to_string(), change, new_list: None, file_update: None, blocks: None }
    }
}

/// The locks a commit holds from its staging to its durable write.
pub(super) struct Holding<'a> {
    pub(super) _write: MutexGuard<'a, ()>,
    /// The client's change gate (see `settle`).
    pub(super) _in_flight: InFlight,
}

/// Changes of one client, committed at once and in this order; a change refused already (a
/// staged put that is not there) keeps its place with why.
pub struct Batch<'a> {
    pub(super) client: String,
    pub(super) changes: Vec<Result<Staged, ProviderError>>,
    pub(super) holding: Holding<'a>,
}

impl<'a> Batch<'a> {
    /// A batch of one change.
    pub(super) fn one(client: &str, staged: Staged, holding: Holding<'a>) -> Self {
        Batch { client: client.to_string(), changes: vec![Ok(staged)], holding }
    }
}

/// What a provider does between the steps of each change: nothing, when honest (the liar
/// changes the edits it makes).
pub trait Steps {
    fn planned(&mut self, _planned: &mut Planned) {}
    fn proven(&mut self, _proven: &mut Proven) {}
}

/// The steps as they are.
struct Honest;

impl Steps for Honest {}

/// A change with its lookup and the edits of its version list.
pub struct Planned {
    staged: Staged,
    answer: LookupProof,
    plan: CommitPlan,
    records: Vec<VersionRecord>,
}

impl Planned {
    /// Whether the name exists before the change.
    pub fn name_exists(&self) -> bool {
        self.plan.exists
    }

    /// The edits of the name's version list, in the order they are applied.
    pub fn version_edits(&mut self) -> &mut Vec<Edit> {
        &mut self.plan.versions
    }
}

/// A change with its version list updated and the namespace's edits.
pub struct Proven {
    planned: Planned,
    /// The version list's update proof, new root and size (none for a removed name).
    versions: Option<(UpdateProof, Digest, u64)>,
    new_entry: Option<EntryRecord>,
    namespace_edits: Vec<Edit>,
}

impl Proven {
    /// Whether the change appends a version to a name that exists (the namespace's edit only
    /// replaces its entry).
    pub fn appends_to_existing(&self) -> bool {
        self.planned.plan.exists && matches!(self.planned.staged.change, Change::Append(_))
    }

    /// The edits of the namespace list, in the order they are applied.
    pub fn namespace_edits(&mut self) -> &mut Vec<Edit> {
        &mut self.namespace_edits
    }
}

/// A change proven: its answer, the commit of its records and blocks, the new version's list
/// to cache, and the namespace's edits with the new entry, to apply in memory.
struct Made {
    committed: Committed,
    commit: Commit,
    list: Option<(String, Arc<FlexList>)>,
    namespace_edits: Vec<Edit>,
    new_entry: Option<EntryRecord>,
}

/// A batch applied to the namespace in memory: each change's outcome, and the commit that
/// makes the applied ones durable.
pub struct Prepared<'a> {
    outcomes: Vec<Result<Committed, ProviderError>>,
    commit: Commit,
    ahead: Ahead<'a>,
    /// The new versions' lists, cached once committed.
    cache: Vec<(String, Arc<FlexList>)>,
    _holding: Holding<'a>,
}

/// A client's namespace in memory, once a change is applied to it, is ahead of the store
/// until the batch is durable: should the batch go no further (its write failed, a lie
/// discarded it, or the request was dropped while it waited), the namespace is dropped from
/// memory, and the next use loads what is durable.
/// It holds the client's applying gate: no read comes between the namespace's going ahead and
/// its being dropped.
struct Ahead<'a> {
    files: &'a Files,
    client: String,
    /// Whether a change was applied in memory and is not durable yet.
    ahead: bool,
    /// Released after the namespace is dropped (a field drops after `drop` runs).
    _applying: OwnedRwLockWriteGuard<()>,
}

impl Drop for Ahead<'_> {
    fn drop(&mut self) {
        if self.ahead {
            self.files.forget_namespace(&self.client);
        }
    }
}

impl Prepared<'_> {
    /// The answers the batch gives, as they go on the wire.
    pub fn outcomes(&self) -> Vec<Outcome> {
        self.outcomes.iter().map(outcome).collect()
    }
}

/// The answer to a `commit-staged`: each put's outcome.
pub fn committed_puts(outcomes: &[Result<Committed, ProviderError>]) -> CommittedPuts {
    CommittedPuts { puts: outcomes.iter().map(outcome).collect() }
}

/// The outcome of a batch of one change.
pub fn only_outcome(mut outcomes: Vec<Result<Committed, ProviderError>>) -> Result<Committed, ProviderError> {
    match (outcomes.pop(), outcomes.is_empty()) {
        (Some(outcome), true) => outcome,
        _ => Err(FilesError::InconsistentChange.into()),
    }
}

/// A change's outcome on the wire: a refusal says what a request of it alone was answered.
fn outcome(result: &Result<Committed, ProviderError>) -> Outcome {
    match result {
        Ok(committed) => Outcome::Committed(committed.clone()),
        Err(e) => Outcome::Refused(ErrorBody { code: e.code(), message: e.to_string() }),
    }
}

impl Files {
    /// Commits a batch: every step below in a row. Each change's outcome, in order.
    pub(super) async fn commit(
        &self,
        batch: Batch<'_>,
    ) -> Result<Vec<Result<Committed, ProviderError>>, ProviderError> {
        let prepared = self.prepare(batch, &mut Honest).await?;
        self.apply(prepared).await
    }

    /// Commits a batch of one change: its answer, or why it was refused.
    pub(super) async fn commit_one(&self, batch: Batch<'_>) -> Result<Committed, ProviderError> {
        only_outcome(self.commit(batch).await?)
    }

    /// Each change of the batch in turn: planned, proven and applied to the namespace in
    /// memory, or refused (a refusal of the request's own making: a [`ProviderError::Files`];
    /// any other error fails the whole batch, and nothing of it is applied).
    pub async fn prepare<'a>(
        &'a self,
        batch: Batch<'a>,
        steps: &mut impl Steps,
    ) -> Result<Prepared<'a>, ProviderError> {
        let Batch { client, changes, holding } = batch;
        let applying = self.applying_gate(&client).write_owned().await;
        let mut prepared = Prepared {
            outcomes: Vec::with_capacity(changes.len()),
            commit: self.repo.begin(),
            ahead: Ahead { files: self, client, ahead: false, _applying: applying },
            cache: Vec::new(),
            _holding: holding,
        };
        for change in changes {
            let result = match change {
                Ok(staged) => self.prepare_change(&mut prepared, staged, steps),
                Err(e) => Err(e),
            };
            match result {
                // Dropped, the batch takes what it applied in memory with it (see `Ahead`).
                Err(e) if !matches!(e, ProviderError::Files(_)) => return Err(e),
                result => prepared.outcomes.push(result),
            }
        }
        if prepared.ahead.ahead {
            // Durable with the changes themselves: a client that never got this answer
            // verifies it later.
            let outcomes = prepared.outcomes();
            let client = &prepared.ahead.client;
            prepared.commit.put_record(&keys::last_commit(client), vouch_proto::encode(&outcomes));
            prepared.commit.delete_record(&keys::last_commit_of_one(client));
        }
        Ok(prepared)
    }

    /// One change, planned, proven and applied to the namespace in memory (its records and
    /// blocks added to the batch's commit); nothing of it when it is refused.
    fn prepare_change(
        &self,
        batch: &mut Prepared<'_>,
        staged: Staged,
        steps: &mut impl Steps,
    ) -> Result<Committed, ProviderError> {
        let client = batch.ahead.client.clone();
        let mut planned = self.plan(&client, staged)?;
        steps.planned(&mut planned);
        let mut proven = self.prove_versions(planned)?;
        steps.proven(&mut proven);
        let made = self.prove_namespace(&client, proven)?;
        let namespace = self.namespace(&client)?;
        // From here the namespace in memory is ahead of the store (or half changed, should
        // the update fail): the batch drops it unless it becomes durable.
        batch.ahead.ahead = true;
        let applied = namespace.write().expect("namespace").apply(&made.namespace_edits, made.new_entry.as_ref());
        applied.map_err(|e| corrupt("namespace", e))?;
        batch.commit.absorb(made.commit);
        batch.cache.extend(made.list);
        Ok(made.committed)
    }

    /// The name's lookup and the version-list edits the change makes (the client recomputes
    /// the same edits from the same lookup).
    fn plan(&self, client: &str, staged: Staged) -> Result<Planned, ProviderError> {
        let namespace = self.namespace(client)?;
        let looked_up = namespace.read().expect("namespace").lookup(&staged.name);
        let (answer, found) = looked_up.map_err(|e| corrupt("namespace", e))?;
        let plan = commit_edits(&found, &staged.change).map_err(|e| match (&staged.change, e) {
            (Change::Append(_), vouch_core::namespace::NamespaceError::Inconsistent(_)) => FilesError::NotLatest,
            (_, e) => FilesError::Plan(e),
        })?;
        let records = match &found {
            Found::At { entry, .. } => self.versions(client, &entry.file)?,
            Found::Absent { .. } => Vec::new(),
        };
        Ok(Planned { staged, answer, plan, records })
    }

    /// Applies the version-list edits, and derives the namespace's edit from the result.
    fn prove_versions(&self, planned: Planned) -> Result<Proven, ProviderError> {
        let versions = match &planned.staged.change {
            Change::Remove => None,
            _ => {
                let mut versions = version_list(&planned.records)?;
                let proof = versions.multi_update(&planned.plan.versions).map_err(FilesError::VersionsEdit)?;
                Some((proof, versions.root(), versions.total_len()))
            }
        };
        let (edit, new_entry) = planned.plan.namespace_edit(
            &planned.staged.name,
            &planned.staged.change,
            versions.as_ref().map(|(_, root, len)| (*root, *len)),
        );
        Ok(Proven { planned, versions, new_entry, namespace_edits: vec![edit] })
    }

    /// Proves the namespace's edits (without applying them) and gathers the blocks, records
    /// and lists of the change into a commit of its own.
    fn prove_namespace(&self, client: &str, proven: Proven) -> Result<Made, ProviderError> {
        let Proven { planned, versions, new_entry, namespace_edits } = proven;
        let Planned { staged, answer, plan, records } = planned;
        let Staged { name: _, change, new_list, file_update, blocks } = staged;
        let namespace = self.namespace(client)?;
        let update = namespace.read().expect("namespace").prove_update(&namespace_edits, new_entry.as_ref());
        let (namespace_update, entries) = update.map_err(FilesError::NamespaceEdit)?;
        let mut commit = self.repo.begin();
        if let Some(blocks) = blocks {
            commit.add_blocks(blocks);
        }
        for entry in &entries.put {
            commit.put_record(&keys::entry(client, &entry.name), entry.to_bytes());
        }
        for name in &entries.delete {
            commit.delete_record(&keys::entry(client, name));
        }
        let mut cache = None;
        match (&change, &new_entry) {
            (Change::Append(record), Some(_)) => {
                commit.put_record(&keys::version(client, &record.file, record.number), record.to_bytes().to_vec());
                let new = new_list.ok_or(FilesError::NoBlockList)?;
                let list_name = keys::list(client, &record.file, record.number);
                let list = Arc::new(new.list);
                match new.base {
                    Some((base, changes)) => commit.save_edited_list(&list_name, &base, list.clone(), changes),
                    None => commit.save_list(&list_name, list.clone()),
                };
                cache = Some((list_name, list));
            }
            (Change::Prune(positions), Some(_)) => {
                let dropped: Vec<&VersionRecord> = positions.iter().map(|&p| &records[p as usize]).collect();
                let kept: Vec<&VersionRecord> =
                    records.iter().filter(|r| !dropped.iter().any(|d| d.number == r.number)).collect();
                self.forget_versions(client, &plan.entry.file, &dropped, &kept, &mut commit)?;
            }
            (Change::Remove, None) => {
                let all: Vec<&VersionRecord> = records.iter().collect();
                self.forget_versions(client, &plan.entry.file, &all, &[], &mut commit)?;
            }
            _ => return Err(FilesError::InconsistentChange.into()),
        }
        let committed = Committed {
            lookup: wire_lookup(&answer),
            file_update: file_update.map(ByteBuf::from),
            versions_update: versions.map(|(p, _, _)| ByteBuf::from(p.to_bytes())),
            namespace_update: ByteBuf::from(namespace_update.to_bytes()),
        };
        Ok(Made { committed, commit, list: cache, namespace_edits, new_entry })
    }

    /// Makes a prepared batch durable, then releases its locks. Each change's outcome.
    pub async fn apply(&self, prepared: Prepared<'_>) -> Result<Vec<Result<Committed, ProviderError>>, ProviderError> {
        let started = std::time::Instant::now();
        let Prepared { outcomes, commit, mut ahead, cache, _holding } = prepared;
        if ahead.ahead {
            // A failed write, or a request dropped during it, leaves `ahead` to drop the
            // namespace in memory.
            self.repo.commit(commit).await?;
            ahead.ahead = false;
        }
        // The applying gate goes with it.
        drop(ahead);
        tracing::debug!(stored = ?started.elapsed(), changes = outcomes.len(), "commit");
        for (name, list) in cache {
            self.cache_list(name, list);
        }
        drop(_holding);
        Ok(outcomes)
    }

    /// Drops a prepared batch without making it durable (the namespace in memory goes back to
    /// what the store holds): the liar's answers "for a change never made", each honest for
    /// the state it claims.
    pub fn discard(&self, prepared: Prepared<'_>) -> Vec<Result<Committed, ProviderError>> {
        let Prepared { outcomes, ahead, .. } = prepared;
        drop(ahead);
        outcomes
    }
}

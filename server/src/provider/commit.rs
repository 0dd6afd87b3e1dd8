//! A change in steps, each a plain value the next one takes:
//!
//! 1. [`Staged`]: the change's blocks stored and its new block list built, the write lock and
//!    the client's change gate held (`write.rs`: `stage_put`, `stage_edit`, ...);
//! 2. [`Planned`]: the name's lookup and the edits of its version list;
//! 3. [`Proven`]: the version list updated with its proof, and the namespace's edits;
//! 4. [`Prepared`]: the namespace updated with its proof, the answer, and the repository
//!    commit that makes the change durable;
//! 5. applied: the commit made, the new list cached.
//!
//! The honest provider runs them in a row ([`Files::commit`]). The lying decorator
//! (the `vouch-misbehave` crate) runs them one at a time and changes what it lies about in between,
//! so that this file holds no lie and every lie still comes with proofs honest for what the
//! provider did.

use super::settle::InFlight;
use super::*;
use tokio::sync::MutexGuard;
use vouch_core::namespace::CommitPlan;
use vouch_core::{Digest, UpdateProof};
use write::NewList;

/// A change ready to commit.
pub struct Staged<'a> {
    pub(super) client: String,
    pub(super) name: String,
    pub(super) change: Change,
    pub(super) new_list: Option<NewList>,
    /// An edit's proof of its block-list update.
    pub(super) file_update: Option<Vec<u8>>,
    /// The change's blocks, stored, committed with the change.
    pub(super) blocks: Option<StoredBlocks>,
    pub(super) _write: MutexGuard<'a, ()>,
    /// The client's change gate, held until the change is durable (see `settle`).
    pub(super) _in_flight: Option<InFlight>,
}

impl<'a> Staged<'a> {
    /// A change that stores no block (a remove, a prune).
    pub(super) fn without_blocks(
        client: &str,
        name: &str,
        change: Change,
        write: MutexGuard<'a, ()>,
        in_flight: InFlight,
    ) -> Self {
        Staged {
            client: client.to_string(),
            name: name.to_string(),
            change,
            new_list: None,
            file_update: None,
            blocks: None,
            _write: write,
            _in_flight: Some(in_flight),
        }
    }
}

/// A change with its lookup and the edits of its version list.
pub struct Planned<'a> {
    staged: Staged<'a>,
    namespace: Arc<RwLock<NamespaceTree>>,
    answer: LookupProof,
    plan: CommitPlan,
    records: Vec<VersionRecord>,
}

impl Planned<'_> {
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
pub struct Proven<'a> {
    planned: Planned<'a>,
    /// The version list's update proof, new root and size (none for a removed name).
    versions: Option<(UpdateProof, Digest, u64)>,
    new_entry: Option<EntryRecord>,
    namespace_edits: Vec<Edit>,
}

impl Proven<'_> {
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

/// A change with its answer and the commit that makes it durable.
pub struct Prepared<'a> {
    pub committed: Committed,
    commit: Commit,
    client: String,
    /// The namespace, and the edits it takes once the batch is durable.
    namespace: Arc<RwLock<NamespaceTree>>,
    namespace_edits: Vec<Edit>,
    new_entry: Option<EntryRecord>,
    /// The new version's list, cached once committed.
    cache: Option<(String, Arc<FlexList>)>,
    _staged_locks: (MutexGuard<'a, ()>, Option<InFlight>),
}

impl Files {
    /// Commits a staged change: every step below in a row.
    pub(super) async fn commit(&self, staged: Staged<'_>) -> Result<Committed, ProviderError> {
        let planned = self.plan(staged)?;
        let proven = self.prove_versions(planned)?;
        let prepared = self.prove_namespace(proven)?;
        self.apply(prepared).await
    }

    /// The name's lookup and the version-list edits the change makes (the client recomputes
    /// the same edits from the same lookup).
    pub fn plan<'a>(&self, staged: Staged<'a>) -> Result<Planned<'a>, ProviderError> {
        // The lookup and, later, the update are of this one tree.
        let namespace = self.namespace(&staged.client)?;
        let looked_up = namespace.read().expect("namespace").lookup(&staged.name);
        let (answer, found) = looked_up.map_err(|e| corrupt("namespace", e))?;
        let plan = commit_edits(&found, &staged.change).map_err(|e| match (&staged.change, e) {
            (Change::Append(_), vouch_core::namespace::NamespaceError::Inconsistent(_)) => FilesError::NotLatest,
            (_, e) => FilesError::Plan(e),
        })?;
        let records = match &found {
            Found::At { entry, .. } => self.versions(&staged.client, &entry.file)?,
            Found::Absent { .. } => Vec::new(),
        };
        Ok(Planned { staged, namespace, answer, plan, records })
    }

    /// Applies the version-list edits, and derives the namespace's edit from the result.
    pub fn prove_versions<'a>(&self, planned: Planned<'a>) -> Result<Proven<'a>, ProviderError> {
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

    /// Proves the namespace's edits (without applying them) and gathers the blocks, records,
    /// lists and answer of the change into its commit.
    pub fn prove_namespace<'a>(&self, proven: Proven<'a>) -> Result<Prepared<'a>, ProviderError> {
        let Proven { planned, versions, new_entry, namespace_edits } = proven;
        let Planned { staged, namespace, answer, plan, records } = planned;
        let Staged { client, name: _, change, new_list, file_update, blocks, _write, _in_flight } = staged;
        let update = namespace.read().expect("namespace").prove_update(&namespace_edits, new_entry.as_ref());
        let (namespace_update, entries) = update.map_err(FilesError::NamespaceEdit)?;
        let mut commit = self.repo.begin();
        if let Some(blocks) = blocks {
            commit.add_blocks(blocks);
        }
        for entry in &entries.put {
            commit.put_record(&keys::entry(&client, &entry.name), entry.to_bytes());
        }
        for name in &entries.delete {
            commit.delete_record(&keys::entry(&client, name));
        }
        let mut cache = None;
        match (&change, &new_entry) {
            (Change::Append(record), Some(_)) => {
                commit.put_record(&keys::version(&client, &record.file, record.number), record.to_bytes().to_vec());
                let new = new_list.ok_or(FilesError::NoBlockList)?;
                let list_name = keys::list(&client, &record.file, record.number);
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
                self.forget_versions(&client, &plan.entry.file, &dropped, &kept, &mut commit)?;
            }
            (Change::Remove, None) => {
                let all: Vec<&VersionRecord> = records.iter().collect();
                self.forget_versions(&client, &plan.entry.file, &all, &[], &mut commit)?;
            }
            _ => return Err(FilesError::InconsistentChange.into()),
        }
        let committed = Committed {
            lookup: wire_lookup(&answer),
            file_update: file_update.map(ByteBuf::from),
            versions_update: versions.map(|(p, _, _)| ByteBuf::from(p.to_bytes())),
            namespace_update: ByteBuf::from(namespace_update.to_bytes()),
        };
        // Durable with the change itself: a client that never got this answer verifies it later.
        commit.put_record(&keys::last_commit(&client), vouch_proto::encode(&committed));
        Ok(Prepared {
            committed,
            commit,
            client,
            namespace,
            namespace_edits,
            new_entry,
            cache,
            _staged_locks: (_write, _in_flight),
        })
    }

    /// Makes a prepared change durable, applies it to the namespace in memory, then releases
    /// its locks.
    pub async fn apply(&self, prepared: Prepared<'_>) -> Result<Committed, ProviderError> {
        let started = std::time::Instant::now();
        let Prepared { committed, commit, client, namespace, namespace_edits, new_entry, cache, _staged_locks } =
            prepared;
        // No read of a name and its versions between the durable write and the update below.
        let applying = self.applying_gate(&client).write_owned().await;
        self.repo.commit(commit).await?;
        let applied = namespace.write().expect("namespace").apply(&namespace_edits, new_entry.as_ref());
        drop(applying);
        if let Err(e) = applied {
            // Durable all the same: the next use reloads the namespace from the store.
            tracing::warn!("namespace of {client} reloaded after: {e}");
            self.forget_namespace(&client);
        }
        tracing::debug!(stored = ?started.elapsed(), "commit");
        if let Some((name, list)) = cache {
            self.cache_list(name, list);
        }
        drop(_staged_locks);
        Ok(committed)
    }
}

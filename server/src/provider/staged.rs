//! Puts in two steps: `stage` receives a put's blocks, checks them against its record and
//! stores them, outside every lock; `commit-staged` commits it. A client that uploads many
//! objects at once on one root (the S3 gateway, Iris's portal) then serialises only its
//! commits, not its uploads: one slow upload no longer holds up every other write. And the
//! puts whose uploads wait for the client's commit lock are committed together: one
//! `commit-staged` of several puts, each applied over the namespace the ones before it left
//! and answered on its own (a put refused changes nothing), the applied ones made durable in
//! one repository commit (see `commit`).
//!
//! A staged upload is not a change in flight (it holds no change gate, see `settle`): it
//! can only commit through `commit-staged`, which the client sends after recording its
//! intent, under the same attempt. Settling that attempt drops the staged upload, and a
//! `commit-staged` that arrives after it finds the attempt settled. Staged uploads live in
//! memory: a restart drops them (their segments wait for the sweep at the next start), and
//! the client's `commit-staged` is then refused with a conflict, not a lie.

use super::write::NewList;
use super::*;
use crate::Limits;
use std::time::{Duration, Instant};
use vouch_proto::{CommitStagedRequest, CommittedPuts, StagedPut, MAX_GROUP};

/// A put's blocks, stored and checked against its record, waiting for its commit.
pub(crate) struct SealedPut {
    name: String,
    record: VersionRecord,
    list: FlexList,
    /// Dropping them deletes their segments (see `vouch_store::Upload`).
    blocks: StoredBlocks,
    since: Instant,
}

/// Per client and attempt, the staged uploads.
#[derive(Default)]
pub(crate) struct StagedUploads {
    by_client: Mutex<HashMap<String, HashMap<Attempt, SealedPut>>>,
}

impl StagedUploads {
    /// Keeps `sealed` for `client` under `attempt`, after dropping the uploads that waited
    /// longer than `keep_for`; refused past `max` waiting uploads.
    fn keep(&self, client: &str, attempt: Attempt, sealed: SealedPut, limits: &Limits) -> Result<(), ProviderError> {
        let mut clients = self.by_client.lock().expect("staged uploads");
        let staged = clients.entry(client.to_string()).or_default();
        staged.retain(|_, s| s.since.elapsed() < limits.staged_for);
        if staged.len() >= limits.max_staged {
            return Err(FilesError::TooManyStaged { max: limits.max_staged }.into());
        }
        if staged.contains_key(&attempt) {
            return Err(FilesError::StagedTwice.into());
        }
        staged.insert(attempt, sealed);
        Ok(())
    }

    /// The upload staged under `attempt`, unless it waited past `keep_for`.
    fn take(&self, client: &str, attempt: &Attempt, keep_for: Duration) -> Option<SealedPut> {
        let mut clients = self.by_client.lock().expect("staged uploads");
        let staged = clients.get_mut(client)?;
        let sealed = staged.remove(attempt);
        if staged.is_empty() {
            clients.remove(client);
        }
        sealed.filter(|s| s.since.elapsed() < keep_for)
    }

    /// How many uploads of `client` wait.
    pub(crate) fn waiting(&self, client: &str) -> usize {
        self.by_client.lock().expect("staged uploads").get(client).map_or(0, HashMap::len)
    }
}

impl Files {
    /// Ends a `stage`: checks the client's record against the blocks, stores them and keeps
    /// the upload for its `commit-staged`.
    pub async fn stage_upload(
        &self,
        put: PutState,
        record: VersionRecord,
        limits: &Limits,
    ) -> Result<StagedUpload, ProviderError> {
        let (client, attempt) = (put.client.clone(), put.attempt);
        let (name, list, blocks) = self.seal_put(put, &record).await?;
        let count = list.block_count() as u64;
        let sealed = SealedPut { name, record, list, blocks, since: Instant::now() };
        self.staged.keep(&client, attempt, sealed, limits)?;
        Ok(StagedUpload { blocks: count })
    }

    /// The changes of staged uploads, their locks taken: `commit-staged`'s first step. A put
    /// whose upload is not there (it expired, the provider restarted, it was settled) or is
    /// another than the request says is refused in its place.
    pub async fn stage_staged(
        &self,
        client: &str,
        req: &CommitStagedRequest,
        limits: &Limits,
    ) -> Result<Batch<'_>, ProviderError> {
        let puts = &req.puts;
        if puts.is_empty() || puts.len() > MAX_GROUP {
            return Err(FilesError::GroupSize { puts: puts.len(), max: MAX_GROUP }.into());
        }
        // Each name once: a later put of a name would be proven over a version list the
        // store does not hold yet.
        let names: HashSet<&str> = puts.iter().map(|p| p.name.as_str()).collect();
        let attempts: Vec<Attempt> = puts.iter().map(|p| p.attempt).collect();
        if names.len() != puts.len() || attempts.iter().collect::<HashSet<_>>().len() != puts.len() {
            return Err(FilesError::NamedTwice.into());
        }
        // The gate first: a settle of these attempts either ran before (the uploads are gone
        // and the attempts refused) or waits for this commit.
        let in_flight = self.changing(client, &attempts).await?;
        let changes = puts.iter().map(|put| self.take_staged(client, put, limits)).collect();
        let write = self.write.lock().await;
        Ok(Batch { client: client.to_string(), changes, holding: Holding { _write: write, _in_flight: in_flight } })
    }

    /// The change of the upload `put` names, taken from those waiting.
    fn take_staged(&self, client: &str, put: &StagedPut, limits: &Limits) -> Result<Staged, ProviderError> {
        let sealed = self.staged.take(client, &put.attempt, limits.staged_for).ok_or(FilesError::NothingStaged)?;
        let record = VersionRecord::from_bytes(&put.record).map_err(FilesError::BadRecord)?;
        if sealed.name != put.name || sealed.record != record {
            return Err(FilesError::NotTheStaged.into());
        }
        Ok(Staged {
            name: sealed.name,
            change: Change::Append(sealed.record),
            new_list: Some(NewList { list: sealed.list, base: None }),
            file_update: None,
            blocks: Some(sealed.blocks),
        })
    }

    /// Commits staged uploads (see the module documentation): each put's outcome, in order.
    pub async fn commit_staged(
        &self,
        client: &str,
        req: &CommitStagedRequest,
        limits: &Limits,
    ) -> Result<CommittedPuts, ProviderError> {
        let batch = self.stage_staged(client, req, limits).await?;
        Ok(commit::committed_puts(&self.commit(batch).await?))
    }

    /// Drops the upload staged under `attempt`, if any: the attempt is being settled.
    pub(super) fn drop_staged(&self, client: &str, attempt: &Attempt) {
        self.staged.take(client, attempt, Duration::ZERO);
    }

    /// How many uploads of `client` wait for their commits.
    pub fn staged_waiting(&self, client: &str) -> usize {
        self.staged.waiting(client)
    }
}

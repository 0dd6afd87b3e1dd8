//! Puts in two steps: `stage` receives a put's blocks, checks them against its record and
//! stores them, outside every lock; `commit-staged` commits it. A client that uploads many
//! objects at once on one root (the S3 gateway, Iris's portal) then serialises only its
//! commits, not its uploads: one slow upload no longer holds up every other write.
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
use vouch_proto::CommitStagedRequest;

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

    /// The change of a staged upload, its locks taken: `commit-staged`'s first step.
    pub async fn stage_staged(
        &self,
        client: &str,
        req: &CommitStagedRequest,
        limits: &Limits,
    ) -> Result<Staged<'_>, ProviderError> {
        // The gate first: a settle of this attempt either ran before (the upload is gone and
        // the attempt refused) or waits for this commit.
        let in_flight = self.changing(client, req.attempt).await?;
        let sealed = self.staged.take(client, &req.attempt, limits.staged_for).ok_or(FilesError::NothingStaged)?;
        let record = VersionRecord::from_bytes(&req.record).map_err(FilesError::BadRecord)?;
        if sealed.name != req.name || sealed.record != record {
            return Err(FilesError::NotTheStaged.into());
        }
        let write = self.write.lock().await;
        Ok(Staged {
            client: client.to_string(),
            name: sealed.name,
            change: Change::Append(sealed.record),
            new_list: Some(NewList { list: sealed.list, base: None }),
            file_update: None,
            blocks: Some(sealed.blocks),
            _write: write,
            _in_flight: Some(in_flight),
        })
    }

    /// Commits a staged upload (see the module documentation).
    pub async fn commit_staged(
        &self,
        client: &str,
        req: &CommitStagedRequest,
        limits: &Limits,
    ) -> Result<Committed, ProviderError> {
        let staged = self.stage_staged(client, req, limits).await?;
        self.commit(staged).await
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

//! Retiring the objects that committed puts and deletes replaced: queued by the member, then
//! deleted in batches, off the path of the operations that replaced them.
//!
//! Alg. 6 never deletes a replaced object; vouch does, so that a bucket does not grow with
//! every put. Deleting each one inside its put cost a round trip to the object store per
//! write: at one client, about 0.8 ms of a 3.8 ms put with MinIO on loopback, more than the
//! put's INVOKE. A batch is one request on S3 (`DeleteObjects`, through `object_store`'s
//! bulk delete), and the operation that fills the queue pays for it.
//!
//! Why waiting is safe: a queued object is named by no operation after the one that
//! replaced it (its nonce was fresh, [`super::Group::put`]), and a get that read its name
//! before finds it, or finds it gone and asks the history again. A member queues at most
//! [`RETIRE_BATCH`] names; they go when the queue is full, when the member helps the group
//! ([`super::Group::help`]) and at [`super::Group::flush_retired`] (which the CLI and the
//! gateway call before they stop). Names still queued when a process dies stay behind, as
//! the object of a put that crashed before its INVOKE does: garbage the history never names.

use super::{Group, NONCE_LEN};
use vouch_proto::vicos::object_name;

/// The most replaced objects a member keeps queued before it deletes them.
pub(super) const RETIRE_BATCH: usize = 32;

/// Deletes of one batch in flight at once, through the provider (which takes one per
/// request).
const DELETES_IN_FLIGHT: usize = 4;

/// A replaced object: its key and nonce.
pub(super) type Retired = (Vec<u8>, [u8; NONCE_LEN]);

/// The replaced objects a member has not deleted yet.
#[derive(Debug, Default)]
pub(super) struct RetireQueue(std::sync::Mutex<Vec<Retired>>);

impl RetireQueue {
    /// Queues `object`; the whole queue when that filled it.
    fn push(&self, object: Retired) -> Option<Vec<Retired>> {
        let mut queue = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        queue.push(object);
        (queue.len() >= RETIRE_BATCH).then(|| std::mem::take(&mut *queue))
    }

    fn take(&self) -> Vec<Retired> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Puts back a batch that may not go yet.
    fn put_back(&self, batch: Vec<Retired>) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend(batch);
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }
}

impl Group {
    /// Queues for deletion the object a committed put or delete replaced, and deletes the
    /// queue's batch when that filled it. Only after the COMMIT was taken, and the batch only
    /// once the COMMITs are proven durable ([`Group::prove_commits`]): the object replaced by
    /// a put that a takeover later aborts (its COMMIT lost in a crash, and its member never
    /// back to carry it) would still be named.
    pub(super) async fn retire(&self, key: &[u8], replaced: Option<Vec<u8>>, mine: Option<[u8; NONCE_LEN]>) {
        // A value that is no `x || n || h` names no object (as `adict_get` reads it).
        let Some(super::Named { nonce, .. }) = replaced.as_deref().and_then(super::Named::parse) else { return };
        if Some(nonce) == mine {
            return;
        }
        if let Some(batch) = self.retired.push((key.to_vec(), nonce)) {
            self.delete_proven(batch).await;
        }
    }

    /// Proves this member's answered COMMITs durable, then deletes every replaced object it
    /// has queued (best effort: one that fails stays behind, and is logged). Call it before
    /// the member goes away.
    pub async fn flush_retired(&self) {
        let proven = self.prove_commits().await;
        let batch = self.retired.take();
        if !batch.is_empty() {
            match proven {
                true => self.delete_retired(batch).await,
                false => self.retired.put_back(batch),
            }
        }
    }

    /// Deletes `batch` once the COMMITs that replaced its objects are proven durable; puts it
    /// back when they cannot be proven now (the provider not reached).
    async fn delete_proven(&self, batch: Vec<Retired>) {
        match self.prove_commits().await {
            true => self.delete_retired(batch).await,
            false => self.retired.put_back(batch),
        }
    }

    async fn delete_retired(&self, batch: Vec<Retired>) {
        let failed = match &self.direct {
            Some(direct) => {
                let names = batch.iter().map(|(key, nonce)| object_name(&self.name, key, nonce)).collect();
                direct.delete_many(names).await
            }
            None => {
                let mut failed = Vec::new();
                for chunk in batch.chunks(DELETES_IN_FLIGHT) {
                    let mut deletes = Vec::with_capacity(chunk.len());
                    for (key, nonce) in chunk {
                        deletes.push(self.cos_delete(key, *nonce));
                    }
                    let deleted = futures::future::join_all(deletes).await;
                    failed.extend(deleted.into_iter().filter_map(|d| d.err().map(|e| e.to_string())));
                }
                failed
            }
        };
        for e in &failed {
            tracing::warn!("a replaced object of group {} stays behind: {e}", self.name);
        }
    }
}

//! Copies of the metadata store in the blob store, from which a lost or damaged metadata store
//! is rebuilt.
//!
//! The metadata store's write-ahead log (`crate::wal`) already holds every committed batch
//! since its last checkpoint. Before the log starts over, the repository puts its contents in
//! the blob store as `log/<seq>`, under the commit lock (no commit lands between the copy and
//! the restart); so the copies, in `seq` order, are every batch ever committed. That costs no
//! flush on the commit path: one object per 64 commits or 16 MiB of log. What has not been
//! copied yet is still in the local log, which a rebuild reads too; a clean shutdown copies it
//! ([`Repository::close`]).
//!
//! A copy may repeat batches of the one before (a crash between a copy and the restart of the
//! log copies them again): batches are absolute puts and deletes, so replaying a run of them
//! twice in a row ends in the same state.
//!
//! The copies would grow forever, so once [`SNAPSHOT_AFTER`] of them have piled up, a snapshot
//! (`snapshot/<seq>`: every entry, read from one consistent view right after a copy) replaces
//! them: a rebuild replays the newest whole snapshot, then the copies after it, then the local
//! log. Both use the log's framing (`crate::wal::log_record`), checksummed per record.

use super::Repository;
use crate::wal::{log_header, log_record};
use crate::{BlobStore, MetaBatch, StoreError};

/// Copies of the log between two snapshots.
pub(crate) const SNAPSHOT_AFTER: u32 = 16;
/// After a failed copy, commits do not try again for this long (each try may take the blob
/// store's whole timeout; the local log keeps everything meanwhile).
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(30);
/// Bytes of entries per record of a snapshot.
const SNAPSHOT_RECORD: usize = 1 << 20;
/// Records of a snapshot read ahead of its writer.
const SNAPSHOT_RECORDS_AHEAD: usize = 4;

/// Where the copies stand; `None` until the blob store has been listed.
#[derive(Debug, Default)]
pub(crate) struct LogState {
    next: Option<u64>,
    since_snapshot: u32,
    /// Set by a failed copy: commits leave the log alone until then.
    retry_at: Option<std::time::Instant>,
}

pub(crate) fn log_key(seq: u64) -> String {
    format!("log/{seq:016x}")
}

pub(crate) fn snapshot_key(seq: u64) -> String {
    format!("snapshot/{seq:016x}")
}

/// The copies in the blob store: sequence numbers of logs and of snapshots, each ascending.
#[derive(Debug, Default)]
pub(crate) struct Copies {
    pub logs: Vec<u64>,
    pub snapshots: Vec<u64>,
}

impl Copies {
    pub async fn list(blobs: &impl BlobStore) -> Result<Copies, StoreError> {
        let seqs = |keys: Vec<String>, prefix: &str| -> Vec<u64> {
            let mut out: Vec<u64> = keys
                .iter()
                .filter_map(|k| k.strip_prefix(prefix))
                .filter(|hex| hex.len() == 16)
                .filter_map(|hex| u64::from_str_radix(hex, 16).ok())
                .collect();
            out.sort_unstable();
            out
        };
        Ok(Copies {
            logs: seqs(blobs.list("log").await?, "log/"),
            snapshots: seqs(blobs.list("snapshot").await?, "snapshot/"),
        })
    }

    fn next(&self) -> u64 {
        self.logs.iter().chain(&self.snapshots).max().map_or(0, |m| m + 1)
    }
}

impl Repository {
    async fn next_seq(&self, state: &mut LogState) -> Result<u64, StoreError> {
        if let Some(next) = state.next {
            return Ok(next);
        }
        let copies = Copies::list(&self.blobs).await?;
        let last_snapshot = copies.snapshots.last().copied();
        state.since_snapshot = copies.logs.iter().filter(|&&l| Some(l) > last_snapshot).count() as u32;
        state.next = Some(copies.next());
        Ok(copies.next())
    }

    /// Copies the log and starts it over if it has grown enough; a failure is logged and
    /// the copy tried again at the next commit (the local log keeps everything until then).
    pub(super) async fn ship_if_due(&self, state: &mut LogState) {
        if state.retry_at.is_some_and(|at| std::time::Instant::now() < at) {
            return;
        }
        match self.meta.log_due() {
            Ok(false) => {}
            Ok(true) => {
                if let Err(e) = self.ship(state).await {
                    tracing::warn!("could not copy the metadata log to the blob store (tried again later): {e}");
                    state.retry_at = Some(std::time::Instant::now() + RETRY_AFTER);
                }
            }
            Err(e) => tracing::warn!("metadata log: {e}"),
        }
    }

    /// Copies the log to the blob store and starts it over (nothing if it is empty). The
    /// caller holds the commit lock.
    pub(super) async fn ship(&self, state: &mut LogState) -> Result<(), StoreError> {
        let Some(contents) = self.meta.log_contents()? else { return Ok(()) };
        let seq = self.next_seq(state).await?;
        self.blobs.put(&log_key(seq), contents.into()).await?;
        state.next = Some(seq + 1);
        state.since_snapshot += 1;
        state.retry_at = None;
        self.meta.checkpoint()
    }

    /// Writes a snapshot if enough copies of the log have piled up since the last one.
    pub(super) async fn snapshot_if_due(&self) -> Result<bool, StoreError> {
        let due = {
            let mut state = self.commits.lock().await;
            self.next_seq(&mut state).await?;
            state.since_snapshot >= SNAPSHOT_AFTER
        };
        if due {
            self.snapshot(true).await?;
        }
        Ok(due)
    }

    /// Writes a snapshot of every entry; with `prune`, then deletes the copies it replaces.
    pub(super) async fn snapshot(&self, prune: bool) -> Result<u64, StoreError> {
        let (view, seq) = {
            let mut state = self.commits.lock().await;
            // After this copy, the view holds exactly what the copies so far hold.
            self.ship(&mut state).await?;
            let seq = self.next_seq(&mut state).await?;
            state.next = Some(seq + 1);
            state.since_snapshot = 0;
            (self.meta.view()?, seq)
        };
        // Written as it is read, a record at a time (nothing visible before the whole is):
        // every entry of the store is gigabytes once PoR logs keep their U in it, and a
        // snapshot held whole in memory (twice, read and encoded) took the provider's memory
        // to three times that.
        let stopped = || StoreError::Backend { at: "a snapshot".into(), detail: "its writer stopped".into() };
        let (records, mut next) = tokio::sync::mpsc::channel::<Vec<u8>>(SNAPSHOT_RECORDS_AHEAD);
        let reading = tokio::task::spawn_blocking(move || {
            records.blocking_send(log_header(seq)).map_err(|_| stopped())?;
            view.visit(SNAPSHOT_RECORD, |entries| {
                let mut batch = MetaBatch::default();
                for (k, v) in entries {
                    batch.put(k, v);
                }
                records.blocking_send(log_record(seq, &batch)).map_err(|_| stopped())
            })
        });
        let mut writer = self.blobs.writer(&snapshot_key(seq))?;
        let mut written = Ok(());
        while let Some(record) = next.recv().await {
            written = writer.write(record.into()).await;
            if written.is_err() {
                break;
            }
        }
        // A writer that failed stops the reading at its next record.
        drop(next);
        let read = reading.await.map_err(|e| StoreError::Backend { at: "a snapshot".into(), detail: e.to_string() })?;
        match written.and(read) {
            Ok(()) => writer.finish().await?,
            Err(e) => {
                if let Err(abort) = writer.abort().await {
                    tracing::warn!("an unfinished snapshot was not aborted: {abort}");
                }
                return Err(e);
            }
        }
        if prune {
            let copies = Copies::list(&self.blobs).await?;
            for old in copies.logs.iter().filter(|&&l| l < seq) {
                self.blobs.delete(&log_key(*old)).await?;
            }
            for old in copies.snapshots.iter().filter(|&&s| s < seq) {
                self.blobs.delete(&snapshot_key(*old)).await?;
            }
        }
        Ok(seq)
    }
}

//! Transactional metadata: the provider's indexes, lists and roots.
//!
//! Callers compute a [`MetaBatch`] of changes (as jmt's tree computes node batches) and commit
//! it in one transaction: after a crash the store holds all of a batch or none of it. The
//! embedded store is redb behind a write-ahead log ([`crate::wal`]): a commit is one flush of
//! one sequential append.
//!
//! A repository's store keeps its log until the repository has copied it to the blob store
//! (see `crate::repository::log`): it never starts the log over by itself, and at open it
//! carries the records it replays over into the new epoch instead of dropping them.

use crate::error::{chain, from_io};
use crate::keys;
use crate::wal::Wal;
use crate::StoreError;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("vouch-meta");

/// Puts and deletes that commit together, applied in the order given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaBatch {
    ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl MetaBatch {
    pub fn put(&mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> &mut Self {
        self.ops.push((key.into(), Some(value.into())));
        self
    }

    pub fn delete(&mut self, key: impl Into<Vec<u8>>) -> &mut Self {
        self.ops.push((key.into(), None));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Appends `other`'s operations after this batch's.
    pub(crate) fn append(&mut self, other: MetaBatch) {
        self.ops.extend(other.ops);
    }

    pub(crate) fn ops(&self) -> &[(Vec<u8>, Option<Vec<u8>>)] {
        &self.ops
    }
}

/// A key and its value.
pub type Entry = (Vec<u8>, Vec<u8>);

/// A transactional key-value store.
pub trait MetaStore: Send + Sync {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;

    /// The values of many keys, read together (one read transaction where the store has them).
    fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        keys.iter().map(|k| self.get(k)).collect()
    }

    /// Every entry whose key starts with `prefix`, in key order.
    fn scan(&self, prefix: &[u8]) -> Result<Vec<Entry>, StoreError>;

    /// Applies the whole batch atomically and durably, or nothing of it.
    fn commit(&self, batch: &MetaBatch) -> Result<(), StoreError>;
}

/// [`MetaStore`] in one redb file and its write-ahead log (`<file>.wal`): the embedded default.
pub struct MetaDb {
    db: Database,
    place: String,
    wal: Mutex<Wal>,
    /// Set for a repository's store: the log is started over only once copied (see the
    /// module's documentation).
    keeps_log: AtomicBool,
}

impl std::fmt::Debug for MetaDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetaDb({})", self.place)
    }
}

impl MetaDb {
    /// Opens the store at `path`, creating it if missing, and verifies the whole file.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let place = path.display().to_string();
        // Check every page on open: a file damaged outside redb is reported as corrupt here
        // instead of failing (or panicking) on some later read.
        let db = redb::Builder::new()
            .set_check_integrity_on_open(true)
            .create(path)
            .map_err(|e| map_err(&place, e.into()))?;
        let (wal, logged) = Wal::open(&wal_path(path))?;
        // Replay what the log holds (all of it: applying a batch twice changes nothing) in one
        // durable commit, which also makes the table exist for reads of an empty store.
        apply(&db, &place, &logged, Durability::Immediate)?;
        let meta = MetaDb { db, place, wal: Mutex::new(wal), keeps_log: AtomicBool::new(false) };
        let keeps_log = meta.get(keys::STORE_FORMAT)?.is_some();
        meta.keeps_log.store(keeps_log, Ordering::SeqCst);
        let mut wal = meta.lock_wal()?;
        wal.clear()?;
        if keeps_log && !logged.is_empty() {
            // Not copied yet (or copied just before a crash: a second copy changes nothing).
            // Carried into the new epoch rather than continued in the old one, so that what
            // follows a torn record is never read as records; a crash right between the two
            // writes leaves these batches durable in redb, only not in the blob store's copies.
            let mut merged = MetaBatch::default();
            logged.into_iter().for_each(|b| merged.append(b));
            wal.append(&merged)?;
        }
        drop(wal);
        Ok(meta)
    }

    /// From now on the log is started over only by [`MetaDb::checkpoint`] (a repository's
    /// store, once it has copied the log).
    pub(crate) fn keep_log(&self) {
        self.keeps_log.store(true, Ordering::SeqCst);
    }

    fn lock_wal(&self) -> Result<std::sync::MutexGuard<'_, Wal>, StoreError> {
        self.wal.lock().map_err(|_| StoreError::Backend {
            at: self.place.clone(),
            detail: "a commit panicked earlier; reopen the store".into(),
        })
    }

    /// Whether the log has grown enough to be copied and started over.
    pub(crate) fn log_due(&self) -> Result<bool, StoreError> {
        Ok(self.lock_wal()?.wants_checkpoint())
    }

    /// The log's header and records, unless it holds none.
    pub(crate) fn log_contents(&self) -> Result<Option<Vec<u8>>, StoreError> {
        let wal = self.lock_wal()?;
        if wal.is_empty() {
            return Ok(None);
        }
        wal.contents().map(Some)
    }

    /// Makes everything applied so far durable in redb itself, and starts the log over.
    pub(crate) fn checkpoint(&self) -> Result<(), StoreError> {
        let mut wal = self.lock_wal()?;
        apply(&self.db, &self.place, &[], Durability::Immediate)?;
        wal.clear()
    }

    /// Applies batches straight to redb, durably, without the log: for filling a new store
    /// from copies of another's log (a rebuild), which are the log already.
    pub(crate) fn load(&self, batches: &[MetaBatch]) -> Result<(), StoreError> {
        let _wal = self.lock_wal()?;
        apply(&self.db, &self.place, batches, Durability::Immediate)
    }

    /// Whether the store holds no entry at all.
    pub(crate) fn is_empty(&self) -> Result<bool, StoreError> {
        let txn = self.db.begin_read().map_err(|e| self.err(e))?;
        let table = txn.open_table(TABLE).map_err(|e| self.err(e))?;
        Ok(table.len().map_err(|e| self.err(e))? == 0)
    }

    /// Every entry as it is now, read in the background while commits go on: `visit` gets
    /// them in key order, a few thousand at a time.
    pub(crate) fn view(&self) -> Result<MetaView, StoreError> {
        let txn = self.db.begin_read().map_err(|e| self.err(e))?;
        Ok(MetaView { txn, place: self.place.clone() })
    }

    fn err(&self, e: impl Into<redb::Error>) -> StoreError {
        map_err(&self.place, e.into())
    }
}

/// Applies batches in one redb transaction.
fn apply(db: &Database, place: &str, batches: &[MetaBatch], durability: Durability) -> Result<(), StoreError> {
    let err = |e: redb::Error| map_err(place, e);
    let mut txn = db.begin_write().map_err(|e| err(e.into()))?;
    txn.set_durability(durability).map_err(|e| err(e.into()))?;
    {
        let mut table = txn.open_table(TABLE).map_err(|e| err(e.into()))?;
        for (key, value) in batches.iter().flat_map(MetaBatch::ops) {
            match value {
                Some(v) => table.insert(key.as_slice(), v.as_slice()).map(drop),
                None => table.remove(key.as_slice()).map(drop),
            }
            .map_err(|e| err(e.into()))?;
        }
    }
    txn.commit().map_err(|e| err(e.into()))
}

fn map_err(place: &str, e: redb::Error) -> StoreError {
    let detail = chain(&e);
    match &e {
        redb::Error::Io(io) => from_io(place, io, detail),
        redb::Error::Corrupted(_) => StoreError::Corrupt { at: place.to_string(), detail },
        redb::Error::DatabaseAlreadyOpen => {
            StoreError::Backend { at: place.to_string(), detail: format!("open in another process ({detail})") }
        }
        _ => StoreError::Backend { at: place.to_string(), detail },
    }
}

impl MetaStore for MetaDb {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let txn = self.db.begin_read().map_err(|e| self.err(e))?;
        let table = txn.open_table(TABLE).map_err(|e| self.err(e))?;
        let value = table.get(key).map_err(|e| self.err(e))?;
        Ok(value.map(|v| v.value().to_vec()))
    }

    fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let txn = self.db.begin_read().map_err(|e| self.err(e))?;
        let table = txn.open_table(TABLE).map_err(|e| self.err(e))?;
        keys.iter().map(|k| Ok(table.get(k.as_slice()).map_err(|e| self.err(e))?.map(|v| v.value().to_vec()))).collect()
    }

    fn scan(&self, prefix: &[u8]) -> Result<Vec<Entry>, StoreError> {
        let txn = self.db.begin_read().map_err(|e| self.err(e))?;
        let table = txn.open_table(TABLE).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for entry in table.range(prefix..).map_err(|e| self.err(e))? {
            let (k, v) = entry.map_err(|e| self.err(e))?;
            if !k.value().starts_with(prefix) {
                break;
            }
            out.push((k.value().to_vec(), v.value().to_vec()));
        }
        Ok(out)
    }

    fn commit(&self, batch: &MetaBatch) -> Result<(), StoreError> {
        let mut wal = self.lock_wal()?;
        wal.append(batch)?;
        if let Err(e) = apply(&self.db, &self.place, std::slice::from_ref(batch), Durability::None) {
            // Not applied: it must not come back at the next open either.
            wal.cut_last()?;
            return Err(e);
        }
        if wal.wants_checkpoint() && !self.keeps_log.load(Ordering::SeqCst) {
            // The batch is durable in the log whatever happens here; a failed checkpoint is
            // tried again at the next commit, and the log keeps everything until then.
            if apply(&self.db, &self.place, &[], Durability::Immediate).is_ok() {
                let _ = wal.clear();
            }
        }
        Ok(())
    }
}

impl Drop for MetaDb {
    /// Makes redb durable, and leaves an empty log behind when it may (the next open then
    /// replays nothing); a repository's log stays until it is copied.
    fn drop(&mut self) {
        if let Ok(mut wal) = self.wal.lock() {
            if apply(&self.db, &self.place, &[], Durability::Immediate).is_ok()
                && !self.keeps_log.load(Ordering::SeqCst)
            {
                let _ = wal.clear();
            }
        }
    }
}

/// A read-only view of a whole store at one instant ([`MetaDb::view`]).
pub(crate) struct MetaView {
    txn: redb::ReadTransaction,
    place: String,
}

impl MetaView {
    /// Calls `visit` with the entries in key order, about `chunk` bytes at a time.
    pub fn visit(
        &self,
        chunk: usize,
        mut visit: impl FnMut(Vec<Entry>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let err = |e: redb::Error| map_err(&self.place, e);
        let table = self.txn.open_table(TABLE).map_err(|e| err(e.into()))?;
        let (mut part, mut bytes) = (Vec::new(), 0);
        for entry in table.iter().map_err(|e| err(e.into()))? {
            let (k, v) = entry.map_err(|e| err(e.into()))?;
            bytes += k.value().len() + v.value().len();
            part.push((k.value().to_vec(), v.value().to_vec()));
            if bytes >= chunk {
                visit(std::mem::take(&mut part))?;
                bytes = 0;
            }
        }
        if !part.is_empty() {
            visit(part)?;
        }
        Ok(())
    }
}

/// The log beside the store's file.
pub(crate) fn wal_path(path: &Path) -> PathBuf {
    let name = path.file_name().map_or_else(|| "meta".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!("{name}.wal"))
}

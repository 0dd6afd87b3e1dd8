//! Transactional metadata: the provider's indexes, lists and roots.
//!
//! Callers compute a [`MetaBatch`] of changes (as jmt's tree computes node batches) and commit
//! it in one transaction: after a crash the store holds all of a batch or none of it. The
//! embedded store is redb behind a write-ahead log ([`crate::wal`]): a commit is one flush of
//! one sequential append.

use crate::error::{chain, from_io};
use crate::wal::Wal;
use crate::StoreError;
use redb::{Database, Durability, ReadableDatabase, TableDefinition};
use std::path::Path;
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
        let (mut wal, logged) = Wal::open(&path.with_file_name(format!("{}.wal", file_name(path))))?;
        // Replay what the log holds (all of it: applying a batch twice changes nothing) in one
        // durable commit, which also makes the table exist for reads of an empty store.
        apply(&db, &place, &logged, Durability::Immediate)?;
        wal.clear()?;
        Ok(MetaDb { db, place, wal: Mutex::new(wal) })
    }

    /// Makes everything applied so far durable in redb itself, and empties the log.
    fn checkpoint(&self, wal: &mut Wal) -> Result<(), StoreError> {
        apply(&self.db, &self.place, &[], Durability::Immediate)?;
        wal.clear()
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
        let mut wal = self.wal.lock().map_err(|_| StoreError::Backend {
            at: self.place.clone(),
            detail: "a commit panicked earlier; reopen the store".into(),
        })?;
        wal.append(batch)?;
        if let Err(e) = apply(&self.db, &self.place, std::slice::from_ref(batch), Durability::None) {
            // Not applied: it must not come back at the next open either.
            wal.cut_last()?;
            return Err(e);
        }
        if wal.wants_checkpoint() {
            // The batch is durable in the log whatever happens here; a failed checkpoint is
            // tried again at the next commit, and the log keeps everything until then.
            let _ = self.checkpoint(&mut wal);
        }
        Ok(())
    }
}

impl Drop for MetaDb {
    /// Leaves an empty log behind when it can (the next open then replays nothing).
    fn drop(&mut self) {
        if let Ok(mut wal) = self.wal.lock() {
            let _ = self.checkpoint(&mut wal);
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| "meta".into(), |n| n.to_string_lossy().into_owned())
}

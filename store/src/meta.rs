//! Transactional metadata: the provider's indexes, lists and roots.
//!
//! Callers compute a [`MetaBatch`] of changes (as jmt's tree computes node batches) and commit
//! it in one transaction: after a crash the store holds all of a batch or none of it.

use crate::error::{chain, from_io};
use crate::StoreError;
use redb::{Database, ReadableDatabase, TableDefinition};
use std::path::Path;

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

/// [`MetaStore`] in one redb file: the embedded default.
#[derive(Debug)]
pub struct MetaDb {
    db: Database,
    place: String,
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
        let this = MetaDb { db, place };
        // Make the table exist, so reads of an empty store find it.
        this.commit(&MetaBatch::default())?;
        Ok(this)
    }

    fn err(&self, e: impl Into<redb::Error>) -> StoreError {
        map_err(&self.place, e.into())
    }
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
        let txn = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            let mut table = txn.open_table(TABLE).map_err(|e| self.err(e))?;
            for (key, value) in &batch.ops {
                match value {
                    Some(v) => table.insert(key.as_slice(), v.as_slice()).map(drop),
                    None => table.remove(key.as_slice()).map(drop),
                }
                .map_err(|e| self.err(e))?;
            }
        }
        txn.commit().map_err(|e| self.err(e))
    }
}

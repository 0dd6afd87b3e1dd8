//! The blob trait every backend implements.

use crate::StoreError;
use bytes::Bytes;
use std::future::Future;
use std::ops::Range;

/// Immutable objects under string keys (`a/b/c`: segments of letters, digits, `-`, `_`, `.`).
///
/// A `put` is atomic: a reader sees the old object, the new one, or none, never a part. Writers
/// of distinct keys never interfere; two writers of one key leave one of their objects whole.
pub trait BlobStore: Send + Sync {
    fn put(&self, key: &str, bytes: Bytes) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`BlobStore::put`] of the concatenation of `parts`, without concatenating them first
    /// (a segment is written straight from its blocks' buffers).
    fn put_parts(&self, key: &str, parts: Vec<Bytes>) -> impl Future<Output = Result<(), StoreError>> + Send;

    fn get(&self, key: &str) -> impl Future<Output = Result<Bytes, StoreError>> + Send;

    /// Bytes `range` of the object; a range past its end is [`StoreError::BadRange`].
    fn get_range(&self, key: &str, range: Range<u64>) -> impl Future<Output = Result<Bytes, StoreError>> + Send;

    /// Keys under `prefix` (a folder-like prefix: `segments` lists `segments/...`), sorted.
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Removes the object; removing a missing key succeeds (deletes are idempotent).
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), StoreError>> + Send;
}

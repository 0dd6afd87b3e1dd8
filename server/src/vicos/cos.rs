//! A group's cloud object store (paper 003, Sec. 4.1): `cos-put`, `cos-get` and `cos-del` of
//! whole objects under translated keys `k || x` (Sec. 4.3: a fresh nonce `x` per put, so two
//! puts of one key never overwrite each other's bytes), kept in the provider's blob store
//! (a local directory or S3) beside the repository's own objects (`crate::keys::cos_object`).
//!
//! The store checks nothing about the bytes: each member checks an object it reads against
//! the hash ADICT holds for it (Alg. 6). A missing object is reported as missing; whether
//! that is a lie is for the member to decide (ADICT says whether the object should exist).

use super::GroupError;
use crate::keys;
use crate::provider::ProviderError;
use bytes::Bytes;
use futures::stream::BoxStream;
use vouch_proto::vicos::{CosDelete, CosObject, MAX_OBJECT_KEY};
use vouch_store::{BlobStore, BlobWriter, ObjectBlobs, StoreError};

/// A `cos-put` under way: its bytes go to the blob store as they arrive, and become the
/// object only at [`CosUpload::finish`]; dropped or aborted, it leaves nothing visible.
#[derive(Debug)]
pub struct CosUpload {
    writer: BlobWriter,
    /// Bytes received so far, and the most one object may take (`Limits::max_put_bytes`).
    received: u64,
    max: u64,
}

/// The bytes of an object, in order (an error in the middle ends them).
pub struct CosReader {
    pub(crate) bytes: BoxStream<'static, Result<Bytes, StoreError>>,
}

impl std::fmt::Debug for CosReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CosReader")
    }
}

/// A missing object (`key` in the blob store) is not found; any other failure is the store's.
fn missing(e: StoreError, group: &str, key: &str) -> ProviderError {
    match e {
        StoreError::NotFound { .. } => {
            GroupError::NoObject { group: group.to_string(), object: key.to_string() }.into()
        }
        e => ProviderError::Store(e),
    }
}

fn check_key(key: &[u8]) -> Result<(), GroupError> {
    match key.len() <= MAX_OBJECT_KEY {
        true => Ok(()),
        false => Err(GroupError::KeyTooLong { len: key.len() }),
    }
}

/// Starts `cos-put(k||x, ·)` of an object of at most `max` bytes (the group is known to exist).
pub(crate) fn begin_put(blobs: &ObjectBlobs, object: &CosObject, max: u64) -> Result<CosUpload, ProviderError> {
    check_key(&object.key)?;
    let writer = blobs.writer(&keys::cos_object(&object.group, &object.key, &object.nonce))?;
    Ok(CosUpload { writer, received: 0, max })
}

impl CosUpload {
    /// The next bytes of the object; past the bound, the upload is refused as too large (and
    /// should be aborted).
    pub(crate) async fn write(&mut self, bytes: Bytes) -> Result<(), ProviderError> {
        self.received += bytes.len() as u64;
        if self.received > self.max {
            return Err(GroupError::ObjectTooLarge { max: self.max }.into());
        }
        Ok(self.writer.write(bytes).await?)
    }

    /// Makes the object visible, whole and durable.
    pub(crate) async fn finish(self) -> Result<(), ProviderError> {
        Ok(self.writer.finish().await?)
    }

    /// Abandons the upload (best effort: a failure is only logged, nothing is visible).
    pub(crate) async fn abort(self) {
        if let Err(e) = self.writer.abort().await {
            tracing::warn!("an abandoned object upload could not be aborted: {e}");
        }
    }
}

/// `cos-get(k||x)`: the object's bytes; `NotFound` before any byte when there is none.
pub(crate) async fn get(blobs: &ObjectBlobs, object: &CosObject) -> Result<CosReader, ProviderError> {
    check_key(&object.key)?;
    let key = keys::cos_object(&object.group, &object.key, &object.nonce);
    let bytes = blobs.get_stream(&key).await.map_err(|e| missing(e, &object.group, &key))?;
    Ok(CosReader { bytes })
}

/// `cos-del(k||x)`, or `cos-del(k||*)` without a nonce (every object of the key: Alg. 6's
/// `vicos-del`). Deleting what is not there succeeds (deletes are idempotent).
pub(crate) async fn delete(blobs: &ObjectBlobs, req: &CosDelete) -> Result<usize, ProviderError> {
    check_key(&req.key)?;
    let keys = match &req.nonce {
        Some(nonce) => vec![keys::cos_object(&req.group, &req.key, nonce)],
        None => blobs.list(&keys::cos_key(&req.group, &req.key)).await?,
    };
    for key in &keys {
        blobs.delete(key).await?;
    }
    Ok(keys.len())
}

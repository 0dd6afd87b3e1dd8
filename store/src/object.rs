//! [`BlobStore`] over the `object_store` crate: a local directory or any S3-compatible store.
//! Objects too large to hold whole are written and read as streams ([`stream`]). Every call
//! has a deadline, and calls safe to repeat are tried again when they fail transiently
//! ([`retry`]).

mod retry;
mod stream;

pub use stream::BlobWriter;

use crate::error::{chain, from_io, io_cause};
use crate::{BlobStore, S3Config, StoreError};
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use retry::Patience;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// Blobs in a local directory or an S3 bucket.
#[derive(Clone, Debug)]
pub struct ObjectBlobs {
    inner: Arc<dyn ObjectStore>,
    /// For messages: the directory, or the endpoint and bucket.
    place: String,
    remote: bool,
    /// The directory of a local store: its puts are flushed to the disk before they return.
    local_root: Option<std::path::PathBuf>,
    /// Each call's deadline, and how calls that fail transiently are tried again.
    patience: Patience,
}

impl ObjectBlobs {
    /// This store behind `faults`, which make its calls fail, hang, slow down or tear when
    /// armed (for crash and fault tests; see [`Faults`](crate::Faults)), with the deadline
    /// they name, if any.
    pub fn with_faults(self, faults: std::sync::Arc<crate::Faults>) -> ObjectBlobs {
        let deadline = faults.deadline().unwrap_or(self.patience.deadline);
        let patience = Patience { deadline, ..self.patience };
        ObjectBlobs { inner: Arc::new(crate::faulty::Faulty { inner: self.inner, faults }), patience, ..self }
    }

    /// The embedded default: objects as files under `dir` (created if missing). Writes go to a
    /// temporary file and are renamed into place, so a reader never sees part of an object.
    pub fn local(dir: &std::path::Path) -> Result<Self, StoreError> {
        let place = dir.display().to_string();
        std::fs::create_dir_all(dir).map_err(|e| from_io(&place, &e, format!("creating the directory: {e}")))?;
        let fs = LocalFileSystem::new_with_prefix(dir).map_err(|e| map_err(&place, &place, false, e))?;
        Ok(ObjectBlobs {
            inner: Arc::new(fs),
            place,
            remote: false,
            local_root: Some(dir.to_path_buf()),
            patience: Patience::LOCAL,
        })
    }

    /// An S3 bucket. Requests time out and give up after a few retries, so an unreachable
    /// endpoint is an error within seconds, not a hang.
    pub fn s3(config: &S3Config) -> Result<Self, StoreError> {
        let endpoint = config.endpoint.clone().unwrap_or_else(|| "https://s3.amazonaws.com".into());
        let place = format!("{endpoint}/{}", config.bucket);
        let retry = RetryConfig { max_retries: 2, retry_timeout: Duration::from_secs(10), ..Default::default() };
        let options = ClientOptions::new()
            .with_connect_timeout(Duration::from_secs(3))
            .with_timeout(Duration::from_secs(60))
            .with_allow_http(endpoint.starts_with("http://"));
        vouch_proto::tls::install_provider();
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_access_key_id(&config.access_key)
            .with_secret_access_key(&config.secret_key)
            .with_retry(retry)
            .with_client_options(options)
            // No SHA-256 of each body for its signature (a third of the provider's CPU on a
            // large put): nothing read back from the store is trusted anyway (segments carry
            // checksums, blocks their tags, and the client checks every byte), and the
            // request itself is still signed.
            .with_unsigned_payload(true);
        if let Some(e) = &config.endpoint {
            builder = builder.with_endpoint(e).with_virtual_hosted_style_request(false);
        }
        let s3 = builder.build().map_err(|e| map_err(&place, &place, true, e))?;
        Ok(ObjectBlobs { inner: Arc::new(s3), place, remote: true, local_root: None, patience: Patience::S3 })
    }

    fn path(&self, key: &str) -> Result<Path, StoreError> {
        let valid = !key.is_empty()
            && key.split('/').all(|seg| {
                !seg.is_empty()
                    && seg != "."
                    && seg != ".."
                    && seg.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            });
        if valid {
            Ok(Path::from(key))
        } else {
            Err(StoreError::InvalidKey { key: key.to_string() })
        }
    }

    /// A whole object put and made durable, tried again on a transient failure (a put of the
    /// same bytes under the same key is safe to repeat). Among those: MinIO now and then
    /// answers a well-formed PUT with 400 IncompleteBody ("you did not provide the number of
    /// bytes specified by the Content-Length": minio/minio#21425), which no retry of
    /// object_store covers (a 4xx); the same body sent again goes through.
    pub(crate) async fn put_whole(&self, path: &Path, key: &str, payload: PutPayload) -> Result<(), StoreError> {
        let payload = &payload;
        self.retried(key, move || async move {
            self.inner.put(path, payload.clone()).await.map_err(|e| self.err(key, e))?;
            self.make_durable(key).await
        })
        .await
    }

    fn err(&self, key: &str, e: object_store::Error) -> StoreError {
        map_err(&self.place, key, self.remote, e)
    }

    /// Makes a local put durable: `object_store` renames a finished temporary file into place
    /// but never flushes it, so after a power cut a metadata commit (which redb does flush)
    /// could name a segment whose bytes never reached the disk. Flushes the file, then the
    /// directory entry of the rename. An S3 put is durable once acknowledged.
    async fn make_durable(&self, key: &str) -> Result<(), StoreError> {
        let Some(root) = &self.local_root else { return Ok(()) };
        let file = root.join(key);
        let at = format!("{}: {key}", self.place);
        tokio::task::spawn_blocking(move || {
            std::fs::File::open(&file)?.sync_all()?;
            match file.parent() {
                Some(dir) => std::fs::File::open(dir)?.sync_all(),
                None => Ok(()),
            }
        })
        .await
        .map_err(|e| StoreError::Backend { at: at.clone(), detail: format!("flush task failed: {e}") })?
        .map_err(|e| from_io(&at, &e, format!("flushing to disk: {e}")))
    }
}

/// Maps an `object_store` error on `key` to the variant a user can act on.
fn map_err(place: &str, key: &str, remote: bool, e: object_store::Error) -> StoreError {
    let at = format!("{place}: {key}");
    let detail = chain(&e);
    match e {
        object_store::Error::NotFound { .. } => StoreError::NotFound { key: key.to_string() },
        object_store::Error::InvalidPath { .. } => StoreError::InvalidKey { key: key.to_string() },
        object_store::Error::Unauthenticated { .. } => {
            StoreError::BadCredentials { endpoint: place.to_string(), detail }
        }
        // S3 answers 403 both to unknown keys and bad signatures; both are credentials.
        object_store::Error::PermissionDenied { .. }
            if remote && (detail.contains("InvalidAccessKeyId") || detail.contains("SignatureDoesNotMatch")) =>
        {
            StoreError::BadCredentials { endpoint: place.to_string(), detail }
        }
        object_store::Error::PermissionDenied { .. } => StoreError::PermissionDenied { at, detail },
        other => match io_cause(&other) {
            Some(io) if remote => match from_io(place, io, detail) {
                StoreError::Backend { at, detail } => StoreError::Backend { at, detail },
                mapped => mapped,
            },
            Some(io) => from_io(&at, io, detail),
            None if remote && (detail.contains("connect") || detail.contains("Connection refused")) => {
                StoreError::Unreachable { endpoint: place.to_string(), detail }
            }
            None => StoreError::Backend { at, detail },
        },
    }
}

impl BlobStore for ObjectBlobs {
    async fn put(&self, key: &str, bytes: Bytes) -> Result<(), StoreError> {
        let path = self.path(key)?;
        self.put_whole(&path, key, PutPayload::from_bytes(bytes)).await
    }

    async fn put_parts(&self, key: &str, parts: Vec<Bytes>) -> Result<(), StoreError> {
        let path = self.path(key)?;
        self.put_whole(&path, key, parts.into_iter().collect::<PutPayload>()).await
    }

    async fn get(&self, key: &str) -> Result<Bytes, StoreError> {
        let path = &self.path(key)?;
        self.retried(key, move || async move {
            let got = self.inner.get(path).await.map_err(|e| self.err(key, e))?;
            got.bytes().await.map_err(|e| self.err(key, e))
        })
        .await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, StoreError> {
        let path = &self.path(key)?;
        let bad = || StoreError::BadRange { key: key.to_string(), start: range.start, end: range.end };
        if range.start > range.end {
            return Err(bad());
        }
        if range.is_empty() {
            let head = move || async move { self.inner.head(path).await.map_err(|e| self.err(key, e)) };
            let size = self.retried(key, head).await?.size;
            return if range.end <= size { Ok(Bytes::new()) } else { Err(bad()) };
        }
        let (range, bad) = (&range, &bad);
        self.retried(key, move || async move {
            let want = range.end - range.start;
            let failed = match self.inner.get_range(path, range.clone()).await {
                Ok(bytes) if bytes.len() as u64 == want => return Ok(bytes),
                Err(e @ object_store::Error::NotFound { .. }) => return Err(self.err(key, e)),
                Ok(bytes) => StoreError::Backend {
                    at: format!("{}: {key}", self.place),
                    detail: format!("{} bytes of a range of {want} came back", bytes.len()),
                },
                Err(e) => self.err(key, e),
            };
            // Tell a range past the end (not worth another attempt; a torn object, to the
            // segments above) from a failing store or a body cut short (worth another).
            match self.inner.head(path).await {
                Ok(meta) if range.end > meta.size => Err(bad()),
                _ => Err(failed),
            }
        })
        .await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let path = &if prefix.is_empty() { None } else { Some(self.path(prefix)?) };
        let metas: Vec<_> = self
            .retried(prefix, move || async move {
                self.inner.list(path.as_ref()).try_collect().await.map_err(|e| self.err(prefix, e))
            })
            .await?;
        let mut keys: Vec<String> =
            metas.into_iter().map(|m: object_store::ObjectMeta| m.location.to_string()).collect();
        keys.sort();
        Ok(keys)
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = &self.path(key)?;
        self.retried(key, move || async move {
            match self.inner.delete(path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(self.err(key, e)),
            }
        })
        .await
    }
}

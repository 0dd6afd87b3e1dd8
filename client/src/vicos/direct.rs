//! Objects read and written straight in the provider's S3 bucket, with this member's own
//! credentials: the architecture of paper 003 (Fig. 3), where a VICOS client reaches the cloud
//! object store itself and only AIP goes through the provider's sequencer. The bucket is the
//! one the provider keeps its blobs in, and the objects have the names the provider gives
//! them ([`vouch_proto::vicos::object_name`]), so members that reach the store themselves and
//! members that go through the provider share one set of objects.
//!
//! Nothing changes for trust: the store is as untrusted as the provider. Each object read is
//! checked against the hash the group's history holds, and a "not found" for an object the
//! history names is a lie ([`ViolationKind::UnprovenNotFound`]).

use super::{Incoming, Parts, HASH_LEN};
use crate::error::ClientError;
use crate::violation::ViolationKind;
use bytes::Bytes;
use futures::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as Key;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig, WriteMultipart};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

/// Bytes read ahead of the store; an object up to this size is one PUT, a larger one a
/// multipart upload of parts this size.
const PART_BYTES: usize = 8 << 20;
/// Parts of a multipart upload in flight at once.
const PARTS_IN_FLIGHT: usize = 2;

/// Where the provider's S3 bucket is and this member's credentials for it.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Access {
    /// `http(s)://host:port`; none for AWS itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    pub bucket: String,
    #[serde(default = "default_region")]
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
}

impl S3Access {
    /// From a TOML file of the fields above (it holds a secret: keep it private).
    pub fn read(path: &std::path::Path) -> Result<S3Access, ClientError> {
        let text = std::fs::read_to_string(path).map_err(ClientError::io(format!("reading {}", path.display())))?;
        toml::from_str(&text).map_err(|e| ClientError::BadInput(format!("{}: {e}", path.display())))
    }
}

fn default_region() -> String {
    "us-east-1".into()
}

impl std::fmt::Debug for S3Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Access")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// A group's objects in the provider's bucket, reached by this member itself.
#[derive(Clone, Debug)]
pub struct DirectObjects {
    store: Arc<dyn ObjectStore>,
    /// For messages: the endpoint and bucket.
    place: String,
}

impl DirectObjects {
    /// The bucket of `access`. Requests time out and give up after a few retries, so an
    /// unreachable store is an error within seconds.
    pub fn s3(access: &S3Access) -> Result<DirectObjects, ClientError> {
        let endpoint = access.endpoint.clone().unwrap_or_else(|| "https://s3.amazonaws.com".into());
        let place = format!("{endpoint}/{}", access.bucket);
        let options = ClientOptions::new()
            .with_connect_timeout(Duration::from_secs(3))
            .with_timeout(Duration::from_secs(60))
            .with_allow_http(endpoint.starts_with("http://"));
        vouch_proto::tls::install_provider();
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&access.bucket)
            .with_region(&access.region)
            .with_access_key_id(&access.access_key)
            .with_secret_access_key(&access.secret_key)
            .with_retry(RetryConfig { max_retries: 2, retry_timeout: Duration::from_secs(10), ..Default::default() })
            .with_client_options(options)
            // The bytes are checked against the group's history on every read: a signature
            // over each body's SHA-256 would add nothing but CPU.
            .with_unsigned_payload(true);
        if let Some(e) = &access.endpoint {
            builder = builder.with_endpoint(e).with_virtual_hosted_style_request(false);
        }
        let store = builder.build().map_err(|e| ClientError::BadInput(format!("S3 access to {place}: {e}")))?;
        Ok(DirectObjects { store: Arc::new(store), place })
    }

    fn failed(&self, what: &str, e: object_store::Error) -> ClientError {
        match e {
            object_store::Error::Unauthenticated { .. } | object_store::Error::PermissionDenied { .. } => {
                ClientError::Unauthorized(format!("{}: {what}: {e}", self.place))
            }
            e => ClientError::Unavailable(format!("{}: {what}: {e}", self.place)),
        }
    }

    /// Stores the bytes of `reader` as `name`; returns their length and hash. Nothing is
    /// visible under `name` unless the whole object is (an input that fails midway stores
    /// nothing).
    pub(super) async fn put(
        &self,
        name: &str,
        reader: impl Read + Send + 'static,
    ) -> Result<(u64, [u8; HASH_LEN]), ClientError> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Part>(PARTS_IN_FLIGHT);
        let producer = tokio::task::spawn_blocking(move || read_parts(reader, &tx));
        let key = Key::from(name);
        let stored = match (rx.recv().await, rx.recv().await) {
            (Some(Part::End), _) => Some(self.put_whole(&key, Bytes::new()).await),
            (Some(Part::Data(one)), Some(Part::End)) => Some(self.put_whole(&key, one).await),
            (Some(Part::Data(first)), Some(Part::Data(second))) => {
                self.put_parts(&key, [first, second], &mut rx).await.transpose()
            }
            _ => None, // the input failed: the producer says how
        };
        let counted = producer
            .await
            .map_err(|e| ClientError::Io { what: "reading the input".into(), source: std::io::Error::other(e) })??;
        match stored {
            Some(stored) => stored.map_err(|e| self.failed(&format!("storing {name}"), e))?,
            None => {
                return Err(ClientError::Io {
                    what: "reading the input".into(),
                    source: std::io::Error::other("it ended early"),
                })
            }
        }
        Ok(counted)
    }

    /// One PUT of a whole object, sent again (twice) when MinIO answers 400 IncompleteBody to
    /// a well-formed request (minio/minio#21425; object_store retries no 4xx).
    async fn put_whole(&self, key: &Key, bytes: Bytes) -> object_store::Result<()> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.store.put(key, PutPayload::from_bytes(bytes.clone())).await {
                Ok(_) => return Ok(()),
                Err(e) if tries < 3 && e.to_string().contains("IncompleteBody") => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// A multipart upload of `first` and what follows; `None` (aborted) when the input failed.
    async fn put_parts(
        &self,
        key: &Key,
        first: [Bytes; 2],
        rest: &mut tokio::sync::mpsc::Receiver<Part>,
    ) -> object_store::Result<Option<()>> {
        let mut upload = WriteMultipart::new_with_chunk_size(self.store.put_multipart(key).await?, PART_BYTES);
        let [one, two] = first;
        upload.put(one);
        let mut next = Part::Data(two);
        loop {
            match next {
                Part::Data(part) => {
                    if let Err(e) = upload.wait_for_capacity(PARTS_IN_FLIGHT).await {
                        upload.abort().await.ok();
                        return Err(e);
                    }
                    upload.put(part);
                }
                Part::End => return upload.finish().await.map(|_| Some(())),
            }
            next = match rest.recv().await {
                Some(part) => part,
                None => {
                    upload.abort().await.ok();
                    return Ok(None);
                }
            };
        }
    }

    /// Streams object `name`, of `len` bytes by the group's history, into `out` (never more:
    /// see [`Incoming`]); returns its hash. A missing object is a lie when the group's history
    /// names it: the caller knows it does.
    pub(super) async fn get(
        &self,
        name: &str,
        len: u64,
        out: &mut (impl Write + Send),
    ) -> Result<[u8; HASH_LEN], ClientError> {
        let got = match self.store.get(&Key::from(name)).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(ClientError::violation(
                    ViolationKind::UnprovenNotFound,
                    format!("{} says object {name} is not found", self.place),
                ))
            }
            Err(e) => return Err(self.failed(&format!("reading {name}"), e)),
        };
        let mut bytes = got.into_stream();
        let what = format!("{} object {name}", self.place);
        let mut incoming = Incoming::new(out, len, &what);
        while let Some(chunk) = bytes.next().await {
            incoming.take(&chunk.map_err(|e| self.failed(&format!("reading {name}"), e))?)?;
        }
        incoming.end()
    }

    /// Deletes object `name`; deleting what is not there succeeds.
    pub(super) async fn delete(&self, name: &str) -> Result<(), ClientError> {
        match self.store.delete(&Key::from(name)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.failed(&format!("deleting {name}"), e)),
        }
    }

    /// Deletes the objects `names` (on S3, in bulk requests); what failed, said.
    pub(super) async fn delete_many(&self, names: Vec<String>) -> Vec<String> {
        let keys = futures::stream::iter(names.into_iter().map(|n| Ok(Key::from(n)))).boxed();
        self.store
            .delete_stream(keys)
            .filter_map(|deleted| async move {
                match deleted {
                    Ok(_) | Err(object_store::Error::NotFound { .. }) => None,
                    Err(e) => Some(format!("{}: {e}", self.place)),
                }
            })
            .collect()
            .await
    }
}

/// What the producer of a direct put hands over: a part, then the end (a producer that
/// fails sends no end).
enum Part {
    Data(Bytes),
    End,
}

/// The producer half of a direct put: `reader`'s bytes in parts, counted and hashed as they
/// go.
fn read_parts(reader: impl Read, tx: &tokio::sync::mpsc::Sender<Part>) -> Result<(u64, [u8; HASH_LEN]), ClientError> {
    let mut parts = Parts::new(reader, PART_BYTES, PART_BYTES.min(1 << 20));
    while let Some(part) = parts.next()? {
        if tx.blocking_send(Part::Data(Bytes::from(part))).is_err() {
            return Ok(parts.finish()); // the upload failed: its error is the one reported
        }
    }
    let _ = tx.blocking_send(Part::End);
    Ok(parts.finish())
}

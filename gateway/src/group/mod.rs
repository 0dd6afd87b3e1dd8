//! Group mode: the gateway is a member of a VICOS group (paper 003) and serves the group's
//! object store as S3. Several gateways, each a member, serve one store: a write through one
//! is visible through the others, and each checks that the provider shows them all one
//! history (AIP), so a forked provider is caught when the forks meet, and an altered object
//! when it is read. Either reaches the application as [`crate::errors::VIOLATION_CODE`].
//!
//! * Names in ADICT: a bucket is the key `b/<bucket>` (an empty object), an object the key
//!   `o/<bucket>/<key>`, stored in the gateway's object format ([`crate::object`]: the body,
//!   then its metadata with the ETag and, in group mode, the time it was stored).
//! * The group hashes the whole stored object, so a read is spooled (up to 8 MiB in memory,
//!   past it in a temporary file) and served only once it verified: GetObject, even of a
//!   range, reads the whole object; HeadObject and each object a listing page names cost a
//!   full read too (their size, ETag and time are in the object; only its tail is kept).
//! * An operation that aborts (another member's incompatible operation was pending) or that
//!   the provider's sequencer refuses as busy is tried again a few times, then answered 503
//!   (SDKs retry it). Each runs to its end on a task of its own even if the application
//!   hangs up, so the member's AIP state never stops mid-operation, and shutdown waits for it.
//! * Not in group mode: multipart uploads and conditional puts (If-Match / If-None-Match)
//!   answer NotImplemented, as conditional copies (x-amz-copy-source-if-*), reads by part
//!   number and versions do in both modes (a read's conditions are served: the ETag and time
//!   are known once the object is read). ListBuckets names no creation dates
//!   (a bucket is an empty marker). No member can hold the others while it checks and then
//!   writes, so a check-then-write (CreateBucket's "exists?", DeleteBucket's "empty?", a put's
//!   "is there a bucket?") is only atomic within one gateway: a put racing a DeleteBucket
//!   through another gateway can leave an object behind, listed again if the bucket is made
//!   again.

mod s3;
mod spool;

use crate::background::Background;
use crate::errors::to_s3;
use crate::front::ObjectStat;
use crate::metrics::Metrics;
use crate::object::{ObjectMeta, MAX_META, TRAILER};
use crate::stream::Deadlines;
use s3s::{s3_error, S3ErrorCode, S3Result};
use spool::{Spool, Spooled, Tail};
use std::future::Future;
use std::io::Read;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use vouch_client::vicos::{is_busy, Group};
use vouch_client::ClientError;
use vouch_core::aip::Outcome;

const BUCKET_PREFIX: &[u8] = b"b/";
const OBJECT_PREFIX: &[u8] = b"o/";

/// Times an operation is tried when it aborts or the sequencer is busy, before a 503.
const ATTEMPTS: u32 = 5;
/// The wait before the second try; it doubles for each next one (plus a little at random,
/// so that gateways that collided do not collide again).
const FIRST_BACKOFF: Duration = Duration::from_millis(20);
/// How often the gateway does the group's passive AIP work when no application writes.
const HELP_EVERY: Duration = Duration::from_secs(2);
/// Objects read at once for a listing page (each a full read).
const LISTING_READS: usize = 4;

/// The portal of one member of a VICOS group, for every application behind it.
pub struct GroupGateway {
    group: Arc<Group>,
    background: Background,
    /// How slowly an application's body may arrive.
    deadlines: Deadlines,
}

/// An object read whole and verified: its stored bytes, metadata and body length.
struct Fetched {
    spool: Arc<Spooled>,
    found: ObjectStat,
}

/// What a put stores: the first `body_len` bytes of `spool`, then `trailer` (empty when the
/// spool holds the whole stored object already). Readable again for each attempt.
struct Upload {
    spool: Arc<Spooled>,
    body_len: u64,
    trailer: Vec<u8>,
}

impl Upload {
    fn reader(&self) -> std::io::Result<impl Read + Send + 'static> {
        let body = self.spool.reader(0..self.body_len)?;
        Ok(body.chain(std::io::Cursor::new(self.trailer.clone())))
    }
}

pub(crate) fn bucket_key(bucket: &str) -> Vec<u8> {
    [BUCKET_PREFIX, bucket.as_bytes()].concat()
}

/// The ADICT prefix of `bucket`'s objects.
fn objects_prefix(bucket: &str) -> Vec<u8> {
    [OBJECT_PREFIX, bucket.as_bytes(), b"/"].concat()
}

/// The ADICT key of `key` in `bucket`; KeyTooLongError past what a group key holds.
fn object_key(bucket: &str, key: &str) -> S3Result<Vec<u8>> {
    let name = [&objects_prefix(bucket), key.as_bytes()].concat();
    match name.len() <= vouch_proto::vicos::MAX_OBJECT_KEY {
        true => Ok(name),
        false => Err(s3_error!(
            KeyTooLongError,
            "a group key holds {} bytes with its bucket",
            vouch_proto::vicos::MAX_OBJECT_KEY
        )),
    }
}

/// The buckets among a listing's keys, ascending.
fn buckets_of(keys: &[Vec<u8>]) -> Vec<String> {
    let mut buckets: Vec<String> = keys
        .iter()
        .filter_map(|k| std::str::from_utf8(k.strip_prefix(BUCKET_PREFIX)?).ok())
        .map(str::to_string)
        .collect();
    buckets.sort();
    buckets
}

/// `bucket`'s object keys among a listing's keys, ascending (by their bytes, as S3 orders).
fn objects_of(keys: &[Vec<u8>], bucket: &str) -> Vec<String> {
    let prefix = objects_prefix(bucket);
    let mut objects: Vec<String> = keys
        .iter()
        .filter_map(|k| std::str::from_utf8(k.strip_prefix(prefix.as_slice())?).ok())
        .map(str::to_string)
        .collect();
    objects.sort();
    objects
}

fn spool_failed(e: std::io::Error) -> s3s::S3Error {
    s3_error!(InternalError, "the gateway's spool failed: {e}")
}

impl GroupGateway {
    /// A portal for the member `group`; its operations run as tasks of `background`, and the
    /// bodies it takes arrive within `deadlines`.
    pub(crate) fn new(group: Arc<Group>, background: Background, deadlines: Deadlines) -> GroupGateway {
        GroupGateway { group, background, deadlines }
    }

    /// Runs `op` to its end on a task of the gateway's own (see the module doc).
    async fn to_the_end<T: Send + 'static>(&self, op: impl Future<Output = T> + Send + 'static) -> S3Result<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.background.spawn(async move {
            let _ = tx.send(op.await);
        });
        rx.await.map_err(|_| s3_error!(InternalError, "a group operation ended without an answer"))
    }

    /// The outcome of the group operation `op` makes, tried again (after a growing wait)
    /// while it aborts, the sequencer is busy or a read's object changed while it came (each
    /// attempt makes its own output: what a failed one wrote is never served);
    /// ServiceUnavailable after [`ATTEMPTS`].
    /// Other errors become S3's, with `missing` for "not found".
    async fn retried<T, F, Fut>(&self, missing: S3ErrorCode, op: F) -> S3Result<T>
    where
        T: Send + 'static,
        F: Fn(Arc<Group>) -> Fut,
        Fut: Future<Output = Result<Outcome<T>, ClientError>> + Send + 'static,
    {
        let mut wait = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let why = match self.to_the_end(op(self.group.clone())).await? {
                Ok(Outcome::Done(done)) => return Ok(done),
                Ok(Outcome::Abort) => "another member's operation was pending".to_string(),
                Err(e) if is_busy(&e) => e.to_string(),
                // A read whose object another member replaced while it came: its spool goes
                // with the attempt, and the next attempt reads into a fresh one.
                Err(e @ ClientError::Changed(_)) => e.to_string(),
                Err(e) => return Err(to_s3(e, missing)),
            };
            tracing::debug!("group {}: attempt {attempt} of an operation did not go through: {why}", self.group.name());
            if attempt < ATTEMPTS {
                let jitter = Duration::from_millis(rand::random::<u64>() % wait.as_millis().max(1) as u64);
                tokio::time::sleep(wait + jitter).await;
                wait *= 2;
            }
        }
        Err(s3_error!(
            ServiceUnavailable,
            "the operation kept aborting (other members' operations were pending) or the provider's sequencer was \
             busy; try again"
        ))
    }

    /// The object under `key`, read whole into a spool and verified; `None` when the group's
    /// history proves it absent.
    async fn fetch(&self, key: &[u8]) -> S3Result<Option<Fetched>> {
        let key = key.to_vec();
        let read = self
            .retried(S3ErrorCode::NoSuchKey, |group| {
                let key = key.clone();
                async move {
                    let mut spool = Spool::new();
                    Ok(match group.get(&key, &mut spool).await? {
                        Outcome::Done(found) => Outcome::Done(found.map(|_| spool)),
                        Outcome::Abort => Outcome::Abort,
                    })
                }
            })
            .await?;
        let Some(spool) = read else { return Ok(None) };
        let spool = Arc::new(spool.finish().map_err(spool_failed)?);
        let tail =
            spool.read(spool.len().saturating_sub(MAX_META as u64 + TRAILER)..spool.len()).map_err(spool_failed)?;
        let found = parse(&key, spool.len(), &tail)?;
        Ok(Some(Fetched { spool, found }))
    }

    /// What the object under `key` says of itself (a full read, verified, keeping only its
    /// tail); `None` when the group's history proves it absent.
    async fn stat_key(&self, key: &[u8]) -> S3Result<Option<ObjectStat>> {
        let key = key.to_vec();
        let read = self
            .retried(S3ErrorCode::NoSuchKey, |group| {
                let key = key.clone();
                async move {
                    let mut tail = Tail::new(MAX_META + TRAILER as usize);
                    Ok(match group.get(&key, &mut tail).await? {
                        Outcome::Done(found) => Outcome::Done(found.map(|_| tail.finish())),
                        Outcome::Abort => Outcome::Abort,
                    })
                }
            })
            .await?;
        read.map(|(len, tail)| parse(&key, len, &tail)).transpose()
    }

    /// Stores `upload` under `key`.
    async fn store_upload(&self, key: &[u8], upload: Upload) -> S3Result<()> {
        let (key, upload) = (key.to_vec(), Arc::new(upload));
        self.retried(S3ErrorCode::NoSuchKey, |group| {
            let (key, upload) = (key.clone(), upload.clone());
            async move {
                let reader = upload.reader().map_err(ClientError::io("reading the spooled object"))?;
                group.put(&key, reader).await
            }
        })
        .await
    }

    /// Removes `key` (done also when it was not there).
    async fn remove_key(&self, key: &[u8]) -> S3Result<()> {
        let key = key.to_vec();
        self.retried(S3ErrorCode::NoSuchKey, |group| {
            let key = key.clone();
            async move { group.delete(&key).await }
        })
        .await
    }

    /// Every key of the group, from its history.
    async fn all_keys(&self) -> S3Result<Vec<Vec<u8>>> {
        self.retried(S3ErrorCode::NoSuchBucket, |group| async move { group.list().await }).await
    }
}

/// What the stored object `key` of `len` bytes says, from its last bytes `tail`.
fn parse(key: &[u8], len: u64, tail: &[u8]) -> S3Result<ObjectStat> {
    let (meta, body_len) = ObjectMeta::from_tail(len, tail)
        .map_err(|e| s3_error!(InternalError, "{}: {e}", String::from_utf8_lossy(key)))?;
    let time = meta.modified.unwrap_or(0);
    Ok(ObjectStat { meta, body_len, time })
}

/// Does the group's passive AIP work every [`HELP_EVERY`] until `stopping` (Sec. 3.7: updates
/// the provider hands this member to authenticate, so that a member that went away holds up
/// no one, also while no application writes here). A round begun runs to its end: cut short,
/// the member's AIP state would stop mid-phase. A violation it catches is logged as an error
/// and counted, once: the helper stops there.
pub(crate) fn spawn_helper(
    group: Arc<Group>,
    metrics: Arc<Metrics>,
    mut stopping: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = tokio::time::sleep(HELP_EVERY) => {}
                _ = stopping.changed() => return,
            }
            match group.help().await {
                Ok(()) => {}
                Err(ClientError::Misbehaved(v)) => {
                    // Once is enough: every later round would find the same lie again.
                    tracing::error!(kind = %v.kind, "group {}: the provider misbehaved: {v}", group.name());
                    metrics.violation(&v.kind.to_string());
                    return;
                }
                Err(e) => tracing::debug!("group {}: the passive AIP work is left for later: {e}", group.name()),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_buckets_and_objects_apart() {
        assert_eq!(bucket_key("photos"), b"b/photos");
        assert_eq!(object_key("photos", "2024/a.jpg").unwrap(), b"o/photos/2024/a.jpg");
        let long = "k".repeat(vouch_proto::vicos::MAX_OBJECT_KEY);
        assert_eq!(*object_key("photos", &long).unwrap_err().code(), S3ErrorCode::KeyTooLongError);
        let keys: Vec<Vec<u8>> = ["b/photos", "b/logs", "o/photos/b", "o/photos/a/1", "o/photosx/c", "o/logs/z", "x"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .chain([b"o/photos/\xff".to_vec()])
            .collect();
        assert_eq!(buckets_of(&keys), ["logs", "photos"]);
        // Only the bucket's own keys (not a bucket whose name it begins), and only UTF-8 ones.
        assert_eq!(objects_of(&keys, "photos"), ["a/1", "b"]);
        assert_eq!(objects_of(&keys, "none"), Vec::<String>::new());
    }
}

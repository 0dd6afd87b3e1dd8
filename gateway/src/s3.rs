//! The objects of a client's own namespace, for the S3 front ([`crate::front`]): every byte,
//! ETag and listing an application gets was verified against the client's namespace root
//! first. (A conditional put needs no lock of its own: the client commits it only over the
//! state its condition was checked on.)

use crate::background::Background;
use crate::errors::to_s3;
use crate::fields::{check_read_conditions, etag_matches, timestamp, ReadConditions};
use crate::front::{served_range, Asked, Capabilities, Multipart, ObjectStat, Objects, Opened, WriteConditions};
use crate::metrics::Metrics;
use crate::names::{self, bucket_name, object_name, objects_prefix};
use crate::object::{ObjectMeta, TRAILER};
use crate::stream::{body_stream, spool, Deadlines, Piece, PutBody, Spooled};
use s3s::dto::*;
use s3s::{s3_error, S3ErrorCode, S3Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use vouch_client::{Client, ClientError, Expected, PutOptions};
use vouch_core::namespace::VersionRecord;
use vouch_proto::ErrorCode;

/// The portal: one client (one namespace root) for every application behind it.
pub struct Gateway {
    client: Arc<Client>,
    metrics: Arc<Metrics>,
    /// Objects are stored with retrievability (a PoR copy each).
    por: bool,
    /// How long a replaced version stays readable (for reads in flight) before it is pruned.
    keep_replaced: Duration,
    /// How slowly an application's body may arrive.
    deadlines: Deadlines,
    background: Background,
    /// Where the last ranged read of each version ended: a read starting there is sequential,
    /// and the next stretch is fetched into the cache ahead of it.
    read_ends: Mutex<HashMap<(String, u64), u64>>,
    /// What each stored version's tail says, by (name, version, root): read once.
    metas: Mutex<HashMap<VersionKey, (ObjectMeta, u64)>>,
}

/// A stored version: its name, number and root (a name removed and stored again numbers its
/// versions from 1 again; the root tells them apart).
type VersionKey = (String, u64, [u8; 32]);

/// An object's latest version, verified: its record and what its tail says.
pub(crate) struct Stat {
    pub record: VersionRecord,
    pub version: u64,
    pub time: u64,
    pub meta: ObjectMeta,
    pub body_len: u64,
}

/// Times a GetObject looks its object up again when the version it found was replaced (and
/// pruned) before its first read.
const READ_ATTEMPTS: u32 = 3;

/// Versions whose last ranged read is remembered (for read-ahead); past it, all are forgotten.
const MAX_TRACKED_READS: usize = 4096;

/// Objects looked up at once for a listing page (each a lookup, and a read of its tail when
/// its metadata is not cached): the portal fetches paths in parallel (Iris Sec. 7.2).
const LISTING_LOOKUPS: usize = 16;

/// Bytes of a file's tail read at once to find its metadata.
const TAIL_READ: u64 = 4096;

impl Gateway {
    /// A portal for `client`, counting into `metrics`; `por`: objects get a PoR copy; a
    /// replaced version is pruned after `keep_replaced`; an application's body arrives within
    /// `deadlines`; its own tasks run in `background`.
    pub(crate) fn new(
        client: Arc<Client>,
        metrics: Arc<Metrics>,
        (por, keep_replaced, deadlines): (bool, Duration, Deadlines),
        background: Background,
    ) -> Gateway {
        Gateway {
            client,
            metrics,
            por,
            keep_replaced,
            deadlines,
            background,
            read_ends: Mutex::default(),
            metas: Mutex::default(),
        }
    }

    pub(crate) fn client(&self) -> &Arc<Client> {
        &self.client
    }

    /// The verified bytes of `pieces`, as a body (see [`body_stream`]).
    pub(crate) async fn body(&self, pieces: Vec<Piece>) -> S3Result<StreamingBlob> {
        body_stream(self.client.clone(), self.metrics.clone(), pieces).await
    }

    /// A ranged read of `name` version `version` that starts where the last one ended is
    /// sequential: the next stretch as long (up to the object's end) is read into the portal
    /// cache in the background, so the application's next request finds it there.
    fn prefetch_after(&self, name: &str, version: u64, range: &std::ops::Range<u64>, body_len: u64) {
        if self.client.cache().stats().capacity == 0 || range.is_empty() {
            return;
        }
        let key = (name.to_string(), version);
        let mut ends = self.read_ends.lock().expect("read ends");
        if ends.len() >= MAX_TRACKED_READS {
            ends.clear();
        }
        let sequential = ends.insert(key, range.end) == Some(range.start);
        drop(ends);
        let next = range.end..body_len.min(range.end + (range.end - range.start));
        if !sequential || next.is_empty() {
            return;
        }
        let (client, metrics, name) = (self.client.clone(), self.metrics.clone(), name.to_string());
        self.background.spawn_until_stop(async move {
            let Err(e) = client.get(&name, Some(version), Some(next), &mut std::io::sink()).await else { return };
            match e.violation_kind() {
                // No application sees this read's answer: a lie caught here is logged and
                // counted here, or nowhere.
                Some(kind) => {
                    tracing::error!(%kind, "{name}: the provider misbehaved in a read ahead: {e}");
                    metrics.violation(&kind.to_string());
                }
                None => tracing::debug!("{name}: a read ahead failed (the application's own read will retry): {e}"),
            }
        });
    }

    pub(crate) async fn need_bucket(&self, bucket: &str) -> S3Result<()> {
        match self.bucket_exists(bucket).await? {
            true => Ok(()),
            false => Err(s3_error!(NoSuchBucket, "no bucket {bucket}")),
        }
    }

    /// The latest version of `name` and its metadata; `None` when the provider proved it absent.
    pub(crate) async fn latest(&self, name: &str) -> S3Result<Option<Stat>> {
        let verified = match self.client.version(name, None).await {
            Ok(v) => v,
            Err(ClientError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(to_s3(e, S3ErrorCode::NoSuchKey)),
        };
        let record = verified.record;
        let cache_key = (name.to_string(), record.number, record.root.0);
        let cached = self.metas.lock().expect("meta cache").get(&cache_key).cloned();
        let (meta, body_len) = match cached {
            Some(hit) => hit,
            None => {
                let tail = self.read(name, record.number, record.len.saturating_sub(TAIL_READ)..record.len).await?;
                let parsed = match ObjectMeta::from_tail(record.len, &tail) {
                    Err(_) if tail.len() as u64 >= TRAILER => {
                        // Longer metadata than one read: its length says how much.
                        let meta_len = ObjectMeta::meta_len(&tail[tail.len() - TRAILER as usize..])
                            .map_err(|e| s3_error!(InternalError, "{name}: {e}"))?;
                        let from = record.len.saturating_sub(meta_len + TRAILER);
                        let tail = self.read(name, record.number, from..record.len).await?;
                        ObjectMeta::from_tail(record.len, &tail)
                    }
                    parsed => parsed,
                };
                let parsed = parsed.map_err(|e| s3_error!(InternalError, "{name}: {e}"))?;
                self.metas.lock().expect("meta cache").insert(cache_key, parsed.clone());
                parsed
            }
        };
        Ok(Some(Stat { record, version: record.number, time: record.time, meta, body_len }))
    }

    /// Bytes `range` of version `version` of `name`, verified.
    async fn read(&self, name: &str, version: u64, range: std::ops::Range<u64>) -> S3Result<Vec<u8>> {
        let mut out = Vec::with_capacity((range.end - range.start) as usize);
        if range.is_empty() {
            return Ok(out);
        }
        self.client
            .get(name, Some(version), Some(range), &mut out)
            .await
            .map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        Ok(out)
    }

    /// Stores `body` as the object `name`, with `meta` (its ETag set from the body).
    pub(crate) async fn put_body(&self, name: &str, body: PutBody, meta: ObjectMeta) -> S3Result<ObjectMeta> {
        let (spooled, meta) = self.spool_body(body, meta).await?;
        self.commit_spooled(name, spooled, None).await.map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        Ok(meta)
    }

    /// The object's file (`body`, then `meta` with the body's ETag), read whole, its checks
    /// passed, before anything is locked: a key's lock (and with PoR the client's commit lock)
    /// is held while the file is uploaded from here, never while an application's body
    /// arrives, however slowly that is.
    pub(crate) async fn spool_body(&self, body: PutBody, meta: ObjectMeta) -> S3Result<(Spooled, ObjectMeta)> {
        let (reader, done) = body.into_reader(meta);
        let spooled = tokio::task::spawn_blocking(move || spool(reader))
            .await
            .map_err(|e| s3_error!(InternalError, "spooling the body: {e}"))?;
        let spooled = spooled.map_err(|e| {
            done.failure().unwrap_or_else(|| {
                tracing::error!("spooling a body: {e}");
                s3_error!(InternalError, "the gateway could not spool the body; its log says why")
            })
        })?;
        let meta = done.meta().ok_or_else(|| s3_error!(InternalError, "the body ended without its metadata"))?;
        Ok((spooled, meta))
    }

    /// Stores the spooled file as a new version of `name` (committed only over the state
    /// `expected`, when given), and prunes the versions it replaced.
    async fn commit_spooled(
        &self,
        name: &str,
        spooled: Spooled,
        expected: Option<Expected>,
    ) -> Result<(), ClientError> {
        let options = PutOptions { por: self.por, expected, ..PutOptions::default() };
        let put = self.client.put_with(name, spooled, options, |_| {}).await?;
        if put.version > 1 {
            match self.keep_replaced.is_zero() {
                true => drop_older(&self.client, name, put.version).await,
                false => {
                    let (client, name, wait) = (self.client.clone(), name.to_string(), self.keep_replaced);
                    let mut stopping = self.background.stopping();
                    // The wait ends at shutdown (the next overwrite prunes what is left); a
                    // prune begun runs to its end, and shutdown waits for it.
                    self.background.spawn(async move {
                        tokio::select! {
                            () = tokio::time::sleep(wait) => drop_older(&client, &name, put.version).await,
                            _ = stopping.changed() => {}
                        }
                    });
                }
            }
        }
        Ok(())
    }

    /// The state a conditional put (If-Match, If-None-Match) expects `name` in: the one it
    /// finds now, when the conditions hold for it; PreconditionFailed when they do not.
    async fn expected(
        &self,
        name: &str,
        (if_match, if_none_match): (Option<&ETagCondition>, Option<&ETagCondition>),
    ) -> S3Result<Expected> {
        let current = self.latest(name).await?;
        let meta = current.as_ref().map(|s| &s.meta);
        if if_match.is_some_and(|c| !etag_matches(c, meta)) || if_none_match.is_some_and(|c| etag_matches(c, meta)) {
            return Err(s3_error!(PreconditionFailed, "the object's state does not meet the condition"));
        }
        Ok(current.map_or(Expected::Absent, |s| Expected::Latest(s.record)))
    }
}

impl Stat {
    /// What the front shows of it.
    fn shown(self) -> ObjectStat {
        ObjectStat { meta: self.meta, body_len: self.body_len, time: self.time }
    }
}

#[async_trait::async_trait]
impl Objects for Gateway {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            mode: "a client's own namespace",
            conditional_writes: true,
            deadlines: Some(self.deadlines),
            stats_at_once: LISTING_LOOKUPS,
        }
    }

    async fn buckets(&self) -> S3Result<Vec<Bucket>> {
        let listing = self.client.list().await.map_err(|e| to_s3(e, S3ErrorCode::NoSuchBucket))?;
        let mut buckets = Vec::new();
        for entry in listing {
            let Some(bucket) = names::bucket_of(&entry.name) else { continue };
            let made = self.client.version(&entry.name, None).await.map_err(|e| to_s3(e, S3ErrorCode::NoSuchBucket))?;
            buckets.push(Bucket {
                name: Some(bucket.to_string()),
                creation_date: Some(timestamp(made.record.time)),
                ..Bucket::default()
            });
        }
        Ok(buckets)
    }

    async fn bucket_exists(&self, bucket: &str) -> S3Result<bool> {
        match self.client.version(&bucket_name(bucket), None).await {
            Ok(_) => Ok(true),
            Err(ClientError::NotFound(_)) => Ok(false),
            Err(e) => Err(to_s3(e, S3ErrorCode::NoSuchBucket)),
        }
    }

    async fn make_bucket(&self, bucket: &str) -> S3Result<()> {
        let empty = std::io::Cursor::new(Vec::new());
        self.client
            .put(&bucket_name(bucket), empty, None, |_| {})
            .await
            .map_err(|e| to_s3(e, S3ErrorCode::NoSuchBucket))?;
        Ok(())
    }

    async fn remove_bucket(&self, bucket: &str) -> S3Result<()> {
        if !self.keys(bucket).await?.is_empty() {
            return Err(s3_error!(BucketNotEmpty, "{bucket} has objects"));
        }
        self.client.remove(&bucket_name(bucket)).await.map_err(|e| to_s3(e, S3ErrorCode::NoSuchBucket))
    }

    async fn stat(&self, bucket: &str, key: &str) -> S3Result<Option<ObjectStat>> {
        let name = object_name(bucket, key).map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        Ok(self.latest(&name).await?.map(Stat::shown))
    }

    async fn open(
        &self,
        bucket: &str,
        key: &str,
        asked: Asked<'_>,
        conditions: ReadConditions<'_>,
    ) -> S3Result<Option<Opened>> {
        let name = object_name(bucket, key).map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let Some(stat) = self.latest(&name).await? else { return Ok(None) };
            check_read_conditions(conditions, &stat.meta, stat.time)?;
            let range = served_range(asked, &stat.meta, stat.body_len)?;
            if !matches!(asked, Asked::All) {
                self.prefetch_after(&name, stat.version, &range, stat.body_len);
            }
            let piece = Piece { name: name.clone(), version: stat.version, range: range.clone() };
            match self.body(vec![piece]).await {
                // The version looked up was replaced, and pruned, before it was read: again.
                Err(e) if *e.code() == S3ErrorCode::NoSuchKey && attempts < READ_ATTEMPTS => continue,
                body => return Ok(Some(Opened { stat: stat.shown(), range, body: body? })),
            }
        }
    }

    async fn store(
        &self,
        bucket: &str,
        key: &str,
        body: PutBody,
        meta: ObjectMeta,
        conditions: WriteConditions<'_>,
    ) -> S3Result<ObjectMeta> {
        let name = object_name(bucket, key).map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        // Checked before the body is read (a refusal costs no upload), and held to the commit:
        // a change of the key meanwhile fails the put, never is overwritten by it.
        let expected = match conditions {
            (None, None) => None,
            conditions => Some(self.expected(&name, conditions).await?),
        };
        let (spooled, meta) = self.spool_body(body, meta).await?;
        match self.commit_spooled(&name, spooled, expected).await {
            Ok(()) => Ok(meta),
            // The key changed between the check and the commit: the conditions are checked
            // again on what is there now, to tell a failed condition from a change it allows
            // (which a retry gets past).
            Err(ClientError::Refused { code: ErrorCode::Conflict, .. }) if expected.is_some() => {
                self.expected(&name, conditions).await?;
                Err(s3_error!(ServiceUnavailable, "the object changed while it was put; try again"))
            }
            Err(e) => Err(to_s3(e, S3ErrorCode::NoSuchKey)),
        }
    }

    async fn copy(
        &self,
        from: (&str, &str),
        to: (&str, &str),
        meta: Option<ObjectMeta>,
    ) -> S3Result<Option<ObjectMeta>> {
        let from = object_name(from.0, from.1).map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        let to = object_name(to.0, to.1).map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        let Some(stat) = self.latest(&from).await? else { return Ok(None) };
        // The source's checksums go with its bytes (COPY or REPLACE), checked again on them; a
        // multipart source's COMPOSITE one (of its parts') is computed again on the whole
        // bytes, as the copy is one object.
        let composite = stat.meta.checksum_type.as_deref() == Some(crate::upload_sums::COMPOSITE);
        let (sums, computed) = match composite {
            true => (Default::default(), stat.meta.checksums.keys().next().cloned()),
            false => (crate::fields::checksums(&stat.meta), None),
        };
        let meta = meta.unwrap_or_else(|| ObjectMeta {
            etag: String::new(),
            upload: None,
            part_runs: Vec::new(),
            checksums: Default::default(),
            checksum_type: None,
            ..stat.meta
        });
        let whole = Piece { name: from, version: stat.version, range: 0..stat.body_len };
        let source = self.body(vec![whole]).await?;
        let body = PutBody::new(Some(source), None).with_checksums(sums, None, None).with_computed(computed);
        self.put_body(&to, body.with_deadlines(None), meta).await.map(Some)
    }

    async fn remove(&self, bucket: &str, key: &str) -> S3Result<()> {
        let name = object_name(bucket, key).map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        match self.client.remove(&name).await {
            Ok(()) | Err(ClientError::NotFound(_)) => Ok(()),
            Err(e) => Err(to_s3(e, S3ErrorCode::NoSuchKey)),
        }
    }

    async fn keys(&self, bucket: &str) -> S3Result<Vec<String>> {
        self.need_bucket(bucket).await?;
        let prefix = objects_prefix(bucket);
        let listing = self.client.list().await.map_err(|e| to_s3(e, S3ErrorCode::NoSuchBucket))?;
        let mut keys: Vec<String> =
            listing.into_iter().filter_map(|e| e.name.strip_prefix(&prefix).map(str::to_string)).collect();
        keys.sort();
        Ok(keys)
    }

    fn multipart(&self) -> Option<&dyn Multipart> {
        Some(self)
    }
}

/// An overwrite replaces the object, as in S3: the versions of `name` before `version` are
/// pruned (vouch would keep them all). The put stands whatever happens here; a failure is
/// logged, and the next overwrite prunes what this one left. (The latest version is never
/// pruned, so a name removed and stored again meanwhile loses at most replaced versions.)
async fn drop_older(client: &Client, name: &str, version: u64) {
    let older: Vec<u64> = match client.log(name).await {
        Ok(log) => log.iter().map(|v| v.number).filter(|&n| n < version).collect(),
        Err(e) => return tracing::warn!("{name}: its older versions stay for now: {e}"),
    };
    if older.is_empty() {
        return;
    }
    match client.prune(name, &older).await {
        Ok(()) | Err(ClientError::NotFound(_)) => {}
        Err(e) => tracing::warn!("{name}: its older versions stay for now: {e}"),
    }
}

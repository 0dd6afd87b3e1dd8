//! The S3 operations of group mode, on the member's [`Group`](vouch_client::vicos::Group):
//! every byte, ETag and listing an application gets was verified against the group's
//! history first (see the module above for what that costs and what is not served).

use super::spool::Spool;
use super::LISTING_READS;
use super::{bucket_key, buckets_of, object_key, objects_of, spool_failed, GroupGateway, Upload};
use crate::fields::{check_read_conditions, ReadConditions};
use crate::front::{served_range, Asked, Capabilities, ObjectStat, Objects, Opened, WriteConditions};
use crate::object::ObjectMeta;
use crate::stream::PutBody;
use s3s::dto::*;
use s3s::{s3_error, S3ErrorCode, S3Result};
use std::sync::Arc;
use vouch_client::unix_now;

impl GroupGateway {
    /// Spools a put's body (with its metadata after it, as the gateway stores objects) and
    /// stores it under `key`; the metadata with its ETag.
    async fn put_body(&self, key: &[u8], body: PutBody, meta: ObjectMeta) -> S3Result<ObjectMeta> {
        let (reader, done) = body.into_reader(meta);
        // The body's reader waits on the application: on a blocking thread.
        let spooled = tokio::task::spawn_blocking(move || {
            let mut spool = Spool::new();
            reader.copy_to(&mut spool)?;
            spool.finish()
        })
        .await
        .map_err(|e| s3_error!(InternalError, "spooling the body: {e}"))?;
        let spooled = spooled.map_err(|e| done.failure().unwrap_or_else(|| spool_failed(e)))?;
        let meta = done.meta().ok_or_else(|| s3_error!(InternalError, "the body ended without its metadata"))?;
        let body_len = spooled.len();
        self.store_upload(key, Upload { spool: Arc::new(spooled), body_len, trailer: Vec::new() }).await?;
        Ok(meta)
    }
}

#[async_trait::async_trait]
impl Objects for GroupGateway {
    fn capabilities(&self) -> Capabilities {
        let deadlines = Some(self.deadlines);
        Capabilities { mode: "group mode", conditional_writes: false, deadlines, stats_at_once: LISTING_READS }
    }

    async fn buckets(&self) -> S3Result<Vec<Bucket>> {
        // A bucket is an empty marker: the group keeps no creation date for it.
        let names = buckets_of(&self.all_keys().await?);
        Ok(names.into_iter().map(|name| Bucket { name: Some(name), ..Bucket::default() }).collect())
    }

    async fn bucket_exists(&self, bucket: &str) -> S3Result<bool> {
        let key = bucket_key(bucket);
        let found = self
            .retried(S3ErrorCode::NoSuchBucket, |group| {
                let key = key.clone();
                async move { group.get(&key, &mut std::io::sink()).await }
            })
            .await?;
        Ok(found.is_some())
    }

    async fn make_bucket(&self, bucket: &str) -> S3Result<()> {
        let empty = Arc::new(Spool::new().finish().map_err(spool_failed)?);
        self.store_upload(&bucket_key(bucket), Upload { spool: empty, body_len: 0, trailer: Vec::new() }).await
    }

    /// The bucket's existence and its keys come from one listing of the group.
    async fn remove_bucket(&self, bucket: &str) -> S3Result<()> {
        let keys = self.all_keys().await?;
        if !keys.contains(&bucket_key(bucket)) {
            return Err(s3_error!(NoSuchBucket, "no bucket {bucket}"));
        }
        if !objects_of(&keys, bucket).is_empty() {
            return Err(s3_error!(BucketNotEmpty, "{bucket} has objects"));
        }
        self.remove_key(&bucket_key(bucket)).await
    }

    async fn stat(&self, bucket: &str, key: &str) -> S3Result<Option<ObjectStat>> {
        self.stat_key(&object_key(bucket, key)?).await
    }

    /// The group hashes whole objects: the object is read whole and verified, and only then
    /// does a byte of it (of the range asked) leave the spool.
    async fn open(
        &self,
        bucket: &str,
        key: &str,
        asked: Asked<'_>,
        conditions: ReadConditions<'_>,
    ) -> S3Result<Option<Opened>> {
        let Some(fetched) = self.fetch(&object_key(bucket, key)?).await? else { return Ok(None) };
        let stat = fetched.found;
        check_read_conditions(conditions, &stat.meta, stat.time)?;
        let range = served_range(asked, &stat.meta, stat.body_len)?;
        let body = fetched.spool.clone().body(range.clone()).map_err(spool_failed)?;
        Ok(Some(Opened { stat, range, body }))
    }

    async fn store(
        &self,
        bucket: &str,
        key: &str,
        body: PutBody,
        meta: ObjectMeta,
        _conditions: WriteConditions<'_>,
    ) -> S3Result<ObjectMeta> {
        let key = object_key(bucket, key)?;
        self.put_body(&key, body, ObjectMeta { modified: Some(unix_now()), ..meta }).await
    }

    async fn copy(
        &self,
        from: (&str, &str),
        to: (&str, &str),
        meta: Option<ObjectMeta>,
    ) -> S3Result<Option<ObjectMeta>> {
        let to = object_key(to.0, to.1)?;
        let Some(source) = self.fetch(&object_key(from.0, from.1)?).await? else { return Ok(None) };
        let kept = source.found.meta;
        // The body is the source's, verified: so are its ETag and checksums.
        let described = meta.unwrap_or_else(|| kept.clone());
        let meta = ObjectMeta { etag: kept.etag, checksums: kept.checksums, modified: Some(unix_now()), ..described };
        let upload = Upload { spool: source.spool, body_len: source.found.body_len, trailer: meta.trailer_bytes() };
        self.store_upload(&to, upload).await?;
        Ok(Some(meta))
    }

    async fn remove(&self, bucket: &str, key: &str) -> S3Result<()> {
        self.remove_key(&object_key(bucket, key)?).await
    }

    /// The bucket's existence and its keys come from one listing of the group.
    async fn keys(&self, bucket: &str) -> S3Result<Vec<String>> {
        let keys = self.all_keys().await?;
        match keys.contains(&bucket_key(bucket)) {
            true => Ok(objects_of(&keys, bucket)),
            false => Err(s3_error!(NoSuchBucket, "no bucket {bucket}")),
        }
    }
}

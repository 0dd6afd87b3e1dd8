//! The S3 operations of group mode, on the member's [`Group`](vouch_client::vicos::Group):
//! every byte, ETag and listing an application gets was verified against the group's
//! history first (see the module above for what that costs and what is not served).

use super::spool::Spool;
use super::LISTING_READS;
use super::{bucket_key, buckets_of, object_key, objects_of, spool_failed, Found, GroupGateway, Upload};
use crate::listing::{self, Listed};
use crate::names;
use crate::object::ObjectMeta;
use crate::s3::{
    check_read_conditions, checksums, checksums_for, etag, meta_from, meta_of, object_output, read_conditions,
    timestamp, with_checksums, with_overrides,
};
use crate::stream::PutBody;
use futures::{StreamExt, TryStreamExt};
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3Request, S3Response, S3Result, S3};
use std::sync::Arc;
use vouch_client::unix_now;

/// NotImplemented for a request that asks what group mode does not do.
fn refuse_if(asked: bool, what: &str) -> S3Result<()> {
    match asked {
        true => Err(s3_error!(NotImplemented, "{what} is not served in group mode")),
        false => Ok(()),
    }
}

impl GroupGateway {
    /// One page of `bucket`'s keys under `prefix` after `after`, with each key's size, ETag
    /// and time (a key removed since the listing is left out, as a listing a moment later
    /// would leave it). The bucket's existence and its keys come from one listing of the group.
    async fn listing(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        after: Option<&str>,
        max: usize,
    ) -> S3Result<Listed> {
        let keys = self.keys().await?;
        if !keys.contains(&bucket_key(bucket)) {
            return Err(s3_error!(NoSuchBucket, "no bucket {bucket}"));
        }
        let page = names::list_page(&objects_of(&keys, bucket), prefix, delimiter, after, max);
        let found: Vec<Option<(String, Found)>> = futures::stream::iter(page.keys)
            .map(|key: String| async move {
                let found = self.stat(&object_key(bucket, &key)?).await?;
                Ok::<_, S3Error>(found.map(|found| (key, found)))
            })
            .buffered(LISTING_READS)
            .try_collect()
            .await?;
        let contents = found
            .into_iter()
            .flatten()
            .map(|(key, found)| Object {
                key: Some(key),
                size: Some(found.body_len as i64),
                e_tag: Some(etag(&found.meta)),
                last_modified: Some(timestamp(found.time)),
                ..Object::default()
            })
            .collect();
        let common_prefixes = page.common_prefixes.into_iter().map(|p| CommonPrefix { prefix: Some(p) }).collect();
        Ok(Listed { contents, common_prefixes, next: page.next })
    }

    /// Spools a put's body (with its metadata after it, as the gateway stores objects) and
    /// stores it under `key`; the metadata with its ETag.
    async fn put_body(&self, key: &[u8], body: PutBody, meta: ObjectMeta) -> S3Result<ObjectMeta> {
        let (mut reader, done) = body.into_reader(meta);
        // The body's reader waits on the application: on a blocking thread.
        let spooled = tokio::task::spawn_blocking(move || {
            let mut spool = Spool::new();
            std::io::copy(&mut reader, &mut spool)?;
            spool.finish()
        })
        .await
        .map_err(|e| s3_error!(InternalError, "spooling the body: {e}"))?;
        let spooled = spooled.map_err(|e| done.failure().unwrap_or_else(|| spool_failed(e)))?;
        let meta = done.meta().ok_or_else(|| s3_error!(InternalError, "the body ended without its metadata"))?;
        let body_len = spooled.len();
        self.store(key, Upload { spool: Arc::new(spooled), body_len, trailer: Vec::new() }).await?;
        Ok(meta)
    }
}

#[async_trait::async_trait]
impl S3 for GroupGateway {
    async fn list_buckets(&self, _req: S3Request<ListBucketsInput>) -> S3Result<S3Response<ListBucketsOutput>> {
        // A bucket is an empty marker: the group keeps no creation date for it.
        let buckets = buckets_of(&self.keys().await?)
            .into_iter()
            .map(|name| Bucket { name: Some(name), ..Bucket::default() })
            .collect();
        Ok(S3Response::new(ListBucketsOutput { buckets: Some(buckets), ..ListBucketsOutput::default() }))
    }

    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> S3Result<S3Response<CreateBucketOutput>> {
        let bucket = req.input.bucket;
        let _this_gateways = self.buckets.lock().await;
        if self.bucket_exists(&bucket).await? {
            return Err(s3_error!(BucketAlreadyOwnedByYou, "{bucket} exists"));
        }
        let empty = Arc::new(Spool::new().finish().map_err(spool_failed)?);
        self.store(&bucket_key(&bucket), Upload { spool: empty, body_len: 0, trailer: Vec::new() }).await?;
        Ok(S3Response::new(CreateBucketOutput { location: Some(format!("/{bucket}")) }))
    }

    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        self.need_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn delete_bucket(&self, req: S3Request<DeleteBucketInput>) -> S3Result<S3Response<DeleteBucketOutput>> {
        let bucket = req.input.bucket;
        let _this_gateways = self.buckets.lock().await;
        let keys = self.keys().await?;
        if !keys.contains(&bucket_key(&bucket)) {
            return Err(s3_error!(NoSuchBucket, "no bucket {bucket}"));
        }
        if !objects_of(&keys, &bucket).is_empty() {
            return Err(s3_error!(BucketNotEmpty, "{bucket} has objects"));
        }
        self.remove(&bucket_key(&bucket)).await?;
        Ok(S3Response::new(DeleteBucketOutput::default()))
    }

    async fn put_object(&self, req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        let S3Request { input, headers, trailing_headers, .. } = req;
        refuse_if(input.if_match.is_some() || input.if_none_match.is_some(), "a conditional PutObject")?;
        refuse_if(input.write_offset_bytes.is_some(), "an append (x-amz-write-offset-bytes)")?;
        let key = object_key(&input.bucket, &input.key)?;
        self.need_bucket(&input.bucket).await?;
        let meta = ObjectMeta { modified: Some(unix_now()), ..meta_from!(input)? };
        let claimed = with_checksums!(Checksum {}, input);
        let trailer = headers.get("x-amz-trailer").and_then(|v| v.to_str().ok()).map(str::to_string);
        let body = PutBody::new(input.body, input.content_md5).with_checksums(claimed, trailer, trailing_headers);
        let meta = self.put_body(&key, body, meta).await?;
        let sums = checksums(&meta);
        Ok(S3Response::new(with_checksums!(PutObjectOutput { e_tag: Some(etag(&meta)) }, sums)))
    }

    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        let input = req.input;
        refuse_if(input.part_number.is_some(), "a read by part number")?;
        let fetched = self.object(&input.bucket, &input.key).await?;
        let found = &fetched.found;
        check_read_conditions(read_conditions!(input), &found.meta, found.time)?;
        let range = match &input.range {
            None => 0..found.body_len,
            Some(r) => r.check(found.body_len).map_err(|_| s3_error!(InvalidRange, "for {} bytes", found.body_len))?,
        };
        let content_range = input
            .range
            .as_ref()
            .map(|_| format!("bytes {}-{}/{}", range.start, range.end.saturating_sub(1), found.body_len));
        let length = range.end - range.start;
        let sums = checksums_for(input.checksum_mode.as_ref(), length == found.body_len, &found.meta);
        // Verified whole: only now does a byte of it leave the spool.
        let body = fetched.spool.clone().body(range).map_err(spool_failed)?;
        let output = object_output!(
            GetObjectOutput { body: Some(body), content_length: Some(length as i64), content_range: content_range },
            found,
            found.meta,
            sums
        );
        Ok(S3Response::new(with_overrides!(output, input)))
    }

    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        let input = req.input;
        refuse_if(input.part_number.is_some(), "a read by part number")?;
        let found = self.object_stat(&input.bucket, &input.key).await?;
        check_read_conditions(read_conditions!(input), &found.meta, found.time)?;
        let sums = checksums_for(input.checksum_mode.as_ref(), true, &found.meta);
        let output =
            object_output!(HeadObjectOutput { content_length: Some(found.body_len as i64) }, found, found.meta, sums);
        Ok(S3Response::new(with_overrides!(output, input)))
    }

    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        let input = req.input;
        let key = object_key(&input.bucket, &input.key)?;
        self.need_bucket(&input.bucket).await?;
        // Deleting what is not there succeeds, as S3 says.
        self.remove(&key).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let input = req.input;
        self.need_bucket(&input.bucket).await?;
        let (mut deleted, mut errors) = (Vec::new(), Vec::new());
        for object in input.delete.objects {
            let removed = match object_key(&input.bucket, &object.key) {
                Ok(key) => self.remove(&key).await,
                Err(e) => Err(e),
            };
            match removed {
                Ok(()) => deleted.push(DeletedObject { key: Some(object.key), ..DeletedObject::default() }),
                Err(e) => errors.push(Error {
                    code: Some(e.code().as_str().to_string()),
                    key: Some(object.key),
                    message: e.message().map(str::to_string),
                    ..Error::default()
                }),
            }
        }
        if input.delete.quiet == Some(true) {
            deleted.clear();
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: Some(deleted),
            errors: Some(errors),
            ..DeleteObjectsOutput::default()
        }))
    }

    async fn copy_object(&self, req: S3Request<CopyObjectInput>) -> S3Result<S3Response<CopyObjectOutput>> {
        let input = req.input;
        let conditional = input.copy_source_if_match.is_some()
            || input.copy_source_if_none_match.is_some()
            || input.copy_source_if_modified_since.is_some()
            || input.copy_source_if_unmodified_since.is_some();
        refuse_if(conditional, "a conditional CopyObject (x-amz-copy-source-if-*)")?;
        let CopySource::Bucket { bucket: from_bucket, key: from_key, version_id } = &input.copy_source else {
            return Err(s3_error!(NotImplemented, "copies from access points"));
        };
        refuse_if(version_id.is_some(), "a copy of a version")?;
        let to = object_key(&input.bucket, &input.key)?;
        let source = self.object(from_bucket, from_key).await?;
        self.need_bucket(&input.bucket).await?;
        let kept = source.found.meta;
        let replace = input.metadata_directive.as_ref().is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        // The body is the source's, verified: so are its ETag and checksums.
        let described = match replace {
            true => meta_from!(input)?,
            false => kept.clone(),
        };
        let meta = ObjectMeta { etag: kept.etag, checksums: kept.checksums, modified: Some(unix_now()), ..described };
        let upload = Upload { spool: source.spool, body_len: source.found.body_len, trailer: meta.trailer_bytes() };
        self.store(&to, upload).await?;
        let result = CopyObjectResult {
            e_tag: Some(etag(&meta)),
            last_modified: meta.modified.map(timestamp),
            ..CopyObjectResult::default()
        };
        Ok(S3Response::new(CopyObjectOutput { copy_object_result: Some(result), ..CopyObjectOutput::default() }))
    }

    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        let (prefix, max) = listing::asked(&input.prefix, input.max_keys);
        let after = input.continuation_token.as_deref().or(input.start_after.as_deref());
        let listed = self.listing(&input.bucket, &prefix, input.delimiter.as_deref(), after, max).await?;
        Ok(S3Response::new(listing::v2(input, prefix, max, listed)))
    }

    /// ListObjects (version 1): the same pages, after a marker.
    async fn list_objects(&self, req: S3Request<ListObjectsInput>) -> S3Result<S3Response<ListObjectsOutput>> {
        let input = req.input;
        let (prefix, max) = listing::asked(&input.prefix, input.max_keys);
        let listed =
            self.listing(&input.bucket, &prefix, input.delimiter.as_deref(), input.marker.as_deref(), max).await?;
        Ok(S3Response::new(listing::v1(input, prefix, max, listed)))
    }
}

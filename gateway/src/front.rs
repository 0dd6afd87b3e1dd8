//! The S3 front: each S3 operation the gateway serves, written once over [`Objects`], a small
//! store of verified objects with two implementations: a client's own namespace
//! ([`crate::s3::Gateway`]) and a VICOS group's object store ([`crate::group::GroupGateway`]).
//!
//! The front parses and answers; the store finds, reads, writes and verifies. What a store
//! does not do is one of its [`Capabilities`] (or its [`Objects::multipart`]), and the front
//! refuses it here, in one place, with NotImplemented, never served as something else. What
//! no store does (a read by part number, a conditional copy, encryption, ...) is refused
//! before an operation runs, by the access check ([`crate::refuse`]).

use crate::attributes::{attributes_of, Described};
use crate::fields::{
    check_read_conditions, checksums, checksums_for, etag, meta_from, meta_of, object_output, read_conditions,
    timestamp, user_as_sent, user_headers, with_checksums, with_overrides, ReadConditions,
};
use crate::listing::{self, Listed};
use crate::names;
use crate::object::{ObjectMeta, PartRead, MAX_PART_RUNS};
use crate::stream::{Deadlines, PutBody};
use crate::upload_sums::UploadSum;
use futures::{StreamExt, TryStreamExt};
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response, S3Result, TrailingHeaders, S3};
use vouch_client::unix_now;

/// What an object says of itself: its metadata, its body's length and when it was stored.
pub(crate) struct ObjectStat {
    pub meta: ObjectMeta,
    pub body_len: u64,
    /// Unix seconds (0 when unknown).
    pub time: u64,
}

/// A read: the object, the bytes of it served, and their body (verified before it is served).
pub(crate) struct Opened {
    pub stat: ObjectStat,
    pub range: std::ops::Range<u64>,
    pub body: StreamingBlob,
}

/// What of an object a read asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Asked<'a> {
    All,
    /// Its Range header.
    Range(&'a Range),
    /// Its part `partNumber` (from 1).
    Part(i32),
}

impl<'a> Asked<'a> {
    /// A read's Range header and partNumber, which S3 does not take together.
    pub(crate) fn of(range: Option<&'a Range>, part: Option<i32>) -> S3Result<Asked<'a>> {
        match (range, part) {
            (None, None) => Ok(Asked::All),
            (Some(range), None) => Ok(Asked::Range(range)),
            (None, Some(part)) => Ok(Asked::Part(part)),
            (Some(_), Some(_)) => Err(s3_error!(InvalidRequest, "a Range header and a partNumber together")),
        }
    }
}

/// The bytes of an object of `len` bytes with `meta` a read serves: those of its Range header
/// (InvalidRange past the end), of its part (InvalidPartNumber past the last), or all.
pub(crate) fn served_range(asked: Asked, meta: &ObjectMeta, len: u64) -> S3Result<std::ops::Range<u64>> {
    match asked {
        Asked::All => Ok(0..len),
        Asked::Range(r) => r.check(len).map_err(|_| s3_error!(InvalidRange, "for {len} bytes")),
        Asked::Part(number) => match meta.part(number, len) {
            PartRead::Bytes { range, .. } => Ok(range),
            PartRead::NoSuchPart { parts } => {
                let why = format!("part {number} of an object of {parts} part{}", if parts == 1 { "" } else { "s" });
                let mut e = S3Error::with_message(S3ErrorCode::Custom("InvalidPartNumber".into()), why);
                e.set_status_code(http::StatusCode::RANGE_NOT_SATISFIABLE);
                Err(e)
            }
            PartRead::Unknown => Err(s3_error!(
                NotImplemented,
                "a read by part number of this object: its part sizes were not kept (an object stored by an \
                 older vouch, or uploaded in parts of more than {MAX_PART_RUNS} runs of sizes)"
            )),
        },
    }
}

/// What a read of `range` of `stat`'s object says of it: its Content-Range (when a range or a
/// part was asked), and the object's number of parts (when a part was).
fn served_headers(asked: Asked, range: &std::ops::Range<u64>, stat: &ObjectStat) -> (Option<String>, Option<i32>) {
    let content_range = match asked {
        Asked::All => None,
        _ => Some(format!("bytes {}-{}/{}", range.start, range.end.saturating_sub(1), stat.body_len)),
    };
    let parts_count = match (asked, stat.meta.part(1, stat.body_len)) {
        (Asked::Part(_), PartRead::Bytes { parts, .. } | PartRead::NoSuchPart { parts }) => Some(parts as i32),
        _ => None,
    };
    (content_range, parts_count)
}

/// A put's conditions: If-Match, If-None-Match.
pub(crate) type WriteConditions<'a> = (Option<&'a ETagCondition>, Option<&'a ETagCondition>);

/// What a store serves beyond what every store serves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Capabilities {
    /// How a refusal names the store ("group mode").
    pub mode: &'static str,
    /// Conditional puts (If-Match, If-None-Match), held to the commit.
    pub conditional_writes: bool,
    /// How slowly an application's body may arrive (`None`: no deadline).
    pub deadlines: Option<Deadlines>,
    /// Objects looked up at once for a listing page (each a verified lookup, or a full read).
    pub stats_at_once: usize,
}

/// A store of verified objects, as the front uses it. Names are validated by the store (what
/// a name may be is its business); "absent" is `None`, and the front tells a missing bucket
/// from a missing key.
#[async_trait::async_trait]
pub(crate) trait Objects: Send + Sync + 'static {
    fn capabilities(&self) -> Capabilities;

    /// Every bucket, ascending.
    async fn buckets(&self) -> S3Result<Vec<Bucket>>;

    async fn bucket_exists(&self, bucket: &str) -> S3Result<bool>;

    /// Makes `bucket`, which does not exist.
    async fn make_bucket(&self, bucket: &str) -> S3Result<()>;

    /// Removes `bucket`: NoSuchBucket when it is not there, BucketNotEmpty while it holds keys.
    async fn remove_bucket(&self, bucket: &str) -> S3Result<()>;

    /// The latest version of `key`, verified; `None` when proven absent.
    async fn stat(&self, bucket: &str, key: &str) -> S3Result<Option<ObjectStat>>;

    /// Reads `key` (what of it is `asked`): its conditions checked on what it finds, what is
    /// asked found in it ([`served_range`]); `None` when proven absent.
    async fn open(
        &self,
        bucket: &str,
        key: &str,
        asked: Asked<'_>,
        conditions: ReadConditions<'_>,
    ) -> S3Result<Option<Opened>>;

    /// Stores `body` as `key` with `meta` (the body's ETag and checksums set in it), its
    /// conditions (only when [`Capabilities::conditional_writes`]) checked before the body is
    /// read and held to the commit. Returns the metadata stored.
    async fn store(
        &self,
        bucket: &str,
        key: &str,
        body: PutBody,
        meta: ObjectMeta,
        conditions: WriteConditions<'_>,
    ) -> S3Result<ObjectMeta>;

    /// Copies the object `from` (bucket, key) to `to`, with `meta` in place of its own when
    /// given; the source's body, ETag and checksums, verified. Returns the metadata stored;
    /// `None` when the source is proven absent.
    async fn copy(
        &self,
        from: (&str, &str),
        to: (&str, &str),
        meta: Option<ObjectMeta>,
    ) -> S3Result<Option<ObjectMeta>>;

    /// Removes `key` (done, too, when it was not there).
    async fn remove(&self, bucket: &str, key: &str) -> S3Result<()>;

    /// The object keys of `bucket`, ascending, from a proven complete listing; NoSuchBucket
    /// when there is no such bucket.
    async fn keys(&self, bucket: &str) -> S3Result<Vec<String>>;

    /// Multipart uploads, when the store takes them.
    fn multipart(&self) -> Option<&dyn Multipart> {
        None
    }
}

/// An upload the multipart operations name: (upload id, bucket, key).
pub(crate) type UploadTarget<'a> = (&'a str, &'a str, &'a str);

/// Multipart uploads (CreateMultipartUpload and the five after it).
#[async_trait::async_trait]
pub(crate) trait Multipart: Send + Sync {
    /// Starts an upload to `bucket`/`key` with `meta`, its object's checksum made as `sum`
    /// says; its id.
    async fn create(&self, bucket: &str, key: &str, meta: ObjectMeta, sum: Option<UploadSum>) -> S3Result<String>;
    /// Stores part `number` from `body`: an application's (which must carry the upload's
    /// checksum), or bytes the gateway `copied` (whose checksum it computes).
    async fn part(&self, target: UploadTarget<'_>, number: i32, body: PutBody, copied: bool) -> S3Result<ObjectMeta>;
    /// Completes the upload from `parts`; the object's checksum, where the request names it
    /// (`claimed`, of the type `kind`), must be the one the upload makes.
    async fn complete(
        &self,
        target: UploadTarget<'_>,
        parts: &[CompletedPart],
        claimed: Checksum,
        kind: Option<ChecksumType>,
    ) -> S3Result<ObjectMeta>;
    /// The parts numbered after `after`, at most `max`, and where the next page starts.
    async fn parts(&self, target: UploadTarget<'_>, after: i32, max: usize) -> S3Result<(Vec<Part>, Option<i32>)>;
    /// The uploads to `bucket` under `prefix`, in any order.
    async fn uploads(&self, bucket: &str, prefix: &str) -> S3Result<Vec<MultipartUpload>>;
    async fn abort(&self, target: UploadTarget<'_>) -> S3Result<()>;
}

/// The S3 service over a store of objects.
pub(crate) struct Front<O> {
    objects: O,
    /// Serialises this gateway's bucket creations and deletions, whose outcome depends on
    /// what is there, so that the check and the change see one state.
    buckets: tokio::sync::Mutex<()>,
}

impl<O: Objects> Front<O> {
    pub(crate) fn new(objects: O) -> Self {
        Front { objects, buckets: tokio::sync::Mutex::new(()) }
    }

    /// NotImplemented for what `asked` when the store does not serve it.
    fn refuse_unless(&self, served: bool, asked: bool, what: &str) -> S3Result<()> {
        match asked && !served {
            true => Err(s3_error!(NotImplemented, "{what} is not served in {}", self.objects.capabilities().mode)),
            false => Ok(()),
        }
    }

    fn multipart(&self) -> S3Result<&dyn Multipart> {
        self.objects.multipart().ok_or_else(|| {
            s3_error!(NotImplemented, "multipart uploads are not served in {}", self.objects.capabilities().mode)
        })
    }

    async fn need_bucket(&self, bucket: &str) -> S3Result<()> {
        match self.objects.bucket_exists(bucket).await? {
            true => Ok(()),
            false => Err(s3_error!(NoSuchBucket, "no bucket {bucket}")),
        }
    }

    /// One page of `bucket`'s keys under `prefix` after `after`, with each key's size, ETag
    /// and time (a key removed since the listing is left out, as a listing a moment later
    /// would leave it).
    async fn listing(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        after: Option<&str>,
        max: usize,
    ) -> S3Result<Listed> {
        let keys = self.objects.keys(bucket).await?;
        let page = names::list_page(&keys, prefix, delimiter, after, max);
        let stats: Vec<Option<(String, ObjectStat)>> = futures::stream::iter(page.keys)
            .map(|key: String| async move {
                Ok::<_, s3s::S3Error>(self.objects.stat(bucket, &key).await?.map(|stat| (key, stat)))
            })
            .buffered(self.objects.capabilities().stats_at_once.max(1))
            .try_collect()
            .await?;
        let contents = stats
            .into_iter()
            .flatten()
            .map(|(key, stat)| Object {
                key: Some(key),
                size: Some(stat.body_len as i64),
                e_tag: Some(etag(&stat.meta)),
                last_modified: Some(timestamp(stat.time)),
                ..Object::default()
            })
            .collect();
        let common_prefixes = page.common_prefixes.into_iter().map(|p| CommonPrefix { prefix: Some(p) }).collect();
        Ok(Listed { contents, common_prefixes, next: page.next })
    }

    /// What was absent: the key, or its whole bucket.
    async fn absent(&self, bucket: &str, key: &str) -> s3s::S3Error {
        match self.need_bucket(bucket).await {
            Ok(()) => s3_error!(NoSuchKey, "no key {key} in {bucket}"),
            Err(e) => e,
        }
    }

    /// A body of an application's, with the checksums it claims (in headers, or in trailers
    /// that `headers` announce) and the store's deadlines.
    fn put_body(
        &self,
        (body, md5): (Option<StreamingBlob>, Option<String>),
        claimed: Checksum,
        headers: &http::HeaderMap,
        trailers: Option<TrailingHeaders>,
    ) -> PutBody {
        let trailer = headers.get("x-amz-trailer").and_then(|v| v.to_str().ok()).map(str::to_string);
        PutBody::new(body, md5)
            .with_checksums(claimed, trailer, trailers)
            .with_deadlines(self.objects.capabilities().deadlines)
    }
}

#[async_trait::async_trait]
impl<O: Objects> S3 for Front<O> {
    async fn list_buckets(&self, _req: S3Request<ListBucketsInput>) -> S3Result<S3Response<ListBucketsOutput>> {
        let buckets = self.objects.buckets().await?;
        Ok(S3Response::new(ListBucketsOutput { buckets: Some(buckets), ..ListBucketsOutput::default() }))
    }

    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> S3Result<S3Response<CreateBucketOutput>> {
        let bucket = req.input.bucket;
        let _change = self.buckets.lock().await;
        if self.objects.bucket_exists(&bucket).await? {
            return Err(s3_error!(BucketAlreadyOwnedByYou, "{bucket} exists"));
        }
        self.objects.make_bucket(&bucket).await?;
        Ok(S3Response::new(CreateBucketOutput { location: Some(format!("/{bucket}")) }))
    }

    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        self.need_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    /// Never enabled: the gateway keeps one version of each object (S3's `null`), so the
    /// answer has no status, as S3's does for a bucket whose versioning was never turned on.
    async fn get_bucket_versioning(
        &self,
        req: S3Request<GetBucketVersioningInput>,
    ) -> S3Result<S3Response<GetBucketVersioningOutput>> {
        self.need_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(GetBucketVersioningOutput::default()))
    }

    /// No location constraint: S3's answer for us-east-1, the region an SDK then signs for
    /// (the gateway takes any region in a signature).
    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.need_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn delete_bucket(&self, req: S3Request<DeleteBucketInput>) -> S3Result<S3Response<DeleteBucketOutput>> {
        let _change = self.buckets.lock().await;
        self.objects.remove_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(DeleteBucketOutput::default()))
    }

    async fn put_object(&self, req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        let S3Request { input, headers, trailing_headers, .. } = req;
        let conditional = input.if_match.is_some() || input.if_none_match.is_some();
        self.refuse_unless(self.objects.capabilities().conditional_writes, conditional, "a conditional PutObject")?;
        let meta = meta_from!(input, &headers)?;
        self.need_bucket(&input.bucket).await?;
        let claimed = with_checksums!(Checksum {}, input);
        let body = self.put_body((input.body, input.content_md5), claimed, &headers, trailing_headers);
        let conditions = (input.if_match.as_ref(), input.if_none_match.as_ref());
        let meta = self.objects.store(&input.bucket, &input.key, body, meta, conditions).await?;
        let sums = checksums(&meta);
        Ok(S3Response::new(with_checksums!(PutObjectOutput { e_tag: Some(etag(&meta)) }, sums)))
    }

    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        let input = req.input;
        let asked = Asked::of(input.range.as_ref(), input.part_number)?;
        let opened = self.objects.open(&input.bucket, &input.key, asked, read_conditions!(input)).await?;
        let Some(Opened { stat, range, body }) = opened else {
            return Err(self.absent(&input.bucket, &input.key).await);
        };
        let (content_range, parts_count) = served_headers(asked, &range, &stat);
        let length = range.end - range.start;
        let sums = checksums_for(input.checksum_mode.as_ref(), length == stat.body_len, &stat.meta);
        let output = object_output!(
            GetObjectOutput {
                body: Some(body),
                content_length: Some(length as i64),
                content_range: content_range,
                parts_count: parts_count
            },
            stat,
            stat.meta,
            sums
        );
        user_headers(S3Response::new(with_overrides!(output, input)), &stat.meta)
    }

    async fn get_object_attributes(
        &self,
        req: S3Request<GetObjectAttributesInput>,
    ) -> S3Result<S3Response<GetObjectAttributesOutput>> {
        let input = req.input;
        let Some(stat) = self.objects.stat(&input.bucket, &input.key).await? else {
            return Err(self.absent(&input.bucket, &input.key).await);
        };
        let object = Described { meta: &stat.meta, body_len: stat.body_len, time: stat.time };
        Ok(S3Response::new(attributes_of(&input, object)))
    }

    /// An object's tags: none, truly (a write that sets tags is refused, and PutObjectTagging is
    /// NotImplemented), so tools that copy an object's tags along find none to copy.
    async fn get_object_tagging(
        &self,
        req: S3Request<GetObjectTaggingInput>,
    ) -> S3Result<S3Response<GetObjectTaggingOutput>> {
        let input = req.input;
        if self.objects.stat(&input.bucket, &input.key).await?.is_none() {
            return Err(self.absent(&input.bucket, &input.key).await);
        }
        Ok(S3Response::new(GetObjectTaggingOutput { tag_set: Vec::new(), ..GetObjectTaggingOutput::default() }))
    }

    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        let input = req.input;
        let Some(stat) = self.objects.stat(&input.bucket, &input.key).await? else {
            return Err(self.absent(&input.bucket, &input.key).await);
        };
        check_read_conditions(read_conditions!(input), &stat.meta, stat.time)?;
        let asked = Asked::of(None, input.part_number)?;
        let range = served_range(asked, &stat.meta, stat.body_len)?;
        let sums = checksums_for(input.checksum_mode.as_ref(), range == (0..stat.body_len), &stat.meta);
        let (content_range, parts_count) = served_headers(asked, &range, &stat);
        let output = object_output!(
            HeadObjectOutput {
                content_length: Some((range.end - range.start) as i64),
                content_range: content_range,
                parts_count: parts_count
            },
            stat,
            stat.meta,
            sums
        );
        user_headers(S3Response::new(with_overrides!(output, input)), &stat.meta)
    }

    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        let input = req.input;
        self.need_bucket(&input.bucket).await?;
        // Deleting what is not there succeeds, as S3 says (the absence was proven).
        self.objects.remove(&input.bucket, &input.key).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let input = req.input;
        self.need_bucket(&input.bucket).await?;
        let (mut deleted, mut errors) = (Vec::new(), Vec::new());
        for object in input.delete.objects {
            match self.objects.remove(&input.bucket, &object.key).await {
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
        let (input, headers) = (req.input, req.headers);
        let CopySource::Bucket { bucket: from_bucket, key: from_key, .. } = &input.copy_source else {
            return Err(s3_error!(NotImplemented, "copies from access points are not served"));
        };
        self.need_bucket(&input.bucket).await?;
        let replace = input.metadata_directive.as_ref().is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        let meta = match replace {
            true => Some(meta_from!(input, &headers)?),
            false => None,
        };
        let from: (&str, &str) = (from_bucket, from_key);
        let Some(meta) = self.objects.copy(from, (&input.bucket, &input.key), meta).await? else {
            return Err(self.absent(from_bucket, from_key).await);
        };
        let result = CopyObjectResult {
            e_tag: Some(etag(&meta)),
            last_modified: Some(timestamp(meta.modified.unwrap_or_else(unix_now))),
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
        let marker = input.marker.as_deref();
        let listed = self.listing(&input.bucket, &prefix, input.delimiter.as_deref(), marker, max).await?;
        Ok(S3Response::new(listing::v1(input, prefix, max, listed)))
    }

    /// ListObjectVersions on a bucket without versioning: each object once, as its only
    /// version `null`, in the same pages as ListObjects, after the key marker.
    async fn list_object_versions(
        &self,
        req: S3Request<ListObjectVersionsInput>,
    ) -> S3Result<S3Response<ListObjectVersionsOutput>> {
        let input = req.input;
        let (prefix, max) = listing::asked(&input.prefix, input.max_keys);
        let after = input.key_marker.as_deref().filter(|marker| !marker.is_empty());
        let listed = self.listing(&input.bucket, &prefix, input.delimiter.as_deref(), after, max).await?;
        Ok(S3Response::new(listing::versions(input, prefix, max, listed)))
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let multipart = self.multipart()?;
        let (input, headers) = (req.input, req.headers);
        let meta = meta_from!(input, &headers)?;
        let sum = UploadSum::asked(input.checksum_algorithm.as_ref(), input.checksum_type.as_ref())?;
        let id = multipart.create(&input.bucket, &input.key, meta, sum.clone()).await?;
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(input.bucket),
            key: Some(input.key),
            upload_id: Some(id),
            checksum_algorithm: input.checksum_algorithm,
            checksum_type: sum.map(|sum| ChecksumType::from(sum.kind().to_string())),
            ..CreateMultipartUploadOutput::default()
        }))
    }

    async fn upload_part(&self, req: S3Request<UploadPartInput>) -> S3Result<S3Response<UploadPartOutput>> {
        let multipart = self.multipart()?;
        let S3Request { input, headers, trailing_headers, .. } = req;
        let claimed = with_checksums!(Checksum {}, input);
        let body = self.put_body((input.body, input.content_md5), claimed, &headers, trailing_headers);
        let target = (input.upload_id.as_str(), input.bucket.as_str(), input.key.as_str());
        let meta = multipart.part(target, input.part_number, body, false).await?;
        let sums = checksums(&meta);
        Ok(S3Response::new(with_checksums!(UploadPartOutput { e_tag: Some(etag(&meta)) }, sums)))
    }

    /// UploadPartCopy: a part made of an object's bytes, or of the range
    /// `x-amz-copy-source-range` names, read back verified as GetObject reads them and stored
    /// as any part is (a lie met on the way fails the part, and nothing of it is kept). The
    /// source's conditions (`x-amz-copy-source-if-*`, which the aws CLI sends with each part so
    /// that all come from one version) are checked as a read's, a failed one answering 412.
    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let multipart = self.multipart()?;
        let input = req.input;
        let CopySource::Bucket { bucket: from_bucket, key: from_key, .. } = &input.copy_source else {
            return Err(s3_error!(NotImplemented, "copies from access points are not served"));
        };
        let range =
            match input.copy_source_range.as_deref() {
                Some(asked) => Some(Range::parse(asked).map_err(|_| {
                    s3_error!(InvalidArgument, "x-amz-copy-source-range is not bytes=first-last: {asked}")
                })?),
                None => None,
            };
        let conditions = (
            input.copy_source_if_match.as_ref(),
            input.copy_source_if_none_match.as_ref(),
            input.copy_source_if_modified_since.as_ref(),
            input.copy_source_if_unmodified_since.as_ref(),
        );
        let opened =
            self.objects.open(from_bucket, from_key, Asked::of(range.as_ref(), None)?, conditions).await.map_err(
                |e| match *e.code() == s3s::S3ErrorCode::NotModified {
                    true => s3_error!(PreconditionFailed, "the copy source's state does not meet the condition"),
                    false => e,
                },
            )?;
        let Some(opened) = opened else {
            return Err(self.absent(from_bucket, from_key).await);
        };
        let target = (input.upload_id.as_str(), input.bucket.as_str(), input.key.as_str());
        let body = PutBody::new(Some(opened.body), None).with_deadlines(None);
        let meta = multipart.part(target, input.part_number, body, true).await?;
        let sums = checksums(&meta);
        let result = CopyPartResult {
            e_tag: Some(etag(&meta)),
            last_modified: Some(timestamp(meta.modified.unwrap_or_else(unix_now))),
            checksum_crc32: sums.checksum_crc32,
            checksum_crc32c: sums.checksum_crc32c,
            checksum_crc64nvme: sums.checksum_crc64nvme,
            checksum_sha1: sums.checksum_sha1,
            checksum_sha256: sums.checksum_sha256,
        };
        Ok(S3Response::new(UploadPartCopyOutput { copy_part_result: Some(result), ..UploadPartCopyOutput::default() }))
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let multipart = self.multipart()?;
        let input = req.input;
        let claimed = with_checksums!(Checksum {}, input);
        let parts = input.multipart_upload.and_then(|m| m.parts).unwrap_or_default();
        let target = (input.upload_id.as_str(), input.bucket.as_str(), input.key.as_str());
        let meta = multipart.complete(target, &parts, claimed, input.checksum_type).await?;
        let sums = checksums(&meta);
        Ok(S3Response::new(with_checksums!(
            CompleteMultipartUploadOutput {
                bucket: Some(input.bucket.clone()),
                key: Some(input.key.clone()),
                e_tag: Some(etag(&meta)),
                location: Some(format!("/{}/{}", input.bucket, input.key)),
                checksum_type: sums.checksum_type.clone(),
            },
            sums
        )))
    }

    async fn list_parts(&self, req: S3Request<ListPartsInput>) -> S3Result<S3Response<ListPartsOutput>> {
        let multipart = self.multipart()?;
        let input = req.input;
        let after = input.part_number_marker.unwrap_or(0);
        let max = input.max_parts.unwrap_or(1000).clamp(1, 1000) as usize;
        let target = (input.upload_id.as_str(), input.bucket.as_str(), input.key.as_str());
        let (parts, next) = multipart.parts(target, after, max).await?;
        Ok(S3Response::new(ListPartsOutput {
            bucket: Some(input.bucket),
            key: Some(input.key),
            upload_id: Some(input.upload_id),
            part_number_marker: input.part_number_marker,
            max_parts: Some(max as i32),
            is_truncated: Some(next.is_some()),
            next_part_number_marker: next,
            parts: Some(parts),
            ..ListPartsOutput::default()
        }))
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let multipart = self.multipart()?;
        let input = req.input;
        let mut uploads = multipart.uploads(&input.bucket, input.prefix.as_deref().unwrap_or("")).await?;
        // Ordered by key, then upload id; a page starts after the markers.
        uploads.sort_by(|a, b| (&a.key, &a.upload_id).cmp(&(&b.key, &b.upload_id)));
        let (key_marker, id_marker) = (input.key_marker.clone(), input.upload_id_marker.clone());
        if let Some(marker) = &key_marker {
            uploads.retain(|u| {
                let key = u.key.as_deref().unwrap_or_default();
                key > marker.as_str()
                    || (key == marker && id_marker.as_ref().is_some_and(|id| u.upload_id.as_ref() > Some(id)))
            });
        }
        let max = input.max_uploads.map_or(1000, |m| m.clamp(1, 1000) as usize);
        let truncated = uploads.len() > max;
        uploads.truncate(max);
        let last = uploads.last().filter(|_| truncated);
        Ok(S3Response::new(ListMultipartUploadsOutput {
            bucket: Some(input.bucket),
            prefix: input.prefix,
            key_marker,
            upload_id_marker: id_marker,
            max_uploads: Some(max as i32),
            is_truncated: Some(truncated),
            next_key_marker: last.and_then(|u| u.key.clone()),
            next_upload_id_marker: last.and_then(|u| u.upload_id.clone()),
            uploads: Some(uploads),
            ..ListMultipartUploadsOutput::default()
        }))
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let multipart = self.multipart()?;
        let input = req.input;
        multipart.abort((input.upload_id.as_str(), input.bucket.as_str(), input.key.as_str())).await?;
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }
}

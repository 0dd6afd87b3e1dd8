//! Multipart uploads: each part is stored as an object of its own (`s3p/<upload>/<part>`),
//! verified like any; completing the upload streams the parts, read back verified, into the
//! final object in one put, with S3's multipart ETag (the MD5 of the parts' MD5s, then
//! `-<parts>`), and removes them. The upload itself is a small file `s3u/<upload>` naming its
//! bucket, key and metadata, so an upload survives a gateway restart.

use crate::errors::to_s3;
use crate::front::{Multipart, UploadTarget};
use crate::names::object_name;
use crate::object::{etag_of, part_runs, ObjectMeta};
use crate::s3::Gateway;
use crate::stream::{Piece, PutBody};
use crate::upload_sums::{self, UploadSum};
use md5::{Digest as _, Md5};
use s3s::dto::{Checksum, ChecksumType, CompletedPart, ETag, MultipartUpload, Part, StreamingBlob, Timestamp};
use s3s::{s3_error, S3ErrorCode, S3Result};
use serde::{Deserialize, Serialize};
use std::time::{Duration, UNIX_EPOCH};
use vouch_client::ClientError;

/// What an upload is for.
#[derive(Serialize, Deserialize)]
struct Upload {
    bucket: String,
    key: String,
    meta: ObjectMeta,
    /// How its object's checksum is made, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sum: Option<UploadSum>,
}

fn upload_name(upload: &str) -> String {
    format!("s3u/{upload}")
}

fn part_name(upload: &str, part: i32) -> String {
    format!("s3p/{upload}/{part:05}")
}

/// Part numbers S3 allows.
const PARTS: std::ops::RangeInclusive<i32> = 1..=10_000;

#[async_trait::async_trait]
impl Multipart for Gateway {
    async fn create(&self, bucket: &str, key: &str, meta: ObjectMeta, sum: Option<UploadSum>) -> S3Result<String> {
        object_name(bucket, key).map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        self.need_bucket(bucket).await?;
        let id = base16ct::lower::encode_string(&rand::random::<[u8; 16]>());
        let upload = Upload { bucket: bucket.into(), key: key.into(), meta, sum };
        let bytes = serde_json::to_vec(&upload).expect("plain data");
        self.client()
            .put(&upload_name(&id), std::io::Cursor::new(bytes), None, |_| {})
            .await
            .map_err(|e| to_s3(e, S3ErrorCode::NoSuchUpload))?;
        Ok(id)
    }

    async fn part(
        &self,
        (id, bucket, key): UploadTarget<'_>,
        part: i32,
        body: PutBody,
        copied: bool,
    ) -> S3Result<ObjectMeta> {
        if !PARTS.contains(&part) {
            return Err(s3_error!(InvalidArgument, "part numbers are 1 to 10000"));
        }
        let upload = self.upload(id, bucket, key).await?;
        // A part of an upload that names a checksum carries it, checked on its bytes; a copied
        // part has it computed on the bytes copied.
        let body = match upload.sum {
            Some(sum) if !copied && !body.claims(&sum.header) => {
                return Err(s3_error!(InvalidRequest, "this upload's parts carry their {}", sum.header));
            }
            Some(sum) => body.with_computed(Some(sum.header)),
            None => body,
        };
        self.put_body(&part_name(id, part), body, ObjectMeta::default()).await
    }

    /// Joins the parts `parts` (ascending, each with the ETag its upload returned) into the
    /// object; returns its metadata.
    async fn complete(
        &self,
        (id, bucket, key): UploadTarget<'_>,
        parts: &[CompletedPart],
        claimed: Checksum,
        kind: Option<ChecksumType>,
    ) -> S3Result<ObjectMeta> {
        if parts.is_empty() {
            return Err(s3_error!(MalformedXML, "an upload completes with at least one part"));
        }
        let mut upload = match self.upload(id, bucket, key).await {
            Ok(upload) => upload,
            Err(e) if *e.code() == S3ErrorCode::NoSuchUpload => {
                return self.completed(id, bucket, key, parts).await?.ok_or(e);
            }
            Err(e) => return Err(e),
        };
        let (mut pieces, mut md5s, mut last, mut sums) = (Vec::new(), Md5::new(), 0, Vec::new());
        for part in parts {
            let number = part_number(part, last)?;
            last = number;
            let name = part_name(id, number);
            let stat =
                self.latest(&name).await?.ok_or_else(|| s3_error!(InvalidPart, "part {number} was not uploaded"))?;
            if part.e_tag.as_ref().is_some_and(|e| e.value() != stat.meta.etag) {
                return Err(s3_error!(InvalidPart, "part {number} has another ETag"));
            }
            md5s.update(hex_bytes(&stat.meta.etag).ok_or_else(|| s3_error!(InternalError, "part {number}'s ETag"))?);
            if let Some(sum) = &upload.sum {
                sums.push(sum.of_part(number, &stat.meta.checksums, part)?.to_string());
            }
            pieces.push(Piece { name, version: stat.version, range: 0..stat.body_len });
        }
        let etag = format!("{}-{}", etag_of(&md5s.finalize()), parts.len());
        let name = object_name(bucket, key).map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?;
        upload.meta.upload = Some(id.to_string());
        upload.meta.part_runs = part_runs(pieces.iter().map(|p| p.range.end - p.range.start)).unwrap_or_default();
        // The object's checksum: of its parts' now; of its bytes as they stream into it. One
        // the request names is checked against it (a whole-object one on the bytes).
        let (mut whole, mut claimed) = (None, claimed);
        if let Some(asked) = kind.as_ref().map(ChecksumType::as_str) {
            if upload.sum.as_ref().map(UploadSum::kind) != Some(asked) {
                return Err(s3_error!(InvalidRequest, "this upload's checksum is not of the type {asked}"));
            }
        }
        let makes = upload.sum.as_ref().map(|sum| sum.header.as_str());
        if let Some(other) =
            upload_sums::HEADERS.iter().find(|&&h| upload_sums::value(&claimed, h).is_some() && makes != Some(h))
        {
            return Err(s3_error!(
                InvalidRequest,
                "this upload makes no {other} (CreateMultipartUpload names the algorithm)"
            ));
        }
        if let Some(sum) = upload.sum.take() {
            upload.meta.checksum_type = Some(sum.kind().to_string());
            match sum.full_object {
                true => whole = Some(sum.header),
                false => {
                    let parts: Vec<&str> = sums.iter().map(String::as_str).collect();
                    let composite = sum.composite(&parts)?;
                    if upload_sums::value(&claimed, &sum.header).is_some_and(|named| named != composite) {
                        return Err(s3_error!(BadDigest, "the parts' checksums do not make the {} named", sum.header));
                    }
                    claimed = Checksum::default();
                    upload.meta.checksums.insert(sum.header, composite);
                }
            }
        }
        let body: StreamingBlob = self.body(pieces).await?;
        let body = PutBody::new(Some(body), None).with_etag(etag).with_deadlines(None);
        let body = body.with_checksums(claimed, None, None).with_computed(whole);
        let meta = self.put_body(&name, body, upload.meta).await?;
        self.forget_upload(id).await?;
        Ok(meta)
    }

    /// The parts of upload `id` numbered after `after`, at most `max` of them, ascending, with
    /// the number to list on from when there are more.
    async fn parts(
        &self,
        (id, bucket, key): UploadTarget<'_>,
        after: i32,
        max: usize,
    ) -> S3Result<(Vec<Part>, Option<i32>)> {
        self.upload(id, bucket, key).await?;
        let prefix = format!("s3p/{id}/");
        let listing = self.client().list().await.map_err(|e| to_s3(e, S3ErrorCode::NoSuchUpload))?;
        let mut numbers: Vec<i32> =
            listing.iter().filter_map(|e| e.name.strip_prefix(&prefix)?.parse().ok()).filter(|&n| n > after).collect();
        numbers.sort_unstable();
        let more = numbers.len() > max;
        numbers.truncate(max);
        let mut parts = Vec::with_capacity(numbers.len());
        for &number in &numbers {
            // A part removed since the listing (an abort or completion) is left out.
            let Some(stat) = self.latest(&part_name(id, number)).await? else { continue };
            parts.push(Part {
                part_number: Some(number),
                size: Some(stat.body_len as i64),
                e_tag: Some(ETag::Strong(stat.meta.etag.clone())),
                last_modified: Some(Timestamp::from(UNIX_EPOCH + Duration::from_secs(stat.time))),
                ..Part::default()
            });
        }
        Ok((parts, more.then(|| numbers.last().copied()).flatten()))
    }

    /// The uploads in progress in `bucket` for keys under `prefix`, by key.
    async fn uploads(&self, bucket: &str, prefix: &str) -> S3Result<Vec<MultipartUpload>> {
        self.need_bucket(bucket).await?;
        let listing = self.client().list().await.map_err(|e| to_s3(e, S3ErrorCode::NoSuchUpload))?;
        let mut uploads = Vec::new();
        for id in listing.iter().filter_map(|e| e.name.strip_prefix("s3u/")) {
            let Some(upload) = self.upload_record(id).await? else { continue };
            if upload.bucket == bucket && upload.key.starts_with(prefix) {
                uploads.push(MultipartUpload {
                    key: Some(upload.key),
                    upload_id: Some(id.to_string()),
                    ..MultipartUpload::default()
                });
            }
        }
        Ok(uploads)
    }

    /// Removes the upload `id` and every part stored for it.
    async fn abort(&self, (id, bucket, key): UploadTarget<'_>) -> S3Result<()> {
        self.upload(id, bucket, key).await?;
        self.forget_upload(id).await
    }
}

impl Gateway {
    /// The object the upload `id` was completed into, when its completion is asked again (an
    /// SDK retrying after the answer was lost): still the current object of `bucket`/`key`,
    /// with the ETag that `parts` make (the number of parts, and their ETags when the request
    /// gives them). `None` when it is not, as S3 answers once the object was replaced.
    async fn completed(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
        parts: &[CompletedPart],
    ) -> S3Result<Option<ObjectMeta>> {
        let Ok(name) = object_name(bucket, key) else { return Ok(None) };
        let Some(stat) = self.latest(&name).await? else { return Ok(None) };
        if stat.meta.upload.as_deref() != Some(id) {
            return Ok(None);
        }
        let Some((md5, count)) = stat.meta.etag.split_once('-') else { return Ok(None) };
        if count != parts.len().to_string() {
            return Ok(None);
        }
        let (mut md5s, mut last) = (Md5::new(), 0);
        for part in parts {
            last = part_number(part, last)?;
            match part.e_tag.as_ref().and_then(|e| hex_bytes(e.value())) {
                Some(bytes) => md5s.update(bytes),
                // Without every part's ETag, the number of parts is what can be checked.
                None => return Ok(Some(stat.meta)),
            }
        }
        Ok((etag_of(&md5s.finalize()) == md5).then_some(stat.meta))
    }

    /// The upload `id`, checked to be for `bucket`/`key`.
    async fn upload(&self, id: &str, bucket: &str, key: &str) -> S3Result<Upload> {
        let bad = || s3_error!(NoSuchUpload, "no upload {id} for {bucket}/{key}");
        let upload = self.upload_record(id).await?.ok_or_else(bad)?;
        match upload.bucket == bucket && upload.key == key {
            true => Ok(upload),
            false => Err(bad()),
        }
    }

    /// What the upload `id` is for; `None` when there is no such upload.
    async fn upload_record(&self, id: &str) -> S3Result<Option<Upload>> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        match self.client().get(&upload_name(id), None, None, &mut bytes).await {
            Ok(_) => {}
            Err(ClientError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(to_s3(e, S3ErrorCode::NoSuchUpload)),
        }
        Ok(serde_json::from_slice(&bytes).ok())
    }

    async fn forget_upload(&self, id: &str) -> S3Result<()> {
        let prefix = format!("s3p/{id}/");
        let listing = self.client().list().await.map_err(|e| to_s3(e, S3ErrorCode::NoSuchUpload))?;
        for entry in listing.iter().filter(|e| e.name.starts_with(&prefix)) {
            self.remove_quietly(&entry.name).await?;
        }
        self.remove_quietly(&upload_name(id)).await
    }

    /// Removes `name`; already absent is fine.
    async fn remove_quietly(&self, name: &str) -> S3Result<()> {
        match self.client().remove(name).await {
            Ok(()) | Err(ClientError::NotFound(_)) => Ok(()),
            Err(e) => Err(to_s3(e, S3ErrorCode::NoSuchUpload)),
        }
    }
}

/// The number of a completion's part listed after part `last`.
fn part_number(part: &CompletedPart, last: i32) -> S3Result<i32> {
    let number = part.part_number.ok_or_else(|| s3_error!(InvalidPart, "a part without its number"))?;
    if number <= last {
        return Err(s3_error!(InvalidPartOrder, "parts must be listed in ascending order"));
    }
    Ok(number)
}

/// The bytes of a hex ETag.
fn hex_bytes(hex: &str) -> Option<Vec<u8>> {
    base16ct::mixed::decode_vec(hex).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_etags_turn_back_into_bytes() {
        assert_eq!(super::hex_bytes("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(super::hex_bytes("0"), None);
        assert_eq!(super::hex_bytes("zz"), None);
        assert_eq!(super::hex_bytes("+f"), None, "a sign is no hex digit");
    }
}

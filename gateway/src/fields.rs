//! What S3 requests and answers carry besides bodies, for every operation of the front: the
//! checksum and metadata fields, ETags, dates, and a read's conditions.

use crate::object::{ObjectMeta, MAX_META, MAX_USER_META};
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Response, S3Result};
use std::time::{Duration, UNIX_EPOCH};

/// `$out { $fields, .. }` with the five checksum fields taken from the place `$sums` (an
/// input that carries them, or a [`Checksum`]), the rest default.
macro_rules! with_checksums {
    ($out:ident { $($field:ident: $value:expr),* $(,)? }, $sums:expr) => {
        $out {
            checksum_crc32: $sums.checksum_crc32,
            checksum_crc32c: $sums.checksum_crc32c,
            checksum_crc64nvme: $sums.checksum_crc64nvme,
            checksum_sha1: $sums.checksum_sha1,
            checksum_sha256: $sums.checksum_sha256,
            $($field: $value,)*
            ..$out::default()
        }
    };
}

/// The metadata an input that carries it (PutObject, CreateMultipartUpload, CopyObject) sets,
/// its request's headers `$headers`.
macro_rules! meta_from {
    ($input:expr, $headers:expr) => {
        meta_of(
            $input.content_type,
            $input.content_encoding,
            $input.content_disposition,
            $input.cache_control,
            $input.expires,
            user_as_sent($input.metadata, $headers),
        )
    };
}

pub(crate) use {meta_from, with_checksums};

/// What GetObject and HeadObject both say of the object `$stat` (its metadata in `$meta`).
macro_rules! object_output {
    ($out:ident { $($field:ident: $value:expr),* $(,)? }, $stat:expr, $meta:expr, $sums:expr) => {
        with_checksums!(
            $out {
                accept_ranges: Some("bytes".into()),
                e_tag: Some(etag(&$meta)),
                last_modified: Some(timestamp($stat.time)),
                content_type: $meta.content_type.clone(),
                content_encoding: $meta.content_encoding.clone(),
                content_disposition: $meta.content_disposition.clone(),
                cache_control: $meta.cache_control.clone(),
                expires: $meta.expires.as_deref().and_then(|date| Timestamp::parse(TimestampFormat::HttpDate, date).ok()),
                // Set as headers of their own, as they were sent ([`user_headers`]).
                metadata: None,
                checksum_type: $sums.checksum_type.clone(),
                $($field: $value,)*
            },
            $sums
        )
    };
}

pub(crate) use object_output;

/// User metadata (`x-amz-meta-*`) as its request sent it: a value of UTF-8 bytes, or RFC 2047
/// encoded words, is kept as those bytes or words (which the S3 protocol's parser decodes, and
/// its serialiser encodes again, so that a value sent as UTF-8 would come back encoded).
pub(crate) fn user_as_sent(parsed: Option<Metadata>, headers: &http::HeaderMap) -> Option<Metadata> {
    let mut user = parsed?;
    for (key, value) in user.iter_mut() {
        let raw =
            headers.get(format!("x-amz-meta-{key}").as_str()).and_then(|v| std::str::from_utf8(v.as_bytes()).ok());
        if let Some(raw) = raw {
            *value = raw.to_string();
        }
    }
    Some(user)
}

/// `response` with the object's user metadata as headers, each value as it was sent.
pub(crate) fn user_headers<T>(mut response: S3Response<T>, meta: &ObjectMeta) -> S3Result<S3Response<T>> {
    for (key, value) in &meta.user {
        let name = http::HeaderName::from_bytes(format!("x-amz-meta-{key}").as_bytes());
        let value = http::HeaderValue::from_bytes(value.as_bytes());
        match (name, value) {
            (Ok(name), Ok(value)) => {
                response.headers.insert(name, value);
            }
            _ => return Err(s3_error!(InternalError, "the object's metadata {key:?} is no header")),
        }
    }
    Ok(response)
}

/// Bytes a write adds to the metadata an application sets, at most: the ETag (a multipart
/// one's), the five checksums, the time (group mode), with their names.
const META_ADDED: usize = 1024;

pub(crate) fn timestamp(unix: u64) -> Timestamp {
    Timestamp::from(UNIX_EPOCH + Duration::from_secs(unix))
}

/// The checksums the object was stored with (each checked against its body then, or made of
/// its parts' checked ones), with how they were made.
pub(crate) fn checksums(meta: &ObjectMeta) -> Checksum {
    let get = |header: &str| meta.checksums.get(header).cloned();
    let kind = match (&meta.checksum_type, meta.checksums.is_empty()) {
        (Some(kind), _) => Some(kind.clone()),
        (None, false) => Some(crate::upload_sums::FULL_OBJECT.to_string()),
        (None, true) => None,
    };
    Checksum {
        checksum_type: kind.map(ChecksumType::from),
        checksum_crc32: get("x-amz-checksum-crc32"),
        checksum_crc32c: get("x-amz-checksum-crc32c"),
        checksum_crc64nvme: get("x-amz-checksum-crc64nvme"),
        checksum_sha1: get("x-amz-checksum-sha1"),
        checksum_sha256: get("x-amz-checksum-sha256"),
    }
}

/// The checksums a read returns: when asked (`x-amz-checksum-mode: ENABLED`) for the whole
/// object.
pub(crate) fn checksums_for(mode: Option<&ChecksumMode>, whole: bool, meta: &ObjectMeta) -> Checksum {
    match mode.is_some_and(|m| m.as_str() == ChecksumMode::ENABLED) && whole {
        true => checksums(meta),
        false => Checksum::default(),
    }
}

pub(crate) fn etag(meta: &ObjectMeta) -> ETag {
    ETag::Strong(meta.etag.clone())
}

/// Whether `condition` (If-Match) holds for an object with `meta` (`None`: absent).
pub(crate) fn etag_matches(condition: &ETagCondition, meta: Option<&ObjectMeta>) -> bool {
    match (condition, meta) {
        (_, None) => false,
        (ETagCondition::Any, Some(_)) => true,
        (ETagCondition::ETag(want), Some(meta)) => want.value() == meta.etag,
    }
}

/// A read's conditions: If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since.
pub(crate) type ReadConditions<'a> =
    (Option<&'a ETagCondition>, Option<&'a ETagCondition>, Option<&'a Timestamp>, Option<&'a Timestamp>);

/// The conditions of the read `$input` (a GetObject's or HeadObject's input).
macro_rules! read_conditions {
    ($input:expr) => {
        (
            $input.if_match.as_ref(),
            $input.if_none_match.as_ref(),
            $input.if_modified_since.as_ref(),
            $input.if_unmodified_since.as_ref(),
        )
    };
}

pub(crate) use read_conditions;

/// The checks of a read's conditions on an object with `meta` stored at `modified` (Unix
/// seconds), in HTTP's order (RFC 9110 13.2.2): a failed If-Match (or, without one,
/// If-Unmodified-Since) is PreconditionFailed; then a matched If-None-Match (or, without one,
/// If-Modified-Since) is NotModified.
pub(crate) fn check_read_conditions(
    (if_match, if_none_match, modified_since, unmodified_since): ReadConditions<'_>,
    meta: &ObjectMeta,
    modified: u64,
) -> S3Result<()> {
    let after = |date: &Timestamp| unix_seconds(date).map(|date| modified as i64 > date);
    let failed = match (if_match, unmodified_since) {
        (Some(condition), _) => !etag_matches(condition, Some(meta)),
        (None, Some(date)) => after(date)?,
        (None, None) => false,
    };
    if failed {
        return Err(s3_error!(PreconditionFailed, "the object's state does not meet the condition"));
    }
    let not_modified = match (if_none_match, modified_since) {
        (Some(condition), _) => etag_matches(condition, Some(meta)),
        (None, Some(date)) => !after(date)?,
        (None, None) => false,
    };
    if not_modified {
        return Err(not_modified_error(meta, modified));
    }
    Ok(())
}

/// 304 Not Modified, with the validators a cache revalidates by (RFC 9110, 15.4.5): the
/// object's ETag and Last-Modified, as a 200 would have sent them.
fn not_modified_error(meta: &ObjectMeta, modified: u64) -> S3Error {
    let mut error = S3Error::new(S3ErrorCode::NotModified);
    let mut headers = http::HeaderMap::new();
    if let Ok(value) = http::HeaderValue::from_str(&format!("\"{}\"", meta.etag)) {
        headers.insert(http::header::ETAG, value);
    }
    let mut date = Vec::new();
    if timestamp(modified).format(TimestampFormat::HttpDate, &mut date).is_ok() {
        if let Ok(value) = http::HeaderValue::from_bytes(&date) {
            headers.insert(http::header::LAST_MODIFIED, value);
        }
    }
    error.set_headers(headers);
    error
}

/// `date` in whole Unix seconds (HTTP dates have no finer part).
fn unix_seconds(date: &Timestamp) -> S3Result<i64> {
    let mut text = Vec::new();
    date.format(TimestampFormat::EpochSeconds, &mut text).map_err(|_| s3_error!(InvalidArgument, "a date"))?;
    let seconds: f64 = std::str::from_utf8(&text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| s3_error!(InvalidArgument, "a date"))?;
    Ok(seconds.floor() as i64)
}

/// `$output` (a GetObject's or HeadObject's) with the headers its input `$input` asks to be
/// answered with instead (`response-content-type` and the like; S3 honours them on signed
/// requests, and every request the gateway serves is signed).
macro_rules! with_overrides {
    ($output:expr, $input:expr) => {{
        let mut output = $output;
        let input = &$input;
        if let Some(value) = &input.response_cache_control {
            output.cache_control = Some(value.clone());
        }
        if let Some(value) = &input.response_content_disposition {
            output.content_disposition = Some(value.clone());
        }
        if let Some(value) = &input.response_content_encoding {
            output.content_encoding = Some(value.clone());
        }
        if let Some(value) = &input.response_content_language {
            output.content_language = Some(value.clone());
        }
        if let Some(value) = &input.response_content_type {
            output.content_type = Some(value.clone());
        }
        if let Some(value) = &input.response_expires {
            output.expires = Some(value.clone());
        }
        output
    }};
}

pub(crate) use with_overrides;

/// The metadata a write sets, or MetadataTooLarge: S3's 2 KB of user metadata (its keys and
/// values), and all of it small enough to be stored, with the ETag and checksums the write
/// adds, where a read finds it ([`MAX_META`]). Refused before the body is read, never stored
/// and then unreadable.
/// The Content-Encoding an object keeps: the one its body was sent with, less `aws-chunked`
/// (the framing of the request's body, which S3 removes; the stored body has none).
fn stored_encoding(sent: String) -> Option<String> {
    let kept: Vec<&str> =
        sent.split(',').map(str::trim).filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("aws-chunked")).collect();
    (!kept.is_empty()).then(|| kept.join(", "))
}

pub(crate) fn meta_of(
    content_type: Option<String>,
    content_encoding: Option<String>,
    content_disposition: Option<String>,
    cache_control: Option<String>,
    expires: Option<Timestamp>,
    user: Option<Metadata>,
) -> S3Result<ObjectMeta> {
    let mut date = Vec::new();
    let expires = match expires.map(|at| at.format(TimestampFormat::HttpDate, &mut date)) {
        Some(Ok(())) => String::from_utf8(date).ok(),
        Some(Err(_)) => return Err(s3_error!(InvalidArgument, "the Expires header is no date")),
        None => None,
    };
    let meta = ObjectMeta {
        etag: String::new(),
        content_type,
        content_encoding: content_encoding.and_then(stored_encoding),
        content_disposition,
        cache_control,
        expires,
        user: user.unwrap_or_default().into_iter().collect(),
        checksums: Default::default(),
        checksum_type: None,
        modified: None,
        upload: None,
        part_runs: Vec::new(),
    };
    let user_bytes: usize = meta.user.iter().map(|(k, v)| k.len() + v.len()).sum();
    if user_bytes > MAX_USER_META {
        return Err(s3_error!(
            MetadataTooLarge,
            "{user_bytes} bytes of user metadata (x-amz-meta-*); at most {MAX_USER_META}"
        ));
    }
    let stored = serde_json::to_vec(&meta).map_err(|e| s3_error!(InternalError, "metadata: {e}"))?.len();
    if stored + META_ADDED > MAX_META {
        return Err(s3_error!(MetadataTooLarge, "the object's headers and metadata are too long to store"));
    }
    Ok(meta)
}

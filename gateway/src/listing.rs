//! What ListObjectsV2, ListObjects (version 1) and ListObjectVersions answer, in both modes:
//! each mode finds a page of its own ([`Listed`]); the answers are shaped here.

use s3s::dto::*;

/// A page of a listing, as both ListObjects versions answer it.
pub(crate) struct Listed {
    pub contents: Vec<Object>,
    pub common_prefixes: Vec<CommonPrefix>,
    /// Where the next page starts after, when there is one.
    pub next: Option<String>,
}

/// The prefix a listing asks for, and its page size (S3 pages hold at most 1000 keys).
pub(crate) fn asked(prefix: &Option<String>, max_keys: Option<i32>) -> (String, usize) {
    (prefix.clone().unwrap_or_default(), max_keys.unwrap_or(1000).clamp(0, 1000) as usize)
}

/// ListObjectsV2's answer: `listed`, the page `input` asked for.
pub(crate) fn v2(input: ListObjectsV2Input, prefix: String, max: usize, listed: Listed) -> ListObjectsV2Output {
    ListObjectsV2Output {
        name: Some(input.bucket),
        prefix: Some(prefix),
        delimiter: input.delimiter,
        max_keys: Some(max as i32),
        key_count: Some((listed.contents.len() + listed.common_prefixes.len()) as i32),
        continuation_token: input.continuation_token,
        start_after: input.start_after,
        is_truncated: Some(listed.next.is_some()),
        next_continuation_token: listed.next,
        contents: Some(listed.contents),
        common_prefixes: Some(listed.common_prefixes),
        ..ListObjectsV2Output::default()
    }
}

/// ListObjects' (version 1, which rclone and older SDKs use) answer: a marker instead of a
/// continuation token.
pub(crate) fn v1(input: ListObjectsInput, prefix: String, max: usize, listed: Listed) -> ListObjectsOutput {
    ListObjectsOutput {
        name: Some(input.bucket),
        prefix: Some(prefix),
        delimiter: input.delimiter,
        max_keys: Some(max as i32),
        // Always there, empty on a first page, as S3 sends it (SDKs read it back).
        marker: Some(input.marker.unwrap_or_default()),
        is_truncated: Some(listed.next.is_some()),
        next_marker: listed.next,
        contents: Some(listed.contents),
        common_prefixes: Some(listed.common_prefixes),
        ..ListObjectsOutput::default()
    }
}

/// ListObjectVersions' answer on a bucket without versioning: every object of the page as
/// its latest and only version, `null`; no delete markers (a delete leaves none).
pub(crate) fn versions(
    input: ListObjectVersionsInput,
    prefix: String,
    max: usize,
    listed: Listed,
) -> ListObjectVersionsOutput {
    let versions = listed
        .contents
        .into_iter()
        .map(|object| ObjectVersion {
            key: object.key,
            size: object.size,
            e_tag: object.e_tag,
            last_modified: object.last_modified,
            version_id: Some("null".into()),
            is_latest: Some(true),
            storage_class: Some(ObjectVersionStorageClass::from_static(ObjectVersionStorageClass::STANDARD)),
            ..ObjectVersion::default()
        })
        .collect();
    let truncated = listed.next.is_some();
    ListObjectVersionsOutput {
        name: Some(input.bucket),
        prefix: Some(prefix),
        delimiter: input.delimiter,
        max_keys: Some(max as i32),
        key_marker: Some(input.key_marker.unwrap_or_default()),
        version_id_marker: Some(input.version_id_marker.unwrap_or_default()),
        is_truncated: Some(truncated),
        next_version_id_marker: truncated.then(|| "null".to_string()),
        next_key_marker: listed.next,
        versions: Some(versions),
        common_prefixes: Some(listed.common_prefixes),
        ..ListObjectVersionsOutput::default()
    }
}

//! What ListObjectsV2 and ListObjects (version 1) answer, in both modes: each mode finds a
//! page of its own ([`Listed`]); the answers are shaped here.

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
        marker: input.marker,
        is_truncated: Some(listed.next.is_some()),
        next_marker: listed.next,
        contents: Some(listed.contents),
        common_prefixes: Some(listed.common_prefixes),
        ..ListObjectsOutput::default()
    }
}

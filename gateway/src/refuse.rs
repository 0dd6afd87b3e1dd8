//! What the gateway refuses rather than fakes. An application that asks for something the
//! gateway does not do (encryption at the provider, a version by id, a signature scheme it
//! does not check, ...) gets an S3 error saying so, never an answer that looks like it was
//! done.
//!
//! Two places: [`before_auth`] looks at a request's head before s3s sees it, for what must not
//! reach s3s at all (a POST form, which s3s would read into memory before it authenticates
//! anyone; a SigV2 signature, which s3s would accept); [`Refusals`] is s3s's access check,
//! run once the request is authenticated and parsed, before its operation reads a body.

use s3s::access::{S3Access, S3AccessContext};
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Result};

/// The longest a presigned URL may be valid, as S3 says (seven days).
pub const MAX_PRESIGNED_SECS: u64 = 7 * 24 * 3600;

/// Why a request is refused from its head alone, before s3s authenticates it or reads a
/// byte of its body; `None` when s3s may have it.
pub(crate) fn before_auth<B>(req: &http::Request<B>) -> Option<S3Error> {
    // POST Object (a browser's form upload): s3s would read the whole form, up to gigabytes,
    // into memory to find its signature. The gateway does not serve it.
    let form = req.headers().get_all(http::header::CONTENT_TYPE).iter().any(|v| {
        let essence = v.to_str().unwrap_or_default().split(';').next().unwrap_or_default();
        essence.trim().eq_ignore_ascii_case("multipart/form-data")
    });
    if req.method() == http::Method::POST && form {
        return Some(s3_error!(NotImplemented, "POST Object (an HTML form upload) is not served: use PutObject"));
    }
    // SigV2 (SHA-1, no region or service in its scope): s3s would check it; applications
    // must sign with SigV4.
    let v2_header =
        req.headers().get_all(http::header::AUTHORIZATION).iter().any(|v| v.as_bytes().starts_with(b"AWS "));
    let query = query_pairs(req.uri().query().unwrap_or_default());
    let v2_query = query.iter().any(|(name, _)| name == "AWSAccessKeyId" || name == "Signature");
    if v2_header || v2_query {
        return Some(s3_error!(NotImplemented, "Signature Version 2 is not accepted: sign with Signature Version 4"));
    }
    for (_, value) in query.iter().filter(|(name, _)| name == "X-Amz-Expires") {
        if value.parse::<u64>().map_or(true, |secs| secs > MAX_PRESIGNED_SECS) {
            return Some(s3_error!(
                AuthorizationQueryParametersError,
                "X-Amz-Expires must be at most {MAX_PRESIGNED_SECS} seconds (a week)"
            ));
        }
    }
    None
}

/// A query string's names and values, decoded as s3s decodes them (so that an encoded name
/// is seen as s3s will see it).
fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (form_decoded(name), form_decoded(value))
        })
        .collect()
}

/// `text` with `+` as a space and each `%XX` as its byte (a malformed escape kept as it is).
fn form_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match (bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
                (Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// s3s's access check: only signed requests (as s3s's default), and each operation refused
/// when it asks for what the gateway does not do.
pub(crate) struct Refusals;

/// NotImplemented, naming what was asked, when `asked`.
fn refuse_if(asked: bool, what: &str) -> S3Result<()> {
    match asked {
        true => Err(S3Error::with_message(S3ErrorCode::NotImplemented, format!("{what} is not implemented by vouch"))),
        false => Ok(()),
    }
}

/// Object tags: not kept (the operations on them are NotImplemented too), so a write that
/// sets them is refused rather than stored without them.
const TAGS: &str = "object tagging (x-amz-tagging)";

/// The most keys one DeleteObjects may name (S3's limit).
const MAX_DELETE_KEYS: usize = 1000;

/// A version other than the only one the gateway has (S3 calls it "null").
fn a_version(version_id: Option<&String>) -> bool {
    version_id.is_some_and(|v| v != "null")
}

/// Server-side encryption or an object lock asked of a write: the provider is not trusted,
/// the gateway neither encrypts what it stores there nor keeps anyone from deleting it, and
/// saying it did would be a lie.
macro_rules! refuse_sse_and_lock {
    ($input:expr) => {
        refuse_if(
            $input.server_side_encryption.is_some()
                || $input.ssekms_key_id.is_some()
                || $input.ssekms_encryption_context.is_some()
                || $input.bucket_key_enabled.is_some(),
            "server-side encryption (x-amz-server-side-encryption*)",
        )
        .and(refuse_sse_c!($input))
        .and(refuse_if(
            $input.object_lock_mode.is_some()
                || $input.object_lock_retain_until_date.is_some()
                || $input.object_lock_legal_hold_status.as_ref().is_some_and(|s| s.as_str() != "OFF"),
            "object lock (x-amz-object-lock-*)",
        ))
    };
}

/// Encryption with the application's key (SSE-C), on any request that can carry it.
macro_rules! refuse_sse_c {
    ($input:expr) => {
        refuse_if(
            $input.sse_customer_algorithm.is_some()
                || $input.sse_customer_key.is_some()
                || $input.sse_customer_key_md5.is_some(),
            "server-side encryption with a customer key (x-amz-server-side-encryption-customer-*)",
        )
    };
}

/// What a copy (CopyObject, UploadPartCopy) may not ask of its source: a customer key, a
/// version by id. (A copy from an access point or outpost is refused by the operation itself.)
macro_rules! refuse_copy_source {
    ($input:expr) => {{
        let source_sse_c = $input.copy_source_sse_customer_algorithm.is_some()
            || $input.copy_source_sse_customer_key.is_some()
            || $input.copy_source_sse_customer_key_md5.is_some();
        refuse_if(source_sse_c, "a copy from an object encrypted with a customer key")?;
        let version = match &$input.copy_source {
            CopySource::Bucket { version_id, .. } => version_id.as_deref().is_some_and(|v| v != "null"),
            _ => false,
        };
        refuse_if(version, "a copy of a version by id (versionId)")
    }};
}

/// What a read (GetObject, HeadObject) may not ask.
macro_rules! refuse_read {
    ($input:expr) => {
        refuse_if(a_version($input.version_id.as_ref()), "a read of a version by id (versionId)")
            .and(refuse_sse_c!($input))
    };
}

#[async_trait::async_trait]
impl S3Access for Refusals {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        match cx.credentials() {
            Some(_) => Ok(()),
            None => Err(s3_error!(AccessDenied, "Signature is required")),
        }
    }

    async fn get_object(&self, req: &mut S3Request<GetObjectInput>) -> S3Result<()> {
        refuse_read!(req.input)
    }

    async fn head_object(&self, req: &mut S3Request<HeadObjectInput>) -> S3Result<()> {
        refuse_read!(req.input)
    }

    async fn get_object_attributes(&self, req: &mut S3Request<GetObjectAttributesInput>) -> S3Result<()> {
        refuse_read!(req.input)
    }

    async fn get_object_tagging(&self, req: &mut S3Request<GetObjectTaggingInput>) -> S3Result<()> {
        refuse_if(a_version(req.input.version_id.as_ref()), "a read of a version by id (versionId)")
    }

    async fn put_object(&self, req: &mut S3Request<PutObjectInput>) -> S3Result<()> {
        let input = &req.input;
        refuse_sse_and_lock!(input)?;
        refuse_if(input.tagging.is_some(), TAGS)?;
        // Own mode would overwrite where the application asked to append.
        refuse_if(input.write_offset_bytes.is_some(), "an append (x-amz-write-offset-bytes)")
    }

    async fn create_multipart_upload(&self, req: &mut S3Request<CreateMultipartUploadInput>) -> S3Result<()> {
        refuse_sse_and_lock!(req.input)?;
        refuse_if(req.input.tagging.is_some(), TAGS)
    }

    async fn upload_part(&self, req: &mut S3Request<UploadPartInput>) -> S3Result<()> {
        refuse_sse_c!(req.input)
    }

    async fn complete_multipart_upload(&self, req: &mut S3Request<CompleteMultipartUploadInput>) -> S3Result<()> {
        let input = &req.input;
        refuse_sse_c!(input)?;
        refuse_if(input.if_match.is_some() || input.if_none_match.is_some(), "a conditional CompleteMultipartUpload")?;
        refuse_if(input.mpu_object_size.is_some(), "x-amz-mp-object-size")
    }

    async fn copy_object(&self, req: &mut S3Request<CopyObjectInput>) -> S3Result<()> {
        let input = &req.input;
        refuse_sse_and_lock!(input)?;
        // A copy keeps no tags (its source has none); new ones would be dropped.
        refuse_if(input.tagging.is_some(), TAGS)?;
        let conditional = input.copy_source_if_match.is_some()
            || input.copy_source_if_none_match.is_some()
            || input.copy_source_if_modified_since.is_some()
            || input.copy_source_if_unmodified_since.is_some();
        refuse_if(conditional, "a conditional CopyObject (x-amz-copy-source-if-*)")?;
        refuse_copy_source!(input)
    }

    async fn upload_part_copy(&self, req: &mut S3Request<UploadPartCopyInput>) -> S3Result<()> {
        let input = &req.input;
        refuse_sse_c!(input)?;
        refuse_copy_source!(input)
    }

    async fn delete_object(&self, req: &mut S3Request<DeleteObjectInput>) -> S3Result<()> {
        let input = &req.input;
        // The gateway keeps no versions an application can name: deleting "version X" would
        // delete the whole object.
        refuse_if(a_version(input.version_id.as_ref()), "a delete of a version by id (versionId)")?;
        let conditional =
            input.if_match.is_some() || input.if_match_last_modified_time.is_some() || input.if_match_size.is_some();
        refuse_if(conditional, "a conditional DeleteObject (If-Match, x-amz-if-match-*)")
    }

    async fn delete_objects(&self, req: &mut S3Request<DeleteObjectsInput>) -> S3Result<()> {
        let objects = &req.input.delete.objects;
        // S3's bound: a larger request is malformed, and none of its keys is deleted.
        if objects.len() > MAX_DELETE_KEYS {
            let why = format!("a DeleteObjects names at most {MAX_DELETE_KEYS} keys; this one names {}", objects.len());
            return Err(S3Error::with_message(S3ErrorCode::MalformedXML, why));
        }
        refuse_if(objects.iter().any(|o| a_version(o.version_id.as_ref())), "a delete of a version by id (VersionId)")?;
        let conditional =
            objects.iter().any(|o| o.e_tag.is_some() || o.last_modified_time.is_some() || o.size.is_some());
        refuse_if(conditional, "a conditional delete (ETag, LastModifiedTime, Size)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(method: &str, uri: &str, headers: &[(&str, &str)]) -> Option<String> {
        let mut req = http::Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        before_auth(&req.body(()).unwrap()).map(|e| e.code().as_str().to_string())
    }

    #[test]
    fn a_request_head_is_refused_for_a_form_sigv2_or_a_long_presigned_url() {
        let form = [("content-type", "Multipart/Form-Data ; boundary=x")];
        assert_eq!(refused("POST", "/box", &form).as_deref(), Some("NotImplemented"));
        assert_eq!(refused("PUT", "/box/k", &form), None, "only a POST is a form upload");
        assert_eq!(refused("POST", "/box?delete", &[("content-type", "application/xml")]), None);
        let v2 = [("authorization", "AWS key:c2lnbmF0dXJl")];
        assert_eq!(refused("GET", "/box/k", &v2).as_deref(), Some("NotImplemented"));
        assert_eq!(
            refused("GET", "/box/k?AWSAccessKeyId=k&Expires=1&Signature=s", &[]).as_deref(),
            Some("NotImplemented")
        );
        assert_eq!(refused("GET", "/box/k?Signatur%65=s", &[]).as_deref(), Some("NotImplemented"), "encoded");
        assert_eq!(refused("GET", "/box/k?X-Amz-Expires=604800&X-Amz-Signature=s", &[]), None);
        let long = refused("GET", "/box/k?X-Amz-Expires=604801&X-Amz-Signature=s", &[]);
        assert_eq!(long.as_deref(), Some("AuthorizationQueryParametersError"));
        let v4 = [("authorization", "AWS4-HMAC-SHA256 Credential=k/20240101/us-east-1/s3/aws4_request")];
        assert_eq!(refused("GET", "/box/k?versionId=3", &v4), None, "left to the access check");
    }

    #[test]
    fn form_decoding_keeps_malformed_escapes() {
        assert_eq!(form_decoded("a%41+b%4"), "aA b%4");
        assert_eq!(form_decoded("%"), "%");
        assert_eq!(form_decoded("%zz"), "%zz");
    }
}

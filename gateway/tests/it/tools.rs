//! What S3 tools ask of a bucket before they copy into it or clean it (issue #46): its
//! versioning, its location, and its objects' versions (an unversioned bucket lists each
//! object once, as version `null`), and ListObjects' marker, always sent; and the copy of a
//! large object part by part (UploadPartCopy), verified like a read.

use crate::common;

use base64::Engine;
use common::{Answer, Harness};
use md5::Digest;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use reqwest::Method;
use vouch_misbehave::Misbehave;

/// The texts of every `<tag>` element of `body`, in order.
fn all<'a>(body: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    body.split(open.as_str()).skip(1).filter_map(|rest| rest.split_once(close.as_str()).map(|(text, _)| text)).collect()
}

async fn versions(h: &Harness, query: &[(&str, &str)]) -> Answer {
    let mut query = query.to_vec();
    query.push(("versions", ""));
    h.raw(Method::GET, "box", &query, &[]).await
}

/// A DeleteObjects of `xml`, with the Content-MD5 S3 asks of it.
async fn delete_all(h: &Harness, xml: String) -> Answer {
    let md5 = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(xml.as_bytes()));
    h.raw_with(Method::POST, "box", &[("delete", "")], &[("content-md5", &md5)], xml.into()).await
}

async fn put_three(h: &Harness) {
    let store = h.store("box");
    for key in ["a", "b/c", "d"] {
        store.put(&Path::from(key), PutPayload::from(key.as_bytes().to_vec())).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unversioned_bucket_answers_its_versioning_location_and_versions() {
    let h = Harness::new(&["box"]).await;
    put_three(&h).await;

    let versioning = h.raw(Method::GET, "box", &[("versioning", "")], &[]).await;
    assert_eq!(versioning.status, 200, "{}", versioning.body);
    assert!(versioning.body.contains("VersioningConfiguration"), "{}", versioning.body);
    assert!(all(&versioning.body, "Status").is_empty(), "never enabled: {}", versioning.body);
    let location = h.raw(Method::GET, "box", &[("location", "")], &[]).await;
    assert_eq!(location.status, 200, "{}", location.body);
    assert!(location.body.contains("LocationConstraint"), "{}", location.body);
    assert_eq!(all(&location.body, "LocationConstraint"), Vec::<&str>::new(), "us-east-1: {}", location.body);

    let listed = versions(&h, &[]).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(all(&listed.body, "Key"), ["a", "b/c", "d"], "{}", listed.body);
    assert_eq!(all(&listed.body, "VersionId"), ["null"; 3]);
    assert_eq!(all(&listed.body, "IsLatest"), ["true"; 3]);
    assert_eq!(all(&listed.body, "Size"), ["1", "3", "1"]);
    assert_eq!(all(&listed.body, "IsTruncated"), ["false"]);
    assert!(all(&listed.body, "DeleteMarker").is_empty());

    // Pages by key marker; a delimiter rolls up prefixes as ListObjects does.
    let first = versions(&h, &[("max-keys", "2")]).await;
    assert_eq!(all(&first.body, "Key"), ["a", "b/c"], "{}", first.body);
    assert_eq!(all(&first.body, "IsTruncated"), ["true"]);
    assert_eq!(all(&first.body, "NextKeyMarker"), ["b/c"]);
    let next = versions(&h, &[("max-keys", "2"), ("key-marker", "b/c"), ("version-id-marker", "null")]).await;
    assert_eq!(all(&next.body, "Key"), ["d"], "{}", next.body);
    assert_eq!(all(&next.body, "IsTruncated"), ["false"]);
    let rolled = versions(&h, &[("delimiter", "/")]).await;
    assert_eq!(all(&rolled.body, "Key"), ["a", "d"], "{}", rolled.body);
    assert!(rolled.body.contains("<CommonPrefixes><Prefix>b/</Prefix></CommonPrefixes>"), "{}", rolled.body);
    let none = versions(&h, &[("max-keys", "0")]).await;
    assert_eq!(none.status, 200, "{}", none.body);
    assert!(all(&none.body, "Key").is_empty(), "{}", none.body);

    // ListObjects (version 1) names its marker, empty on a first page.
    let v1 = h.raw(Method::GET, "box", &[], &[]).await;
    assert_eq!(all(&v1.body, "Marker"), [""], "{}", v1.body);

    for query in ["versioning", "location", "versions"] {
        let absent = h.raw(Method::GET, "nobox", &[(query, "")], &[]).await;
        assert_eq!((absent.status, absent.code()), (404, "NoSuchBucket"), "{query}: {}", absent.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_of_versions_the_provider_cuts_short_reaches_the_tool_as_an_error() {
    let h = Harness::lying(Misbehave::HideFile, &["box"]).await;
    put_three(&h).await;
    let listed = versions(&h, &[]).await;
    assert_ne!(listed.status, 200, "a listing without a name the provider hid: {}", listed.body);
    assert_eq!(listed.code(), vouch_gateway::errors::VIOLATION_CODE, "{}", listed.body);
}

/// S3 deletes at most 1,000 keys a request: more is malformed, and nothing is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_of_more_than_a_thousand_keys_is_refused_whole() {
    let h = Harness::new(&["box"]).await;
    put_three(&h).await;
    let delete = |keys: usize| {
        let objects: String = (0..keys).map(|i| format!("<Object><Key>{}</Key></Object>", ["a", "d"][i % 2])).collect();
        format!("<Delete>{objects}</Delete>")
    };
    let refused = delete_all(&h, delete(1001)).await;
    assert_eq!((refused.status, refused.code()), (400, "MalformedXML"), "{}", refused.body);
    assert_eq!(all(&versions(&h, &[]).await.body, "Key"), ["a", "b/c", "d"], "nothing deleted");
    let done = delete_all(&h, delete(1000)).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(all(&versions(&h, &[]).await.body, "Key"), ["b/c"]);
}

/// `h`'s multipart upload `id` of `key` in `box`: a part copied from `source` (`range`, when
/// given), as the aws CLI and SDKs copy a large object.
async fn part_copy(h: &Harness, (key, id): (&str, &str), part: &str, source: &str, range: Option<&str>) -> Answer {
    let mut headers = vec![("x-amz-copy-source", source)];
    headers.extend(range.map(|r| ("x-amz-copy-source-range", r)));
    h.raw(Method::PUT, &format!("box/{key}"), &[("partNumber", part), ("uploadId", id)], &headers).await
}

async fn create_upload(h: &Harness, key: &str) -> String {
    let created = h.raw(Method::POST, &format!("box/{key}"), &[("uploads", "")], &[]).await;
    assert_eq!(created.status, 200, "{}", created.body);
    all(&created.body, "UploadId")[0].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_object_is_copied_part_by_part_from_ranges_of_its_verified_bytes() {
    let h = Harness::new(&["box"]).await;
    let data = common::sample(12_000_000, 5);
    h.store("box").put(&Path::from("big"), PutPayload::from(data.clone())).await.unwrap();
    let id = create_upload(&h, "copy").await;
    let cut = 5 * 1024 * 1024;
    let first = part_copy(&h, ("copy", &id), "1", "box/big", Some(&format!("bytes=0-{}", cut - 1))).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let rest = format!("bytes={cut}-{}", data.len() - 1);
    let second = part_copy(&h, ("copy", &id), "2", "/box/big", Some(&rest)).await;
    assert_eq!(second.status, 200, "{}", second.body);
    let etags = [all(&first.body, "ETag")[0], all(&second.body, "ETag")[0]];
    let md5 = |bytes: &[u8]| format!("\"{}\"", base16ct::lower::encode_string(&md5::Md5::digest(bytes)));
    assert_eq!(etags, [md5(&data[..cut]).as_str(), md5(&data[cut..]).as_str()], "each part's ETag, its bytes' MD5");
    let parts: String =
        (1..=2).map(|n| format!("<Part><PartNumber>{n}</PartNumber><ETag>{}</ETag></Part>", etags[n - 1])).collect();
    let xml = format!("<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>");
    let done = h.raw_with(Method::POST, "box/copy", &[("uploadId", &id)], &[], xml.into_bytes()).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let copied = h.store("box").get(&Path::from("copy")).await.unwrap().bytes().await.unwrap();
    assert!(copied == data, "the copy holds the source's bytes");

    // A whole object as one part; a range past its end, a missing source: S3's errors.
    let id = create_upload(&h, "again").await;
    assert_eq!(part_copy(&h, ("again", &id), "1", "box/big", None).await.status, 200);
    let past = part_copy(&h, ("again", &id), "2", "box/big", Some("bytes=12000000-12000010")).await;
    assert_eq!((past.status, past.code()), (416, "InvalidRange"), "{}", past.body);
    let missing = part_copy(&h, ("again", &id), "2", "box/none", None).await;
    assert_eq!((missing.status, missing.code()), (404, "NoSuchKey"), "{}", missing.body);
    // The source's conditions, which the aws CLI sends with each part.
    let source = h.raw(Method::HEAD, "box/big", &[], &[]).await;
    let etag = source.header("etag");
    let headers = [("x-amz-copy-source", "box/big"), ("x-amz-copy-source-if-match", etag)];
    let query = [("partNumber", "2"), ("uploadId", id.as_str())];
    assert_eq!(h.raw(Method::PUT, "box/again", &query, &headers).await.status, 200);
    let headers = [("x-amz-copy-source", "box/big"), ("x-amz-copy-source-if-none-match", etag)];
    let failed = h.raw(Method::PUT, "box/again", &[("partNumber", "3"), ("uploadId", id.as_str())], &headers).await;
    assert_eq!((failed.status, failed.code()), (412, "PreconditionFailed"), "{}", failed.body);
    let listed = h.raw(Method::GET, "box/again", &[("uploadId", &id)], &[]).await;
    assert_eq!(all(&listed.body, "PartNumber"), ["1", "2"], "{}", listed.body);
}

/// A provider that corrupts the source's blocks: the part copy fails with the integrity
/// error, and the upload holds no part made of what it sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_part_copied_from_a_source_the_provider_corrupts_fails_and_keeps_nothing() {
    let h = Harness::lying(Misbehave::CorruptBlock, &["box"]).await;
    let data = common::sample(3_000_000, 6);
    let store = h.store("box");
    if store.put(&Path::from("src"), PutPayload::from(data)).await.is_err() {
        panic!("the put is not what this provider lies about");
    }
    let id = create_upload(&h, "copy").await;
    let copied = part_copy(&h, ("copy", &id), "1", "box/src", Some("bytes=0-2999999")).await;
    assert_eq!(copied.code(), vouch_gateway::errors::VIOLATION_CODE, "{}", copied.body);
    let listed = h.raw(Method::GET, "box/copy", &[("uploadId", &id)], &[]).await;
    // The provider alters what ListParts reads too: that is caught in turn, or it lists none.
    match listed.status {
        200 => assert!(all(&listed.body, "PartNumber").is_empty(), "a part kept: {}", listed.body),
        _ => assert_eq!(listed.code(), vouch_gateway::errors::VIOLATION_CODE, "{}", listed.body),
    }
}

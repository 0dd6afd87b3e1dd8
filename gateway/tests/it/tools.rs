//! What S3 tools ask of a bucket before they copy into it or clean it (issue #46): its
//! versioning, its location, and its objects' versions (an unversioned bucket lists each
//! object once, as version `null`), and ListObjects' marker, always sent.

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

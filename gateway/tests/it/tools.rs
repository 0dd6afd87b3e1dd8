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

/// A CompleteMultipartUpload asked again after it succeeded (an SDK whose answer was lost
/// retries it): answered with the completed object, not NoSuchUpload, while the key still
/// holds it and the parts listed make its ETag; otherwise NoSuchUpload, as in S3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_asked_again_answers_the_completed_object() {
    let h = Harness::new(&["box"]).await;
    let data = common::sample(5 * 1024 * 1024 + 1000, 8);
    let id = create_upload(&h, "up").await;
    let mut etags = Vec::new();
    for (n, bytes) in [(1, &data[..5 * 1024 * 1024]), (2, &data[5 * 1024 * 1024..])] {
        let query = [("partNumber", if n == 1 { "1" } else { "2" }), ("uploadId", id.as_str())];
        let part = h.raw_with(Method::PUT, "box/up", &query, &[], bytes.to_vec()).await;
        assert_eq!(part.status, 200, "{}", part.body);
        etags.push(part.header("etag").to_string());
    }
    let complete = |etags: &[String]| {
        let parts: String = etags
            .iter()
            .enumerate()
            .map(|(i, e)| format!("<Part><PartNumber>{}</PartNumber><ETag>{e}</ETag></Part>", i + 1))
            .collect();
        format!("<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>").into_bytes()
    };
    let done = h.raw_with(Method::POST, "box/up", &[("uploadId", &id)], &[], complete(&etags)).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let etag = all(&done.body, "ETag")[0].to_string();
    assert!(etag.ends_with("-2\""), "{etag}");

    let again = h.raw_with(Method::POST, "box/up", &[("uploadId", &id)], &[], complete(&etags)).await;
    assert_eq!(again.status, 200, "a retried completion: {}", again.body);
    assert_eq!((all(&again.body, "ETag"), all(&again.body, "Key")), (vec![etag.as_str()], vec!["up"]));
    let got = h.store("box").get(&Path::from("up")).await.unwrap().bytes().await.unwrap();
    assert!(got == data, "one object, as first completed");
    // Other parts than the ones it was completed from; another upload's id; another key.
    let other = [etags[1].clone(), etags[0].clone()];
    let wrong = h.raw_with(Method::POST, "box/up", &[("uploadId", &id)], &[], complete(&other)).await;
    assert_eq!((wrong.status, wrong.code()), (404, "NoSuchUpload"), "{}", wrong.body);
    let one = h.raw_with(Method::POST, "box/up", &[("uploadId", &id)], &[], complete(&etags[..1])).await;
    assert_eq!((one.status, one.code()), (404, "NoSuchUpload"), "{}", one.body);
    let stranger = "0123456789abcdef0123456789abcdef";
    let unknown = h.raw_with(Method::POST, "box/up", &[("uploadId", stranger)], &[], complete(&etags)).await;
    assert_eq!(unknown.code(), "NoSuchUpload", "{}", unknown.body);
    let elsewhere = h.raw_with(Method::POST, "box/other", &[("uploadId", &id)], &[], complete(&etags)).await;
    assert_eq!(elsewhere.code(), "NoSuchUpload", "{}", elsewhere.body);
    // A copy of it is not its completion; once the key holds another object, neither is it.
    let copied = h.raw(Method::PUT, "box/copy", &[], &[("x-amz-copy-source", "box/up")]).await;
    assert_eq!(copied.status, 200, "{}", copied.body);
    let from_copy = h.raw_with(Method::POST, "box/copy", &[("uploadId", &id)], &[], complete(&etags)).await;
    assert_eq!(from_copy.code(), "NoSuchUpload", "{}", from_copy.body);
    h.store("box").put(&Path::from("up"), PutPayload::from(b"replaced".to_vec())).await.unwrap();
    let replaced = h.raw_with(Method::POST, "box/up", &[("uploadId", &id)], &[], complete(&etags)).await;
    assert_eq!(replaced.code(), "NoSuchUpload", "{}", replaced.body);
}

/// User metadata comes back as it was sent: UTF-8 bytes as those bytes, RFC 2047 encoded words
/// as those words (the S3 protocol's parser decodes both, and its serialiser would encode a
/// UTF-8 value); kept by a copy and by a multipart upload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_ascii_user_metadata_comes_back_as_it_was_sent() {
    let h = Harness::new(&["box"]).await;
    let sent: [(&str, &[u8]); 3] = [
        ("x-amz-meta-city", "Zürich, 東京".as_bytes()),
        ("x-amz-meta-word", b"=?UTF-8?B?w6k=?="),
        ("x-amz-meta-plain", b"ascii"),
    ];
    let send = async |method: Method, path: &str, query: &[(&str, &str)], headers: &[(&str, &[u8])]| {
        let url = h.presigned(method.clone(), path, query, std::time::Duration::from_secs(60)).await;
        vouch_proto::tls::install_provider();
        let mut request = reqwest::Client::new().request(method, url).body(b"body".to_vec());
        for &(name, value) in headers {
            request = request.header(name, reqwest::header::HeaderValue::from_bytes(value).unwrap());
        }
        common::answer(request).await
    };
    let put = send(Method::PUT, "box/meta", &[], &sent).await;
    assert_eq!(put.status, 200, "{}", put.body);
    let copied = send(Method::PUT, "box/copied", &[], &[("x-amz-copy-source", b"box/meta")]).await;
    assert_eq!(copied.status, 200, "{}", copied.body);
    let created = send(Method::POST, "box/parted", &[("uploads", "")], &sent).await;
    let id = all(&created.body, "UploadId")[0].to_string();
    let part = h.raw_with(Method::PUT, "box/parted", &[("partNumber", "1"), ("uploadId", &id)], &[], b"x".into()).await;
    let xml = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{}</ETag></Part></CompleteMultipartUpload>",
        part.header("etag")
    );
    assert_eq!(h.raw_with(Method::POST, "box/parted", &[("uploadId", &id)], &[], xml.into()).await.status, 200);
    for key in ["box/meta", "box/copied", "box/parted"] {
        for method in [Method::HEAD, Method::GET] {
            let got = h.raw(method.clone(), key, &[], &[]).await;
            assert_eq!(got.status, 200, "{method} {key}: {}", got.body);
            for (name, value) in sent {
                let back = got.headers.get(name).map(|v| v.as_bytes());
                assert_eq!(back, Some(value), "{method} {key} {name}: {:?}", back.map(String::from_utf8_lossy));
            }
        }
    }
}

/// A PUT whose body comes in HTTP chunks, with no Content-Length (as streaming clients send
/// one of unknown length): stored whole and verified, as any PUT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_of_unknown_length_in_http_chunks_is_stored() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let h = Harness::new(&["box"]).await;
    let data = common::sample(300_000, 9);
    let url = h.presigned(Method::PUT, "box/chunked", &[], std::time::Duration::from_secs(60)).await;
    let url = reqwest::Url::parse(&url).unwrap();
    let mut stream = tokio::net::TcpStream::connect(h.gateway.as_ref().unwrap().addr).await.unwrap();
    let head = format!(
        "PUT {}?{} HTTP/1.1\r\nHost: {}:{}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        url.path(),
        url.query().unwrap(),
        url.host_str().unwrap(),
        url.port().unwrap()
    );
    let mut request = head.into_bytes();
    for chunk in data.chunks(70_000) {
        request.extend(format!("{:x}\r\n", chunk.len()).into_bytes());
        request.extend(chunk);
        request.extend(b"\r\n");
    }
    request.extend(b"0\r\n\r\n");
    stream.write_all(&request).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let got = h.store("box").get(&Path::from("chunked")).await.unwrap().bytes().await.unwrap();
    assert!(got == data, "the chunks' bytes, whole");
    let md5 = base16ct::lower::encode_string(&md5::Md5::digest(&data));
    assert_eq!(h.raw(Method::HEAD, "box/chunked", &[], &[]).await.header("etag"), format!("\"{md5}\""));
}

/// GetObject and HeadObject by part number (as SDKs that download in parts ask): a multipart
/// object's part, with its Content-Range and the object's number of parts; an object of one
/// part is its own part 1; a part past the last is InvalidPartNumber; a Range with it, refused.
/// GetObjectAttributes lists the parts, a page at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_by_part_number_serves_that_part() {
    let h = Harness::new(&["box"]).await;
    let mib5 = 5 * 1024 * 1024;
    let data = common::sample(2 * mib5 + 1000, 10);
    let id = create_upload(&h, "parted").await;
    let mut parts = String::new();
    for (n, bytes) in [(1, &data[..mib5]), (2, &data[mib5..2 * mib5]), (3, &data[2 * mib5..])] {
        let number = n.to_string();
        let query = [("partNumber", number.as_str()), ("uploadId", id.as_str())];
        let part = h.raw_with(Method::PUT, "box/parted", &query, &[], bytes.to_vec()).await;
        assert_eq!(part.status, 200, "{}", part.body);
        parts += &format!("<Part><PartNumber>{n}</PartNumber><ETag>{}</ETag></Part>", part.header("etag"));
    }
    let xml = format!("<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>");
    assert_eq!(h.raw_with(Method::POST, "box/parted", &[("uploadId", &id)], &[], xml.into()).await.status, 200);

    let total = data.len();
    for (n, range) in [(1, 0..mib5), (2, mib5..2 * mib5), (3, 2 * mib5..total)] {
        let number = n.to_string();
        let got = h.raw(Method::GET, "box/parted", &[("partNumber", &number)], &[]).await;
        assert_eq!(got.status, 206, "part {n}: {}", &got.body[..got.body.len().min(300)]);
        // The answer's body as text (lossy): the part's bytes made text alike.
        assert!(got.body == String::from_utf8_lossy(&data[range.clone()]), "part {n}'s bytes");
        let content_range = format!("bytes {}-{}/{total}", range.start, range.end - 1);
        assert_eq!((got.header("content-range"), got.header("x-amz-mp-parts-count")), (content_range.as_str(), "3"));
        let head = h.raw(Method::HEAD, "box/parted", &[("partNumber", &number)], &[]).await;
        assert_eq!(head.header("content-length"), (range.end - range.start).to_string(), "HEAD part {n}");
        assert_eq!(head.header("x-amz-mp-parts-count"), "3");
    }
    let past = h.raw(Method::GET, "box/parted", &[("partNumber", "4")], &[]).await;
    assert_eq!((past.status, past.code()), (416, "InvalidPartNumber"), "{}", past.body);
    let both = h.raw(Method::GET, "box/parted", &[("partNumber", "1")], &[("range", "bytes=0-9")]).await;
    assert_eq!((both.status, both.code()), (400, "InvalidRequest"), "{}", both.body);

    // GetObjectAttributes: what is asked, the parts a page at a time.
    let asked = [("x-amz-object-attributes", "ETag,ObjectSize,ObjectParts,StorageClass"), ("x-amz-max-parts", "2")];
    let attributes = h.raw(Method::GET, "box/parted", &[("attributes", "")], &asked).await;
    assert_eq!(attributes.status, 200, "{}", attributes.body);
    let b = attributes.body.as_str();
    assert_eq!(all(b, "ObjectSize"), [total.to_string().as_str()], "{b}");
    assert_eq!((all(b, "PartsCount"), all(b, "PartNumber")), (vec!["3"], vec!["1", "2"]), "{b}");
    assert_eq!((all(b, "IsTruncated"), all(b, "NextPartNumberMarker")), (vec!["true"], vec!["2"]), "{b}");
    assert_eq!(all(b, "Size"), [mib5.to_string(), mib5.to_string()], "{b}");
    assert_eq!(all(b, "StorageClass"), ["STANDARD"]);
    assert!(all(b, "ETag")[0].contains("-3"), "{b}");
    let asked = [("x-amz-object-attributes", "ObjectParts"), ("x-amz-part-number-marker", "2")];
    let rest = h.raw(Method::GET, "box/parted", &[("attributes", "")], &asked).await;
    assert_eq!(all(&rest.body, "PartNumber"), ["3"], "{}", rest.body);
    assert_eq!(all(&rest.body, "Size"), ["1000"], "{}", rest.body);
    assert!(all(&rest.body, "ObjectSize").is_empty() && all(&rest.body, "ETag").is_empty(), "only what was asked");
    let absent = h.raw(Method::GET, "box/none", &[("attributes", "")], &[("x-amz-object-attributes", "ETag")]).await;
    assert_eq!((absent.status, absent.code()), (404, "NoSuchKey"), "{}", absent.body);

    h.store("box").put(&Path::from("whole"), PutPayload::from(b"one part".to_vec())).await.unwrap();
    let asked = [("x-amz-object-attributes", "ObjectSize,ObjectParts")];
    let single = h.raw(Method::GET, "box/whole", &[("attributes", "")], &asked).await;
    assert_eq!(
        (all(&single.body, "ObjectSize"), all(&single.body, "ObjectParts")),
        (vec!["8"], vec![]),
        "{}",
        single.body
    );
    let one = h.raw(Method::GET, "box/whole", &[("partNumber", "1")], &[]).await;
    assert_eq!((one.status, one.body.as_str(), one.header("x-amz-mp-parts-count")), (206, "one part", "1"));
    let two = h.raw(Method::GET, "box/whole", &[("partNumber", "2")], &[]).await;
    assert_eq!((two.status, two.code()), (416, "InvalidPartNumber"), "{}", two.body);
}

/// GetObjectAttributes reads the object's verified metadata: a provider that alters it is
/// caught, and the tool gets the integrity error, not attributes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attributes_of_an_object_the_provider_alters_are_an_integrity_error() {
    let h = Harness::lying(Misbehave::CorruptBlock, &["box"]).await;
    h.store("box").put(&Path::from("k"), PutPayload::from(common::sample(20_000, 3))).await.unwrap();
    let asked = [("x-amz-object-attributes", "ETag,ObjectSize")];
    let got = h.raw(Method::GET, "box/k", &[("attributes", "")], &asked).await;
    assert_eq!(got.code(), vouch_gateway::errors::VIOLATION_CODE, "{}", got.body);
}

/// Virtual-hosted-style addressing under the configured domain (`BUCKET.<domain>`), beside
/// path style on any other host name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_is_addressed_by_its_host_name_under_the_configured_domain() {
    let config = vouch_gateway::GatewayConfig { virtual_host_domain: Some("s3.vouch.test".into()), ..common::config() };
    let h = Harness::configured(vouch_server::Blocks::Local, Misbehave::None, &["box"], config).await;
    let addr = h.gateway.as_ref().unwrap().addr;
    let host = format!("box.s3.vouch.test:{}", addr.port());
    vouch_proto::tls::install_provider();
    let signer = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(format!("http://{host}"))
        .with_virtual_hosted_style_request(true)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name("box")
        .with_access_key_id(common::ACCESS_KEY)
        .with_secret_access_key(common::SECRET_KEY)
        .build()
        .unwrap();
    let http = reqwest::Client::builder().resolve("box.s3.vouch.test", addr).build().unwrap();
    let signed = async |method: Method, key: &str| {
        use object_store::signer::Signer;
        let expires = std::time::Duration::from_secs(60);
        signer.signed_url(method, &Path::from(key), expires).await.unwrap()
    };
    let put = http.put(signed(Method::PUT, "hosted/key").await).body(b"by host name".to_vec()).send().await.unwrap();
    assert_eq!(put.status(), 200, "{}", put.text().await.unwrap());
    // Path style on the gateway's address reads what virtual-hosted style wrote, and back.
    let got = h.store("box").get(&Path::from("hosted/key")).await.unwrap().bytes().await.unwrap();
    assert_eq!(&got[..], b"by host name");
    h.store("box").put(&Path::from("path/key"), PutPayload::from(b"by path".to_vec())).await.unwrap();
    let read = http.get(signed(Method::GET, "path/key").await).send().await.unwrap();
    assert_eq!(read.status(), 200);
    assert_eq!(&read.bytes().await.unwrap()[..], b"by path");
    let listed = http.get(signed(Method::GET, "").await).send().await.unwrap().text().await.unwrap();
    assert_eq!(all(&listed, "Key"), ["hosted/key", "path/key"], "ListObjects of the host's bucket: {listed}");
}

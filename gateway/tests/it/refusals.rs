//! What the gateway does not do, it refuses (NotImplemented, or the S3 error that fits), and
//! it reads nothing of a request before it is authenticated: for each, the request that would
//! otherwise get a silent lie (done other than asked, or not done at all), or that would have
//! the gateway read for a stranger, and what it gets instead.

use crate::common;

use base64::Engine as _;
use common::{answer, config, sample, Harness};
use futures::TryStreamExt;
use md5::Digest as _;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use reqwest::Method;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use vouch_gateway::GatewayConfig;
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;

const PAST: &str = "Mon, 01 Jan 1990 00:00:00 GMT";
const FUTURE: &str = "Fri, 01 Jan 2100 00:00:00 GMT";

/// A POST form (an HTML upload) is what s3s reads into memory, whole, to find its signature:
/// an unsigned one of a gigabyte is answered NotImplemented from its head, while the client
/// has sent no more than the socket buffers hold, and the connection is closed. The body
/// comes from a generator (one chunk sent again and again), so the test holds no gigabyte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsigned_post_form_of_a_gigabyte_is_refused_before_its_body_is_read() {
    const GIB: u64 = 1 << 30;
    let h = Harness::new(&["box"]).await;
    let addr = h.gateway.as_ref().unwrap().addr;
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let boundary = "vouch-form-boundary";
    let head = format!(
        "POST /box HTTP/1.1\r\nHost: {addr}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n\
         Content-Length: {GIB}\r\n\r\n"
    );
    // A well-formed form: a key field, then a file that runs to the end of the gigabyte.
    let preamble = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nbig\r\n--{boundary}\r\n\
         Content-Disposition: form-data; name=\"file\"; filename=\"big\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    );
    writer.write_all(head.as_bytes()).await.unwrap();
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    let sending = tokio::spawn(async move {
        let chunk = vec![b'x'; 1 << 20];
        let mut next: &[u8] = preamble.as_bytes();
        loop {
            let left = GIB - counter.load(Ordering::SeqCst);
            if left == 0 {
                break;
            }
            let piece = &next[..next.len().min(left as usize)];
            if writer.write_all(piece).await.is_err() {
                break; // the gateway closed the connection
            }
            counter.fetch_add(piece.len() as u64, Ordering::SeqCst);
            next = &chunk;
        }
    });
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let read_head = async {
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            match reader.read(&mut buf).await.unwrap() {
                0 => break,
                n => answer.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), read_head).await.expect("an answer");
    let sent_then = sent.load(Ordering::SeqCst);
    let text = String::from_utf8_lossy(&answer).to_string();
    assert!(sent_then < 64 << 20, "answered only after {sent_then} bytes of the form were sent: {text:?}");
    assert!(text.starts_with("HTTP/1.1 501"), "{text}");
    // The rest is never read: the connection ends (the client's writes fail), well short of
    // the gigabyte.
    tokio::time::timeout(Duration::from_secs(30), sending).await.expect("the connection closed").unwrap();
    let total = sent.load(Ordering::SeqCst);
    assert!(total < 256 << 20, "the gateway kept reading: {total} bytes");
    // And the gateway still serves.
    h.store("box").put(&Path::from("k"), PutPayload::from(vec![1, 2, 3])).await.unwrap();
}

/// The gateway keeps one version of an object, which S3 calls "null": a DeleteObject of
/// another version by id would delete the whole object; it is refused, as are reads of a
/// version and a DeleteObjects that names one. `versionId=null` is the object itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_of_a_version_by_id_is_refused_and_the_object_stays() {
    let h = Harness::new(&["box"]).await;
    let store = h.store("box");
    let data = sample(10_000, 1);
    store.put(&Path::from("k"), PutPayload::from(data.clone())).await.unwrap();
    for method in [Method::DELETE, Method::GET, Method::HEAD] {
        let refused = h.raw(method.clone(), "box/k", &[("versionId", "3")], &[]).await;
        assert_eq!(refused.status, 501, "{method}: {}", refused.body);
        if method != Method::HEAD {
            assert_eq!(refused.code(), "NotImplemented", "{method}");
        }
    }
    let xml = "<Delete><Object><Key>k</Key><VersionId>3</VersionId></Object></Delete>";
    let md5 = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(xml.as_bytes()));
    let refused = h.raw_with(Method::POST, "box", &[("delete", "")], &[("content-md5", &md5)], xml.into()).await;
    assert_eq!((refused.status, refused.code()), (501, "NotImplemented"), "{}", refused.body);
    assert_eq!(store.get(&Path::from("k")).await.unwrap().bytes().await.unwrap(), data, "still there");

    let null = h.raw(Method::GET, "box/k", &[("versionId", "null")], &[]).await;
    assert_eq!(null.status, 200, "{}", null.body);
    assert_eq!(h.raw(Method::DELETE, "box/k", &[("versionId", "null")], &[]).await.status, 204);
    assert!(matches!(store.head(&Path::from("k")).await, Err(object_store::Error::NotFound { .. })));
}

/// The provider is not trusted and the gateway does not encrypt what it stores there: a
/// write asking for server-side encryption (SSE-S3, SSE-KMS, SSE-C) or an object lock is
/// refused, and nothing is stored; so is a read with a customer key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encryption_asked_of_a_write_is_refused_not_stored_in_plaintext() {
    let h = Harness::new(&["box"]).await;
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let key_md5 = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest([7u8; 32]));
    let sse_c = [
        ("x-amz-server-side-encryption-customer-algorithm", "AES256"),
        ("x-amz-server-side-encryption-customer-key", key.as_str()),
        ("x-amz-server-side-encryption-customer-key-md5", key_md5.as_str()),
    ];
    let asks: [&[(&str, &str)]; 4] = [
        &[("x-amz-server-side-encryption", "AES256")],
        &[("x-amz-server-side-encryption", "aws:kms"), ("x-amz-server-side-encryption-aws-kms-key-id", "k1")],
        &sse_c,
        &[("x-amz-object-lock-mode", "COMPLIANCE"), ("x-amz-object-lock-retain-until-date", "2100-01-01T00:00:00Z")],
    ];
    for ask in asks {
        let put = h.raw_with(Method::PUT, "box/secret", &[], ask, b"plaintext".to_vec()).await;
        assert_eq!((put.status, put.code()), (501, "NotImplemented"), "{ask:?}: {}", put.body);
        let upload = h.raw(Method::POST, "box/secret", &[("uploads", "")], ask).await;
        assert_eq!((upload.status, upload.code()), (501, "NotImplemented"), "{ask:?}: {}", upload.body);
    }
    let store = h.store("box");
    assert!(matches!(store.head(&Path::from("secret")).await, Err(object_store::Error::NotFound { .. })));
    store.put(&Path::from("plain"), PutPayload::from(b"plain".to_vec())).await.unwrap();
    let read = h.raw(Method::GET, "box/plain", &[], &sse_c).await;
    assert_eq!((read.status, read.code()), (501, "NotImplemented"), "{}", read.body);
    let copy = [("x-amz-copy-source", "/box/plain"), ("x-amz-server-side-encryption", "AES256")];
    let copied = h.raw(Method::PUT, "box/copy", &[], &copy).await;
    assert_eq!((copied.status, copied.code()), (501, "NotImplemented"), "{}", copied.body);
    assert!(matches!(store.head(&Path::from("copy")).await, Err(object_store::Error::NotFound { .. })));
}

/// If-Modified-Since and If-Unmodified-Since are honoured on GetObject and HeadObject (in
/// HTTP's order: a matching If-Match overrides a failed If-Unmodified-Since).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_modified_since_and_if_unmodified_since_are_honoured() {
    let h = Harness::new(&["box"]).await;
    h.store("box").put(&Path::from("k"), PutPayload::from(b"dated".to_vec())).await.unwrap();
    let head = h.raw(Method::HEAD, "box/k", &[], &[]).await;
    let (stored, etag) = (head.header("last-modified").to_string(), head.header("etag").to_string());
    assert!(stored.ends_with("GMT"), "{stored}");
    let cases: [(&[(&str, &str)], u16); 8] = [
        (&[("if-modified-since", PAST)], 200),
        (&[("if-modified-since", FUTURE)], 304),
        (&[("if-modified-since", &stored)], 304),
        (&[("if-unmodified-since", PAST)], 412),
        (&[("if-unmodified-since", FUTURE)], 200),
        (&[("if-unmodified-since", &stored)], 200),
        (&[("if-match", &etag), ("if-unmodified-since", PAST)], 200),
        (&[("if-none-match", &etag), ("if-modified-since", PAST)], 304),
    ];
    for (conditions, status) in cases {
        for method in [Method::GET, Method::HEAD] {
            let got = h.raw(method.clone(), "box/k", &[], conditions).await;
            assert_eq!(got.status, status, "{method} {conditions:?}: {}", got.body);
            if status == 304 {
                // A cache revalidates by these: the 304 carries what a 200 would.
                assert_eq!((got.header("etag"), got.header("last-modified")), (&*etag, &*stored), "{conditions:?}");
            }
            if method == Method::GET && status == 200 {
                assert_eq!(got.body, "dated");
            }
        }
    }
}

/// The response-* overrides of a GetObject or HeadObject set its answer's headers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_header_overrides_are_honoured() {
    let h = Harness::new(&["box"]).await;
    h.store("box").put(&Path::from("k.bin"), PutPayload::from(b"a,b\n".to_vec())).await.unwrap();
    let overrides = [
        ("response-content-type", "text/csv"),
        ("response-content-disposition", "attachment; filename=\"k.csv\""),
        ("response-cache-control", "no-cache"),
        ("response-content-language", "fr"),
        ("response-content-encoding", "identity"),
        ("response-expires", FUTURE),
    ];
    for method in [Method::GET, Method::HEAD] {
        let got = h.raw(method.clone(), "box/k.bin", &overrides, &[]).await;
        assert_eq!(got.status, 200, "{method}: {}", got.body);
        for (query, header) in [
            ("response-content-type", "content-type"),
            ("response-content-disposition", "content-disposition"),
            ("response-cache-control", "cache-control"),
            ("response-content-language", "content-language"),
            ("response-content-encoding", "content-encoding"),
            ("response-expires", "expires"),
        ] {
            let want = overrides.iter().find(|(q, _)| *q == query).unwrap().1;
            assert_eq!(got.header(header), want, "{method} {header}");
        }
    }
}

/// A CopyObject on conditions about its source (x-amz-copy-source-if-*) or of a version of it
/// is refused, not done unconditionally.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_copy_or_a_copy_of_a_version_is_refused() {
    let h = Harness::new(&["box"]).await;
    let store = h.store("box");
    store.put(&Path::from("src"), PutPayload::from(b"source".to_vec())).await.unwrap();
    let conditions = [
        ("x-amz-copy-source-if-match", "\"0123456789abcdef0123456789abcdef\""),
        ("x-amz-copy-source-if-none-match", "*"),
        ("x-amz-copy-source-if-modified-since", FUTURE),
        ("x-amz-copy-source-if-unmodified-since", PAST),
    ];
    for condition in conditions {
        let copy = h.raw(Method::PUT, "box/dst", &[], &[("x-amz-copy-source", "/box/src"), condition]).await;
        assert_eq!((copy.status, copy.code()), (501, "NotImplemented"), "{condition:?}: {}", copy.body);
    }
    let version = h.raw(Method::PUT, "box/dst", &[], &[("x-amz-copy-source", "/box/src?versionId=4")]).await;
    assert_eq!((version.status, version.code()), (501, "NotImplemented"), "{}", version.body);
    assert!(matches!(store.head(&Path::from("dst")).await, Err(object_store::Error::NotFound { .. })));
    let plain = h.raw(Method::PUT, "box/dst", &[], &[("x-amz-copy-source", "/box/src")]).await;
    assert_eq!(plain.status, 200, "{}", plain.body);
}

/// Signature Version 2 (in the Authorization header or the query) is refused before its
/// signature is checked: the gateway accepts SigV4 only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigv2_request_is_refused_before_its_signature_is_checked() {
    let h = Harness::new(&["box"]).await;
    h.store("box").put(&Path::from("k"), PutPayload::from(b"v2".to_vec())).await.unwrap();
    let url = format!("{}/box/k", h.endpoint());
    vouch_proto::tls::install_provider();
    let client = reqwest::Client::new();
    let date = "Mon, 01 Jan 2024 00:00:00 GMT";
    let header = client.get(&url).header("date", date).header("authorization", "AWS test-app:c2lnbmF0dXJlIG9mIHYy");
    let header = answer(header).await;
    assert_eq!((header.status, header.code()), (501, "NotImplemented"), "{}", header.body);
    let query = client.get(format!("{url}?AWSAccessKeyId=test-app&Expires=4102444800&Signature=c2ln"));
    let query = answer(query).await;
    assert_eq!((query.status, query.code()), (501, "NotImplemented"), "{}", query.body);
}

/// A presigned URL valid for longer than S3's week is refused; one of a week is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presigned_url_valid_past_a_week_is_refused() {
    let h = Harness::new(&["box"]).await;
    h.store("box").put(&Path::from("k"), PutPayload::from(b"signed".to_vec())).await.unwrap();
    let week = Duration::from_secs(7 * 24 * 3600);
    let long = h.presigned(Method::GET, "box/k", &[], week + Duration::from_secs(1)).await;
    vouch_proto::tls::install_provider();
    let refused = answer(reqwest::Client::new().get(long)).await;
    assert_eq!((refused.status, refused.code()), (400, "AuthorizationQueryParametersError"), "{}", refused.body);
    let served = answer(reqwest::Client::new().get(h.presigned(Method::GET, "box/k", &[], week).await)).await;
    assert_eq!((served.status, served.body.as_str()), (200, "signed"));
}

/// Metadata past S3's limits (2 KB of x-amz-meta-*; and all of it, headers included, more
/// than an object's trailer holds) is refused as MetadataTooLarge when written, before the
/// body is read: never acknowledged, then unreadable, breaking the bucket's listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_past_the_limit_is_refused_at_write_time() {
    let h = Harness::new(&["box"]).await;
    let store = h.store("box");
    let (big, huge) = ("x".repeat(3000), "x".repeat(20_000));
    let too_much: [&[(&str, &str)]; 3] = [
        &[("x-amz-meta-big", &big)],
        &[("x-amz-meta-half", &big[..1500]), ("x-amz-meta-other-half", &big[..1500])],
        &[("content-disposition", &huge)],
    ];
    for headers in too_much {
        let put = h.raw_with(Method::PUT, "box/meta", &[], headers, b"body".to_vec()).await;
        assert_eq!((put.status, put.code()), (400, "MetadataTooLarge"), "{}", put.body);
        let upload = h.raw(Method::POST, "box/meta", &[("uploads", "")], headers).await;
        assert_eq!((upload.status, upload.code()), (400, "MetadataTooLarge"), "{}", upload.body);
    }
    store.put(&Path::from("other"), PutPayload::from(b"x".to_vec())).await.unwrap();
    let copy = [("x-amz-copy-source", "/box/other"), ("x-amz-metadata-directive", "REPLACE"), ("x-amz-meta-big", &big)];
    let copied = h.raw(Method::PUT, "box/meta", &[], &copy).await;
    assert_eq!((copied.status, copied.code()), (400, "MetadataTooLarge"), "{}", copied.body);
    let listed: Vec<_> = store.list(None).map_ok(|m| m.location.to_string()).try_collect().await.unwrap();
    assert_eq!(listed, ["other"], "nothing stored, the listing whole");
    // 2 KB exactly (keys and values) is stored and read back.
    let value = "v".repeat(2048 - "fits".len());
    let put = h.raw_with(Method::PUT, "box/fits", &[], &[("x-amz-meta-fits", &value)], b"body".to_vec()).await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(h.raw(Method::HEAD, "box/fits", &[], &[]).await.header("x-amz-meta-fits"), value);
}

/// A method of the client's choosing is counted as `other`: it adds no label to the metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_of_the_clients_choosing_adds_no_metric_label() {
    let config = GatewayConfig { metrics_listen: Some("127.0.0.1:0".into()), ..config() };
    let h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], config).await;
    let gateway = h.gateway.as_ref().unwrap();
    for method in ["BREW", "WHEN-1", "WHEN-2"] {
        let mut stream = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
        let request = format!("{method} /box HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
    }
    let text = gateway.metrics.render();
    assert!(!text.contains("BREW") && !text.contains("WHEN-"), "{text}");
    assert!(text.contains("vouch_gateway_requests_total{method=\"other\""), "{text}");
}

/// An answer about a provider that cannot be reached names no address of it (nor any path of
/// the gateway's machine): the gateway's log does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_body_names_no_provider_address() {
    let config = GatewayConfig { cache_mb: 0, ..config() };
    let mut h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], config).await;
    h.store("box").put(&Path::from("k"), PutPayload::from(b"far".to_vec())).await.unwrap();
    let server = h.server.take().unwrap();
    let provider = server.addr.to_string();
    server.shutdown().await.unwrap();
    let got = h.raw(Method::GET, "box/k", &[], &[]).await;
    assert_eq!((got.status, got.code()), (503, "ServiceUnavailable"), "{}", got.body);
    let port = provider.rsplit(':').next().unwrap();
    assert!(!got.body.contains(&provider) && !got.body.contains(&format!(":{port}")), "{}", got.body);
    assert!(!got.body.contains(h.dir.path().to_str().unwrap()), "{}", got.body);
}

/// Object tags are not kept: a write that sets them is refused and stores nothing, and
/// PutObjectTagging is NotImplemented, never answered as if tags were kept. An object's tags
/// are then truly none (tools that copy tags along ask for them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_refused_never_dropped() {
    let h = Harness::new(&["box"]).await;
    let tags = [("x-amz-tagging", "project=vouch")];
    let put = h.raw_with(Method::PUT, "box/tagged", &[], &tags, b"bytes".to_vec()).await;
    assert_eq!((put.status, put.code()), (501, "NotImplemented"), "{}", put.body);
    let upload = h.raw(Method::POST, "box/tagged", &[("uploads", "")], &tags).await;
    assert_eq!((upload.status, upload.code()), (501, "NotImplemented"), "{}", upload.body);
    let store = h.store("box");
    assert!(matches!(store.head(&Path::from("tagged")).await, Err(object_store::Error::NotFound { .. })));
    store.put(&Path::from("plain"), PutPayload::from(b"plain".to_vec())).await.unwrap();
    let copy = [("x-amz-copy-source", "/box/plain"), ("x-amz-tagging-directive", "REPLACE"), tags[0]];
    let copied = h.raw(Method::PUT, "box/copy", &[], &copy).await;
    assert_eq!((copied.status, copied.code()), (501, "NotImplemented"), "{}", copied.body);
    let xml = "<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>";
    let set = h.raw_with(Method::PUT, "box/plain", &[("tagging", "")], &[], xml.into()).await;
    assert_eq!((set.status, set.code()), (501, "NotImplemented"), "{}", set.body);
    let get = h.raw(Method::GET, "box/plain", &[("tagging", "")], &[]).await;
    assert_eq!(get.status, 200, "{}", get.body);
    assert!(get.body.contains("<TagSet></TagSet>") || get.body.contains("<TagSet/>"), "{}", get.body);
    let absent = h.raw(Method::GET, "box/none", &[("tagging", "")], &[]).await;
    assert_eq!((absent.status, absent.code()), (404, "NoSuchKey"), "{}", absent.body);
}

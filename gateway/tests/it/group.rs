//! Group mode: two gateways, members 0 and 1 of one VICOS group (each with its own provider
//! token), serve one object store as S3. What one writes the other reads, lists, copies and
//! deletes; writers through both at once all land; a forked provider and an object altered in
//! the provider's store reach the application as `VouchIntegrityViolation`, never as data.

use crate::common;

use common::{config, sample, trickle, ACCESS_KEY, SECRET_KEY};
use futures::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::signer::Method;
use object_store::{Attribute, Attributes, GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutOptions, PutPayload};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use vouch_client::vicos::Group;
use vouch_client::Remote;
use vouch_core::aip::{Keyring, Mode};
use vouch_gateway::errors::{VIOLATION_CODE, VIOLATION_HEADER};
use vouch_gateway::RunningGateway;
use vouch_misbehave::{Misbehave, Misbehaving};
use vouch_server::{Blocks, RunningServer, ServeOptions};
use vouch_testkit::provider;

const GROUP: &str = "team";
/// Member 0's provider token (gateway A), and member 1's (gateway B).
const TOKEN_A: &str = "token-of-a";
const TOKEN_B: &str = "token-of-b";

/// A provider, and a gateway for each of the group's two members.
struct Pair {
    dir: tempfile::TempDir,
    _server: RunningServer<Misbehaving>,
    a: RunningGateway,
    b: RunningGateway,
}

/// An answer to a raw request: its status, the violation header, and its body.
struct Answer {
    status: u16,
    violation: Option<String>,
    body: String,
}

impl Pair {
    /// The provider behaving as `misbehave` says, the group made by member 0, joined by
    /// member 1, and a gateway in front of each.
    async fn new(misbehave: Misbehave) -> Pair {
        Pair::configured(misbehave, config()).await
    }

    /// [`Pair::new`] with both gateways configured as `config` says.
    async fn configured(misbehave: Misbehave, config: vouch_gateway::GatewayConfig) -> Pair {
        let dir = tempfile::tempdir().unwrap();
        let clients = [(TOKEN_A, "alice"), (TOKEN_B, "bob")];
        let server =
            provider::start(&dir.path().join("provider"), &Blocks::Local, misbehave, ServeOptions::default(), &clients)
                .await;
        let url = format!("http://{}", server.addr);
        let keys = Keyring::hmac([7; 32]);
        let first = Group::create(Remote::new(&url, TOKEN_A).unwrap(), GROUP, 0, keys.clone(), Mode::Compatible, None)
            .await
            .unwrap();
        let second = Group::join(Remote::new(&url, TOKEN_B).unwrap(), GROUP, 1, keys, Mode::Compatible);
        let a = vouch_gateway::start_group(&config, Arc::new(first)).await.unwrap();
        let b = vouch_gateway::start_group(&config, Arc::new(second)).await.unwrap();
        Pair { dir, _server: server, a, b }
    }

    /// The provider's directory (its metadata and its object store).
    fn provider_dir(&self) -> PathBuf {
        self.dir.path().join("provider")
    }

    async fn shutdown(self) {
        for gateway in [self.a, self.b] {
            tokio::time::timeout(Duration::from_secs(20), gateway.shutdown()).await.expect("a prompt shutdown");
        }
    }
}

fn endpoint(gateway: &RunningGateway) -> String {
    format!("http://{}", gateway.addr)
}

/// An object_store client of `bucket` through `gateway` (no retries: each answer is the
/// gateway's first).
fn store(gateway: &RunningGateway, bucket: &str) -> AmazonS3 {
    vouch_proto::tls::install_provider();
    AmazonS3Builder::new()
        .with_endpoint(endpoint(gateway))
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name(bucket)
        .with_access_key_id(ACCESS_KEY)
        .with_secret_access_key(SECRET_KEY)
        .with_retry(object_store::RetryConfig { max_retries: 0, ..Default::default() })
        .build()
        .unwrap()
}

/// A request `method` on the raw `path` (`""` the service, `"box"` a bucket, `"box/key"` an
/// object) with `query`, presigned by object_store (which has no call for bucket requests).
async fn raw(
    gateway: &RunningGateway,
    method: Method,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> Answer {
    let url = common::presign(&endpoint(gateway), method.clone(), path, query, Duration::from_secs(300)).await;
    vouch_proto::tls::install_provider();
    let mut request = reqwest::Client::new().request(method, url.as_str());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let violation = response.headers().get(VIOLATION_HEADER).map(|v| v.to_str().unwrap().to_string());
    Answer { status, violation, body: response.text().await.unwrap() }
}

/// Every `<tag>...</tag>` value in `xml`, in order.
fn values(xml: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    xml.split(&open).skip(1).filter_map(|rest| rest.split_once(&close).map(|(v, _)| v.to_string())).collect()
}

async fn listed(store: &AmazonS3, prefix: Option<&str>) -> Vec<String> {
    let prefix = prefix.map(Path::from);
    let mut keys: Vec<String> =
        store.list(prefix.as_ref()).map_ok(|m| m.location.to_string()).try_collect().await.unwrap();
    keys.sort();
    keys
}

/// `result` must be an error whose text names the gateway's violation code.
#[track_caller]
fn assert_violation<T: std::fmt::Debug>(result: object_store::Result<T>, what: &str) {
    match result {
        Err(e) if e.to_string().contains(VIOLATION_CODE) => {}
        other => panic!("{what}: expected {VIOLATION_CODE}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_one_gateway_writes_the_other_reads_lists_copies_and_deletes() {
    let pair = Pair::new(Misbehave::None).await;
    let (a, b) = (&pair.a, &pair.b);

    // Buckets: made through A, there through B.
    assert_eq!(raw(a, Method::PUT, "box", &[], &[]).await.status, 200);
    let again = raw(b, Method::PUT, "box", &[], &[]).await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(values(&again.body, "Code"), ["BucketAlreadyOwnedByYou"]);
    assert_eq!(raw(b, Method::HEAD, "box", &[], &[]).await.status, 200);
    assert_eq!(raw(b, Method::HEAD, "nobox", &[], &[]).await.status, 404);
    assert_eq!(raw(b, Method::PUT, "other", &[], &[]).await.status, 200);
    let buckets = raw(a, Method::GET, "", &[], &[]).await;
    assert_eq!(values(&buckets.body, "Name"), ["box", "other"], "{}", buckets.body);

    // An object of 9 MB (past what the gateways spool in memory: through a temporary file) with
    // a content type and metadata, put through A, read through B.
    let (box_a, box_b) = (store(a, "box"), store(b, "box"));
    let data = sample(9_000_000, 1);
    let attributes = Attributes::from_iter([
        (Attribute::ContentType, "application/x-test"),
        (Attribute::Metadata("colour".into()), "blue"),
    ]);
    let options = PutOptions { attributes: attributes.clone(), ..PutOptions::default() };
    let put = box_a.put_opts(&Path::from("big.bin"), PutPayload::from(data.clone()), options).await.unwrap();
    let etag = put.e_tag.unwrap();
    let got = box_b.get(&Path::from("big.bin")).await.unwrap();
    assert_eq!(got.meta.e_tag.as_deref(), Some(etag.as_str()));
    assert_eq!(got.meta.size, data.len() as u64);
    assert_eq!(got.attributes, attributes);
    assert_eq!(got.bytes().await.unwrap(), data);
    // Ranges: bounded, open, a suffix; and one past the end.
    let part = box_b.get_range(&Path::from("big.bin"), 1_000_000..1_000_100).await.unwrap();
    assert_eq!(&part[..], &data[1_000_000..1_000_100]);
    for (range, want) in [(GetRange::Offset(8_999_950), &data[8_999_950..]), (GetRange::Suffix(70), &data[8_999_930..])]
    {
        let options = GetOptions { range: Some(range.clone()), ..GetOptions::default() };
        let got = box_b.get_opts(&Path::from("big.bin"), options).await.unwrap();
        assert_eq!(&got.bytes().await.unwrap()[..], want, "{range:?}");
    }
    let past = raw(b, Method::GET, "box/big.bin", &[], &[("range", "bytes=9000000-")]).await;
    assert_eq!((past.status, values(&past.body, "Code")), (416, vec!["InvalidRange".to_string()]));
    let head = box_b.head(&Path::from("big.bin")).await.unwrap();
    assert_eq!((head.size, head.e_tag.as_deref()), (data.len() as u64, Some(etag.as_str())));
    assert!(head.last_modified.timestamp() > 1_700_000_000, "the time it was stored: {head:?}");
    assert!(box_b.get(&Path::from("never")).await.is_err_and(|e| matches!(e, object_store::Error::NotFound { .. })));

    // Listings through B: under a prefix, rolled up at a delimiter, page by page.
    for key in ["logs/2024/a", "logs/2024/b", "logs/2025/c", "top"] {
        box_a.put(&Path::from(key), PutPayload::from(key.as_bytes().to_vec())).await.unwrap();
    }
    assert_eq!(listed(&box_b, Some("logs")).await, ["logs/2024/a", "logs/2024/b", "logs/2025/c"]);
    let top = box_b.list_with_delimiter(Some(&Path::from("logs"))).await.unwrap();
    let prefixes: Vec<String> = top.common_prefixes.iter().map(|p| p.to_string()).collect();
    assert_eq!(prefixes, ["logs/2024", "logs/2025"]);
    assert!(top.objects.is_empty());
    let sizes: Vec<(String, u64)> = box_b
        .list(Some(&Path::from("logs/2024")))
        .map_ok(|m| (m.location.to_string(), m.size))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(sizes, [("logs/2024/a".to_string(), 11), ("logs/2024/b".to_string(), 11)]);
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut query = vec![("list-type", "2"), ("max-keys", "2")];
        if let Some(token) = &token {
            query.push(("continuation-token", token.as_str()));
        }
        let page = raw(b, Method::GET, "box", &query, &[]).await;
        assert_eq!(page.status, 200, "{}", page.body);
        pages.push(values(&page.body, "Key"));
        token = values(&page.body, "NextContinuationToken").pop();
        if token.is_none() {
            assert_eq!(values(&page.body, "IsTruncated"), ["false"]);
            break;
        }
    }
    assert_eq!(pages, [vec!["big.bin", "logs/2024/a"], vec!["logs/2024/b", "logs/2025/c"], vec!["top"]]);
    let after = raw(b, Method::GET, "box", &[("list-type", "2"), ("start-after", "logs/2025/c")], &[]).await;
    assert_eq!(values(&after.body, "Key"), ["top"]);

    // Copies through B, within the bucket and to another one; A reads them.
    box_b.copy(&Path::from("big.bin"), &Path::from("copy.bin")).await.unwrap();
    let copied = box_a.get(&Path::from("copy.bin")).await.unwrap();
    assert_eq!((copied.meta.e_tag.as_deref(), &copied.attributes), (Some(etag.as_str()), &attributes));
    assert_eq!(copied.bytes().await.unwrap(), data);
    let across = raw(b, Method::PUT, "other/moved", &[], &[("x-amz-copy-source", "/box/top")]).await;
    assert_eq!(across.status, 200, "{}", across.body);
    assert_eq!(&store(a, "other").get(&Path::from("moved")).await.unwrap().bytes().await.unwrap()[..], b"top");

    // Deletes through B are seen by A; deleting what is not there succeeds.
    box_b.delete(&Path::from("big.bin")).await.unwrap();
    let gone = box_a.get(&Path::from("big.bin")).await;
    assert!(matches!(gone, Err(object_store::Error::NotFound { .. })), "{gone:?}");
    box_b.delete(&Path::from("big.bin")).await.unwrap();
    assert_eq!(listed(&box_a, None).await, ["copy.bin", "logs/2024/a", "logs/2024/b", "logs/2025/c", "top"]);
    let full = raw(a, Method::DELETE, "other", &[], &[]).await;
    assert_eq!((full.status, values(&full.body, "Code")), (409, vec!["BucketNotEmpty".to_string()]));
    store(a, "other").delete(&Path::from("moved")).await.unwrap();
    assert_eq!(raw(a, Method::DELETE, "other", &[], &[]).await.status, 204);
    assert_eq!(raw(b, Method::HEAD, "other", &[], &[]).await.status, 404);
    assert!(store(b, "other").put(&Path::from("x"), PutPayload::from(vec![1])).await.is_err(), "no bucket");

    // What group mode does not serve says so.
    let multipart = raw(a, Method::POST, "box/mp", &[("uploads", "")], &[]).await;
    assert_eq!((multipart.status, values(&multipart.body, "Code")), (501, vec!["NotImplemented".to_string()]));
    for condition in [("if-none-match", "*"), ("if-match", "\"0123456789abcdef0123456789abcdef\"")] {
        let put = raw(a, Method::PUT, "box/conditional", &[], &[condition]).await;
        assert_eq!((put.status, values(&put.body, "Code")), (501, vec!["NotImplemented".to_string()]), "{condition:?}");
    }
    let absent = box_a.head(&Path::from("conditional")).await;
    assert!(matches!(absent, Err(object_store::Error::NotFound { .. })), "refused, not stored: {absent:?}");
    pair.shutdown().await;
}

/// A group gateway takes a body within the configured deadlines, as a client's does: one
/// that trickles is refused in bounded time, holds up no other put, and stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_body_through_a_group_gateway_is_refused_in_bounded_time() {
    // A body may pause 3 s, and must come at 4 KiB/s past its first 3 s.
    let config = vouch_gateway::GatewayConfig { body_idle_timeout_secs: 3, body_min_rate_kib: 4, ..config() };
    let pair = Pair::configured(Misbehave::None, config).await;
    assert_eq!(raw(&pair.a, Method::PUT, "box", &[], &[]).await.status, 200);
    let a = store(&pair.a, "box");
    a.put(&Path::from("k"), PutPayload::from(sample(10_000, 1))).await.unwrap();
    let started = std::time::Instant::now();
    // 1 KiB/s of a 64 KiB body: it would take a minute.
    let url = common::presign(&endpoint(&pair.a), Method::PUT, "box/k", &[], Duration::from_secs(300)).await;
    let slow = common::put_slowly(pair.a.addr, &url, &[], 64 << 10, trickle(64 << 10, 512, Duration::from_millis(500)));
    let other = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        a.put(&Path::from("other"), PutPayload::from(sample(10_000, 2))).await.unwrap();
        started.elapsed()
    };
    let ((status, answer), other_took) = tokio::join!(slow, other);
    let slow_took = started.elapsed();
    assert!(other_took < slow_took.saturating_sub(Duration::from_millis(500)), "{other_took:?} vs {slow_took:?}");
    assert!(answer.contains("RequestTimeout"), "{status} {answer}");
    assert_eq!(status, 400, "{answer}");
    assert!(slow_took < Duration::from_secs(15), "refused only after {slow_took:?}");
    let got = store(&pair.b, "box").get(&Path::from("k")).await.unwrap().bytes().await.unwrap();
    assert_eq!(&got[..], &sample(10_000, 1)[..], "the refused body stored nothing");
    pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_through_both_gateways_at_once_all_land_and_both_gateways_agree() {
    let pair = Pair::new(Misbehave::None).await;
    assert_eq!(raw(&pair.a, Method::PUT, "box", &[], &[]).await.status, 200);
    let (box_a, box_b) = (store(&pair.a, "box"), store(&pair.b, "box"));
    let mut tasks = Vec::new();
    for task in 0..4u64 {
        let store = if task % 2 == 0 { box_a.clone() } else { box_b.clone() };
        tasks.push(tokio::spawn(async move {
            for i in 0..10u64 {
                // Its own key each time, and one of three keys every task writes.
                let own = format!("t{task}/{i}");
                store.put(&Path::from(own.as_str()), PutPayload::from(sample(20_000, task * 100 + i))).await.unwrap();
                let shared = format!("shared/{}", i % 3);
                store.put(&Path::from(shared.as_str()), PutPayload::from(sample(5_000, 1000 + task))).await.unwrap();
            }
        }));
    }
    // Listings through both meanwhile: each aborts while a member's write is pending, and
    // the gateway tries it again; every one it answers names only keys that were written.
    let writing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut listers = Vec::new();
    for store in [box_a.clone(), box_b.clone()] {
        let writing = writing.clone();
        listers.push(tokio::spawn(async move {
            let mut listings = 0;
            while writing.load(std::sync::atomic::Ordering::Relaxed) {
                let keys = listed(&store, None).await;
                assert!(keys.iter().all(|k| k.starts_with('t') || k.starts_with("shared/")), "{keys:?}");
                listings += 1;
            }
            listings
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    writing.store(false, std::sync::atomic::Ordering::Relaxed);
    for lister in listers {
        assert!(lister.await.unwrap() > 0);
    }
    let mut want: Vec<String> = (0..4).flat_map(|t| (0..10).map(move |i| format!("t{t}/{i}"))).collect();
    want.extend((0..3).map(|i| format!("shared/{i}")));
    want.sort();
    assert_eq!(listed(&box_a, None).await, want);
    assert_eq!(listed(&box_b, None).await, want);
    // Each own key holds its bytes, read through the gateway that did not write it; each
    // shared key holds one of the writers' bytes, the same through both.
    for task in 0..4u64 {
        let reader = if task % 2 == 0 { &box_b } else { &box_a };
        for i in [0, 9] {
            let got = reader.get(&Path::from(format!("t{task}/{i}"))).await.unwrap().bytes().await.unwrap();
            assert_eq!(got, sample(20_000, task * 100 + i));
        }
    }
    for i in 0..3 {
        let path = Path::from(format!("shared/{i}"));
        let through_a = box_a.get(&path).await.unwrap().bytes().await.unwrap();
        assert!((0..4).any(|t| through_a == sample(5_000, 1000 + t)), "shared/{i} holds a writer's bytes");
        assert_eq!(box_b.get(&path).await.unwrap().bytes().await.unwrap(), through_a);
    }
    pair.shutdown().await;
}

/// A forked provider: member 1's first operations run on a second history (see
/// `Misbehave::ForkAip`), member 0's on the first. Gateway B serves its fork consistently
/// (fork linearizability allows it) until the forks meet, and then its application gets the
/// violation error, counted in the metrics, not an answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forked_provider_reaches_the_application_as_an_integrity_violation() {
    let pair = Pair::new(Misbehave::ForkAip).await;
    let (a, b) = (&pair.a, &pair.b);
    assert_eq!(raw(a, Method::PUT, "box", &[], &[]).await.status, 200);
    let box_a = store(a, "box");
    box_a.put(&Path::from("a"), PutPayload::from(b"alice's".to_vec())).await.unwrap();

    // B's first three operations are on the fork: no bucket there (a lookup and a put), and
    // then an empty one (a listing).
    assert_eq!(raw(b, Method::PUT, "box", &[], &[]).await.status, 200, "the fork has no box yet");
    let box_b = store(b, "box");
    assert_eq!(listed(&box_b, None).await, Vec::<String>::new(), "B sees its fork");
    // Its fourth runs on A's history, which does not extend B's: caught.
    let read = raw(b, Method::GET, "box/a", &[], &[]).await;
    assert_eq!(read.status, 502, "{}", read.body);
    assert_eq!(values(&read.body, "Code"), [VIOLATION_CODE]);
    assert_eq!(read.violation.as_deref(), Some("bad-aip-answer"));
    assert!(!read.body.contains("alice's"));
    assert_violation(box_b.get(&Path::from("a")).await, "the forks met");
    let metrics = b.metrics.render();
    assert!(metrics.contains("vouch_gateway_verification_failures_total{kind=\"bad-aip-answer\"}"), "{metrics}");
    // A, on the history it always had, goes on.
    assert_eq!(&box_a.get(&Path::from("a")).await.unwrap().bytes().await.unwrap()[..], b"alice's");
    pair.shutdown().await;
}

/// The files in the provider's directory that hold `body` followed by at most an object's
/// metadata (the gateway's stored form of an object with that body).
fn stored_with_body(root: &std::path::Path, body: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let len = std::fs::metadata(&path).unwrap().len();
            if path.is_dir() {
                dirs.push(path);
            } else if len > body.len() as u64
                && len <= (body.len() + vouch_gateway::object::MAX_META + 64) as u64
                && std::fs::read(&path).unwrap().starts_with(body)
            {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_altered_in_the_providers_store_is_caught_through_the_gateway() {
    let pair = Pair::new(Misbehave::None).await;
    let (a, b) = (&pair.a, &pair.b);
    assert_eq!(raw(a, Method::PUT, "box", &[], &[]).await.status, 200);
    let (box_a, box_b) = (store(a, "box"), store(b, "box"));
    let (doc, other) = (sample(100_000, 5), sample(50_000, 6));
    box_a.put(&Path::from("doc"), PutPayload::from(doc.clone())).await.unwrap();
    box_a.put(&Path::from("other"), PutPayload::from(other.clone())).await.unwrap();
    let files = stored_with_body(&pair.provider_dir(), &doc);
    assert_eq!(files.len(), 1, "one stored copy of doc");
    let honest = std::fs::read(&files[0]).unwrap();
    let mut altered = honest.clone();
    altered[40_000] ^= 1;
    std::fs::write(&files[0], &altered).unwrap();

    // Whole, ranged (even a range of untouched bytes: the object is checked whole), its head
    // and a listing that names it: each an integrity error, through either gateway.
    assert_violation(box_b.get(&Path::from("doc")).await, "an altered object");
    assert_violation(box_b.get_range(&Path::from("doc"), 0..10).await, "a range of an altered object");
    // A HEAD answer has no body: the violation is in its status and header.
    let head = raw(a, Method::HEAD, "box/doc", &[], &[]).await;
    assert_eq!((head.status, head.violation.as_deref()), (502, Some("altered-object")));
    assert_violation(box_b.list(None).try_collect::<Vec<_>>().await, "a listing naming an altered object");
    let read = raw(b, Method::GET, "box/doc", &[], &[]).await;
    assert_eq!((read.status, read.violation.as_deref()), (502, Some("altered-object")));
    assert_eq!(values(&read.body, "Code"), [VIOLATION_CODE]);
    assert!(b.metrics.render().contains("vouch_gateway_verification_failures_total{kind=\"altered-object\"}"));
    // An untouched object still reads; put back, so does the altered one.
    assert_eq!(box_b.get(&Path::from("other")).await.unwrap().bytes().await.unwrap(), other);
    std::fs::write(&files[0], &honest).unwrap();
    assert_eq!(box_b.get(&Path::from("doc")).await.unwrap().bytes().await.unwrap(), doc);
    pair.shutdown().await;
}

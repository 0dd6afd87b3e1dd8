//! A lying provider behind the gateway: for each lie, the application (object_store) gets an
//! error carrying the gateway's violation code where the lie is caught, and never a byte, an
//! ETag or a listing other than what it stored.

use crate::common;

use common::{config, sample, Harness};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use vouch_gateway::errors::VIOLATION_CODE;
use vouch_gateway::GatewayConfig;
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;

/// What one application saw: how many answers carried the violation code.
#[derive(Default)]
struct Seen {
    caught: usize,
}

impl Seen {
    /// An operation's error: a caught lie, or an honest failure that is not a lie's disguise
    /// (a provider's lie must never surface as "not found").
    fn error(&mut self, lie: Misbehave, what: &str, e: &object_store::Error) {
        if e.to_string().contains(VIOLATION_CODE) {
            self.caught += 1;
        } else {
            assert!(
                !matches!(e, object_store::Error::NotFound { .. }),
                "{lie}: {what}: a lie passed as not found: {e}"
            );
        }
    }
}

/// What an application sees of `lie` through a gateway with `cache_mb` of cache.
async fn tell(lie: Misbehave, cache_mb: u64) -> Seen {
    let config = GatewayConfig { cache_mb, ..config() };
    let h = Harness::configured(Blocks::Local, lie, &[], config).await;
    let mut seen = Seen::default();
    let empty = std::io::Cursor::new(Vec::new());
    if let Err(e) = h.client.put(&vouch_gateway::names::bucket_name("box"), empty, None, |_| {}).await {
        assert!(e.violation_kind().is_some(), "{lie}: making the bucket: {e}");
        seen.caught += 1;
        return seen;
    }
    let store = h.store("box");
    let (first, second, other) = (sample(3_000_000, 11), sample(9_000_000, 12), sample(1_000_000, 13));
    // What each key holds, as far as the application knows (after each put that succeeded).
    let mut stored: Vec<(&str, &Vec<u8>)> = Vec::new();
    for (key, data) in [("a", &first), ("a", &second), ("b", &other)] {
        match store.put(&Path::from(key), PutPayload::from(data.clone())).await {
            Ok(_) => {
                stored.retain(|(k, _)| *k != key);
                stored.push((key, data));
            }
            Err(e) => seen.error(lie, "put", &e),
        }
    }
    for &(key, data) in &stored {
        match store.get(&Path::from(key)).await {
            Ok(got) => match got.bytes().await {
                Ok(bytes) => assert_eq!(&bytes[..], &data[..], "{lie}: {key} read back otherwise"),
                Err(e) => seen.error(lie, "get's body", &e),
            },
            Err(e) => seen.error(lie, "get", &e),
        }
        match store.get_range(&Path::from(key), 1000..61_000).await {
            Ok(bytes) => assert_eq!(&bytes[..], &data[1000..61_000], "{lie}: a range of {key} read back otherwise"),
            Err(e) => seen.error(lie, "get_range", &e),
        }
        match store.head(&Path::from(key)).await {
            Ok(meta) => assert_eq!(meta.size, data.len() as u64, "{lie}: {key}'s size"),
            Err(e) => seen.error(lie, "head", &e),
        }
    }
    match store.list(None).try_collect::<Vec<_>>().await {
        Ok(listed) => {
            let mut keys: Vec<String> = listed.iter().map(|m| m.location.to_string()).collect();
            keys.sort();
            let mut want: Vec<String> = stored.iter().map(|(k, _)| k.to_string()).collect();
            want.sort();
            assert_eq!(keys, want, "{lie}: the listing");
        }
        Err(e) => seen.error(lie, "list", &e),
    }
    seen
}

/// The lies about data and the namespace the gateway's operations meet (the others concern
/// calls it does not make: audits, syncs, PoR).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_lie_behind_the_gateway_reaches_the_application_as_an_error() {
    use Misbehave::*;
    for lie in [
        CorruptBlock,
        DropBlock,
        SwapBlocks,
        Rollback,
        OldVersion,
        HideFile,
        TruncateStream,
        StretchBlock,
        PastRange,
        WrongCount,
    ] {
        // No cache: every answer is the provider's, and each lie is caught.
        let seen = tell(lie, 0).await;
        assert!(seen.caught > 0, "{lie}: never caught");
        // The portal's cache (its writes kept): a lie is caught or never consulted; either
        // way no altered byte reaches the application (`tell` checks every answer).
        tell(lie, 256).await;
    }
    // An honest provider: nothing is caught, and everything reads back.
    assert_eq!(tell(Misbehave::None, 0).await.caught, 0);
    assert_eq!(tell(Misbehave::None, 256).await.caught, 0);
}

/// Lies caught after a body's first read ([`READ_CHUNK`]: 4 MiB), once a GetObject's headers
/// went out or a copy began to store its target: the provider serves every block altered
/// (`CorruptBlock`), and the portal's cache holds the first 4 MiB of the object `a` (and the
/// first part of the upload in `upload`, with its record), but not what follows, so the first
/// read verifies and the next is the provider's lie.
const READ_CHUNK: u64 = 4 << 20;

/// A gateway over a provider that alters every block it serves, with `a` (5.5 MB) and a
/// multipart upload of `m` (part 1 of 1 MB, then part 2 of 5.5 MB) stored, arranged in its
/// cache as [`READ_CHUNK`] says; the upload's id and its parts' ETags.
async fn lying_after_the_first_chunk() -> (Harness, String, [String; 2]) {
    // 24 MiB of cache: a written version of up to 6 MiB is kept whole.
    let config = GatewayConfig { cache_mb: 24, ..config() };
    let h = Harness::configured(Blocks::Local, Misbehave::CorruptBlock, &["box"], config).await;
    let store = h.store("box");
    store.put(&Path::from("a"), PutPayload::from(sample(5_500_000, 1))).await.unwrap();
    let made = h.raw(reqwest::Method::POST, "box/m", &[("uploads", "")], &[]).await;
    let id = between(&made.body, "<UploadId>", "</UploadId>");
    // The upload's record is read by name alone, which finds its blocks in the cache only
    // once its lookup is there too: a lookup (honest, from this lying provider) puts it there.
    h.client.version(&format!("s3u/{id}"), None).await.unwrap();
    // Part 2 first: its blocks are the older, evicted before part 1's.
    let mut etags = [String::new(), String::new()];
    for (number, len) in [(2, 5_500_000), (1, 1_000_000)] {
        let query = [("partNumber", &*number.to_string()), ("uploadId", &*id)];
        let body = sample(len, 10 + number as u64);
        let part = h.raw_with(reqwest::Method::PUT, "box/m", &query, &[], body).await;
        assert_eq!(part.status, 200, "part {number}: {}", part.body);
        etags[number - 1] = part.header("etag").to_string();
    }
    // Reads name a version by number; that lookup too must be in the cache for its blocks to
    // be read from there.
    let a = vouch_gateway::names::object_name("box", "a").unwrap();
    for name in [a, format!("s3p/{id}/00001"), format!("s3p/{id}/00002")] {
        h.client.version(&name, Some(1)).await.unwrap();
    }
    // The metadata of `a` and of the parts, read (from the cache) and kept by the gateway.
    let listed = h.raw(reqwest::Method::GET, "box/m", &[("uploadId", &*id)], &[]).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    store.head(&Path::from("a")).await.unwrap();
    // The first 4 MiB of `a` used last: the rest of `a`, then part 2, are evicted first.
    let head = store.get_range(&Path::from("a"), 0..READ_CHUNK).await.unwrap();
    assert_eq!(&head[..], &sample(5_500_000, 1)[..READ_CHUNK as usize]);
    for i in 0..3 {
        store.put(&Path::from(format!("filler{i}")), PutPayload::from(sample(5_500_000, 20 + i))).await.unwrap();
    }
    (h, id, etags)
}

/// The text between `from` and `to` in `text`.
fn between(text: &str, from: &str, to: &str) -> String {
    text.split_once(from).and_then(|(_, rest)| rest.split_once(to)).map(|(v, _)| v.to_string()).unwrap_or_default()
}

/// The violations the gateway counted, all kinds.
fn violations(h: &Harness) -> u64 {
    let text = h.gateway.as_ref().unwrap().metrics.render();
    text.lines()
        .filter(|l| l.starts_with("vouch_gateway_verification_failures_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Waits (a little) for the violations counted to reach `want`; then they must be `want`.
async fn counted(h: &Harness, want: u64) {
    for _ in 0..100 {
        if violations(h) >= want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // A moment more: a lie counted twice would show now.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(violations(h), want, "{}", h.gateway.as_ref().unwrap().metrics.render());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_lied_to_after_its_headers_went_out_breaks_off_and_is_counted() {
    let (h, _, _) = lying_after_the_first_chunk().await;
    let before = violations(&h);
    let store = h.store("box");
    // The headers (200, Content-Length) went out with the first 4 MiB; the lie after them can
    // only break the transfer off: the application never gets the whole body.
    let got = store.get(&Path::from("a")).await.unwrap();
    assert!(got.bytes().await.is_err(), "a body with a lie in it read in full");
    counted(&h, before + 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_ahead_lied_to_is_counted() {
    let (h, _, _) = lying_after_the_first_chunk().await;
    let before = violations(&h);
    let store = h.store("box");
    let data = sample(5_500_000, 1);
    // Two ranges in a row, both in the cache: the stretch after them is read ahead, from the
    // provider, which lies; no application sees that read, and still the lie is counted.
    let (mid, end) = (READ_CHUNK - (1 << 20), READ_CHUNK - (1 << 19));
    assert_eq!(store.get_range(&Path::from("a"), mid..end).await.unwrap(), &data[mid as usize..end as usize]);
    let last = store.get_range(&Path::from("a"), end..READ_CHUNK).await.unwrap();
    assert_eq!(last, &data[end as usize..READ_CHUNK as usize]);
    counted(&h, before + 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_whose_source_lies_after_its_first_chunk_is_a_violation_not_an_incomplete_body() {
    let (h, _, _) = lying_after_the_first_chunk().await;
    let before = violations(&h);
    let copied = h.raw(reqwest::Method::PUT, "box/a2", &[], &[("x-amz-copy-source", "/box/a")]).await;
    assert_eq!((copied.status, copied.code()), (502, VIOLATION_CODE), "{}", copied.body);
    assert!(!copied.header("x-vouch-violation").is_empty());
    counted(&h, before + 1).await;
    let missing = h.store("box").head(&Path::from("a2")).await;
    assert!(matches!(missing, Err(object_store::Error::NotFound { .. })), "a copy of a lie was stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_upload_whose_part_lies_after_its_first_chunk_is_a_violation_not_an_incomplete_body() {
    let (h, id, etags) = lying_after_the_first_chunk().await;
    let before = violations(&h);
    let parts: String = etags
        .iter()
        .enumerate()
        .map(|(i, etag)| format!("<Part><PartNumber>{}</PartNumber><ETag>{etag}</ETag></Part>", i + 1))
        .collect();
    let xml = format!("<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>").into_bytes();
    let done = h.raw_with(reqwest::Method::POST, "box/m", &[("uploadId", &*id)], &[], xml).await;
    assert_eq!((done.status, done.code()), (502, VIOLATION_CODE), "{}", done.body);
    counted(&h, before + 1).await;
    let missing = h.store("box").head(&Path::from("m")).await;
    assert!(matches!(missing, Err(object_store::Error::NotFound { .. })), "an upload with a lie was stored");
}

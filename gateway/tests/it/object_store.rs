//! An unchanged S3 application (the `object_store` crate) against the gateway: every
//! operation it makes, the errors it must see, and a lying provider it is kept from.

use crate::common;

use common::{config, sample, Harness};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use vouch_gateway::GatewayConfig;
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_put_read_back_whole_and_in_ranges_and_go_away() {
    let at_once = GatewayConfig { keep_replaced_secs: 0, ..config() };
    let h = Harness::configured(Blocks::Local, Misbehave::None, &["photos"], at_once).await;
    let store = h.store("photos");
    let data = sample(3_000_000, 1);
    let put = store.put(&Path::from("2024/a.bin"), PutPayload::from(data.clone())).await.unwrap();
    let etag = put.e_tag.clone().unwrap();
    assert_eq!(etag.trim_matches('"').len(), 32, "an MD5 ETag: {etag}");

    let got = store.get(&Path::from("2024/a.bin")).await.unwrap();
    assert_eq!(got.meta.size, data.len() as u64);
    assert_eq!(got.meta.e_tag.as_deref(), Some(etag.as_str()));
    assert_eq!(got.bytes().await.unwrap(), data);
    let part = store.get_range(&Path::from("2024/a.bin"), 1_000_000..1_000_100).await.unwrap();
    assert_eq!(&part[..], &data[1_000_000..1_000_100]);
    let head = store.head(&Path::from("2024/a.bin")).await.unwrap();
    assert_eq!((head.size, head.e_tag.as_deref()), (data.len() as u64, Some(etag.as_str())));

    // An overwrite is read back, and replaces the object (no older version is kept); an
    // empty object reads back too.
    store.put(&Path::from("2024/a.bin"), PutPayload::from(b"second".to_vec())).await.unwrap();
    let got = store.get(&Path::from("2024/a.bin")).await.unwrap().bytes().await.unwrap();
    assert_eq!(&got[..], b"second");
    let name = vouch_gateway::names::object_name("photos", "2024/a.bin").unwrap();
    assert_eq!(h.client.log(&name).await.unwrap().len(), 1, "the first version was pruned");
    store.put(&Path::from("empty"), PutPayload::from(Vec::<u8>::new())).await.unwrap();
    assert!(store.get(&Path::from("empty")).await.unwrap().bytes().await.unwrap().is_empty());

    store.delete(&Path::from("2024/a.bin")).await.unwrap();
    let gone = store.get(&Path::from("2024/a.bin")).await;
    assert!(matches!(gone, Err(object_store::Error::NotFound { .. })), "{gone:?}");
    // Deleting what is not there succeeds, as in S3.
    store.delete(&Path::from("never")).await.unwrap();
    // A bucket that does not exist.
    let other = h.store("nobucket").get(&Path::from("x")).await;
    assert!(other.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_page_and_roll_up_common_prefixes() {
    let h = Harness::new(&["logs", "other"]).await;
    let store = h.store("logs");
    let mut names = Vec::new();
    for i in 0..2100u32 {
        let name = format!("day-{}/part-{i:04}", i % 3);
        names.push(name);
    }
    names.push("top.txt".into());
    // Sixteen at a time, as an application filling a bucket would (one at a time took a
    // minute of the test command).
    futures::stream::iter(&names)
        .map(|name| {
            let store = &store;
            async move { store.put(&Path::from(name.as_str()), PutPayload::from(name.as_bytes().to_vec())).await }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    h.store("other").put(&Path::from("day-0/elsewhere"), PutPayload::from(vec![1])).await.unwrap();
    // Thousands of keys, three pages (of 1000): object_store follows the continuation tokens.
    let mut listed: Vec<String> = store.list(None).map_ok(|m| m.location.to_string()).try_collect().await.unwrap();
    listed.sort();
    names.sort();
    assert_eq!(listed, names);
    let under: Vec<_> = store.list(Some(&Path::from("day-1"))).try_collect().await.unwrap();
    assert_eq!(under.len(), 700);
    assert!(under.iter().all(|m| m.size == m.location.as_ref().len() as u64));
    let top = store.list_with_delimiter(None).await.unwrap();
    let prefixes: Vec<String> = top.common_prefixes.iter().map(|p| p.to_string()).collect();
    assert_eq!(prefixes, ["day-0", "day-1", "day-2"]);
    assert_eq!(top.objects.iter().map(|o| o.location.to_string()).collect::<Vec<_>>(), ["top.txt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_and_conditional_puts_follow_s3() {
    let h = Harness::new(&["box"]).await;
    let store = h.store("box");
    let data = sample(100_000, 2);
    store.put(&Path::from("src"), PutPayload::from(data.clone())).await.unwrap();
    store.copy(&Path::from("src"), &Path::from("dst")).await.unwrap();
    assert_eq!(store.get(&Path::from("dst")).await.unwrap().bytes().await.unwrap(), data);

    // Create only if absent (If-None-Match: *).
    let create = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
    let again = store.put_opts(&Path::from("src"), PutPayload::from(vec![1]), create.clone()).await;
    assert!(matches!(again, Err(object_store::Error::AlreadyExists { .. })), "{again:?}");
    store.put_opts(&Path::from("fresh"), PutPayload::from(vec![2]), create).await.unwrap();
    // Update only the version read (If-Match).
    let seen = store.head(&Path::from("fresh")).await.unwrap();
    let update = |e_tag: Option<String>| PutOptions {
        mode: PutMode::Update(UpdateVersion { e_tag, version: None }),
        ..PutOptions::default()
    };
    store.put_opts(&Path::from("fresh"), PutPayload::from(vec![3]), update(seen.e_tag.clone())).await.unwrap();
    let stale = store.put_opts(&Path::from("fresh"), PutPayload::from(vec![4]), update(seen.e_tag)).await;
    assert!(matches!(stale, Err(object_store::Error::Precondition { .. })), "{stale:?}");
    assert_eq!(&store.get(&Path::from("fresh")).await.unwrap().bytes().await.unwrap()[..], &[3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_signed_with_another_secret_is_refused() {
    let h = Harness::new(&["box"]).await;
    let wrong = h.store_with("box", "not-the-secret");
    let refused = wrong.put(&Path::from("x"), PutPayload::from(vec![1])).await;
    assert!(refused.as_ref().is_err_and(|e| e.to_string().contains("SignatureDoesNotMatch")), "{refused:?}");
    assert!(h.store("box").head(&Path::from("x")).await.is_err(), "nothing was stored");
}

/// A provider that flips a byte of each block it serves: the application gets an error with
/// the gateway's violation code, never the altered bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_altered_object_reaches_the_application_as_an_integrity_error() {
    let h = Harness::lying(Misbehave::CorruptBlock, &["box"]).await;
    let store = h.store("box");
    store.put(&Path::from("x"), PutPayload::from(sample(50_000, 3))).await.unwrap();
    let read = store.get(&Path::from("x")).await;
    let Err(e) = read else { panic!("an altered object is never served") };
    assert!(e.to_string().contains(vouch_gateway::errors::VIOLATION_CODE), "{e}");
}

/// The gateway stopped and started again over the same client state: every object, and an
/// upload begun before, are still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_restart_keeps_everything() {
    let mut h = Harness::new(&["keep"]).await;
    let store = h.store("keep");
    let data = sample(200_000, 4);
    store.put(&Path::from("x"), PutPayload::from(data.clone())).await.unwrap();
    let mut upload = store.put_multipart(&Path::from("multi")).await.unwrap();
    upload.put_part(PutPayload::from(sample(6 << 20, 5))).await.unwrap();
    h.restart_gateway().await;
    let store = h.store("keep");
    assert_eq!(store.get(&Path::from("x")).await.unwrap().bytes().await.unwrap(), data);
    let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
    assert_eq!(listed.len(), 1, "the upload is no object until it completes");
    // The upload's part went to the gateway before the restart; object_store's handle still
    // holds its id and ETag, and completes it through the new gateway.
    upload.put_part(PutPayload::from(sample(1000, 6))).await.unwrap();
    upload.complete().await.unwrap();
    let multi = store.get(&Path::from("multi")).await.unwrap().bytes().await.unwrap();
    assert_eq!(multi.len(), (6 << 20) + 1000);
    assert_eq!(&multi[..6 << 20], &sample(6 << 20, 5)[..]);
}

/// A long read that began before an overwrite still ends with the bytes it began with: the
/// replaced version stays readable a while (`keep_replaced_secs`) before it is pruned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_in_flight_outlives_an_overwrite() {
    let h = Harness::new(&["box"]).await;
    let store = h.store("box");
    let (old, new) = (sample(20_000_000, 31), sample(1_000, 32));
    store.put(&Path::from("k"), PutPayload::from(old.clone())).await.unwrap();
    let mut body = store.get(&Path::from("k")).await.unwrap().into_stream();
    let mut got = body.try_next().await.unwrap().unwrap().to_vec();
    store.put(&Path::from("k"), PutPayload::from(new.clone())).await.unwrap();
    while let Some(chunk) = body.try_next().await.unwrap() {
        got.extend_from_slice(&chunk);
    }
    assert!(got == old, "the read in flight ends with the version it began with");
    assert_eq!(store.get(&Path::from("k")).await.unwrap().bytes().await.unwrap(), new);
    let name = vouch_gateway::names::object_name("box", "k").unwrap();
    assert_eq!(h.client.log(&name).await.unwrap().len(), 2, "the replaced version is kept for now");
}

/// A prune waiting at shutdown is dropped, not left to run beside the next gateway's client:
/// the restarted gateway finds the provider where its state says, and no honest answer looks
/// like a lie.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_while_a_prune_waits_leaves_nothing_behind() {
    let soon = GatewayConfig { keep_replaced_secs: 1, ..config() };
    let mut h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], soon).await;
    let store = h.store("box");
    store.put(&Path::from("k"), PutPayload::from(b"first".to_vec())).await.unwrap();
    store.put(&Path::from("k"), PutPayload::from(b"second".to_vec())).await.unwrap();
    h.restart_gateway().await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let name = vouch_gateway::names::object_name("box", "k").unwrap();
    assert_eq!(h.client.log(&name).await.unwrap().len(), 2, "the old gateway's prune did not run");
    assert_eq!(&store.get(&Path::from("k")).await.unwrap().bytes().await.unwrap()[..], b"second");
    store.put(&Path::from("k"), PutPayload::from(b"third".to_vec())).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(h.client.log(&name).await.unwrap().len(), 1, "the next overwrite prunes what was left");
}

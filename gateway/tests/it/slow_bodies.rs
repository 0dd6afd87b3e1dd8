//! Bodies that arrive slowly, and puts that race: a put's body is read whole before any lock
//! is taken, within deadlines, so a body that trickles is refused in bounded time and holds
//! up no other put of its key meanwhile (nor, with PoR, any put at all); and a conditional
//! put commits only over the state its condition was checked on.

use crate::common;

use common::{config, sample, trickle, Harness};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use std::time::{Duration, Instant};
use vouch_gateway::GatewayConfig;
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;

/// A PUT of `path` (presigned) through the harness's gateway, its body sent as `body` says.
async fn put_slowly(
    h: &Harness,
    path: &str,
    headers: &[(&str, &str)],
    len: usize,
    body: tokio::sync::mpsc::Receiver<(Duration, Vec<u8>)>,
) -> (u16, String) {
    let url = h.presigned(reqwest::Method::PUT, path, &[], Duration::from_secs(300)).await;
    common::put_slowly(h.gateway.as_ref().unwrap().addr, &url, headers, len, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_body_is_refused_in_bounded_time_and_holds_up_no_put_of_its_key() {
    for por in [false, true] {
        // A body may pause 3 s, and must come at 4 KiB/s past its first 3 s.
        let config = GatewayConfig { por, body_idle_timeout_secs: 3, body_min_rate_kib: 4, ..config() };
        let h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], config).await;
        let store = h.store("box");
        // 1 KiB/s of a 64 KiB body: it would take a minute.
        let started = Instant::now();
        let slow = {
            let (h, body) = (&h, trickle(64 << 10, 512, Duration::from_millis(500)));
            async move { put_slowly(h, "box/k", &[], 64 << 10, body).await }
        };
        let others = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            // Another put of the same key, and one of another key, while the body trickles:
            // neither waits for it.
            store.put(&Path::from("k"), PutPayload::from(sample(10_000, 1))).await.unwrap();
            store.put(&Path::from("other"), PutPayload::from(sample(10_000, 2))).await.unwrap();
            started.elapsed()
        };
        let ((status, answer), others_took) = tokio::join!(slow, others);
        let slow_took = started.elapsed();
        assert!(
            others_took < slow_took.saturating_sub(Duration::from_millis(500)),
            "por = {por}: the other puts ({others_took:?}) waited for the trickling body ({slow_took:?})"
        );
        assert!(answer.contains("RequestTimeout"), "por = {por}: {status} {answer}");
        assert_eq!(status, 400, "por = {por}: {answer}");
        assert!(slow_took < Duration::from_secs(15), "por = {por}: refused only after {slow_took:?}");
        let got = store.get(&Path::from("k")).await.unwrap().bytes().await.unwrap();
        assert_eq!(&got[..], &sample(10_000, 1)[..], "por = {por}: the refused body stored nothing");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_put_over_a_key_changed_while_its_body_arrived_is_refused() {
    for por in [false, true] {
        let config = GatewayConfig { por, body_idle_timeout_secs: 30, body_min_rate_kib: 1, ..config() };
        let h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], config).await;
        let store = h.store("box");
        store.put(&Path::from("k"), PutPayload::from(sample(10_000, 1))).await.unwrap();
        let etag = store.head(&Path::from("k")).await.unwrap().e_tag.unwrap();
        // If-Match the version there now: the condition holds when it is checked (before the
        // body); the body's second half waits until an unconditional put has replaced it.
        let (tx, body) = tokio::sync::mpsc::channel(2);
        tx.send((Duration::ZERO, sample(1000, 3))).await.unwrap();
        let conditional = {
            let (h, etag) = (&h, etag.clone());
            async move { put_slowly(h, "box/k", &[("if-match", &etag)], 2000, body).await }
        };
        let unconditional = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            store.put(&Path::from("k"), PutPayload::from(sample(10_000, 2))).await.unwrap();
            tx.send((Duration::ZERO, sample(1000, 4))).await.unwrap();
        };
        let ((status, answer), ()) = tokio::join!(conditional, unconditional);
        assert_eq!(status, 412, "por = {por}: {answer}");
        assert!(answer.contains("PreconditionFailed"), "por = {por}: {answer}");
        let got = store.get(&Path::from("k")).await.unwrap().bytes().await.unwrap();
        assert_eq!(&got[..], &sample(10_000, 2)[..], "por = {por}: the unconditional put was overwritten");
        // Over the state it names, a conditional put lands.
        let etag = store.head(&Path::from("k")).await.unwrap().e_tag.unwrap();
        let (tx, body) = tokio::sync::mpsc::channel(1);
        tx.send((Duration::ZERO, sample(2000, 5))).await.unwrap();
        drop(tx);
        let (status, answer) = put_slowly(&h, "box/k", &[("if-match", &etag)], 2000, body).await;
        assert_eq!(status, 200, "por = {por}: {answer}");
        let got = store.get(&Path::from("k")).await.unwrap().bytes().await.unwrap();
        assert_eq!(&got[..], &sample(2000, 5)[..]);
    }
}

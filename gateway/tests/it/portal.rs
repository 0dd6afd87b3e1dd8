//! The portal's own parts (Iris Sec. 7.2): its cache serves what it verified with the provider
//! gone, it reads ahead of sequential ranged reads, its background audits report (and repair
//! past their threshold), and `/metrics` counts it all.

use crate::common;

use common::{config, sample, Harness};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use vouch_gateway::audit::AuditRound;
use vouch_gateway::errors::VIOLATION_CODE;
use vouch_gateway::{AuditConfig, GatewayConfig};
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;

/// `GET path` on `addr`, the whole answer (status line, headers and body).
async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

/// The value of the metric line that starts with `series` (name and labels).
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

fn audited(reports: Option<std::path::PathBuf>) -> AuditConfig {
    AuditConfig { every_secs: 1, objects: 100, blocks: 460, por_lambda: 16, repair_threshold: 1, reports }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_cache_serves_gets_heads_and_listings_with_the_provider_gone() {
    // 4 MiB: a version written is kept when it is 1 MiB at most.
    let small = GatewayConfig { cache_mb: 4, ..config() };
    let mut h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], small).await;
    let store = h.store("box");
    let (data, other) = (sample(2_000_000, 1), sample(1_500_000, 2));
    store.put(&Path::from("k"), PutPayload::from(data.clone())).await.unwrap();
    store.put(&Path::from("other"), PutPayload::from(other.clone())).await.unwrap();
    assert_eq!(store.get(&Path::from("k")).await.unwrap().bytes().await.unwrap(), data);
    let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
    assert_eq!(listed.len(), 2);

    h.server.take().unwrap().shutdown().await.unwrap();
    assert_eq!(store.get(&Path::from("k")).await.unwrap().bytes().await.unwrap(), data, "hot");
    assert_eq!(&store.get_range(&Path::from("k"), 100..200_000).await.unwrap()[..], &data[100..200_000]);
    assert_eq!(store.head(&Path::from("k")).await.unwrap().size, data.len() as u64);
    let again: Vec<_> = store.list(None).try_collect().await.unwrap();
    assert_eq!(again, listed);
    // Only its tail was read (for the listing's size and ETag): its body needs the provider.
    let cold = store.get(&Path::from("other")).await;
    let cold = match cold {
        Ok(got) => got.bytes().await.map(|b| b.to_vec()),
        Err(e) => Err(e),
    };
    assert!(cold.is_err(), "served without a verified source");
    assert!(h.client.cache().stats().hits > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_ranged_read_has_the_next_stretch_fetched_ahead() {
    let mut h = Harness::new(&["box"]).await;
    let store = h.store("box");
    let data = sample(3_000_000, 3);
    store.put(&Path::from("seq"), PutPayload::from(data.clone())).await.unwrap();
    let path = Path::from("seq");
    assert_eq!(&store.get_range(&path, 0..1_000_000).await.unwrap()[..], &data[..1_000_000]);
    let before = h.client.cache().stats().bytes;
    assert_eq!(&store.get_range(&path, 1_000_000..2_000_000).await.unwrap()[..], &data[1_000_000..2_000_000]);
    // The read ahead of 2_000_000..3_000_000 runs in the background.
    for _ in 0..100 {
        if h.client.cache().stats().bytes >= before + 1_900_000 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    h.server.take().unwrap().shutdown().await.unwrap();
    let ahead = store.get_range(&path, 2_000_000..3_000_000).await.unwrap();
    assert_eq!(&ahead[..], &data[2_000_000..3_000_000], "read ahead, verified, served from the cache");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_latency_violations_and_the_cache() {
    // No cache: every read meets the lie.
    let config = GatewayConfig { metrics_listen: Some("127.0.0.1:0".into()), cache_mb: 0, ..config() };
    let h = Harness::configured(Blocks::Local, Misbehave::CorruptBlock, &["box"], config).await;
    let store = h.store("box");
    store.put(&Path::from("k"), PutPayload::from(sample(100_000, 4))).await.unwrap();
    let Err(e) = store.get(&Path::from("k")).await else { panic!("a corrupt block is caught") };
    assert!(e.to_string().contains(VIOLATION_CODE), "{e}");
    assert!(store.head(&Path::from("k")).await.is_err(), "its metadata is read through the same lie");

    let addr = h.gateway.as_ref().unwrap().metrics_addr.unwrap();
    let text = http_get(addr, "/metrics").await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert_eq!(metric(&text, "vouch_gateway_verification_failures_total{kind=\"altered-block\"}"), Some(2.0));
    assert_eq!(metric(&text, "vouch_gateway_requests_total{method=\"PUT\",status=\"200\"}"), Some(1.0));
    assert_eq!(metric(&text, "vouch_gateway_requests_total{method=\"GET\",status=\"502\"}"), Some(1.0));
    assert_eq!(metric(&text, "vouch_gateway_requests_total{method=\"HEAD\",status=\"502\"}"), Some(1.0));
    assert_eq!(metric(&text, "vouch_gateway_request_seconds_count{method=\"HEAD\"}"), Some(1.0));
    assert_eq!(metric(&text, "vouch_gateway_cache_hits_total"), Some(0.0));
    assert!(metric(&text, "vouch_gateway_cache_misses_total").unwrap() >= 3.0, "{text}");
    assert_eq!(metric(&text, "vouch_gateway_cache_capacity_bytes"), Some(0.0));
    assert!(http_get(addr, "/other").await.starts_with("HTTP/1.1 404"));
    // The status page, on the same listener, for people: the failures by kind.
    for path in ["/", "/status"] {
        let page = http_get(addr, path).await;
        assert!(page.starts_with("HTTP/1.1 200") && page.contains("text/html"), "{page}");
        assert!(page.contains("<td>altered-block</td><td>2</td>"), "{page}");
        assert!(page.contains("2 answers of the provider failed verification"), "{page}");
        assert!(page.contains("<svg id=\"hit-rate\"") && page.contains("Audit rounds"), "{page}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_audits_write_a_report_each_round() {
    let reports = tempfile::tempdir().unwrap();
    let config = GatewayConfig { por: true, audit: Some(audited(Some(reports.path().into()))), ..config() };
    let h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], config).await;
    let store = h.store("box");
    for key in ["a", "b", "c"] {
        store.put(&Path::from(key), PutPayload::from(sample(200_000, key.len() as u64))).await.unwrap();
    }
    // Rounds start every second; wait for one that saw all three objects.
    let mut round = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut names: Vec<_> = std::fs::read_dir(reports.path()).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        let Some(last) = names.last() else { continue };
        let Ok(report) = serde_json::from_slice::<serde_json::Value>(&std::fs::read(last).unwrap()) else { continue };
        if report["possession"].as_array().unwrap().len() == 3 {
            round = Some(report);
            break;
        }
    }
    let round = round.expect("a round's report");
    assert_eq!(round["failures"], 0, "{round}");
    assert!(round["possession"].as_array().unwrap().iter().all(|o| o["outcome"] == "passed"), "{round}");
    assert_eq!(round["retrievability"]["verified"], true, "{round}");
    assert_eq!(round["repairs"].as_array().unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_round_counts_a_lost_block_and_repairs_past_the_threshold() {
    // Possession: a provider that serves altered blocks fails each object's challenge.
    let h = Harness::lying(Misbehave::CorruptBlock, &["box"]).await;
    let store = h.store("box");
    store.put(&Path::from("a"), PutPayload::from(sample(100_000, 5))).await.unwrap();
    let metrics = &h.gateway.as_ref().unwrap().metrics;
    let round: AuditRound = vouch_gateway::audit::round(&h.client, &audited(None), metrics).await;
    assert_eq!((round.failures, round.possession.len()), (1, 1));
    assert_eq!(round.possession[0].outcome, "failed");
    assert!(round.retrievability.is_none(), "no PoR log, no PoR audit");
    assert!(metrics.render().contains("vouch_gateway_audits_total{kind=\"pdp\",result=\"failed\"} 1"));

    // Retrievability: the provider's copy of C is lost (its bytes overwritten in the store);
    // under the threshold the round only reports, at it the round repairs: C is encoded
    // again from U, and the next round passes.
    let config = GatewayConfig { por: true, ..config() };
    let mut h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], config).await;
    let store = h.store("box");
    let data = sample(100_000, 6);
    store.put(&Path::from("a"), PutPayload::from(data.clone())).await.unwrap();
    h.restart_provider(async |blobs| assert!(lose_coded(blobs).await > 0)).await;
    let metrics = h.gateway.as_ref().unwrap().metrics.clone();
    let high = AuditConfig { repair_threshold: 1000, ..audited(None) };
    let round = vouch_gateway::audit::round(&h.client, &high, &metrics).await;
    let por = round.retrievability.as_ref().unwrap();
    assert!(!por.verified && round.failures >= 1, "{round:?}");
    assert!(round.repairs.is_empty(), "under the threshold: no repair");
    let round = vouch_gateway::audit::round(&h.client, &audited(None), &metrics).await;
    assert_eq!(round.repairs.len(), 1, "{round:?}");
    assert!(round.repairs[0].problem.is_none(), "{round:?}");
    let round = vouch_gateway::audit::round(&h.client, &audited(None), &metrics).await;
    assert_eq!(round.failures, 0, "repaired: {round:?}");
    assert_eq!(store.get(&Path::from("a")).await.unwrap().bytes().await.unwrap(), data);
    // The status page shows the three rounds, newest first, and the repair.
    let page = metrics.status_page();
    assert!(page.contains("3 rounds shown") && page.contains("1 repairs made"), "{page}");
    let rows: Vec<&str> = page.split("<tr><td>").skip(1).map(|row| row.split("</tr>").next().unwrap()).collect();
    assert_eq!(rows.len(), 3, "{page}");
    assert!(rows[0].contains("passed") && rows[2].contains("failed"), "{rows:?}");
    assert!(rows[1].contains("<td>1</td><td><span class=\"bad\">"), "the round that repaired: {rows:?}");
}

/// Every object of C in the provider's blob store overwritten with bytes that are no field
/// elements (so the provider finds them lost); how many.
async fn lose_coded(blobs: &vouch_store::ObjectBlobs) -> usize {
    use vouch_store::BlobStore;
    let mut lost = 0;
    for key in blobs.list("por").await.unwrap() {
        let Some((folder, file)) = key.rsplit_once('/') else { continue };
        if file.starts_with("slots-") && folder.rsplit('/').next().unwrap_or_default().starts_with("coded-") {
            let len = blobs.get(&key).await.unwrap().len();
            blobs.put(&key, vec![0xff; len].into()).await.unwrap();
            lost += 1;
        }
    }
    lost
}

//! Many applications at once through one gateway (one client, one root): 100 object_store
//! clients each run a mixed workload (puts, whole and ranged gets, heads, listings, copies,
//! deletes) on keys of their own and on keys they all share, for half a minute in the test
//! command and as long as `VOUCH_SOAK_SECS` says in a soak (`VOUCH_SOAK_SECS=1800 cargo test
//! -p vouch-gateway --test it concurrency`), and none sees an error or a byte it should not:
//! not a stale one from the portal's cache either.

use crate::common;

use common::{sample, Harness};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

const CLIENTS: u64 = 100;
const SHARED: u64 = 4;

/// How long the workload runs: long enough in the test command for every client to go
/// through its mix of operations many times (it ran 180 s there, a sixth of CI's budget).
fn soak() -> std::time::Duration {
    let secs = std::env::var("VOUCH_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    std::time::Duration::from_secs(secs)
}

/// The bytes writer `writer` puts in round `round` (any reader can tell whose they are).
fn payload(writer: u64, round: u64) -> Vec<u8> {
    let mut bytes = format!("{writer}:{round}:").into_bytes();
    bytes.extend(sample(10_000, writer * 1000 + round));
    bytes
}

/// Whether `bytes` are exactly one writer's payload of some round.
fn is_a_payload(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(24)]).to_string();
    let mut parts = text.splitn(3, ':');
    let (Some(writer), Some(round)) = (parts.next(), parts.next()) else { return false };
    match (writer.parse(), round.parse()) {
        (Ok(w), Ok(r)) => bytes == payload(w, r),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_clients_at_once_see_no_error_and_no_foreign_or_stale_byte() {
    let h = Harness::new(&["busy"]).await;
    let deadline = std::time::Instant::now() + soak();
    let mut tasks = Vec::new();
    for writer in 0..CLIENTS {
        let store = h.store("busy");
        tasks.push(tokio::spawn(async move {
            let mut round = 0;
            while round < 4 || std::time::Instant::now() < deadline {
                round += 1;
                let own = Path::from(format!("own/{writer:03}"));
                let data = payload(writer, round);
                store.put(&own, PutPayload::from(data.clone())).await.unwrap();
                assert_eq!(store.get(&own).await.unwrap().bytes().await.unwrap(), data, "{writer} reads its own");
                let part = store.get_range(&own, 100..5_000).await.unwrap();
                assert_eq!(&part[..], &data[100..5_000], "{writer}: a range of its own");
                if round % 4 == 0 {
                    let copy = Path::from(format!("copies/{writer:03}"));
                    store.copy(&own, &copy).await.unwrap();
                    assert_eq!(store.get(&copy).await.unwrap().bytes().await.unwrap(), data, "{writer}: its copy");
                    store.delete(&copy).await.unwrap();
                }
                let shared = Path::from(format!("shared/{}", (writer + round) % SHARED));
                if (writer + round) % 3 == 0 {
                    store.put(&shared, PutPayload::from(data)).await.unwrap();
                }
                // A shared key holds one writer's whole payload, never a mix, once written.
                match store.get(&shared).await {
                    Ok(got) => assert!(is_a_payload(&got.bytes().await.unwrap()), "{writer}: a foreign mix"),
                    Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => panic!("{writer}: {e}"),
                }
                let listed: Vec<_> = store.list(Some(&Path::from("own"))).try_collect().await.unwrap();
                assert!(listed.iter().any(|m| m.location == own), "{writer} lists its own key");
                store.head(&own).await.unwrap();
            }
            store.delete(&Path::from(format!("own/{writer:03}"))).await.unwrap();
            round
        }));
    }
    let mut rounds = 0;
    for task in tasks {
        rounds += task.await.unwrap();
    }
    let stats = h.client.cache().stats();
    println!("{rounds} rounds of {CLIENTS} clients; cache: {} hits, {} misses", stats.hits, stats.misses);
    let store = h.store("busy");
    let left: Vec<_> = store.list(None).try_collect().await.unwrap();
    assert!(left.iter().all(|m| m.location.as_ref().starts_with("shared/")), "every own key deleted");
    assert_eq!(left.len() as u64, SHARED);
}

//! A provider compacting in the background (`vouch serve`'s maintenance): the space of removed
//! files and pruned versions comes back, live blocks are moved out of mostly-dead segments,
//! and reads, verified by the client, go on all the while.

use crate::common;

use common::{sample, TOKEN};
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;
use vouch_client::Client;
use vouch_misbehave::Misbehave;
use vouch_server::{Blocks, CompactionPolicy, Maintenance, ServeOptions};
use vouch_testkit::provider;

fn segment_files(data: &Path) -> HashSet<String> {
    let dir = data.join("blobs").join("segments");
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

async fn get(client: &Client, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    client.get(name, None, None, &mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_compaction_gives_space_back_while_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("provider");
    // Compaction once 4 MB of garbage has piled up.
    let policy = CompactionPolicy { min_live: 0.6, min_garbage: 4_000_000, ..CompactionPolicy::default() };
    let maintenance = Maintenance { every: Duration::from_millis(20), policy };
    let options = ServeOptions { maintenance: Some(maintenance), ..ServeOptions::default() };
    let clients = [(TOKEN, "alice"), ("bob", "bob")];
    let server = provider::start(&data, &Blocks::Local, Misbehave::None, options, &clients).await;
    let url = format!("http://{}", server.addr);
    let (alice_state, bob_state) = (dir.path().join("alice"), dir.path().join("bob"));
    let alice = Client::init(&alice_state, &url, TOKEN).unwrap();
    let bob = Client::init(&bob_state, &url, "bob").unwrap();

    // Alice's first version, then a second sharing its second half; the first pruned: half
    // of its segment is garbage, not yet enough to compact.
    let first = sample(3_000_000, 1);
    alice.put("kept.bin", std::io::Cursor::new(first.clone()), None, |_| {}).await.unwrap();
    let mut second = sample(1_500_000, 2);
    second.extend_from_slice(&first[1_500_000..]);
    let local = dir.path().join("local.bin");
    std::fs::write(&local, &second).unwrap();
    alice.sync("kept.bin", &local).await.unwrap();
    alice.prune("kept.bin", &[1]).await.unwrap();
    drop(alice);
    bob.put("gone.bin", std::io::Cursor::new(sample(3_000_000, 3)), None, |_| {}).await.unwrap();
    let before = segment_files(&data);

    // Alice reads all the while: her blocks are moved under her reads.
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (reads, stop, want) = (reads.clone(), stop.clone(), second.clone());
        tokio::spawn(async move {
            let alice = Client::open(&alice_state).unwrap();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let n = reads.load(std::sync::atomic::Ordering::SeqCst);
                assert!(get(&alice, "kept.bin").await == want, "read {n} got other bytes");
                reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            alice
        })
    };
    while reads.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Bob's removal makes enough garbage: alice's first segment and bob's go.
    bob.remove("gone.bin").await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while segment_files(&data).intersection(&before).count() > 1 {
        assert!(std::time::Instant::now() < deadline, "the old segments were never compacted away");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let at_switch = reads.load(std::sync::atomic::Ordering::SeqCst);
    while reads.load(std::sync::atomic::Ordering::SeqCst) < at_switch + 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let alice = reader.await.unwrap();

    // Only the segment of alice's second version is left of those before, beside the new one.
    let after = segment_files(&data);
    assert_eq!((after.intersection(&before).count(), after.len()), (1, 2), "{before:?} -> {after:?}");
    assert!(get(&alice, "kept.bin").await == second);
    assert!(alice.audit("kept.bin", None, 460).await.unwrap().verified);
    assert!(bob.list().await.unwrap().is_empty());
    server.shutdown().await.unwrap();
}

//! A provider over a blob store that fails on every kind of call (`vouch_store::Faults`):
//! transient errors, hangs, slow answers, torn writes, a full disk. An honest client's puts
//! and gets through it either work, with the exact bytes, or fail with a clear error (the
//! provider's storage is unavailable), never with a lie reported; once the store is healed,
//! everything acknowledged reads back.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::time::Duration;
use vouch_client::{Client, ClientError};
use vouch_server::{Blocks, Provider, ServeOptions};
use vouch_store::{Call, Fault, Faults};
use vouch_testkit::{provider, sample};

async fn get(client: &Client, name: &str) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    client.get(name, None, None, &mut out).await?;
    Ok(out)
}

/// `e` must be what an honest provider's failing storage gives: unavailable, or too slow;
/// never a violation, never "not found".
#[track_caller]
fn assert_clear(e: &ClientError, what: &str) {
    assert!(matches!(e, ClientError::Unavailable(_) | ClientError::TimedOut { .. }), "{what}: {e:?}");
}

/// How a round arms its fault, on every kind of call.
#[derive(Clone, Copy, Debug)]
enum Arming {
    /// The next call of each kind.
    Once,
    /// One call of each kind in `n`.
    OneIn(u64),
    Every,
}

fn arm(faults: &Faults, fault: Fault, arming: Arming) {
    for kind in Call::kinds() {
        match arming {
            Arming::Once => faults.arm(kind, fault, 1),
            Arming::OneIn(n) => faults.arm_one_in(kind, fault, n),
            Arming::Every => faults.arm_every(kind, fault),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_client_gets_its_bytes_or_a_clear_error_whatever_the_backend_does() {
    let dir = tempfile::tempdir().unwrap();
    // Each hung call costs the deadline: short, yet far above what an honest call takes.
    let faults = Faults::with_deadline(Duration::from_secs(1));
    let honest = Provider::open_dir_faulty(&dir.path().join("provider"), &Blocks::Local, faults.clone()).unwrap();
    let server = provider::serve(provider::ANY_PORT, honest, ServeOptions::default(), provider::ALICE).await;
    let state = dir.path().join("client");
    Client::init(&state, &format!("http://{}", server.addr), provider::TOKEN).unwrap();
    let client = Client::open(&state).unwrap();

    let rounds = [
        (Fault::Error, Arming::OneIn(2)),
        (Fault::Timeout, Arming::Once),
        (Fault::Slow(Duration::from_millis(20)), Arming::Every),
        (Fault::Partial, Arming::OneIn(2)),
        (Fault::Full, Arming::OneIn(2)),
        (Fault::Error, Arming::Every),
        (Fault::Partial, Arming::Every),
    ];
    let mut acknowledged: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let (mut puts_failed, mut gets_failed, mut gets) = (0, 0, 0);
    for (round, &(fault, arming)) in rounds.iter().enumerate() {
        arm(&faults, fault, arming);
        // Large files (their blocks in blob segments) and a small one (in the metadata).
        for (i, len) in [600_000, 5_000, 400_000].into_iter().enumerate() {
            let what = format!("round {round} ({fault:?}, {arming:?}), file {i}");
            let name = format!("f-{round}-{i}");
            let data = sample(len, (round * 10 + i) as u64);
            match client.put(&name, Cursor::new(data.clone()), None, |_| {}).await {
                Ok(_) => drop(acknowledged.insert(name, data)),
                Err(e) => {
                    assert_clear(&e, &format!("{what}: put"));
                    puts_failed += 1;
                }
            }
        }
        for (name, want) in &acknowledged {
            gets += 1;
            match get(&client, name).await {
                Ok(got) => assert!(got == *want, "round {round} ({fault:?}): {name} read back other bytes"),
                Err(e) => {
                    assert_clear(&e, &format!("round {round} ({fault:?}): get {name}"));
                    gets_failed += 1;
                }
            }
        }
        faults.heal();
        eprintln!("round {round} ({fault:?}, {arming:?}): {} faults struck so far", faults.struck());
    }
    eprintln!(
        "{} faults struck; {} of {} puts acknowledged, {gets_failed} of {gets} gets failed",
        faults.struck(),
        acknowledged.len(),
        acknowledged.len() + puts_failed
    );
    assert!(faults.struck() > 20, "{} faults struck", faults.struck());
    assert!(puts_failed > 0 && gets_failed > 0, "the faults that are not tried again failed some calls");
    assert!(acknowledged.len() >= 9, "the faults that are tried again left most puts working: {acknowledged:?}");

    // Healed: everything acknowledged reads back, from this client and a fresh one.
    for (name, want) in &acknowledged {
        assert!(get(&client, name).await.unwrap() == *want, "{name}");
    }
    let again = Client::open(&state).unwrap();
    let names: Vec<String> = again.list().await.unwrap().into_iter().map(|e| e.name).collect();
    for name in acknowledged.keys() {
        assert!(names.contains(name), "{name} listed");
    }
    server.shutdown().await.unwrap();
}

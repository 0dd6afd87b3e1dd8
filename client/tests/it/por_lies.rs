//! PoR lies told by a real provider over HTTP, each caught by the client's own checks with
//! the violation that names it: a skipped rebuild of H (a fault of the provider's store),
//! a stale level in a plan, another slot's checksum in a plan or a read, live slots named
//! free for a new copy. After each, the client goes on against an honest provider, and
//! nothing honest is reported as a lie.

use crate::common;

use common::{sample, start, Setup};
use std::path::Path;
use vouch_client::{Client, ClientError, PorAuditReport, PutOptions, ViolationKind};
use vouch_core::por::code::Schedule;
use vouch_core::por::heap::SLOT_DATA_BYTES;
use vouch_misbehave::Misbehave;
use vouch_store::{MetaDb, ObjectBlobs, PorLog, Repository};

async fn put_por(client: &Client, name: &str, data: &[u8]) -> Result<(), ClientError> {
    client
        .put_with(name, std::io::Cursor::new(data.to_vec()), PutOptions { por: true, ..PutOptions::default() }, |_| {})
        .await
        .map(|_| ())
}

async fn get_por(client: &Client, name: &str) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    client.por().get(name, None, &mut out).await?;
    Ok(out)
}

/// `result` must be the violation `kind`, found by the check whose message has `check`: a lie
/// caught by another check than the one it targets fails the test.
#[track_caller]
fn assert_caught<T>(result: Result<T, ClientError>, kind: ViolationKind, check: &str, what: &str) {
    match result {
        Err(ClientError::Misbehaved(v)) if v.kind == kind && v.detail.contains(check) => {}
        Err(other) => panic!("{what}: expected the violation {kind} ({check:?}), got {other:?}"),
        Ok(_) => panic!("{what}: expected the violation {kind} ({check:?}), got an answer"),
    }
}

/// Every part of the audit verified.
#[track_caller]
fn all_verified(report: &PorAuditReport) {
    assert!(report.verified && report.parts.iter().chain(&report.copy).all(|p| p.verified), "{report:?}");
}

/// Stops the provider, lets `work` look at or change its data directory, starts it again
/// (honest) and returns a client of it.
async fn with_provider_stopped<T>(setup: &mut Setup, work: impl AsyncFnOnce(&Path) -> T) -> (Client, T) {
    setup.server.take().unwrap().shutdown().await.unwrap();
    let out = work(&setup.data).await;
    let server = start(&setup.data, Misbehave::None).await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"http://{}\"\n", server.addr)).unwrap();
    setup.server = Some(server);
    (setup.client(), out)
}

/// Alice's PoR log as the provider's store has it.
async fn stored_log(data: &Path) -> (Repository, PorLog) {
    let blobs = ObjectBlobs::local(&data.join("blobs")).unwrap();
    let repo = Repository::open(blobs, MetaDb::open(&data.join("meta.redb")).unwrap()).unwrap();
    let log = PorLog::open(&repo, b"alice/por").await.unwrap().unwrap();
    (repo, log)
}

/// The provider's schedule of Alice's log, as stored.
async fn stored_schedule(data: &Path) -> Schedule {
    let (repo, log) = stored_log(data).await;
    repo.close().await.unwrap();
    log.schedule()
}

/// Every one of U's slots deleted from the provider's store.
async fn lose_all_of_u(data: &Path) {
    let (repo, log) = stored_log(data).await;
    let all: Vec<u64> = (0..log.schedule().capacity()).collect();
    vouch_testkit::damage::lose_raw_slots(&repo, &log, &all).unwrap();
    repo.close().await.unwrap();
}

#[tokio::test]
async fn a_skipped_rebuild_is_acknowledged_but_fails_the_audit_of_each_level_it_left_unmixed() {
    let mut setup = Setup::new(Misbehave::SkipPorRebuild).await;
    let client = setup.client();
    // About 40 slots: U grows to 64 and the batch's three groups leave levels 0 and 1 filled.
    let data = sample(160_000, 21);
    put_por(&client, "f", &data).await.expect("the provider acknowledges the batch");
    assert_eq!(get_por(&client, "f").await.unwrap(), data, "U itself is honest");

    let report = client.por().audit(16).await.unwrap();
    let levels: Vec<_> = report.parts.iter().filter(|p| p.region.starts_with("level-")).collect();
    // Level 0 unmixed is its block twice, which its X slot is too; from level 1 on, no slot of
    // the unmixed level is a slot of the code, and λ = 16 picks them all in these small levels.
    assert!(levels.iter().any(|p| p.slots >= 4), "the batch left a level of 4 slots or more: {report:?}");
    for part in levels.iter().filter(|p| p.slots >= 4) {
        let problem = part.problem.as_deref().unwrap_or_default();
        assert!(!part.verified && problem.contains("aggregate slot does not match"), "{part:?}");
    }
    assert!(report.parts.iter().any(|p| p.region == "coded" && p.verified), "C is honest: {report:?}");
    let capacity = 1usize << report.log_capacity;
    assert_caught(
        report.into_result(),
        ViolationKind::BadPorAudit,
        "aggregate slot does not match",
        "a level kept unmixed",
    );

    // Honest again: U reads back, and the unmixed levels fail audits (they are what is
    // stored) until U grows past them: C re-encoded over U, H emptied and rebuilt honestly.
    setup.restart(Misbehave::None).await;
    let client = setup.client();
    assert_eq!(get_por(&client, "f").await.unwrap(), data);
    let bigger = sample(capacity * SLOT_DATA_BYTES, 22);
    put_por(&client, "g", &bigger).await.unwrap();
    let report = client.por().audit(16).await.unwrap();
    assert!(report.log_capacity > capacity.trailing_zeros(), "U grew: {report:?}");
    all_verified(&report);
    assert_eq!(get_por(&client, "f").await.unwrap(), data);
    assert_eq!(get_por(&client, "g").await.unwrap(), bigger);
}

#[tokio::test]
async fn repair_never_hands_out_what_a_skipped_rebuild_stored() {
    let mut setup = Setup::new(Misbehave::SkipPorRebuild).await;
    // The same file as above: its batch grows U and ends with levels filled, not with an
    // epoch (which would rebuild C honestly over U and empty H).
    let data = sample(160_000, 21);
    let client = setup.client();
    put_por(&client, "f", &data).await.unwrap();
    let report = client.por().audit(16).await.unwrap();
    assert!(report.parts.iter().any(|p| p.region.starts_with("level-") && !p.verified), "{report:?}");
    drop(client);
    // All of U lost: only C (the code of U before the batch) and the unmixed levels are left.
    let (client, ()) = with_provider_stopped(&mut setup, lose_all_of_u).await;
    assert_caught(get_por(&client, "f").await, ViolationKind::DataLost, "", "U is lost");
    // The unmixed slots do not match their sealed checksums: repair counts them as lost, and
    // too few of each level are left to decode it.
    let repaired = client.por().repair("f").await;
    assert_caught(repaired, ViolationKind::DataLost, "cannot be recovered", "repair over unmixed levels");
    assert_caught(get_por(&client, "f").await, ViolationKind::DataLost, "", "nothing was written back");
    // The file's blocks themselves are untouched.
    let mut out = Vec::new();
    client.get("f", None, None, &mut out).await.unwrap();
    assert_eq!(out, data);
}

#[tokio::test]
async fn a_stale_level_in_a_plan_refuses_the_batch_and_nothing_is_committed() {
    let mut setup = Setup::new(Misbehave::StalePorLevel).await;
    let client = setup.client();
    // Small files, one batch each, until a plan asks again for a level that was rebuilt since
    // the provider was first handed it (the lie needs an older list of the same level).
    let mut stored = Vec::new();
    let mut refused = None;
    // One group per batch; H has levels to ask for once U has grown to 64 slots.
    for i in 0..64 {
        let (name, data) = (format!("s{i}"), sample(3_000 + 4_000 * (i % 2), 30 + i as u64));
        // Audits are honest under this lie: the client's schedule before the batch.
        let before = client.por().audit(1).await.map(|r| (r.log_capacity, r.time));
        match put_por(&client, &name, &data).await {
            Ok(()) => stored.push((name, data)),
            Err(e) => {
                refused = Some((name, data, before, e));
                break;
            }
        }
    }
    let (name, data, before, error) = refused.expect("a plan asked for a level rebuilt since: the lie was told");
    assert_caught(Err::<(), _>(error), ViolationKind::BadPorWrite, "does not open", "a stale level");
    // While the provider goes on lying, the owed copy is refused each time it is tried.
    assert_caught(get_por(&client, &name).await, ViolationKind::BadPorWrite, "does not open", "again");

    // The batch never reached the provider, and the client did not adopt its outcome: the
    // honest provider below is where the client left it (else its first PoR operation would
    // report the log at neither the old nor the new point).
    let before = before.expect("the log exists before a batch that asks for a level");
    let (client, schedule) = with_provider_stopped(&mut setup, stored_schedule).await;
    assert_eq!((schedule.log_capacity, schedule.time), before, "the provider's log did not move");
    assert_eq!(get_por(&client, &name).await.unwrap(), data, "the owed copy is made, honestly");
    for (name, data) in &stored {
        assert_eq!(&get_por(&client, name).await.unwrap(), data);
    }
    all_verified(&client.por().audit(16).await.unwrap());
    put_por(&client, "after", &sample(5_000, 29)).await.unwrap();
}

#[tokio::test]
async fn another_slots_checksum_is_caught_in_reads_and_in_plans() {
    let mut setup = Setup::new(Misbehave::OtherPorChecksum).await;
    let client = setup.client();
    let first = sample(20_000, 41);
    // The first batch: the provider has no checksum of another slot to lie with yet.
    put_por(&client, "a", &first).await.unwrap();
    let root = "do not match the client's root";
    assert_caught(get_por(&client, "a").await, ViolationKind::BadPorRead, root, "a read");
    let second = sample(20_000, 42);
    assert_caught(put_por(&client, "b", &second).await, ViolationKind::BadPorWrite, root, "a plan's old");

    let (client, schedule) = with_provider_stopped(&mut setup, stored_schedule).await;
    let first_slots = 20_000u64.div_ceil(SLOT_DATA_BYTES as u64);
    assert!(schedule.time >= first_slots, "the first batch was applied: {schedule:?}");
    assert_eq!(get_por(&client, "a").await.unwrap(), first);
    assert_eq!(get_por(&client, "b").await.unwrap(), second, "the owed copy is made, honestly");
    all_verified(&client.por().audit(16).await.unwrap());
}

/// The steps of the tests above against an honest provider: never a lie.
#[tokio::test]
async fn the_same_steps_against_an_honest_provider_are_never_lies() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let mut stored = Vec::new();
    for i in 0..8 {
        let (name, data) = (format!("s{i}"), sample(3_000 + 4_000 * (i % 2), 50 + i as u64));
        put_por(&client, &name, &data).await.unwrap();
        all_verified(&client.por().audit(16).await.unwrap());
        stored.push((name, data));
    }
    for (name, data) in &stored {
        assert_eq!(&get_por(&client, name).await.unwrap(), data);
        let report = client.por().repair(name).await.unwrap();
        assert!(!report.damaged && report.restored == 0, "{report:?}");
    }
}

#[tokio::test]
async fn live_slots_named_free_are_refused_before_anything_is_written() {
    let mut setup = Setup::new(Misbehave::FreePorLiveSlots).await;
    let client = setup.client();
    // The first request for free slots is answered honestly: a copy is there to damage.
    let first = sample(40_000, 71);
    put_por(&client, "a", &first).await.unwrap();
    let second = sample(20_000, 72);
    let named = "named free, holds data";
    assert_caught(put_por(&client, "b", &second).await, ViolationKind::BadPorWrite, named, "live slots named free");

    // Nothing was written over "a": against the honest provider it reads back whole, and the
    // owed copy of "b" is made where it belongs.
    let (client, _) = with_provider_stopped(&mut setup, stored_schedule).await;
    assert_eq!(get_por(&client, "a").await.unwrap(), first);
    assert_eq!(get_por(&client, "b").await.unwrap(), second, "the owed copy is made, honestly");
    all_verified(&client.por().audit(16).await.unwrap());
}

/// The provider refuses the batch that carries a copy's label, without applying it, and later
/// serves that label as if it had been applied. The client's record, not the provider's label,
/// says the copy is owed: the next PoR operation writes it again into the very slots the label
/// names, so the label names the copy; another file's copy never takes those slots, and
/// removing the first file writes ⊥ over its own slots only.
#[tokio::test]
async fn a_label_from_a_refused_batch_is_never_believed_over_the_clients_record() {
    let setup = Setup::new(Misbehave::RefusedPorLabel).await;
    let client = setup.client();
    let (a, b) = (sample(30_000, 81), sample(20_000, 82));
    assert!(put_por(&client, "a", &a).await.is_err(), "the batch with the label is refused");
    put_por(&client, "b", &b).await.unwrap();
    assert_eq!(get_por(&client, "a").await.unwrap(), a, "a's copy was written where its label says");
    assert_eq!(get_por(&client, "b").await.unwrap(), b);
    all_verified(&client.por().audit(32).await.unwrap());
    client.remove("a").await.unwrap();
    assert_eq!(get_por(&client, "b").await.unwrap(), b, "removing a wrote ⊥ over a's slots only");
    all_verified(&client.por().audit(32).await.unwrap());
}

/// A provider that dropped the copies' labels: every part of the log still proves (it holds
/// what it holds), and the audit's check of a copy at random reports the copy missing.
#[tokio::test]
async fn dropped_labels_fail_the_audit_of_a_copy_at_random() {
    let setup = Setup::new(Misbehave::DropPorLabels).await;
    let client = setup.client();
    put_por(&client, "a", &sample(30_000, 91)).await.unwrap();
    let report = client.por().audit(32).await.unwrap();
    assert!(report.parts.iter().all(|p| p.verified), "{report:?}");
    let copy = report.copy.as_ref().expect("a PoR file has a version to check");
    assert!(!copy.verified && copy.problem.as_deref().unwrap().contains("no copy"), "{report:?}");
    assert!(!report.verified);
    assert_caught(report.into_result(), ViolationKind::BadPorAudit, "no copy", "a dropped label");
}

/// An honest fault: the provider makes a batch durable and goes down before its answer, and
/// U's slots are lost while it is down, the one the client would probe the batch by too.
/// Repair must not stop at that probe: it goes on from the batch applied, makes the copy owed
/// and the file reads back through U.
#[tokio::test]
async fn a_lost_probe_slot_does_not_block_repair() {
    let mut setup = Setup::new(Misbehave::DropPorAnswer).await;
    let client = setup.client();
    let a = sample(30_000, 95);
    assert!(put_por(&client, "a", &a).await.is_err(), "the answer is lost");
    let (client, ()) = with_provider_stopped(&mut setup, lose_all_of_u).await;
    client.por().repair("a").await.unwrap();
    assert_eq!(get_por(&client, "a").await.unwrap(), a);
    all_verified(&client.por().audit(32).await.unwrap());
}

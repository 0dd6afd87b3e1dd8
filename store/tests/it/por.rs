//! The persistent PoR log against core's in-memory reference: random batches with growth and
//! epochs, reopened midway, on the local backend and on MinIO; crashes between its steps;
//! damaged objects; malformed requests.

use crate::por_support;
use vouch_testkit::minio::Minio;

use por_support::{object_folders, sealed_key, segment_keys, Run, GROUP_LOG, OWNER, SMALL, WIDTH};
use vouch_core::por::audit::{parts, picks, verify_part, AuditFailure, Part, Pick};
use vouch_core::por::checksum::SealedChecksum;
use vouch_core::por::client::{batch_outcome, plan, verify_read, LogState, ReadError, WritePlan};
use vouch_core::por::field::P;
use vouch_core::por::provider::ProviderError;
use vouch_core::por::{Region, SlotAddress};
use vouch_store::por::{LevelBuild, MAX_LOG_CAPACITY, MAX_WIDTH};
use vouch_store::{BlobStore, Faults, MetaStore, ObjectBlobs, PorLog, PorStoreError, StoreError};

fn local() -> (tempfile::TempDir, ObjectBlobs) {
    let dir = tempfile::tempdir().unwrap();
    let blobs = ObjectBlobs::local(dir.path()).unwrap();
    (dir, blobs)
}

/// Random batches from capacity 2 until more than 100 slots are written (U grows six
/// times), then overwrites through several epochs; the log (and once the repository) is
/// reopened midway. Returns how many batches rebuilt C without growing.
async fn model(blobs: ObjectBlobs, batches: u64) -> u64 {
    let mut run = Run::new(blobs, 1, SMALL).await;
    run.check().await;
    let mut epochs = 0;
    for batch in 1..=batches {
        let writes = run.random_writes(110);
        let before = run.state.schedule;
        run.batch(&writes).await;
        let grew = run.state.schedule.log_capacity != before.log_capacity;
        epochs += u64::from(!grew && run.state.schedule.coded_time() != before.coded_time());
        run.check().await;
        if batch % 17 == 0 {
            run.reopen_log().await;
            run.check().await;
        }
        if batch % 23 == 0 {
            run.reencode().await.unwrap();
            run.check().await;
        }
        if batch == batches / 2 {
            run = run.reopen_repo().await;
            run.check().await;
        }
    }
    assert!(run.next > 100 && run.state.schedule.log_capacity == 7, "{} slots, {:?}", run.next, run.state.schedule);
    epochs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_answers_as_the_reference_on_the_local_backend() {
    let (_dir, blobs) = local();
    let epochs = model(blobs, 70).await;
    assert!(epochs >= 2, "C rebuilt at the end of {epochs} epochs only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_answers_as_the_reference_on_minio() {
    let minio = Minio::start();
    let epochs = model(ObjectBlobs::s3(&minio.config).unwrap(), 50).await;
    assert!(epochs >= 1, "C rebuilt at the end of {epochs} epochs only");
}

/// A batch cut short before its commit (one of its puts fails, as a process dying there
/// would leave it) leaves the log exactly as it was, and its objects are swept at open; a
/// batch committed whose superseded objects were not deleted (the deletes fail, as a crash
/// right after the commit would leave them), the new state, and those objects are swept at
/// open. Growth and epochs included. The faults come from the wrapped blob store.
async fn crashes(blobs: ObjectBlobs) {
    let faults = Faults::new();
    let mut run = Run::new(blobs.with_faults(faults.clone()), 1, SMALL).await;
    let (mut stopped, mut building) = ([0; 2], 0);
    for batch in 0..60u64 {
        let writes = run.random_writes(40);
        let p = run.prepare(&writes);
        if batch % 3 == 2 {
            // Now and then an uninterrupted batch, so that crashes meet every shape of log.
            run.log.apply(&run.repo, &p.plan, &p.writes, &p.slots, &p.written).await.unwrap();
            run.apply_reference(&p);
            continue;
        }
        building += usize::from(run.log.coded_build().is_some());
        let before_commit = batch % 2 == 0;
        match before_commit {
            true => faults.fail_puts_after(run.rng.below(4)),
            false => faults.fail_deletes(true),
        }
        let puts = faults.puts();
        let applied = run.log.apply(&run.repo, &p.plan, &p.writes, &p.slots, &p.written).await;
        faults.heal();
        match applied {
            Err(err) => {
                assert!(before_commit, "only a put fails before the commit: {err:?}");
                assert!(matches!(err, PorStoreError::Store(StoreError::Backend { .. })), "{err:?}");
                run.reopen_log().await;
                // Exactly as before: the same audits pass, and the batch applies again.
                run.check().await;
                run.log.apply(&run.repo, &p.plan, &p.writes, &p.slots, &p.written).await.unwrap();
                stopped[0] += 1;
            }
            Ok(()) if before_commit => {
                assert!(faults.puts() - puts <= 4, "a batch that put fewer objects than allowed")
            }
            Ok(()) => {
                run.reopen_log().await;
                stopped[1] += 1;
            }
        }
        run.apply_reference(&p);
        run.check().await;
    }
    assert!(run.state.schedule.log_capacity >= 5 && stopped.iter().all(|&s| s > 5), "{stopped:?}");
    assert!(building > 2, "{building} crashes met a C being built");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_leaves_the_old_state_or_the_new_on_the_local_backend() {
    let (_dir, blobs) = local();
    crashes(blobs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_leaves_the_old_state_or_the_new_on_minio() {
    let minio = Minio::start();
    crashes(ObjectBlobs::s3(&minio.config).unwrap()).await;
}

/// The local file of a blob key.
fn file(dir: &tempfile::TempDir, key: &str) -> std::path::PathBuf {
    dir.path().join(key)
}

fn all_picks(part: &Part) -> Vec<Pick> {
    picks(&[9; 32], part, part.slots as usize)
}

/// Whether slot `index` of `part` as returned matches its sealed checksum (the client's check).
fn matches_checksum(run: &Run, part: &Part, index: usize, slot: &[u64], sealed: &SealedChecksum) -> bool {
    let address = SlotAddress { region: part.region, index: index as u64 };
    run.seal.open(address, part.time, sealed).unwrap() == run.sums.checksum(slot)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_objects_are_erasures_for_repair_and_errors_for_audits() {
    let (dir, blobs) = local();
    // Ungrouped: the times below count writes one by one.
    let mut run = Run::grouped(blobs, (4, 0), SMALL).await;
    // U grows to 32 slots at time 32, and C is written in segments of 8 slots (64 slots).
    run.batch(&[16]).await;
    // Time 46 = 32 + 0b1110: levels 1, 2 and 3 filled; level 3 (16 slots of 32 bytes) is
    // two segments of 8 slots and not cached. The write at time 47 rebuilds level 4 from them.
    for _ in 0..6 {
        let writes = run.writes(2, 0);
        run.batch(&writes).await;
    }
    run.batch(&[20]).await;
    let level = parts(&run.state.schedule).into_iter().find(|p| p.region == Region::Level(3)).unwrap();
    let coded = parts(&run.state.schedule).into_iter().find(|p| p.region == Region::Coded).unwrap();
    let segments = segment_keys(&run.blobs, "level-03").await;
    assert_eq!(segments.len(), 2, "{segments:?}");
    let intact = run.reference.region(Region::Level(3)).unwrap().slots.clone();

    // A segment lost: its slots are erasures, audits touching it fail, others pass.
    run.blobs.delete(&segments[1]).await.unwrap();
    let read = run.log.region(&run.repo, Region::Level(3)).await.unwrap();
    for (i, slot) in read.slots.iter().enumerate() {
        let want = (i < 8).then(|| intact[i * WIDTH..(i + 1) * WIDTH].to_vec());
        assert_eq!(slot, &want, "slot {i}");
    }
    let err = run.log.prove(&run.repo, &level, &all_picks(&level)).await.unwrap_err();
    assert!(matches!(err, PorStoreError::Store(StoreError::NotFound { .. })), "{err:?}");
    let first: Vec<Pick> = all_picks(&level).into_iter().filter(|p| p.index < 8).collect();
    let proof = run.log.prove(&run.repo, &level, &first).await.unwrap();
    assert_eq!(verify_part(&run.seal, &run.sums, &level, &first, &proof), Ok(()));
    // Garbage of the right length: the slots are returned, and the checksums catch them.
    let garbage: Vec<u8> = (0..8 * WIDTH as u64).flat_map(|i| (i * 0x1234_5678_9abc % P).to_le_bytes()).collect();
    std::fs::write(file(&dir, &segments[0]), &garbage).unwrap();
    let read = run.log.region(&run.repo, Region::Level(3)).await.unwrap();
    for (i, slot) in read.slots.iter().take(8).enumerate() {
        let slot = slot.as_ref().expect("bytes of the right length are returned");
        assert!(!matches_checksum(&run, &level, i, slot, &read.sealed[i]), "slot {i} passed for intact");
    }
    let proof = run.log.prove(&run.repo, &level, &first).await.unwrap();
    assert_eq!(verify_part(&run.seal, &run.sums, &level, &first, &proof), Err(AuditFailure::AggregateMismatch));
    // Bytes that are not field elements, and a segment cut short, are erasures.
    let mut bytes = garbage.clone();
    bytes[..8].fill(0xff);
    bytes.truncate(5 * WIDTH * 8 + 3);
    std::fs::write(file(&dir, &segments[0]), &bytes).unwrap();
    let read = run.log.region(&run.repo, Region::Level(3)).await.unwrap();
    let present: Vec<bool> = read.slots.iter().map(Option::is_some).collect();
    assert_eq!(present, [[false].as_slice(), &[true; 4], &[false; 11]].concat());
    let err = run.log.prove(&run.repo, &level, &first).await.unwrap_err();
    assert!(matches!(err, PorStoreError::Store(StoreError::Corrupt { .. })), "{err:?}");

    // A batch whose rebuild consumes the damaged level starts a build of level 4 (larger than
    // a segment per half), which keeps level 3 aside; the next batch's unit reads it, fails as
    // data lost, and changes nothing.
    let writes = run.writes(2, 0);
    let p = run.prepare(&writes);
    assert!(p.plan.levels.contains(&3));
    run.log.apply(&run.repo, &p.plan, &p.writes, &p.slots, &p.written).await.unwrap();
    run.apply_reference(&p);
    assert_eq!(run.log.builds(), [LevelBuild { level: 4, merge: 3, done: 0 }]);
    // Level 4, being built from the damaged level, answers audits with the loss, and repair
    // reads erasures.
    let building = parts(&run.state.schedule).into_iter().find(|p| p.region == Region::Level(4)).unwrap();
    let err = run.log.prove(&run.repo, &building, &all_picks(&building)).await.unwrap_err();
    assert!(matches!(err, PorStoreError::Store(StoreError::NotFound { .. } | StoreError::Corrupt { .. })), "{err:?}");
    let read = run.log.region(&run.repo, Region::Level(4)).await.unwrap();
    assert!(read.slots.iter().all(Option::is_none) && read.slots.len() == 32);
    let before = run.log.schedule();
    let writes = run.writes(1, 0);
    let p = run.prepare(&writes);
    let err = run.log.apply(&run.repo, &p.plan, &p.writes, &p.slots, &p.written).await.unwrap_err();
    let lost = matches!(err, PorStoreError::Store(StoreError::NotFound { .. } | StoreError::Corrupt { .. }));
    assert!(lost, "{err:?}");
    assert_eq!(run.log.schedule(), before);

    // C's first segment lost.
    let coded_keys = segment_keys(&run.blobs, "coded").await;
    run.blobs.delete(&coded_keys[0]).await.unwrap();
    let read = run.log.region(&run.repo, Region::Coded).await.unwrap();
    assert!(read.slots[..8].iter().all(Option::is_none) && read.slots[8..].iter().all(Option::is_some));
    assert!(matches!(
        run.log.prove(&run.repo, &coded, &all_picks(&coded)).await,
        Err(PorStoreError::Store(StoreError::NotFound { .. }))
    ));
    // The same after a reopen (the sealed checksums are their own object).
    run.reopen_log().await;
    assert_eq!(run.log.region(&run.repo, Region::Coded).await.unwrap(), read);
    // Pages across segment boundaries make up the whole region; a page past its end is empty.
    let mut paged = vouch_core::por::repair::RegionRead::default();
    for first in (0..read.slots.len() as u64).step_by(3) {
        let page = run.log.region_range(&run.repo, Region::Coded, first..first + 3).await.unwrap();
        paged.slots.extend(page.slots);
        paged.sealed.extend(page.sealed);
    }
    assert_eq!(paged, read);
    assert_eq!(run.log.region_range(&run.repo, Region::Coded, 1 << 40..1 << 41).await.unwrap(), Default::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restored_slots_of_u_are_served() {
    let (_dir, blobs) = local();
    let mut run = Run::new(blobs, 3, SMALL).await;
    let writes = run.writes(5, 0);
    run.batch(&writes).await;
    let all: Vec<u64> = (0..8).collect();
    let good = run.log.raw_slots(&run.repo, &[1, 6]).await.unwrap();
    assert_eq!(good, vec![Some(run.slot(1, 1)), Some(vec![0; WIDTH])]);
    // Slot 1 altered (as a damaged copy would be), then restored by repair.
    run.log.restore(&run.repo, &[(1, run.slot(2, 2))]).await.unwrap();
    let read = run.log.read(&run.repo, &all).await.unwrap();
    assert_eq!(verify_read(&run.state, &all, &read, &run.seal, &run.sums), Err(ReadError::Altered(1)));
    run.reopen_log().await;
    let slot = good[0].clone().unwrap();
    run.log.restore(&run.repo, &[(1, slot)]).await.unwrap();
    run.check().await;
    for bad in [vec![(8, vec![0; WIDTH])], vec![(1, vec![0; WIDTH + 1])], vec![(1, vec![P; WIDTH])]] {
        assert!(matches!(run.log.restore(&run.repo, &bad).await, Err(PorStoreError::Refused(_))), "{bad:?}");
    }
    assert!(matches!(run.log.raw_slots(&run.repo, &[8]).await, Err(PorStoreError::Refused(_))));
    run.check().await;
}

fn refused_batch(r: Result<(), PorStoreError>) -> bool {
    matches!(r, Err(PorStoreError::Refused(ProviderError::Batch)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_are_refused_and_change_nothing() {
    let (_dir, blobs) = local();
    let mut run = Run::new(blobs, 2, SMALL).await;
    run.batch(&[0]).await;
    let schedule = run.log.schedule();
    let keys = run.blobs.list("por").await.unwrap();

    // Plans that do not fit: refused as the reference refuses them.
    let good = plan(&run.state, &[1], false).unwrap();
    for bad in [
        WritePlan { grow_to: Some(1), ..good.clone() },
        WritePlan { grow_to: Some(99), ..good.clone() },
        WritePlan { levels: vec![1], ..good.clone() },
        WritePlan { indices: vec![4], ..good.clone() },
        WritePlan { indices: vec![], ..good.clone() },
        WritePlan { indices: vec![1, 0], ..good.clone() },
    ] {
        let want = run.reference.context(&bad).unwrap_err();
        match run.log.context(&bad) {
            Err(PorStoreError::Refused(got)) => assert_eq!(got, want, "{bad:?}"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }

    // Batches that do not fit their plan.
    let p = run.prepare(&[1]);
    let (plan, slots, written) = (&p.plan, &p.slots, &p.written);
    let log = &mut run.log;
    let repo = &run.repo;
    let mut extra = written.clone();
    extra.levels.push((3, vec![]));
    let mut short = written.clone();
    short.levels[0].1.pop();
    let mut coded = written.clone();
    coded.coded = vec![vec![]];
    let mut raw = written.clone();
    raw.raw.clear();
    assert!(refused_batch(log.apply(repo, plan, &[1], &slots[1..], written).await));
    assert!(refused_batch(log.apply(repo, plan, &[2], slots, written).await));
    assert!(refused_batch(log.apply(repo, plan, &[], &[], written).await));
    let mut above_p = slots.clone();
    above_p[2] = P;
    assert!(refused_batch(log.apply(repo, plan, &[1], &above_p, written).await));
    for bad in [extra, short, coded, raw] {
        assert!(refused_batch(log.apply(repo, plan, &[1], slots, &bad).await), "{bad:?}");
    }
    let grown = WritePlan { grow_to: Some(MAX_LOG_CAPACITY + 1), ..plan.clone() };
    assert!(matches!(log.apply(repo, &grown, &[1], slots, written).await, Err(PorStoreError::Refused(_))));

    // Audits and reads of what the log does not hold.
    let level = Part { region: Region::Level(1), slots: 4, time: 2 };
    let pick = |index| vec![Pick { index, coefficient: 1 }];
    assert!(matches!(log.prove(repo, &level, &pick(0)).await, Err(PorStoreError::NotHeld { .. })));
    let c = Part { region: Region::Coded, slots: 8, time: 0 };
    assert!(matches!(log.prove(repo, &c, &pick(8)).await, Err(PorStoreError::NotHeld { .. })));
    assert!(matches!(log.region(repo, Region::Raw).await, Err(PorStoreError::NotHeld { .. })));
    for bad in [vec![4], vec![2, 1], vec![]] {
        assert!(matches!(log.read(repo, &bad).await, Err(PorStoreError::Refused(_))), "{bad:?}");
    }

    // Nothing changed, in memory or in the store: the honest batch applies and audits.
    assert_eq!(run.log.schedule(), schedule);
    assert_eq!(run.blobs.list("por").await.unwrap(), keys);
    run.reopen_log().await;
    assert_eq!(run.log.schedule(), schedule);
    run.log.apply(&run.repo, &p.plan, &p.writes, &p.slots, &p.written).await.unwrap();
    run.apply_reference(&p);
    run.check().await;
    assert_eq!(batch_outcome(&schedule, None, 1, p.plan.flush).0, run.log.schedule());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creation_is_refused_beyond_bounds_or_twice_and_owners_are_apart() {
    let (_dir, blobs) = local();
    let mut run = Run::new(blobs, 2, SMALL).await;
    let seal = vouch_core::por::checksum::SealKey::new(&[3; 32]);
    let (_, coded) = LogState::new(2, GROUP_LOG, &seal);
    let create = |owner: &'static [u8], k: (u32, u32), width: usize, coded: Vec<SealedChecksum>| {
        let repo = &run.repo;
        async move { PorLog::create(repo, owner, k, width, coded).await }
    };
    assert!(matches!(create(OWNER, (2, GROUP_LOG), WIDTH, coded.clone()).await, Err(PorStoreError::Exists)));
    for (k, width) in [((2, 1), 0), ((2, 1), MAX_WIDTH + 1), ((MAX_LOG_CAPACITY + 1, 1), WIDTH), ((2, 3), WIDTH)] {
        assert!(matches!(create(b"bob", k, width, coded.clone()).await, Err(PorStoreError::Shape { .. })));
    }
    let short = coded[1..].to_vec();
    assert!(matches!(create(b"bob", (2, GROUP_LOG), WIDTH, short).await, Err(PorStoreError::Refused(_))));
    assert!(PorLog::open(&run.repo, b"bob").await.unwrap().is_none());
    // A second owner beside the first: each open sweeps only its own folder.
    let bob = create(b"bob", (2, GROUP_LOG), WIDTH, coded).await.unwrap();
    assert_eq!(object_folders(&run.blobs).await.len(), 2);
    assert!(PorLog::open(&run.repo, OWNER).await.unwrap().is_some());
    assert_eq!(object_folders(&run.blobs).await.len(), 2);
    assert_eq!(PorLog::open(&run.repo, b"bob").await.unwrap().unwrap().schedule(), bob.schedule());
    run.other_folders = 1;
    run.check().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_levels_are_rebuilt_from_memory_large_ones_from_the_store() {
    let (_dir, blobs) = local();
    // Ungrouped: the times below count writes one by one.
    let mut run = Run::grouped(blobs, (4, 0), SMALL).await;
    // Time 2: level 1 (4 slots, 128 bytes) filled, within the cache bound.
    run.batch(&[0, 1]).await;
    for key in segment_keys(&run.blobs, "level-01").await {
        run.blobs.delete(&key).await.unwrap();
    }
    // Times 2 and 3 rebuild level 2 from levels 0 and 1: from memory, so the lost object
    // does not matter (and it is superseded).
    run.batch(&[2, 3]).await;
    run.check().await;
    // At time 10 level 1 is filled again. After a reopen nothing is cached: the same loss
    // is then an error when times 10 and 11 rebuild level 2.
    run.batch(&[4, 5, 6, 7]).await;
    run.batch(&[8, 9]).await;
    run.reopen_log().await;
    for key in segment_keys(&run.blobs, "level-01").await {
        run.blobs.delete(&key).await.unwrap();
    }
    let p = run.prepare(&[10, 11]);
    let err = run.log.apply(&run.repo, &p.plan, &p.writes, &p.slots, &p.written).await.unwrap_err();
    assert!(matches!(err, PorStoreError::Store(StoreError::NotFound { .. })), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_metadata_store_is_rebuilt_with_the_log() {
    let (_dir, blobs) = local();
    let mut run = Run::new(blobs, 1, SMALL).await;
    for _ in 0..30 {
        let writes = run.random_writes(60);
        run.batch(&writes).await;
    }
    run.repo.close().await.unwrap();
    let meta = run.dir.path().join("meta.redb");
    let Run { model, dir, blobs, repo, log, limits, other_folders } = run;
    drop((log, repo));
    std::fs::remove_file(&meta).unwrap();
    std::fs::remove_file(dir.path().join("meta.redb.wal")).unwrap();
    let (repo, report) = vouch_store::Repository::rebuild(blobs.clone(), &meta).await.unwrap();
    assert!(report.problems.is_empty(), "{report:#?}");
    let log = PorLog::open(&repo, OWNER).await.unwrap().expect("the log is in the copies");
    let log = log.with_limits(limits.segment_bytes, limits.cached_level_bytes);
    let run = Run { model, dir, blobs, repo, log, limits, other_folders };
    run.check().await;
}

/// The open group (Sec. 6.1's grouping) commits with the state: it is there after a reopen of
/// the log or of the whole repository, and a damaged one is a corrupt state, never a group
/// of other writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_group_survives_a_reopen_and_a_damaged_one_is_refused() {
    let (_dir, blobs) = local();
    let mut run = Run::new(blobs, 2, SMALL).await;
    run.batch(&[0]).await;
    assert_eq!((run.state.schedule.pending(), run.log.staged().len()), (1, WIDTH), "one write of a pair open");
    run.reopen_log().await;
    run.check().await;
    let run = run.reopen_repo().await;
    run.check().await;
    let root = object_folders(&run.blobs).await.into_iter().next().unwrap();
    let key = format!("{}/staged", root.rsplit_once('/').unwrap().0).into_bytes();
    let Run { model, dir, blobs, repo, log, .. } = run;
    drop((log, repo, model));
    let meta_path = dir.path().join("meta.redb");
    let honest = vouch_store::MetaDb::open(&meta_path).unwrap().get(&key).unwrap().expect("the open group is stored");
    for damaged in
        [honest[..honest.len() - 3].to_vec(), [honest.clone(), honest.clone()].concat(), vec![0xff; honest.len()]]
    {
        let meta = vouch_store::MetaDb::open(&meta_path).unwrap();
        let mut batch = vouch_store::MetaBatch::default();
        batch.put(key.clone(), damaged);
        meta.commit(&batch).unwrap();
        drop(meta);
        let repo = por_support::open_repo(&blobs, dir.path());
        let got = PorLog::open(&repo, OWNER).await;
        assert!(matches!(got, Err(PorStoreError::CorruptState { .. })), "{got:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_sealed_checksums_fail_their_part_until_a_reencode_replaces_it() {
    let (dir, blobs) = local();
    let mut run = Run::new(blobs, 3, SMALL).await;
    while run.state.schedule.coded_time() == 0 || run.state.schedule.filled_levels().count() < 2 {
        let writes = run.random_writes(20);
        run.batch(&writes).await;
    }
    let top = run.state.schedule.filled_levels().last().unwrap();
    let level_name = format!("level-{top:02}");
    // The backend loses a level's sealed checksums and cuts C's short.
    run.blobs.delete(&sealed_key(&run.blobs, &level_name).await).await.unwrap();
    std::fs::write(file(&dir, &sealed_key(&run.blobs, "coded").await), b"short").unwrap();

    // The log still opens; those parts answer "lost", the others still prove.
    run.reopen_log().await;
    for part in parts(&run.state.schedule) {
        let proved = run.log.prove(&run.repo, &part, &all_picks(&part)).await;
        let lost = part.region == Region::Level(top as u8) || part.region == Region::Coded;
        match proved {
            Err(PorStoreError::Store(StoreError::Corrupt { detail, .. })) if lost => assert!(detail.contains("repair")),
            Ok(proof) if !lost => verify_part(&run.seal, &run.sums, &part, &all_picks(&part), &proof).unwrap(),
            other => panic!("{part:?}: {other:?}"),
        }
        // Slots that cannot be checked are erasures for repair.
        let region = run.log.region(&run.repo, part.region).await.unwrap();
        assert_eq!(region.slots.iter().all(Option::is_none), lost, "{part:?}");
    }
    // A batch that consumes the level is refused as data lost, not as a bad plan.
    let mut plans = 0;
    while plans < 50 {
        let writes = run.random_writes(20);
        let p = plan(&run.state, &writes, run.flush()).unwrap();
        if p.levels.contains(&top) {
            let err = run.log.context(&p).unwrap_err();
            assert!(matches!(err, PorStoreError::Store(StoreError::Corrupt { .. })), "{err:?}");
            break;
        }
        run.batch(&writes).await;
        plans += 1;
    }
    assert!(plans < 50, "no batch consumed level {top}");

    // A lost slot of U: the re-encode is refused (C would be built over missing bytes) and
    // nothing changes; once the slot is restored, the re-encode makes every part whole.
    let before = run.log.schedule();
    let slot = run.log.raw_slots(&run.repo, &[1]).await.unwrap().remove(0).unwrap();
    vouch_testkit::damage::lose_raw_slots(&run.repo, &run.log, &[1]).unwrap();
    let err = run.reencode().await.unwrap_err();
    assert!(matches!(err, PorStoreError::Store(StoreError::NotFound { .. })), "{err:?}");
    assert_eq!(run.log.schedule(), before);
    run.log.restore(&run.repo, &[(1, slot)]).await.unwrap();
    run.reencode().await.unwrap();
    assert!(run.state.schedule.filled_levels().next().is_none());
    run.check().await;
    run.reopen_log().await;
    run.check().await;
    let writes = run.random_writes(20);
    run.batch(&writes).await;
    run.check().await;
}

/// Sec. 6.1's deamortization, end to end: one group per batch through a whole epoch of a
/// log whose top level spans 128 segments. A level larger than a segment per half is built a
/// unit per group completion (four segments), so no batch puts more than four segments per
/// level being built and the few of the small levels, while every answer matches the
/// reference's, which rebuilds at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_levels_are_built_a_unit_per_group_never_at_once() {
    let (_dir, blobs) = local();
    // Blocks of H of 2 writes (64 bytes): 4 per 256-byte segment, so levels 3..=8 are built.
    let mut run = Run::grouped(blobs, (10, 1), SMALL).await;
    let top = run.state.schedule.levels() - 1;
    let top_segments = (2u64 << top) * 64 / SMALL.segment_bytes as u64;
    let (mut most, mut most_builds, mut seen) = (0, 0, std::collections::BTreeSet::new());
    let segment_keys = |keys: Vec<String>| -> std::collections::BTreeSet<String> {
        keys.into_iter().filter(|k| k.contains("/level-") && k.contains("/slots-")).collect()
    };
    // One listing per batch (a listing walks every file of the log: most of this test's time).
    let mut before = segment_keys(run.blobs.list("por").await.unwrap());
    for batch in 0..(1u64 << top) * 2 - 1 {
        let running = run.log.builds().len();
        let writes = run.writes(2, 0);
        run.batch(&writes).await;
        let after = segment_keys(run.blobs.list("por").await.unwrap());
        let builds = run.log.builds();
        seen.extend(builds.iter().map(|b| b.level));
        let put = after.difference(&before).count();
        before = after;
        // A unit of each level being built (and of one that starts), the tail of one that
        // starts (two segments) and the small levels (two segments each, at most two of them).
        assert!(put <= 4 * (running + 1) + 2 + 4, "batch {batch}: {put} segments put, {running} builds");
        most = most.max(put);
        most_builds = most_builds.max(builds.len());
        if batch % 64 == 63 {
            run.check().await;
        }
    }
    run.check().await;
    assert_eq!(seen, (3..=top).collect(), "every level larger than a segment per half was built");
    assert!(most_builds >= 3, "builds run side by side");
    eprintln!("most segments put by one batch: {most}, builds side by side: {most_builds}, top level: {top_segments}");
    assert!(most * 4 < top_segments as usize, "{most} segments in one batch, the top level is {top_segments}");
}

/// Sec. 6.1's deamortization of CRebuild, end to end: one group per batch through an epoch's
/// end and its window, on a log whose C spans 256 segments. The batch that ends the epoch
/// puts no C segment; the window's group completions build C a few segments at a time, the
/// window's overwrites stash the slots C has not read yet (gone once it has), and after the
/// window the log serves the new C, as the reference, which encodes it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_is_built_over_the_window_a_few_segments_per_group() {
    let (_dir, blobs) = local();
    let mut run = Run::grouped(blobs, (10, 1), SMALL).await;
    let c_segments = 2 * run.state.schedule.capacity() * (WIDTH as u64 * 8) / SMALL.segment_bytes as u64;
    let coded_keys = |keys: Vec<String>| -> std::collections::BTreeSet<String> {
        keys.into_iter()
            .filter(|k| (k.contains("/coded-") || k.contains("/cstage-")) && k.contains("/slots-"))
            .collect()
    };
    let stashed = |run: &Run| run.log.stashed_slots(&run.repo).unwrap();
    let (mut most, mut most_stashed, mut built) = (0, 0, false);
    let epoch = run.state.schedule.capacity() >> GROUP_LOG;
    // One listing per batch (a listing walks every file of the log: most of this test's time).
    let mut before = coded_keys(run.blobs.list("por").await.unwrap());
    for batch in 0..epoch + run.state.schedule.window().max(epoch / 4) + 8 {
        // Fresh slots through the first epoch, then overwrites of any of them.
        let writes = if run.next < run.state.schedule.capacity() { run.writes(2, 0) } else { run.writes(0, 2) };
        let start = run.state.schedule.epoch_start();
        run.batch(&writes).await;
        let after = coded_keys(run.blobs.list("por").await.unwrap());
        let put = after.difference(&before).count();
        before = after;
        if run.state.schedule.epoch_start() != start {
            assert_eq!(put, 0, "batch {batch} ended the epoch and put C segments");
        }
        most = most.max(put);
        built |= run.log.coded_build().is_some();
        most_stashed = most_stashed.max(stashed(&run));
        if run.log.coded_build().is_none_or(|c| c.stage > c.leaves) {
            assert_eq!(stashed(&run), 0, "batch {batch}: the stash outlived the leaves");
        }
        if batch % 64 == 63 {
            run.check().await;
        }
    }
    run.check().await;
    assert!(built && !run.state.schedule.in_window(), "a C was built and the window is over");
    assert!(most_stashed > 0, "window writes stashed slots C had not read");
    eprintln!("most C segments put by one batch: {most} of {c_segments}");
    assert!(most * 16 <= c_segments as usize, "{most} C segments in one batch, C is {c_segments}");
}

//! Crash safety: a writer process is killed (SIGKILL) at random instants while it commits
//! batches and, at the same time, compacts in the background; after each kill the repository
//! must hold only whole batches, every committed block must read back its exact bytes, and
//! `check` must find nothing wrong. At the end the metadata store is rebuilt from the blobs
//! (and its local log) and must hold the same. Both backends.

use vouch_testkit::minio::Minio;

use bytes::Bytes;
use std::collections::HashSet;
use std::process::Command;
use std::time::Duration;
use vouch_store::{BlobStore, CompactionPolicy, MetaDb, ObjectBlobs, Repository, S3Config, StoreError};

/// Blocks 0..20 of a round are large (one upload of two blob segments), 20 and 21 small (an
/// upload kept inline).
const BLOCKS_PER_ROUND: u64 = 22;
const LARGE: u64 = 20;
const SEGMENT_SIZE: usize = 256 << 10;

fn content(round: u64, i: u64) -> Bytes {
    let most = if i < LARGE { 50_000 } else { 2_000 };
    let len = 1 + (round as usize * 7919 + i as usize * 104_729) % most;
    (0..len).map(|j| (j as u64 ^ round.wrapping_mul(31) ^ i.wrapping_mul(7)) as u8).collect::<Vec<_>>().into()
}

fn owner(round: u64) -> Vec<u8> {
    format!("round/{round:06}").into_bytes()
}

fn tag(round: u64, i: u64) -> Vec<u8> {
    format!("{round}.{i}").into_bytes()
}

/// Compaction whenever a segment is less than 70% live.
fn eager() -> CompactionPolicy {
    CompactionPolicy { min_live: 0.7, min_garbage: 0, ..CompactionPolicy::default() }
}

/// One commit: 22 new blocks, the odd blocks of the round before last forgotten, the round's
/// number recorded.
async fn write_round(repo: &Repository, round: u64) {
    let mut commit = repo.begin();
    for ids in [0..LARGE, LARGE..BLOCKS_PER_ROUND] {
        let mut upload = repo.upload(&owner(round)).unwrap();
        for i in ids {
            upload.add(i, &tag(round, i), content(round, i)).await.unwrap();
        }
        commit.add_blocks(upload.finish().await.unwrap());
    }
    commit.put_record(b"last-round", round.to_le_bytes().to_vec());
    if round >= 2 {
        commit.forget_blocks_except(&owner(round - 2), (0..BLOCKS_PER_ROUND).step_by(2).collect());
    }
    repo.commit(commit).await.unwrap();
}

fn last_round(repo: &Repository) -> Option<u64> {
    repo.record(b"last-round").unwrap().map(|v| u64::from_le_bytes(v.try_into().unwrap()))
}

/// The invariants after a crash: whole batches only, every block reads back its bytes, a
/// forgotten block is not indexed, and `check` finds nothing wrong.
async fn check(repo: &Repository) -> Option<u64> {
    let last = last_round(repo);
    for round in 0..=last.unwrap_or(0) {
        if last.is_none() {
            break;
        }
        let kept: Vec<u64> = if round + 2 <= last.unwrap() {
            (0..BLOCKS_PER_ROUND).step_by(2).collect()
        } else {
            (0..BLOCKS_PER_ROUND).collect()
        };
        let got = repo.read_blocks(&owner(round), &kept).await.unwrap_or_else(|e| panic!("round {round}: {e}"));
        for (i, b) in kept.iter().zip(got) {
            assert_eq!(
                (b.tag, b.data),
                (tag(round, *i), content(round, *i)),
                "round {round} block {i} reads other bytes"
            );
        }
        let forgotten: HashSet<u64> = (0..BLOCKS_PER_ROUND).filter(|i| !kept.contains(i)).collect();
        for i in forgotten {
            match repo.read_blocks(&owner(round), &[i]).await {
                Err(StoreError::Corrupt { detail, .. }) if detail.contains("not indexed") => {}
                other => panic!("round {round} is not whole (last committed {last:?}): block {i}: {other:?}"),
            }
        }
    }
    let report = repo.check().await.unwrap();
    assert!(report.is_ok(), "{report:#?}");
    last
}

/// The local backend under `dir`, or S3 as configured (in the child: from its environment).
fn backend(dir: &std::path::Path, s3: Option<&S3Config>) -> ObjectBlobs {
    match s3 {
        None => ObjectBlobs::local(&dir.join("blobs")).unwrap(),
        Some(config) => ObjectBlobs::s3(config).unwrap(),
    }
}

fn open(dir: &std::path::Path, s3: Option<&S3Config>) -> Repository {
    let meta = MetaDb::open(&dir.join("meta.redb")).unwrap();
    Repository::open(backend(dir, s3), meta).unwrap().with_segment_size(SEGMENT_SIZE)
}

/// The child side of [`kill_the_writer_at_random_instants`]: writes rounds, and compacts in
/// the background, until killed. Run only by that test (it sets `VOUCH_CRASH_DIR`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of the crash test"]
async fn crash_writer_child_process() {
    let dir = std::path::PathBuf::from(std::env::var("VOUCH_CRASH_DIR").expect("run by the crash test"));
    let s3 = (std::env::var("VOUCH_CRASH_BACKEND").unwrap() == "s3").then(|| S3Config::from_env(None).unwrap());
    let repo = std::sync::Arc::new(open(&dir, s3.as_ref()));
    repo.sweep_orphans().await.unwrap();
    let compactor = repo.clone();
    let runs = dir.join("compactions");
    tokio::spawn(async move {
        loop {
            let done = compactor.maintain(&eager()).await.unwrap();
            if done.moved_blocks > 0 {
                // For the parent: compaction was at work while the writer was being killed.
                use std::io::Write;
                let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&runs).unwrap();
                writeln!(file, "{done:?}").unwrap();
            }
            tokio::task::yield_now().await;
        }
    });
    let mut round = last_round(&repo).map_or(0, |r| r + 1);
    loop {
        write_round(&repo, round).await;
        round += 1;
    }
}

async fn kill_the_writer_at_random_instants(minio: Option<&Minio>) {
    let spec = if minio.is_some() { "s3" } else { "local" };
    let extra_env = minio.map(Minio::env).unwrap_or_default();
    let dir = tempfile::tempdir().unwrap();
    let mut last = None;
    for kill in 0..8u64 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "crash::crash_writer_child_process", "--nocapture"])
            .env("VOUCH_CRASH_DIR", dir.path())
            .env("VOUCH_CRASH_BACKEND", spec)
            .envs(extra_env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Deterministic "random" instants between 150 and 900 ms.
        tokio::time::sleep(Duration::from_millis(150 + (kill * 7_919 % 750))).await;
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(!status.success(), "the writer must have been killed, not have stopped: {status}");
        let repo = open(dir.path(), minio.map(|m| &m.config));
        let now = check(&repo).await;
        assert!(now >= last, "committed rounds went backwards: {last:?} -> {now:?}");
        last = now;
    }
    assert!(last.unwrap_or(0) >= 8, "the writer made too little progress to test anything: {last:?}");
    let runs = std::fs::read_to_string(dir.path().join("compactions")).unwrap_or_default();
    assert!(runs.lines().count() >= 2, "compaction hardly ran beside the writer: {runs}");

    // The metadata store lost: rebuilt from the blobs and the local log, it holds the same.
    std::fs::remove_file(dir.path().join("meta.redb")).unwrap();
    let blobs = backend(dir.path(), minio.map(|m| &m.config));
    let (repo, report) = Repository::rebuild(blobs, &dir.path().join("meta.redb")).await.unwrap();
    assert!(report.problems.is_empty(), "{report:#?}");
    assert_eq!(check(&repo.with_segment_size(SEGMENT_SIZE)).await, last, "{report:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_writer_leaves_whole_batches_on_the_local_backend() {
    kill_the_writer_at_random_instants(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_writer_leaves_whole_batches_on_s3() {
    let minio = Minio::start();
    kill_the_writer_at_random_instants(Some(&minio)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_moves_live_blocks_and_deletes_dead_and_orphan_segments() {
    let dir = tempfile::tempdir().unwrap();
    let repo = open(dir.path(), None);
    for round in 0..6 {
        write_round(&repo, round).await;
    }
    // A segment put by a writer that crashed before its commit.
    let blobs = backend(dir.path(), None);
    blobs.put("segments/00000000000fffff", Bytes::from_static(b"orphan")).await.unwrap();
    let before = blobs.list("segments").await.unwrap().len();
    let done = repo.compact(&eager()).await.unwrap();
    assert!(done.rewritten_segments > 0 && done.moved_blocks > 0, "{done:?}");
    assert!(done.deleted_segments >= done.rewritten_segments, "{done:?}");
    // The orphan goes too, with the sweep (which runs before a provider serves).
    assert_eq!(repo.sweep_orphans().await.unwrap(), 1);
    assert_eq!(check(&repo).await, Some(5));
    let after = blobs.list("segments").await.unwrap();
    let report = repo.check().await.unwrap();
    assert_eq!(
        (after.len() as u64, report.orphan_segments),
        (report.segments, 0),
        "every object is a committed segment"
    );
    assert!(after.len() < before, "{before} -> {}", after.len());
    // Nothing left to do the second time.
    let again = repo.compact(&eager()).await.unwrap();
    assert_eq!((again.moved_blocks, again.deleted_segments), (0, 0));
}

#[tokio::test]
async fn torn_corrupted_or_missing_segments_are_reported_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let meta = MetaDb::open(&dir.path().join("meta.redb")).unwrap();
    let repo = Repository::open(backend(dir.path(), None), meta).unwrap();
    write_round(&repo, 0).await;
    let segments: Vec<_> =
        std::fs::read_dir(dir.path().join("blobs/segments")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(segments.len(), 1, "one round, one segment");
    let file = &segments[0];
    let corrupt = |r: Result<_, StoreError>| matches!(r, Err(StoreError::Corrupt { .. }));
    let last = LARGE - 1;
    // The blocks lie back to back from the segment's first byte.
    let last_offset: usize = (0..last).map(|i| content(0, i).len()).sum();

    // One flipped bit inside a block.
    let mut bytes = std::fs::read(file).unwrap();
    bytes[content(0, 0).len() / 2] ^= 0x10;
    std::fs::write(file, &bytes).unwrap();
    assert!(corrupt(repo.read_blocks(&owner(0), &[0]).await));
    // A segment cut short (a torn write).
    bytes.truncate(last_offset + 1);
    std::fs::write(file, &bytes).unwrap();
    assert!(corrupt(repo.read_blocks(&owner(0), &[last]).await));
    // A segment gone.
    std::fs::remove_file(file).unwrap();
    assert!(corrupt(repo.read_blocks(&owner(0), &[last]).await));
}

#[test]
fn a_corrupted_metadata_file_is_reported_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.redb");
    {
        let meta = MetaDb::open(&path).unwrap();
        let mut batch = vouch_store::MetaBatch::default();
        for i in 0..2000u32 {
            batch.put(format!("k/{i:05}").into_bytes(), vec![(i % 256) as u8; 100]);
        }
        vouch_store::MetaStore::commit(&meta, &batch).unwrap();
    }
    // Overwrite a stretch in the middle of the file, where the entries' pages are.
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid..mid + 4096].iter_mut().for_each(|b| *b ^= 0x5a);
    std::fs::write(&path, &bytes).unwrap();
    // The integrity check on open finds it.
    let err = MetaDb::open(&path).unwrap_err();
    assert!(matches!(err, vouch_store::StoreError::Corrupt { .. }), "{err:?}");
}

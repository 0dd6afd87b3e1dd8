//! Crash safety: a writer process is killed (SIGKILL) at random instants while it writes
//! batches and compacts; after each kill the store must hold only whole batches, and every
//! committed index entry must read back its exact bytes. Both backends.

mod common;

use bytes::Bytes;
use std::process::Command;
use std::time::Duration;
use vouch_store::{
    compact, next_segment, put_segments, read_block, record_segments, segment_sizes, BlobStore, Location, MetaBatch,
    MetaDb, MetaStore, ObjectBlobs, S3Config, SegmentPacker,
};

const BLOCKS_PER_ROUND: u32 = 20;

fn content(round: u32, i: u32) -> Vec<u8> {
    let len = 1 + (round as usize * 7919 + i as usize * 104_729) % 50_000;
    (0..len).map(|j| (j as u32 ^ round.wrapping_mul(31) ^ i.wrapping_mul(7)) as u8).collect()
}

fn key(round: u32, i: u32) -> Vec<u8> {
    format!("idx/{round:06}/{i:03}").into_bytes()
}

/// One batch: 20 new blocks, and the odd blocks of the round before last deleted.
async fn write_round<B: BlobStore>(blobs: &B, meta: &MetaDb, round: u32) {
    let mut packer = SegmentPacker::new(next_segment(meta).unwrap(), 256 << 10);
    let mut batch = MetaBatch::default();
    for i in 0..BLOCKS_PER_ROUND {
        batch.put(key(round, i), packer.add(&content(round, i)).to_bytes().to_vec());
    }
    if round >= 2 {
        for i in (1..BLOCKS_PER_ROUND).step_by(2) {
            batch.delete(key(round - 2, i));
        }
    }
    batch.put(&b"last-round"[..], round.to_le_bytes().to_vec());
    let (segments, next) = packer.finish();
    record_segments(&mut batch, &segment_sizes(&segments), next);
    put_segments(blobs, segments).await.unwrap();
    meta.commit(&batch).unwrap();
}

fn last_round(meta: &MetaDb) -> Option<u32> {
    meta.get(b"last-round").unwrap().map(|v| u32::from_le_bytes(v.try_into().unwrap()))
}

/// The invariants after a crash: whole batches only, and every entry reads back its bytes.
async fn check<B: BlobStore>(blobs: &B, meta: &MetaDb) -> Option<u32> {
    let last = last_round(meta);
    let entries = meta.scan(b"idx/").unwrap();
    for (k, v) in &entries {
        let name = std::str::from_utf8(k).unwrap();
        let (round, i): (u32, u32) = (name[4..10].parse().unwrap(), name[11..].parse().unwrap());
        let at = Location::from_bytes(v).unwrap();
        let got = read_block(blobs, &at).await.unwrap_or_else(|e| panic!("{name} points at missing bytes: {e}"));
        assert_eq!(got, Bytes::from(content(round, i)), "{name} reads other bytes");
    }
    if let Some(last) = last {
        for round in 0..=last {
            let n = entries.iter().filter(|(k, _)| k.starts_with(format!("idx/{round:06}/").as_bytes())).count();
            let want = if round + 2 <= last { BLOCKS_PER_ROUND / 2 } else { BLOCKS_PER_ROUND };
            assert_eq!(n as u32, want, "round {round} is not whole (last committed {last})");
        }
    }
    last
}

/// The local backend under `dir`, or S3 as configured (in the child: from its environment).
fn backend(dir: &std::path::Path, s3: Option<&S3Config>) -> ObjectBlobs {
    match s3 {
        None => ObjectBlobs::local(&dir.join("blobs")).unwrap(),
        Some(config) => ObjectBlobs::s3(config).unwrap(),
    }
}

/// The child side of [`kill_the_writer_at_random_instants`]: writes rounds until killed.
/// Run only by that test (it sets `VOUCH_CRASH_DIR`).
#[tokio::test]
#[ignore = "child process of the crash test"]
async fn crash_writer_child_process() {
    let dir = std::path::PathBuf::from(std::env::var("VOUCH_CRASH_DIR").expect("run by the crash test"));
    let s3 = (std::env::var("VOUCH_CRASH_BACKEND").unwrap() == "s3").then(|| S3Config::from_env(None).unwrap());
    let blobs = backend(&dir, s3.as_ref());
    let meta = MetaDb::open(&dir.join("meta.redb")).unwrap();
    let mut round = last_round(&meta).map_or(0, |r| r + 1);
    loop {
        write_round(&blobs, &meta, round).await;
        if round % 3 == 2 {
            compact(&blobs, &meta, b"idx/", 0.7, 256 << 10).await.unwrap();
        }
        round += 1;
    }
}

async fn kill_the_writer_at_random_instants(minio: Option<&common::Minio>) {
    let spec = if minio.is_some() { "s3" } else { "local" };
    let extra_env = minio.map(common::Minio::env).unwrap_or_default();
    let dir = tempfile::tempdir().unwrap();
    let mut last = None;
    for kill in 0..8u64 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "crash_writer_child_process", "--nocapture"])
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
        let meta = MetaDb::open(&dir.path().join("meta.redb")).unwrap();
        let now = check(&backend(dir.path(), minio.map(|m| &m.config)), &meta).await;
        assert!(now >= last, "committed rounds went backwards: {last:?} -> {now:?}");
        last = now;
    }
    assert!(last.unwrap_or(0) >= 8, "the writer made too little progress to test anything: {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_writer_leaves_whole_batches_on_the_local_backend() {
    kill_the_writer_at_random_instants(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_writer_leaves_whole_batches_on_s3() {
    let minio = common::Minio::start();
    kill_the_writer_at_random_instants(Some(&minio)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_moves_live_blocks_and_deletes_dead_and_orphan_segments() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = backend(dir.path(), None);
    let meta = MetaDb::open(&dir.path().join("meta.redb")).unwrap();
    for round in 0..6 {
        write_round(&blobs, &meta, round).await;
    }
    // A segment put by a writer that crashed before its commit (ids at the counter are simply
    // reused by the next write; this one is further up).
    put_segments(&blobs, vec![(next_segment(&meta).unwrap() + 1000, Bytes::from_static(b"orphan").into())])
        .await
        .unwrap();
    let before = blobs.list("segments").await.unwrap().len();
    let done = compact(&blobs, &meta, b"idx/", 0.7, 256 << 10).await.unwrap();
    assert!(done.rewritten_segments > 0 && done.moved_blocks > 0, "{done:?}");
    assert!(done.deleted_segments > done.rewritten_segments, "the orphan goes too: {done:?}");
    assert_eq!(check(&blobs, &meta).await, Some(5));
    let after = blobs.list("segments").await.unwrap();
    assert_eq!(after.len(), meta.scan(b"seg/").unwrap().len(), "every object is a committed segment");
    assert!(after.len() < before, "{before} -> {}", after.len());
    // Nothing left to do the second time.
    let again = compact(&blobs, &meta, b"idx/", 0.7, 256 << 10).await.unwrap();
    assert_eq!((again.moved_blocks, again.deleted_segments), (0, 0));
}

#[tokio::test]
async fn torn_corrupted_or_missing_segments_are_reported_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = backend(dir.path(), None);
    let meta = MetaDb::open(&dir.path().join("meta.redb")).unwrap();
    write_round(&blobs, &meta, 0).await;
    let at = |i: u32| Location::from_bytes(&meta.get(&key(0, i)).unwrap().unwrap()).unwrap();
    let file = |l: &Location| dir.path().join("blobs").join(vouch_store::segment_key(l.segment));
    let corrupt = |r: Result<Bytes, vouch_store::StoreError>| matches!(r, Err(vouch_store::StoreError::Corrupt { .. }));

    // One flipped bit inside a block.
    let (first, last) = (at(0), at(BLOCKS_PER_ROUND - 1));
    let mut bytes = std::fs::read(file(&first)).unwrap();
    bytes[first.offset as usize + first.len as usize / 2] ^= 0x10;
    std::fs::write(file(&first), &bytes).unwrap();
    assert!(corrupt(read_block(&blobs, &first).await));
    // A segment cut short (a torn write).
    let mut bytes = std::fs::read(file(&last)).unwrap();
    bytes.truncate(last.offset as usize + 1);
    std::fs::write(file(&last), &bytes).unwrap();
    assert!(corrupt(read_block(&blobs, &last).await));
    // A segment gone.
    std::fs::remove_file(file(&last)).unwrap();
    assert!(corrupt(read_block(&blobs, &last).await));
}

#[test]
fn a_corrupted_metadata_file_is_reported_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.redb");
    {
        let meta = MetaDb::open(&path).unwrap();
        let mut batch = MetaBatch::default();
        for i in 0..2000u32 {
            batch.put(format!("k/{i:05}").into_bytes(), vec![(i % 256) as u8; 100]);
        }
        meta.commit(&batch).unwrap();
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

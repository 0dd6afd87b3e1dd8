//! The repository's suite, run over each backend by `conformance.rs`: blocks packed and read
//! back, inline and in blobs; records; lists; forgetting and compaction; check; and a rebuild
//! of the metadata store from the blobs alone.

use bytes::Bytes;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use vouch_core::{hash, Block, FlexList};
use vouch_store::{BlobStore, CompactionPolicy, MetaDb, ObjectBlobs, Repository, StoreError};

const OWNER: &[u8] = b"alice/file-1";

fn block(i: u64) -> Bytes {
    vec![(i % 251) as u8; 1 + (i as usize * 7919) % 40_000].into()
}

fn tag(i: u64) -> Vec<u8> {
    format!("tag-{i}").into_bytes()
}

fn open(blobs: &ObjectBlobs, dir: &Path) -> Repository {
    let meta = MetaDb::open(&dir.join("meta.redb")).unwrap();
    Repository::open(blobs.clone(), meta).unwrap().with_segment_size(1 << 20)
}

async fn segment_objects(blobs: &ObjectBlobs) -> Vec<String> {
    let keys = blobs.list("segments").await.unwrap();
    keys.into_iter().filter(|k| k.len() == "segments/".len() + 16).collect()
}

/// Reads blocks `ids` of [`OWNER`] and checks them against [`block`] and [`tag`].
async fn assert_blocks(repo: &Repository, ids: &[u64]) {
    let got = repo.read_blocks(OWNER, ids).await.unwrap();
    for (id, b) in ids.iter().zip(got) {
        assert_eq!((b.tag, b.data), (tag(*id), block(*id)), "block {id}");
    }
}

pub async fn suite(blobs: ObjectBlobs, dir: &Path) {
    let repo = open(&blobs, dir);
    let before = segment_objects(&blobs).await.len();

    // 300 blocks of many sizes packed into 1 MiB segments, read back in another order.
    let mut upload = repo.upload(OWNER).unwrap();
    for i in 0..300 {
        upload.add(i, &tag(i), block(i)).await.unwrap();
    }
    let stored = upload.finish().await.unwrap();
    assert_eq!(stored.len(), 300);
    let mut commit = repo.begin();
    commit.add_blocks(stored).put_record(b"ns/f1", b"one".to_vec());
    repo.commit(commit).await.unwrap();
    let total: usize = (0..300).map(|i| block(i).len()).sum();
    let written = segment_objects(&blobs).await.len() - before;
    assert!(written >= total >> 20 && written <= (total >> 20) + 2, "{written} segments for {total} bytes");
    let mut ids: Vec<u64> = (0..300).rev().collect();
    ids.swap(3, 200);
    assert_blocks(&repo, &ids).await;
    assert!(matches!(repo.read_blocks(OWNER, &[300]).await, Err(StoreError::Corrupt { .. })), "not indexed");
    assert!(matches!(repo.read_blocks(b"bob/file-1", &[1]).await, Err(StoreError::Corrupt { .. })));

    // A small upload rides in the commit: no new object.
    let mut upload = repo.upload(OWNER).unwrap();
    upload.add(1000, &tag(1000), block(1000)).await.unwrap();
    let mut commit = repo.begin();
    commit.add_blocks(upload.finish().await.unwrap());
    repo.commit(commit).await.unwrap();
    assert_eq!(segment_objects(&blobs).await.len() - before, written, "a small commit writes no object");
    assert_blocks(&repo, &[1000, 0]).await;

    // Records, in key order, and lists.
    let list = Arc::new(
        FlexList::build(&(0..500).map(|i| Block::new(hash::data(&[i as u8]), 10, i)).collect::<Vec<_>>()).unwrap(),
    );
    let mut commit = repo.begin();
    commit.put_record(b"ns/f0", b"zero".to_vec()).put_record(b"other", b"x".to_vec()).save_list("l1", list.clone());
    repo.commit(commit).await.unwrap();
    let records = repo.records(b"ns/").unwrap();
    assert_eq!(records, vec![(b"ns/f0".to_vec(), b"zero".to_vec()), (b"ns/f1".to_vec(), b"one".to_vec())]);
    assert_eq!(repo.record(b"other").unwrap(), Some(b"x".to_vec()));
    assert_eq!(repo.load_list("l1").unwrap().root(), list.root());
    assert!(matches!(repo.load_list("l2"), Err(StoreError::NotFound { .. })));

    // Forgetting most blocks, then compaction: the kept blocks read back from new segments,
    // the old segments are gone.
    let keep: HashSet<u64> = (0..300).step_by(5).chain([1000]).collect();
    let mut commit = repo.begin();
    commit.forget_blocks_except(OWNER, keep.clone()).delete_record(b"other");
    repo.commit(commit).await.unwrap();
    let kept: Vec<u64> = {
        let mut k: Vec<u64> = keep.iter().copied().collect();
        k.sort();
        k
    };
    assert!(matches!(repo.read_blocks(OWNER, &[1]).await, Err(StoreError::Corrupt { .. })), "forgotten");
    let lenient = CompactionPolicy { min_live: 0.5, min_garbage: 0, ..CompactionPolicy::default() };
    let strict = CompactionPolicy::default();
    assert_eq!(repo.compact(&strict).await.unwrap().moved_blocks, 0, "less garbage than the default threshold");
    let done = repo.compact(&lenient).await.unwrap();
    assert!(done.rewritten_segments >= 2 && done.moved_blocks >= 50 && done.deleted_segments >= 2, "{done:?}");
    assert_blocks(&repo, &kept).await;
    assert!(segment_objects(&blobs).await.len() - before < written, "the old segments are deleted");
    assert_eq!(repo.compact(&lenient).await.unwrap().moved_blocks, 0, "nothing left to do");
    let report = repo.check().await.unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!((report.blocks, report.lists), (kept.len() as u64, 1));

    // Copies of the metadata's log pile up (one per close here); maintenance replaces them
    // with a snapshot.
    for i in 0..17u64 {
        let mut commit = repo.begin();
        commit.put_record(format!("n/{i:02}").as_bytes(), i.to_le_bytes().to_vec());
        repo.commit(commit).await.unwrap();
        repo.close().await.unwrap();
    }
    let logs = blobs.list("log").await.unwrap().len();
    assert!(logs >= 17 && blobs.list("snapshot").await.unwrap().is_empty(), "{logs} log copies");
    repo.maintain(&strict).await.unwrap();
    assert_eq!(blobs.list("snapshot").await.unwrap().len(), 1);
    assert!(blobs.list("log").await.unwrap().is_empty(), "the snapshot replaces the copies before it");
    let mut commit = repo.begin();
    commit.delete_record(b"n/16");
    repo.commit(commit).await.unwrap();

    // The metadata store lost: rebuilt from the blobs alone (after a clean close).
    repo.close().await.unwrap();
    drop(repo);
    for name in ["meta.redb", "meta.redb.wal"] {
        std::fs::remove_file(dir.join(name)).unwrap();
    }
    let (repo, report) = Repository::rebuild(blobs.clone(), &dir.join("meta.redb")).await.unwrap();
    assert!(report.problems.is_empty() && report.moved_aside.is_empty(), "{report:?}");
    assert!(report.snapshot.is_some() && report.log_copies == 1, "{report:?}");
    assert_eq!(report.blocks, kept.len());
    assert_eq!(repo.records(b"n/").unwrap().len(), 16, "the snapshot, then the copy after it");
    assert_blocks(&repo, &kept).await;
    assert_eq!(repo.records(b"ns/").unwrap().len(), 2);
    assert_eq!(repo.record(b"other").unwrap(), None);
    assert_eq!(repo.load_list("l1").unwrap().root(), list.root());
    assert!(repo.check().await.unwrap().is_ok());

    // A flipped byte in a segment is found by check, and not served.
    let key = segment_objects(&blobs).await.pop().unwrap();
    let mut bytes = blobs.get(&key).await.unwrap().to_vec();
    bytes[10] ^= 0x01;
    blobs.put(&key, bytes.into()).await.unwrap();
    let report = repo.check().await.unwrap();
    assert!(!report.is_ok() && report.problems.iter().any(|p| p.detail.contains("checksum")), "{report:?}");
    assert!(matches!(repo.read_blocks(OWNER, &kept).await, Err(StoreError::Corrupt { .. })));
}

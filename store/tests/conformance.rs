//! One conformance suite that every backend passes unchanged (restic-style), plus the
//! failures each backend must report as typed errors.

mod common;

use bytes::Bytes;
use common::Minio;
use std::sync::Arc;
use vouch_core::{hash, Block, FlexList};
use vouch_store::{
    chunk_count, load_list, put_segments, read_block, save_list, segment_key, BlobStore, ListWriter, Location,
    MetaBatch, MetaDb, MetaStore, ObjectBlobs, S3Config, SegmentPacker, StoreError,
};

/// Everything a [`BlobStore`] promises, against an empty store.
async fn conformance<S: BlobStore + 'static>(store: Arc<S>) {
    // put / get / overwrite
    store.put("a/one", Bytes::from_static(b"hello")).await.unwrap();
    assert_eq!(store.get("a/one").await.unwrap(), Bytes::from_static(b"hello"));
    store.put("a/one", Bytes::from_static(b"hello again")).await.unwrap();
    assert_eq!(store.get("a/one").await.unwrap(), Bytes::from_static(b"hello again"));
    // an object written from parts is their concatenation
    let parts = vec![Bytes::from_static(b"ab"), Bytes::new(), Bytes::from_static(b"cde")];
    store.put_parts("a/parts", parts).await.unwrap();
    assert_eq!(store.get("a/parts").await.unwrap(), Bytes::from_static(b"abcde"));
    store.delete("a/parts").await.unwrap();
    // ranged reads, including the empty range at the end and ranges past it
    assert_eq!(store.get_range("a/one", 6..11).await.unwrap(), Bytes::from_static(b"again"));
    assert_eq!(store.get_range("a/one", 11..11).await.unwrap(), Bytes::new());
    assert!(matches!(store.get_range("a/one", 6..12).await, Err(StoreError::BadRange { .. })));
    assert!(matches!(store.get_range("a/one", 20..30).await, Err(StoreError::BadRange { .. })));
    // missing keys
    assert!(matches!(store.get("a/missing").await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.get_range("a/missing", 0..1).await, Err(StoreError::NotFound { .. })));
    // invalid keys never reach the backend
    for bad in ["", "/x", "x/", "a//b", "../escape", "a/./b", "sp ace", "a\\b"] {
        assert!(matches!(store.put(bad, Bytes::new()).await, Err(StoreError::InvalidKey { .. })), "{bad:?}");
    }
    // list: sorted, by prefix, not matching partial segments
    store.put("a/two", Bytes::from_static(b"2")).await.unwrap();
    store.put("ab/three", Bytes::from_static(b"3")).await.unwrap();
    assert_eq!(store.list("a").await.unwrap(), vec!["a/one".to_string(), "a/two".to_string()]);
    assert_eq!(store.list("").await.unwrap().len(), 3);
    assert!(store.list("nothing").await.unwrap().is_empty());
    // delete is idempotent
    store.delete("a/two").await.unwrap();
    store.delete("a/two").await.unwrap();
    assert!(matches!(store.get("a/two").await, Err(StoreError::NotFound { .. })));
    // a large object (a segment's size), whole and in ranges
    let large: Bytes = (0..40u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect::<Vec<_>>().into();
    store.put("segments/large", large.clone()).await.unwrap();
    assert_eq!(store.get("segments/large").await.unwrap(), large);
    let (s, e) = (17u64 << 20, (17u64 << 20) + 16384);
    assert_eq!(store.get_range("segments/large", s..e).await.unwrap(), large.slice(s as usize..e as usize));
    // concurrent writers: distinct keys all land; one key ends up exactly one writer's object
    let mut tasks = Vec::new();
    for w in 0..8u8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let own = Bytes::from(vec![w; 100_000 + usize::from(w)]);
            store.put(&format!("conc/w{w}"), own.clone()).await.unwrap();
            store.put("conc/shared", own).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for w in 0..8u8 {
        assert_eq!(store.get(&format!("conc/w{w}")).await.unwrap(), Bytes::from(vec![w; 100_000 + usize::from(w)]));
    }
    let shared = store.get("conc/shared").await.unwrap();
    let w = shared[0];
    assert_eq!(shared, Bytes::from(vec![w; 100_000 + usize::from(w)]), "a torn or mixed object");
    packed_blocks_round_trip(&*store).await;
}

/// Blocks of many sizes packed into 1 MiB segments, indexed in the metadata store, read back
/// by ranged reads.
async fn packed_blocks_round_trip<S: BlobStore>(store: &S) {
    let meta_dir = tempfile::tempdir().unwrap();
    let meta = MetaDb::open(&meta_dir.path().join("meta.redb")).unwrap();
    let blocks: Vec<Vec<u8>> = (0..300u32).map(|i| vec![(i % 251) as u8; 1 + (i as usize * 7919) % 40_000]).collect();
    let mut packer = SegmentPacker::new(100, 1 << 20);
    let mut batch = MetaBatch::default();
    for (i, b) in blocks.iter().enumerate() {
        batch.put(format!("blk/{i:08}").into_bytes(), packer.add(b).to_bytes().to_vec());
    }
    let (segments, next) = packer.finish();
    let total: usize = blocks.iter().map(Vec::len).sum();
    assert!(segments.len() >= total >> 20 && segments.len() <= (total >> 20) + 2, "{} segments", segments.len());
    assert!(segments.iter().all(|(_, s)| s.len() <= 1 << 20));
    assert_eq!(next, 100 + segments.len() as u64);
    put_segments(store, segments).await.unwrap();
    meta.commit(&batch).unwrap();
    for (i, want) in blocks.iter().enumerate() {
        let at = meta.get(format!("blk/{i:08}").as_bytes()).unwrap().unwrap();
        let at = Location::from_bytes(&at).unwrap();
        assert_eq!(read_block(store, &at).await.unwrap(), Bytes::from(want.clone()), "block {i}");
    }
    let listed = store.list("segments").await.unwrap();
    assert!((100..next).all(|id| listed.contains(&segment_key(id))), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_directory_passes_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    conformance(Arc::new(ObjectBlobs::local(dir.path()).unwrap())).await;
    // No temporary files are left behind by the atomic writes.
    let stray: Vec<_> = walk(dir.path()).into_iter().filter(|p| p.to_string_lossy().contains('#')).collect();
    assert!(stray.is_empty(), "{stray:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn local_directory_that_is_a_file_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let err = ObjectBlobs::local(&file.join("sub")).unwrap_err();
    assert!(matches!(err, StoreError::Backend { .. } | StoreError::PermissionDenied { .. }), "{err}");
    assert!(err.to_string().contains("plain-file"), "the message names the place: {err}");
}

#[tokio::test]
async fn unreachable_s3_endpoint_fails_fast_with_a_typed_error() {
    // Port 1 on loopback: nothing listens there.
    let config = S3Config {
        endpoint: Some("http://127.0.0.1:1".into()),
        bucket: "vouch".into(),
        region: "us-east-1".into(),
        access_key: "k".into(),
        secret_key: "s".into(),
    };
    let store = ObjectBlobs::s3(&config).unwrap();
    let started = std::time::Instant::now();
    let err = store.get("x").await.unwrap_err();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "gave up in bounded time");
}

#[test]
fn metadata_batches_commit_whole_and_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.redb");
    {
        let meta = MetaDb::open(&path).unwrap();
        assert_eq!(meta.get(b"root/f").unwrap(), None);
        let mut batch = MetaBatch::default();
        batch
            .put(&b"root/f"[..], &b"r1"[..])
            .put(&b"index/f/1"[..], &b"seg0:0"[..])
            .put(&b"index/f/2"[..], &b"seg0:9"[..]);
        meta.commit(&batch).unwrap();
        let mut batch = MetaBatch::default();
        batch.delete(&b"index/f/1"[..]).put(&b"root/f"[..], &b"r2"[..]);
        meta.commit(&batch).unwrap();
        // A second handle on the same file is refused with a clear error, not corruption.
        let again = MetaDb::open(&path).unwrap_err();
        assert!(again.to_string().contains("meta.redb"), "{again}");
    }
    let meta = MetaDb::open(&path).unwrap();
    assert_eq!(meta.get(b"root/f").unwrap(), Some(b"r2".to_vec()));
    assert_eq!(meta.scan(b"index/f/").unwrap(), vec![(b"index/f/2".to_vec(), b"seg0:9".to_vec())]);
    assert!(meta.scan(b"zzz").unwrap().is_empty());
}

#[test]
fn metadata_path_in_a_missing_directory_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = MetaDb::open(&dir.path().join("no/such/dir/meta.redb")).unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
}

/// The S3 backend against a real MinIO: the same suite, then the S3-only failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_on_minio_passes_the_suite_and_reports_bad_credentials() {
    let minio = Minio::start();
    conformance(Arc::new(ObjectBlobs::s3(&minio.config).unwrap())).await;
    assert!(ObjectBlobs::s3(&minio.config).unwrap().list("segments").await.unwrap().len() > 1);

    let wrong_secret = S3Config { secret_key: "not-the-secret".into(), ..minio.config.clone() };
    let err = ObjectBlobs::s3(&wrong_secret).unwrap().get("a/one").await.unwrap_err();
    assert!(matches!(err, StoreError::BadCredentials { .. }), "{err:?}");
    let unknown_user = S3Config { access_key: "nobody".into(), ..minio.config.clone() };
    let err = ObjectBlobs::s3(&unknown_user).unwrap().put("a/x", Bytes::from_static(b"x")).await.unwrap_err();
    assert!(matches!(err, StoreError::BadCredentials { .. }), "{err:?}");
    let no_bucket = S3Config { bucket: "no-such-bucket".into(), ..minio.config.clone() };
    let err = ObjectBlobs::s3(&no_bucket).unwrap().get("a/one").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. } | StoreError::Backend { .. }), "{err:?}");
}

#[test]
fn lists_survive_a_restart_share_chunks_and_corruption_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.redb");
    let blocks: Vec<Block> = (0..20_077u64).map(|i| Block::new(hash::data(&i.to_le_bytes()), 4096, i)).collect();
    let list = FlexList::build(&blocks).unwrap();
    {
        let meta = MetaDb::open(&path).unwrap();
        let mut batch = MetaBatch::default();
        save_list(&mut batch, &meta, "f1", &list).unwrap();
        meta.commit(&batch).unwrap();
    }
    let meta = MetaDb::open(&path).unwrap();
    let loaded = load_list(&meta, "f1").unwrap();
    assert_eq!((loaded.root(), loaded.total_len()), (list.root(), list.total_len()));
    assert_eq!(loaded.search(12_345_678).unwrap(), list.search(12_345_678).unwrap());
    assert!(matches!(load_list(&meta, "other"), Err(StoreError::NotFound { .. })));
    let chunks = chunk_count(&meta).unwrap();
    assert!(chunks >= 10, "{chunks} chunks for 20k blocks");

    // A second version with one block inserted shares all but about one chunk.
    let mut edited = list.clone();
    edited.insert(4096 * 9000, Block::new(hash::data(b"new"), 100, 99_999)).unwrap();
    let mut batch = MetaBatch::default();
    save_list(&mut batch, &meta, "f2", &edited).unwrap();
    meta.commit(&batch).unwrap();
    let after = chunk_count(&meta).unwrap();
    assert!(after <= chunks + 2, "an insert added {} chunks", after - chunks);
    assert_eq!(load_list(&meta, "f2").unwrap().root(), edited.root());
    assert_eq!(load_list(&meta, "f1").unwrap().root(), list.root());

    // Deleting both lists deletes every chunk; replacing one keeps the other whole.
    let short = FlexList::build(&blocks[..10]).unwrap();
    let mut writer = ListWriter::new(&meta);
    writer.save("f1", &short).unwrap();
    let mut batch = MetaBatch::default();
    writer.finish(&mut batch);
    meta.commit(&batch).unwrap();
    assert_eq!(load_list(&meta, "f1").unwrap().root(), short.root());
    assert_eq!(load_list(&meta, "f2").unwrap().root(), edited.root());
    let mut writer = ListWriter::new(&meta);
    writer.delete("f1").unwrap();
    writer.delete("f2").unwrap();
    let mut batch = MetaBatch::default();
    writer.finish(&mut batch);
    meta.commit(&batch).unwrap();
    assert_eq!(chunk_count(&meta).unwrap(), 0, "no chunk outlives its lists");
    assert!(meta.scan(b"lref/").unwrap().is_empty());

    // A flipped byte in a stored chunk is caught, not served.
    let mut batch = MetaBatch::default();
    save_list(&mut batch, &meta, "f1", &list).unwrap();
    meta.commit(&batch).unwrap();
    let (key, mut value) = meta.scan(b"lchunk/").unwrap().remove(0);
    value[3] ^= 1;
    let mut batch = MetaBatch::default();
    batch.put(key, value);
    meta.commit(&batch).unwrap();
    assert!(matches!(load_list(&meta, "f1"), Err(StoreError::Corrupt { .. })));
}

//! One conformance suite that every backend passes unchanged (restic-style), then the
//! repository's suite over each backend (`repository.rs`), plus the failures each backend
//! must report as typed errors.

use crate::repository;
use vouch_testkit::minio::Minio;

use bytes::Bytes;
use std::sync::Arc;
use vouch_store::{BlobStore, MetaBatch, MetaDb, MetaStore, ObjectBlobs, S3Config, StoreError};

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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_directory_passes_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    conformance(Arc::new(ObjectBlobs::local(dir.path()).unwrap())).await;
    // No temporary files are left behind by the atomic writes.
    let stray: Vec<_> = walk(dir.path()).into_iter().filter(|p| p.to_string_lossy().contains('#')).collect();
    assert!(stray.is_empty(), "{stray:?}");
    let repo = tempfile::tempdir().unwrap();
    repository::suite(ObjectBlobs::local(&repo.path().join("blobs")).unwrap(), repo.path()).await;
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
    let meta = tempfile::tempdir().unwrap();
    repository::suite(ObjectBlobs::s3(&minio.config).unwrap(), meta.path()).await;
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

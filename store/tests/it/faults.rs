//! A full disk and a read-only disk, for real: each test runs a child process in its own user
//! and mount namespace (`unshare -rm`) over a 1 MiB tmpfs, so no privileges or host state are
//! needed, and checks that the failures come back as typed errors with clear messages.

use bytes::Bytes;
use std::process::Command;
use vouch_store::{BlobStore, MetaBatch, MetaDb, MetaStore, ObjectBlobs, StoreError};

/// The child side: run only by the tests below, inside the namespace they make.
#[tokio::test]
#[ignore = "child process of the fault tests"]
async fn fault_child_process() {
    let dir = std::path::PathBuf::from(std::env::var("VOUCH_FAULT_DIR").expect("run by a fault test"));
    match std::env::var("VOUCH_FAULT_MODE").unwrap().as_str() {
        "full" => {
            let meta = MetaDb::open(&dir.join("meta.redb")).unwrap();
            let blobs = ObjectBlobs::local(&dir.join("blobs")).unwrap();
            let err = blobs.put("segments/big", Bytes::from(vec![7u8; 2 << 20])).await.unwrap_err();
            assert!(matches!(err, StoreError::NoSpace { .. }), "blob put on a full disk: {err:?}");
            assert!(err.to_string().contains("full"), "{err}");
            let mut batch = MetaBatch::default();
            batch.put(&b"big"[..], vec![1u8; 2 << 20]);
            let err = meta.commit(&batch).unwrap_err();
            assert!(matches!(err, StoreError::NoSpace { .. }), "metadata commit on a full disk: {err:?}");
            // What was committed before stays readable.
            assert_eq!(meta.get(b"big").unwrap(), None);
        }
        "readonly" => {
            let blobs = ObjectBlobs::local(&dir).unwrap();
            let err = blobs.put("a/b", Bytes::from_static(b"x")).await.unwrap_err();
            assert!(matches!(err, StoreError::PermissionDenied { .. }), "put on a read-only disk: {err:?}");
            let err = MetaDb::open(&dir.join("meta.redb")).unwrap_err();
            assert!(matches!(err, StoreError::PermissionDenied { .. }), "metadata on a read-only disk: {err:?}");
        }
        other => panic!("unknown mode {other}"),
    }
}

fn run_in_namespace(mode: &str, setup: &str) {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "mount -t tmpfs -o size=1m tmpfs \"$VOUCH_FAULT_DIR\" && {setup} && \
         exec \"$TEST_BIN\" --ignored --exact faults::fault_child_process --nocapture"
    );
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c", &script])
        .env("VOUCH_FAULT_DIR", dir.path())
        .env("VOUCH_FAULT_MODE", mode)
        .env("TEST_BIN", std::env::current_exe().unwrap())
        .output()
        .expect("unshare (util-linux) runs");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{mode}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_full_disk_is_reported_as_no_space() {
    run_in_namespace("full", "true");
}

#[test]
fn a_read_only_disk_is_reported_as_permission_denied() {
    run_in_namespace("readonly", "mount -o remount,ro \"$VOUCH_FAULT_DIR\"");
}

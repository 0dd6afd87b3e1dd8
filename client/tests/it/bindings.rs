//! Values the provider chooses in its answers, each one bound to the client's root or keys:
//! block lengths and read boundaries (a stretched, zero-padded block; a block past the range),
//! the PRF inputs of a retried upload after a refused commit, and an empty file's audit.

use crate::common;

use common::{sample, Setup};
use std::collections::HashSet;
use vouch_client::{ByteEdit, Client, ClientError, ViolationKind as Kind};
use vouch_core::pdp::linear;
use vouch_misbehave::Misbehave;

const BLOCK: Option<usize> = Some(4096);

async fn put(client: &Client, name: &str, data: &[u8]) -> Result<(), ClientError> {
    client.put(name, std::io::Cursor::new(data.to_vec()), BLOCK, |_| {}).await.map(|_| ())
}

/// A lie caught by the check for `kind`, which failed for the reason `why`.
#[track_caller]
fn assert_lie<T: std::fmt::Debug>(result: Result<T, ClientError>, kind: Kind, why: &str) {
    match result {
        Err(ClientError::Misbehaved(v)) if v.kind == kind && v.detail.contains(why) => {}
        other => panic!("expected a caught lie ({kind}: {why}), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stretched_zero_padded_block_is_caught_on_read() {
    let mut setup = Setup::new(Misbehave::None).await;
    // Over 4 MiB: a whole read comes in several chunks, and each chunk's last block has an
    // unopened neighbour to take bytes from.
    let data = sample(9_000_000, 3);
    put(&setup.client(), "f.bin", &data).await.unwrap();
    setup.restart(Misbehave::StretchBlock).await;
    let client = setup.client();
    // A whole read, and a range whose end falls inside the file: the chunk's last block claims
    // its neighbour's bytes and is padded with zeros.
    for range in [None, Some(10_000..30_000)] {
        let mut out = Vec::new();
        let result = client.get("f.bin", None, range.clone(), &mut out).await;
        assert_lie(result, Kind::BadReadProof, "proof does not match the root");
        let from = range.map_or(0, |r| r.start as usize);
        assert_eq!(out, data[from..from + out.len()], "only verified bytes are handed out");
    }
    assert_lie(client.audit("f.bin", None, 460).await, Kind::BadAuditProof, "proof does not match the root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_past_the_requested_range_is_caught_not_a_crash() {
    let mut setup = Setup::new(Misbehave::None).await;
    let data = sample(100_000, 4);
    put(&setup.client(), "f.bin", &data).await.unwrap();
    setup.restart(Misbehave::PastRange).await;
    let mut out = Vec::new();
    let result = setup.client().get("f.bin", None, Some(5_000..9_000), &mut out).await;
    assert_lie(result, Kind::BlocksPastRange, "past the range's end");
    assert!(out.len() <= 4_000 && out == data[5_000..5_000 + out.len()]);
    // A whole read has nothing past its end to send: it still works.
    let mut out = Vec::new();
    setup.client().get("f.bin", None, None, &mut out).await.unwrap();
    assert_eq!(out, data);
}

/// The (nonce, salt) of each tag the provider received.
fn salts(received: &[(u64, Vec<u8>)]) -> HashSet<(u64, [u8; 16])> {
    received.iter().map(|(nonce, tag)| (*nonce, linear::decode_tag(tag).expect("a linear tag").0)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_refused_commit_shares_no_prf_input_with_it() {
    for retry_by_edit in [false, true] {
        let mut setup = Setup::new(Misbehave::None).await;
        let client = setup.client();
        put(&client, "f.bin", &sample(50_000, 5)).await.unwrap();
        setup.restart(Misbehave::RefuseCommit).await;
        let client = setup.client();
        let second = sample(50_000, 6);
        // The provider takes every block of a new version, then refuses the commit...
        let refused = if retry_by_edit {
            client.edit("f.bin", &ByteEdit::Replace { at: 0, data: second[..20_000].to_vec() }, BLOCK).await.map(|_| ())
        } else {
            put(&client, "f.bin", &second).await
        };
        assert!(refused.is_err() && !matches!(refused, Err(ClientError::Misbehaved(_))), "{refused:?}");
        let first_attempt = setup.server.as_ref().unwrap().provider().received_tags();
        assert!(!first_attempt.is_empty());
        // ...and the client tries again: the same nonces come round (they continue from the
        // last committed version), but under a fresh salt.
        if retry_by_edit {
            client.edit("f.bin", &ByteEdit::Replace { at: 0, data: second[..20_000].to_vec() }, BLOCK).await.unwrap();
        } else {
            put(&client, "f.bin", &second).await.unwrap();
        }
        let all = setup.server.as_ref().unwrap().provider().received_tags();
        let (a, b) = (salts(&first_attempt), salts(&all[first_attempt.len()..]));
        let nonces = |s: &HashSet<(u64, [u8; 16])>| s.iter().map(|p| p.0).collect::<HashSet<u64>>();
        assert!(!nonces(&a).is_disjoint(&nonces(&b)), "the retry reuses nonces (what made the leak possible)");
        assert!(a.is_disjoint(&b), "a (nonce, salt) pair was used twice");
        let salt_sets: Vec<HashSet<[u8; 16]>> = [&a, &b].iter().map(|s| s.iter().map(|p| p.1).collect()).collect();
        assert!(salt_sets[0].is_disjoint(&salt_sets[1]));
        // And what was committed reads back verified.
        let mut out = Vec::new();
        client.get("f.bin", None, None, &mut out).await.unwrap();
        let mut want = second.clone();
        if retry_by_edit {
            want = sample(50_000, 5);
            want[..20_000].copy_from_slice(&second[..20_000]);
        }
        assert_eq!(out, want);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_file_audits_as_verified() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    put(&client, "empty", &[]).await.unwrap();
    let report = client.audit("empty", None, 460).await.unwrap();
    assert!(report.verified);
    assert_eq!((report.file_bytes, report.challenged_blocks, report.proof_bytes), (0, 0, 0));
    let mut out = Vec::new();
    client.get("empty", None, None, &mut out).await.unwrap();
    assert!(out.is_empty());
}

#[test]
fn a_provider_refuses_data_of_an_older_format() {
    use vouch_store::{MetaBatch, MetaDb, MetaStore, ObjectBlobs};
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let blobs = ObjectBlobs::local(&dir.path().join("blobs")).unwrap();
        vouch_server::Provider::open(blobs, MetaDb::open(&dir.path().join("meta.redb")).unwrap())
    };
    // A fresh store is stamped with the format and opens again.
    drop(open().unwrap());
    drop(open().unwrap());
    // A store with namespace data but no stamp was written by format 1: refused, not misread.
    let old = tempfile::tempdir().unwrap();
    let meta = MetaDb::open(&old.path().join("meta.redb")).unwrap();
    meta.commit(MetaBatch::default().put(b"ns/alice/e/x".to_vec(), b"old".to_vec())).unwrap();
    let blobs = ObjectBlobs::local(&old.path().join("blobs")).unwrap();
    let refused = vouch_server::Provider::open(blobs, meta).unwrap_err();
    assert!(refused.to_string().contains("older vouch"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_changes_a_count_otherwise_than_asked_is_caught() {
    // Versions +1 made +2, -1 made -2; names +1 made +2, -1 made -2. The root the client
    // computes from its own change differs from the provider's.
    for case in ["append", "prune", "new name", "remove"] {
        let mut setup = Setup::new(Misbehave::None).await;
        let client = setup.client();
        for seed in 1..=3 {
            put(&client, "f.bin", &sample(10_000, seed)).await.unwrap();
        }
        put(&client, "g.bin", &sample(10_000, 9)).await.unwrap();
        setup.restart(Misbehave::WrongCount).await;
        let client = setup.client();
        let result = match case {
            "append" => put(&client, "f.bin", &sample(10_000, 4)).await,
            "prune" => client.prune("f.bin", &[1]).await,
            "new name" => put(&client, "e.bin", &sample(10_000, 5)).await,
            _ => client.remove("f.bin").await,
        };
        // The provider's proofs are honest for what it did, so the first check to fail is the
        // update proof: it does not yield the root the client computes from its own change.
        assert_lie(result, Kind::BadCommitProof, "new root does not match the edits");
    }
}

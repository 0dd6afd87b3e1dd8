//! Every lie of a misbehaving provider caught over the real wire protocol: a real server on
//! 127.0.0.1 over a temporary directory, made to lie with each `Misbehave` mode, and a real
//! client that must answer `ClientError::Misbehaved`, with the kind of violation the lie
//! shows as, without handing out an altered byte.

use crate::common;
use crate::proxy;

use common::{assert_violation, sample, Setup, TOKEN};
use proxy::Answer;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vouch_client::{ByteEdit, Client, ClientError, ViolationKind as Kind};
use vouch_misbehave::Misbehave;

const BLOCK: Option<usize> = Some(4096);

async fn put(client: &Client, name: &str, data: &[u8]) {
    let t = client.put(name, std::io::Cursor::new(data.to_vec()), BLOCK, |_| {}).await.unwrap();
    assert_eq!(t.bytes, data.len() as u64);
}

/// A get of `name`: the result and whatever was written to the output before it ended.
async fn get(client: &Client, name: &str, version: Option<u64>) -> (Result<(), ClientError>, Vec<u8>) {
    let mut out = Vec::new();
    let result = client.get(name, version, None, &mut out).await.map(|_| ());
    (result, out)
}

/// The get must fail as a violation of `kind`, and what it wrote must be a true prefix of
/// `data`. Returns how many bytes were handed out.
async fn assert_get_caught(client: &Client, name: &str, version: Option<u64>, data: &[u8], kind: Kind) -> usize {
    let (result, out) = get(client, name, version).await;
    assert_violation(result, kind, &format!("get of {name} {version:?}"));
    assert!(out.len() <= data.len(), "more bytes than the file holds");
    assert!(out == data[..out.len()], "an altered byte was handed out");
    out.len()
}

/// An honest store of one file of `len` bytes, then the provider restarted lying as told.
async fn stored_then_lying(misbehave: Misbehave, len: usize) -> (Setup, Vec<u8>) {
    let mut setup = Setup::new(Misbehave::None).await;
    let data = sample(len, 7);
    put(&setup.client(), "f.bin", &data).await;
    // Honest first: the data is really there and verifies.
    let (result, out) = get(&setup.client(), "f.bin", None).await;
    result.unwrap();
    assert_eq!(out, data);
    setup.restart(misbehave).await;
    (setup, data)
}

// ---- block lies: reads and audits ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_block_caught_on_get_and_audit() {
    let (setup, data) = stored_then_lying(Misbehave::CorruptBlock, 300_000).await;
    let client = setup.client();
    assert_get_caught(&client, "f.bin", None, &data, Kind::AlteredBlock).await;
    // A range read inside the file too.
    let mut out = Vec::new();
    let r = client.get("f.bin", None, Some(10_000..20_000), &mut out).await;
    assert_violation(r, Kind::AlteredBlock, "range get");
    assert!(out == data[10_000..10_000 + out.len()]);
    assert_violation(client.audit("f.bin", None, 100).await, Kind::BadAuditProof, "audit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_block_caught_on_get_and_audit() {
    let (setup, data) = stored_then_lying(Misbehave::DropBlock, 300_000).await;
    let client = setup.client();
    assert_get_caught(&client, "f.bin", None, &data, Kind::MissingBlock).await;
    assert_violation(client.audit("f.bin", None, 100).await, Kind::BadAuditProof, "audit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swap_blocks_caught_on_get_and_audit() {
    let (setup, data) = stored_then_lying(Misbehave::SwapBlocks, 300_000).await;
    let client = setup.client();
    assert_get_caught(&client, "f.bin", None, &data, Kind::AlteredBlock).await;
    assert_violation(client.audit("f.bin", None, 100).await, Kind::BadAuditProof, "audit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_stream_caught_after_a_true_prefix() {
    // Several read chunks (4 MiB each), so there is something after the first to leave out.
    let len = 2 * vouch_proto::READ_CHUNK_BYTES + 700_000;
    let (setup, data) = stored_then_lying(Misbehave::TruncateStream, len).await;
    let client = setup.client();
    let handed = assert_get_caught(&client, "f.bin", None, &data, Kind::ShortStream).await;
    assert!(handed > 0 && handed < data.len(), "the verified first chunk is handed out, not more: {handed}");
    // A read that fits in one chunk: whether the provider cuts it too (halfway) or not, the
    // client hands out only a true prefix, and completes only with every byte.
    let mut out = Vec::new();
    let r = client.get("f.bin", None, Some(1000..50_000), &mut out).await;
    assert!(out == data[1000..1000 + out.len()], "an altered byte was handed out");
    match r {
        Ok(t) => assert_eq!((t.bytes, out.len()), (49_000, 49_000)),
        Err(ClientError::Misbehaved(v)) if v.kind == Kind::ShortStream => assert!(out.len() < 49_000),
        Err(e) => panic!("expected success or a short stream, got {e:?}"),
    }
}

// ---- version and namespace lies ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_version_served_as_latest_is_caught() {
    let mut setup = Setup::new(Misbehave::None).await;
    let v1 = sample(300_000, 1);
    let v2 = sample(300_000, 2);
    let client = setup.client();
    put(&client, "f.bin", &v1).await;
    put(&client, "f.bin", &v2).await;
    setup.restart(Misbehave::OldVersion).await;
    let client = setup.client();
    // The latest asked for, the previous one served: caught before any byte.
    let handed = assert_get_caught(&client, "f.bin", None, &v2, Kind::WrongVersion).await;
    assert_eq!(handed, 0);
    assert_violation(client.version("f.bin", None).await, Kind::WrongVersion, "lookup of the latest");
    assert_violation(client.audit("f.bin", None, 50).await, Kind::WrongVersion, "audit of the latest");
    // Asking for version 1 by number is answered truthfully and verifies.
    let (result, out) = get(&client, "f.bin", Some(1)).await;
    result.unwrap();
    assert_eq!(out, v1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_version_said_to_be_missing_is_caught() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    put(&client, "f.bin", &sample(100_000, 1)).await;
    let v2 = sample(100_000, 2);
    put(&client, "f.bin", &v2).await;
    setup.restart(Misbehave::HideVersion).await;
    let client = setup.client();
    // "Not found" for version 1, which the proven log lists: a lie, on every path.
    let (result, out) = get(&client, "f.bin", Some(1)).await;
    assert_violation(result, Kind::HiddenVersion, "get of a hidden version");
    assert!(out.is_empty());
    assert_violation(client.version("f.bin", Some(1)).await, Kind::HiddenVersion, "lookup of a hidden version");
    assert_violation(client.audit("f.bin", Some(1), 20).await, Kind::HiddenVersion, "audit of a hidden version");
    // A version that really does not exist is still plainly not found, and the latest reads.
    let r = client.version("f.bin", Some(7)).await;
    assert!(matches!(r, Err(ClientError::NotFound(_))), "{r:?}");
    let (result, out) = get(&client, "f.bin", Some(2)).await;
    result.unwrap();
    assert_eq!(out, v2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolled_back_new_name_is_caught() {
    let setup = Setup::new(Misbehave::Rollback).await;
    let client = setup.client();
    let data = sample(300_000, 3);
    // The commit's proofs are valid, so the client accepts it; the provider then forgets it.
    put(&client, "f.bin", &data).await;
    assert_eq!(client.root().len, 1);
    // The provider answers from its empty namespace: a listing without the name the client's
    // root holds, and lookups with no proof for a namespace that is not empty.
    assert_violation(client.list().await, Kind::HiddenName, "list");
    let handed = assert_get_caught(&client, "f.bin", None, &data, Kind::BadLookupProof).await;
    assert_eq!(handed, 0);
    assert_violation(client.log("f.bin").await, Kind::BadLookupProof, "log");
    // A fresh process with the saved state sees the same.
    assert_violation(setup.client().list().await, Kind::HiddenName, "list from a fresh client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolled_back_new_version_is_caught() {
    let mut setup = Setup::new(Misbehave::None).await;
    let v1 = sample(300_000, 4);
    put(&setup.client(), "f.bin", &v1).await;
    setup.restart(Misbehave::Rollback).await;
    let client = setup.client();
    // An edit (version 2), acknowledged with valid proofs, then forgotten.
    client.edit("f.bin", &ByteEdit::Replace { at: 5000, data: vec![0xAB; 100] }, BLOCK).await.unwrap();
    let mut v2 = v1.clone();
    v2[5000..5100].fill(0xAB);
    // The provider answers from before the edit: version 1 with the old entry, not provable
    // under the client's new root.
    assert_get_caught(&client, "f.bin", None, &v2, Kind::BadLookupProof).await;
    assert_get_caught(&client, "f.bin", Some(1), &v1, Kind::BadLookupProof).await;
    // As many names as the root holds, but the old entry: the proof does not match the root.
    assert_violation(client.list().await, Kind::BadListingProof, "list");
    assert_violation(client.log("f.bin").await, Kind::BadLookupProof, "log");
    // Even a change on top of the forgotten one is refused before anything is sent.
    let more = client.put("g.bin", std::io::Cursor::new(b"more".to_vec()), BLOCK, |_| {}).await;
    assert_violation(more, Kind::BadLookupProof, "put after a rollback");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_audit_proof_is_caught() {
    let (setup, _) = stored_then_lying(Misbehave::ReplayProof, 300_000).await;
    let client = setup.client();
    // The first proof is genuinely computed for its challenge.
    let report = client.audit("f.bin", None, 200).await.unwrap();
    assert!(report.verified);
    // Every later challenge gets that same proof back.
    assert_violation(client.audit("f.bin", None, 200).await, Kind::BadAuditProof, "second audit");
    assert_violation(client.audit("f.bin", None, 200).await, Kind::BadAuditProof, "third audit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proof_for_another_challenge_is_caught() {
    let (setup, data) = stored_then_lying(Misbehave::OtherChallenge, 300_000).await;
    let client = setup.client();
    assert_violation(client.audit("f.bin", None, 200).await, Kind::BadAuditProof, "audit");
    assert_violation(client.audit("f.bin", None, 1).await, Kind::BadAuditProof, "audit of one offset");
    // Reads are not what this lie targets: they still verify.
    let (result, out) = get(&client, "f.bin", None).await;
    result.unwrap();
    assert_eq!(out, data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_name_in_listing_is_caught() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    put(&client, "a.txt", b"first").await;
    put(&client, "b.txt", b"second").await;
    let names: Vec<String> = client.list().await.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["a.txt", "b.txt"]);
    setup.restart(Misbehave::HideFile).await;
    let client = setup.client();
    assert_violation(client.list().await, Kind::HiddenName, "list");
    // The hidden name itself is still proven present by a lookup.
    let (result, out) = get(&client, "a.txt", None).await;
    result.unwrap();
    assert_eq!(out, b"first");
}

// ---- the backend damaged under an honest provider ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_segment_on_disk_is_reported_as_misbehaviour() {
    let setup = Setup::new(Misbehave::None).await;
    let data = sample(300_000, 5);
    put(&setup.client(), "f.bin", &data).await;
    let segments = setup.data.join("blobs").join("segments");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&segments)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0))
        .collect();
    files.sort();
    assert_eq!(files.len(), 1, "one small put, one segment: {files:?}");
    let mut bytes = std::fs::read(&files[0]).unwrap();
    // The blocks' bytes back to back, then the segment's table of them.
    assert!(bytes.len() > data.len() && bytes[..data.len()] == data[..], "a segment holds the blocks' bytes");
    // A byte in the 20th block: the blocks before it are intact.
    let at = 19 * 4096 + 123;
    bytes[at] ^= 0x40;
    std::fs::write(&files[0], &bytes).unwrap();

    let client = setup.client();
    let handed = assert_get_caught(&client, "f.bin", None, &data, Kind::DataLost).await;
    assert!(handed <= at, "the damaged byte was handed out");
    // Ranges that do not touch the damaged block still read.
    let mut out = Vec::new();
    client.get("f.bin", None, Some(0..4096), &mut out).await.unwrap();
    assert_eq!(out, data[..4096]);
    let mut out = Vec::new();
    let r = client.get("f.bin", None, Some(at as u64..at as u64 + 1), &mut out).await;
    assert_violation(r, Kind::DataLost, "get of the damaged block");
    assert!(out.is_empty());
}

// ---- credentials and reachability ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_token_is_unauthorized_and_a_closed_port_is_unreachable() {
    let setup = Setup::new(Misbehave::None).await;
    let wrong = Client::init(&setup.dir.path().join("wrong"), &setup.url(), "not-the-token").unwrap();
    let r = wrong.list().await;
    assert!(matches!(r, Err(ClientError::Unauthorized(_))), "{r:?}");
    let r = wrong.version("f.bin", None).await;
    assert!(matches!(r, Err(ClientError::Unauthorized(_))), "{r:?}");

    // A port that was just free and is now closed.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let closed = Client::init(&setup.dir.path().join("closed"), &format!("http://127.0.0.1:{port}"), TOKEN).unwrap();
    let started = Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(30), closed.list()).await.expect("no hang on a closed port");
    assert!(matches!(r, Err(ClientError::Unreachable { .. })), "{r:?}");
    let mut out = Vec::new();
    let r = tokio::time::timeout(Duration::from_secs(30), closed.get("f.bin", None, None, &mut out))
        .await
        .expect("no hang on a closed port");
    assert!(matches!(r, Err(ClientError::Unreachable { .. })), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
}

// ---- the client's root defines the truth ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_an_older_root_sees_newer_answers_as_lies() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let v1 = sample(100_000, 8);
    put(&client, "f.bin", &v1).await;
    let saved = std::fs::read(setup.state.join("state")).unwrap();
    let v2 = sample(100_000, 9);
    put(&client, "f.bin", &v2).await;
    put(&client, "g.bin", b"new name").await;
    // The up-to-date client reads the newest data.
    let (result, out) = get(&client, "f.bin", None).await;
    result.unwrap();
    assert_eq!(out, v2);

    // Restore the state from before the second put: its root knows one name, one version.
    std::fs::write(setup.state.join("state"), &saved).unwrap();
    let old = setup.client();
    assert_eq!(old.root().len, 1);
    // Two names listed, one held by the old root: more than it proves.
    assert_violation(old.list().await, Kind::BadListingProof, "list");
    assert_get_caught(&old, "f.bin", None, &v1, Kind::BadLookupProof).await;
    assert_get_caught(&old, "f.bin", Some(1), &v1, Kind::BadLookupProof).await;
    assert_violation(old.version("g.bin", None).await, Kind::BadLookupProof, "lookup of a name the old root lacks");
    assert_violation(old.audit("f.bin", None, 10).await, Kind::BadLookupProof, "audit");
    assert_violation(old.log("f.bin").await, Kind::BadLookupProof, "log");
}

// ---- a lie no `Misbehave` mode tells: a tampering proxy in front of an honest provider ----

/// A proxy in front of the provider whose successful answers to `/v1/{op}` pass through
/// `tamper(op, body)` first. One request per connection.
async fn tampering_proxy(upstream: String, tamper: fn(&str, Vec<u8>) -> Vec<u8>) -> String {
    proxy::proxy(upstream, move |op| {
        let op = op.to_string();
        Answer::Forward(Box::new(move |code, body| {
            let body = if (200..300).contains(&code) { tamper(&op, body) } else { body };
            (code, body)
        }))
    })
    .await
}

/// A log answer with its newest version left out, and a genuine proof of the versions kept.
fn hide_newest_version(op: &str, body: Vec<u8>) -> Vec<u8> {
    use vouch_core::namespace::VersionRecord;
    if op != "log" {
        return body;
    }
    let mut log: vouch_proto::Log = vouch_proto::decode(&body).unwrap();
    let records: Vec<VersionRecord> = log.versions.iter().map(|r| VersionRecord::from_bytes(r).unwrap()).collect();
    let list = vouch_core::FlexList::build(&records.iter().map(VersionRecord::leaf).collect::<Vec<_>>()).unwrap();
    let kept: Vec<u64> = (0..records.len() as u64 - 1).collect();
    log.versions.pop();
    log.proof = serde_bytes::ByteBuf::from(list.prove(&kept).unwrap().as_bytes().to_vec());
    vouch_proto::encode(&log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_with_the_newest_version_left_out_is_caught() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    for seed in 1..=3 {
        put(&client, "f.bin", &sample(10_000, seed)).await;
    }
    let numbers = |log: &[vouch_core::namespace::VersionRecord]| log.iter().map(|v| v.number).collect::<Vec<_>>();
    assert_eq!(numbers(&client.log("f.bin").await.unwrap()), [1, 2, 3]);
    // The same provider behind a proxy that hides version 3 from logs.
    let proxy = tampering_proxy(setup.url(), hide_newest_version).await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"{proxy}\"\n")).unwrap();
    let client = setup.client();
    // Everything else passes through untouched and verifies.
    assert_eq!(client.version("f.bin", None).await.unwrap().record.number, 3);
    let r = client.log("f.bin").await.map(|log| numbers(&log));
    assert_violation(r, Kind::HiddenVersion, "a log without the newest version");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_list_with_an_altered_tag_is_caught_by_sync() {
    let (setup, data) = stored_then_lying(Misbehave::CorruptBlock, 100_000).await;
    let mut changed = data.clone();
    changed.splice(50_000..50_000, *b"new bytes");
    let local = setup.dir.path().join("local.bin");
    std::fs::write(&local, &changed).unwrap();
    let client = setup.client();
    let root = client.root();
    assert_violation(client.sync("f.bin", &local).await, Kind::BlockListMismatch, "sync against an altered block list");
    assert_eq!(client.root(), root, "nothing was committed");
}

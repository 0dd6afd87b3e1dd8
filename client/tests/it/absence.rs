//! "Not found" is a claim the client's root decides, so it is believed only with its proof.
//! A proxy in front of an honest provider answers a bare error (no proof) for a name or
//! version that exists, or cuts a read after its verified header with an error frame; the
//! client must report a lie (`Misbehaved`: an unproven "not found", a hidden version, data
//! lost) for a bare "not found" or "data lost", and the provider unavailable (`Unavailable`,
//! exit code 4 in the CLI) for a storage error: never "not found", never success.
//! A name that really is absent is still plainly "not found", with its proof.

use crate::common;
use crate::proxy;

use common::{assert_violation, sample, Setup};
use proxy::{lie, lying_proxy, Lie, Rules};
use vouch_client::{ByteEdit, Client, ClientError, ViolationKind as Kind};
use vouch_misbehave::Misbehave;
use vouch_proto::ErrorCode;

const BLOCK: Option<usize> = Some(4096);

/// An honest provider holding `f.bin` (two versions) and `g.bin`, and a client that reaches it
/// through a proxy told what to lie about by the returned rules.
async fn behind_a_proxy() -> (Setup, Rules, Vec<u8>) {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let data = sample(60_000, 3);
    for bytes in [sample(50_000, 2), data.clone()] {
        client.put("f.bin", std::io::Cursor::new(bytes), BLOCK, |_| {}).await.unwrap();
    }
    client.put("g.bin", std::io::Cursor::new(sample(30_000, 4)), BLOCK, |_| {}).await.unwrap();
    drop(client);
    let rules = Rules::default();
    let proxy = lying_proxy(setup.url(), rules.clone()).await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"{proxy}\"\n")).unwrap();
    (setup, rules, data)
}

async fn get(client: &Client, name: &str, version: Option<u64>) -> (Result<(), ClientError>, Vec<u8>) {
    let mut out = Vec::new();
    let result = client.get(name, version, None, &mut out).await.map(|_| ());
    (result, out)
}

#[track_caller]
fn assert_unavailable<T: std::fmt::Debug>(result: Result<T, ClientError>, what: &str) {
    match result {
        Err(ClientError::Unavailable(_)) => {}
        other => panic!("{what}: expected Unavailable, got {other:?}"),
    }
}

#[track_caller]
fn assert_not_found<T: std::fmt::Debug>(result: Result<T, ClientError>, what: &str) {
    match result {
        Err(ClientError::NotFound(_)) => {}
        other => panic!("{what}: expected NotFound, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_not_found_for_what_the_root_proves_is_a_lie_everywhere() {
    let (setup, rules, data) = behind_a_proxy().await;
    let client = setup.client();
    let root = client.root();
    let not_found = Lie::Bare(ErrorCode::NotFound);

    let unproven = Kind::UnprovenNotFound;

    lie(&rules, "lookup", not_found);
    assert_violation(client.version("f.bin", None).await, unproven, "lookup of the latest version");
    // Version 1 is in the proven log: hidden.
    assert_violation(client.version("f.bin", Some(1)).await, Kind::HiddenVersion, "lookup of version 1");
    // Even for a name that is absent: the honest provider proves absence, never says it bare.
    assert_violation(client.version("nope", None).await, unproven, "bare not found for an absent name");

    lie(&rules, "log", not_found);
    assert_violation(client.log("f.bin").await, unproven, "log");
    lie(&rules, "list", not_found);
    assert_violation(client.list().await, unproven, "list");
    lie(&rules, "audit", not_found);
    assert_violation(client.audit("f.bin", None, 50).await, unproven, "audit");
    assert_violation(client.audit("f.bin", Some(1), 50).await, Kind::HiddenVersion, "audit of version 1");
    lie(&rules, "read", not_found);
    let (result, out) = get(&client, "f.bin", None).await;
    assert_violation(result, unproven, "get");
    assert!(out.is_empty());
    lie(&rules, "blocks", not_found);
    let local = setup.dir.path().join("local.bin");
    std::fs::write(&local, sample(60_000, 9)).unwrap();
    assert_violation(client.sync("f.bin", &local).await, unproven, "sync");

    // Changes of a name proven present, answered "not found": lies, and nothing changes.
    lie(&rules, "edit", not_found);
    let edit = ByteEdit::Insert { at: 10, data: b"xyz".to_vec() };
    assert_violation(client.edit("f.bin", &edit, BLOCK).await, unproven, "edit");
    lie(&rules, "remove", not_found);
    assert_violation(client.remove("g.bin").await, unproven, "remove");
    lie(&rules, "prune", not_found);
    assert_violation(client.prune("f.bin", &[1]).await, unproven, "prune");
    assert!(client.has_unsettled_change(), "the refused prune may have been applied, for all the client knows");

    // The proxy stops lying: the last change is settled as not applied, and all reads verify.
    rules.lock().unwrap().clear();
    let (result, out) = get(&client, "f.bin", None).await;
    result.unwrap();
    assert_eq!(out, data);
    assert!(!client.has_unsettled_change());
    assert_eq!(client.root(), root);
    assert_eq!(client.log("f.bin").await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storage_error_is_unavailable_never_not_found_and_never_a_passed_audit() {
    let (setup, rules, data) = behind_a_proxy().await;
    let client = setup.client();
    let unavailable = Lie::Bare(ErrorCode::Storage);
    lie(&rules, "lookup", unavailable);
    assert_unavailable(client.version("f.bin", None).await, "lookup");
    assert_unavailable(client.version("f.bin", Some(1)).await, "lookup of version 1");
    lie(&rules, "audit", unavailable);
    assert_unavailable(client.audit("f.bin", None, 50).await, "audit");
    lie(&rules, "log", unavailable);
    assert_unavailable(client.log("f.bin").await, "log");
    lie(&rules, "read", unavailable);
    let (result, out) = get(&client, "f.bin", None).await;
    assert_unavailable(result, "get");
    assert!(out.is_empty());
    lie(&rules, "edit", unavailable);
    let edit = ByteEdit::Insert { at: 10, data: b"xyz".to_vec() };
    assert_unavailable(client.edit("f.bin", &edit, BLOCK).await, "edit");
    // Back to normal: everything verifies, the unanswered edit settled as not applied.
    rules.lock().unwrap().clear();
    assert!(client.audit("f.bin", None, 50).await.unwrap().verified);
    let (result, out) = get(&client, "f.bin", None).await;
    result.unwrap();
    assert_eq!(out, data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_frame_after_the_verified_header_is_a_lie_unless_the_provider_is_unavailable() {
    let (setup, rules, data) = behind_a_proxy().await;
    let client = setup.client();
    // The header just proved the version: "not found" hides it; "data lost" admits to losing it.
    let cuts = [
        (ErrorCode::NotFound, None, Kind::HiddenVersion),
        (ErrorCode::NotFound, Some(2), Kind::HiddenVersion),
        (ErrorCode::DataLost, None, Kind::DataLost),
    ];
    for (code, version, kind) in cuts {
        lie(&rules, "read", Lie::CutRead(code));
        let (result, out) = get(&client, "f.bin", version).await;
        assert_violation(result, kind, &format!("{code:?} after the header of version {version:?}"));
        assert!(out.is_empty(), "nothing unverified is handed out");
    }
    lie(&rules, "read", Lie::CutRead(ErrorCode::Storage));
    let (result, out) = get(&client, "f.bin", None).await;
    assert_unavailable(result, "a storage error after the header");
    assert!(out.is_empty());
    rules.lock().unwrap().clear();
    let (result, out) = get(&client, "f.bin", None).await;
    result.unwrap();
    assert_eq!(out, data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_or_version_that_really_is_absent_is_proven_not_found() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    client.put("f.bin", std::io::Cursor::new(sample(20_000, 1)), BLOCK, |_| {}).await.unwrap();
    let root = client.root();
    assert_not_found(client.version("nope", None).await, "lookup");
    assert_not_found(client.version("nope", Some(1)).await, "lookup of a version");
    assert_not_found(get(&client, "nope", None).await.0, "get");
    assert_not_found(client.log("nope").await, "log");
    assert_not_found(client.audit("nope", None, 10).await, "audit");
    let edit = ByteEdit::Insert { at: 0, data: b"x".to_vec() };
    assert_not_found(client.edit("nope", &edit, BLOCK).await, "edit");
    assert_not_found(client.remove("nope").await, "remove");
    assert_not_found(client.prune("nope", &[1]).await, "prune");
    // A version number that is not in the proven log.
    assert_not_found(client.version("f.bin", Some(9)).await, "lookup of version 9");
    assert_not_found(get(&client, "f.bin", Some(9)).await.0, "get of version 9");
    assert_not_found(client.audit("f.bin", Some(9), 10).await, "audit of version 9");
    assert!(!client.has_unsettled_change(), "nothing was sent to commit");
    assert_eq!(client.root(), root);
}

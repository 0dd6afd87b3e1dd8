//! A public audit: a third party holding only an RSA client's public key and its root (no
//! secret, no state directory) audits the provider, and catches each lie an audit can meet:
//! an altered or lost block, a replayed proof, a proof for another challenge, another version
//! served, a hidden version or file, an answer under another root. And the auditor's own
//! mistakes (another key, a root without a key) are input errors, never blamed on the
//! provider.

use crate::common;
use crate::proxy;

use common::{assert_violation, rsa_key, sample, Setup, TOKEN, TOKEN_BOB};
use proxy::{lie, lying_proxy, Lie, Rules};
use std::io::Cursor;
use vouch_client::public::read_public_key;
use vouch_client::state::StateDir;
use vouch_client::{
    AuditRoot, Client, ClientError, KeyChoice, PublicAuditor, Remote, SecretKey, ViolationKind as Kind,
};
use vouch_core::pdp::rsa::RsaPublicKey;
use vouch_misbehave::Misbehave;
use vouch_proto::ErrorCode;

const BLOCK: Option<usize> = Some(4096);

async fn put(client: &Client, name: &str, data: &[u8]) {
    client.put(name, Cursor::new(data.to_vec()), BLOCK, |_| {}).await.unwrap();
}

fn public_key(client: &Client) -> RsaPublicKey {
    client.key().unwrap().public_key().unwrap().clone()
}

fn auditor(url: &str, key: RsaPublicKey, root: &AuditRoot) -> PublicAuditor {
    PublicAuditor::new(Remote::new(url, TOKEN).unwrap(), key, root).unwrap()
}

/// Two versions of `f.bin` stored by an RSA client at an honest provider, then the provider
/// restarted lying as told: the auditor's key and root (handed out before the restart).
async fn stored_then_lying(misbehave: Misbehave) -> (Setup, RsaPublicKey, AuditRoot) {
    let mut setup = Setup::with_key(Misbehave::None, rsa_key()).await;
    let owner = setup.client();
    put(&owner, "f.bin", &sample(40_000, 1)).await;
    put(&owner, "f.bin", &sample(40_000, 2)).await;
    let (key, root) = (public_key(&owner), owner.audit_root().await.unwrap());
    drop(owner);
    setup.restart(misbehave).await;
    (setup, key, root)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_audit_passes_against_an_honest_provider() {
    let (setup, key, root) = stored_then_lying(Misbehave::None).await;
    let auditor = auditor(&setup.url(), key, &root);
    for version in [None, Some(1), Some(2)] {
        let report = auditor.audit("f.bin", version, 40).await.unwrap();
        assert!(report.verified && report.challenged_blocks > 0, "{version:?}");
        assert_eq!(report.version, version.unwrap_or(2));
    }
    let names: Vec<String> = auditor.list().await.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["f.bin"]);
    // A name the root proves absent, and a version the proven log lacks: plainly not found.
    assert!(matches!(auditor.audit("nothing", None, 10).await, Err(ClientError::NotFound(_))));
    assert!(matches!(auditor.audit("f.bin", Some(9), 10).await, Err(ClientError::NotFound(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_audit_catches_altered_and_lost_blocks() {
    for (lie, what) in [
        (Misbehave::CorruptBlock, "corrupt block"),
        (Misbehave::DropBlock, "drop block"),
        (Misbehave::SwapBlocks, "swapped blocks"),
        (Misbehave::StretchBlock, "stretched block"),
    ] {
        let (setup, key, root) = stored_then_lying(lie).await;
        let r = auditor(&setup.url(), key, &root).audit("f.bin", None, 40).await;
        assert_violation(r, Kind::BadAuditProof, what);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_audit_catches_a_replayed_proof_and_one_for_another_challenge() {
    let (setup, key, root) = stored_then_lying(Misbehave::ReplayProof).await;
    let replayed = auditor(&setup.url(), key.clone(), &root);
    assert!(replayed.audit("f.bin", None, 40).await.unwrap().verified, "the first proof is genuine");
    assert_violation(replayed.audit("f.bin", None, 40).await, Kind::BadAuditProof, "a replayed proof");
    let (setup, key, root) = stored_then_lying(Misbehave::OtherChallenge).await;
    let r = auditor(&setup.url(), key, &root).audit("f.bin", None, 40).await;
    assert_violation(r, Kind::BadAuditProof, "a proof for another challenge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_audit_catches_another_version_and_a_hidden_one() {
    let (setup, key, root) = stored_then_lying(Misbehave::OldVersion).await;
    let r = auditor(&setup.url(), key, &root).audit("f.bin", None, 40).await;
    assert_violation(r, Kind::WrongVersion, "the version before served as the latest");
    let (setup, key, root) = stored_then_lying(Misbehave::HideVersion).await;
    let r = auditor(&setup.url(), key, &root).audit("f.bin", Some(1), 40).await;
    assert_violation(r, Kind::HiddenVersion, "a version the proven log lists, said not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_audit_catches_a_hidden_file() {
    let (setup, key, root) = stored_then_lying(Misbehave::None).await;
    let rules = Rules::default();
    let proxy = lying_proxy(setup.url(), rules.clone()).await;
    lie(&rules, "audit", Lie::Bare(ErrorCode::NotFound));
    let r = auditor(&proxy, key.clone(), &root).audit("f.bin", None, 40).await;
    assert_violation(r, Kind::UnprovenNotFound, "a file the root holds, said not found");
    let (setup, key, root) = stored_then_lying(Misbehave::HideFile).await;
    assert_violation(auditor(&setup.url(), key, &root).list().await, Kind::HiddenName, "a listing without it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_audit_catches_answers_under_another_root() {
    // The provider acknowledges the owner's next version and forgets it: the root the owner
    // hands out after it is not the one the provider answers under.
    let mut setup = Setup::with_key(Misbehave::None, rsa_key()).await;
    let owner = setup.client();
    put(&owner, "f.bin", &sample(40_000, 1)).await;
    drop(owner);
    setup.restart(Misbehave::Rollback).await;
    let owner = setup.client();
    put(&owner, "f.bin", &sample(40_000, 2)).await;
    let (key, root) = (public_key(&owner), owner.audit_root().await.unwrap());
    let r = auditor(&setup.url(), key.clone(), &root).audit("f.bin", None, 40).await;
    assert_violation(r, Kind::BadLookupProof, "an answer under the root before the acknowledged version");
    // Likewise a root that is not the provider's at all (here: the empty namespace's).
    let other = AuditRoot { root: vouch_client::state::Root::empty(), ..root };
    let r = auditor(&setup.url(), key, &other).audit("f.bin", None, 40).await;
    assert_violation(r, Kind::BadLookupProof, "an answer under another root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auditors_own_mistakes_are_input_errors_not_lies() {
    let (setup, key, root) = stored_then_lying(Misbehave::None).await;
    let remote = || Remote::new(&setup.url(), TOKEN).unwrap();
    // Another RSA key than the one the root was issued with.
    let other = SecretKey::generate(KeyChoice::Rsa { bits: 1024 }).unwrap();
    let other_dir = setup.dir.path().join("other");
    StateDir::create(&other_dir, &setup.url(), TOKEN_BOB, None, other).unwrap();
    let other_key = public_key(&Client::open(&other_dir).unwrap());
    let r = PublicAuditor::new(remote(), other_key, &root);
    assert!(matches!(&r, Err(ClientError::BadInput(e)) if e.contains("not the one")), "{r:?}");
    // A root without a key id: a linear client's.
    let r = PublicAuditor::new(remote(), key.clone(), &AuditRoot { key_id: None, ..root });
    assert!(matches!(&r, Err(ClientError::BadInput(e)) if e.contains("linear")), "{r:?}");
    // Key files: missing, a secret key, garbage, the right one.
    let missing = read_public_key(&setup.dir.path().join("nope.pub"));
    assert!(matches!(missing, Err(ClientError::Io { .. })), "{missing:?}");
    let secret = read_public_key(&setup.state.join("secret"));
    assert!(matches!(&secret, Err(ClientError::BadInput(e)) if e.contains("secret key")), "{secret:?}");
    let garbage = setup.dir.path().join("garbage.pub");
    std::fs::write(&garbage, b"not a key at all").unwrap();
    assert!(matches!(read_public_key(&garbage), Err(ClientError::BadInput(_))));
    let good = setup.dir.path().join("good.pub");
    std::fs::write(&good, key.to_bytes()).unwrap();
    assert_eq!(read_public_key(&good).unwrap().to_bytes(), key.to_bytes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linear_file_is_not_publicly_auditable() {
    // An RSA key and a root that claims it, over a namespace of linear files (Alice's).
    let setup = Setup::new(Misbehave::None).await;
    let alice = setup.client();
    put(&alice, "f.bin", &sample(20_000, 1)).await;
    let rsa_dir = setup.dir.path().join("rsa");
    StateDir::create(&rsa_dir, &setup.url(), TOKEN_BOB, None, rsa_key()).unwrap();
    let key = public_key(&Client::open(&rsa_dir).unwrap());
    let root = AuditRoot { root: alice.root(), key_id: Some(vouch_client::key_id(&key)) };
    let r = auditor(&setup.url(), key, &root).audit("f.bin", None, 20).await;
    assert!(matches!(&r, Err(ClientError::BadInput(e)) if e.contains("Linear")), "{r:?}");
}

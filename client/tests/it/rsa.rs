//! The RSA scheme end to end: a client whose key is DPDP's RSA key tags every block of every
//! put, edit and sync with it, reads and audits verified by it, and shares a provider with
//! linear-scheme clients. Its lies are caught as the linear client's are.

use crate::common;

use common::{assert_violation, rsa_key, sample, Setup, TOKEN_BOB};
use std::io::Cursor;
use vouch_client::state::StateDir;
use vouch_client::{ByteEdit, Client, ClientError, ViolationKind as Kind};
use vouch_core::pdp::SchemeId;
use vouch_misbehave::Misbehave;

const BLOCK: Option<usize> = Some(4096);

async fn put(client: &Client, name: &str, data: &[u8]) -> u64 {
    client.put(name, Cursor::new(data.to_vec()), BLOCK, |_| {}).await.unwrap().version
}

async fn read(client: &Client, name: &str, version: Option<u64>) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    client.get(name, version, None, &mut out).await.map(|_| out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rsa_client_puts_edits_syncs_reads_and_audits() {
    let setup = Setup::with_key(Misbehave::None, rsa_key()).await;
    let client = setup.client();
    assert_eq!(client.key().unwrap().scheme(), SchemeId::Rsa1024);
    let v1 = sample(40_000, 1);
    assert_eq!(put(&client, "f.bin", &v1).await, 1);
    assert_eq!(client.version("f.bin", None).await.unwrap().record.scheme, SchemeId::Rsa1024);
    assert_eq!(read(&client, "f.bin", None).await.unwrap(), v1);
    let mut out = Vec::new();
    client.get("f.bin", None, Some(5000..9000), &mut out).await.unwrap();
    assert_eq!(out, v1[5000..9000]);

    client.edit("f.bin", &ByteEdit::Insert { at: 10_000, data: b"inserted".to_vec() }, BLOCK).await.unwrap();
    let mut v2 = v1.clone();
    v2.splice(10_000..10_000, *b"inserted");
    assert_eq!(read(&client, "f.bin", None).await.unwrap(), v2);

    let mut v3 = v2.clone();
    v3[30_000..30_100].fill(7);
    let local = setup.dir.path().join("local.bin");
    std::fs::write(&local, &v3).unwrap();
    let synced = client.sync("f.bin", &local).await.unwrap();
    assert_eq!(synced.version, 3);
    assert!(synced.blocks_kept > 0, "blocks found again by their RSA tags: {synced:?}");
    assert_eq!(read(&client, "f.bin", None).await.unwrap(), v3);
    assert_eq!(read(&client, "f.bin", Some(1)).await.unwrap(), v1);

    for v in client.log("f.bin").await.unwrap() {
        assert_eq!(v.scheme, SchemeId::Rsa1024, "version {}", v.number);
        let report = client.audit("f.bin", Some(v.number), 30).await.unwrap();
        assert!(report.verified && report.challenged_blocks > 0);
    }
    // The state directory reopens with the same key.
    drop(client);
    let client = setup.client();
    assert_eq!(read(&client, "f.bin", None).await.unwrap(), v3);
    client.remove("f.bin").await.unwrap();
    assert_eq!(client.root().len, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linear_and_rsa_clients_share_one_provider() {
    // Alice tags with the linear scheme, Bob with RSA, one provider holds both.
    let setup = Setup::new(Misbehave::None).await;
    let alice = setup.client();
    let bob_dir = setup.dir.path().join("bob");
    StateDir::create(&bob_dir, &setup.url(), TOKEN_BOB, None, rsa_key()).unwrap();
    let bob = Client::open(&bob_dir).unwrap();
    let (a, b) = (sample(30_000, 1), sample(30_000, 2));
    put(&alice, "same.bin", &a).await;
    put(&bob, "same.bin", &b).await;
    assert_eq!(read(&alice, "same.bin", None).await.unwrap(), a);
    assert_eq!(read(&bob, "same.bin", None).await.unwrap(), b);
    assert_eq!(alice.version("same.bin", None).await.unwrap().record.scheme, SchemeId::Linear);
    assert_eq!(bob.version("same.bin", None).await.unwrap().record.scheme, SchemeId::Rsa1024);
    assert!(alice.audit("same.bin", None, 20).await.unwrap().verified);
    assert!(bob.audit("same.bin", None, 20).await.unwrap().verified);
    // Bob's key over Alice's namespace (her root and token): her blocks are not his.
    let bob_on_alice = setup.dir.path().join("bob-on-alice");
    StateDir::create(&bob_on_alice, &setup.url(), common::TOKEN, None, rsa_key()).unwrap();
    let state = StateDir::open(&bob_on_alice).unwrap();
    state.save_root(alice.root()).unwrap();
    drop(state);
    let confused = Client::open(&bob_on_alice).unwrap();
    let r = confused.put("same.bin", Cursor::new(b"x".to_vec()), BLOCK, |_| {}).await;
    assert!(matches!(r, Err(ClientError::BadInput(_))), "a new version under another scheme: {r:?}");
    assert_eq!(confused.root(), alice.root(), "nothing was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lies_to_an_rsa_client_are_caught() {
    let mut setup = Setup::with_key(Misbehave::None, rsa_key()).await;
    let data = sample(40_000, 3);
    put(&setup.client(), "f.bin", &data).await;
    setup.restart(Misbehave::CorruptBlock).await;
    let client = setup.client();
    assert_violation(read(&client, "f.bin", None).await, Kind::AlteredBlock, "get");
    assert_violation(client.audit("f.bin", None, 30).await, Kind::BadAuditProof, "audit");
    setup.restart(Misbehave::DropBlock).await;
    let client = setup.client();
    assert_violation(read(&client, "f.bin", None).await, Kind::MissingBlock, "get");
    assert_violation(client.audit("f.bin", None, 30).await, Kind::BadAuditProof, "audit");
}

#[test]
fn a_damaged_rsa_secret_is_a_state_error() {
    let dir = tempfile::tempdir().unwrap();
    StateDir::create(dir.path(), "http://127.0.0.1:1", "t", None, rsa_key()).unwrap();
    let client = Client::open(dir.path()).unwrap();
    assert_eq!(client.key().unwrap().scheme(), SchemeId::Rsa1024);
    drop(client);
    let path = dir.path().join("secret");
    let good = std::fs::read(&path).unwrap();
    // A flipped bit of the key: the state belongs to another key.
    let mut bytes = good.clone();
    bytes[40] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let r = Client::open(dir.path());
    assert!(matches!(&r, Err(ClientError::State(e)) if e.contains("another key")), "{r:?}");
    std::fs::write(&path, &good[..100]).unwrap();
    let r = Client::open(dir.path());
    assert!(matches!(&r, Err(ClientError::State(e)) if e.contains("damaged")), "a cut key: {r:?}");
}

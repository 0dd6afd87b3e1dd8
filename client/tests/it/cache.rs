//! The portal's cache of verified answers (Iris Sec. 7.2) end to end: a hit is served with the
//! provider gone, a commit never leaves a stale answer behind, and nothing a lie touched is
//! kept.

use crate::common;

use common::{assert_violation, sample, Setup};
use std::io::Cursor;
use vouch_client::{Client, ClientError, ViolationKind};
use vouch_misbehave::Misbehave;

async fn put(client: &Client, name: &str, data: &[u8]) {
    client.put(name, Cursor::new(data.to_vec()), None, |_| {}).await.unwrap();
}

async fn get(client: &Client, name: &str, want: Option<u64>, range: Option<std::ops::Range<u64>>) -> Vec<u8> {
    let mut out = Vec::new();
    client.get(name, want, range, &mut out).await.unwrap();
    out
}

#[tokio::test]
async fn what_was_read_once_is_served_again_without_the_provider() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    client.cache().resize(64 << 20);
    let (a, b) = (sample(1_000_000, 1), sample(50_000, 2));
    put(&client, "a", &a).await;
    put(&client, "b", &b).await;
    assert_eq!(get(&client, "a", None, None).await, a);
    let listed = client.list().await.unwrap();
    let misses = client.cache().stats().misses;
    assert!(misses > 0 && client.cache().stats().bytes >= a.len() as u64);

    setup.server.take().unwrap().shutdown().await.unwrap();
    assert_eq!(get(&client, "a", None, None).await, a, "whole, from the cache");
    assert_eq!(get(&client, "a", None, Some(123_456..654_321)).await, &a[123_456..654_321]);
    assert_eq!(client.version("a", None).await.unwrap().record.len, a.len() as u64);
    assert_eq!(client.list().await.unwrap(), listed);
    assert!(client.version("nope", None).await.is_err(), "never asked: needs the provider");
    let mut out = Vec::new();
    let unread = client.get("b", None, None, &mut out).await;
    assert!(unread.is_err() && out.is_empty(), "b was never read: its blocks are not kept");
    let stats = client.cache().stats();
    assert_eq!(stats.misses, misses + 2, "the name never asked and b's read");
    assert!(stats.hits >= 4, "{stats:?}");
}

#[tokio::test]
async fn a_commit_drops_its_name_and_carries_every_other_answer() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    client.cache().resize(64 << 20);
    let (a, b) = (sample(200_000, 3), sample(200_000, 4));
    put(&client, "a", &a).await;
    put(&client, "b", &b).await;
    put(&client, "c", b"c").await;
    assert_eq!(get(&client, "a", None, None).await, a);
    assert_eq!(get(&client, "b", None, None).await, b);
    client.list().await.unwrap();

    // Each change, and the listing carried through it equals the provider's.
    let a2 = sample(200_000, 5);
    put(&client, "a", &a2).await;
    assert_eq!(get(&client, "a", None, None).await, a2, "the new version, never the cached old one");
    assert_eq!(get(&client, "a", Some(1), None).await, a, "the old one by number");
    put(&client, "d", b"new name").await;
    client.remove("c").await.unwrap();
    client.prune("a", &[1]).await.unwrap();
    assert!(matches!(client.get("a", Some(1), None, &mut Vec::new()).await, Err(ClientError::NotFound(_))));
    let carried = client.list().await.unwrap();
    let hits = client.cache().stats().hits;
    client.cache().resize(0);
    assert_eq!(client.list().await.unwrap(), carried, "the carried listing is the provider's");
    assert_eq!(client.cache().stats().hits, hits, "off: no hit");
    client.cache().resize(64 << 20);
    assert!(matches!(client.version("c", None).await, Err(ClientError::NotFound(_))));

    // b was untouched by every commit: still served with the provider gone.
    assert_eq!(get(&client, "b", None, None).await, b);
    setup.server.take().unwrap().shutdown().await.unwrap();
    assert_eq!(get(&client, "b", None, Some(10..20)).await, &b[10..20]);
    assert!(matches!(client.version("c", None).await, Err(ClientError::NotFound(_))), "its absence, kept");
}

#[tokio::test]
async fn an_answer_that_fails_its_check_is_never_kept() {
    let setup = Setup::new(Misbehave::CorruptBlock).await;
    let client = setup.client();
    put(&client, "a", &sample(100_000, 6)).await;
    // On after the put: its blocks are not written through, every read goes to the provider.
    client.cache().resize(64 << 20);
    for _ in 0..2 {
        let mut out = Vec::new();
        assert_violation(client.get("a", None, None, &mut out).await, ViolationKind::AlteredBlock, "a corrupt block");
    }
    assert_eq!(client.cache().stats().bytes, 0, "no block of a refused read kept");
}

#[tokio::test]
async fn what_the_client_wrote_is_kept_when_it_fits() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    client.cache().resize(4 << 20);
    let (small, large) = (sample(500_000, 7), sample(3_000_000, 8));
    put(&client, "small", &small).await;
    put(&client, "large", &large).await;
    // A quarter of the cache at most: the small one fits, the large one does not.
    assert!(client.cache().stats().bytes >= small.len() as u64 && client.cache().stats().bytes < 2_000_000);
    // Its lookup too must come from somewhere: ask once, with the provider up.
    client.version("small", None).await.unwrap();
    setup.server.take().unwrap().shutdown().await.unwrap();
    assert_eq!(get(&client, "small", None, None).await, small, "written through, never read");
    assert!(client.get("large", None, None, &mut Vec::new()).await.is_err());
}

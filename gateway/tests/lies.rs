//! A lying provider behind the gateway: for each lie, the application (object_store) gets an
//! error carrying the gateway's violation code where the lie is caught, and never a byte, an
//! ETag or a listing other than what it stored.

mod common;

use common::{config, sample, Harness};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use vouch_gateway::errors::VIOLATION_CODE;
use vouch_gateway::GatewayConfig;
use vouch_server::{Blocks, Misbehave};

/// What one application saw: how many answers carried the violation code.
#[derive(Default)]
struct Seen {
    caught: usize,
}

impl Seen {
    /// An operation's error: a caught lie, or an honest failure that is not a lie's disguise
    /// (a provider's lie must never surface as "not found").
    fn error(&mut self, lie: Misbehave, what: &str, e: &object_store::Error) {
        if e.to_string().contains(VIOLATION_CODE) {
            self.caught += 1;
        } else {
            assert!(
                !matches!(e, object_store::Error::NotFound { .. }),
                "{lie}: {what}: a lie passed as not found: {e}"
            );
        }
    }
}

/// What an application sees of `lie` through a gateway with `cache_mb` of cache.
async fn tell(lie: Misbehave, cache_mb: u64) -> Seen {
    let config = GatewayConfig { cache_mb, ..config() };
    let h = Harness::configured(Blocks::Local, lie, &[], config).await;
    let mut seen = Seen::default();
    let empty = std::io::Cursor::new(Vec::new());
    if let Err(e) = h.client.put(&vouch_gateway::names::bucket_name("box"), empty, None, |_| {}).await {
        assert!(e.violation_kind().is_some(), "{lie}: making the bucket: {e}");
        seen.caught += 1;
        return seen;
    }
    let store = h.store("box");
    let (first, second, other) = (sample(3_000_000, 11), sample(9_000_000, 12), sample(1_000_000, 13));
    // What each key holds, as far as the application knows (after each put that succeeded).
    let mut stored: Vec<(&str, &Vec<u8>)> = Vec::new();
    for (key, data) in [("a", &first), ("a", &second), ("b", &other)] {
        match store.put(&Path::from(key), PutPayload::from(data.clone())).await {
            Ok(_) => {
                stored.retain(|(k, _)| *k != key);
                stored.push((key, data));
            }
            Err(e) => seen.error(lie, "put", &e),
        }
    }
    for &(key, data) in &stored {
        match store.get(&Path::from(key)).await {
            Ok(got) => match got.bytes().await {
                Ok(bytes) => assert_eq!(&bytes[..], &data[..], "{lie}: {key} read back otherwise"),
                Err(e) => seen.error(lie, "get's body", &e),
            },
            Err(e) => seen.error(lie, "get", &e),
        }
        match store.get_range(&Path::from(key), 1000..61_000).await {
            Ok(bytes) => assert_eq!(&bytes[..], &data[1000..61_000], "{lie}: a range of {key} read back otherwise"),
            Err(e) => seen.error(lie, "get_range", &e),
        }
        match store.head(&Path::from(key)).await {
            Ok(meta) => assert_eq!(meta.size, data.len() as u64, "{lie}: {key}'s size"),
            Err(e) => seen.error(lie, "head", &e),
        }
    }
    match store.list(None).try_collect::<Vec<_>>().await {
        Ok(listed) => {
            let mut keys: Vec<String> = listed.iter().map(|m| m.location.to_string()).collect();
            keys.sort();
            let mut want: Vec<String> = stored.iter().map(|(k, _)| k.to_string()).collect();
            want.sort();
            assert_eq!(keys, want, "{lie}: the listing");
        }
        Err(e) => seen.error(lie, "list", &e),
    }
    seen
}

/// The lies about data and the namespace the gateway's operations meet (the others concern
/// calls it does not make: audits, syncs, PoR).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_lie_behind_the_gateway_reaches_the_application_as_an_error() {
    use Misbehave::*;
    for lie in [
        CorruptBlock,
        DropBlock,
        SwapBlocks,
        Rollback,
        OldVersion,
        HideFile,
        TruncateStream,
        StretchBlock,
        PastRange,
        WrongCount,
    ] {
        // No cache: every answer is the provider's, and each lie is caught.
        let seen = tell(lie, 0).await;
        assert!(seen.caught > 0, "{lie}: never caught");
        // The portal's cache (its writes kept): a lie is caught or never consulted; either
        // way no altered byte reaches the application (`tell` checks every answer).
        tell(lie, 256).await;
    }
    // An honest provider: nothing is caught, and everything reads back.
    assert_eq!(tell(Misbehave::None, 0).await.caught, 0);
    assert_eq!(tell(Misbehave::None, 256).await.caught, 0);
}

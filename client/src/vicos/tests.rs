//! Races inside one operation, which need its steps apart: the object stored, then another
//! member's operation, then the `adict-put`.

use super::*;
use std::collections::HashMap;
use std::io::Cursor;
use vouch_server::{token_hash, Blocks, Provider, RunningServer};

const TOKEN: &str = "member";

async fn provider(dir: &std::path::Path) -> RunningServer {
    let provider = Provider::open_dir(dir, &Blocks::Local).unwrap();
    let clients = HashMap::from([(token_hash(TOKEN), "member".to_string())]);
    vouch_server::start("127.0.0.1:0", provider, clients, std::future::pending()).await.unwrap()
}

/// Alg. 6 deletes `k||*` after an `adict-del(k)`. A put of `k` by another member that stored
/// its object before that and invokes its `adict-put` after it would then name an object the
/// delete took: every reader would blame an honest provider. A delete takes only the object
/// it replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_between_a_puts_upload_and_its_adict_put_leaves_the_put_readable() {
    let dir = tempfile::tempdir().unwrap();
    let server = provider(dir.path()).await;
    let remote = || Remote::new(&format!("http://{}", server.addr), TOKEN).unwrap();
    let keys = Keyring::hmac([3; 32]);
    let alice = Group::create(remote(), "team", 0, keys.clone(), Mode::Compatible, None).await.unwrap();
    let bob = Group::join(remote(), "team", 1, keys, Mode::Compatible);
    assert_eq!(alice.put(b"k", Cursor::new(b"first".to_vec())).await.unwrap(), Outcome::Done(()));

    let nonce = [9; NONCE_LEN];
    let object = CosObject { group: "team".into(), key: ByteBuf::from(b"k".to_vec()), nonce };
    let hash = alice.cos_put(object, Cursor::new(b"second".to_vec())).await.unwrap();
    assert_eq!(bob.delete(b"k").await.unwrap(), Outcome::Done(()));
    let value = [&nonce[..], &hash[..]].concat();
    let (settled, committed) = alice.run(DictOp::Put { key: b"k".to_vec(), value }).await.unwrap();
    assert_eq!(settled.outcome, Outcome::Done(DictResponse::Nothing));
    assert!(committed);
    assert_eq!(settled.replaced, None, "the put came after the delete");

    let mut out = Vec::new();
    assert_eq!(bob.get(b"k", &mut out).await.unwrap(), Outcome::Done(Some(6)));
    assert_eq!(out, b"second");
}

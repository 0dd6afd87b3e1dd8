//! The client against a real provider server over HTTP: every operation end to end, and every
//! lie of a misbehaving provider caught with nothing altered handed out.

use crate::common;

use common::{sample, Setup};
use vouch_client::{ByteEdit, Client, ClientError};
use vouch_misbehave::Misbehave;

async fn get(client: &Client, name: &str, version: Option<u64>) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    client.get(name, version, None, &mut out).await?;
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_get_edit_log_audit_remove_end_to_end() {
    let setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let data = sample(200_000, 1);
    let t = client.put("docs/report.bin", std::io::Cursor::new(data.clone()), Some(4096), |_| {}).await.unwrap();
    assert_eq!((t.version, t.bytes), (1, 200_000));
    assert_eq!(get(&client, "docs/report.bin", None).await.unwrap(), data);

    let mut part = Vec::new();
    client.get("docs/report.bin", None, Some(5000..9000), &mut part).await.unwrap();
    assert_eq!(part, data[5000..9000]);

    // Edits: insert inside a block, delete across blocks, replace, append.
    let mut want = data.clone();
    client
        .edit("docs/report.bin", &ByteEdit::Insert { at: 10_001, data: b"hello".to_vec() }, Some(4096))
        .await
        .unwrap();
    want.splice(10_001..10_001, b"hello".iter().copied());
    client.edit("docs/report.bin", &ByteEdit::Delete { range: 3000..20_000 }, Some(4096)).await.unwrap();
    want.drain(3000..20_000);
    client.edit("docs/report.bin", &ByteEdit::Replace { at: 0, data: vec![9; 7000] }, Some(4096)).await.unwrap();
    want.splice(0..7000, vec![9u8; 7000]);
    let end = want.len() as u64;
    client.edit("docs/report.bin", &ByteEdit::Insert { at: end, data: vec![1; 100] }, Some(4096)).await.unwrap();
    want.extend(vec![1u8; 100]);
    assert_eq!(get(&client, "docs/report.bin", None).await.unwrap(), want);
    // Old versions stay readable.
    assert_eq!(get(&client, "docs/report.bin", Some(1)).await.unwrap(), data);
    let log = client.log("docs/report.bin").await.unwrap();
    assert_eq!(log.iter().map(|v| v.number).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);

    client.put("a.txt", std::io::Cursor::new(b"first".to_vec()), None, |_| {}).await.unwrap();
    client.put("z.txt", std::io::Cursor::new(Vec::new()), None, |_| {}).await.unwrap();
    assert_eq!(get(&client, "z.txt", None).await.unwrap(), Vec::<u8>::new());
    let names: Vec<String> = client.list().await.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["a.txt", "docs/report.bin", "z.txt"]);

    let report = client.audit("docs/report.bin", None, 460).await.unwrap();
    assert!(report.verified && report.challenged_blocks > 0);
    client.audit("docs/report.bin", Some(1), 100).await.unwrap();

    client.prune("docs/report.bin", &[2, 3]).await.unwrap();
    let log = client.log("docs/report.bin").await.unwrap();
    assert_eq!(log.iter().map(|v| v.number).collect::<Vec<_>>(), vec![1, 4, 5]);
    assert_eq!(get(&client, "docs/report.bin", Some(1)).await.unwrap(), data);
    assert!(matches!(get(&client, "docs/report.bin", Some(2)).await, Err(ClientError::NotFound(_))));

    client.remove("a.txt").await.unwrap();
    assert!(matches!(get(&client, "a.txt", None).await, Err(ClientError::NotFound(_))));
    assert!(matches!(get(&client, "never", None).await, Err(ClientError::NotFound(_))));
    // A fresh client process with the saved state sees the same.
    let again = setup.client();
    assert_eq!(again.list().await.unwrap().len(), 2);

    // A restarted provider rebuilds the latest list through the pruned (hidden) versions'
    // deltas and reads the edits' inline blocks from its metadata store.
    let mut setup = setup;
    setup.restart(Misbehave::None).await;
    let client = setup.client();
    assert_eq!(get(&client, "docs/report.bin", None).await.unwrap(), want);
    // Removing the file leaves none of its lists, hidden bases or inline segments behind.
    let client = client;
    client.remove("docs/report.bin").await.unwrap();
    setup.server.take().unwrap().shutdown().await.unwrap();
    let meta = vouch_store::MetaDb::open(&setup.data.join("meta.redb")).unwrap();
    for prefix in [&b"iseg/"[..], b"ldep/", b"lhide/"] {
        assert_eq!(
            vouch_store::MetaStore::scan(&meta, prefix).unwrap(),
            Vec::new(),
            "{}",
            String::from_utf8_lossy(prefix)
        );
    }
}

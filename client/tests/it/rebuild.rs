//! A provider whose metadata store is damaged refuses to start; rebuilt from the blobs
//! (`vouch_server::rebuild_dir`, what `vouch serve --rebuild-index` runs), it serves every
//! file and version again, each verified by the client against its root. And the root, not
//! the rebuild, decides: a rebuild from blobs the provider tampered with, or from an older copy
//! of them, is caught.

use crate::common;

use common::{assert_violation, sample, Setup};
use std::collections::BTreeMap;
use std::path::Path;
use vouch_client::{ByteEdit, Client, ViolationKind as Kind};
use vouch_misbehave::Misbehave;
use vouch_server::{Blocks, Provider};

/// Every version of every name, as the client should read it back.
type Model = BTreeMap<String, BTreeMap<u64, Vec<u8>>>;

async fn put(client: &mut Client, model: &mut Model, name: &str, data: Vec<u8>) {
    let t = client.put(name, std::io::Cursor::new(data.clone()), None, |_| {}).await.unwrap();
    model.entry(name.into()).or_default().insert(t.version, data);
}

async fn edit(client: &mut Client, model: &mut Model, name: &str, change: ByteEdit) {
    let versions = model.get_mut(name).unwrap();
    let mut data = versions.values().last().unwrap().clone();
    match &change {
        ByteEdit::Insert { at, data: new } => drop(data.splice(*at as usize..*at as usize, new.iter().copied())),
        ByteEdit::Delete { range } => drop(data.drain(range.start as usize..range.end as usize)),
        other => panic!("not used here: {other:?}"),
    }
    let t = client.edit(name, &change, None).await.unwrap();
    versions.insert(t.version, data);
}

/// Puts, edits (versions saved as deltas, blocks inline), a sync and a prune.
async fn fill(setup: &Setup) -> Model {
    let mut client = setup.client();
    let mut model = Model::new();
    put(&mut client, &mut model, "big.bin", sample(2_000_000, 1)).await;
    put(&mut client, &mut model, "small.txt", sample(10_000, 2)).await;
    put(&mut client, &mut model, "docs/report.bin", sample(300_000, 3)).await;
    for i in 0..4u64 {
        let change = ByteEdit::Insert { at: 1000 + i * 5000, data: sample(3000, 10 + i) };
        edit(&mut client, &mut model, "docs/report.bin", change).await;
    }
    edit(&mut client, &mut model, "big.bin", ByteEdit::Delete { range: 5000..9000 }).await;
    let mut changed = model["small.txt"][&1].clone();
    changed.extend_from_slice(b"appended by sync");
    let local = setup.dir.path().join("local.bin");
    std::fs::write(&local, &changed).unwrap();
    let synced = client.sync("small.txt", &local).await.unwrap();
    model.get_mut("small.txt").unwrap().insert(synced.version, changed);
    client.prune("docs/report.bin", &[2]).await.unwrap();
    model.get_mut("docs/report.bin").unwrap().remove(&2);
    model
}

/// Reads every version of every name back, verified, and audits each name.
async fn assert_reads_back(client: &Client, model: &Model) {
    let names: Vec<String> = client.list().await.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, model.keys().cloned().collect::<Vec<_>>());
    for (name, versions) in model {
        let log: Vec<u64> = client.log(name).await.unwrap().iter().map(|v| v.number).collect();
        assert_eq!(log, versions.keys().copied().collect::<Vec<_>>(), "{name}");
        for (number, want) in versions {
            let mut out = Vec::new();
            client.get(name, Some(*number), None, &mut out).await.unwrap();
            assert!(out == *want, "{name} version {number} reads back other bytes");
        }
        assert!(client.audit(name, None, 460).await.unwrap().verified, "{name}");
    }
}

/// Flips bytes all over the metadata file, as a failing disk would.
fn damage(file: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    for at in (bytes.len() / 7..bytes.len()).step_by(bytes.len() / 11) {
        bytes[at..at + 64].iter_mut().for_each(|b| *b ^= 0x5a);
    }
    std::fs::write(file, bytes).unwrap();
}

/// Starts the provider again over its data (after a [`common::Setup`]'s server was shut down),
/// on a new port.
async fn start_again(setup: &mut Setup) {
    let server = common::start(&setup.data, Misbehave::None).await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"http://{}\"\n", server.addr)).unwrap();
    setup.server = Some(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_metadata_store_is_rebuilt_from_the_blobs_and_every_version_reads_back_verified() {
    let mut setup = Setup::new(Misbehave::None).await;
    let model = fill(&setup).await;
    setup.server.take().unwrap().shutdown().await.unwrap();
    damage(&setup.data.join("meta.redb"));
    let refused = Provider::open_dir(&setup.data, &Blocks::Local).unwrap_err();
    assert!(refused.to_string().contains("corrupt"), "{refused}");
    let report = vouch_server::rebuild_dir(&setup.data, &Blocks::Local).await.unwrap();
    start_again(&mut setup).await;
    assert!(report.problems.is_empty(), "{report:#?}");
    assert_eq!(report.moved_aside.len(), 2, "the damaged store and its log are kept: {report:#?}");
    assert!(report.moved_aside.iter().all(|p| p.exists()));
    assert_reads_back(&setup.client(), &model).await;

    // And it goes on: a change after the rebuild, read back after a restart.
    let mut model = model;
    edit(&mut setup.client(), &mut model, "big.bin", ByteEdit::Insert { at: 7, data: b"after".to_vec() }).await;
    setup.restart(Misbehave::None).await;
    assert_reads_back(&setup.client(), &model).await;
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// Loses the metadata store (and its log) of `data` altogether.
fn lose_metadata(data: &Path) {
    for name in ["meta.redb", "meta.redb.wal"] {
        std::fs::remove_file(data.join(name)).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_from_an_older_copy_of_the_blobs_is_caught_as_a_rollback() {
    let mut setup = Setup::new(Misbehave::None).await;
    let model = fill(&setup).await;
    setup.server.take().unwrap().shutdown().await.unwrap();
    let older = setup.dir.path().join("older-blobs");
    copy_dir(&setup.data.join("blobs"), &older);
    start_again(&mut setup).await;
    let mut newer = model.clone();
    edit(&mut setup.client(), &mut newer, "small.txt", ByteEdit::Insert { at: 0, data: b"newer".to_vec() }).await;
    setup.server.take().unwrap().shutdown().await.unwrap();

    // The metadata lost, the provider rebuilds from the older copy: consistent in itself...
    lose_metadata(&setup.data);
    std::fs::remove_dir_all(setup.data.join("blobs")).unwrap();
    std::fs::rename(&older, setup.data.join("blobs")).unwrap();
    let report = vouch_server::rebuild_dir(&setup.data, &Blocks::Local).await.unwrap();
    assert!(report.problems.is_empty(), "{report:#?}");
    start_again(&mut setup).await;
    // ...but not the state the client's root holds.
    let client = setup.client();
    let mut out = Vec::new();
    assert_violation(client.get("small.txt", None, None, &mut out).await, Kind::BadLookupProof, "get");
    assert!(out.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_over_an_altered_segment_reports_it_and_the_client_catches_it() {
    let mut setup = Setup::new(Misbehave::None).await;
    let model = fill(&setup).await;
    setup.server.take().unwrap().shutdown().await.unwrap();
    // The first segment holds version 1 of big.bin: one byte of it altered, the metadata lost.
    let segments = setup.data.join("blobs").join("segments");
    let mut files: Vec<_> = std::fs::read_dir(&segments).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut bytes = std::fs::read(&files[0]).unwrap();
    bytes[1_000_000] ^= 0x08;
    std::fs::write(&files[0], bytes).unwrap();
    lose_metadata(&setup.data);
    let report = vouch_server::rebuild_dir(&setup.data, &Blocks::Local).await.unwrap();
    assert!(report.problems.iter().any(|p| p.detail.contains("checksum")), "{report:#?}");
    start_again(&mut setup).await;
    let client = setup.client();
    let mut out = Vec::new();
    let got = client.get("big.bin", Some(1), None, &mut out).await;
    assert_violation(got, Kind::DataLost, "get of the altered version");
    assert!(out.len() < 1_000_000 && out[..] == model["big.bin"][&1][..out.len()], "only verified bytes handed out");
    // What the altered segment does not hold still reads back.
    let mut out = Vec::new();
    client.get("small.txt", None, None, &mut out).await.unwrap();
    assert_eq!(out, model["small.txt"].values().last().unwrap().clone());
}

//! PoR helpers of the end-to-end tests, the same on either backend: the calls, and damage
//! done to the provider's own stores while it is stopped (all of U lost from the metadata
//! store; slots of levels and C overwritten in their objects, through the blob store's API so
//! that a local directory and an S3 bucket are damaged alike).

use super::{start_on, Setup};
use std::collections::BTreeMap;
use std::path::PathBuf;
use vouch_client::{Client, ClientError, PutOptions};
use vouch_core::por::heap::SLOT_WIDTH;
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;
use vouch_store::{BlobStore, MetaDb, ObjectBlobs, PorLog, Repository};

pub const SLOT_BYTES: usize = SLOT_WIDTH * 8;

/// The owner of Alice's log in the provider's store.
const OWNER: &[u8] = b"alice/por";

pub async fn put_por(client: &Client, name: &str, data: &[u8]) {
    client
        .put_with(name, std::io::Cursor::new(data.to_vec()), PutOptions { por: true, ..PutOptions::default() }, |_| {})
        .await
        .unwrap();
}

pub async fn get_por(client: &Client, name: &str, version: Option<u64>) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    client.por().get(name, version, &mut out).await?;
    Ok(out)
}

/// The provider's stores, opened by a test while the provider is stopped.
pub struct Stores {
    pub blobs: ObjectBlobs,
    pub meta: PathBuf,
}

impl Setup {
    pub fn stores(&self) -> Stores {
        let blobs = match &self.blocks {
            Blocks::Local => ObjectBlobs::local(&self.data.join("blobs")).unwrap(),
            Blocks::S3(config) => ObjectBlobs::s3(config).unwrap(),
        };
        Stores { blobs, meta: self.data.join("meta.redb") }
    }
}

/// Stops the provider, lets `damage` work on its stores, starts it again.
pub async fn with_provider_stopped(setup: &mut Setup, damage: impl AsyncFnOnce(&Stores)) -> Client {
    restarted(setup, Misbehave::None, damage).await
}

/// The provider stopped, its stores changed by `damage`, and started again behaving as
/// `misbehave`; a client of it.
pub async fn restarted(setup: &mut Setup, misbehave: Misbehave, damage: impl AsyncFnOnce(&Stores)) -> Client {
    setup.server.take().unwrap().shutdown().await.unwrap();
    damage(&setup.stores()).await;
    let server = start_on(&setup.data, &setup.blocks, misbehave).await;
    std::fs::write(setup.state.join("config.toml"), format!("server = \"http://{}\"\n", server.addr)).unwrap();
    setup.server = Some(server);
    setup.client()
}

/// Every one of U's slots deleted from the provider's metadata store.
pub async fn lose_all_of_u(stores: &Stores) {
    let repo = Repository::open(stores.blobs.clone(), MetaDb::open(&stores.meta).unwrap()).unwrap();
    let log = PorLog::open(&repo, OWNER).await.unwrap().unwrap();
    let all: Vec<u64> = (0..log.schedule().capacity()).collect();
    vouch_testkit::damage::lose_raw_slots(&repo, &log, &all).unwrap();
    repo.close().await.unwrap();
}

/// All of U lost on the provider's side: repair restores each of `files` (name, bytes).
pub async fn each_repaired_after_u_is_lost(setup: &mut Setup, client: Client, files: &[(&str, &Vec<u8>)]) {
    drop(client);
    let client = with_provider_stopped(setup, async |data| lose_all_of_u(data).await).await;
    for &(name, want) in files {
        client.por().repair(name).await.unwrap();
        assert_eq!(&get_por(&client, name, None).await.unwrap(), want, "{name} after repair");
    }
}

/// The first `count(slots)` slots of each stored level (`coded` false) or of C (true)
/// (a level's slots are groups of writes) overwritten with bytes that are no field elements, across the object's segments in
/// order. Returns how many objects were damaged.
pub async fn damage_objects(stores: &Stores, coded: bool, count: impl Fn(usize) -> usize) -> usize {
    // An object's folder (`.../level-*` or `.../coded-*`) and its segments `slots-<n>`,
    // whose zero-padded numbers sort as they are ordered.
    let mut objects: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for key in stores.blobs.list("por").await.unwrap() {
        let Some((folder, file)) = key.rsplit_once('/') else { continue };
        let kind = folder.rsplit('/').next().unwrap_or_default();
        if file.starts_with("slots-") && kind.starts_with("coded-") == coded {
            objects.entry(folder.to_string()).or_default().push(key);
        }
    }
    let slot_bytes = if coded { SLOT_BYTES } else { SLOT_BYTES << vouch_core::por::code::DEFAULT_GROUP_LOG };
    for segments in objects.values_mut() {
        segments.sort();
        let mut contents = Vec::new();
        for key in segments.iter() {
            contents.push(stores.blobs.get(key).await.unwrap().to_vec());
        }
        let slots = contents.iter().map(|c| c.len() / slot_bytes).sum();
        let mut left = count(slots) * slot_bytes;
        for (key, mut bytes) in segments.iter().zip(contents) {
            let here = left.min(bytes.len());
            if here == 0 {
                break;
            }
            bytes[..here].fill(0xff);
            left -= here;
            stores.blobs.put(key, bytes.into()).await.unwrap();
        }
    }
    objects.len()
}

/// An audit whose parts fail exactly where `damaged` says, each because the provider admits
/// its bytes lost; the other parts still prove.
#[track_caller]
pub fn audit_fails_at(report: vouch_client::PorAuditReport, damaged: impl Fn(&str) -> bool) {
    assert!(!report.verified && report.parts.len() >= 2, "{report:?}");
    for part in &report.parts {
        assert_eq!(part.verified, !damaged(&part.region), "{report:?}");
        if !part.verified {
            assert!(part.problem.as_deref().is_some_and(|p| p.contains("lost")), "{part:?}");
        }
    }
}

//! What a failing disk does to a provider's store, done on purpose: for tests of what the
//! client catches and what repair recovers.

use vouch_store::{MetaBatch, MetaStore, PorLog, Repository, StoreError};

/// Deletes U's slots `indices` of `log` from the metadata store of `repo`, as a damaged
/// store would lose them (their sealed checksums stay).
pub fn lose_raw_slots(repo: &Repository, log: &PorLog, indices: &[u64]) -> Result<(), StoreError> {
    let mut batch = MetaBatch::default();
    for &index in indices {
        batch.delete(log.raw_slot_key(index));
    }
    repo.meta().commit(&batch)
}

/// What [`lose_u_and_a_quarter_of_c`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PorDamage {
    /// U's slots deleted.
    pub raw_slots: u64,
    /// C's objects (a code's segments) whose first quarter was overwritten.
    pub coded_objects: usize,
}

/// The store of a stopped provider (a `vouch serve --data` folder `data`) loses what a read of
/// `owner`'s PoR copies needs, and a quarter of what an audit checks: every slot of U, and the
/// first quarter of the bytes of each object of C (bytes that are no field elements), which
/// the erasure code still repairs. A log that does not exist is an error.
pub async fn lose_u_and_a_quarter_of_c(
    data: &std::path::Path,
    owner: &[u8],
) -> Result<PorDamage, vouch_store::PorStoreError> {
    use vouch_store::{BlobStore, MetaDb, ObjectBlobs};
    let blobs = ObjectBlobs::local(&data.join("blobs"))?;
    let repo = Repository::open(blobs.clone(), MetaDb::open(&data.join("meta.redb"))?)?;
    let log = PorLog::open(&repo, owner)
        .await?
        .ok_or_else(|| StoreError::NotFound { key: format!("the PoR log of {}", String::from_utf8_lossy(owner)) })?;
    let all: Vec<u64> = (0..log.schedule().capacity()).collect();
    lose_raw_slots(&repo, &log, &all)?;
    repo.close().await?;
    // C's objects: folders `.../coded-*` of segments `slots-<n>`, whose zero-padded numbers
    // sort in their order.
    let mut objects: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for key in blobs.list("por").await? {
        let Some((folder, file)) = key.rsplit_once('/') else { continue };
        if file.starts_with("slots-") && folder.rsplit('/').next().is_some_and(|k| k.starts_with("coded-")) {
            objects.entry(folder.to_string()).or_default().push(key);
        }
    }
    for segments in objects.values_mut() {
        segments.sort();
        let mut contents = Vec::new();
        for key in segments.iter() {
            contents.push(blobs.get(key).await?.to_vec());
        }
        let mut left = contents.iter().map(Vec::len).sum::<usize>() / 4;
        for (key, mut bytes) in segments.iter().zip(contents) {
            let here = left.min(bytes.len());
            if here == 0 {
                break;
            }
            bytes[..here].fill(0xff);
            blobs.put(key, bytes.into()).await?;
            left -= here;
        }
    }
    Ok(PorDamage { raw_slots: all.len() as u64, coded_objects: objects.len() })
}

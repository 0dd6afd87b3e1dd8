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

//! Deletes (App. A.3): when versions of a PoR file go (`vouch rm`, `vouch prune`), the slots
//! of their copies that no kept version shares are overwritten with ⊥. The log then stops
//! carrying their data (H and C lose it at their next rebuilds), and the provider names the
//! slots free, for new copies to take ([`super::layout::Allocator`]) once each is checked ⊥.
//!
//! The slots are found before the commit, from the layouts the client sealed (a version
//! still proven, so a missing label is a lie), and written after the commit is accepted. A
//! crash between the two leaves them holding data no version names: space lost until the
//! slots are freed by hand, never a copy damaged, for a kept version's slots are never freed.

use super::layout::{self, Layout};
use super::record::PorRecord;
use super::{Batch, PorKeys};
use crate::client::Client;
use crate::error::ClientError;
use crate::ledger::Committing;
use vouch_core::namespace::VersionRecord;
use vouch_core::por::heap::{encode_slot, SLOT_WIDTH};

/// The slots a commit frees, to be written ⊥ once it is accepted.
pub(crate) struct OwedDelete(Vec<u64>);

impl Client {
    /// Before a commit that drops the versions `gone` of a PoR file and keeps `kept`: the slots
    /// only the dropped versions' copies hold.
    pub(crate) async fn por_owe_delete(
        &self,
        commit: &Committing<'_>,
        gone: &[VersionRecord],
        kept: &[VersionRecord],
    ) -> Result<OwedDelete, ClientError> {
        let keys = self.por_keys()?;
        let record = self.por_begin(commit, &keys, false).await?;
        let gone = layout::slots_of(&self.por_layouts(&keys, &record, gone).await?);
        let kept = layout::slots_of(&self.por_layouts(&keys, &record, kept).await?);
        Ok(OwedDelete(gone.difference(&kept).copied().collect()))
    }

    /// The layouts of the copies of `versions` (an empty version has none).
    async fn por_layouts(
        &self,
        keys: &PorKeys,
        record: &PorRecord,
        versions: &[VersionRecord],
    ) -> Result<Vec<Layout>, ClientError> {
        let mut out = Vec::with_capacity(versions.len());
        for v in versions.iter().filter(|v| v.len > 0) {
            out.push(self.por_location(keys, record, v).await?);
        }
        Ok(out)
    }

    /// After that commit: ⊥ over the slots it freed, in batches.
    pub(crate) async fn por_pay_delete(&self, owed: OwedDelete) -> Result<(), ClientError> {
        if owed.0.is_empty() {
            return Ok(());
        }
        let keys = self.por_keys()?;
        let mut record = self.por_ready(&keys, false).await?;
        for writes in owed.0.chunks(super::REQUEST_SLOTS) {
            let slots: Vec<u64> = writes.iter().flat_map(|&i| encode_slot(i, None)).collect();
            debug_assert_eq!(slots.len(), writes.len() * SLOT_WIDTH);
            let batch = Batch { writes: writes.to_vec(), slots, labels: Vec::new(), into_free: false };
            self.por_batch(&keys, &mut record, batch).await?;
        }
        Ok(())
    }
}

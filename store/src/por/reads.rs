//! Audits, reads through U, and what repair needs: regions and U's slots as stored, and U's
//! slots written back.

use super::error::PorStoreError;
use super::objects;
use super::raw::{self, RawSlot};
use super::PorLog;
use crate::{MetaBatch, Repository, StoreError};
use vouch_core::por::audit::{prove_part, Part, PartProof, Pick};
use vouch_core::por::checksum::{SealedChecksum, SEALED_LEN};
use vouch_core::por::client::RawRead;
use vouch_core::por::field::P;
use vouch_core::por::provider::ProviderError;
use vouch_core::por::raw_tree::RawProofError;
use vouch_core::por::repair::RegionRead;
use vouch_core::por::Region;

impl PorLog {
    /// The answer to one part of an audit, read from the store (never from the cache): a
    /// slot whose bytes are missing or short is an error ([`StoreError::NotFound`],
    /// [`StoreError::BadRange`] or [`StoreError::Corrupt`]: data lost).
    pub async fn prove(&self, repo: &Repository, part: &Part, picks: &[Pick]) -> Result<PartProof, PorStoreError> {
        let not_held = PorStoreError::NotHeld { region: part.region };
        let held = self.held(part.region).ok_or(not_held)?;
        if picks.iter().any(|p| p.index >= held.object.slots) {
            return Err(PorStoreError::NotHeld { region: part.region });
        }
        let sealed = held.sealed(&self.names)?;
        let indices: Vec<u64> = picks.iter().map(|p| p.index).collect();
        let width = self.region_width(part.region);
        let slots = match self.building(part.region) {
            // A level still being built answers from its tail and older levels (`build`).
            Some(build) => self.built_slots(repo, build, &indices).await?,
            None => objects::read_some(repo.blobs(), &self.names, &held.object, width, &indices).await?,
        };
        // `read_some` answers one slot per pick, in order.
        let mut picked = slots.iter();
        Ok(prove_part(picks, width, |index| (picked.next().map_or(&[][..], Vec::as_slice), sealed[index as usize])))
    }

    /// U's slots `indices` (ascending, distinct), their sealed checksums and the proof tying
    /// them to U's root. A written slot whose entry is missing or damaged is an error.
    pub async fn read(&self, repo: &Repository, indices: &[u64]) -> Result<RawRead, PorStoreError> {
        let proof = self.tree.prove(indices).map_err(ProviderError::from)?;
        let sealed: Vec<Option<SealedChecksum>> = indices.iter().map(|&i| self.raw_sealed[i as usize]).collect();
        let mut slots = Vec::with_capacity(indices.len() * self.width);
        for ((&index, stored), sealed) in
            indices.iter().zip(raw::get_slots(repo.meta(), &self.names, self.width, indices)?).zip(&sealed)
        {
            let key = || String::from_utf8_lossy(&self.names.raw(index)).into_owned();
            match (stored, sealed) {
                (RawSlot::Slot(slot), _) => slots.extend(slot),
                (RawSlot::Absent, None) => slots.extend(std::iter::repeat_n(0, self.width)),
                (RawSlot::Absent, Some(_)) => return Err(StoreError::NotFound { key: key() }.into()),
                (RawSlot::Damaged, _) => {
                    return Err(StoreError::Corrupt { at: key(), detail: "not a slot of field elements".into() }.into())
                }
            }
        }
        Ok(RawRead { slots, sealed, proof })
    }

    /// For repair: a level or C as stored, and its sealed checksums.
    pub async fn region(&self, repo: &Repository, region: Region) -> Result<RegionRead, PorStoreError> {
        self.region_range(repo, region, 0..u64::MAX).await
    }

    /// For repair, a page at a time: slots `range` of a level or C as stored (`None` where
    /// lost), and their sealed checksums. The range is cut to the region's slots.
    pub async fn region_range(
        &self,
        repo: &Repository,
        region: Region,
        range: std::ops::Range<u64>,
    ) -> Result<RegionRead, PorStoreError> {
        let held = self.held(region).ok_or(PorStoreError::NotHeld { region })?;
        let end = range.end.min(held.object.slots);
        let range = range.start.min(end)..end;
        let width = self.region_width(region);
        let Some(sealed) = &held.sealed else {
            // Slots that cannot be checked count as lost: repair decodes from the other parts.
            let count = (range.end - range.start) as usize;
            return Ok(RegionRead {
                slots: vec![None; count],
                sealed: vec![SealedChecksum::from_bytes([0; SEALED_LEN]); count],
            });
        };
        let slots = match self.building(region) {
            Some(build) => {
                let indices: Vec<u64> = range.clone().collect();
                match self.built_slots(repo, build, &indices).await {
                    Ok(slots) => slots.into_iter().map(Some).collect(),
                    // A lost input loses the level being built: every slot is an erasure.
                    Err(StoreError::NotFound { .. } | StoreError::BadRange { .. } | StoreError::Corrupt { .. }) => {
                        vec![None; indices.len()]
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            None => objects::read_lenient(repo.blobs(), &self.names, &held.object, width, range.clone()).await?,
        };
        Ok(RegionRead { slots, sealed: sealed[range.start as usize..range.end as usize].to_vec() })
    }

    /// For repair: U's slots `indices` as stored, `None` where a written slot's entry is
    /// missing or damaged (a slot never written is zeros).
    pub async fn raw_slots(&self, repo: &Repository, indices: &[u64]) -> Result<Vec<Option<Vec<u64>>>, PorStoreError> {
        self.check_raw_indices(indices.iter().copied())?;
        let stored = raw::get_slots(repo.meta(), &self.names, self.width, indices)?;
        Ok(indices
            .iter()
            .zip(stored)
            .map(|(&index, stored)| match (stored, self.raw_sealed[index as usize]) {
                (RawSlot::Slot(slot), _) => Some(slot),
                (RawSlot::Absent, None) => Some(vec![0; self.width]),
                _ => None,
            })
            .collect())
    }

    /// For repair: writes back U's slots as the client rebuilt and checked them. Only their
    /// content changes (their sealed checksums and U's tree are what the client checked them
    /// against).
    pub async fn restore(&mut self, repo: &Repository, slots: &[(u64, Vec<u64>)]) -> Result<(), PorStoreError> {
        self.check_raw_indices(slots.iter().map(|(i, _)| *i))?;
        if slots.iter().any(|(_, slot)| slot.len() != self.width || slot.iter().any(|&e| e >= P)) {
            return Err(ProviderError::Batch.into());
        }
        let mut batch = MetaBatch::default();
        for (index, slot) in slots {
            raw::put_slot(&mut batch, &self.names, *index, slot);
        }
        repo.commit_batch(&batch).await?;
        Ok(())
    }

    /// The build of `region`, if it is a level still being built.
    fn building(&self, region: Region) -> Option<&super::build::Build> {
        match region {
            Region::Level(level) => self.builds.get(level as usize)?.as_ref(),
            _ => None,
        }
    }

    fn check_raw_indices(&self, mut indices: impl Iterator<Item = u64>) -> Result<(), PorStoreError> {
        let k = self.schedule.log_capacity;
        if indices.any(|i| i >> k != 0) {
            return Err(ProviderError::RawProof(RawProofError::Indices(k)).into());
        }
        Ok(())
    }
}

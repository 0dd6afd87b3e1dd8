//! The copy of a version an edit or a sync made: it keeps the slots of the copy of the version
//! before it for every block the two share, and writes only the edit's new blocks, so an edit
//! in the middle of a large file costs PoR writes for the blocks it wrote ([`vouch_core::por::layout`]).

use super::PorKeys;
use super::PorSession;
use crate::error::ClientError;
use crate::ledger::Committing;
use crate::verify::{self, StoredBlock};
use crate::violation::ViolationKind;
use std::collections::HashMap;
use vouch_core::namespace::VersionRecord;
use vouch_core::por::copy::{self, TaggedData};
use vouch_core::por::layout::{self, Layout};
use vouch_core::por::record::PorRecord;
use vouch_proto::{BlockList, BlocksRequest, WireBlock};

impl PorSession<'_> {
    /// After a commit that made `version` of the PoR file `name` from `base` by an edit whose
    /// new blocks are `written`: the copy of `version`. Made whole instead when `base` has no
    /// copy to build on (it was empty) or the layout would grow past `layout::MAX_RUNS`.
    pub(crate) async fn pay_edit(
        &self,
        commit: &Committing<'_>,
        name: &str,
        base: &VersionRecord,
        version: &VersionRecord,
        written: &[WireBlock],
    ) -> Result<(), ClientError> {
        let keys = self.keys()?;
        let mut record = self.ready(&keys, false).await?;
        match self.reuse(&keys, &record, name, base, version, written).await? {
            Some((layout, written)) => self.write_copy(&keys, &mut record, version, &layout, written, true).await?,
            None => self.copy_streamed(commit, &keys, &mut record, name, version, None).await?,
        }
        record.copying = None;
        self.save(&record)
    }

    /// The layout of `version`'s copy on `base`'s, and the U indices and slots of its new
    /// blocks, placed in free slots first; `None` when it is to be copied whole.
    async fn reuse(
        &self,
        keys: &PorKeys,
        record: &PorRecord,
        name: &str,
        base: &VersionRecord,
        version: &VersionRecord,
        written: &[WireBlock],
    ) -> Result<Option<(Layout, (Vec<u64>, Vec<u64>))>, ClientError> {
        if base.len == 0 || version.len == 0 {
            return Ok(None);
        }
        let old = self.location(keys, record, base).await?;
        let (old_blocks, blocks) = (self.block_list(name, base).await?, self.block_list(name, version).await?);
        // A block is known by its nonce and tag, which make its leaf.
        let id = |b: &StoredBlock| ((b.nonce, b.tag.clone()), copy::block_slots(b.tag.len(), u64::from(b.len)));
        let (old_ids, ids): (Vec<_>, Vec<_>) = (old_blocks.iter().map(id).collect(), blocks.iter().map(id).collect());
        let new_slots = written.iter().map(|b| copy::block_slots(b.tag.len(), b.data.len() as u64)).sum();
        let mut alloc = self.allocator(record, new_slots).await?;
        let Some((layout, new)) = layout::reuse(&old, &old_ids, &ids, &mut alloc) else {
            return Ok(None);
        };
        let by_nonce: HashMap<u64, &WireBlock> = written.iter().map(|b| (b.nonce, b)).collect();
        let mut fresh = Vec::with_capacity(new.len());
        let mut starts = Vec::with_capacity(new.len());
        for (i, at) in new {
            starts.push(at);
            let b = &blocks[i];
            match by_nonce.get(&b.nonce) {
                Some(w) if w.tag[..] == b.tag[..] && w.data.len() == b.len as usize => {
                    fresh.push(TaggedData { nonce: w.nonce, tag: w.tag.to_vec(), data: w.data.clone() })
                }
                // Neither kept nor written by this edit: the version is copied whole.
                _ => return Ok(None),
            }
        }
        Ok(Some((layout, copy::lay_out(&starts, &fresh))))
    }

    /// The verified list of `version`'s blocks (their nonces, tags and lengths; no data).
    pub(super) async fn block_list(
        &self,
        name: &str,
        version: &VersionRecord,
    ) -> Result<Vec<StoredBlock>, ClientError> {
        let request = BlocksRequest { name: name.into(), version: Some(version.number) };
        let answer: BlockList = self.client.remote.call(&request).await.map_err(|e| e.absence_unproven(name))?;
        match verify::located(&self.client.root(), name, Some(version.number), &answer.located)? {
            (_, Some(v)) if v.record == *version => verify::block_list(version, &answer),
            _ => Err(ClientError::violation(
                ViolationKind::UnprovenNotFound,
                format!("it does not list version {} of {name}, which the client committed", version.number),
            )),
        }
    }
}

//! multiUpdate (Alg. 3.1-3.3 of paper 000 on the provider's side): a batch of edits applied
//! to the list, with the proof a client checks it by.

use super::arena::{ArenaSink, FlexList};
use super::build::build;
use super::edit::{apply_edits, check_edits, ApplyError, Edit, EditError};
use super::proof::{MultiProof, UpdateProof, PROOF_VERSION};
use super::reveal::Opening;
use super::Block;
use crate::hash::Digest;

impl FlexList {
    /// multiUpdate (Alg. 3.1): applies a batch of edits and returns the proof the client
    /// verifies with [`super::verify_multi_update`]: the opened region of the old list, and the
    /// new root.
    pub fn multi_update(&mut self, edits: &[Edit]) -> Result<UpdateProof, EditError> {
        let (new_root, proof) = self.update(edits, true)?;
        Ok(UpdateProof { new_root, proof: MultiProof::from_trusted(proof) })
    }

    /// The proof [`FlexList::multi_update`] returns for `edits`, without changing the list: a
    /// provider proves a change first and applies it once the change is durable, so that
    /// readers in between see only durable state.
    pub fn prove_update(&self, edits: &[Edit]) -> Result<UpdateProof, EditError> {
        check_edits(edits, self.total_len())?;
        let mut opening = Opening::default();
        opening.proof.push(PROOF_VERSION);
        self.open(self.root, &self.edit_targets(edits), &mut opening, true);
        let proof = MultiProof::from_trusted(opening.proof);
        let (new_root, _) = super::proof::updated_root(&self.root(), edits, &proof).map_err(|e| match e {
            super::UpdateVerifyError::Edit(e) => e,
            e => EditError::Unprovable(e.to_string()),
        })?;
        Ok(UpdateProof { new_root, proof })
    }

    /// Applies a batch of edits without producing a proof; returns the new root.
    pub fn apply(&mut self, edits: &[Edit]) -> Result<Digest, EditError> {
        Ok(self.update(edits, false)?.0)
    }

    /// Inserts one block in front of the block starting at byte `at`.
    pub fn insert(&mut self, at: u64, block: Block) -> Result<Digest, EditError> {
        self.apply(&[Edit::Insert { at, block }])
    }

    /// Replaces the block holding byte `at`.
    pub fn modify(&mut self, at: u64, block: Block) -> Result<Digest, EditError> {
        self.apply(&[Edit::Modify { at, block }])
    }

    /// Removes the block holding byte `at`.
    pub fn remove(&mut self, at: u64) -> Result<Digest, EditError> {
        self.apply(&[Edit::Remove { at }])
    }

    /// The offsets whose search paths a batch opens: each edit's block and the block before
    /// it (whose tower the change can reach), sorted, without repeats.
    fn edit_targets(&self, edits: &[Edit]) -> Vec<i64> {
        let mut targets = Vec::with_capacity(2 * edits.len());
        for edit in edits {
            let at = edit.at();
            let before = match edit {
                Edit::Insert { .. } => at,
                _ => {
                    targets.push(at as i64);
                    self.search(at).map_or(at, |found| found.start)
                }
            };
            targets.push(before as i64 - 1);
        }
        targets.sort_unstable();
        targets.dedup();
        targets
    }

    fn update(&mut self, edits: &[Edit], with_proof: bool) -> Result<(Digest, Vec<u8>), EditError> {
        check_edits(edits, self.total_len())?;
        let mut opening = Opening::default();
        if with_proof {
            opening.proof.push(PROOF_VERSION);
        }
        self.open(self.root, &self.edit_targets(edits), &mut opening, with_proof);
        let items_before = opening.items.len() as i64;
        let items = match apply_edits(std::mem::take(&mut opening.items), edits) {
            Ok(items) => items,
            Err(ApplyError::Edit(e)) => return Err(e),
            Err(ApplyError::Closed { at }) => unreachable!("the provider opened every path edit {at} needs"),
        };
        // Inserts add one item each and removes take one away.
        let added = items.len() as i64 - items_before;
        self.release(&opening.nodes);
        let root = build(&mut ArenaSink { list: self }, items.into_iter()).map_err(|_| EditError::TooManyNodes)?;
        self.root = root;
        self.blocks = (self.blocks as i64 + added) as usize;
        Ok((self.root(), opening.proof))
    }
}

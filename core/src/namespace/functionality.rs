//! The namespace as an authenticated data structure for AIP (paper 003, Sec. 2.3–2.4): a
//! dictionary from names to entries, with ADICT's operations (Alg. 4–5) and Table 1's
//! compatibility, so that AIP runs the namespace as it runs [`crate::aip::Adict`].
//!
//! A lookup proves where a name is, or the neighbours around its gap; a put or a delete that
//! changes the namespace adds its update proof, from which the client computes the next
//! authenticator alone. `σ'_o` never travels: the server recomputes the edit from its state.
//! For a sequence `μ`, each update before the last operation is proven against the namespace
//! after the ones before it; a query before the last changes nothing, so it has no step.

use super::{
    check_name, verify_listing, verify_lookup, EntryRecord, Found, LookupProof, NamespaceError, NamespaceTree,
    TreeError,
};
use crate::aip::Functionality;
use crate::flexlist::{verify_multi_update_len, Edit, MultiProof, UpdateProof};
use crate::hash::Digest;

/// An operation on a namespace seen as a dictionary from names to entries (ADICT's
/// operations, paper 003 Alg. 4-5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceOp {
    Get(String),
    /// Sets the entry of its name.
    Put(EntryRecord),
    Delete(String),
    List,
}

impl NamespaceOp {
    /// The name an operation reads or writes (`None`: all of them).
    fn name(&self) -> Option<&str> {
        match self {
            NamespaceOp::Get(n) | NamespaceOp::Delete(n) => Some(n),
            NamespaceOp::Put(e) => Some(&e.name),
            NamespaceOp::List => None,
        }
    }

    fn writes(&self) -> bool {
        matches!(self, NamespaceOp::Put(_) | NamespaceOp::Delete(_))
    }
}

/// A response: a get's value (its entry, or none), a listing, nothing for a change. A
/// name's position is not part of the response (it belongs to the proof): a change to
/// another name moves it without changing what a get answers (Table 1's compatibility).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceResponse {
    Value(Option<EntryRecord>),
    Listing(Vec<EntryRecord>),
    Done,
}

/// The proof of one operation: the name's lookup, and for a change that alters the
/// namespace, its update proof; or a listing's proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceStep {
    Lookup { lookup: LookupProof, update: Option<UpdateProof> },
    Listing(Option<MultiProof>),
}

/// `σ_o` for a sequence of operations: a step for each update before the last operation,
/// each against the namespace after the ones before it, then the last operation's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceAux(pub Vec<NamespaceStep>);

/// The client's authenticator: the namespace root and size.
pub type NamespaceAuth = (Digest, u64);

/// The namespace as AIP's [`Functionality`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NamespaceOps;

/// The namespace edit that sets or deletes a name found as `found` (none: nothing changes).
fn edit_for(op: &NamespaceOp, found: &Found) -> Option<Edit> {
    match (op, found) {
        (NamespaceOp::Put(entry), Found::At { index, .. }) => Some(Edit::Modify { at: *index, block: entry.leaf() }),
        (NamespaceOp::Put(entry), Found::Absent { index }) => Some(Edit::Insert { at: *index, block: entry.leaf() }),
        (NamespaceOp::Delete(_), Found::At { index, .. }) => Some(Edit::Remove { at: *index }),
        _ => None,
    }
}

fn put_entry(op: &NamespaceOp) -> Option<&EntryRecord> {
    match op {
        NamespaceOp::Put(e) => Some(e),
        _ => None,
    }
}

/// `op`'s response and proof against `state`.
fn answer(state: &NamespaceTree, op: &NamespaceOp) -> Result<(NamespaceResponse, NamespaceStep), TreeError> {
    op.name().map(check_name).transpose()?;
    let Some(name) = op.name() else {
        let entries = state.entries().map(|e| e.cloned()).collect::<Result<Vec<_>, _>>()?;
        return Ok((NamespaceResponse::Listing(entries), NamespaceStep::Listing(state.listing_proof()?)));
    };
    let (lookup, found) = state.lookup(name)?;
    let update = match edit_for(op, &found) {
        Some(edit) => Some(state.prove_update(&[edit], put_entry(op))?.0),
        None => None,
    };
    let response = match found {
        _ if op.writes() => NamespaceResponse::Done,
        Found::At { entry, .. } => NamespaceResponse::Value(Some(entry)),
        Found::Absent { .. } => NamespaceResponse::Value(None),
    };
    Ok((response, NamespaceStep::Lookup { lookup, update }))
}

/// The authenticator after `op` from `(root, len)`, when `step` proves that `op` answers
/// `response` there.
fn check(
    op: &NamespaceOp,
    &(root, len): &NamespaceAuth,
    response: &NamespaceResponse,
    step: &NamespaceStep,
) -> Result<NamespaceAuth, NamespaceError> {
    op.name().map(check_name).transpose()?;
    let inconsistent = |why| Err(NamespaceError::Inconsistent(why));
    match (op.name(), step) {
        (None, NamespaceStep::Listing(proof)) => {
            let NamespaceResponse::Listing(entries) = response else { return inconsistent("not a listing") };
            verify_listing(&root, len, entries, proof.as_ref())?;
            Ok((root, len))
        }
        (Some(name), NamespaceStep::Lookup { lookup, update }) => {
            let found = verify_lookup(&root, len, name, lookup)?;
            let value = match &found {
                Found::At { entry, .. } => Some(entry),
                Found::Absent { .. } => None,
            };
            match (op.writes(), response) {
                (false, NamespaceResponse::Value(claimed)) if claimed.as_ref() == value => {}
                (true, NamespaceResponse::Done) => {}
                _ => return inconsistent("the response is not what the proof shows"),
            }
            match (edit_for(op, &found), update) {
                (None, None) => Ok((root, len)),
                (Some(edit), Some(update)) => Ok(verify_multi_update_len(&root, &[edit], update)?),
                _ => inconsistent("an update proof missing or superfluous"),
            }
        }
        _ => inconsistent("the proof is not of this operation's kind"),
    }
}

impl Functionality for NamespaceOps {
    type Op = NamespaceOp;
    type Response = NamespaceResponse;
    type Auth = NamespaceAuth;
    type Aux = NamespaceAux;
    /// Cloning copies the FlexList: O(n) in the names, where ADICT's tree costs O(1).
    type State = NamespaceTree;
    type StateError = TreeError;
    type VerifyError = NamespaceError;

    fn query(state: &NamespaceTree, ops: &[NamespaceOp]) -> Result<(NamespaceResponse, NamespaceAux), TreeError> {
        let Some((last, before)) = ops.split_last() else {
            return Ok((NamespaceResponse::Done, NamespaceAux(Vec::new())));
        };
        let mut steps = Vec::new();
        // Copied only when an update comes before the last operation.
        let mut after: Option<NamespaceTree> = None;
        for op in before.iter().filter(|op| op.writes()) {
            let state = after.get_or_insert_with(|| state.clone());
            steps.push(answer(state, op)?.1);
            Self::refresh(state, op)?;
        }
        let (response, step) = answer(after.as_ref().unwrap_or(state), last)?;
        steps.push(step);
        Ok((response, NamespaceAux(steps)))
    }

    fn authexec(
        ops: &[NamespaceOp],
        auth: &NamespaceAuth,
        response: &NamespaceResponse,
        aux: &NamespaceAux,
    ) -> Result<NamespaceAuth, NamespaceError> {
        let Some((last, before)) = ops.split_last() else {
            return Err(NamespaceError::Inconsistent("no operation to check"));
        };
        let updates = before.iter().filter(|op| op.writes());
        let Some((last_step, steps)) = aux.0.split_last().filter(|(_, s)| s.len() == updates.clone().count()) else {
            return Err(NamespaceError::Inconsistent("not one proof per update and one for the last operation"));
        };
        let mut auth = *auth;
        for (op, step) in updates.zip(steps) {
            auth = check(op, &auth, &NamespaceResponse::Done, step)?;
        }
        check(last, &auth, response, last_step)
    }

    fn refresh(state: &mut NamespaceTree, op: &NamespaceOp) -> Result<(), TreeError> {
        if let Some(name) = op.name().filter(|_| op.writes()) {
            check_name(name)?;
            if let Some(edit) = edit_for(op, &state.find(name)?) {
                state.apply(&[edit], put_entry(op))?;
            }
        }
        Ok(())
    }

    fn auth_of(state: &NamespaceTree) -> NamespaceAuth {
        (state.root(), state.len())
    }

    /// Table 1 of paper 003: a pending put or delete of a name is incompatible with a later
    /// get of the same name and with a listing; every other pair is compatible.
    fn compatible(&self, pending: &[NamespaceOp], op: &NamespaceOp) -> bool {
        pending.iter().all(|u| {
            !u.writes()
                || !(matches!(op, NamespaceOp::List) || (matches!(op, NamespaceOp::Get(_)) && u.name() == op.name()))
        })
    }

    fn is_query(op: &NamespaceOp) -> bool {
        !op.writes()
    }
}

#[cfg(test)]
#[path = "functionality_tests.rs"]
mod tests;

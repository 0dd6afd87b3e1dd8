//! An authenticated data structure as VICOS states it (paper 003, Sec. 2.3-2.4), and the
//! namespace as one: the shape AIP runs over, so that AIP's authenticated dictionary can be
//! this structure or sit beside it.
//!
//! The server holds a state `s`; for an operation `o` it computes a response and auxiliary
//! data, `(r, σ) = query(s, o)`; the client, holding only the authenticator `a`, checks them
//! and derives the next authenticator, `a' = authexec(o, a, r, σ)` (the paper's third output,
//! "valid", is the `Result`); the server then applies the operation, `s' = refresh(s, o, σ)`.
//! `compatible(μ, o)` says whether pending operations `μ` may come before `o` without
//! changing its response (Table 1 for a dictionary).
//!
//! Here σ' = σ: the namespace's update proof is both what the client checks and what the
//! server needs to refresh, so authexec gives back only the new authenticator.

use super::{
    check_name, verify_listing, verify_lookup, EntryRecord, Found, LookupProof, NamespaceError, NamespaceTree,
    TreeError,
};
use crate::flexlist::{verify_multi_update_len, Edit, MultiProof, UpdateProof};
use crate::hash::Digest;

/// An authenticated data structure: the server's side (`query`, `refresh`) and the client's
/// (`authexec`), with the compatibility relation of its operations.
pub trait Functionality {
    /// What the server holds (`s`).
    type State;
    /// What the client holds (`a`).
    type Authenticator;
    type Operation;
    type Response;
    /// The proof that comes with a response (`σ`).
    type Aux;
    /// Why the server cannot answer.
    type ServerError;
    /// Why the client rejects an answer.
    type ClientError;

    fn query(state: &Self::State, op: &Self::Operation) -> Result<(Self::Response, Self::Aux), Self::ServerError>;

    fn authexec(
        op: &Self::Operation,
        auth: &Self::Authenticator,
        response: &Self::Response,
        aux: &Self::Aux,
    ) -> Result<Self::Authenticator, Self::ClientError>;

    fn refresh(state: &mut Self::State, op: &Self::Operation, aux: &Self::Aux) -> Result<(), Self::ServerError>;

    /// Whether every operation of `pending` may precede `op` without changing `op`'s response.
    fn compatible(pending: &[Self::Operation], op: &Self::Operation) -> bool;
}

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

/// The proof of a response: the name's lookup, and for a change that alters the namespace,
/// its update proof; or a listing's proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceAux {
    Lookup { lookup: LookupProof, update: Option<UpdateProof> },
    Listing(Option<MultiProof>),
}

/// The client's authenticator: the namespace root and size.
pub type NamespaceAuth = (Digest, u64);

/// The namespace as a [`Functionality`].
#[derive(Debug)]
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

impl Functionality for NamespaceOps {
    type State = NamespaceTree;
    type Authenticator = NamespaceAuth;
    type Operation = NamespaceOp;
    type Response = NamespaceResponse;
    type Aux = NamespaceAux;
    type ServerError = TreeError;
    type ClientError = NamespaceError;

    fn query(state: &NamespaceTree, op: &NamespaceOp) -> Result<(NamespaceResponse, NamespaceAux), TreeError> {
        op.name().map(check_name).transpose()?;
        let Some(name) = op.name() else {
            let entries = state.entries().map(|e| e.cloned()).collect::<Result<Vec<_>, _>>()?;
            return Ok((NamespaceResponse::Listing(entries), NamespaceAux::Listing(state.listing_proof()?)));
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
        Ok((response, NamespaceAux::Lookup { lookup, update }))
    }

    fn authexec(
        op: &NamespaceOp,
        &(root, len): &NamespaceAuth,
        response: &NamespaceResponse,
        aux: &NamespaceAux,
    ) -> Result<NamespaceAuth, NamespaceError> {
        op.name().map(check_name).transpose()?;
        let inconsistent = |why| Err(NamespaceError::Inconsistent(why));
        match (op.name(), aux) {
            (None, NamespaceAux::Listing(proof)) => {
                let NamespaceResponse::Listing(entries) = response else { return inconsistent("not a listing") };
                verify_listing(&root, len, entries, proof.as_ref())?;
                Ok((root, len))
            }
            (Some(name), NamespaceAux::Lookup { lookup, update }) => {
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

    fn refresh(state: &mut NamespaceTree, op: &NamespaceOp, _: &NamespaceAux) -> Result<(), TreeError> {
        if let Some(name) = op.name().filter(|_| op.writes()) {
            if let Some(edit) = edit_for(op, &state.find(name)?) {
                state.apply(&[edit], put_entry(op))?;
            }
        }
        Ok(())
    }

    /// Table 1 of paper 003: a pending put or delete of a name is incompatible with a later
    /// get of the same name and with a listing; every other pair is compatible.
    fn compatible(pending: &[NamespaceOp], op: &NamespaceOp) -> bool {
        pending.iter().all(|u| {
            !u.writes()
                || !(matches!(op, NamespaceOp::List) || (matches!(op, NamespaceOp::Get(_)) && u.name() == op.name()))
        })
    }
}

#[cfg(test)]
#[path = "functionality_tests.rs"]
mod tests;

//! ADICT as AIP's functionality (paper 003, Alg. 4–5, Table 1): put, get, delete and list
//! over [`crate::adict`], with the compatibility relation of Table 1 or, as the ACOP baseline,
//! commutativity.

use super::{Functionality, Reply};
use crate::adict::{
    key_path, range_root, root_of_all, value_hash, verify_range, PathRange, Proof, ProofError, RangeNode, Tree,
};
use crate::hash::Digest;
use std::convert::Infallible;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DictOp {
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Get {
        key: Vec<u8>,
    },
    Delete {
        key: Vec<u8>,
    },
    /// Every key at once (as the genesis's operation; a large dictionary needs pages).
    List,
    /// A page of a listing in path order (`H(key)`): at most `limit` keys whose paths come
    /// after `after` (none: from the first).
    ListPage {
        after: Option<Digest>,
        limit: u32,
    },
}

/// The most keys a page holds, whatever its operation asks for.
pub const MAX_PAGE: u32 = 10_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DictResponse {
    /// A put's or a delete's (they return nothing).
    Nothing,
    Value(Option<Vec<u8>>),
    /// Every key, in byte order.
    Keys(Vec<Vec<u8>>),
    /// A page's keys, in path order, and whether keys follow it: the next page starts after
    /// the last one's path.
    Page {
        keys: Vec<Vec<u8>>,
        more: bool,
    },
}

/// What proves one operation: a key's proof (a get's), a key's proof and the value a put or
/// a delete replaces, or (for a listing) every key and value hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DictStep {
    Key(Proof),
    /// The value is checked against the value hash the proof shows. VICOS names an object by
    /// it, which the change's client deletes once the change is committed: an object that
    /// no later operation can name.
    Change {
        proof: Proof,
        replaced: Option<Vec<u8>>,
    },
    All(Vec<(Vec<u8>, Digest)>),
    /// A page's: the tree pruned to its range ([`crate::adict::verify_range`]).
    Range(Vec<RangeNode>),
}

/// The proofs of a sequence of operations, one each, each against the dictionary after the
/// ones before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DictAux(pub Vec<DictStep>);

impl DictAux {
    /// The value the last operation (a put or a delete) replaces in the state its proof is
    /// against, `None` when the key was absent or the operation changes nothing.
    fn replaced(&self) -> Option<&[u8]> {
        match self.0.last() {
            Some(DictStep::Change { replaced, .. }) => replaced.as_deref(),
            _ => None,
        }
    }
}

impl Adict {
    /// The value a put or a delete replaces in the history, by its REPLY: that of the last
    /// change of its key pending before it (a put's value; a delete's: none), or else the
    /// one its proof shows in the authenticated state. `None` for a get or a list.
    ///
    /// A pending change may still abort; its value is then named by no operation at all.
    /// Either way no operation after this one names the value: VICOS deletes the object it
    /// names. Only as good as the REPLY: to be used once the client accepted it.
    pub fn replaced(reply: &Reply<Adict>) -> Option<&[u8]> {
        let (mine, before) = reply.view.omega.split_last()?;
        let key = mine.invoked.op.changed_key()?;
        for pending in before.iter().rev().filter(|p| p.aborted.is_none()) {
            match &pending.invoked.op {
                DictOp::Put { key: k, value } if k == key => return Some(value),
                DictOp::Delete { key: k } if k == key => return None,
                _ => {}
            }
        }
        reply.aux.replaced()
    }
}

/// Why a client refuses ADICT's answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DictError {
    #[error(transparent)]
    Proof(#[from] ProofError),
    #[error("the dictionary proofs do not fit the operations: {0}")]
    Mismatch(&'static str),
    #[error("the response is not what the dictionary proofs show")]
    Response,
    #[error("the value a change replaces is not the one the dictionary proof shows")]
    Replaced,
}

/// Which pending operations an operation may run beside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Table 1: all but a get (or a list) after a pending change of its key (of any key).
    Compatible,
    /// ACOP's rule: only operations that commute.
    Commutative,
}

/// ADICT in `mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adict {
    pub mode: Mode,
}

impl DictOp {
    fn changed_key(&self) -> Option<&[u8]> {
        match self {
            DictOp::Put { key, .. } | DictOp::Delete { key } => Some(key),
            _ => None,
        }
    }

    fn read_key(&self) -> Option<&[u8]> {
        match self {
            DictOp::Get { key } => Some(key),
            _ => None,
        }
    }

    fn key(&self) -> Option<&[u8]> {
        self.changed_key().or(self.read_key())
    }
}

/// A put's or a delete's step: the key's proof, and its value now.
fn change_step(tree: &Tree, key: &[u8]) -> DictStep {
    DictStep::Change { proof: tree.prove(key), replaced: tree.get(key).map(<[u8]>::to_vec) }
}

/// Whether the value a change claims to replace hashes to the one its proof shows.
fn check_replaced(proven: Option<Digest>, replaced: &Option<Vec<u8>>) -> Result<(), DictError> {
    match proven == replaced.as_deref().map(value_hash) {
        true => Ok(()),
        false => Err(DictError::Replaced),
    }
}

fn inside_key(node: &RangeNode) -> Option<&[u8]> {
    match node {
        RangeNode::Inside { key, .. } => Some(key),
        _ => None,
    }
}

/// A page's proof against `root`; with its `response` (the operation's own, not a pending
/// one's), that the response shows the keys the proof does, no more than asked for, at
/// least one when more follow (so a listing ends), and that the range the proof covers is
/// the page's: from `after` to its last key when more follow, else to the last path.
fn check_page(
    root: &Digest,
    after: Option<Digest>,
    limit: u32,
    nodes: &[RangeNode],
    response: Option<&DictResponse>,
) -> Result<(), DictError> {
    let Some(response) = response else {
        // A page pending before the operation: its keys are not this client's to check.
        return match range_root(nodes)? == *root {
            true => Ok(()),
            false => Err(ProofError::WrongRoot.into()),
        };
    };
    let DictResponse::Page { keys, more } = response else { return Err(DictError::Response) };
    let upto = match more {
        true => Some(key_path(keys.last().ok_or(DictError::Response)?)),
        false => None,
    };
    let (proven, shown) = verify_range(nodes, &PathRange { after, upto })?;
    if proven != *root {
        return Err(ProofError::WrongRoot.into());
    }
    if shown != *keys || keys.len() > limit.clamp(1, MAX_PAGE) as usize {
        return Err(DictError::Response);
    }
    Ok(())
}

/// Whether `op`'s response is the same with `pending` before it (Table 1).
fn compatible(pending: &DictOp, op: &DictOp) -> bool {
    match (pending.changed_key(), op) {
        (None, _) => true,
        (Some(_), DictOp::List | DictOp::ListPage { .. }) => false,
        (Some(changed), DictOp::Get { key }) => changed != key.as_slice(),
        (Some(_), _) => true,
    }
}

/// Whether `a` then `b` leaves the state and the responses as `b` then `a` (two deletes of
/// a key do; two puts of it need not).
fn commute(a: &DictOp, b: &DictOp) -> bool {
    let updates = |o: &DictOp| o.changed_key().is_some();
    match (a, b) {
        (DictOp::Delete { key: x }, DictOp::Delete { key: y }) if x == y => true,
        (DictOp::List | DictOp::ListPage { .. }, o) | (o, DictOp::List | DictOp::ListPage { .. }) => !updates(o),
        _ => a.key() != b.key() || (!updates(a) && !updates(b)),
    }
}

impl Functionality for Adict {
    type Op = DictOp;
    type Response = DictResponse;
    type Auth = Digest;
    type Aux = DictAux;
    type State = Tree;
    type StateError = Infallible;
    type VerifyError = DictError;

    fn query(state: &Tree, ops: &[DictOp]) -> Result<(DictResponse, DictAux), Infallible> {
        let mut tree = state.clone();
        let (mut steps, mut response) = (Vec::with_capacity(ops.len()), DictResponse::Nothing);
        for op in ops {
            match op {
                DictOp::Put { key, value } => {
                    steps.push(change_step(&tree, key));
                    tree.put(key, value);
                    response = DictResponse::Nothing;
                }
                DictOp::Delete { key } => {
                    steps.push(change_step(&tree, key));
                    tree.delete(key);
                    response = DictResponse::Nothing;
                }
                DictOp::Get { key } => {
                    steps.push(DictStep::Key(tree.prove(key)));
                    response = DictResponse::Value(tree.get(key).map(<[u8]>::to_vec));
                }
                DictOp::List => {
                    let all: Vec<_> = tree.entries().into_iter().map(|(k, v)| (k.to_vec(), value_hash(v))).collect();
                    let mut keys: Vec<_> = all.iter().map(|(k, _)| k.clone()).collect();
                    keys.sort();
                    steps.push(DictStep::All(all));
                    response = DictResponse::Keys(keys);
                }
                DictOp::ListPage { after, limit } => {
                    let (nodes, more) = tree.page(*after, (*limit).clamp(1, MAX_PAGE) as usize);
                    let keys = nodes.iter().filter_map(inside_key).map(<[u8]>::to_vec).collect();
                    steps.push(DictStep::Range(nodes));
                    response = DictResponse::Page { keys, more };
                }
            }
        }
        Ok((response, DictAux(steps)))
    }

    fn authexec(ops: &[DictOp], auth: &Digest, response: &DictResponse, aux: &DictAux) -> Result<Digest, DictError> {
        if ops.len() != aux.0.len() || ops.is_empty() {
            return Err(DictError::Mismatch("not one proof per operation"));
        }
        let mut root = *auth;
        for (k, (op, step)) in ops.iter().zip(&aux.0).enumerate() {
            let last = k + 1 == ops.len();
            root = match (op, step) {
                (DictOp::Put { key, value }, DictStep::Change { proof, replaced }) => {
                    if last && *response != DictResponse::Nothing {
                        return Err(DictError::Response);
                    }
                    let (proven, root) = proof.put_replacing(&root, key, &value_hash(value))?;
                    check_replaced(proven, replaced)?;
                    root
                }
                (DictOp::Delete { key }, DictStep::Change { proof, replaced }) => {
                    if last && *response != DictResponse::Nothing {
                        return Err(DictError::Response);
                    }
                    let (proven, root) = proof.delete_replacing(&root, key)?;
                    check_replaced(proven, replaced)?;
                    root
                }
                (DictOp::Get { key }, DictStep::Key(proof)) => {
                    let proven = proof.verify(&root, key)?;
                    if last {
                        match response {
                            DictResponse::Value(v) if v.as_deref().map(value_hash) == proven => {}
                            _ => return Err(DictError::Response),
                        }
                    }
                    root
                }
                (DictOp::List, DictStep::All(all)) => {
                    let mut entries: Vec<_> = all.iter().map(|(k, v)| (key_path(k), *v)).collect();
                    if root_of_all(&mut entries)? != root {
                        return Err(ProofError::WrongRoot.into());
                    }
                    let mut keys: Vec<_> = all.iter().map(|(k, _)| k.clone()).collect();
                    keys.sort();
                    if last && *response != DictResponse::Keys(keys) {
                        return Err(DictError::Response);
                    }
                    root
                }
                (DictOp::ListPage { after, limit }, DictStep::Range(nodes)) => {
                    check_page(&root, *after, *limit, nodes, last.then_some(response))?;
                    root
                }
                _ => return Err(DictError::Mismatch("a proof of another kind of operation")),
            };
        }
        Ok(root)
    }

    fn refresh(state: &mut Tree, op: &DictOp) -> Result<(), Infallible> {
        match op {
            DictOp::Put { key, value } => state.put(key, value),
            DictOp::Delete { key } => state.delete(key),
            DictOp::Get { .. } | DictOp::List | DictOp::ListPage { .. } => {}
        }
        Ok(())
    }

    fn auth_of(state: &Tree) -> Digest {
        state.root()
    }

    fn compatible(&self, pending: &[DictOp], op: &DictOp) -> bool {
        match self.mode {
            Mode::Compatible => pending.iter().all(|p| compatible(p, op)),
            Mode::Commutative => pending.iter().all(|p| commute(p, op)),
        }
    }

    fn is_query(op: &DictOp) -> bool {
        matches!(op, DictOp::Get { .. } | DictOp::List | DictOp::ListPage { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 1 (8 of the 49 pairs are not compatible) and the commutativity baseline (22 of
    /// the 49 do not commute).
    #[test]
    fn the_relations_match_the_papers_counts() {
        let (x, y) = (b"x".to_vec(), b"y".to_vec());
        let ops = [
            DictOp::Put { key: x.clone(), value: b"1".to_vec() },
            DictOp::Put { key: y.clone(), value: b"2".to_vec() },
            DictOp::Get { key: x.clone() },
            DictOp::Get { key: y.clone() },
            DictOp::Delete { key: x },
            DictOp::Delete { key: y },
            DictOp::List,
        ];
        let count = |rule: fn(&DictOp, &DictOp) -> bool| {
            ops.iter().flat_map(|a| ops.iter().map(move |b| (a, b))).filter(|(a, b)| !rule(a, b)).count()
        };
        assert_eq!(count(compatible), 8);
        assert_eq!(count(commute), 22);
        assert!(!compatible(&ops[0], &ops[2]), "a get after a pending put of its key");
        assert!(compatible(&ops[2], &ops[0]), "a put after a pending get");
        assert!(compatible(&ops[0], &ops[0]), "two puts of a key: a blind write");
    }

    /// A provider that names another value as the one a change replaces (to have its client
    /// delete an object the dictionary still names) is caught, however it bends the step.
    #[test]
    fn the_value_a_change_replaces_is_the_proven_one() {
        let mut tree = Tree::new();
        tree.put(b"k", b"old");
        tree.put(b"other", b"x");
        let root = tree.root();
        let ops = |op: DictOp| vec![op];
        let put = DictOp::Put { key: b"k".to_vec(), value: b"new".to_vec() };
        for op in [put, DictOp::Delete { key: b"k".to_vec() }] {
            let (response, aux) = Adict::query(&tree, &ops(op.clone())).unwrap();
            assert_eq!(aux.replaced(), Some(&b"old"[..]));
            assert!(Adict::authexec(&ops(op.clone()), &root, &response, &aux).is_ok());
            let DictStep::Change { proof, .. } = aux.0[0].clone() else { panic!("a change's step") };
            for lie in [Some(b"other".to_vec()), None] {
                let bent = DictAux(vec![DictStep::Change { proof: proof.clone(), replaced: lie }]);
                assert_eq!(Adict::authexec(&ops(op.clone()), &root, &response, &bent), Err(DictError::Replaced));
            }
            let bare = DictAux(vec![DictStep::Key(proof)]);
            assert!(matches!(Adict::authexec(&ops(op), &root, &response, &bare), Err(DictError::Mismatch(_))));
        }
        // A put of an absent key replaces nothing, and claiming something is a lie too.
        let fresh = DictOp::Put { key: b"new".to_vec(), value: b"v".to_vec() };
        let (response, aux) = Adict::query(&tree, &ops(fresh.clone())).unwrap();
        assert_eq!(aux.replaced(), None);
        let DictStep::Change { proof, .. } = aux.0[0].clone() else { panic!("a change's step") };
        let bent = DictAux(vec![DictStep::Change { proof, replaced: Some(b"old".to_vec()) }]);
        assert_eq!(Adict::authexec(&ops(fresh), &root, &response, &bent), Err(DictError::Replaced));
    }
}

//! The layouts of ADICT's operations, responses and proofs (paper 003, Alg. 4–5), with keys,
//! values, listings and proof depths bounded.

use super::{bytes, list, put_bytes, put_list, tag, Wire, WireError, MAX_ENTRIES, MAX_KEY_LEN, MAX_OPERATIONS};
use super::{MAX_PROOF_DEPTH, MAX_VALUE_LEN};
use crate::adict::{Bottom, Proof, RangeNode};
use crate::aip::{DictAux, DictOp, DictResponse, DictStep};
use crate::codec::Reader;
use crate::hash::Digest;

fn key(r: &mut Reader<'_>) -> Result<Vec<u8>, WireError> {
    Ok(bytes(r, "key bytes", MAX_KEY_LEN)?.to_vec())
}

fn value(r: &mut Reader<'_>) -> Result<Vec<u8>, WireError> {
    Ok(bytes(r, "value bytes", MAX_VALUE_LEN)?.to_vec())
}

/// `1` put key value, `2` get key, `3` delete key, `4` list, `5` list-page after? limit.
impl Wire for DictOp {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            DictOp::Put { key, value } => {
                out.push(1);
                put_bytes(out, key);
                put_bytes(out, value);
            }
            DictOp::Get { key } => {
                out.push(2);
                put_bytes(out, key);
            }
            DictOp::Delete { key } => {
                out.push(3);
                put_bytes(out, key);
            }
            DictOp::List => out.push(4),
            DictOp::ListPage { after, limit } => {
                out.push(5);
                after.encode(out);
                limit.encode(out);
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<DictOp, WireError> {
        Ok(match tag(r, "dictionary operation", 5)? {
            1 => DictOp::Put { key: key(r)?, value: value(r)? },
            2 => DictOp::Get { key: key(r)? },
            3 => DictOp::Delete { key: key(r)? },
            4 => DictOp::List,
            _ => DictOp::ListPage { after: Option::decode(r)?, limit: u32::decode(r)? },
        })
    }
}

/// `0` none, `1` a value.
fn optional_value(r: &mut Reader<'_>) -> Result<Option<Vec<u8>>, WireError> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(value(r)?)),
        tag => Err(WireError::UnknownTag { what: "option", tag }),
    }
}

/// `1` nothing, `2` an optional value, `3` the keys, `4` a page's keys and `1` (more follow)
/// or `2` (the last page).
impl Wire for DictResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            DictResponse::Nothing => out.push(1),
            DictResponse::Value(v) => {
                out.push(2);
                match v {
                    None => out.push(0),
                    Some(v) => {
                        out.push(1);
                        put_bytes(out, v);
                    }
                }
            }
            DictResponse::Keys(keys) => {
                out.push(3);
                put_list(out, keys, |out, k| put_bytes(out, k));
            }
            DictResponse::Page { keys, more } => {
                out.push(4);
                put_list(out, keys, |out, k| put_bytes(out, k));
                out.push(if *more { 1 } else { 2 });
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<DictResponse, WireError> {
        Ok(match tag(r, "dictionary response", 4)? {
            1 => DictResponse::Nothing,
            2 => DictResponse::Value(optional_value(r)?),
            3 => DictResponse::Keys(list(r, "listed keys", MAX_ENTRIES, key)?),
            _ => DictResponse::Page {
                keys: list(r, "listed keys", MAX_ENTRIES, key)?,
                more: tag(r, "page end", 2)? == 1,
            },
        })
    }
}

/// `1` empty, `2` leaf path value-hash, `3` inner left right.
impl Wire for Bottom {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Bottom::Empty => out.push(1),
            Bottom::Leaf { path, value_hash } => {
                out.push(2);
                path.encode(out);
                value_hash.encode(out);
            }
            Bottom::Inner { left, right } => {
                out.push(3);
                left.encode(out);
                right.encode(out);
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Bottom, WireError> {
        Ok(match tag(r, "proof bottom", 3)? {
            1 => Bottom::Empty,
            2 => Bottom::Leaf { path: Digest::decode(r)?, value_hash: Digest::decode(r)? },
            _ => Bottom::Inner { left: Digest::decode(r)?, right: Digest::decode(r)? },
        })
    }
}

/// `siblings (at most 256), end, last sibling?`.
impl Wire for Proof {
    fn encode(&self, out: &mut Vec<u8>) {
        put_list(out, &self.siblings, |out, d| d.encode(out));
        self.end.encode(out);
        self.last_sibling.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Proof, WireError> {
        Ok(Proof {
            siblings: list(r, "proof siblings", MAX_PROOF_DEPTH, Digest::decode)?,
            end: Bottom::decode(r)?,
            last_sibling: Option::decode(r)?,
        })
    }
}

/// `1` inner, `2` hidden hash, `3` outside path value-hash, `4` inside key value-hash.
impl Wire for RangeNode {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            RangeNode::Inner => out.push(1),
            RangeNode::Hidden(hash) => {
                out.push(2);
                hash.encode(out);
            }
            RangeNode::Outside { path, value_hash } => {
                out.push(3);
                path.encode(out);
                value_hash.encode(out);
            }
            RangeNode::Inside { key, value_hash } => {
                out.push(4);
                put_bytes(out, key);
                value_hash.encode(out);
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<RangeNode, WireError> {
        Ok(match tag(r, "pruned tree node", 4)? {
            1 => RangeNode::Inner,
            2 => RangeNode::Hidden(Digest::decode(r)?),
            3 => RangeNode::Outside { path: Digest::decode(r)?, value_hash: Digest::decode(r)? },
            _ => RangeNode::Inside { key: key(r)?, value_hash: Digest::decode(r)? },
        })
    }
}

/// `1` a key's proof, `2` every (key, value hash), `3` a key's proof and the value replaced,
/// `4` a page's pruned tree.
impl Wire for DictStep {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            DictStep::Key(proof) => {
                out.push(1);
                proof.encode(out);
            }
            DictStep::Change { proof, replaced } => {
                out.push(3);
                proof.encode(out);
                match replaced {
                    None => out.push(0),
                    Some(v) => {
                        out.push(1);
                        put_bytes(out, v);
                    }
                }
            }
            DictStep::All(all) => {
                out.push(2);
                put_list(out, all, |out, (k, v)| {
                    put_bytes(out, k);
                    v.encode(out);
                });
            }
            DictStep::Range(nodes) => {
                out.push(4);
                put_list(out, nodes, |out, n| n.encode(out));
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<DictStep, WireError> {
        Ok(match tag(r, "dictionary proof", 4)? {
            1 => DictStep::Key(Proof::decode(r)?),
            2 => DictStep::All(list(r, "listed entries", MAX_ENTRIES, |r| Ok((key(r)?, Digest::decode(r)?)))?),
            3 => DictStep::Change { proof: Proof::decode(r)?, replaced: optional_value(r)? },
            _ => DictStep::Range(list(r, "pruned tree nodes", MAX_ENTRIES, RangeNode::decode)?),
        })
    }
}

impl Wire for DictAux {
    fn encode(&self, out: &mut Vec<u8>) {
        put_list(out, &self.0, |out, step| step.encode(out));
    }

    fn decode(r: &mut Reader<'_>) -> Result<DictAux, WireError> {
        Ok(DictAux(list(r, "proof steps", MAX_OPERATIONS, DictStep::decode)?))
    }
}

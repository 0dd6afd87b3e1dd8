//! The layouts of the namespace's AIP operations, responses and proofs ([`super::NamespaceOps`]),
//! in the house style of [`crate::aip::wire`]: names are checked as names, records and
//! FlexList proofs go length-prefixed through their own validating decoders.

use super::{check_name, EntryRecord, LookupProof, RecordError, MAX_NAME_LEN};
use super::{NamespaceAux, NamespaceOp, NamespaceResponse, NamespaceStep};
use crate::aip::wire::{bytes, list, put_bytes, put_list, tag, MAX_ENTRIES, MAX_MESSAGE_LEN, MAX_OPERATIONS};
use crate::aip::{Wire, WireError};
use crate::codec::Reader;
use crate::flexlist::{MultiProof, UpdateProof};

/// The longest entry record: its name, its fixed fields, and three varints.
const MAX_ENTRY_LEN: usize = MAX_NAME_LEN + 16 + 32 + 3 * 10;

/// A lookup opens the name's own position, or the (at most two) neighbours of its gap.
const MAX_LOOKUP_ENTRIES: usize = 2;

fn name(r: &mut Reader<'_>) -> Result<String, WireError> {
    let raw = bytes(r, "name bytes", MAX_NAME_LEN)?;
    let name = std::str::from_utf8(raw).map_err(|_| RecordError::BadName("<not UTF-8>".into()))?;
    check_name(name)?;
    Ok(name.to_string())
}

/// The record's own encoding, length-prefixed (it is not self-delimiting to its decoder).
impl Wire for EntryRecord {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, &self.to_bytes());
    }

    fn decode(r: &mut Reader<'_>) -> Result<EntryRecord, WireError> {
        Ok(EntryRecord::from_bytes(bytes(r, "entry record bytes", MAX_ENTRY_LEN)?)?)
    }
}

/// The proof's own bytes, length-prefixed; its structure is checked on decoding.
impl Wire for MultiProof {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.as_bytes());
    }

    fn decode(r: &mut Reader<'_>) -> Result<MultiProof, WireError> {
        Ok(MultiProof::from_bytes(bytes(r, "multi-proof bytes", MAX_MESSAGE_LEN)?.to_vec())?)
    }
}

impl Wire for UpdateProof {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, &self.to_bytes());
    }

    fn decode(r: &mut Reader<'_>) -> Result<UpdateProof, WireError> {
        Ok(UpdateProof::from_bytes(bytes(r, "update proof bytes", MAX_MESSAGE_LEN)?)?)
    }
}

/// `index, entries (at most 2), proof?`.
impl Wire for LookupProof {
    fn encode(&self, out: &mut Vec<u8>) {
        self.index.encode(out);
        put_list(out, &self.entries, |out, e| e.encode(out));
        self.proof.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<LookupProof, WireError> {
        Ok(LookupProof {
            index: u64::decode(r)?,
            entries: list(r, "lookup entries", MAX_LOOKUP_ENTRIES, EntryRecord::decode)?,
            proof: Option::decode(r)?,
        })
    }
}

/// `1` get name, `2` put entry, `3` delete name, `4` list.
impl Wire for NamespaceOp {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            NamespaceOp::Get(name) => {
                out.push(1);
                put_bytes(out, name.as_bytes());
            }
            NamespaceOp::Put(entry) => {
                out.push(2);
                entry.encode(out);
            }
            NamespaceOp::Delete(name) => {
                out.push(3);
                put_bytes(out, name.as_bytes());
            }
            NamespaceOp::List => out.push(4),
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<NamespaceOp, WireError> {
        Ok(match tag(r, "namespace operation", 4)? {
            1 => NamespaceOp::Get(name(r)?),
            2 => NamespaceOp::Put(EntryRecord::decode(r)?),
            3 => NamespaceOp::Delete(name(r)?),
            _ => NamespaceOp::List,
        })
    }
}

/// `1` an optional entry, `2` the listing, `3` done.
impl Wire for NamespaceResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            NamespaceResponse::Value(entry) => {
                out.push(1);
                entry.encode(out);
            }
            NamespaceResponse::Listing(entries) => {
                out.push(2);
                put_list(out, entries, |out, e| e.encode(out));
            }
            NamespaceResponse::Done => out.push(3),
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<NamespaceResponse, WireError> {
        Ok(match tag(r, "namespace response", 3)? {
            1 => NamespaceResponse::Value(Option::decode(r)?),
            2 => NamespaceResponse::Listing(list(r, "listed entries", MAX_ENTRIES, EntryRecord::decode)?),
            _ => NamespaceResponse::Done,
        })
    }
}

/// `1` lookup update?, `2` listing proof?.
impl Wire for NamespaceStep {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            NamespaceStep::Lookup { lookup, update } => {
                out.push(1);
                lookup.encode(out);
                update.encode(out);
            }
            NamespaceStep::Listing(proof) => {
                out.push(2);
                proof.encode(out);
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<NamespaceStep, WireError> {
        Ok(match tag(r, "namespace proof", 2)? {
            1 => NamespaceStep::Lookup { lookup: LookupProof::decode(r)?, update: Option::decode(r)? },
            _ => NamespaceStep::Listing(Option::decode(r)?),
        })
    }
}

impl Wire for NamespaceAux {
    fn encode(&self, out: &mut Vec<u8>) {
        put_list(out, &self.0, |out, step| step.encode(out));
    }

    fn decode(r: &mut Reader<'_>) -> Result<NamespaceAux, WireError> {
        Ok(NamespaceAux(list(r, "proof steps", MAX_OPERATIONS, NamespaceStep::decode)?))
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

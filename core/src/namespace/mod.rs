//! A client's whole store under one root digest: names -> files -> versions -> blocks
//! (DPDP, paper 001 Sec. 8.3, "directories, files and versions").
//!
//! Three levels of FlexList, each leaf committing to the root of the level below:
//!
//! * the **namespace** list: one leaf per name, in byte order of the names, holding an
//!   [`EntryRecord`] (the name, its file identity, the root and count of its version list);
//! * a file's **version** list: one leaf per kept version, oldest first, holding a
//!   [`VersionRecord`] (the version's block-list root, length, next nonce, tag scheme);
//! * a version's **block** list: the PDP-tagged blocks of [`crate::pdp`].
//!
//! Entry and version leaves have length 1, so a leaf's byte offset is its index and the
//! FlexList's rank search is a search by position. The client keeps only the namespace root:
//! every answer about a name comes with a multi-proof from that root ([`verify_lookup`]), and
//! every change is a verified multiUpdate at each level ([`verify_commit`]), so a provider that
//! hides a name, serves an old version, or reorders versions is caught.
//!
//! Pure: the provider computes proofs with a [`NamespaceTree`] (its side), the client checks
//! them with the `verify_*` functions here (its side). [`NamespaceOps`] states both sides as
//! one authenticated data structure, a [`crate::aip::Functionality`] (VICOS Sec. 2.3) that AIP
//! runs over.

use crate::codec::{put_varint, CodecError, Reader};
use crate::flexlist::{
    verify_multi_proof_len, verify_multi_update_len, Block, Edit, MultiProof, ProofError, UpdateProof,
    UpdateVerifyError,
};
use crate::hash::{self, Digest, Domain};
use crate::pdp::{ClientFile, FileId, SchemeId};
use crate::FlexList;

mod functionality;
mod tree;
mod wire;

pub use functionality::{NamespaceAuth, NamespaceAux, NamespaceOp, NamespaceOps, NamespaceResponse, NamespaceStep};
pub use tree::{EntryBatch, NamespaceTree, TreeError};

/// Longest name, in bytes.
pub const MAX_NAME_LEN: usize = 1024;

/// One name in the namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryRecord {
    pub name: String,
    /// Identity shared by every version of the file (part of each tag's PRF input).
    pub file: FileId,
    /// Root of the file's version list and its number of versions.
    pub versions_root: Digest,
    pub versions: u64,
    /// Number the next version gets (versions are numbered from 1 and never reused).
    pub next_version: u64,
}

/// One version of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionRecord {
    pub number: u64,
    pub scheme: SchemeId,
    pub file: FileId,
    pub root: Digest,
    pub len: u64,
    pub next_nonce: u64,
    /// Seconds since the Unix epoch, by the client's clock when it made the version.
    pub time: u64,
}

/// Why bytes are not a record, or a name is not acceptable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("malformed record: {0}")]
    Codec(#[from] CodecError),
    #[error("malformed record: unknown tag scheme {0}")]
    Scheme(u8),
    #[error("malformed record: bytes after the end")]
    TrailingBytes,
    #[error("bad name {0:?}: use 1 to {MAX_NAME_LEN} bytes of UTF-8 without control characters")]
    BadName(String),
}

/// Checks a name: 1 to [`MAX_NAME_LEN`] bytes, no control characters.
pub fn check_name(name: &str) -> Result<(), RecordError> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.chars().any(char::is_control) {
        return Err(RecordError::BadName(name.chars().take(80).collect()));
    }
    Ok(())
}

/// A record's leaf: its hash under its own domain, length 1 (so offsets are positions).
fn leaf(domain: Domain, bytes: &[u8]) -> Block {
    Block::new(hash::in_domain(domain, bytes), 1, 0)
}

impl EntryRecord {
    /// A name with no versions yet.
    pub fn new(name: String, file: FileId) -> Self {
        EntryRecord { name, file, versions_root: FlexList::new().root(), versions: 0, next_version: 1 }
    }

    /// `varint(name_len) || name || file:16 || versions_root:32 || varint(versions) ||
    /// varint(next_version)`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.name.len() + 64);
        put_varint(&mut out, self.name.len() as u64);
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(&self.file.0);
        out.extend_from_slice(&self.versions_root.0);
        put_varint(&mut out, self.versions);
        put_varint(&mut out, self.next_version);
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = Reader::new(bytes);
        let len = r.varint()?;
        let name = r.bytes(usize::try_from(len).unwrap_or(usize::MAX).min(MAX_NAME_LEN + 1))?;
        let name = String::from_utf8(name.to_vec()).map_err(|_| RecordError::BadName("<not UTF-8>".into()))?;
        check_name(&name)?;
        let file = FileId(r.bytes(16)?.try_into().expect("16 bytes"));
        let versions_root = r.digest()?;
        let versions = r.varint()?;
        let next_version = r.varint()?;
        if !r.is_empty() {
            return Err(RecordError::TrailingBytes);
        }
        Ok(EntryRecord { name, file, versions_root, versions, next_version })
    }

    /// The namespace leaf of this entry.
    pub fn leaf(&self) -> Block {
        leaf(Domain::NamespaceEntry, &self.to_bytes())
    }
}

impl VersionRecord {
    pub const ENCODED_LEN: usize = 8 + 1 + 16 + 32 + 8 + 8 + 8;

    /// The version's state as the PDP client keeps it.
    pub fn client_file(&self) -> ClientFile {
        ClientFile { file: self.file, root: self.root, len: self.len, next_nonce: self.next_nonce }
    }

    /// `number:u64le || scheme:u8 || file:16 || root:32 || len:u64le || next_nonce:u64le ||
    /// time:u64le`.
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0u8; Self::ENCODED_LEN];
        out[..8].copy_from_slice(&self.number.to_le_bytes());
        out[8] = self.scheme as u8;
        out[9..25].copy_from_slice(&self.file.0);
        out[25..57].copy_from_slice(&self.root.0);
        out[57..65].copy_from_slice(&self.len.to_le_bytes());
        out[65..73].copy_from_slice(&self.next_nonce.to_le_bytes());
        out[73..].copy_from_slice(&self.time.to_le_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, RecordError> {
        let mut r = Reader::new(bytes);
        let number = r.u64_le()?;
        let scheme_byte = r.u8()?;
        let scheme = SchemeId::from_byte(scheme_byte).ok_or(RecordError::Scheme(scheme_byte))?;
        let file = FileId(r.bytes(16)?.try_into().expect("16 bytes"));
        let root = r.digest()?;
        let (len, next_nonce, time) = (r.u64_le()?, r.u64_le()?, r.u64_le()?);
        if !r.is_empty() {
            return Err(RecordError::TrailingBytes);
        }
        Ok(VersionRecord { number, scheme, file, root, len, next_nonce, time })
    }

    /// The version-list leaf of this version.
    pub fn leaf(&self) -> Block {
        leaf(Domain::NamespaceVersion, &self.to_bytes())
    }
}

/// Where a name is in the namespace list, as the provider answers it: the entries at the
/// proven positions (the name's own, or its two neighbours when it is absent) and their proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookupProof {
    /// The name's position, or where it would be inserted.
    pub index: u64,
    /// Entries at the positions [`lookup_indices`] gives, in that order.
    pub entries: Vec<EntryRecord>,
    /// Multi-proof of those positions; absent for an empty namespace.
    pub proof: Option<MultiProof>,
}

/// What a verified lookup established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// The name is at `index` with this entry.
    At { index: u64, entry: EntryRecord },
    /// The name is absent; it would be inserted at `index`.
    Absent { index: u64 },
}

/// The proof of one version in a file's version list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionProof {
    pub index: u64,
    pub record: VersionRecord,
    pub proof: MultiProof,
}

/// A provider's answer about the namespace that does not check out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    #[error("namespace proof rejected: {0}")]
    Proof(#[from] ProofError),
    #[error("namespace update rejected: {0}")]
    Update(#[from] UpdateVerifyError),
    #[error("the provider's answer is inconsistent: {0}")]
    Inconsistent(&'static str),
    /// The operation itself names something that cannot be a name (the caller's mistake).
    #[error(transparent)]
    Name(#[from] RecordError),
}

/// The positions a lookup at `index` must prove in a namespace of `len` names: the name's own
/// position when `found`, otherwise the neighbours around the gap.
pub fn lookup_indices(index: u64, len: u64, found: bool) -> Vec<u64> {
    if found {
        return vec![index];
    }
    let mut out = Vec::with_capacity(2);
    if index > 0 {
        out.push(index - 1);
    }
    if index < len {
        out.push(index);
    }
    out
}

/// Checks that `proven` leaves carry `records`' leaves at `indices`.
fn check_leaves(
    proven: &[crate::ProvenBlock],
    indices: &[u64],
    leaves: impl Iterator<Item = Block>,
) -> Result<(), NamespaceError> {
    let mut count = 0;
    for ((p, &i), want) in proven.iter().zip(indices).zip(leaves) {
        if p.start != i || p.length != 1 || p.tag != want.tag {
            return Err(NamespaceError::Inconsistent("a record does not match its proven leaf"));
        }
        count += 1;
    }
    if count != indices.len() {
        return Err(NamespaceError::Inconsistent("wrong number of records"));
    }
    Ok(())
}

/// Verifies a lookup of `name` against the client's namespace root and size.
pub fn verify_lookup(ns_root: &Digest, ns_len: u64, name: &str, answer: &LookupProof) -> Result<Found, NamespaceError> {
    let Some(proof) = &answer.proof else {
        // Only the empty namespace has nothing to prove.
        if ns_len != 0 || answer.index != 0 || !answer.entries.is_empty() {
            return Err(NamespaceError::Inconsistent("no proof for a non-empty namespace"));
        }
        return Ok(Found::Absent { index: 0 });
    };
    let found = answer.entries.iter().any(|e| e.name == name);
    let indices = lookup_indices(answer.index, ns_len, found);
    if answer.index > ns_len || answer.entries.len() != indices.len() || indices.is_empty() {
        return Err(NamespaceError::Inconsistent("lookup proves the wrong positions"));
    }
    let (proven, len) = verify_multi_proof_len(ns_root, &indices, proof)?;
    if len != ns_len {
        return Err(NamespaceError::Inconsistent("namespace size differs from the client's"));
    }
    check_leaves(&proven, &indices, answer.entries.iter().map(EntryRecord::leaf))?;
    if found {
        return Ok(Found::At { index: answer.index, entry: answer.entries[0].clone() });
    }
    let (before, after) = match (answer.index > 0, answer.index < len) {
        (true, true) => (Some(&answer.entries[0]), Some(&answer.entries[1])),
        (true, false) => (Some(&answer.entries[0]), None),
        (false, true) => (None, Some(&answer.entries[0])),
        (false, false) => (None, None),
    };
    let ordered = before.is_none_or(|b| b.name.as_str() < name) && after.is_none_or(|a| name < a.name.as_str());
    if !ordered {
        return Err(NamespaceError::Inconsistent("the name's neighbours do not bracket it"));
    }
    Ok(Found::Absent { index: answer.index })
}

/// Verifies every entry of the namespace (a listing): the proof must open all positions, so
/// a hidden or invented name is caught.
pub fn verify_listing(
    ns_root: &Digest,
    ns_len: u64,
    entries: &[EntryRecord],
    proof: Option<&MultiProof>,
) -> Result<(), NamespaceError> {
    if entries.len() as u64 != ns_len {
        return Err(NamespaceError::Inconsistent("the listing leaves out or invents names"));
    }
    let Some(proof) = proof else {
        return if ns_len == 0 {
            Ok(())
        } else {
            Err(NamespaceError::Inconsistent("no proof for a non-empty namespace"))
        };
    };
    let indices: Vec<u64> = (0..entries.len() as u64).collect();
    if indices.is_empty() {
        return Err(NamespaceError::Inconsistent("a proof but no entries"));
    }
    let (proven, len) = verify_multi_proof_len(ns_root, &indices, proof)?;
    if len != ns_len {
        return Err(NamespaceError::Inconsistent("namespace size differs from the client's"));
    }
    check_leaves(&proven, &indices, entries.iter().map(EntryRecord::leaf))?;
    if entries.windows(2).any(|w| w[0].name >= w[1].name) {
        return Err(NamespaceError::Inconsistent("names out of order"));
    }
    Ok(())
}

/// Verifies some versions of a file against its entry: the records at positions `indices`.
pub fn verify_versions(
    entry: &EntryRecord,
    indices: &[u64],
    records: &[VersionRecord],
    proof: &MultiProof,
) -> Result<(), NamespaceError> {
    let (proven, len) = verify_multi_proof_len(&entry.versions_root, indices, proof)?;
    if len != entry.versions {
        return Err(NamespaceError::Inconsistent("version count differs from the entry"));
    }
    check_leaves(&proven, indices, records.iter().map(VersionRecord::leaf))?;
    if records.iter().any(|r| r.file != entry.file || r.number >= entry.next_version)
        || records.windows(2).any(|w| w[0].number >= w[1].number)
    {
        return Err(NamespaceError::Inconsistent("version records do not fit the entry"));
    }
    Ok(())
}

/// Verifies a whole log: every version of the file, so none can be left out.
pub fn verify_log(entry: &EntryRecord, records: &[VersionRecord], proof: &MultiProof) -> Result<(), NamespaceError> {
    if records.len() as u64 != entry.versions {
        return Err(NamespaceError::Inconsistent("the log leaves out or invents versions"));
    }
    let indices: Vec<u64> = (0..entry.versions).collect();
    if indices.is_empty() {
        return Err(NamespaceError::Inconsistent("a name without versions"));
    }
    verify_versions(entry, &indices, records, proof)
}

/// Verifies one version: `want` = `None` asks for the latest, which must be the last one.
pub fn verify_version(entry: &EntryRecord, want: Option<u64>, answer: &VersionProof) -> Result<(), NamespaceError> {
    verify_versions(entry, &[answer.index], std::slice::from_ref(&answer.record), &answer.proof)?;
    let ok = match want {
        None => answer.index + 1 == entry.versions,
        Some(n) => answer.record.number == n,
    };
    if !ok {
        return Err(NamespaceError::Inconsistent("not the version asked for (rollback?)"));
    }
    Ok(())
}

/// The change a commit makes to a name: a new version, or removal of versions or of the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Append this version (its number must be the entry's next).
    Append(VersionRecord),
    /// Remove the versions at these positions of the version list (pruning).
    Prune(Vec<u64>),
    /// Remove the name and all its versions.
    Remove,
}

/// The provider's proofs for a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitProof {
    /// The update of the file's version list (absent for [`Change::Remove`]).
    pub versions: Option<UpdateProof>,
    pub namespace: UpdateProof,
}

/// The edits a change makes to a version list and the namespace; both sides compute them
/// from the verified lookup, so the provider has no say in them.
pub fn commit_edits(found: &Found, change: &Change) -> Result<CommitPlan, NamespaceError> {
    let (index, entry) = match found {
        Found::At { index, entry } => (*index, entry.clone()),
        Found::Absent { index } => match change {
            Change::Append(v) => (*index, EntryRecord::new(String::new(), v.file)),
            _ => return Err(NamespaceError::Inconsistent("no such name")),
        },
    };
    let versions = match change {
        Change::Append(v) => {
            if v.number != entry.next_version || v.file != entry.file {
                return Err(NamespaceError::Inconsistent("new version does not follow the entry"));
            }
            vec![Edit::Insert { at: entry.versions, block: v.leaf() }]
        }
        Change::Prune(positions) => {
            let mut sorted = positions.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.is_empty() || sorted.len() as u64 >= entry.versions || sorted.iter().any(|&p| p >= entry.versions)
            {
                return Err(NamespaceError::Inconsistent("pruning must keep at least one version"));
            }
            sorted.into_iter().map(|at| Edit::Remove { at }).collect()
        }
        Change::Remove => Vec::new(),
    };
    Ok(CommitPlan { index, exists: matches!(found, Found::At { .. }), entry, versions })
}

/// What [`commit_edits`] computes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitPlan {
    pub index: u64,
    pub exists: bool,
    /// The entry before the change (for a new name: empty, with the new file's identity).
    pub entry: EntryRecord,
    pub versions: Vec<Edit>,
}

impl CommitPlan {
    /// The name's version count and the namespace size once `change` is applied to a
    /// namespace of `ns_len` names (`None` for a removed name's versions, or a size that
    /// cannot be).
    pub fn counts_after(&self, change: &Change, ns_len: u64) -> (Option<u64>, Option<u64>) {
        match change {
            Change::Append(_) if self.exists => (Some(self.entry.versions + 1), Some(ns_len)),
            Change::Append(_) => (Some(1), ns_len.checked_add(1)),
            Change::Prune(_) => (self.entry.versions.checked_sub(self.versions.len() as u64), Some(ns_len)),
            Change::Remove => (None, ns_len.checked_sub(1)),
        }
    }

    /// The namespace edit once the version list's new root and count are known.
    pub fn namespace_edit(
        &self,
        name: &str,
        change: &Change,
        versions: Option<(Digest, u64)>,
    ) -> (Edit, Option<EntryRecord>) {
        match (change, versions) {
            (Change::Remove, _) | (_, None) => (Edit::Remove { at: self.index }, None),
            (_, Some((root, count))) => {
                let mut entry = self.entry.clone();
                entry.name = name.to_string();
                entry.versions_root = root;
                entry.versions = count;
                if let Change::Append(v) = change {
                    entry.next_version = v.number + 1;
                }
                let block = entry.leaf();
                let edit = if self.exists {
                    Edit::Modify { at: self.index, block }
                } else {
                    Edit::Insert { at: self.index, block }
                };
                (edit, Some(entry))
            }
        }
    }
}

/// Verifies a commit of `change` to `name`: the version-list update against the entry, then
/// the namespace update against the client's root and size. Returns the new namespace root and
/// size and the entry after the change (`None` once removed).
///
/// The new sizes are read from the roots the client computed, which bind every rank; they
/// must also be exactly what the change implies (a version appended: +1; `k` pruned: -k; a
/// name added: +1, removed: -1, otherwise 0), a second line that does not rest on the hashes.
pub fn verify_commit(
    ns_root: &Digest,
    ns_len: u64,
    name: &str,
    found: &Found,
    change: &Change,
    proof: &CommitProof,
) -> Result<Committed, NamespaceError> {
    let plan = commit_edits(found, change)?;
    let versions = match (change, &proof.versions) {
        (Change::Remove, None) => None,
        (Change::Remove, Some(_)) | (_, None) => {
            return Err(NamespaceError::Inconsistent("version-list proof missing or superfluous"))
        }
        (_, Some(p)) => Some(verify_multi_update_len(&plan.entry.versions_root, &plan.versions, p)?),
    };
    let (want_versions, want_len) = plan.counts_after(change, ns_len);
    if versions.map(|(_, count)| count) != want_versions {
        return Err(NamespaceError::Inconsistent("the version count after the commit is not what the change implies"));
    }
    let (edit, entry) = plan.namespace_edit(name, change, versions);
    let (new_root, new_len) = verify_multi_update_len(ns_root, &[edit], &proof.namespace)?;
    if Some(new_len) != want_len {
        return Err(NamespaceError::Inconsistent("the namespace size after the commit is not what the change implies"));
    }
    Ok(Committed { ns_root: new_root, ns_len: new_len, entry })
}

/// The client's namespace after a verified commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    pub ns_root: Digest,
    pub ns_len: u64,
    pub entry: Option<EntryRecord>,
}

/// Encodes an optional multi-proof for the wire: empty bytes for none.
pub fn proof_bytes(proof: Option<&MultiProof>) -> Vec<u8> {
    proof.map_or_else(Vec::new, |p| p.as_bytes().to_vec())
}

/// Decodes [`proof_bytes`].
pub fn proof_from_bytes(bytes: Vec<u8>) -> Result<Option<MultiProof>, ProofError> {
    if bytes.is_empty() {
        Ok(None)
    } else {
        MultiProof::from_bytes(bytes).map(Some)
    }
}

#[cfg(test)]
mod tests;

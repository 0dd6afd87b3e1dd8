//! The provider's logical layout: how it names its records, lists and block owners in the
//! repository (`vouch_store::Repository`), which keeps them as it sees fit.
//!
//! Per client `c` (its namespace), records:
//! * `ns/c/e/<name>`: the name's [`vouch_core::namespace::EntryRecord`]; key order is name
//!   order, so a scan yields the namespace list in order;
//! * `ns/c/v/<file>/<number:016x>`: a [`vouch_core::namespace::VersionRecord`];
//! * `ns/c/last`: the answer ([`vouch_proto::Committed`]) of the client's last commit, written
//!   in that commit's own batch, so a client whose answer was lost can still verify it.
//!
//! The blocks of a file are the repository's blocks of owner `c/<file>`, by nonce, with their
//! tags; the block list of a version is the list `c.<file>.<number>` (an edit's saved as a
//! delta of the version before).
//!
//! Per VICOS group `g` (shared by clients, not one client's: see `crate::vicos`):
//! * records `vicos/g/log/<n:016x>`: the group sequencer's journal, entry `n` (entry 0 creates
//!   the group);
//! * blob objects `vicos/g/<key>/<nonce>`: the object `k || x` of its store (COS), `<key>`
//!   naming `k` ([`cos_key`]) and `<nonce>` the hex of `x`; the objects of one key share a
//!   folder, so that `cos-del(k||*)` lists only them.

use vouch_core::pdp::FileId;

pub fn hex(file: &FileId) -> String {
    base16ct::lower::encode_string(&file.0)
}

pub fn entry_prefix(client: &str) -> Vec<u8> {
    format!("ns/{client}/e/").into_bytes()
}

pub fn entry(client: &str, name: &str) -> Vec<u8> {
    let mut key = entry_prefix(client);
    key.extend_from_slice(name.as_bytes());
    key
}

pub fn version_prefix(client: &str, file: &FileId) -> Vec<u8> {
    format!("ns/{client}/v/{}/", hex(file)).into_bytes()
}

pub fn version(client: &str, file: &FileId, number: u64) -> Vec<u8> {
    format!("ns/{client}/v/{}/{number:016x}", hex(file)).into_bytes()
}

/// The last commit's outcomes, one per change it made (outside the `e/` and `v/` prefixes
/// scanned above).
pub fn last_commit(client: &str) -> Vec<u8> {
    format!("ns/{client}/last-outcomes").into_bytes()
}

/// The last commit's answer as providers before group commits kept it (one change's): read
/// when [`last_commit`] holds nothing, deleted by every commit.
pub fn last_commit_of_one(client: &str) -> Vec<u8> {
    format!("ns/{client}/last").into_bytes()
}

/// Whose blocks a file's are.
pub fn owner(client: &str, file: &FileId) -> Vec<u8> {
    format!("{client}/{}", hex(file)).into_bytes()
}

/// Name under which a version's block list is saved.
pub fn list(client: &str, file: &FileId, number: u64) -> String {
    format!("{client}.{}.{number:016x}", hex(file))
}

/// Client names are used inside keys: letters, digits, `-` and `_`, at most 64.
pub fn valid_client(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The journal of VICOS group `group` (a valid group name: see [`valid_client`]).
pub fn vicos_log_prefix(group: &str) -> Vec<u8> {
    format!("vicos/{group}/log/").into_bytes()
}

pub fn vicos_log(group: &str, n: u64) -> Vec<u8> {
    format!("vicos/{group}/log/{n:016x}").into_bytes()
}

pub use vouch_proto::vicos::{object_folder as cos_key, object_name as cos_object};

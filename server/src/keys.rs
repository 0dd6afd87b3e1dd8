//! Where the provider keeps each thing in the metadata store.
//!
//! Per client `c` (its namespace):
//! * `ns/c/e/<name>`: the name's [`vouch_core::namespace::EntryRecord`]; key order is name
//!   order, so a scan yields the namespace list in order;
//! * `ns/c/v/<file>/<number:016x>`: a [`vouch_core::namespace::VersionRecord`];
//! * `ns/c/b/<file>/<nonce:016x>`: a block: its [`vouch_store::Location`] then its tag (a
//!   small edit's blocks are in an inline segment of the metadata store, see
//!   [`vouch_store::INLINE_MAX`]);
//! * the block list of a version, saved by [`vouch_store::save_list`] (a put) or
//!   [`vouch_store::save_edited_list`] (an edit: a delta of the version before) as
//!   `c.<file>.<number>`;
//! * `ns/c/last`: the answer ([`vouch_proto::Committed`]) of the client's last commit, written
//!   in that commit's own batch, so a client whose answer was lost can still verify it.

use vouch_core::pdp::FileId;

pub fn hex(file: &FileId) -> String {
    file.0.iter().map(|b| format!("{b:02x}")).collect()
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

pub fn block_prefix(client: &str, file: &FileId) -> Vec<u8> {
    format!("ns/{client}/b/{}/", hex(file)).into_bytes()
}

pub fn block(client: &str, file: &FileId, nonce: u64) -> Vec<u8> {
    format!("ns/{client}/b/{}/{nonce:016x}", hex(file)).into_bytes()
}

/// The last commit's answer (outside the `e/`, `v/` and `b/` prefixes scanned above).
pub fn last_commit(client: &str) -> Vec<u8> {
    format!("ns/{client}/last").into_bytes()
}

/// Name under which a version's block list is saved.
pub fn list(client: &str, file: &FileId, number: u64) -> String {
    format!("{client}.{}.{number:016x}", hex(file))
}

/// Client names are used inside keys: letters, digits, `-` and `_`, at most 64.
pub fn valid_client(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

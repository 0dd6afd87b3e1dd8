//! Messages of VICOS (paper 003, Sec. 4): a group of clients runs AIP with ADICT through the
//! provider's sequencer, and keeps its objects in the provider's object store (COS) under
//! translated keys `k || x`. The byte fields carry `vouch_core::aip::wire` layouts, which the
//! receiver decodes and checks; nothing here is trusted.
//!
//! | operation | request | response |
//! |---|---|---|
//! | `aip-create` | [`AipCreate`] | [`AipAck`] |
//! | `aip-admit` | [`AipAdmit`] | [`AipAck`] |
//! | `aip-invoke` | [`AipInvoke`] | [`AipReply`] |
//! | `aip-commit` | [`AipCommit`] | [`AipWork`] |
//! | `aip-commit-auth` | [`AipCommitAuth`] | [`AipWork`] |
//! | `aip-work` | [`AipWorkRequest`] | [`AipWork`] |
//! | `aip-history` | [`AipHistory`] | [`AipHistoryPage`] |
//! | `cos-put` | frames: [`CosPutFrame`] | [`AipAck`] |
//! | `cos-get` | [`CosObject`] | frames: [`CosGetFrame`] |
//! | `cos-del` | [`CosDelete`] | [`AipAck`] |

use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;

/// Longest group name (bytes of `[A-Za-z0-9_-]`).
pub const MAX_GROUP_NAME: usize = 64;
/// Longest object key `k` (bytes).
pub const MAX_OBJECT_KEY: usize = 1024;

/// Creates a group's sequencer from its genesis: `O[0]` and `A[0]`, signed by its creator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipCreate {
    pub group: String,
    /// `Committed<DictOp>`.
    pub genesis: ByteBuf,
    /// `Signed<Digest>`.
    pub auth: ByteBuf,
    /// The hash of the group's admission secret (`vouch_core::aip::Admission`), 32 bytes:
    /// a member shows the secret before it first speaks ([`AipAdmit`]).
    pub admission: ByteBuf,
}

/// Member `member` shows the group's admission secret: from now on it speaks through the
/// provider client that sent this, and through no other.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipAdmit {
    pub group: String,
    pub member: u32,
    /// The secret (32 bytes).
    pub admission: ByteBuf,
}

/// An answer with nothing in it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipAck {}

/// `[INVOKE, o, τ, c]` from member `from`, after the COMMITs it carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipInvoke {
    pub group: String,
    pub from: u32,
    /// `Invoke<DictOp>`.
    pub invoke: ByteBuf,
    /// The sender's COMMITs (each `Commit<DictOp>`, oldest first, at most
    /// [`MAX_CARRIED_COMMITS`]) that the provider answered before they were durable: it takes
    /// each one it does not hold before the INVOKE (after a crash that lost them), and passes
    /// over the others. The REPLY, answered only once everything before it is durable, proves
    /// them durable.
    pub commits: Vec<ByteBuf>,
}

/// The most COMMITs one INVOKE carries: the pending list's bound (a member's COMMITs not yet
/// proven durable are of its pending operations).
pub const MAX_CARRIED_COMMITS: usize = 128;

/// `[REPLY, ...]`: `Reply<Adict>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipReply {
    pub reply: ByteBuf,
}

/// `[COMMIT, o, t, z, φ]` from member `from`, and the COMMIT-AUTH of that same update when
/// its REPLY showed nothing pending before it (`aip::Client::own_update`): then the member
/// authenticated it at once, and its passive phase needs no round trip of its own.
///
/// Answered before it is durable: it joins the journal's next write (within
/// `Limits::vicos_flush_after`, or with the next message's), so that an operation costs one
/// durable write, not two. Until a later answer proves it durable (a REPLY, or `aip-work`'s),
/// the member carries it in its next INVOKE ([`AipInvoke::commits`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipCommit {
    pub group: String,
    pub from: u32,
    /// `Commit<DictOp>`.
    pub commit: ByteBuf,
    /// `CommitAuth<Digest>` for the committed position, or none.
    pub commit_auth: Option<ByteBuf>,
}

/// `[COMMIT-AUTH, ...]` from member `from`: the answers to one UPDATE-AUTH batch, in order
/// (Sec. 3.7 batching), at most [`MAX_COMMIT_AUTHS`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipCommitAuth {
    pub group: String,
    pub from: u32,
    /// Each a `CommitAuth<Digest>`, for consecutive positions.
    pub commit_auths: Vec<ByteBuf>,
}

/// Most COMMIT-AUTHs one message carries.
pub const MAX_COMMIT_AUTHS: usize = 1024;

/// Asks for the passive-phase work member `from` may do now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipWorkRequest {
    pub group: String,
    pub from: u32,
}

/// The passive-phase work for the asking member: an `UpdateAuth<Adict>` (its own operation's,
/// or a batch delegated to it, Sec. 3.7), or none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipWork {
    pub update_auth: Option<ByteBuf>,
}

/// Member `from` asks for a page of the history from operation `first` on: an INVOKE was
/// refused because the operations it has not cleared are more than one REPLY shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipHistory {
    pub group: String,
    pub from: u32,
    pub first: u64,
}

/// `HistoryPage<DictOp>`: committed operations from the one asked for on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipHistoryPage {
    pub page: ByteBuf,
}

/// An object of the group's store: key `k` and nonce `x` (stored as `k || x`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CosObject {
    pub group: String,
    pub key: ByteBuf,
    pub nonce: [u8; 16],
}

/// A frame of a `cos-put`: the object named, its bytes in order, then the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CosPutFrame {
    Head(CosObject),
    Data(ByteBuf),
    End,
}

/// A frame of a `cos-get` answer: the bytes in order, then the end (or an error after the
/// stream began).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CosGetFrame {
    Data(ByteBuf),
    End,
    Error(crate::ErrorBody),
}

/// Deletes object `k || x`, or every object of key `k` when `nonce` is `None` (`cos-del(k||*)`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CosDelete {
    pub group: String,
    pub key: ByteBuf,
    pub nonce: Option<[u8; 16]>,
}

/// Object keys up to this many bytes are named by their hex; longer ones by the hex of their
/// SHA-256 (a file name holds at most 255 bytes, an S3 key 1024).
const SHORT_OBJECT_KEY: usize = 100;

/// Where the provider's blob store keeps the objects of key `key` of group `group` (a valid
/// group name): `vicos/GROUP/k<hex(key)>`, or `h<hex(SHA-256)>` for a long key (the letters
/// keep the two forms apart). Members that reach the store themselves use the same names.
pub fn object_folder(group: &str, key: &[u8]) -> String {
    use sha2::Digest as _;
    match key.len() <= SHORT_OBJECT_KEY {
        true => format!("vicos/{group}/k{}", hex(key)),
        false => format!("vicos/{group}/h{}", hex(&sha2::Sha256::digest(key))),
    }
}

/// The blob of object `key || nonce` of group `group` (Sec. 4.3's translated key).
pub fn object_name(group: &str, key: &[u8], nonce: &[u8; 16]) -> String {
    format!("{}/{}", object_folder(group, key), hex(nonce))
}

fn hex(bytes: &[u8]) -> String {
    base16ct::lower::encode_string(bytes)
}

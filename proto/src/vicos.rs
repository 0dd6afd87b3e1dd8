//! Messages of VICOS (paper 003, Sec. 4): a group of clients runs AIP with ADICT through the
//! provider's sequencer, and keeps its objects in the provider's object store (COS) under
//! translated keys `k || x`. The byte fields carry `vouch_core::aip::wire` layouts, which the
//! receiver decodes and checks; nothing here is trusted.
//!
//! | operation | request | response |
//! |---|---|---|
//! | `aip-create` | [`AipCreate`] | [`AipAck`] |
//! | `aip-invoke` | [`AipInvoke`] | [`AipReply`] |
//! | `aip-commit` | [`AipCommit`] | [`AipWork`] |
//! | `aip-commit-auth` | [`AipCommitAuth`] | [`AipWork`] |
//! | `aip-work` | [`AipWorkRequest`] | [`AipWork`] |
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
}

/// An answer with nothing in it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipAck {}

/// `[INVOKE, o, τ, c]` from member `from`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipInvoke {
    pub group: String,
    pub from: u32,
    /// `Invoke<DictOp>`.
    pub invoke: ByteBuf,
}

/// `[REPLY, ...]`: `Reply<Adict>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipReply {
    pub reply: ByteBuf,
}

/// `[COMMIT, o, t, z, φ]` from member `from`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipCommit {
    pub group: String,
    pub from: u32,
    /// `Commit<DictOp>`.
    pub commit: ByteBuf,
}

/// `[COMMIT-AUTH, ...]` from member `from`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AipCommitAuth {
    pub group: String,
    pub from: u32,
    /// `CommitAuth<Digest>`.
    pub commit_auth: ByteBuf,
}

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

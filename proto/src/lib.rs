//! The vouch wire protocol, version [`PROTOCOL_VERSION`].
//!
//! HTTP/1.1, one `POST /v1/<operation>` per request, authenticated by a per-client bearer
//! token (`Authorization: Bearer <token>`) and stamped with the protocol version
//! (`vouch-protocol: 3`; version 2 hashed every rank into the FlexList nodes and put a salt in each
//! linear tag, so its proofs and tags do not verify under version 1; version 3 names each change's
//! [`Attempt`], so that a change settled as not applied can never apply later; version 9 adds
//! `stage` / `commit-staged` and VICOS's `aip-*` / `cos-*`; version 14 drops `put`, whose
//! upload and commit in one stream `stage` and `commit-staged` do in two requests; version 15
//! commits several staged puts in one `commit-staged`, each answered on its own, and
//! `last-commit` settles them together). Bodies are [postcard](https://docs.rs/postcard)-encoded messages of
//! this crate; proofs and records inside them are the canonical byte layouts of `vouch-core`
//! (the client decodes and checks them; nothing here is trusted). Bulk transfers (`stage`,
//! `read`) are streams of [`frame`]s: `len:u32le || message`, each at most [`MAX_FRAME`]
//! bytes, so neither side ever buffers a whole file.
//!
//! | operation | request | response |
//! |---|---|---|
//! | `GET /v1/health` | - | [`Health`] |
//! | `lookup` | [`LookupRequest`] | [`Located`] |
//! | `list` | [`ListRequest`] | [`Listing`] |
//! | `log` | [`LogRequest`] | [`Log`] |
//! | `read` | [`ReadRequest`] | frames: [`Located`], then [`ReadChunk`]s |
//! | `stage` | frames: [`PutHead`], [`BlockBatch`]es, [`PutTail`] | [`StagedUpload`] |
//! | `commit-staged` | [`CommitStagedRequest`] | [`CommittedPuts`] |
//! | `edit` | [`EditRequest`] | [`Committed`] |
//! | `remove` | [`RemoveRequest`] | [`Committed`] |
//! | `prune` | [`PruneRequest`] | [`Committed`] |
//! | `audit` | [`AuditRequest`] | [`AuditAnswer`] |
//! | `blocks` | [`BlocksRequest`] | [`BlockList`] |
//! | `last-commit` | [`LastCommitRequest`] | [`LastCommit`] |
//! | `heal-blocks` | [`HealBlocksRequest`] | [`HealedBlocks`] |
//! | `por-*` | the PoR log's messages ([`por`]) | |
//! | `aip-*`, `cos-*` | VICOS's messages ([`vicos`]) | |
//!
//! Errors are an HTTP status with an [`ErrorBody`].
//!
//! Block bytes cross this crate without copies: [`WireBlock::data`] is a shared buffer,
//! [`decode_shared`] decodes a frame with its blocks pointing into it, and
//! [`put_frame_parts`] encodes a put's blocks as parts that share them (byte for byte
//! postcard's encoding).
#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;

pub mod frame;
pub mod por;
mod rpc;
mod shared;
#[cfg(feature = "tls")]
pub mod tls;
pub mod vicos;

pub use rpc::{Rpc, STREAMED_OPS};
pub use shared::{decode_shared, put_frame_parts, shared_or_copied};

/// The operations of the protocol: each is `POST /v1/<name>` (health: `GET`). Client and
/// server both take the paths from here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Health,
    Lookup,
    List,
    Log,
    Read,
    Stage,
    CommitStaged,
    Edit,
    Remove,
    Prune,
    Audit,
    Blocks,
    LastCommit,
    HealBlocks,
    PorInit,
    PorStatus,
    PorPlan,
    PorWrite,
    PorRead,
    PorAudit,
    PorRegion,
    PorRestore,
    PorLabel,
    PorFree,
    PorMore,
    PorStage,
    AipCreate,
    AipAdmit,
    AipInvoke,
    AipCommit,
    AipCommitAuth,
    AipWork,
    AipHistory,
    CosPut,
    CosGet,
    CosDelete,
}

impl Op {
    pub const ALL: [Op; 36] = [
        Op::Health,
        Op::Lookup,
        Op::List,
        Op::Log,
        Op::Read,
        Op::Stage,
        Op::CommitStaged,
        Op::Edit,
        Op::Remove,
        Op::Prune,
        Op::Audit,
        Op::Blocks,
        Op::LastCommit,
        Op::HealBlocks,
        Op::PorInit,
        Op::PorStatus,
        Op::PorPlan,
        Op::PorWrite,
        Op::PorRead,
        Op::PorAudit,
        Op::PorRegion,
        Op::PorRestore,
        Op::PorLabel,
        Op::PorFree,
        Op::PorMore,
        Op::PorStage,
        Op::AipCreate,
        Op::AipAdmit,
        Op::AipInvoke,
        Op::AipCommit,
        Op::AipCommitAuth,
        Op::AipWork,
        Op::AipHistory,
        Op::CosPut,
        Op::CosGet,
        Op::CosDelete,
    ];

    /// The operation's name, the last segment of its path.
    pub fn name(self) -> &'static str {
        match self {
            Op::Health => "health",
            Op::Lookup => "lookup",
            Op::List => "list",
            Op::Log => "log",
            Op::Read => "read",
            Op::Stage => "stage",
            Op::CommitStaged => "commit-staged",
            Op::Edit => "edit",
            Op::Remove => "remove",
            Op::Prune => "prune",
            Op::Audit => "audit",
            Op::Blocks => "blocks",
            Op::LastCommit => "last-commit",
            Op::HealBlocks => "heal-blocks",
            Op::PorInit => "por-init",
            Op::PorStatus => "por-status",
            Op::PorPlan => "por-plan",
            Op::PorWrite => "por-write",
            Op::PorRead => "por-read",
            Op::PorAudit => "por-audit",
            Op::PorRegion => "por-region",
            Op::PorRestore => "por-restore",
            Op::PorLabel => "por-label",
            Op::PorFree => "por-free",
            Op::PorMore => "por-more",
            Op::PorStage => "por-stage",
            Op::AipCreate => "aip-create",
            Op::AipAdmit => "aip-admit",
            Op::AipInvoke => "aip-invoke",
            Op::AipCommit => "aip-commit",
            Op::AipCommitAuth => "aip-commit-auth",
            Op::AipWork => "aip-work",
            Op::AipHistory => "aip-history",
            Op::CosPut => "cos-put",
            Op::CosGet => "cos-get",
            Op::CosDelete => "cos-del",
        }
    }

    /// `/v1/<name>`.
    pub fn path(self) -> String {
        format!("/v1/{}", self.name())
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Version of this protocol; a server refuses requests that name another.
pub const PROTOCOL_VERSION: u16 = 16;
/// Header carrying [`PROTOCOL_VERSION`].
pub const VERSION_HEADER: &str = "vouch-protocol";
/// Largest single (non-streamed) request or response body.
pub const MAX_MESSAGE: usize = 64 << 20;
/// Largest frame of a stream.
pub const MAX_FRAME: usize = 16 << 20;
/// Bytes of block data a server puts in one [`ReadChunk`].
pub const READ_CHUNK_BYTES: usize = 4 << 20;

/// Encodes a message.
pub fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    encode_after(message, Vec::new())
}

/// `message` as one [`frame`], encoded straight into its frame: a read chunk of 4 MiB is
/// written once, not encoded, grown and copied into a frame.
pub fn encode_frame<T: Serialize>(message: &T) -> Vec<u8> {
    let len = postcard::experimental::serialized_size(message).expect("in-memory encoding cannot fail");
    encode_after(message, (len as u32).to_le_bytes().to_vec())
}

/// `head` then `message`, in a buffer of the exact size (measured first: no regrowth).
fn encode_after<T: Serialize>(message: &T, mut head: Vec<u8>) -> Vec<u8> {
    let len = postcard::experimental::serialized_size(message).expect("in-memory encoding cannot fail");
    head.reserve_exact(len);
    postcard::to_extend(message, head).expect("in-memory encoding cannot fail")
}

/// Decodes a message from untrusted bytes.
pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, WireError> {
    postcard::from_bytes(bytes).map_err(|e| WireError::Malformed(e.to_string()))
}

/// Decodes a message from the front of untrusted bytes; returns it and the bytes after it.
pub fn decode_prefix<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<(T, &'a [u8]), WireError> {
    postcard::take_from_bytes(bytes).map_err(|e| WireError::Malformed(e.to_string()))
}

/// Bytes that are not a message of this protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("malformed message: {0}")]
    Malformed(String),
    #[error("frame of {0} bytes exceeds the limit")]
    FrameTooLarge(usize),
    #[error("stream ended in the middle of a frame")]
    Truncated,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    pub protocol: u16,
    pub server: String,
}

/// A lookup as `vouch-core`'s `LookupProof`: position, entry records, multi-proof (empty for
/// an empty namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireLookup {
    pub index: u64,
    pub entries: Vec<ByteBuf>,
    pub proof: ByteBuf,
}

/// One version of a file and its proof in the file's version list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireVersion {
    pub index: u64,
    pub record: ByteBuf,
    pub proof: ByteBuf,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupRequest {
    pub name: String,
    /// A version number; `None` is the latest.
    pub version: Option<u64>,
}

/// Where a name is, and (when it exists) the version asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Located {
    pub lookup: WireLookup,
    pub version: Option<WireVersion>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRequest {}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    pub entries: Vec<ByteBuf>,
    pub proof: ByteBuf,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRequest {
    pub name: String,
}

/// Every version of a file, with one multi-proof over the whole version list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log {
    pub lookup: WireLookup,
    pub versions: Vec<ByteBuf>,
    pub proof: ByteBuf,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadRequest {
    pub name: String,
    pub version: Option<u64>,
    /// Byte range `start..end` of the version; `end` past the file is clamped to its length.
    pub start: u64,
    pub end: u64,
}

/// A block as the provider holds it: identity, tag, bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireBlock {
    pub nonce: u64,
    pub tag: ByteBuf,
    /// Shared, not copied, through [`decode_shared`] and [`put_frame_parts`].
    #[serde(serialize_with = "shared::serialize_bytes", deserialize_with = "shared::deserialize_bytes")]
    pub data: bytes::Bytes,
}

/// Consecutive blocks of a read with the multi-proof of their start offsets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadChunk {
    pub starts: Vec<u64>,
    pub proof: ByteBuf,
    pub blocks: Vec<WireBlock>,
}

/// First frame of a put: which name, and the file identity and scheme of the blocks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutHead {
    pub name: String,
    pub file: [u8; 16],
    pub scheme: u8,
    pub attempt: Attempt,
}

/// A random identity the client gives each change it sends (and keeps in its intent). When
/// the client settles the change with `last-commit`, the provider marks the attempt settled,
/// and refuses it should it arrive afterwards (a request still in transit from a client that
/// died): otherwise the provider could prove "not applied" and then apply it, and an honest
/// crash would look like a lie.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Attempt(pub [u8; 16]);

/// Blocks of a put, in file order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockBatch {
    pub blocks: Vec<WireBlock>,
}

/// Last frame of a put: the version record the client computed (its root must be the root
/// of the list the blocks build).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutTail {
    pub record: ByteBuf,
}

/// The answer to a `stage`: the upload's blocks are stored and checked against its record
/// (they build its root and length); it waits for its `commit-staged` under its attempt. It
/// proves nothing (the commit's answer does): a provider that lies here is caught there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedUpload {
    pub blocks: u64,
}

/// Commits uploads staged under their attempts: puts whose blocks went up outside the client's
/// commit lock (so that many uploads of one client run at once) and whose commits are sent
/// under it, several at once (a group commit: one request, one durable write at the provider,
/// one intent and one root written by the client). At most [`MAX_GROUP`] puts, of distinct
/// names and attempts. The provider applies them in this order, each over the namespace the
/// ones before it left, and makes the ones it applied durable together.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitStagedRequest {
    pub puts: Vec<StagedPut>,
}

/// One put of a [`CommitStagedRequest`]: `name` and `record` repeat what was staged under
/// `attempt`; the provider refuses a mismatch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedPut {
    pub name: String,
    pub attempt: Attempt,
    pub record: ByteBuf,
}

/// Puts in one [`CommitStagedRequest`], at most.
pub const MAX_GROUP: usize = 64;

/// The answer to a [`CommitStagedRequest`]: one outcome per put, in its order. A committed
/// put's proofs start from the namespace the puts before it left (the client checks them as a
/// chain from its root); a refused one changed nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommittedPuts {
    pub puts: Vec<Outcome>,
}

/// What became of one change of a commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    Committed(Committed),
    /// Not applied, and why (what a request of the change alone would have been answered).
    Refused(ErrorBody),
}

/// A frame of a put's upload (`stage`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PutFrame {
    Head(PutHead),
    Blocks(BlockBatch),
    Tail(PutTail),
}

/// A frame of a read stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadFrame {
    Located(Located),
    Chunk(ReadChunk),
    /// The provider hit an error after the stream began.
    Error(ErrorBody),
}

/// One edit of a block list, as `vouch-core`'s `Edit` (offsets into the version edited).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireEdit {
    /// Insert the block at `block` of the request's blocks before the block starting at `at`.
    Insert {
        at: u64,
        block: u32,
    },
    /// Replace the block holding byte `at`.
    Modify {
        at: u64,
        block: u32,
    },
    Remove {
        at: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditRequest {
    pub name: String,
    /// The version the edits apply to (must be the latest).
    pub base: u64,
    pub edits: Vec<WireEdit>,
    pub blocks: Vec<WireBlock>,
    /// Client's clock for the new version record.
    pub time: u64,
    pub attempt: Attempt,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveRequest {
    pub name: String,
    pub attempt: Attempt,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneRequest {
    pub name: String,
    /// Version numbers to drop (never the latest).
    pub versions: Vec<u64>,
    pub attempt: Attempt,
}

/// The provider's proofs for a change: the lookup before it, then the update of each level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    pub lookup: WireLookup,
    /// multiUpdate proof of the block list (edits only).
    pub file_update: Option<ByteBuf>,
    pub versions_update: Option<ByteBuf>,
    pub namespace_update: ByteBuf,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRequest {
    pub name: String,
    pub version: Option<u64>,
    pub seed: [u8; 32],
    pub count: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditAnswer {
    pub located: Located,
    pub proof: ByteBuf,
}

/// Blocks a file of the client holds already, their bytes written again (repair, from the
/// client's verified PoR copy, after the provider's copy of them was damaged or lost): each
/// must be one the file's blocks have, by nonce and tag. The client checks what it reads
/// afterwards as it checks any read; the provider is trusted with nothing here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealBlocksRequest {
    /// The file id (`FileId`'s 16 bytes).
    pub file: ByteBuf,
    pub blocks: Vec<WireBlock>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealedBlocks {
    pub healed: u64,
}

/// Asks for a version's block list without the data (what `sync` diffs against).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlocksRequest {
    pub name: String,
    pub version: Option<u64>,
}

/// A block's identity and tag, without its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockMeta {
    pub nonce: u64,
    pub tag: ByteBuf,
}

/// Every block of a version: start offsets, one multi-proof over them, identities and tags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockList {
    pub located: Located,
    pub starts: Vec<u64>,
    pub proof: ByteBuf,
    pub blocks: Vec<BlockMeta>,
}

/// Asks what became of the client's last change, after its answer was lost (a crash of either
/// side, a dropped connection): the client holds an intent record and must learn, from proven
/// state, whether the change was applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastCommitRequest {
    /// The name the change was about (the first one's, of several committed at once).
    pub name: String,
    /// The attempts of the change (of each change, of several committed at once): settled
    /// from now on, refused should they still arrive.
    pub attempts: Vec<Attempt>,
}

/// The provider's answer to [`LastCommitRequest`], given once no change of this client is in
/// flight: the lookup of the name in the current namespace (it verifies against the client's
/// old root when the change was not applied) and the answer of the last commit the provider
/// made durable for this client (stored in the commit's own metadata batch; it verifies from
/// the old root to the new one when the change was applied): one [`Outcome`] per change it
/// made at once, in order; none before any commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastCommit {
    pub lookup: WireLookup,
    pub committed: Vec<Outcome>,
}

/// What went wrong, for the client to act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorCode {
    /// Malformed or unacceptable request.
    BadRequest,
    /// Missing or unknown credentials.
    Unauthorized,
    /// The name or version does not exist.
    NotFound,
    /// The request names another protocol version.
    Version,
    /// The request or a frame is larger than the limits.
    TooLarge,
    /// The provider found its own stored data damaged or missing.
    DataLost,
    /// The provider's storage failed (full, unreachable, ...).
    Storage,
    /// The base version of an edit is not the latest, or the change's attempt was settled.
    Conflict,
    Internal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
}

/// Fuzz target `wire_message`: untrusted bytes offered to every decoder of this protocol, as
/// a frame stream too. Must never panic or allocate without bound.
#[doc(hidden)]
pub fn fuzz_wire_message(data: &[u8]) {
    fn reencode<T: Serialize + for<'a> Deserialize<'a>>(data: &[u8]) {
        if let Ok(m) = decode::<T>(data) {
            let _ = encode(&m);
        }
    }
    reencode::<Located>(data);
    reencode::<Listing>(data);
    reencode::<Log>(data);
    reencode::<ReadFrame>(data);
    reencode::<PutFrame>(data);
    reencode::<Committed>(data);
    reencode::<AuditAnswer>(data);
    reencode::<BlockList>(data);
    reencode::<LastCommit>(data);
    reencode::<HealBlocksRequest>(data);
    reencode::<HealedBlocks>(data);
    reencode::<EditRequest>(data);
    reencode::<CommitStagedRequest>(data);
    reencode::<CommittedPuts>(data);
    reencode::<StagedUpload>(data);
    reencode::<vicos::AipAdmit>(data);
    reencode::<vicos::AipInvoke>(data);
    reencode::<vicos::AipReply>(data);
    reencode::<vicos::AipWork>(data);
    reencode::<vicos::AipHistory>(data);
    reencode::<vicos::AipHistoryPage>(data);
    reencode::<vicos::CosPutFrame>(data);
    reencode::<vicos::CosGetFrame>(data);
    reencode::<vicos::CosDelete>(data);
    reencode::<ErrorBody>(data);
    reencode::<por::PorWriteRequest>(data);
    reencode::<por::PorContext>(data);
    reencode::<por::PorMoreRequest>(data);
    reencode::<por::PorMoreAnswer>(data);
    reencode::<por::PorStageRequest>(data);
    reencode::<por::PorStaged>(data);
    reencode::<por::PorAuditAnswer>(data);
    reencode::<por::PorRestoreRequest>(data);
    reencode::<por::PorStatus>(data);
    reencode::<por::PorLabelAnswer>(data);
    reencode::<por::PorFreeAnswer>(data);
    reencode::<por::PorReadAnswer>(data);
    reencode::<por::PorRegionAnswer>(data);
    reencode::<por::PorPlanRequest>(data);
    reencode::<por::PorLabelRequest>(data);
    let mut frames = frame::Decoder::new();
    frames.extend(data);
    while let Ok(Some(f)) = frames.next_frame() {
        reencode::<ReadFrame>(&f);
    }
}

/// Seeds for [`fuzz_wire_message`]: one valid message of several kinds.
#[doc(hidden)]
pub fn fuzz_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let lookup =
        WireLookup { index: 3, entries: vec![ByteBuf::from(vec![1, 2, 3])], proof: ByteBuf::from(vec![9; 40]) };
    let located = Located {
        lookup: lookup.clone(),
        version: Some(WireVersion { index: 0, record: ByteBuf::from(vec![5; 81]), proof: ByteBuf::from(vec![7; 50]) }),
    };
    let chunk = ReadChunk {
        starts: vec![0, 16384],
        proof: ByteBuf::from(vec![1; 64]),
        blocks: vec![WireBlock { nonce: 4, tag: ByteBuf::from(vec![2; 16]), data: bytes::Bytes::from(vec![3; 100]) }],
    };
    let committed = Committed {
        lookup,
        file_update: Some(ByteBuf::from(vec![4; 70])),
        versions_update: None,
        namespace_update: ByteBuf::from(vec![6; 70]),
    };
    let por_audit = por::PorAuditAnswer {
        parts: vec![por::PorPartAnswer::Proof(ByteBuf::from(vec![8; 90])), por::PorPartAnswer::Lost("gone".into())],
    };
    vec![
        ("seed-located", encode(&located)),
        ("seed-chunk", encode_frame(&ReadFrame::Chunk(chunk))),
        ("seed-committed", encode(&committed)),
        (
            "seed-committed-puts",
            encode(&CommittedPuts {
                puts: vec![
                    Outcome::Committed(committed.clone()),
                    Outcome::Refused(ErrorBody { code: ErrorCode::Conflict, message: "x".into() }),
                ],
            }),
        ),
        ("seed-error", encode(&ErrorBody { code: ErrorCode::DataLost, message: "x".into() })),
        ("seed-por-audit", encode(&por_audit)),
        ("seed-empty", Vec::new()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_have_distinct_paths() {
        let paths: std::collections::HashSet<String> = Op::ALL.iter().map(|op| op.path()).collect();
        assert_eq!(paths.len(), Op::ALL.len());
        assert_eq!(Op::LastCommit.path(), "/v1/last-commit");
    }
}

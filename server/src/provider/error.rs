//! Why the namespaces of files ([`Files`](super::Files)) refuse a request: each way is a
//! variant, its data what the request named or broke.

use super::{Refusal, MAX_CHALLENGE};
use vouch_core::flexlist::{BuildError, EditError, ProofError};
use vouch_core::namespace::{NamespaceError, RecordError, TreeError};
use vouch_store::StoreError;

/// A request [`Files`](super::Files) refuses.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    // ---- names and versions ----
    #[error("{0}")]
    BadName(#[source] RecordError),
    #[error("{name} is not in the namespace")]
    NoSuchName { name: String },
    #[error("version {version} of {name}")]
    NoSuchVersion { name: String, version: u64 },

    // ---- reads and audits ----
    #[error("offset {offset} is past the end ({len} bytes)")]
    PastEnd { offset: u64, len: u64 },
    #[error("a challenge has 1 to {MAX_CHALLENGE} offsets, not {count}")]
    ChallengeSize { count: u32 },
    #[error(
        "the challenged blocks hold {bytes} bytes, more than the {max} this provider holds for one audit: \
         challenge fewer offsets"
    )]
    AuditTooLarge { bytes: u64, max: u64 },
    #[error("the proof cannot be made: {0}")]
    Proof(#[source] ProofError),

    // ---- puts ----
    #[error(
        "block {nonce} holds {bytes} bytes and a tag of {tag}: a block must hold 1 byte to 1 MiB and a tag of \
         its scheme's length ({scheme_tag})"
    )]
    BadBlock { nonce: u64, bytes: usize, tag: usize, scheme_tag: usize },
    #[error("nonce {nonce} used twice")]
    NonceTwice { nonce: u64 },
    #[error("list build failed: {0}")]
    ListBuild(#[source] tokio::task::JoinError),
    #[error("the uploaded blocks build no list: {0}")]
    Build(#[source] BuildError),
    #[error("the version record names another file or scheme than the upload")]
    OtherUpload,
    #[error("the uploaded blocks do not build the version record's root and length")]
    NotTheRecord,

    // ---- edits ----
    #[error("edits name version {base} of {name}, the latest is {latest}")]
    StaleBase { name: String, base: u64, latest: u64 },
    #[error("new blocks take the version's next nonces in order, from {next}")]
    EditNonces { next: u64 },
    #[error("edit names block {block}; the request brings {blocks}")]
    NoEditBlock { block: u32, blocks: usize },
    #[error("{0}")]
    Edit(#[source] EditError),

    // ---- staged uploads ----
    #[error("at most {max} uploads may wait for their commits")]
    TooManyStaged { max: usize },
    #[error("an upload is staged under this attempt already")]
    StagedTwice,
    #[error("no upload is staged under this attempt (it expired, or the provider restarted)")]
    NothingStaged,
    #[error("{0}")]
    BadRecord(#[source] RecordError),
    #[error("the commit names another name or record than its staged upload")]
    NotTheStaged,
    #[error("a commit-staged names 1 to {max} puts, not {puts}")]
    GroupSize { puts: usize, max: usize },
    #[error("a commit-staged names each name and each attempt once")]
    NamedTwice,

    // ---- settling, committing ----
    #[error("this change was settled as not applied")]
    Settled,
    /// A new version that no longer follows its name's latest (the name changed while the
    /// version uploaded): a conflict, as an edit of a version not the latest is.
    #[error("the name's latest version is not the one this version follows: it changed meanwhile")]
    NotLatest,
    #[error("{0}")]
    Plan(#[source] NamespaceError),
    #[error("the version list cannot take the change: {0}")]
    VersionsEdit(#[source] EditError),
    #[error("the namespace cannot take the change: {0}")]
    NamespaceEdit(#[source] TreeError),
    #[error("a new version needs its block list")]
    NoBlockList,
    #[error("inconsistent change")]
    InconsistentChange,

    // ---- healing blocks ----
    #[error("a file id is 16 bytes, not {len}")]
    FileIdLength { len: usize },
    #[error("block {nonce} named twice")]
    BlockTwice { nonce: u64 },
    /// What the store said is kept as the source, not shown: it names the store's keys.
    #[error("a block the file does not hold")]
    NotHeld {
        #[source]
        source: StoreError,
    },
    #[error("block {nonce} holds no bytes")]
    EmptyBlock { nonce: u64 },
    #[error("block {nonce}'s tag is not the one the file holds for it")]
    WrongTag { nonce: u64 },
}

impl FilesError {
    pub(crate) fn refusal(&self) -> Refusal {
        use FilesError::*;
        match self {
            NoSuchName { .. } | NoSuchVersion { .. } => Refusal::NotFound,
            StaleBase { .. } | NothingStaged | Settled | NotLatest => Refusal::Conflict,
            AuditTooLarge { .. } | TooManyStaged { .. } => Refusal::TooLarge,
            BadName(_)
            | PastEnd { .. }
            | ChallengeSize { .. }
            | Proof(_)
            | BadBlock { .. }
            | NonceTwice { .. }
            | ListBuild(_)
            | Build(_)
            | OtherUpload
            | NotTheRecord
            | EditNonces { .. }
            | NoEditBlock { .. }
            | Edit(_)
            | StagedTwice
            | BadRecord(_)
            | NotTheStaged
            | GroupSize { .. }
            | NamedTwice
            | Plan(_)
            | VersionsEdit(_)
            | NamespaceEdit(_)
            | NoBlockList
            | InconsistentChange
            | FileIdLength { .. }
            | BlockTwice { .. }
            | NotHeld { .. }
            | EmptyBlock { .. }
            | WrongTag { .. } => Refusal::BadRequest,
        }
    }

    /// The protocol's code of the refusal.
    pub fn code(&self) -> vouch_proto::ErrorCode {
        self.refusal().code()
    }
}

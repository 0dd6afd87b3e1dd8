//! Why the VICOS groups ([`Groups`](crate::Groups)) refuse a request: each way is a variant,
//! its data what the request named or broke.

use crate::provider::Refusal;
use std::convert::Infallible;
use vouch_core::aip::{ClientId, ServerError, WireError};
use vouch_proto::vicos::{MAX_CARRIED_COMMITS, MAX_COMMIT_AUTHS, MAX_GROUP_NAME, MAX_OBJECT_KEY};

/// A request [`Groups`](crate::Groups) refuses.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    // ---- groups ----
    #[error("invalid group name {name:?}: 1 to {MAX_GROUP_NAME} letters, digits, '-' or '_'")]
    BadName { name: String },
    #[error("no VICOS group {group}")]
    NoGroup { group: String },
    #[error("VICOS group {group} exists already")]
    Exists { group: String },
    /// A group an older vouch made: refused as a request, not reported as damage, since
    /// nothing is lost or forged (its members' data is intact, but this provider cannot prove
    /// it).
    #[error(
        "group {group} was made by an older vouch, whose VICOS hashed with SHA-256, and this provider's hashes \
         with BLAKE3: read it with that version, or make a new group"
    )]
    OlderSha256 { group: String },
    /// A group whose journal holds INVOKEs with no counter: as [`GroupError::OlderSha256`].
    #[error(
        "group {group} was made by an older vouch, whose INVOKEs carried no counter: read it with that version, \
         or make a new group"
    )]
    Uncounted { group: String },

    // ---- AIP messages ----
    #[error("{what}: {source}")]
    Malformed {
        what: AipMessage,
        #[source]
        source: WireError,
    },
    #[error("an admission hash of {len} bytes; 32")]
    AdmissionHashLength { len: usize },
    #[error("the genesis authenticator is not the empty dictionary's")]
    GenesisNotEmpty,
    #[error("{count} COMMIT-AUTHs in one message; 1 to {MAX_COMMIT_AUTHS}")]
    CommitAuthCount { count: usize },
    #[error("{count} COMMITs carried by one INVOKE; at most {MAX_CARRIED_COMMITS}")]
    CarriedCount { count: usize },
    /// The group's AIP server refuses the message (see [`GroupError::refusal`]).
    #[error("group {group}: {source}")]
    Refused {
        group: String,
        #[source]
        source: ServerError<Infallible>,
    },

    // ---- members ----
    #[error("member {member} of group {group} was not admitted: it shows the group's admission secret first")]
    NotAdmitted { group: String, member: ClientId },
    #[error("member {member} of group {group} speaks through another client of this provider")]
    OtherClient { group: String, member: ClientId },
    #[error("not the admission secret of group {group}")]
    WrongSecret { group: String },
    #[error("no member of group {group} speaks through this client")]
    NoMemberHere { group: String },

    // ---- objects ----
    #[error("an object key of {len} bytes; at most {MAX_OBJECT_KEY}")]
    KeyTooLong { len: usize },
    /// `object`: its name in the blob store.
    #[error("no object {object} of group {group}")]
    NoObject { group: String, object: String },
    #[error("an object may take at most {max} bytes")]
    ObjectTooLarge { max: u64 },
}

/// Which part of an AIP request did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AipMessage {
    Genesis,
    Auth,
    Invoke,
    Commit,
    CommitAuth,
}

impl std::fmt::Display for AipMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AipMessage::Genesis => "genesis",
            AipMessage::Auth => "auth",
            AipMessage::Invoke => "invoke",
            AipMessage::Commit => "commit",
            AipMessage::CommitAuth => "commit-auth",
        })
    }
}

impl GroupError {
    /// What an AIP refusal ([`GroupError::Refused`]) means to the client that sent the
    /// message (nothing changed either way: a refusal never changes the server's state):
    /// * Conflict: the message is out of step with the group's progress and may make sense
    ///   later or not at all (a full pending list, Sec. 5.2: retry the INVOKE once operations
    ///   have completed; an operation authenticated already by a faster member, Sec. 3.7: no
    ///   more help needed; a COMMIT sent twice).
    /// * Bad request: the message cannot be right (signed by another than its sender, a wrong
    ///   authenticator, a `c` past what was applied, a client taken over).
    /// * Not found: the history it needs is no longer kept.
    /// * Too large: the member is further behind than one REPLY shows; it reads the history
    ///   in pages (`aip-history`), then invokes again.
    pub(crate) fn refusal(&self) -> Refusal {
        use GroupError::*;
        match self {
            Refused { source, .. } => match source {
                ServerError::PendingFull { .. }
                | ServerError::NoSuchOperation { .. }
                | ServerError::NotNext { .. }
                | ServerError::AlreadyAuthenticated { .. } => Refusal::Conflict,
                ServerError::ClearedTooFar { .. }
                | ServerError::WrongAuthenticator { .. }
                | ServerError::SignedByAnother { .. }
                | ServerError::Retired(_)
                | ServerError::CannotTakeOver { .. }
                | ServerError::CounterReused { .. } => Refusal::BadRequest,
                ServerError::Forgotten(_) => Refusal::NotFound,
                // Not the INVOKE's fault: its answer would be larger than a message (#43 item 10).
                ServerError::Behind { .. } => Refusal::TooLarge,
                // ADICT answers and applies every operation (its state error is `Infallible`).
                ServerError::Functionality { error, .. } => match *error {},
            },
            NoGroup { .. } | NoObject { .. } => Refusal::NotFound,
            Exists { .. } => Refusal::Conflict,
            NotAdmitted { .. } | OtherClient { .. } | WrongSecret { .. } | NoMemberHere { .. } => Refusal::Forbidden,
            ObjectTooLarge { .. } => Refusal::TooLarge,
            BadName { .. }
            | OlderSha256 { .. }
            | Uncounted { .. }
            | Malformed { .. }
            | AdmissionHashLength { .. }
            | GenesisNotEmpty
            | CommitAuthCount { .. }
            | CarriedCount { .. }
            | KeyTooLong { .. } => Refusal::BadRequest,
        }
    }

    /// The protocol's code of the refusal.
    pub fn code(&self) -> vouch_proto::ErrorCode {
        self.refusal().code()
    }
}

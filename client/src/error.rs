//! Everything that can go wrong on the client. (The `vouch` CLI maps each to its exit code.)

use crate::violation::{Violation, ViolationKind};
use vouch_proto::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The provider's answer does not check out: see [`Violation`] for what was observed.
    #[error("the provider misbehaved: {0}")]
    Misbehaved(Violation),
    #[error("cannot reach the provider at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    /// The provider kept the client waiting past a deadline (`timeout_secs`, `min_rate_kib`
    /// in `config.toml`): reported like an unreachable provider. Slow is not a lie.
    #[error("the provider at {url} took too long: {detail}")]
    TimedOut { url: String, detail: String },
    /// The provider says its storage failed (unreachable, full, refusing): reported like an
    /// unreachable provider, never "not found" and never success; an audit answered this
    /// way does not pass. Why not "misbehaved": an honest provider can have an outage, and an
    /// honest outage must never be reported as a lie. A provider that deleted the data and
    /// answers "unavailable" forever is denying service, which the threat model says it can
    /// always do; it gets no proof of possession out of it, since no audit ever passes.
    #[error("the provider is unavailable: {0}")]
    Unavailable(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("the provider refused the credentials: {0}")]
    Unauthorized(String),
    #[error("the provider refused the request ({code:?}): {message}")]
    Refused { code: ErrorCode, message: String },
    #[error("client state: {0}")]
    State(String),
    /// A VICOS member signed by a member whose public key this one has not imported yet (an
    /// Ed25519 group's roster): not the provider's lie, since it cannot sign for a member.
    /// The operation was abandoned; import a roster that names `member`, then go on.
    #[error("group {group}: member {member} is not in this member's roster yet; import a roster that names it (vouch group roster {group} --import FILE)")]
    UnknownMember { group: String, member: u32 },
    /// Another process holds the client state directory (its `lock` file).
    #[error("client state {dir} is in use by another vouch process{holder}; try again when it is done")]
    Busy { dir: String, holder: String },
    /// A VICOS object was replaced or deleted by another member while it was read, after
    /// some of its bytes had reached the output: what was written is not a verified object.
    /// Not the provider's doing (an honest store drops a deleted object); discard the output
    /// and read again into a fresh one.
    #[error("{0} changed while it was read: what was written of it is not the object; discard it and read again")]
    Changed(String),
    #[error("{0}")]
    BadInput(String),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

impl ClientError {
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ClientError {
        let what = what.into();
        move |source| ClientError::Io { what, source }
    }

    /// This error again, for each put of a group commit that it failed (an I/O error keeps its
    /// kind and message).
    pub(crate) fn copied(&self) -> ClientError {
        use ClientError::*;
        match self {
            Misbehaved(v) => Misbehaved(v.clone()),
            Unreachable { url, detail } => Unreachable { url: url.clone(), detail: detail.clone() },
            TimedOut { url, detail } => TimedOut { url: url.clone(), detail: detail.clone() },
            Unavailable(m) => Unavailable(m.clone()),
            NotFound(m) => NotFound(m.clone()),
            Unauthorized(m) => Unauthorized(m.clone()),
            Refused { code, message } => Refused { code: *code, message: message.clone() },
            State(m) => State(m.clone()),
            UnknownMember { group, member } => UnknownMember { group: group.clone(), member: *member },
            Busy { dir, holder } => Busy { dir: dir.clone(), holder: holder.clone() },
            Changed(m) => Changed(m.clone()),
            BadInput(m) => BadInput(m.clone()),
            Io { what, source } => {
                Io { what: what.clone(), source: std::io::Error::new(source.kind(), source.to_string()) }
            }
        }
    }

    /// A provider answer that does not check out, as the check that caught it saw it.
    pub fn violation(kind: ViolationKind, detail: impl std::fmt::Display) -> ClientError {
        ClientError::Misbehaved(Violation::new(kind, detail))
    }

    /// For `map_err`: a failed verification's error as a violation of `kind`.
    pub(crate) fn caught<E: std::fmt::Display>(kind: ViolationKind) -> impl FnOnce(E) -> ClientError {
        move |e| ClientError::violation(kind, e)
    }

    /// The violation, when the provider misbehaved.
    pub fn violation_kind(&self) -> Option<ViolationKind> {
        match self {
            ClientError::Misbehaved(v) => Some(v.kind),
            _ => None,
        }
    }

    /// The provider's error answer, as the variant the user acts on.
    pub fn from_server(code: ErrorCode, message: String) -> ClientError {
        match code {
            ErrorCode::Unauthorized => ClientError::Unauthorized(message),
            ErrorCode::NotFound => ClientError::NotFound(message),
            // A provider that lost or damaged what it stored has failed its one duty.
            ErrorCode::DataLost => ClientError::violation(ViolationKind::DataLost, message),
            ErrorCode::Storage => ClientError::Unavailable(message),
            code => ClientError::Refused { code, message },
        }
    }

    /// This error for an answer that the honest protocol never gives as a bare "not found": a
    /// name's absence is always proven, and a name the client's root proves present (before
    /// an edit) is no more "not found" than it is missing. Such a "not found" is a lie
    /// ([`ViolationKind::UnprovenNotFound`]); other errors pass unchanged.
    pub(crate) fn absence_unproven(self, what: &str) -> ClientError {
        self.not_found_is(ViolationKind::UnprovenNotFound, what)
    }

    /// A "not found" about `what` as a violation of `kind`; other errors pass unchanged.
    pub(crate) fn not_found_is(self, kind: ViolationKind, what: &str) -> ClientError {
        match self {
            ClientError::NotFound(message) => {
                ClientError::violation(kind, format!("it says {what} is not found: {message}"))
            }
            e => e,
        }
    }
}

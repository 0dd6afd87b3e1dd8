//! Everything that can go wrong on the client, and the exit code each maps to.

use vouch_proto::ErrorCode;

/// Stable process exit codes of the `vouch` CLI (documented in the README).
pub mod exit {
    pub const OK: i32 = 0;
    /// Any other failure (local I/O, ...).
    pub const FAILURE: i32 = 1;
    /// Bad command line or input (clap uses 2 for usage errors too).
    pub const USAGE: i32 = 2;
    /// The provider misbehaved: a proof did not verify, data was altered, a version was rolled
    /// back, a stream was cut short. Nothing it sent was handed out.
    pub const MISBEHAVED: i32 = 3;
    /// The provider could not be reached, or answered that it is unavailable (its storage
    /// down, full or refusing): see [`super::ClientError::Unavailable`].
    pub const UNREACHABLE: i32 = 4;
    /// The name or version does not exist (proven, for names).
    pub const NOT_FOUND: i32 = 5;
    /// The local state directory is missing, corrupted, or holds another key.
    pub const STATE: i32 = 6;
    /// The provider refused the credentials.
    pub const UNAUTHORIZED: i32 = 7;
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the provider misbehaved: {0}")]
    Misbehaved(String),
    #[error("cannot reach the provider at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    /// The provider kept the client waiting past a deadline (`timeout_secs`, `min_rate_kib`
    /// in `config.toml`): exit code 4, like an unreachable provider. Slow is not a lie.
    #[error("the provider at {url} took too long: {detail}")]
    TimedOut { url: String, detail: String },
    /// The provider says its storage failed (unreachable, full, refusing): exit code 4, like
    /// an unreachable provider, never "not found" and never success; an audit answered this
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
    /// Another process holds the client state directory (its `lock` file).
    #[error("client state {dir} is in use by another vouch process{holder}; try again when it is done")]
    Busy { dir: String, holder: String },
    #[error("{0}")]
    BadInput(String),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

impl ClientError {
    pub fn exit_code(&self) -> i32 {
        match self {
            ClientError::Misbehaved(_) => exit::MISBEHAVED,
            ClientError::Unreachable { .. } | ClientError::TimedOut { .. } | ClientError::Unavailable(_) => {
                exit::UNREACHABLE
            }
            ClientError::NotFound(_) => exit::NOT_FOUND,
            ClientError::Unauthorized(_) => exit::UNAUTHORIZED,
            ClientError::State(_) => exit::STATE,
            ClientError::BadInput(_) => exit::USAGE,
            ClientError::Refused { .. } | ClientError::Io { .. } | ClientError::Busy { .. } => exit::FAILURE,
        }
    }

    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ClientError {
        let what = what.into();
        move |source| ClientError::Io { what, source }
    }

    /// A provider answer that does not check out.
    pub fn lie(e: impl std::fmt::Display) -> ClientError {
        ClientError::Misbehaved(e.to_string())
    }

    /// The provider's error answer, as the variant the user acts on.
    pub fn from_server(code: ErrorCode, message: String) -> ClientError {
        match code {
            ErrorCode::Unauthorized => ClientError::Unauthorized(message),
            ErrorCode::NotFound => ClientError::NotFound(message),
            // A provider that lost or damaged what it stored has failed its one duty.
            ErrorCode::DataLost => ClientError::Misbehaved(format!("it reports its stored data damaged: {message}")),
            ErrorCode::Storage => ClientError::Unavailable(message),
            code => ClientError::Refused { code, message },
        }
    }

    /// This error for an answer that the honest protocol never gives as a bare "not found": a
    /// name's absence is always proven, and anything the client's root proves exists (a name
    /// before an edit, a version it read a header for) is no more "not found" than it is
    /// missing. Such a "not found" is a lie; other errors pass unchanged.
    pub(crate) fn absence_unproven(self, what: &str) -> ClientError {
        match self {
            ClientError::NotFound(message) => {
                ClientError::Misbehaved(format!("it says {what} is not found, without the proof it owes: {message}"))
            }
            e => e,
        }
    }
}

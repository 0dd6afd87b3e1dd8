//! Why the HTTP front refuses a request, or cannot finish it, around the provider's services:
//! its version, token, body and frames, and the tasks it runs a request in.

use std::time::Duration;
use vouch_core::namespace::RecordError;
use vouch_proto::{ErrorCode, Op, WireError, MAX_MESSAGE, PROTOCOL_VERSION};

/// A request the HTTP front refuses or cannot finish.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    // ---- who asks ----
    /// `said`: the version header's value, if any.
    #[error("this server speaks protocol {PROTOCOL_VERSION}; the request says {said:?}")]
    Version { said: Option<String> },
    #[error("missing bearer token")]
    NoToken,
    #[error("unknown token")]
    UnknownToken,

    // ---- messages ----
    /// The body could not be read whole within the protocol's size.
    #[error("request body: {0}")]
    Body(#[source] axum::Error),
    #[error("{0}")]
    Message(#[source] WireError),
    #[error("the answer would be {bytes} bytes, more than the protocol allows ({MAX_MESSAGE})")]
    AnswerTooLarge { bytes: usize },
    #[error("empty range {start}..{end}")]
    EmptyRange { start: u64, end: u64 },

    // ---- uploads (`put`, `stage`, `cos-put`) ----
    #[error("upload stalled: nothing came for {idle:?}")]
    Stalled { idle: Duration },
    #[error("upload broke off: {0}")]
    BrokeOff(#[source] axum::Error),
    #[error("upload ended before its last frame")]
    EndedEarly,
    #[error("{op} frames out of order")]
    OutOfOrder { op: Op },
    #[error("{op} sent bytes after its last frame")]
    AfterLast { op: Op },
    #[error("unknown scheme {scheme}")]
    UnknownScheme { scheme: u8 },
    #[error("{0}")]
    Record(#[source] RecordError),
    #[error("a put may upload at most {max} blocks; this one sent {blocks}")]
    PutBlocks { max: u64, blocks: u64 },
    #[error("a put may upload at most {max} bytes; this one sent {bytes}")]
    PutBytes { max: u64, bytes: u64 },

    // ---- the front's own work ----
    #[error("request timed out")]
    TimedOut,
    #[error("a read task failed: {0}")]
    ReadTask(#[source] tokio::task::JoinError),
    #[error("a batch of this client's is still being applied; its next PoR request waits for it")]
    PorApplying,
    #[error("the batch's apply failed: {0}")]
    PorApplyFailed(#[source] tokio::task::JoinError),
    #[error(
        "the batch is still being applied after {limit:?}; the next PoR request waits for it and answers for \
         the log after it"
    )]
    PorStillApplying { limit: Duration },
}

impl RequestError {
    /// The protocol's code of the error answer.
    pub fn code(&self) -> ErrorCode {
        use RequestError::*;
        match self {
            Version { .. } => ErrorCode::Version,
            NoToken | UnknownToken => ErrorCode::Unauthorized,
            Body(_) | AnswerTooLarge { .. } | PutBlocks { .. } | PutBytes { .. } => ErrorCode::TooLarge,
            Message(_)
            | EmptyRange { .. }
            | Stalled { .. }
            | BrokeOff(_)
            | EndedEarly
            | OutOfOrder { .. }
            | AfterLast { .. }
            | UnknownScheme { .. }
            | Record(_) => ErrorCode::BadRequest,
            TimedOut | ReadTask(_) | PorApplyFailed(_) => ErrorCode::Internal,
            PorApplying | PorStillApplying { .. } => ErrorCode::Storage,
        }
    }
}

//! What applications see when something goes wrong: S3 errors. A provider caught lying
//! gets a code of its own, [`VIOLATION_CODE`], so that no application mistakes it for a
//! missing key or a passing outage, and it is logged and counted.

use s3s::{S3Error, S3ErrorCode};
use vouch_client::ClientError;
use vouch_proto::ErrorCode;

/// The S3 error code of a provider caught misbehaving (an answer that failed verification:
/// altered, stale, withheld or forked data). HTTP 502. The message names the violation's kind
/// (`altered-block`, `bad-lookup-proof`, ...) and what was observed.
pub const VIOLATION_CODE: &str = "VouchIntegrityViolation";

/// A response header naming the violation's kind, beside [`VIOLATION_CODE`]: for tools that
/// read headers, not bodies (and for the gateway's own metrics).
pub const VIOLATION_HEADER: &str = "x-vouch-violation";

/// `e` as the S3 error an application sees, with `missing` the error for "not found". Its
/// message names what the application asked about, never where the provider is or a path of
/// this machine: those go to the gateway's log.
pub fn to_s3(e: ClientError, missing: S3ErrorCode) -> S3Error {
    match e {
        ClientError::Misbehaved(v) => {
            tracing::error!(kind = %v.kind, "the provider misbehaved: {v}");
            let mut err = S3Error::with_message(
                S3ErrorCode::Custom(VIOLATION_CODE.into()),
                format!("vouch caught the storage provider misbehaving ({}): {v}", v.kind),
            );
            err.set_status_code(http::StatusCode::BAD_GATEWAY);
            let mut headers = http::HeaderMap::new();
            if let Ok(kind) = http::HeaderValue::from_str(&v.kind.to_string()) {
                headers.insert(VIOLATION_HEADER, kind);
            }
            err.set_headers(headers);
            err
        }
        ClientError::NotFound(what) => S3Error::with_message(missing, what),
        ClientError::BadInput(what) => S3Error::with_message(S3ErrorCode::InvalidArgument, what),
        e @ (ClientError::Unreachable { .. }
        | ClientError::TimedOut { .. }
        | ClientError::Unavailable(_)
        | ClientError::Busy { .. }) => {
            tracing::warn!("{e}");
            S3Error::with_message(S3ErrorCode::ServiceUnavailable, "the storage provider is unavailable; try again")
        }
        // A change that raced another of the same name, or an upload the provider dropped
        // (a restart): trying again succeeds, and SDKs retry a 503 by themselves.
        e @ ClientError::Refused { code: ErrorCode::Conflict, .. } => {
            tracing::info!("{e}");
            S3Error::with_message(S3ErrorCode::ServiceUnavailable, "a concurrent change; try again")
        }
        // A member of the group this gateway's roster does not name yet: the operator imports
        // a roster (the gateway reads it again on the next request), then retries succeed.
        // (The message names the group and member, and the command; no path.)
        e @ ClientError::UnknownMember { .. } => {
            tracing::warn!("{e}");
            S3Error::with_message(S3ErrorCode::ServiceUnavailable, e.to_string())
        }
        e => {
            tracing::error!("{e}");
            S3Error::with_message(S3ErrorCode::InternalError, "the gateway failed; its log says why")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_body_names_no_provider_address_and_no_local_path() {
        let (url, dir) = ("http://10.1.2.3:8443", "/srv/vouch/state");
        let errors = [
            ClientError::Unreachable { url: url.into(), detail: "connection refused".into() },
            ClientError::TimedOut { url: url.into(), detail: "30 s".into() },
            ClientError::Unavailable(format!("{url}/blobs: disk full")),
            ClientError::Refused { code: ErrorCode::Conflict, message: format!("{url} busy") },
            ClientError::Busy { dir: dir.into(), holder: " (pid 7)".into() },
            ClientError::State(format!("{dir}/root: damaged")),
            ClientError::Io { what: format!("reading {dir}/cache"), source: std::io::Error::other("gone") },
        ];
        for e in errors {
            let shown = format!("{e}");
            let s3 = to_s3(e, S3ErrorCode::NoSuchKey);
            let message = s3.message().unwrap_or_default();
            assert!(!message.contains("10.1.2.3") && !message.contains(dir), "{shown} -> {message}");
        }
    }
}

//! One error type for every backend, with the failures a user must tell apart.

use std::error::Error as StdError;
use std::io;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no object or entry at {key}")]
    NotFound { key: String },
    #[error("invalid key {key:?}: use segments of letters, digits, '-', '_' and '.' joined by '/'")]
    InvalidKey { key: String },
    #[error("range {start}..{end} is outside {key}")]
    BadRange { key: String, start: u64, end: u64 },
    #[error("permission denied at {at}: {detail}")]
    PermissionDenied { at: String, detail: String },
    #[error("the storage is full ({at}): {detail}")]
    NoSpace { at: String, detail: String },
    #[error("cannot reach {endpoint}: {detail}")]
    Unreachable { endpoint: String, detail: String },
    /// A call the backend did not answer within the store's deadline (a hung connection, a
    /// stalled disk): given up on rather than waited for forever.
    #[error("no answer from {at} in time: {detail}")]
    TimedOut { at: String, detail: String },
    #[error("the store at {endpoint} refused the credentials: {detail}")]
    BadCredentials { endpoint: String, detail: String },
    #[error("corrupt data at {at}: {detail}")]
    Corrupt { at: String, detail: String },
    #[error("storage failure at {at}: {detail}")]
    Backend { at: String, detail: String },
}

/// The first `io::Error` in an error's source chain, if any.
pub(crate) fn io_cause<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a io::Error> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return Some(io);
        }
        cur = e.source();
    }
    None
}

/// The whole source chain as one line.
pub(crate) fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        // Many errors already print their sources; say each thing once.
        let text = e.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = e.source();
    }
    out
}

/// Maps an I/O failure at `at` to the variant a user can act on.
pub(crate) fn from_io(at: &str, err: &io::Error, detail: String) -> StoreError {
    let at = at.to_string();
    match err.kind() {
        io::ErrorKind::NotFound => StoreError::NotFound { key: at },
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            StoreError::PermissionDenied { at, detail }
        }
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => StoreError::NoSpace { at, detail },
        io::ErrorKind::ConnectionRefused
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::TimedOut
        | io::ErrorKind::HostUnreachable
        | io::ErrorKind::NetworkUnreachable
        | io::ErrorKind::AddrNotAvailable => StoreError::Unreachable { endpoint: at, detail },
        _ => StoreError::Backend { at, detail },
    }
}

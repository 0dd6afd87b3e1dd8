//! Stable process exit codes of the `vouch` CLI (documented in `docs/exit-codes.md`), and the code of
//! each client error. The library reports typed errors; what a process exits with is the
//! CLI's business.

use vouch_client::ClientError;

pub const OK: i32 = 0;
/// Any other failure (local I/O, a refusal, the state directory busy, ...).
pub const FAILURE: i32 = 1;
/// Bad command line or input (clap uses 2 for usage errors too).
pub const USAGE: i32 = 2;
/// The provider misbehaved: a proof did not verify, data was altered, a version was rolled
/// back, a stream was cut short (every [`vouch_client::ViolationKind`]). Nothing it sent was
/// handed out.
pub const MISBEHAVED: i32 = 3;
/// The provider could not be reached, took too long, or answered that it is unavailable (its
/// storage down, full or refusing): see [`ClientError::Unavailable`].
pub const UNREACHABLE: i32 = 4;
/// The name or version does not exist (proven, for names).
pub const NOT_FOUND: i32 = 5;
/// The local state directory is missing, corrupted, or holds another key; or a VICOS group's
/// member signed an operation before its roster was imported here.
pub const STATE: i32 = 6;
/// The provider refused the credentials.
pub const UNAUTHORIZED: i32 = 7;
/// A VICOS operation aborted: another member's incompatible operation was pending. Nothing
/// changed; run the command again. Also a get whose object another member replaced or
/// deleted while it was read ([`ClientError::Changed`]): its partial output is gone (a file)
/// or to be discarded (standard output); run it again.
pub const ABORTED: i32 = 8;

/// The exit code for a client error.
pub fn exit_code(e: &ClientError) -> i32 {
    match e {
        ClientError::Misbehaved(_) => MISBEHAVED,
        ClientError::Unreachable { .. } | ClientError::TimedOut { .. } | ClientError::Unavailable(_) => UNREACHABLE,
        ClientError::NotFound(_) => NOT_FOUND,
        ClientError::Unauthorized(_) => UNAUTHORIZED,
        ClientError::State(_) | ClientError::UnknownMember { .. } => STATE,
        ClientError::BadInput(_) => USAGE,
        ClientError::Refused { .. } | ClientError::Io { .. } | ClientError::Busy { .. } => FAILURE,
        ClientError::Changed(_) => ABORTED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vouch_client::ViolationKind;
    use vouch_server::{FilesError, ProviderError};

    #[test]
    fn every_client_error_has_its_documented_exit_code() {
        let s = || String::from("x");
        let too_large = || ProviderError::from(FilesError::TooManyStaged { max: 1 });
        let cases = [
            (ClientError::violation(ViolationKind::AlteredBlock, "x"), 3),
            (ClientError::violation(ViolationKind::DataLost, "x"), 3),
            (ClientError::Unreachable { url: s(), detail: s() }, 4),
            (ClientError::TimedOut { url: s(), detail: s() }, 4),
            (ClientError::Unavailable(s()), 4),
            (ClientError::NotFound(s()), 5),
            (ClientError::Unauthorized(s()), 7),
            (ClientError::State(s()), 6),
            (ClientError::UnknownMember { group: s(), member: 1 }, 6),
            (ClientError::BadInput(s()), 2),
            (ClientError::Refused { code: too_large().code(), message: s() }, 1),
            (ClientError::Io { what: s(), source: std::io::Error::other("x") }, 1),
            (ClientError::Busy { dir: s(), holder: s() }, 1),
            (ClientError::Changed(s()), 8),
        ];
        for (e, code) in cases {
            assert_eq!(exit_code(&e), code, "{e:?}");
        }
        // The provider's own error answers, as the client types them.
        let server = |e: ProviderError| exit_code(&ClientError::from_server(e.code(), s()));
        assert_eq!(server(FilesError::NoSuchName { name: s() }.into()), NOT_FOUND);
        assert_eq!(server(too_large()), FAILURE);
        assert_eq!(OK, 0);
    }
}

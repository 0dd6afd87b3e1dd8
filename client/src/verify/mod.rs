//! The client's checks, pure: each takes what the client trusts (a namespace root, a proven
//! version record, its key, what it asked for) and the provider's answer, and returns what
//! the answer proves or the [`crate::Violation`] it shows. No I/O, no clock, no randomness and
//! no state here: [`crate::Client`] sends the requests, keeps the root and calls these, and
//! another transport (a gateway, a test) can call them the same way.
//!
//! Errors: a failed check is [`ClientError::Misbehaved`] with the kind of the check; an answer
//! that proves the thing asked for absent is [`ClientError::NotFound`]; a request the client
//! itself cannot make (a range past the end) is [`ClientError::BadInput`].

mod audit;
mod namespace;
mod read;

pub use audit::possession;
pub use namespace::{commit, listing, located, log, lookup_from_wire, unlisted_version, update_from_wire, Verified};
pub use read::{block_list, chunk, RangeParts, ReadCheck, StoredBlock};

use crate::error::ClientError;

/// `name` as a valid name, or the input error.
pub fn valid_name(name: &str) -> Result<(), ClientError> {
    vouch_core::namespace::check_name(name).map_err(|e| ClientError::BadInput(e.to_string()))
}

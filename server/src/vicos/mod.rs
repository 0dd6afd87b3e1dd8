//! VICOS at the provider (paper 003, Sec. 4, Fig. 2): the two untrusted components a group of
//! clients uses, side by side in one provider.
//!
//! * [`sequencer`]: the AIP server of each group (Alg. 3, with the extensions of Sec. 3.7 and
//!   the bounded pending list of Sec. 5.2, INVOKEs held back while it is full), running ADICT (Sec. 4.2, Alg. 4–5) over the
//!   hashes of the group's objects; each message handled atomically, as the paper's actor
//!   (Sec. 5.1), and journaled before it is answered ([`journal`]), the entries of
//!   concurrent messages made durable together ([`group_commit`]).
//! * [`cos`]: the group's cloud object store (Sec. 4.1): whole objects under translated keys
//!   `k || x` (Sec. 4.3), streamed in and out of the provider's blob store.
//!
//! A group is named by its creator and shared by several provider clients (several bearer
//! tokens): any authenticated client may address any group by name. The provider does not
//! decide who is a member, and checks no signature: AIP's signatures, which the members check
//! (Alg. 1–2), are the group's security, and the object hashes in ADICT are its objects'.
//! It does admit members (`vouch_core::aip::Admission`): the creator gives the hash of a
//! secret only members hold, and each member id is bound to the provider client through which
//! it showed that secret (the creator's at creation). Only those clients send messages in a
//! member's name or reach the group's objects: another client of the provider could not
//! sign its messages (with a group key), could delete objects the history names, and the
//! members would blame the provider for either.

pub(crate) mod cos;
mod error;
mod group_commit;
mod journal;
pub(crate) mod sequencer;

pub use cos::{CosReader, CosUpload};
pub use error::{AipMessage, GroupError};
pub(crate) use sequencer::Sequencer;

use std::convert::Infallible;
use vouch_core::aip::ServerError;
use vouch_proto::vicos::MAX_GROUP_NAME;

/// A group's name: 1 to [`MAX_GROUP_NAME`] bytes of `[A-Za-z0-9_-]` (it names records and blob
/// folders).
pub(crate) fn check_group(name: &str) -> Result<(), GroupError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_GROUP_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    match valid {
        true => Ok(()),
        false => Err(GroupError::BadName { name: name.to_string() }),
    }
}

/// An AIP refusal of a message to `group` (what it means to the sender:
/// [`GroupError::refusal`]).
pub(crate) fn refused(group: &str, e: ServerError<Infallible>) -> GroupError {
    GroupError::Refused { group: group.to_string(), source: e }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vouch_proto::ErrorCode;

    #[test]
    fn group_names_are_checked_and_refusals_typed() {
        for good in ["g", "team-1_B", &"x".repeat(MAX_GROUP_NAME)] {
            assert!(check_group(good).is_ok(), "{good}");
        }
        for bad in ["", "a/b", "..", "a b", "é", &"x".repeat(MAX_GROUP_NAME + 1)] {
            assert!(matches!(check_group(bad), Err(GroupError::BadName { .. })), "{bad:?}");
        }
        let full = refused("g", ServerError::PendingFull { pending: 128, max: 128 });
        assert!(full.code() == ErrorCode::Conflict && full.to_string().contains("retry"), "{full}");
        assert_eq!(refused("g", ServerError::Retired(3)).code(), ErrorCode::BadRequest);
        assert_eq!(refused("g", ServerError::Forgotten(3)).code(), ErrorCode::NotFound);
    }
}

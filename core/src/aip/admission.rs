//! Admission to a group at its provider's sequencer: which provider client may speak as
//! which member id. Not part of AIP (the paper's provider knows its clients by other means);
//! here the provider is shared, and a client of it outside the group must not be able to
//! send messages in a member's name: with a group key it could not sign them, and the
//! members would blame the provider for the garbage in their history.
//!
//! The group's creator gives the sequencer the hash of a secret that only members hold; a
//! member shows the secret once, and its id is bound to the provider client it spoke
//! through. The provider learns the secret, which lets it admit no one it could not admit
//! anyway (it orders the messages), and the secret signs nothing. A member could take an id
//! another member has not used yet; members are not each other's adversaries here (with an
//! HMAC group key, any member can sign as any other).

use sha2::{Digest as _, Sha256};

/// The group's admission secret: 32 bytes only its members hold (random for an Ed25519
/// group, whose members share no key).
#[derive(Clone, PartialEq, Eq)]
pub struct Admission(pub [u8; 32]);

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission(..)")
    }
}

impl Admission {
    /// The secret of an HMAC group named `group`, derived from its group key, so that the
    /// key is the only secret its members keep (and the provider never learns the key).
    pub fn of_group_key(key: &[u8; 32], group: &str) -> Admission {
        let mut material = key.to_vec();
        material.extend_from_slice(group.as_bytes());
        Admission(blake3::derive_key("vouch 2026-11 VICOS group admission", &material))
    }

    /// What the sequencer keeps to check the secret by.
    pub fn hash(&self) -> [u8; 32] {
        Admission::hash_of(&self.0)
    }

    /// The hash of a secret as shown to the sequencer.
    pub fn hash_of(secret: &[u8]) -> [u8; 32] {
        Sha256::digest(secret).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_keys_secret_depends_on_the_key_and_the_group_and_its_hash_hides_it() {
        let a = Admission::of_group_key(&[1; 32], "team");
        assert_eq!(a, Admission::of_group_key(&[1; 32], "team"));
        assert_ne!(a, Admission::of_group_key(&[2; 32], "team"));
        assert_ne!(a, Admission::of_group_key(&[1; 32], "team2"));
        assert_ne!(a.hash(), a.0);
        assert_eq!(a.hash(), Admission::hash_of(&a.0));
        assert_eq!(format!("{a:?}"), "Admission(..)");
    }
}

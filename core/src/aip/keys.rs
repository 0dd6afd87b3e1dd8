//! The group's signatures (paper 003, Sec. 5.1): HMAC-SHA256 under one key the group shares
//! (fast; every member can sign for every other, the paper's default), or Ed25519 with a key
//! per client (a member can sign only for itself).

use super::ClientId;
use ed25519_dalek::{Signer as _, SigningKey, Verifier as _, VerifyingKey};
use hmac::{Mac, SimpleHmac};
use sha2::Sha256;
use std::collections::BTreeMap;

#[derive(Clone)]
pub enum Keyring {
    Hmac {
        key: [u8; 32],
    },
    Ed25519 {
        /// This client's identity and signing key (`None`: it only verifies).
        me: Option<(ClientId, Box<SigningKey>)>,
        members: BTreeMap<ClientId, VerifyingKey>,
    },
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Keyring::Hmac { .. } => f.write_str("Keyring::Hmac"),
            Keyring::Ed25519 { me, members } => f
                .debug_struct("Keyring::Ed25519")
                .field("me", &me.as_ref().map(|(id, _)| id))
                .field("members", &members.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyringError {
    #[error("client {0} cannot sign here: this keyring holds no signing key for it")]
    CannotSign(ClientId),
    #[error("member {0}'s public key is not an Ed25519 public key")]
    BadPublicKey(ClientId),
}

const HMAC_LEN: usize = 32;

impl Keyring {
    /// An Ed25519 keyring from bytes: this member's id and 32-byte secret seed (none: it only
    /// verifies), and each member's 32-byte public key.
    pub fn ed25519(
        me: Option<(ClientId, [u8; 32])>,
        members: &BTreeMap<ClientId, [u8; 32]>,
    ) -> Result<Keyring, KeyringError> {
        let members = members
            .iter()
            .map(|(&id, bytes)| Ok((id, VerifyingKey::from_bytes(bytes).map_err(|_| KeyringError::BadPublicKey(id))?)))
            .collect::<Result<_, KeyringError>>()?;
        let me = me.map(|(id, seed)| (id, Box::new(SigningKey::from_bytes(&seed))));
        Ok(Keyring::Ed25519 { me, members })
    }

    /// The public key of the Ed25519 secret seed `seed`.
    pub fn ed25519_public(seed: &[u8; 32]) -> [u8; 32] {
        SigningKey::from_bytes(seed).verifying_key().to_bytes()
    }

    /// Whether this keyring can check `client`'s signatures at all (an HMAC group key checks
    /// every member's; an Ed25519 keyring only those of the members whose key it holds).
    pub fn knows(&self, client: ClientId) -> bool {
        match self {
            Keyring::Hmac { .. } => true,
            Keyring::Ed25519 { members, .. } => members.contains_key(&client),
        }
    }

    fn hmac(key: &[u8; 32], client: ClientId, statement: &[u8]) -> SimpleHmac<Sha256> {
        let mut mac = <SimpleHmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
        mac.update(&client.to_le_bytes());
        mac.update(statement);
        mac
    }

    /// `sign_client(statement)`.
    pub fn sign(&self, client: ClientId, statement: &[u8]) -> Result<Vec<u8>, KeyringError> {
        match self {
            Keyring::Hmac { key } => Ok(Self::hmac(key, client, statement).finalize().into_bytes().to_vec()),
            Keyring::Ed25519 { me: Some((id, key)), .. } if *id == client => {
                Ok(key.sign(statement).to_bytes().to_vec())
            }
            Keyring::Ed25519 { .. } => Err(KeyringError::CannotSign(client)),
        }
    }

    /// `verify_client(signature, statement)`; a member the keyring does not know verifies nothing.
    pub fn verify(&self, client: ClientId, statement: &[u8], signature: &[u8]) -> bool {
        match self {
            Keyring::Hmac { key } => {
                signature.len() == HMAC_LEN && Self::hmac(key, client, statement).verify_slice(signature).is_ok()
            }
            Keyring::Ed25519 { members, .. } => {
                let (Some(key), Ok(bytes)) = (members.get(&client), <[u8; 64]>::try_from(signature)) else {
                    return false;
                };
                key.verify(statement, &ed25519_dalek::Signature::from_bytes(&bytes)).is_ok()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_only_for_its_client_and_statement() {
        let hmac = Keyring::Hmac { key: [7; 32] };
        let sig = hmac.sign(1, b"statement").unwrap();
        assert!(hmac.verify(1, b"statement", &sig));
        assert!(!hmac.verify(2, b"statement", &sig));
        assert!(!hmac.verify(1, b"other", &sig));
        assert!(!Keyring::Hmac { key: [8; 32] }.verify(1, b"statement", &sig), "another group");

        let (alice, bob) = (SigningKey::from_bytes(&[1; 32]), SigningKey::from_bytes(&[2; 32]));
        let members = BTreeMap::from([(1, alice.verifying_key()), (2, bob.verifying_key())]);
        let at_alice = Keyring::Ed25519 { me: Some((1, Box::new(alice))), members: members.clone() };
        let sig = at_alice.sign(1, b"statement").unwrap();
        assert!(at_alice.verify(1, b"statement", &sig));
        assert!(!at_alice.verify(2, b"statement", &sig), "bob's key does not verify alice's signature");
        assert_eq!(at_alice.sign(2, b"statement"), Err(KeyringError::CannotSign(2)), "alice cannot sign as bob");
        let outsider = Keyring::Ed25519 { me: None, members: BTreeMap::new() };
        assert!(!outsider.verify(1, b"statement", &sig));
        assert!(!outsider.knows(1) && at_alice.knows(2) && hmac.knows(99));

        // The same keyring from bytes; a public key that is no curve point is refused.
        let public = BTreeMap::from([(1, Keyring::ed25519_public(&[1; 32])), (2, Keyring::ed25519_public(&[2; 32]))]);
        let from_bytes = Keyring::ed25519(Some((1, [1; 32])), &public).unwrap();
        assert_eq!(from_bytes.sign(1, b"statement").unwrap(), sig);
        let not_a_point = (0u8..=255).map(|b| [b; 32]).find(|k| VerifyingKey::from_bytes(k).is_err()).unwrap();
        let broken = BTreeMap::from([(3, not_a_point)]);
        assert_eq!(Keyring::ed25519(None, &broken).map(|_| ()), Err(KeyringError::BadPublicKey(3)));
        assert!(!at_alice.verify(1, b"statement", &sig[..10]));
    }
}

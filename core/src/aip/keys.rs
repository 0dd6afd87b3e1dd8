//! The group's signatures (paper 003, Sec. 5.1): HMAC-SHA256 under one key the group shares
//! (fast; every member can sign for every other, the paper's default), or Ed25519 with a key
//! per client (a member can sign only for itself).

use super::ClientId;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::BTreeMap;

#[derive(Clone)]
pub enum Keyring {
    /// One key the whole group shares ([`Keyring::hmac`]).
    Hmac(GroupKey),
    Ed25519 {
        /// This client's identity and signing key (`None`: it only verifies).
        me: Option<(ClientId, Box<SigningKey>)>,
        members: BTreeMap<ClientId, VerifyingKey>,
    },
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Keyring::Hmac(_) => f.write_str("Keyring::Hmac"),
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
    #[error("member {0}'s public key is not an Ed25519 public key (or one of small order)")]
    BadPublicKey(ClientId),
}

const HMAC_LEN: usize = 32;

/// A group's HMAC-SHA256 key, keyed once: HMAC's inner and outer key blocks are hashed when
/// the key is made, not for each signature. A member checks a signature for every operation
/// of the others (Alg. 2), over a statement of two or three blocks: each check then takes
/// three or four calls of SHA-256's compression function instead of five or six.
#[derive(Clone)]
pub struct GroupKey {
    bytes: [u8; 32],
    keyed: Hmac<Sha256>,
}

impl std::fmt::Debug for GroupKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GroupKey") // a secret: never printed
    }
}

impl GroupKey {
    pub fn new(bytes: [u8; 32]) -> GroupKey {
        let keyed = <Hmac<Sha256> as Mac>::new_from_slice(&bytes).expect("HMAC takes any key length");
        GroupKey { bytes, keyed }
    }

    pub fn bytes(&self) -> &[u8; 32] {
        &self.bytes
    }

    fn mac(&self, client: ClientId, statement: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.keyed.clone();
        mac.update(&client.to_le_bytes());
        mac.update(statement);
        mac
    }
}

impl Keyring {
    /// A keyring of one HMAC key the whole group shares.
    pub fn hmac(key: [u8; 32]) -> Keyring {
        Keyring::Hmac(GroupKey::new(key))
    }

    /// An Ed25519 keyring from bytes: this member's id and 32-byte secret seed (none: it only
    /// verifies), and each member's 32-byte public key.
    pub fn ed25519(
        me: Option<(ClientId, [u8; 32])>,
        members: &BTreeMap<ClientId, [u8; 32]>,
    ) -> Result<Keyring, KeyringError> {
        let members = members
            .iter()
            .map(|(&id, bytes)| match VerifyingKey::from_bytes(bytes) {
                // A key of small order verifies one forged signature for almost any statement.
                Ok(key) if !key.is_weak() => Ok((id, key)),
                _ => Err(KeyringError::BadPublicKey(id)),
            })
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
            Keyring::Hmac(_) => true,
            Keyring::Ed25519 { members, .. } => members.contains_key(&client),
        }
    }

    /// `sign_client(statement)`.
    pub fn sign(&self, client: ClientId, statement: &[u8]) -> Result<Vec<u8>, KeyringError> {
        match self {
            Keyring::Hmac(key) => Ok(key.mac(client, statement).finalize().into_bytes().to_vec()),
            Keyring::Ed25519 { me: Some((id, key)), .. } if *id == client => {
                Ok(key.sign(statement).to_bytes().to_vec())
            }
            Keyring::Ed25519 { .. } => Err(KeyringError::CannotSign(client)),
        }
    }

    /// `verify_client(signature, statement)`; a member the keyring does not know verifies nothing.
    pub fn verify(&self, client: ClientId, statement: &[u8], signature: &[u8]) -> bool {
        match self {
            Keyring::Hmac(key) => {
                signature.len() == HMAC_LEN && key.mac(client, statement).verify_slice(signature).is_ok()
            }
            Keyring::Ed25519 { members, .. } => {
                let (Some(key), Ok(bytes)) = (members.get(&client), <[u8; 64]>::try_from(signature)) else {
                    return false;
                };
                // Strict: no key or `R` of small order, `s` reduced, so that a signature
                // has one form and a weak key (were one let in) verifies nothing.
                key.verify_strict(statement, &ed25519_dalek::Signature::from_bytes(&bytes)).is_ok()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_key_keyed_once_signs_as_hmac_keyed_for_each_signature() {
        let keys = Keyring::hmac([7; 32]);
        for statement in [&b""[..], b"statement", &[9; 150], &[1; 1000]] {
            let mut mac = <hmac::SimpleHmac<Sha256> as Mac>::new_from_slice(&[7; 32]).unwrap();
            mac.update(&3u32.to_le_bytes());
            mac.update(statement);
            let expected = mac.finalize().into_bytes().to_vec();
            assert_eq!(keys.sign(3, statement).unwrap(), expected);
            // The keyed state is not consumed: the next signature starts from it again.
            assert!(keys.verify(3, statement, &expected));
        }
    }

    #[test]
    fn a_signature_verifies_only_for_its_client_and_statement() {
        let hmac = Keyring::hmac([7; 32]);
        let sig = hmac.sign(1, b"statement").unwrap();
        assert!(hmac.verify(1, b"statement", &sig));
        assert!(!hmac.verify(2, b"statement", &sig));
        assert!(!hmac.verify(1, b"other", &sig));
        assert!(!Keyring::hmac([8; 32]).verify(1, b"statement", &sig), "another group");

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

    /// The identity point is a public key of small order: with it, `R` the identity and
    /// `s = 0` pass Ed25519's lax check (`[s]B = R + [k]A`) for every statement, so whoever
    /// slips it into a roster signs anything as that member. The roster refuses the key, and
    /// the strict check refuses the signature even from a keyring that holds it.
    #[test]
    fn a_small_order_key_and_its_forged_signature_verify_nothing() {
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak = VerifyingKey::from_bytes(&identity).unwrap();
        let mut forged = [0u8; 64];
        forged[..32].copy_from_slice(&identity);
        let ring = Keyring::Ed25519 { me: None, members: BTreeMap::from([(5, weak)]) };
        for statement in [&b"INVOKE"[..], b"COMMIT", b"any other"] {
            assert!(!ring.verify(5, statement, &forged), "a forged signature under a weak key");
        }
        let roster = BTreeMap::from([(5, identity)]);
        assert_eq!(Keyring::ed25519(None, &roster).map(|_| ()), Err(KeyringError::BadPublicKey(5)));
    }
}

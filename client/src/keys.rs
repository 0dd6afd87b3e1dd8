//! The client's keys: the owner's tag key, of either scheme (see [`vouch_core::pdp`]), and a
//! third party's public key, which can audit and do nothing else.
//!
//! A key is chosen once, at `vouch init`, and tags every block the client ever stores: the
//! linear scheme (default; fast, only the owner can audit) or DPDP's RSA scheme (slower;
//! anyone holding the public key and the client's root can audit, see [`crate::public`]).

use crate::error::ClientError;
use sha2::{Digest as _, Sha256};
use vouch_core::namespace::VersionRecord;
use vouch_core::pdp::linear::LinearKey;
use vouch_core::pdp::rsa::{scheme_for_bits, RsaPublicKey, RsaSecretKey};
use vouch_core::pdp::{Aggregate, Auditor, Challenged, FileId, Salt, SchemeId, Tagger};

/// Which key a new client gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyChoice {
    /// The linear scheme (32 random bytes).
    Linear,
    /// The RSA scheme with a modulus of `bits` (1024 or 2048) bits.
    Rsa { bits: u32 },
}

impl KeyChoice {
    /// The RSA choice for a modulus size, or the input error.
    pub fn rsa(bits: u32) -> Result<KeyChoice, ClientError> {
        scheme_for_bits(bits)
            .map(|_| KeyChoice::Rsa { bits })
            .ok_or_else(|| ClientError::BadInput(format!("an RSA modulus has 1024 or 2048 bits, not {bits}")))
    }
}

/// A key's secret bytes, as the state directory keeps them.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretKey {
    /// The linear scheme's 32-byte secret.
    Linear([u8; 32]),
    /// [`RsaSecretKey::to_bytes`].
    Rsa(Vec<u8>),
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SecretKey::Linear(_) => "SecretKey::Linear(..)",
            SecretKey::Rsa(_) => "SecretKey::Rsa(..)",
        })
    }
}

impl SecretKey {
    /// A fresh key from the operating system's randomness. An RSA key takes a moment (about a
    /// second for 2048 bits, more on a slow machine): two random primes are searched for.
    pub fn generate(choice: KeyChoice) -> Result<SecretKey, ClientError> {
        match choice {
            KeyChoice::Linear => Ok(SecretKey::Linear(rand::random())),
            KeyChoice::Rsa { bits } => {
                let key = RsaSecretKey::generate(&mut rand_crypto::rng(), bits)
                    .map_err(|e| ClientError::BadInput(e.to_string()))?;
                Ok(SecretKey::Rsa(key.to_bytes()))
            }
        }
    }

    /// Binds the state file to its key (a state paired with another key is refused). The
    /// linear fingerprint is the one the state format has always used.
    pub(crate) fn fingerprint(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"vouch key fingerprint");
        match self {
            SecretKey::Linear(k) => h.update(k),
            SecretKey::Rsa(bytes) => h.update(bytes),
        }
        h.finalize().into()
    }
}

/// The owner's tag key: tags blocks, checks served blocks, audits.
pub enum ClientKey {
    Linear(LinearKey),
    Rsa(Box<RsaSecretKey>),
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientKey({:?})", self.scheme())
    }
}

impl ClientKey {
    /// The key of secret bytes (an RSA key builds its tables: tens of ms).
    pub fn from_secret(secret: &SecretKey) -> Result<ClientKey, ClientError> {
        Ok(match secret {
            SecretKey::Linear(k) => ClientKey::Linear(LinearKey::from_secret(*k)),
            SecretKey::Rsa(bytes) => ClientKey::Rsa(Box::new(
                RsaSecretKey::from_bytes(bytes).map_err(|e| ClientError::State(format!("the RSA key: {e}")))?,
            )),
        })
    }

    /// The secret the PoR log's keys derive from (`crate::por`): the tag key's own bytes
    /// through a KDF, so that one secret (the state directory's) keeps everything.
    pub(crate) fn por_secret(&self) -> [u8; 32] {
        let bytes = match self {
            ClientKey::Linear(k) => k.to_bytes(),
            ClientKey::Rsa(k) => k.to_bytes(),
        };
        blake3::derive_key("vouch client por keys v1", &bytes)
    }

    pub fn scheme(&self) -> SchemeId {
        match self {
            ClientKey::Linear(_) => SchemeId::Linear,
            ClientKey::Rsa(k) => Tagger::scheme(k.as_ref()),
        }
    }

    /// The public key, for the RSA scheme (the linear scheme has none).
    pub fn public_key(&self) -> Option<&RsaPublicKey> {
        match self {
            ClientKey::Linear(_) => None,
            ClientKey::Rsa(k) => Some(k.public_key()),
        }
    }
}

impl Tagger for ClientKey {
    fn scheme(&self) -> SchemeId {
        ClientKey::scheme(self)
    }

    fn tag(&self, file: &FileId, nonce: u64, salt: &Salt, data: &[u8]) -> Vec<u8> {
        match self {
            ClientKey::Linear(k) => k.tag(file, nonce, salt, data),
            ClientKey::Rsa(k) => k.tag(file, nonce, salt, data),
        }
    }

    fn check_block(&self, file: &FileId, nonce: u64, data: &[u8], tag: &[u8]) -> bool {
        match self {
            ClientKey::Linear(k) => k.check_block(file, nonce, data, tag),
            ClientKey::Rsa(k) => k.check_block(file, nonce, data, tag),
        }
    }
}

impl Auditor for ClientKey {
    fn scheme(&self) -> SchemeId {
        ClientKey::scheme(self)
    }

    fn check(&self, file: &FileId, blocks: &[Challenged<'_>], aggregate: &Aggregate) -> bool {
        match self {
            ClientKey::Linear(k) => k.check(file, blocks, aggregate),
            ClientKey::Rsa(k) => Auditor::check(k.as_ref(), file, blocks, aggregate),
        }
    }
}

/// What a [`crate::Client`] holds: the owner's key, or only a public key (an auditor).
#[derive(Debug)]
pub(crate) enum Keys {
    Owner(ClientKey),
    Public(RsaPublicKey),
}

impl Keys {
    /// The owner's key, for what only the owner can do (tag, check served blocks).
    pub(crate) fn owner(&self) -> Result<&ClientKey, ClientError> {
        match self {
            Keys::Owner(k) => Ok(k),
            Keys::Public(_) => Err(ClientError::BadInput("a public key can audit, and nothing else".into())),
        }
    }

    pub(crate) fn scheme(&self) -> SchemeId {
        match self {
            Keys::Owner(k) => k.scheme(),
            Keys::Public(k) => k.scheme(),
        }
    }

    /// A new version of `name` is tagged like the versions before it (a key never changes
    /// scheme; a record of another is not this client's).
    pub(crate) fn same_scheme(&self, name: &str, latest: Option<&VersionRecord>) -> Result<(), ClientError> {
        match latest {
            Some(r) if r.scheme != self.scheme() => Err(ClientError::BadInput(format!(
                "{name} is tagged with the {:?} scheme, this client's key is {:?}",
                r.scheme,
                self.scheme()
            ))),
            _ => Ok(()),
        }
    }
}

impl Auditor for Keys {
    fn scheme(&self) -> SchemeId {
        Keys::scheme(self)
    }

    fn check(&self, file: &FileId, blocks: &[Challenged<'_>], aggregate: &Aggregate) -> bool {
        match self {
            Keys::Owner(k) => k.check(file, blocks, aggregate),
            Keys::Public(k) => k.check(file, blocks, aggregate),
        }
    }
}

/// A public key's identifier: the first 8 bytes of its SHA-256 (domain-separated), so an
/// auditor can tell that a key file is the one a root was issued with.
pub fn key_id(key: &RsaPublicKey) -> [u8; 8] {
    let mut h = Sha256::new();
    h.update(b"vouch public key id");
    h.update(key.to_bytes());
    h.finalize()[..8].try_into().expect("8 bytes")
}

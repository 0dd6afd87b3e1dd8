//! A public audit: a third party holding only an RSA client's public key and its root asks
//! the provider to prove that it holds a file, and checks the answer as the owner would: the
//! version's lookup and record proven under the root, then the possession proof under the
//! public key (DPDP's `prod T_i^nu_i = g^M mod N`). Nothing secret, no state kept; the lies
//! an owner's audit catches (a corrupt or lost block, a replayed proof or one for another
//! challenge, another version, a hidden version or file, another root) it catches alike,
//! since it runs the owner's own audit ([`Client::audit`]) with the public key.
//!
//! The root is the one the owner held when it handed it out: after the owner's next commit
//! the provider can no longer prove anything under it, and the auditor needs the new one.

use crate::client::{assemble, Client};
use crate::error::ClientError;
use crate::keys::{key_id, Keys};
use crate::persist::MemoryState;
use crate::reads::AuditReport;
use crate::remote::Remote;
use crate::root::Root;
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use vouch_core::namespace::EntryRecord;
use vouch_core::pdp::rsa::RsaPublicKey;
use vouch_core::Digest;

/// A root as its owner hands it to an auditor: `DIGEST:NAMES:KEYID` (`vouch root`), the
/// namespace root (64 hex digits), its count of names, and the [`key_id`] of the public key
/// the files are tagged for (16 hex digits; absent for a linear-scheme client, which has no
/// public key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditRoot {
    pub root: Root,
    pub key_id: Option<[u8; 8]>,
}

impl fmt::Display for AuditRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.root.digest.to_hex(), self.root.len)?;
        if let Some(id) = &self.key_id {
            write!(f, ":{}", hex(id))?;
        }
        Ok(())
    }
}

impl FromStr for AuditRoot {
    type Err = ClientError;

    fn from_str(text: &str) -> Result<AuditRoot, ClientError> {
        let bad = || {
            ClientError::BadInput(format!(
                "a root is DIGEST:NAMES[:KEYID] (64 hex digits, a count, 16 hex digits) as `vouch root` prints it, \
                 not {text:?}"
            ))
        };
        let mut parts = text.trim().split(':');
        let digest = parts.next().and_then(unhex::<32>).ok_or_else(bad)?;
        let len = parts.next().and_then(|n| n.parse::<u64>().ok()).ok_or_else(bad)?;
        let key_id = match parts.next() {
            None => None,
            Some(id) => Some(unhex::<8>(id).ok_or_else(bad)?),
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(AuditRoot { root: Root { digest: Digest(digest), len }, key_id })
    }
}

fn hex(bytes: &[u8]) -> String {
    base16ct::lower::encode_string(bytes)
}

fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    base16ct::mixed::decode_vec(text).ok()?.try_into().ok()
}

/// A public key from a file written by `vouch key export-public`
/// ([`RsaPublicKey::to_bytes`]).
pub fn read_public_key(path: &Path) -> Result<RsaPublicKey, ClientError> {
    let bytes = std::fs::read(path).map_err(ClientError::io(format!("reading the public key {}", path.display())))?;
    if bytes.starts_with(b"vouchSK") || bytes.starts_with(b"vouchRS") {
        return Err(ClientError::BadInput(format!(
            "{} is a secret key: an auditor needs the public key (`vouch key export-public`)",
            path.display()
        )));
    }
    RsaPublicKey::from_bytes(&bytes)
        .map_err(|e| ClientError::BadInput(format!("{} is not a vouch public key: {e}", path.display())))
}

/// A third party's audits of one root (see the module documentation).
#[derive(Debug)]
pub struct PublicAuditor {
    client: Client,
}

impl PublicAuditor {
    /// Audits under `root` with `key`, which must be the key the root was issued with.
    pub fn new(remote: Remote, key: RsaPublicKey, root: &AuditRoot) -> Result<PublicAuditor, ClientError> {
        match root.key_id {
            None => {
                return Err(ClientError::BadInput(
                    "this root names no public key: its owner tags with the linear scheme, which only the owner \
                     can audit (`vouch init --scheme rsa` makes a publicly auditable client)"
                        .into(),
                ))
            }
            Some(id) if id != key_id(&key) => {
                return Err(ClientError::BadInput(format!(
                    "the public key (id {}) is not the one this root was issued with (id {})",
                    hex(&key_id(&key)),
                    hex(&id)
                )))
            }
            Some(_) => {}
        }
        let store = Arc::new(MemoryState::new(root.root));
        Ok(PublicAuditor { client: assemble(Keys::Public(key), store, remote, None)? })
    }

    /// A possession challenge of `count` random offsets over a version of `name` (the
    /// latest without `want`), bound to the root.
    pub async fn audit(&self, name: &str, want: Option<u64>, count: u32) -> Result<AuditReport, ClientError> {
        self.client.audit(name, want, count).await
    }

    /// Every name under the root, verified complete.
    pub async fn list(&self) -> Result<Vec<EntryRecord>, ClientError> {
        self.client.list().await
    }
}

impl Client {
    /// The root to hand an auditor, with the public key's id (after settling a change left
    /// unsettled, so that it is the provider's current root).
    pub async fn audit_root(&self) -> Result<AuditRoot, ClientError> {
        let root = self.settled_root().await?;
        Ok(AuditRoot { root, key_id: self.key().and_then(|k| k.public_key()).map(key_id) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_reads_back_as_written_and_malformed_ones_are_refused() {
        let with =
            AuditRoot { root: Root { digest: Digest([0xab; 32]), len: 7 }, key_id: Some([1, 2, 3, 4, 5, 6, 7, 8]) };
        let text = with.to_string();
        assert_eq!(text, format!("{}:7:0102030405060708", "ab".repeat(32)));
        assert_eq!(text.parse::<AuditRoot>().unwrap(), with);
        let without = AuditRoot { key_id: None, ..with };
        assert_eq!(without.to_string().parse::<AuditRoot>().unwrap(), without);
        let digest = "ab".repeat(32);
        for bad in [
            String::new(),
            "zz".repeat(32) + ":1",
            digest.clone(),
            format!("{digest}:x"),
            format!("{digest}:-1"),
            format!("{}:1", &digest[..62]),
            format!("{digest}:1:0102"),
            format!("{digest}:1:0102030405060708:9"),
            format!("{}é:1", &digest[..62]),
        ] {
            assert!(matches!(bad.parse::<AuditRoot>(), Err(ClientError::BadInput(_))), "{bad:?}");
        }
    }
}

//! `vouch serve`'s settings: a TOML file, overridden by flags and environment (in the CLI).
//!
//! ```toml
//! listen = "127.0.0.1:7447"
//! data = "/var/lib/vouch"         # metadata (redb) here; blocks here too unless s3 is set
//! s3 = "/etc/vouch/s3.conf"       # optional: blocks in an S3 bucket (key = value file)
//!
//! [[client]]
//! name = "alice"
//! token_sha256 = "9f86d0..."      # SHA-256 of the client's bearer token, hex
//! ```

use crate::keys::valid_client;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub listen: Option<String>,
    pub data: Option<PathBuf>,
    pub s3: Option<PathBuf>,
    #[serde(default, rename = "client")]
    pub clients: Vec<ClientCredential>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientCredential {
    pub name: String,
    pub token_sha256: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {detail}")]
    Parse { path: PathBuf, detail: String },
    #[error("client {0:?}: names are 1 to 64 letters, digits, '-' or '_'")]
    BadClient(String),
    #[error("client {0:?}: token_sha256 must be 64 hex digits")]
    BadTokenHash(String),
    #[error("client {0:?} is listed twice")]
    DuplicateClient(String),
}

impl ServerConfig {
    pub fn from_file(path: &Path) -> Result<Self, ServerConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ServerConfigError::Read { path: path.to_path_buf(), source })?;
        let config: ServerConfig = toml::from_str(&text)
            .map_err(|e| ServerConfigError::Parse { path: path.to_path_buf(), detail: e.to_string() })?;
        config.credentials()?;
        Ok(config)
    }

    /// Token hash -> client name, checked.
    pub fn credentials(&self) -> Result<HashMap<[u8; 32], String>, ServerConfigError> {
        let mut out = HashMap::new();
        let mut names = std::collections::HashSet::new();
        for c in &self.clients {
            if !valid_client(&c.name) {
                return Err(ServerConfigError::BadClient(c.name.clone()));
            }
            if !names.insert(c.name.clone()) {
                return Err(ServerConfigError::DuplicateClient(c.name.clone()));
            }
            let hash = parse_hex32(&c.token_sha256).ok_or_else(|| ServerConfigError::BadTokenHash(c.name.clone()))?;
            out.insert(hash, c.name.clone());
        }
        Ok(out)
    }
}

/// SHA-256 of a bearer token: what the server's configuration keeps instead of the token.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

pub fn hex32(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex32(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_parses_and_bad_entries_are_named() {
        let hash = hex32(&token_hash("secret"));
        let good = format!("listen = \"127.0.0.1:0\"\n[[client]]\nname = \"alice\"\ntoken_sha256 = \"{hash}\"\n");
        let c: ServerConfig = toml::from_str(&good).unwrap();
        assert_eq!(c.credentials().unwrap().get(&token_hash("secret")).map(String::as_str), Some("alice"));
        let bad_name = good.replace("alice", "al/ice");
        assert!(matches!(
            toml::from_str::<ServerConfig>(&bad_name).unwrap().credentials(),
            Err(ServerConfigError::BadClient(_))
        ));
        let bad_hash = good.replace(&hash, "abc");
        assert!(matches!(
            toml::from_str::<ServerConfig>(&bad_hash).unwrap().credentials(),
            Err(ServerConfigError::BadTokenHash(_))
        ));
        assert!(toml::from_str::<ServerConfig>("listen = 1").is_err());
        assert!(toml::from_str::<ServerConfig>("typo = 1").is_err());
    }
}

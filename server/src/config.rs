//! `vouch serve`'s settings: a TOML file, overridden by flags and environment (in the CLI).
//!
//! ```toml
//! listen = "127.0.0.1:7447"
//! data = "/var/lib/vouch"         # metadata (redb) here; blocks here too unless s3 is set
//! s3 = "/etc/vouch/s3.conf"       # optional: blocks in an S3 bucket (key = value file)
//! tls_cert = "/etc/vouch/cert.pem" # optional, with tls_key: serve https:// (see `vouch tls-cert`)
//! tls_key = "/etc/vouch/key.pem"
//!
//! [limits]                        # optional; each has a generous default (see `Limits`)
//! max_put_bytes = 274877906944    # block bytes one put may upload
//! max_put_blocks = 16777216       # blocks one put may upload
//! max_audit_bytes = 536870912     # challenged block bytes one audit may hold
//! stream_idle_secs = 60           # a stream that stalls this long loses its connection
//! max_staged = 1024               # uploads one client may have waiting for their commits
//! staged_secs = 600               # how long a staged upload waits for its commit
//! group_idle_secs = 600           # how long a VICOS group stays in memory unused
//!
//! [[client]]
//! name = "alice"
//! token_sha256 = "9f86d0..."      # SHA-256 of the client's bearer token, hex
//! ```

use crate::keys::valid_client;
use crate::limits::Limits;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The largest `aip_page_kib`: a page must fit in a message beside its framing.
const MAX_AIP_PAGE_KIB: u64 = (vouch_core::aip::wire::DELTA_BYTES / 1024) as u64;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub listen: Option<String>,
    pub data: Option<PathBuf>,
    pub s3: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    #[serde(default)]
    pub limits: LimitSettings,
    #[serde(default, rename = "client")]
    pub clients: Vec<ClientCredential>,
}

/// The `[limits]` table: each one given replaces the default of [`Limits`].
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitSettings {
    pub max_put_bytes: Option<u64>,
    pub max_put_blocks: Option<u64>,
    pub max_audit_bytes: Option<u64>,
    pub stream_idle_secs: Option<u64>,
    pub max_staged: Option<u64>,
    pub staged_secs: Option<u64>,
    pub group_idle_secs: Option<u64>,
    pub aip_page_kib: Option<u64>,
}

impl LimitSettings {
    /// `base` with the settings given here (each must be positive).
    pub fn over(&self, base: Limits) -> Result<Limits, ServerConfigError> {
        let positive = |value: Option<u64>, name: &'static str| match value {
            Some(0) => Err(ServerConfigError::BadLimit(name)),
            other => Ok(other),
        };
        let idle = positive(self.stream_idle_secs, "stream_idle_secs")?;
        Ok(Limits {
            max_put_bytes: positive(self.max_put_bytes, "max_put_bytes")?.unwrap_or(base.max_put_bytes),
            max_put_blocks: positive(self.max_put_blocks, "max_put_blocks")?.unwrap_or(base.max_put_blocks),
            max_audit_bytes: positive(self.max_audit_bytes, "max_audit_bytes")?.unwrap_or(base.max_audit_bytes),
            stream_idle: idle.map_or(base.stream_idle, std::time::Duration::from_secs),
            max_staged: positive(self.max_staged, "max_staged")?.map_or(base.max_staged, |n| n as usize),
            staged_for: positive(self.staged_secs, "staged_secs")?
                .map_or(base.staged_for, std::time::Duration::from_secs),
            group_idle: positive(self.group_idle_secs, "group_idle_secs")?
                .map_or(base.group_idle, std::time::Duration::from_secs),
            aip_page_bytes: match positive(self.aip_page_kib, "aip_page_kib")? {
                Some(kib) if kib > MAX_AIP_PAGE_KIB => return Err(ServerConfigError::BadLimit("aip_page_kib")),
                Some(kib) => kib as usize * 1024,
                None => base.aip_page_bytes,
            },
            vicos_flush_after: base.vicos_flush_after,
        })
    }
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
    /// An empty token would let anyone who sends `Authorization: Bearer ` in.
    #[error("client {0:?} has an empty token (make one with `vouch token`)")]
    EmptyToken(String),
    #[error("limit {0} must be a positive number")]
    BadLimit(&'static str),
    #[error("tls_cert and tls_key go together: give both or neither")]
    TlsHalf,
}

impl ServerConfig {
    pub fn from_file(path: &Path) -> Result<Self, ServerConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ServerConfigError::Read { path: path.to_path_buf(), source })?;
        let config: ServerConfig = toml::from_str(&text)
            .map_err(|e| ServerConfigError::Parse { path: path.to_path_buf(), detail: e.to_string() })?;
        config.credentials()?;
        config.limits.over(Limits::default())?;
        config.tls_files()?;
        Ok(config)
    }

    /// The certificate and key files to serve TLS with, when both are set.
    pub fn tls_files(&self) -> Result<Option<(&Path, &Path)>, ServerConfigError> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Ok(Some((cert, key))),
            (None, None) => Ok(None),
            _ => Err(ServerConfigError::TlsHalf),
        }
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
            if hash == token_hash("") {
                return Err(ServerConfigError::EmptyToken(c.name.clone()));
            }
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
    base16ct::lower::encode_string(bytes)
}

fn parse_hex32(text: &str) -> Option<[u8; 32]> {
    base16ct::mixed::decode_vec(text).ok()?.try_into().ok()
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
        // A sign is no hex digit: `+f` once parsed as 0x0f, so two spellings named one hash.
        let signed = format!("+{}", &hash[1..]);
        assert_eq!(parse_hex32(&hash.to_uppercase()), Some(token_hash("secret")));
        assert_eq!(parse_hex32(&signed), None);
        assert!(matches!(
            toml::from_str::<ServerConfig>(&bad_hash).unwrap().credentials(),
            Err(ServerConfigError::BadTokenHash(_))
        ));
        assert!(toml::from_str::<ServerConfig>("listen = 1").is_err());
        assert!(toml::from_str::<ServerConfig>("typo = 1").is_err());
    }

    #[test]
    fn an_empty_token_is_refused_from_a_file_and_from_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve.toml");
        let empty = hex32(&token_hash(""));
        std::fs::write(&path, format!("[[client]]\nname = \"alice\"\ntoken_sha256 = \"{empty}\"\n")).unwrap();
        assert!(matches!(ServerConfig::from_file(&path), Err(ServerConfigError::EmptyToken(n)) if n == "alice"));
        // `--client alice=` becomes the same credential.
        let flag = ServerConfig {
            clients: vec![ClientCredential { name: "alice".into(), token_sha256: hex32(&token_hash("")) }],
            ..ServerConfig::default()
        };
        assert!(matches!(flag.credentials(), Err(ServerConfigError::EmptyToken(_))));
    }

    #[test]
    fn limits_and_tls_files_parse_and_bad_ones_are_named() {
        let c: ServerConfig = toml::from_str(
            "tls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n[limits]\nmax_put_blocks = 5\nstream_idle_secs = 2\ngroup_idle_secs = 9\n",
        )
        .unwrap();
        let limits = c.limits.over(Limits::default()).unwrap();
        assert_eq!(limits.max_put_blocks, 5);
        assert_eq!(limits.stream_idle, std::time::Duration::from_secs(2));
        assert_eq!(limits.group_idle, std::time::Duration::from_secs(9));
        assert_eq!(limits.max_audit_bytes, Limits::default().max_audit_bytes);
        assert!(c.tls_files().unwrap().is_some());
        let zero: ServerConfig = toml::from_str("[limits]\nmax_audit_bytes = 0\n").unwrap();
        assert!(matches!(zero.limits.over(Limits::default()), Err(ServerConfigError::BadLimit("max_audit_bytes"))));
        let half: ServerConfig = toml::from_str("tls_cert = \"c.pem\"\n").unwrap();
        assert!(matches!(half.tls_files(), Err(ServerConfigError::TlsHalf)));
        assert!(toml::from_str::<ServerConfig>("[limits]\ntypo = 1\n").is_err());
    }
}

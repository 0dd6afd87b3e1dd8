//! `vouch gateway`'s configuration (TOML): where it listens and which access keys the local
//! applications sign their requests with (SigV4, headers or presigned URLs).
//!
//! ```toml
//! listen = "127.0.0.1:9000"
//! [[keys]]
//! access_key = "AKIAEXAMPLE"
//! secret_key = "a long random secret"
//! ```

use serde::Deserialize;
use std::path::Path;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// Address and port to listen on (loopback by default: the portal is on the user's side).
    #[serde(default = "default_listen")]
    pub listen: String,
    /// The applications' access keys; a request signed with any other is refused.
    pub keys: Vec<AccessKey>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessKey {
    pub access_key: String,
    pub secret_key: String,
}

fn default_listen() -> String {
    "127.0.0.1:9000".into()
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: {detail}")]
    Invalid { path: String, detail: String },
}

impl GatewayConfig {
    pub fn load(path: &Path) -> Result<GatewayConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: shown.clone(), source })?;
        GatewayConfig::parse(&text).map_err(|detail| ConfigError::Invalid { path: shown, detail })
    }

    pub fn parse(text: &str) -> Result<GatewayConfig, String> {
        let config: GatewayConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if config.keys.is_empty() {
            return Err("no access keys: add at least one [[keys]] with access_key and secret_key".into());
        }
        if config.keys.iter().any(|k| k.access_key.is_empty() || k.secret_key.len() < 8) {
            return Err("each access key needs a name and a secret of at least 8 characters".into());
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_needs_keys_and_refuses_what_it_does_not_know() {
        let good = GatewayConfig::parse("[[keys]]\naccess_key = \"app\"\nsecret_key = \"secret-123\"\n").unwrap();
        assert_eq!((good.listen.as_str(), good.keys.len()), ("127.0.0.1:9000", 1));
        assert!(GatewayConfig::parse("listen = \"127.0.0.1:1\"\nkeys = []\n").is_err());
        assert!(GatewayConfig::parse("[[keys]]\naccess_key = \"app\"\nsecret_key = \"short\"\n").is_err());
        assert!(GatewayConfig::parse("typo = 1\n[[keys]]\naccess_key = \"a\"\nsecret_key = \"secret-123\"\n").is_err());
    }
}

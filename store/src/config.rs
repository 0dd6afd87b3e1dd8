//! S3 settings from a file, the environment, or the usual AWS variables.

use std::path::Path;

/// Where an S3-compatible store is and how to sign in.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Config {
    /// `http(s)://host:port`; `None` for AWS itself.
    pub endpoint: Option<String>,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for S3Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Config")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// S3 settings could not be read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("missing S3 setting: {0}")]
    Missing(&'static str),
    #[error("{file}:{line}: {why}")]
    Syntax { file: String, line: usize, why: String },
    #[error("cannot read {file}: {why}")]
    Unreadable { file: String, why: String },
}

const KEYS: [&str; 5] = ["endpoint", "bucket", "region", "access_key", "secret_key"];

impl S3Config {
    /// From `VOUCH_S3_ENDPOINT`, `VOUCH_S3_BUCKET`, `VOUCH_S3_REGION`, `VOUCH_S3_ACCESS_KEY`,
    /// `VOUCH_S3_SECRET_KEY`, falling back to the usual `AWS_ENDPOINT_URL`, `AWS_REGION`,
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`. `bucket` overrides the variable.
    pub fn from_env(bucket: Option<&str>) -> Result<Self, ConfigError> {
        let var = |names: &[&str]| names.iter().find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()));
        Self::assemble(|key| match key {
            "endpoint" => var(&["VOUCH_S3_ENDPOINT", "AWS_ENDPOINT_URL"]),
            "bucket" => bucket.map(str::to_string).or_else(|| var(&["VOUCH_S3_BUCKET"])),
            "region" => var(&["VOUCH_S3_REGION", "AWS_REGION"]),
            "access_key" => var(&["VOUCH_S3_ACCESS_KEY", "AWS_ACCESS_KEY_ID"]),
            _ => var(&["VOUCH_S3_SECRET_KEY", "AWS_SECRET_ACCESS_KEY"]),
        })
    }

    /// From a file of `key = value` lines (keys: endpoint, bucket, region, access_key,
    /// secret_key; `#` starts a comment). Keep it readable only by its owner: it holds a secret.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::Unreadable { file: file.clone(), why: e.to_string() })?;
        let mut values: Vec<(&str, String)> = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let syntax = |why: String| ConfigError::Syntax { file: file.clone(), line: n + 1, why };
            let (key, value) = line.split_once('=').ok_or_else(|| syntax("expected `key = value`".into()))?;
            let key = KEYS
                .iter()
                .find(|k| **k == key.trim())
                .ok_or_else(|| syntax(format!("unknown setting `{}` (known: {})", key.trim(), KEYS.join(", "))))?;
            if values.iter().any(|(k, _)| k == key) {
                return Err(syntax(format!("`{key}` set twice")));
            }
            values.push((key, value.trim().to_string()));
        }
        Self::assemble(|key| values.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()))
    }

    fn assemble(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let need = |key: &'static str| get(key).filter(|v| !v.is_empty()).ok_or(ConfigError::Missing(key));
        Ok(S3Config {
            endpoint: get("endpoint").filter(|v| !v.is_empty()),
            bucket: need("bucket")?,
            region: get("region").filter(|v| !v.is_empty()).unwrap_or_else(|| "us-east-1".into()),
            access_key: need("access_key")?,
            secret_key: need("secret_key")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn a_settings_file_is_read_and_its_mistakes_are_named() {
        let f = write("# test\nendpoint = http://127.0.0.1:9000\nbucket=b\naccess_key = k # comment\nsecret_key = s\n");
        let c = S3Config::from_file(f.path()).unwrap();
        assert_eq!(c.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!((c.bucket.as_str(), c.region.as_str(), c.access_key.as_str()), ("b", "us-east-1", "k"));
        assert!(!format!("{c:?}").contains("secret"), "Debug must not print the secret");
        let f = write("bucket = b\naccess_key = k\n");
        assert_eq!(S3Config::from_file(f.path()).unwrap_err(), ConfigError::Missing("secret_key"));
        let f = write("bucket = b\nsecrets = s\n");
        let err = S3Config::from_file(f.path()).unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { line: 2, .. }) && err.to_string().contains("secrets"), "{err}");
        let f = write("bucket b\n");
        assert!(matches!(S3Config::from_file(f.path()), Err(ConfigError::Syntax { line: 1, .. })));
        let f = write("bucket = a\nbucket = b\n");
        assert!(S3Config::from_file(f.path()).unwrap_err().to_string().contains("twice"));
        let missing = S3Config::from_file(Path::new("/nonexistent/vouch-s3.conf")).unwrap_err();
        assert!(matches!(missing, ConfigError::Unreadable { .. }) && missing.to_string().contains("vouch-s3.conf"));
    }
}

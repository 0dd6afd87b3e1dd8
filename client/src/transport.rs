//! How long the client waits for a provider, and which certificate it trusts: the settings
//! of `config.toml` beside `server`.
//!
//! ```toml
//! server = "https://provider.example:7447"
//! timeout_secs = 300    # a call's deadline; a stream's deadline for each frame
//! min_rate_kib = 64     # the slowest average a stream may keep, beyond timeout_secs of grace
//! por_part_kib = 24576  # the most of a PoR plan's answer or batch's upload in one message
//! ca = "ca.pem"         # `vouch init --ca FILE`: over https:// trust this and nothing else
//! ```
//!
//! A non-streamed call (request and whole answer) must end within `timeout_secs`. A stream (a
//! read's answer, a put's upload) has no fixed deadline, since an honest transfer of a large
//! file takes as long as it takes: each frame must arrive (or be taken) within
//! `timeout_secs`, and the time spent waiting on the provider must stay under `timeout_secs`
//! plus the bytes transferred at `min_rate_kib`. A provider that trickles bytes, or stops
//! reading an upload, ends the call with `ClientError::TimedOut` (the CLI's exit 4) within
//! those bounds.

use crate::error::ClientError;
use crate::state::ClientConfig;
use std::path::Path;
use std::time::Duration;
use vouch_proto::por::POR_PART_BYTES;

/// Default of `timeout_secs`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Default of `min_rate_kib`, in bytes per second.
pub const DEFAULT_MIN_RATE: u64 = 64 << 10;

/// The transport settings of a client (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transport {
    pub timeout: Duration,
    /// Bytes per second.
    pub min_rate: u64,
    /// PEM certificates, the provider's own or its CA's: over `https://`, the only ones trusted.
    pub ca_pem: Option<Vec<u8>>,
    /// The most bytes of a PoR plan's answer or batch's upload in one message
    /// (`vouch_proto::por`'s parts).
    pub por_part_bytes: usize,
}

impl Default for Transport {
    fn default() -> Self {
        Transport { timeout: DEFAULT_TIMEOUT, min_rate: DEFAULT_MIN_RATE, ca_pem: None, por_part_bytes: POR_PART_BYTES }
    }
}

impl Transport {
    /// The settings of a state directory's `config.toml` (its `ca` file read from `dir`).
    pub fn from_config(dir: &Path, config: &ClientConfig) -> Result<Transport, ClientError> {
        let positive = |value: Option<u64>, name: &str| match value {
            Some(0) => Err(ClientError::State(format!("{}: config.toml: {name} must be positive", dir.display()))),
            other => Ok(other),
        };
        let timeout = positive(config.timeout_secs, "timeout_secs")?.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
        let min_rate =
            positive(config.min_rate_kib, "min_rate_kib")?.map_or(DEFAULT_MIN_RATE, |k| k.saturating_mul(1024));
        let ca_pem = match &config.ca {
            None => None,
            Some(file) => Some(std::fs::read(dir.join(file)).map_err(|e| {
                ClientError::State(format!("{}: the pinned certificate {}: {e}", dir.display(), file.display()))
            })?),
        };
        let por_part_bytes = match config.por_part_kib {
            None => POR_PART_BYTES,
            Some(kib @ 4..) if kib.saturating_mul(1024) <= POR_PART_BYTES as u64 => kib as usize * 1024,
            Some(_) => {
                return Err(ClientError::State(format!(
                    "{}: config.toml: por_part_kib is 4 to {}",
                    dir.display(),
                    POR_PART_BYTES >> 10
                )))
            }
        };
        Ok(Transport { timeout, min_rate, ca_pem, por_part_bytes })
    }
}

/// The certificates of a PEM file given to `--ca`, checked.
pub(crate) fn parse_ca(pem: &[u8]) -> Result<Vec<reqwest::Certificate>, ClientError> {
    let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| ClientError::BadInput(format!("--ca: {e}")))?;
    if certs.is_empty() {
        return Err(ClientError::BadInput("--ca: no PEM certificate in the file".into()));
    }
    Ok(certs)
}

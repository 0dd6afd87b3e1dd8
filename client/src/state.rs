//! The client's state directory: all a client keeps, in three small files.
//!
//! * `config.toml`: the provider's URL (nothing secret);
//! * `secret` (mode 0600): `"vouchSK\x01" || tag key:32 || bearer token`;
//! * `state`: `"vouchST\x02" || namespace root:32 || namespace size:u64le || key
//!   fingerprint:32 || SHA-256 of the preceding bytes:32`. The checksum catches a damaged
//!   file; the fingerprint catches a state paired with another key.
//!
//! * `intent` (only while a change is unsettled): what the client is committing, written
//!   before the commit request leaves, see [`crate::intent`];
//! * `lock`: held by the one process using the directory, see [`crate::lock`].
//!
//! Every write goes to a temporary file (named by process and counter, so two writers never
//! share one) that is flushed and renamed over the old one, so a crash leaves the old state or
//! the new one, never a mix.

use crate::error::ClientError;
use crate::lock::StateLock;
use sha2::{Digest as _, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use vouch_core::Digest;

const SECRET_MAGIC: &[u8; 8] = b"vouchSK\x01";
const STATE_MAGIC: &[u8; 8] = b"vouchST\x02";
const STATE_LEN: usize = 8 + 32 + 8 + 32 + 32;

/// The namespace root and size: the client's whole view of its store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Root {
    pub digest: Digest,
    pub len: u64,
}

impl Root {
    pub fn empty() -> Self {
        Root { digest: vouch_core::FlexList::new().root(), len: 0 }
    }
}

/// The secret part: the tag key and the bearer token. Debug never shows them.
#[derive(Clone)]
pub struct Secret {
    pub key: [u8; 32],
    pub token: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    fn fingerprint(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"vouch key fingerprint");
        h.update(self.key);
        h.finalize().into()
    }
}

/// `config.toml`. Only `server` is required; the transport settings are described in
/// [`crate::Transport`].
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    pub server: String,
    /// Seconds a call may take, and a stream may wait for one frame (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Slowest average rate, in KiB/s, a streamed transfer may keep up (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rate_kib: Option<u64>,
    /// The provider's certificate or CA (PEM), relative to the state directory: over
    /// `https://` the client trusts it and nothing else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
}

/// Where `vouch init --ca` keeps the pinned certificate, in the state directory.
pub const CA_FILE: &str = "ca.pem";

/// An opened (and locked) state directory.
#[derive(Debug)]
pub struct StateDir {
    pub dir: PathBuf,
    pub config: ClientConfig,
    pub secret: Secret,
    /// The root as last saved (a client settles a lost commit behind a shared reference).
    root: Mutex<Root>,
    _lock: Arc<StateLock>,
}

fn state_err(dir: &Path, what: &str) -> ClientError {
    ClientError::State(format!("{}: {what}", dir.display()))
}

impl StateDir {
    /// Creates a new state directory with a fresh key, for the provider at `server`.
    pub fn init(dir: &Path, server: &str, token: &str) -> Result<StateDir, ClientError> {
        Self::init_pinned(dir, server, token, None)
    }

    /// [`StateDir::init`], trusting only the certificate `ca_pem` over `https://` (kept as
    /// [`CA_FILE`], written before the configuration that names it).
    pub fn init_pinned(dir: &Path, server: &str, token: &str, ca_pem: Option<&[u8]>) -> Result<StateDir, ClientError> {
        if dir.join("state").exists() {
            return Err(state_err(dir, "already initialised (remove it first to start over)"));
        }
        if token.is_empty() || token.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(ClientError::BadInput("a token is non-empty and has no spaces".into()));
        }
        std::fs::create_dir_all(dir).map_err(ClientError::io(format!("creating {}", dir.display())))?;
        let lock = StateLock::acquire(dir)?;
        if dir.join("state").exists() {
            return Err(state_err(dir, "already initialised (remove it first to start over)"));
        }
        let secret = Secret { key: rand::random(), token: token.to_string() };
        if let Some(pem) = ca_pem {
            write_atomic(&dir.join(CA_FILE), pem, false)?;
        }
        let ca = ca_pem.map(|_| PathBuf::from(CA_FILE));
        let config = ClientConfig { server: server.to_string(), ca, ..ClientConfig::default() };
        let text = toml::to_string(&config).map_err(|e| ClientError::State(e.to_string()))?;
        write_atomic(&dir.join("config.toml"), text.as_bytes(), false)?;
        let mut bytes = SECRET_MAGIC.to_vec();
        bytes.extend_from_slice(&secret.key);
        bytes.extend_from_slice(secret.token.as_bytes());
        write_atomic(&dir.join("secret"), &bytes, true)?;
        let state = StateDir { dir: dir.to_path_buf(), config, secret, root: Mutex::new(Root::empty()), _lock: lock };
        state.save_root(Root::empty())?;
        Ok(state)
    }

    pub fn open(dir: &Path) -> Result<StateDir, ClientError> {
        if !dir.join("state").exists() {
            return Err(state_err(dir, "no client state here (run `vouch init` first)"));
        }
        let lock = StateLock::acquire(dir)?;
        remove_temporaries(dir);
        let read =
            |name: &str| std::fs::read(dir.join(name)).map_err(|e| state_err(dir, &format!("cannot read {name}: {e}")));
        let config: ClientConfig = toml::from_str(&String::from_utf8_lossy(&read("config.toml")?))
            .map_err(|e| state_err(dir, &format!("config.toml: {e}")))?;
        let secret = read("secret")?;
        if secret.len() < 41 || &secret[..8] != SECRET_MAGIC {
            return Err(state_err(dir, "secret is damaged"));
        }
        let token = String::from_utf8(secret[40..].to_vec()).map_err(|_| state_err(dir, "secret is damaged"))?;
        let secret = Secret { key: secret[8..40].try_into().expect("32 bytes"), token };
        let state = read("state")?;
        if state.len() != STATE_LEN || &state[..8] != STATE_MAGIC {
            return Err(state_err(dir, "state file is damaged, or written by an older vouch (run `vouch init` again)"));
        }
        if Sha256::digest(&state[..STATE_LEN - 32]).as_slice() != &state[STATE_LEN - 32..] {
            return Err(state_err(dir, "state file is damaged (checksum mismatch)"));
        }
        if state[48..80] != secret.fingerprint() {
            return Err(state_err(dir, "the state belongs to another key (wrong secret file?)"));
        }
        let root = Root {
            digest: Digest(state[8..40].try_into().expect("32 bytes")),
            len: u64::from_le_bytes(state[40..48].try_into().expect("8 bytes")),
        };
        Ok(StateDir { dir: dir.to_path_buf(), config, secret, root: Mutex::new(root), _lock: lock })
    }

    /// The namespace root as last saved.
    pub fn root(&self) -> Root {
        *self.root.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a new namespace root, durably and atomically, then holds it in memory.
    pub fn save_root(&self, root: Root) -> Result<(), ClientError> {
        let mut bytes = STATE_MAGIC.to_vec();
        bytes.extend_from_slice(&root.digest.0);
        bytes.extend_from_slice(&root.len.to_le_bytes());
        bytes.extend_from_slice(&self.secret.fingerprint());
        let sum = Sha256::digest(&bytes);
        bytes.extend_from_slice(&sum);
        write_atomic(&self.dir.join("state"), &bytes, false)?;
        *self.root.lock().unwrap_or_else(|e| e.into_inner()) = root;
        Ok(())
    }
}

/// Removes the temporary files of writers that died before renaming them (none is writing now:
/// the caller holds the lock). Best effort: a leftover is only wasted space.
fn remove_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(|n| n.ends_with(".tmp")) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Temporary files written so far by this process (for unique names).
static TEMPORARIES: AtomicU64 = AtomicU64::new(0);

/// Writes `path` whole or not at all: a flushed temporary file renamed into place.
pub fn write_atomic(path: &Path, bytes: &[u8], private: bool) -> Result<(), ClientError> {
    let n = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("{}.{n}.tmp", std::process::id()));
    let what = format!("writing {}", path.display());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if private { 0o600 } else { 0o644 });
    }
    let mut file = options.open(&tmp).map_err(ClientError::io(what.clone()))?;
    file.write_all(bytes).map_err(ClientError::io(what.clone()))?;
    file.sync_all().map_err(ClientError::io(what.clone()))?;
    std::fs::rename(&tmp, path).map_err(ClientError::io(what.clone()))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(ClientError::io(what))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_damage_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let s = StateDir::init(dir.path(), "http://127.0.0.1:1", "tok").unwrap();
        let root = Root { digest: Digest([7; 32]), len: 3 };
        s.save_root(root).unwrap();
        assert_eq!(s.root(), root);
        assert_eq!(StateDir::open(dir.path()).unwrap().root(), root);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("secret")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(StateDir::init(dir.path(), "x", "tok").is_err(), "no silent re-init");

        let path = dir.path().join("state");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[9] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = StateDir::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");

        s.save_root(root).unwrap();
        let mut secret = std::fs::read(dir.path().join("secret")).unwrap();
        secret[8] ^= 1;
        std::fs::write(dir.path().join("secret"), &secret).unwrap();
        let err = StateDir::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("another key"), "{err}");
        assert!(format!("{:?}", StateDir::open(tempfile::tempdir().unwrap().path())).contains("vouch init"));
    }
}

//! The client's state directory: all a client keeps, in three small files.
//!
//! * `config.toml`: the provider's URL (nothing secret);
//! * `secret` (mode 0600): the tag key and the bearer token. The linear scheme's:
//!   `"vouchSK\x01" || key:32 || token`; the RSA scheme's: `"vouchSK\x02" || key
//!   length:u32le || key ([`vouch_core::pdp::rsa::RsaSecretKey::to_bytes`]) || token`;
//! * `state`: `"vouchST\x02" || namespace root:32 || namespace size:u64le || key
//!   fingerprint:32 || SHA-256 of the preceding bytes:32`. The checksum catches a damaged
//!   file; the fingerprint catches a state paired with another key.
//!
//! * `intent` (only while a change is unsettled): what the client is committing, written
//!   before the commit request leaves, see [`crate::Intent`];
//! * `lock`: held by the one process using the directory, see [`crate::lock`].
//!
//! [`StateDir`] is the directory's [`StateStore`].
//!
//! Every write goes to a temporary file (named by process and counter, so two writers never
//! share one) that is flushed and renamed over the old one, so a crash leaves the old state or
//! the new one, never a mix.

use crate::atomic::remove_temporaries;
pub use crate::atomic::write_atomic;
use crate::error::ClientError;
use crate::intent::Intent;
use crate::keys::SecretKey;
use crate::lock::StateLock;
use crate::persist::StateStore;
pub use crate::root::Root;
use crate::state_log::{self, StateLog};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use vouch_core::envelope::{self, Unsealed};
use vouch_core::Digest;

const SECRET_MAGIC: &[u8; 8] = b"vouchSK\x01";
const RSA_SECRET_MAGIC: &[u8; 8] = b"vouchSK\x02";
const INTENT_FILE: &str = "intent";
const POR_FILE: &str = "por";
const STATE_MAGIC: &[u8; 8] = b"vouchST\x02";
const STATE_LEN: usize = 8 + 32 + 8 + 32 + 32;

/// The secret part: the tag key and the bearer token. Debug never shows them.
#[derive(Clone)]
pub struct Secret {
    pub key: SecretKey,
    pub token: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    fn fingerprint(&self) -> [u8; 32] {
        self.key.fingerprint()
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        match &self.key {
            SecretKey::Linear(k) => {
                bytes.extend_from_slice(SECRET_MAGIC);
                bytes.extend_from_slice(k);
            }
            SecretKey::Rsa(k) => {
                bytes.extend_from_slice(RSA_SECRET_MAGIC);
                bytes.extend_from_slice(&(k.len() as u32).to_le_bytes());
                bytes.extend_from_slice(k);
            }
        }
        bytes.extend_from_slice(self.token.as_bytes());
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Option<Secret> {
        let (key, token) = match bytes.get(..8)? {
            m if m == SECRET_MAGIC => (SecretKey::Linear(bytes.get(8..40)?.try_into().ok()?), bytes.get(40..)?),
            m if m == RSA_SECRET_MAGIC => {
                let len = u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) as usize;
                let end = 12usize.checked_add(len)?;
                (SecretKey::Rsa(bytes.get(12..end)?.to_vec()), bytes.get(end..)?)
            }
            _ => return None,
        };
        let token = String::from_utf8(token.to_vec()).ok().filter(|t| !t.is_empty())?;
        Some(Secret { key, token })
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
    /// The most KiB of a PoR plan's answer or batch's upload in one message (default and
    /// most 24 MiB; at least 4): for a proxy in front of the provider that caps bodies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub por_part_kib: Option<u64>,
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
    /// The root and intent as last saved, and the log they are saved to (a client settles a
    /// lost commit behind a shared reference).
    log: Mutex<StateLog>,
    _lock: Arc<StateLock>,
}

/// A bearer token as the state directory can keep it.
pub(crate) fn check_token(token: &str) -> Result<(), ClientError> {
    if token.is_empty() || token.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(ClientError::BadInput("a token is non-empty and has no spaces".into()));
    }
    Ok(())
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
        Self::create(dir, server, token, ca_pem, SecretKey::Linear(rand::random()))
    }

    /// A new state directory with the key `key` (see [`SecretKey::generate`]).
    pub fn create(
        dir: &Path,
        server: &str,
        token: &str,
        ca_pem: Option<&[u8]>,
        key: SecretKey,
    ) -> Result<StateDir, ClientError> {
        if dir.join("state").exists() {
            return Err(state_err(dir, "already initialised (remove it first to start over)"));
        }
        check_token(token)?;
        std::fs::create_dir_all(dir).map_err(ClientError::io(format!("creating {}", dir.display())))?;
        let lock = StateLock::acquire(dir)?;
        if dir.join("state").exists() {
            return Err(state_err(dir, "already initialised (remove it first to start over)"));
        }
        let secret = Secret { key, token: token.to_string() };
        if let Some(pem) = ca_pem {
            write_atomic(&dir.join(CA_FILE), pem, false)?;
        }
        let ca = ca_pem.map(|_| PathBuf::from(CA_FILE));
        let config = ClientConfig { server: server.to_string(), ca, ..ClientConfig::default() };
        let text = toml::to_string(&config).map_err(|e| ClientError::State(e.to_string()))?;
        write_atomic(&dir.join("config.toml"), text.as_bytes(), false)?;
        write_atomic(&dir.join("secret"), &secret.to_bytes(), true)?;
        let path = dir.join("state");
        let fingerprint = secret.fingerprint();
        let log = state_log::fresh(Root::empty(), None, &fingerprint);
        write_atomic(&path, &log, false)?;
        let held = state_log::Folded { root: Root::empty(), intent: None, whole: log.len() as u64 };
        let log = Mutex::new(StateLog::open(&path, fingerprint, held)?);
        Ok(StateDir { dir: dir.to_path_buf(), config, secret, log, _lock: lock })
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
        let secret = Secret::from_bytes(&read("secret")?).ok_or_else(|| state_err(dir, "secret is damaged"))?;
        let path = dir.join("state");
        let fingerprint = secret.fingerprint();
        let bytes = read("state")?;
        let held = match state_log::fold(&bytes, &fingerprint) {
            Ok(held) => {
                // Left by a crash while this layout replaced the one before: the log holds it.
                let _ = std::fs::remove_file(dir.join(INTENT_FILE));
                held
            }
            Err(state_log::Unreadable::OtherKey) => return Err(other_key(dir)),
            Err(state_log::Unreadable::Damaged) => upgrade(dir, &bytes, &fingerprint)?,
        };
        let log = Mutex::new(StateLog::open(&path, fingerprint, held)?);
        Ok(StateDir { dir: dir.to_path_buf(), config, secret, log, _lock: lock })
    }

    /// Whether the state directory `dir` holds an unsettled change, read without its lock
    /// (for a watcher of another process: an append under way reads as not there yet).
    pub fn peek_unsettled(dir: &Path) -> Result<bool, ClientError> {
        let read = |name: &str| std::fs::read(dir.join(name)).map_err(ClientError::io(format!("reading {name}")));
        let secret = Secret::from_bytes(&read("secret")?).ok_or_else(|| state_err(dir, "secret is damaged"))?;
        match state_log::fold(&read("state")?, &secret.fingerprint()) {
            Ok(held) => Ok(held.intent.is_some()),
            Err(_) => Err(state_err(dir, "state file is damaged, or of the layout before the log")),
        }
    }

    /// The namespace root as last saved.
    pub fn root(&self) -> Root {
        self.log().root()
    }

    /// Records a new namespace root, durably and atomically, then holds it in memory.
    pub fn save_root(&self, root: Root) -> Result<(), ClientError> {
        self.log().save_root(root)
    }

    /// The intent in the directory, if a change is unsettled.
    pub fn intent(&self) -> Result<Option<Intent>, ClientError> {
        let log = self.log();
        let Some(bytes) = log.intent() else { return Ok(None) };
        Intent::from_bytes(bytes).map(Some).ok_or_else(|| {
            ClientError::State(format!(
                "{}: the intent of an unsettled change has a layout this vouch does not know (written by a \
                 newer one?): settle it with that version",
                self.dir.display()
            ))
        })
    }

    fn log(&self) -> std::sync::MutexGuard<'_, StateLog> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn other_key(dir: &Path) -> ClientError {
    state_err(dir, "the state belongs to another key (wrong secret file?)")
}

/// The root and intent of a state directory of the layout before the log (the root alone in
/// `state`, the intent in a file of its own), rewritten as a log: the log first, durably,
/// then the intent file removed.
fn upgrade(dir: &Path, state: &[u8], fingerprint: &[u8; 32]) -> Result<state_log::Folded, ClientError> {
    let unknown = || state_err(dir, "state file is damaged, or written by an older vouch (run `vouch init` again)");
    let body = match envelope::open(state, &[STATE_MAGIC]) {
        Ok((_, body)) if body.len() == STATE_LEN - 8 - 32 => body,
        Err(Unsealed::Damaged) => return Err(state_err(dir, "state file is damaged (checksum mismatch)")),
        _ => return Err(unknown()),
    };
    if body[40..72] != fingerprint[..] {
        return Err(other_key(dir));
    }
    let root = Root {
        digest: Digest(body[..32].try_into().expect("32 bytes")),
        len: u64::from_le_bytes(body[32..40].try_into().expect("8 bytes")),
    };
    let intent_path = dir.join(INTENT_FILE);
    let intent = match std::fs::read(&intent_path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(ClientError::io(format!("reading {}", intent_path.display()))(e)),
    };
    if intent.as_deref().is_some_and(|b| Intent::from_bytes(b).is_none()) {
        return Err(ClientError::State(format!(
            "{} is damaged: a change may be unsettled; check the name it was about with `vouch log`, then \
             remove the file",
            intent_path.display()
        )));
    }
    let log = state_log::fresh(root, intent.as_deref(), fingerprint);
    write_atomic(&dir.join("state"), &log, false)?;
    if intent.is_some() {
        std::fs::remove_file(&intent_path).map_err(ClientError::io(format!("removing {}", intent_path.display())))?;
    }
    Ok(state_log::Folded { root, intent, whole: log.len() as u64 })
}

impl StateStore for StateDir {
    fn load(&self) -> Result<(Root, Option<Intent>), ClientError> {
        Ok((self.root(), self.intent()?))
    }

    fn save_root(&self, root: Root) -> Result<(), ClientError> {
        StateDir::save_root(self, root)
    }

    fn save_intent(&self, intent: &Intent) -> Result<(), ClientError> {
        self.log().save_intent(&intent.to_bytes())
    }

    /// Durable: an intent proven not applied must not come back, to be settled again against
    /// a provider that changed its answer.
    fn clear_intent(&self) -> Result<(), ClientError> {
        self.log().settle()
    }

    /// The root and the intent's end in one record, one sync.
    fn adopt(&self, root: Root) -> Result<(), ClientError> {
        self.log().adopt(root)
    }

    fn load_por(&self) -> Result<Option<Vec<u8>>, ClientError> {
        let path = self.dir.join(POR_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ClientError::io(format!("reading {}", path.display()))(e)),
        }
    }

    fn save_por(&self, record: &[u8]) -> Result<(), ClientError> {
        write_atomic(&self.dir.join(POR_FILE), record, false)
    }
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

        // A damaged record with a whole one after it: damage, not a write cut short.
        let path = dir.path().join("state");
        let good = std::fs::read(&path).unwrap();
        let mut bytes = good.clone();
        bytes[9] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = StateDir::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");

        std::fs::write(&path, &good).unwrap();
        let mut secret = std::fs::read(dir.path().join("secret")).unwrap();
        secret[8] ^= 1;
        std::fs::write(dir.path().join("secret"), &secret).unwrap();
        let err = StateDir::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("another key"), "{err}");
        assert!(format!("{:?}", StateDir::open(tempfile::tempdir().unwrap().path())).contains("vouch init"));
    }

    #[test]
    fn both_secret_formats_round_trip_and_the_linear_one_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let linear = dir.path().join("linear");
        let s = StateDir::init(&linear, "http://127.0.0.1:1", "tok").unwrap();
        let SecretKey::Linear(key) = s.secret.key else { panic!("a linear key") };
        let bytes = std::fs::read(linear.join("secret")).unwrap();
        assert_eq!(bytes, [&SECRET_MAGIC[..], &key[..], b"tok"].concat(), "the version 1 layout");

        // The RSA layout, with stand-in key bytes (the state directory does not parse them).
        let rsa = dir.path().join("rsa");
        let key = SecretKey::Rsa((0..300u32).map(|i| i as u8).collect());
        drop(StateDir::create(&rsa, "http://127.0.0.1:1", "tok2", None, key.clone()).unwrap());
        let opened = StateDir::open(&rsa).unwrap();
        assert_eq!((&opened.secret.key, opened.secret.token.as_str()), (&key, "tok2"));
        drop(opened);
        let path = rsa.join("secret");
        let good = std::fs::read(&path).unwrap();
        for cut in [9, 12, 100, 312] {
            std::fs::write(&path, &good[..cut]).unwrap();
            let err = StateDir::open(&rsa).unwrap_err();
            assert!(err.to_string().contains("secret is damaged"), "cut at {cut}: {err}");
        }
    }

    #[test]
    fn the_intent_is_kept_replaced_settled_and_adopted_across_opens() {
        use crate::intent::Planned;
        let dir = tempfile::tempdir().unwrap();
        let s = StateDir::init(dir.path(), "http://127.0.0.1:1", "tok").unwrap();
        assert_eq!(s.load().unwrap(), (Root::empty(), None));
        let old = Root { digest: Digest([1; 32]), len: 2 };
        let reopened = |s: StateDir| {
            drop(s);
            let s = StateDir::open(dir.path()).unwrap();
            (s.load().unwrap(), s)
        };
        for change in [Planned::Remove, Planned::Prune(vec![0, 3])] {
            let intent = Intent::one(old, "a/b", change, crate::intent::new_attempt());
            s.save_intent(&intent).unwrap();
            assert_eq!(s.intent().unwrap(), Some(intent));
        }
        s.clear_intent().unwrap();
        assert_eq!(s.intent().unwrap(), None);
        s.clear_intent().unwrap();
        let adopted = Intent::one(old, "c", Planned::Remove, crate::intent::new_attempt());
        s.save_intent(&adopted).unwrap();
        let ((root, intent), s) = reopened(s);
        assert_eq!((root, intent), (Root::empty(), Some(adopted)));
        let new = Root { digest: Digest([2; 32]), len: 3 };
        s.adopt(new).unwrap();
        assert_eq!(s.load().unwrap(), (new, None), "an adopted change's intent goes with its root");
        let (held, _s) = reopened(s);
        assert_eq!(held, (new, None));
    }

    /// A state directory of the layout before the log (the root alone in `state`, the intent
    /// in a file of its own) opens with both, rewritten as a log.
    #[test]
    fn a_state_of_the_layout_before_the_log_opens_with_its_root_and_intent() {
        use crate::intent::Planned;
        let dir = tempfile::tempdir().unwrap();
        let s = StateDir::init(dir.path(), "http://127.0.0.1:1", "tok").unwrap();
        let root = Root { digest: Digest([5; 32]), len: 4 };
        let intent = Intent::one(root, "n", Planned::Remove, crate::intent::new_attempt());
        let body = [&root.digest.0[..], &root.len.to_le_bytes(), &s.secret.fingerprint()].concat();
        drop(s);
        std::fs::write(dir.path().join("state"), envelope::seal(STATE_MAGIC, &body)).unwrap();
        std::fs::write(dir.path().join(INTENT_FILE), intent.to_bytes()).unwrap();
        let s = StateDir::open(dir.path()).unwrap();
        assert_eq!(s.load().unwrap(), (root, Some(intent.clone())));
        assert!(!dir.path().join(INTENT_FILE).exists(), "the intent moved into the log");
        drop(s);
        assert_eq!(StateDir::open(dir.path()).unwrap().load().unwrap(), (root, Some(intent)));

        // A damaged intent file of that layout is reported, not dropped.
        let s = StateDir::open(dir.path()).unwrap();
        drop(s);
        std::fs::write(dir.path().join("state"), envelope::seal(STATE_MAGIC, &body)).unwrap();
        let mut bytes = Intent::one(root, "m", Planned::Remove, Default::default()).to_bytes();
        bytes[10] ^= 1;
        std::fs::write(dir.path().join(INTENT_FILE), bytes).unwrap();
        let err = StateDir::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");
    }
}

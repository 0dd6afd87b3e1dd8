//! The client: what it is made of (its keys, its root's ledger, its transport, its cache) and
//! how it is made. Its operations are in the modules of what they do, each checking every
//! answer against the namespace root (through the pure checks of [`crate::verify`]) before
//! anything is returned, written or saved: reads in `crate::reads`, commits in
//! `crate::commit`, puts in `crate::put` and `crate::staged`, edits in `crate::edits`, the PoR
//! log in `crate::por`. The concurrency model is in the crate documentation.

use crate::cache::ReadCache;
use crate::error::ClientError;
use crate::keys::{ClientKey, KeyChoice, Keys, SecretKey};
use crate::ledger::Ledger;
use crate::lock::NameLocks;
use crate::persist::{MemoryState, StateStore};
use crate::remote::Remote;
use crate::root::Root;
use crate::state::StateDir;
use crate::transport::Transport;
use crate::waiting::Waiting;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a client is made of, without a directory: its key and where its root and intent
/// persist (see [`Client::new`]).
#[derive(Debug)]
pub struct ClientState {
    pub key: ClientKey,
    pub store: Arc<dyn StateStore>,
}

impl ClientState {
    /// A new client's state, in memory: `key` and the empty namespace.
    pub fn in_memory(key: ClientKey) -> ClientState {
        ClientState { key, store: Arc::new(MemoryState::new(Root::empty())) }
    }
}

/// A client: `Send + Sync`, to be shared (`Arc<Client>`) by every task of a process; see the
/// crate documentation for what concurrent calls see.
pub struct Client(Arc<Parts>);

/// What a client is made of, behind one `Arc`: the work a client starts on a task of its own
/// (a group's commit, which outlives the call that began it: see `crate::group`) holds a
/// handle of it ([`Client::handle`]).
pub struct Parts {
    pub(crate) remote: Remote,
    pub(crate) keys: Arc<Keys>,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) cache: ReadCache,
    /// Names with a put in progress (see `crate::staged`).
    pub(crate) uploading: NameLocks,
    /// Staged puts waiting for the commit lock (see `crate::group`).
    pub(crate) waiting: Waiting,
    dir: Option<PathBuf>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("dir", &self.dir).field("remote", &self.remote).finish()
    }
}

/// A client of `keys`, over the root and intent `store` holds, talking to `remote`; `dir`, its
/// state directory when it has one. [`Client::new`] and [`Client::open`] make an owner's
/// client, `crate::public` an auditor's.
pub(crate) fn assemble(
    keys: Keys,
    store: Arc<dyn StateStore>,
    remote: Remote,
    dir: Option<PathBuf>,
) -> Result<Client, ClientError> {
    let ledger = Arc::new(Ledger::load(store)?);
    Ok(Client(Arc::new(Parts {
        remote,
        keys: Arc::new(keys),
        ledger,
        cache: ReadCache::default(),
        uploading: NameLocks::default(),
        waiting: Waiting::default(),
        dir,
    })))
}

impl std::ops::Deref for Client {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        &self.0
    }
}

impl Client {
    /// Another handle of this client (the same parts), for a task of its own.
    pub(crate) fn handle(&self) -> Client {
        Client(self.0.clone())
    }
}

impl Client {
    /// A client over `state`, talking to `remote`: no directory (the state's store keeps the
    /// root and intent, see [`StateStore`]).
    pub fn new(state: ClientState, remote: Remote) -> Result<Client, ClientError> {
        assemble(Keys::Owner(state.key), state.store, remote, None)
    }

    /// Opens the client whose state is in `dir` (and holds its lock while it lives). Open a
    /// directory once per process and share the client: two clients opened on one directory
    /// share its lock but not their roots, so one's commits look like lies to the other.
    pub fn open(dir: &Path) -> Result<Client, ClientError> {
        let state = StateDir::open(dir)?;
        let transport = crate::transport::Transport::from_config(&state.dir, &state.config)?;
        let remote = Remote::with(&state.config.server, &state.secret.token, &transport)?;
        let key = ClientKey::from_secret(&state.secret.key)?;
        let dir = state.dir.clone();
        assemble(Keys::Owner(key), Arc::new(state), remote, Some(dir))
    }

    /// Creates a client state in `dir` (fresh linear key) for the provider at `server`.
    pub fn init(dir: &Path, server: &str, token: &str) -> Result<Client, ClientError> {
        Remote::new(server, token)?;
        StateDir::init(dir, server, token)?;
        Client::open(dir)
    }

    /// Creates a client state in `dir` with a fresh key of the scheme `choice` (an RSA key
    /// takes seconds to generate) for the provider at `server`; over `https://` with `ca`,
    /// trusting only the certificate (or CA) in that PEM file, copied into the directory.
    pub fn create(
        dir: &Path,
        server: &str,
        token: &str,
        ca: Option<&Path>,
        choice: KeyChoice,
    ) -> Result<Client, ClientError> {
        let pem = match ca {
            Some(ca) => Some(std::fs::read(ca).map_err(ClientError::io(format!("reading {}", ca.display())))?),
            None => None,
        };
        let transport = Transport { ca_pem: pem, ..Transport::default() };
        crate::remote::Remote::with(server, token, &transport)?;
        crate::state::check_token(token)?;
        if dir.join("state").exists() {
            return Err(ClientError::State(format!(
                "{}: already initialised (remove it first to start over)",
                dir.display()
            )));
        }
        StateDir::create(dir, server, token, transport.ca_pem.as_deref(), SecretKey::generate(choice)?)?;
        Client::open(dir)
    }

    /// The namespace root as saved (before a change left unsettled by a crash is settled: every
    /// operation that talks to the provider settles it first; [`Client::settled_root`] does).
    pub fn root(&self) -> Root {
        self.ledger.root()
    }

    /// The owner's key (`None` for a public auditor's client).
    pub fn key(&self) -> Option<&ClientKey> {
        self.keys.owner().ok()
    }

    /// The provider: its URL ([`Remote::url`]), its health ([`Remote::health`]) and its
    /// reported time for the last request ([`Remote::last_server_time`], measurements only;
    /// not verified).
    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    /// The cache of verified answers (blocks, lookups, the listing) that serves reads without
    /// the provider: the portal's cache (Iris Sec. 7.2), off by default. Sized with
    /// [`ReadCache::resize`]; its hits, misses and size in [`ReadCache::stats`].
    pub fn cache(&self) -> &ReadCache {
        &self.cache
    }
}

//! Test support shared by the client's end-to-end tests: a real provider server on
//! 127.0.0.1 over a temporary directory, and a client initialised against it.

pub mod por;

use std::path::{Path, PathBuf};
use vouch_client::state::StateDir;
use vouch_client::{Client, SecretKey, ViolationKind};
use vouch_misbehave::{Misbehave, Misbehaving};
use vouch_server::{Blocks, RunningServer, ServeOptions};
use vouch_testkit::provider;

/// Alice's token; Bob (another namespace on the same provider) has [`TOKEN_BOB`].
pub use provider::{TOKEN, TOKEN_BOB};
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub state: PathBuf,
    /// The provider's directory: its metadata, and its blobs unless they are in S3.
    pub data: PathBuf,
    pub blocks: Blocks,
    pub server: Option<RunningServer<Misbehaving>>,
}

pub async fn start(data: &Path, misbehave: Misbehave) -> RunningServer<Misbehaving> {
    start_on(data, &Blocks::Local, misbehave).await
}

/// A provider over `data` with its blobs in `blocks`, for Alice and Bob.
pub async fn start_on(data: &Path, blocks: &Blocks, misbehave: Misbehave) -> RunningServer<Misbehaving> {
    provider::start(data, blocks, misbehave, ServeOptions::default(), provider::ALICE_AND_BOB).await
}

impl Setup {
    pub async fn new(misbehave: Misbehave) -> Setup {
        Setup::on(Blocks::Local, misbehave).await
    }

    /// [`Setup::new`] with the provider's blobs in `blocks` (e.g. a MinIO bucket).
    pub async fn on(blocks: Blocks, misbehave: Misbehave) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("provider");
        let server = start_on(&data, &blocks, misbehave).await;
        let state = dir.path().join("client");
        Client::init(&state, &format!("http://{}", server.addr), TOKEN).unwrap();
        Setup { state, data, blocks, server: Some(server), dir }
    }

    /// [`Setup::new`] with Alice's client holding `key` (e.g. one RSA key made once per test
    /// binary: generating one takes a while).
    pub async fn with_key(misbehave: Misbehave, key: SecretKey) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("provider");
        let server = start(&data, misbehave).await;
        let state = dir.path().join("client");
        StateDir::create(&state, &format!("http://{}", server.addr), TOKEN, None, key).unwrap();
        Setup { state, data, blocks: Blocks::Local, server: Some(server), dir }
    }

    pub fn client(&self) -> Client {
        Client::open(&self.state).unwrap()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.server.as_ref().unwrap().addr)
    }

    /// Stops the provider as a crash would (what it holds in memory only is lost: see
    /// `RunningServer::crash`) and starts it again over the same data, on the same address,
    /// honest, with `options`.
    pub async fn crash_and_restart(&mut self, options: ServeOptions) {
        let server = self.server.take().unwrap();
        let addr = server.addr.to_string();
        server.crash().await.unwrap();
        let provider = provider::lying(&self.data, &self.blocks, Misbehave::None);
        self.server = Some(provider::serve(&addr, provider, options, provider::ALICE_AND_BOB).await);
    }

    /// Restarts the provider over the same data, behaving as told.
    pub async fn restart(&mut self, misbehave: Misbehave) {
        self.server.take().unwrap().shutdown().await.unwrap();
        let server = start_on(&self.data, &self.blocks, misbehave).await;
        // The client state names the server's address: rewrite it for the new port.
        let config = format!("server = \"http://{}\"\n", server.addr);
        std::fs::write(self.state.join("config.toml"), config).unwrap();
        self.server = Some(server);
    }
}

pub use vouch_testkit::sample;

/// `result` must be a caught lie, caught by the check for `kind`: a lie caught by another
/// check than the one it should trip fails the test.
#[track_caller]
pub fn assert_violation<T: std::fmt::Debug>(
    result: Result<T, vouch_client::ClientError>,
    kind: ViolationKind,
    what: &str,
) {
    match result {
        Err(vouch_client::ClientError::Misbehaved(v)) if v.kind == kind => {}
        other => panic!("{what}: expected the violation {kind}, got {other:?}"),
    }
}

/// A 1024-bit RSA key, made once per test binary (small keys keep the tests quick).
pub fn rsa_key() -> SecretKey {
    static KEY: std::sync::OnceLock<SecretKey> = std::sync::OnceLock::new();
    KEY.get_or_init(|| SecretKey::generate(vouch_client::KeyChoice::Rsa { bits: 1024 }).unwrap()).clone()
}

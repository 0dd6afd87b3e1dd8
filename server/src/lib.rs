//! vouch-server: the provider, untrusted by design.
//!
//! It stores each client's blocks and authenticated structures (a namespace of names, each
//! with versions, each a FlexList of PDP-tagged blocks; see `vouch_core::namespace`) on a
//! [`vouch_store`] backend, and answers every read, change and challenge with the proofs the
//! client checks against its one root digest. The server serves any [`Service`]: the honest
//! [`Provider`], or a decorator around it (the test kit's liar, in its own crate, so that tests
//! and `vouch demo` can show each lie caught while no lie is in a real server's path).
#![forbid(unsafe_code)]

mod config;
mod http;
mod keys;
mod limits;
mod listen;
mod open;
mod provider;
mod request_error;
mod service;
mod vicos;
pub use vouch_proto::tls;

pub use config::{hex32, token_hash, ClientCredential, LimitSettings, ServerConfig, ServerConfigError};
pub use limits::Limits;
pub use open::{check_dir, rebuild_dir, Blocks, OpenError};
pub use provider::{
    committed_puts, only_outcome, Batch, Challenged, FilesError, HeldBlocks, Planned, PorError, Prepared, Proven,
    Provider, ProviderError, PutState, ReadPlan, RequestError, Steps, MAX_CHALLENGE,
};
pub use service::{Answer, Service};
pub use vicos::{AipMessage, CosReader, CosUpload, GroupError};
pub use vouch_store::{CheckReport, Compaction, CompactionPolicy, Faults, Problem, RebuildReport};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: String, source: std::io::Error },
    #[error(transparent)]
    Config(#[from] ServerConfigError),
}

/// A server answering on its own tasks until [`RunningServer::shutdown`], serving `S`.
#[derive(Debug)]
pub struct RunningServer<S = Provider> {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    /// The background housekeeping (see [`Maintenance`]), stopped with the server.
    maintenance: Option<tokio::task::JoinHandle<()>>,
    /// The provider: held here so that, once the connection tasks have let go of it, this is
    /// the last owner and closes its store before `shutdown` returns.
    app: Arc<http::App>,
    /// The same provider as the front's, as its own type.
    provider: Arc<S>,
}

impl<S: Service> RunningServer<S> {
    /// The provider behind the server (tests read what a misbehaving one recorded).
    pub fn provider(&self) -> &S {
        &self.provider
    }

    /// Stops accepting, lets requests in flight finish, and waits until the provider's store
    /// is closed (so another provider can open it).
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        self.stop();
        self.wait().await
    }

    /// Stops as a crash would for what the provider holds in memory only: requests in flight
    /// finish, then the provider is dropped without being closed, so the VICOS COMMITs it
    /// answered and has not written yet are lost (what its stores made durable stays). For
    /// the tests of recovery from a crash.
    pub async fn crash(mut self) -> std::io::Result<()> {
        self.stop();
        self.end(false).await
    }

    /// Waits until the server stops (for `vouch serve`, on Ctrl-C) and its store is closed.
    pub async fn wait(self) -> std::io::Result<()> {
        self.end(true).await
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Waits until the server stops and the connections let go of the provider, which is
    /// then closed (`close`) or dropped as it is.
    async fn end(self, close: bool) -> std::io::Result<()> {
        let served = self.task.await.map_err(std::io::Error::other);
        if let Some(maintenance) = self.maintenance {
            // Stopped at an await point: a compaction cut short leaves only objects nobody
            // names, which the next start sweeps.
            maintenance.abort();
            let _ = maintenance.await;
        }
        let served = served?;
        // Connection tasks end just after the server future; give them a few seconds.
        for _ in 0..500 {
            if Arc::strong_count(&self.app) == 1 {
                if close {
                    if let Err(e) = self.app.provider.close().await {
                        tracing::warn!("could not copy the metadata log to the blob store at shutdown: {e}");
                    }
                }
                drop(self.app);
                return served;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        served.and(Err(std::io::Error::other("connections still hold the provider after shutdown")))
    }
}

/// How a server serves, beyond its address: its limits, TLS, and its housekeeping.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub limits: Limits,
    /// Serve `https://` with this configuration (see [`tls::load`]); plain `http://` without.
    pub tls: Option<tls::TlsConfig>,
    /// Compaction in the background (`None`: never).
    pub maintenance: Option<Maintenance>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions { limits: Limits::default(), tls: None, maintenance: Some(Maintenance::default()) }
    }
}

/// Background housekeeping: every `every`, a compaction run as `policy` says (and, when enough
/// copies of the metadata log have piled up, a snapshot of it). Reads go on meanwhile; a
/// commit waits only for the compaction's final switch.
#[derive(Clone, Debug, PartialEq)]
pub struct Maintenance {
    pub every: std::time::Duration,
    pub policy: CompactionPolicy,
}

impl Default for Maintenance {
    fn default() -> Self {
        Maintenance { every: std::time::Duration::from_secs(60), policy: CompactionPolicy::default() }
    }
}

/// Binds `listen` (port 0 picks a free one) and serves `provider` (a [`Provider`], or a
/// decorator around one) to the clients whose token hashes `clients` maps to their names, with the
/// default [`ServeOptions`]. Stops gracefully when `until` completes.
pub async fn start<S: Service>(
    listen: &str,
    provider: S,
    clients: HashMap<[u8; 32], String>,
    until: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<RunningServer<S>, StartError> {
    start_with(listen, provider, clients, ServeOptions::default(), until).await
}

/// [`start`] with the given limits and TLS. Before serving, deletes the segments no committed
/// entry names (uploads a crash or a failed commit abandoned; see `Provider::sweep_orphans`).
pub async fn start_with<S: Service>(
    listen: &str,
    provider: S,
    clients: HashMap<[u8; 32], String>,
    options: ServeOptions,
    until: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<RunningServer<S>, StartError> {
    let provider = Arc::new(provider);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| StartError::Listen { addr: listen.to_string(), source })?;
    let addr = listener.local_addr().map_err(|source| StartError::Listen { addr: listen.to_string(), source })?;
    // Housekeeping, not a reason to refuse service: a failed sweep is retried at the next start.
    match provider.sweep_orphans().await {
        Ok(0) => {}
        Ok(n) => tracing::info!("deleted {n} orphan segments of abandoned uploads"),
        Err(e) => tracing::warn!("could not sweep orphan segments: {e}"),
    }
    let listener = listen::Accepted::start(listener, options.tls, options.limits.stream_idle)
        .map_err(|source| StartError::Listen { addr: listen.to_string(), source })?;
    provider.honest().groups().set_idle(options.limits.group_idle);
    provider.honest().groups().set_page_bytes(options.limits.aip_page_bytes);
    provider.honest().groups().set_flush_after(options.limits.vicos_flush_after);
    let app = Arc::new(http::App { provider: provider.clone(), clients, limits: options.limits });
    let maintenance = options.maintenance.map(|m| tokio::spawn(maintain(Arc::downgrade(&app), m)));
    let held = app.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        tokio::select! {
            _ = until => {}
            _ = stopped => {}
        }
    };
    let task =
        tokio::spawn(async move { axum::serve(listener, http::router(app)).with_graceful_shutdown(shutdown).await });
    Ok(RunningServer { addr, stop: Some(stop), task, maintenance, app: held, provider })
}

/// The routes [`start_with`] serves, with no listener: for a caller in this process (the
/// simulator's link) to send requests through [`InProcess::call`], to the same handlers, limits
/// and authentication. Sweeps orphans as a start does; runs no maintenance.
pub async fn in_process<S: Service>(
    provider: S,
    clients: HashMap<[u8; 32], String>,
    limits: Limits,
) -> Result<InProcess<S>, ProviderError> {
    let provider = Arc::new(provider);
    provider.sweep_orphans().await?;
    provider.honest().groups().set_idle(limits.group_idle);
    provider.honest().groups().set_page_bytes(limits.aip_page_bytes);
    provider.honest().groups().set_flush_after(limits.vicos_flush_after);
    let app = Arc::new(http::App { provider: provider.clone(), clients, limits });
    Ok(InProcess { router: http::router(app), provider })
}

/// A provider's routes in this process (see [`in_process`]).
pub struct InProcess<S> {
    router: axum::Router,
    provider: Arc<S>,
}

impl<S> InProcess<S> {
    pub fn provider(&self) -> &S {
        &self.provider
    }

    /// One request through the routes, as the HTTP server would hand it over.
    pub async fn call(&self, request: axum::http::Request<axum::body::Body>) -> axum::http::Response<axum::body::Body> {
        use tower::ServiceExt;
        match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// Runs the housekeeping until the server is gone.
async fn maintain(app: std::sync::Weak<http::App>, m: Maintenance) {
    let mut every = tokio::time::interval(m.every.max(std::time::Duration::from_millis(1)));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    loop {
        every.tick().await;
        let Some(app) = app.upgrade() else { return };
        match app.provider.maintain(&m.policy).await {
            Ok(done) if done.deleted_segments > 0 => tracing::info!(
                "compaction: {} segments rewritten, {} blocks moved, {} segments deleted, {} bytes back",
                done.rewritten_segments,
                done.moved_blocks,
                done.deleted_segments,
                done.reclaimed_bytes
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!("compaction: {e} (tried again later)"),
        }
    }
}

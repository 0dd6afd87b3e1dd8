//! The gateway's HTTP servers: s3s's service over hyper, one task per connection, each
//! request timed and counted; `/metrics` on a listener of its own; the background audits (own
//! namespace) or the group's passive AIP work (group mode).
//!
//! Of a request not yet authenticated nothing is read past its head: a connection has
//! `header_read_timeout_secs` for its TLS handshake and for each request head (idle or slow,
//! it is closed), at most `max_connections` are served at once, and what s3s would read before
//! it authenticates (a POST form) is refused from the head ([`crate::refuse`]).

use crate::background::Background;
use crate::config::GatewayConfig;
use crate::errors::VIOLATION_HEADER;
use crate::front::Front;
use crate::group::GroupGateway;
use crate::metrics::Metrics;
use crate::s3::Gateway;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use s3s::auth::SimpleAuth;
use s3s::config::{S3Config, StaticConfigProvider};
use s3s::service::{S3Service, S3ServiceBuilder};
use s3s::S3;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use vouch_client::vicos::Group;
use vouch_client::Client;

/// A gateway serving until [`RunningGateway::shutdown`].
pub struct RunningGateway {
    pub addr: SocketAddr,
    /// Where `/metrics` is served, when configured.
    pub metrics_addr: Option<SocketAddr>,
    pub metrics: Arc<Metrics>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    background: Background,
}

impl RunningGateway {
    /// Stops accepting connections, closes each open one after its request in flight, stops
    /// the audits, and waits for all of it to end: no commit of this gateway's runs after
    /// this returns, so a client opened next on the same state finds the provider where it
    /// left it.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        // Connections end after their request in flight; a delayed prune begun ends too.
        self.background.finish().await;
    }
}

/// Serves `client` as an S3 endpoint on `config.listen` (and its metrics and audits, as
/// configured). The client's cache is set to `config.cache_mb`.
pub async fn start(config: &GatewayConfig, client: Arc<Client>) -> std::io::Result<RunningGateway> {
    client.cache().resize(config.cache_mb << 20);
    let metrics = Arc::new(Metrics::new(client.clone()));
    let options = (config.por, Duration::from_secs(config.keep_replaced_secs), deadlines(config));
    let gateway = |background| Front::new(Gateway::new(client.clone(), metrics.clone(), options, background));
    let mut running = listen(config, metrics.clone(), gateway).await?;
    if let Some(audit) = &config.audit {
        let stopping = running.background.stopping();
        running.tasks.push(crate::audit::spawn(client, audit.clone(), metrics, stopping));
    }
    Ok(running)
}

/// Serves the VICOS group `group` (this gateway one of its members) as an S3 endpoint on
/// `config.listen`, with its metrics as configured, and does the group's passive AIP work
/// every few seconds while it runs (see [`crate::group`] for what it serves and how). `por` and `[audit]` apply to a
/// client's own namespace: they are refused here. The caller saves the member's AIP state
/// ([`Group::save`]) after [`RunningGateway::shutdown`].
pub async fn start_group(config: &GatewayConfig, group: Arc<Group>) -> std::io::Result<RunningGateway> {
    if config.por || config.audit.is_some() {
        let why = "por and [audit] apply to a client's own namespace, not to a group gateway";
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
    }
    let metrics = Arc::new(Metrics::without_cache());
    let gateway = |background| Front::new(GroupGateway::new(group.clone(), background, deadlines(config)));
    let mut running = listen(config, metrics.clone(), gateway).await?;
    let stopping = running.background.stopping();
    running.tasks.push(crate::group::spawn_helper(group.clone(), metrics, stopping));
    tracing::info!("vouch gateway serving VICOS group {}", group.name());
    Ok(running)
}

/// How slowly an application's body may arrive, in either mode.
fn deadlines(config: &GatewayConfig) -> crate::stream::Deadlines {
    crate::stream::Deadlines {
        idle: Duration::from_secs(config.body_idle_timeout_secs.max(1)),
        min_rate: config.body_min_rate_kib << 10,
    }
}

/// What both modes share: the S3 service over `gateway` (made with the gateway's background
/// tasks) with the configured access keys, on `config.listen` (over TLS when configured),
/// each request counted into `metrics`; and `/metrics` when configured.
async fn listen<G: S3>(
    config: &GatewayConfig,
    metrics: Arc<Metrics>,
    gateway: impl FnOnce(Background) -> G,
) -> std::io::Result<RunningGateway> {
    let (stop, stopped) = watch::channel(false);
    let background = Background::new(stopped);
    let service = s3_service(config, gateway(background.clone()));
    let listener = TcpListener::bind(&config.listen).await?;
    let addr = listener.local_addr()?;
    let counted = metrics.clone();
    let s3 = move |req| {
        let (service, metrics) = (service.clone(), counted.clone());
        async move { Ok::<_, Infallible>(counted_call(&service, &metrics, req).await) }
    };
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => {
            let loaded = vouch_proto::tls::load(cert, key).map_err(std::io::Error::other)?;
            Some(tokio_rustls::TlsAcceptor::from(loaded))
        }
        _ => None,
    };
    let limits = Limits {
        header_read: Duration::from_secs(config.header_read_timeout_secs.max(1)),
        connections: Arc::new(Semaphore::new(config.max_connections.max(1))),
        counted: Some(metrics.clone()),
    };
    let mut tasks = vec![serve(listener, tls, background.clone(), limits.clone(), s3)];
    let mut metrics_addr = None;
    if let Some(listen) = &config.metrics_listen {
        let listener = TcpListener::bind(listen).await?;
        metrics_addr = Some(listener.local_addr()?);
        let scraped = metrics.clone();
        let handler = move |req: http::Request<Incoming>| {
            let answer = metrics_response(req.uri().path(), &scraped);
            async move { Ok::<_, Infallible>(answer) }
        };
        tasks.push(sample_cache(metrics.clone(), background.stopping()));
        // A semaphore of its own: scrapes are served while applications hold every S3 slot.
        let limits =
            Limits { connections: Arc::new(Semaphore::new(config.max_connections.max(1))), counted: None, ..limits };
        tasks.push(serve(listener, None, background.clone(), limits, handler));
    }
    tracing::info!("vouch gateway listening on {addr}");
    Ok(RunningGateway { addr, metrics_addr, metrics, stop, tasks, background })
}

/// s3s's service over `gateway`, with the configured access keys and refusals.
fn s3_service(config: &GatewayConfig, gateway: impl S3) -> S3Service {
    let mut auth = SimpleAuth::new();
    for key in &config.keys {
        auth.register(key.access_key.clone(), key.secret_key.clone().into());
    }
    let mut builder = S3ServiceBuilder::new(gateway);
    builder.set_auth(auth);
    builder.set_access(crate::refuse::Refusals);
    if let Some(domain) = &config.virtual_host_domain {
        builder.set_host(crate::hosts::VirtualHosts::new(domain));
    }
    builder.set_config(Arc::new(StaticConfigProvider::new(Arc::new(s3s_limits()))));
    builder.build()
}

/// The S3 service [`start`] serves, without a listener, metrics or audits: requests are handed
/// to it in the caller's process (the simulator's S3 applications, `vouch_testkit::sim`). They
/// are authenticated as over HTTP; its background work runs on the caller's runtime.
pub struct InProcessGateway {
    service: S3Service,
    /// Its background work stops when the gateway is dropped.
    _stop: watch::Sender<bool>,
}

/// [`start`]'s S3 service over `client`, in-process ([`InProcessGateway`]).
pub fn in_process(config: &GatewayConfig, client: Arc<Client>) -> InProcessGateway {
    client.cache().resize(config.cache_mb << 20);
    let metrics = Arc::new(Metrics::new(client.clone()));
    let options = (config.por, Duration::from_secs(config.keep_replaced_secs), deadlines(config));
    let (stop, stopped) = watch::channel(false);
    let background = Background::new(stopped);
    let gateway = Front::new(Gateway::new(client, metrics, options, background.clone()));
    InProcessGateway { service: s3_service(config, gateway), _stop: stop }
}

impl InProcessGateway {
    /// One S3 request, answered whole: its status, headers and body (a body that broke off
    /// midway, as a lie caught after the headers went out does, is cut where it broke).
    pub async fn call(&self, req: http::Request<Bytes>) -> (http::response::Parts, Bytes, bool) {
        let (parts, mut body) = s3_answer(&self.service, req).await.into_parts();
        let mut bytes = Vec::new();
        let mut broke = false;
        while let Some(frame) = http_body_util::BodyExt::frame(&mut body).await {
            match frame {
                Ok(frame) => bytes.extend_from_slice(frame.data_ref().map(|d| &d[..]).unwrap_or_default()),
                Err(_) => {
                    broke = true;
                    break;
                }
            }
        }
        (parts, bytes.into(), broke)
    }
}

/// s3s's limits on what it reads of a request. POST forms never reach it (refused from their
/// head), so the form limits only back that refusal up; a form's file is not accepted at all.
fn s3s_limits() -> S3Config {
    let mut limits = S3Config::default();
    limits.post_object_max_file_size = 0;
    limits.form_max_field_size = 8 << 10;
    limits.form_max_fields_size = 64 << 10;
    limits.form_max_parts = 64;
    limits
}

/// What one listener's connections may hold: the time each has to send its TLS handshake and
/// each request head, the connections served at once, and the gauge that counts them.
#[derive(Clone)]
struct Limits {
    header_read: Duration,
    connections: Arc<Semaphore>,
    counted: Option<Arc<Metrics>>,
}

/// How long the accept loop waits after a failed accept (out of file descriptors, say)
/// before it tries again, rather than spin on the error.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// One S3 request through s3s, timed and counted (with the violation its answer names).
async fn counted_call(service: &S3Service, metrics: &Metrics, req: http::Request<Incoming>) -> s3s::HttpResponse {
    let started = Instant::now();
    let method = req.method().clone();
    let response = s3_answer(service, req).await;
    if let Some(kind) = response.headers().get(VIOLATION_HEADER).and_then(|v| v.to_str().ok()) {
        metrics.violation(kind);
    }
    let status = response.status().as_u16();
    metrics.request(&method, status, started.elapsed().as_secs_f64());
    if (400..500).contains(&status) {
        // The application's to act on, not the operator's (a HEAD of a missing key is common).
        tracing::debug!(%method, status, code = error_code(&response), "answered a client error");
    }
    response
}

/// The S3 error code an error answer's body names (`-` when none).
fn error_code(response: &s3s::HttpResponse) -> String {
    let body = response.body().bytes().unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    let code = text.split_once("<Code>").and_then(|(_, rest)| rest.split_once("</Code>")).map(|(code, _)| code);
    code.unwrap_or("-").to_string()
}

/// One S3 request through s3s, or refused from its head alone, its body never read
/// ([`crate::refuse::before_auth`]); s3s failing on its own is a 500.
async fn s3_answer<B>(service: &S3Service, req: http::Request<B>) -> s3s::HttpResponse
where
    s3s::Body: From<B>,
{
    let answer = match crate::refuse::before_auth(&req) {
        Some(refusal) => refusal.to_http_response().map_err(|e| format!("{e:?}")),
        None => service.call(req.map(s3s::Body::from)).await.map_err(|e| format!("{e:?}")),
    };
    answer.unwrap_or_else(|e| {
        tracing::error!("gateway: a request failed: {e}");
        let mut response = http::Response::new(s3s::Body::empty());
        *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
        response
    })
}

/// The metrics listener's answers: `/metrics` for Prometheus, `/` and `/status` the status
/// page.
fn metrics_response(path: &str, metrics: &Metrics) -> http::Response<Full<Bytes>> {
    let (status, body, kind) = match path {
        "/metrics" => (http::StatusCode::OK, metrics.render(), "text/plain; version=0.0.4"),
        "/" | "/status" => (http::StatusCode::OK, metrics.status_page(), "text/html; charset=utf-8"),
        _ => (http::StatusCode::NOT_FOUND, "GET /metrics, or / for the status page\n".to_string(), "text/plain"),
    };
    let mut response = http::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(kind));
    response
}

/// Samples the portal cache for the status page's plot until the gateway stops.
fn sample_cache(metrics: Arc<Metrics>, mut stop: watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(crate::status::SAMPLE_EVERY);
        loop {
            tokio::select! {
                _ = ticks.tick() => metrics.sample_cache(),
                _ = stop.changed() => return,
            }
        }
    })
}

/// Accepts connections on `listener` until `stopped`, serving each (over TLS with `tls`) with
/// `handler` on a task of its own, within `limits`; at the stop, each open connection closes
/// after its request in flight.
fn serve<F, Fut, B>(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    background: Background,
    limits: Limits,
    handler: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(http::Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<http::Response<B>, Infallible>> + Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut stopped = background.stopping();
    tokio::spawn(async move {
        loop {
            // A slot first: at the cap, the next connection waits in the listen backlog
            // until one ends (it is not accepted only to be dropped).
            let permit = tokio::select! {
                permit = limits.connections.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
                _ = stopped.changed() => break,
            };
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors, say: trying again at once would spin.
                        tracing::warn!("gateway: accept failed: {e}");
                        tokio::select! {
                            () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                            _ = stopped.changed() => break,
                        }
                    }
                },
                _ = stopped.changed() => break,
            };
            // Small answers must not wait for a delayed ACK (Nagle).
            let _ = stream.set_nodelay(true);
            let (handler, mut stop, tls) = (handler.clone(), stopped.clone(), tls.clone());
            let (header_read, counted) = (limits.header_read, limits.counted.clone());
            background.spawn(async move {
                let _permit = permit;
                let _open = counted.map(Open::new);
                match tls {
                    None => connection(stream, handler, header_read, stop).await,
                    Some(tls) => {
                        let handshake = tokio::select! {
                            done = tokio::time::timeout(header_read, tls.accept(stream)) => done,
                            _ = stop.changed() => return,
                        };
                        match handshake {
                            Ok(Ok(stream)) => connection(stream, handler, header_read, stop).await,
                            Ok(Err(e)) => tracing::debug!("gateway: a TLS handshake failed: {e}"),
                            Err(_) => tracing::debug!("gateway: a TLS handshake took too long"),
                        }
                    }
                }
            });
        }
    })
}

/// An open connection, counted in the metrics while it lasts.
struct Open(Arc<Metrics>);

impl Open {
    fn new(metrics: Arc<Metrics>) -> Open {
        metrics.connections(1);
        Open(metrics)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.connections(-1);
    }
}

/// Serves one connection with `handler` until it ends, or until `stop` (then after the
/// request in flight). A request head not read in full within `header_read` of the wait for
/// it (idle or slow) closes the connection.
async fn connection<S, F, Fut, B>(stream: S, handler: F, header_read: Duration, mut stop: watch::Receiver<bool>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    F: Fn(http::Request<Incoming>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<http::Response<B>, Infallible>> + Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read)
        .serve_connection(TokioIo::new(stream), service_fn(handler));
    tokio::pin!(connection);
    let ended = tokio::select! {
        ended = connection.as_mut() => ended,
        _ = stop.changed() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = ended {
        tracing::debug!("gateway: a connection ended: {e}");
    }
}

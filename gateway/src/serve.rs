//! The gateway's HTTP servers: s3s's service over hyper, one task per connection, each
//! request timed and counted; `/metrics` on a listener of its own; the background audits (own
//! namespace) or the group's passive AIP work (group mode).

use crate::background::Background;
use crate::config::GatewayConfig;
use crate::errors::VIOLATION_HEADER;
use crate::group::GroupGateway;
use crate::metrics::Metrics;
use crate::s3::Gateway;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use s3s::auth::SimpleAuth;
use s3s::service::{S3Service, S3ServiceBuilder};
use s3s::S3;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::TcpListener;
use tokio::sync::watch;
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
    client.set_cache(config.cache_mb << 20);
    let metrics = Arc::new(Metrics::new(client.clone()));
    let options = (config.por, std::time::Duration::from_secs(config.keep_replaced_secs));
    let gateway = |background| Gateway::new(client.clone(), metrics.clone(), options, background);
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
    let gateway = |background| GroupGateway::new(group.clone(), background);
    let mut running = listen(config, metrics.clone(), gateway).await?;
    let stopping = running.background.stopping();
    running.tasks.push(crate::group::spawn_helper(group.clone(), metrics, stopping));
    tracing::info!("vouch gateway serving VICOS group {}", group.name());
    Ok(running)
}

/// What both modes share: the S3 service over `gateway` (made with the gateway's background
/// tasks) with the configured access keys, on `config.listen` (over TLS when configured),
/// each request counted into `metrics`; and `/metrics` when configured.
async fn listen<G: S3>(
    config: &GatewayConfig,
    metrics: Arc<Metrics>,
    gateway: impl FnOnce(Background) -> G,
) -> std::io::Result<RunningGateway> {
    let mut auth = SimpleAuth::new();
    for key in &config.keys {
        auth.register(key.access_key.clone(), key.secret_key.clone().into());
    }
    let (stop, stopped) = watch::channel(false);
    let background = Background::new(stopped);
    let mut builder = S3ServiceBuilder::new(gateway(background.clone()));
    builder.set_auth(auth);
    let service = builder.build();
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
    let mut tasks = vec![serve(listener, tls, background.clone(), s3)];
    let mut metrics_addr = None;
    if let Some(listen) = &config.metrics_listen {
        let listener = TcpListener::bind(listen).await?;
        metrics_addr = Some(listener.local_addr()?);
        let scraped = metrics.clone();
        let handler = move |req: http::Request<Incoming>| {
            let answer = metrics_response(req.uri().path(), || scraped.render());
            async move { Ok::<_, Infallible>(answer) }
        };
        tasks.push(serve(listener, None, background.clone(), handler));
    }
    tracing::info!("vouch gateway listening on {addr}");
    Ok(RunningGateway { addr, metrics_addr, metrics, stop, tasks, background })
}

/// One S3 request through s3s, timed and counted (with the violation its answer names).
async fn counted_call(service: &S3Service, metrics: &Metrics, req: http::Request<Incoming>) -> s3s::HttpResponse {
    let started = Instant::now();
    let method = req.method().to_string();
    let response = match service.call(req.map(s3s::Body::from)).await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!("gateway: a request failed: {e:?}");
            let mut response = http::Response::new(s3s::Body::empty());
            *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
    };
    if let Some(kind) = response.headers().get(VIOLATION_HEADER).and_then(|v| v.to_str().ok()) {
        metrics.violation(kind);
    }
    metrics.request(&method, response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}

fn metrics_response(path: &str, render: impl FnOnce() -> String) -> http::Response<Full<Bytes>> {
    let (status, body) = match path {
        "/metrics" => (http::StatusCode::OK, render()),
        _ => (http::StatusCode::NOT_FOUND, "GET /metrics\n".to_string()),
    };
    let mut response = http::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; version=0.0.4"));
    response
}

/// Accepts connections on `listener` until `stopped`, serving each (over TLS with `tls`) with
/// `handler` on a task of its own; at the stop, each open connection closes after its request
/// in flight.
fn serve<F, Fut, B>(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    background: Background,
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
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!("gateway: accept failed: {e}");
                        continue;
                    }
                },
                _ = stopped.changed() => break,
            };
            // Small answers must not wait for a delayed ACK (Nagle).
            let _ = stream.set_nodelay(true);
            let (handler, mut stop, tls) = (handler.clone(), stopped.clone(), tls.clone());
            background.spawn(async move {
                match tls {
                    None => connection(stream, handler, stop).await,
                    Some(tls) => {
                        let handshake = tokio::select! {
                            done = tls.accept(stream) => done,
                            _ = stop.changed() => return,
                        };
                        match handshake {
                            Ok(stream) => connection(stream, handler, stop).await,
                            Err(e) => tracing::debug!("gateway: a TLS handshake failed: {e}"),
                        }
                    }
                }
            });
        }
    })
}

/// Serves one connection with `handler` until it ends, or until `stop` (then after the
/// request in flight).
async fn connection<S, F, Fut, B>(stream: S, handler: F, mut stop: watch::Receiver<bool>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    F: Fn(http::Request<Incoming>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<http::Response<B>, Infallible>> + Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let connection =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service_fn(handler));
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

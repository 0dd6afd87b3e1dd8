//! The gateway's HTTP server: s3s's service over hyper, one task per connection.

use crate::config::GatewayConfig;
use crate::s3::Gateway;
use hyper_util::rt::TokioIo;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use vouch_client::Client;

/// A gateway serving until [`RunningGateway::shutdown`].
pub struct RunningGateway {
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningGateway {
    /// Stops accepting connections, closes each open one after its request in flight, and
    /// waits for the accept loop to end.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Serves `client` as an S3 endpoint on `config.listen`.
pub async fn start(config: &GatewayConfig, client: Arc<Client>) -> std::io::Result<RunningGateway> {
    let mut auth = SimpleAuth::new();
    for key in &config.keys {
        auth.register(key.access_key.clone(), key.secret_key.clone().into());
    }
    let mut builder = S3ServiceBuilder::new(Gateway::new(client));
    builder.set_auth(auth);
    let service = builder.build();
    let listener = TcpListener::bind(&config.listen).await?;
    let addr = listener.local_addr()?;
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
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
            let (service, mut stop) = (service.clone(), stopped.clone());
            tokio::spawn(async move {
                let connection =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                tokio::pin!(connection);
                let ended = tokio::select! {
                    ended = connection.as_mut() => ended,
                    // Shut down: the request in flight finishes, then the connection closes.
                    _ = stop.changed() => {
                        connection.as_mut().graceful_shutdown();
                        connection.await
                    }
                };
                if let Err(e) = ended {
                    tracing::debug!("gateway: a connection ended: {e}");
                }
            });
        }
    });
    tracing::info!("vouch gateway listening on {addr}");
    Ok(RunningGateway { addr, stop, task })
}

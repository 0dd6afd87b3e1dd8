//! Accepting connections: TCP (no Nagle delay), a write-stall bound on every connection, and
//! optionally TLS, as an `axum::serve` listener.
//!
//! TLS handshakes run on their own tasks (bounded in number and time), so a peer that opens a
//! connection and never finishes its handshake delays nobody else.

use crate::tls::TlsConfig;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::time::Sleep;

/// Longest a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most TLS handshakes in progress at once.
const HANDSHAKES: usize = 256;

/// A connection's byte stream, plain or TLS.
pub(crate) trait Connection: AsyncRead + AsyncWrite + Send {}
impl<T: AsyncRead + AsyncWrite + Send> Connection for T {}

/// Connections accepted (and, with TLS, handshaken) by a background task.
pub(crate) struct Accepted {
    connections: tokio::sync::mpsc::Receiver<(Pin<Box<dyn Connection>>, std::net::SocketAddr)>,
    addr: std::net::SocketAddr,
}

impl Accepted {
    /// Starts accepting on `listener`; writes that stall longer than `write_idle` fail.
    pub(crate) fn start(listener: TcpListener, tls: Option<TlsConfig>, write_idle: Duration) -> io::Result<Self> {
        let addr = listener.local_addr()?;
        let (tx, connections) = tokio::sync::mpsc::channel::<(Pin<Box<dyn Connection>>, _)>(64);
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        let handshakes = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES));
        tokio::spawn(async move {
            loop {
                // Ends (and closes the port) once the server has dropped its side.
                let (tcp, peer) = tokio::select! {
                    _ = tx.closed() => return,
                    accepted = listener.accept() => match accepted {
                        Ok(x) => x,
                        Err(e) => {
                            // Out of file descriptors and the like: wait, do not spin.
                            tracing::warn!("accept: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                // Small answers must not wait for a delayed ACK (Nagle).
                let _ = tcp.set_nodelay(true);
                let tcp = WriteIdle::new(tcp, write_idle);
                let Some(acceptor) = acceptor.clone() else {
                    if tx.send((Box::pin(tcp), peer)).await.is_err() {
                        return;
                    }
                    continue;
                };
                let Ok(permit) = handshakes.clone().acquire_owned().await else { return };
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            drop(permit);
                            let _ = tx.send((Box::pin(tls), peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!("TLS handshake with {peer}: {e}"),
                        Err(_) => tracing::debug!("TLS handshake with {peer} timed out"),
                    }
                });
            }
        });
        Ok(Accepted { connections, addr })
    }
}

impl axum::serve::Listener for Accepted {
    type Io = Pin<Box<dyn Connection>>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.connections.recv().await {
            Some(connection) => connection,
            // The accepting task only stops when this side is gone; never reached.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

/// A stream whose writes fail once they have been blocked for `idle`: a peer that stops
/// reading (a read it never consumes) cannot hold the connection, its task and its buffers
/// forever. Reads are untouched (requests have their own timeouts).
pub(crate) struct WriteIdle<T> {
    inner: T,
    idle: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteIdle<T> {
    pub(crate) fn new(inner: T, idle: Duration) -> Self {
        WriteIdle { inner, idle, stalled: None }
    }

    /// `poll` is a write attempt: progress resets the clock, a pending write starts it.
    fn bounded<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let idle = self.idle;
        let timer = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        if timer.as_mut().poll(cx).is_ready() {
            self.stalled = None;
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the peer stopped reading")));
        }
        Poll::Pending
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteIdle<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteIdle<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.bounded(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.bounded(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.bounded(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.bounded(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpStream;

    #[tokio::test]
    async fn a_write_the_peer_never_reads_fails_after_the_idle_time() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // The peer connects and never reads; it is kept open until the end of the test.
        let peer = tokio::spawn(async move { TcpStream::connect(addr).await.unwrap() });
        let (tcp, _) = listener.accept().await.unwrap();
        let _peer = peer.await.unwrap();
        let mut stream = WriteIdle::new(tcp, Duration::from_millis(200));
        let chunk = vec![0u8; 1 << 20];
        let mut written = 0usize;
        let err = loop {
            match tokio::time::timeout(Duration::from_secs(60), stream.write_all(&chunk)).await {
                Ok(Ok(())) => written += chunk.len(),
                Ok(Err(e)) => break e,
                Err(_) => panic!("a stalled write was not ended"),
            }
            assert!(written < 1 << 30, "1 GiB written to a peer that reads nothing");
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }
}

//! The provider as seen over the wire: requests, limits, typed errors. Nothing it returns is
//! trusted here; callers verify.

use crate::error::ClientError;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;
use vouch_proto::frame::Decoder;
use vouch_proto::{decode, encode, ErrorBody, Health, MAX_MESSAGE, PROTOCOL_VERSION, VERSION_HEADER};

#[derive(Clone)]
pub struct Remote {
    http: reqwest::Client,
    base: String,
    token: String,
    /// The provider's own time for the last answered request (its `Server-Timing`), in µs.
    last_server_us: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Remote({})", self.base)
    }
}

impl Remote {
    pub fn new(base: &str, token: &str) -> Result<Remote, ClientError> {
        let base = base.trim_end_matches('/').to_string();
        if !base.starts_with("http://") && !base.starts_with("https://") {
            return Err(ClientError::BadInput(format!("server URL {base:?} must start with http:// or https://")));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .read_timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| ClientError::BadInput(format!("HTTP client: {e}")))?;
        Ok(Remote { http, base, token: token.to_string(), last_server_us: Default::default() })
    }

    fn unreachable(&self, e: reqwest::Error) -> ClientError {
        ClientError::Unreachable { url: self.base.clone(), detail: error_chain(&e) }
    }

    async fn send(&self, op: &str, body: reqwest::Body) -> Result<reqwest::Response, ClientError> {
        let resp = self
            .http
            .post(format!("{}/v1/{op}", self.base))
            .header(VERSION_HEADER, PROTOCOL_VERSION.to_string())
            .bearer_auth(&self.token)
            .body(body)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        let timing = resp
            .headers()
            .get("server-timing")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split("dur=").nth(1))
            .and_then(|ms| ms.parse::<f64>().ok());
        self.last_server_us
            .store(timing.map_or(u64::MAX, |ms| (ms * 1e3) as u64), std::sync::atomic::Ordering::Relaxed);
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status();
        let bytes = resp.bytes().await.unwrap_or_default();
        Err(match decode::<ErrorBody>(&bytes) {
            Ok(body) => ClientError::from_server(body.code, body.message),
            Err(_) => ClientError::Refused {
                code: vouch_proto::ErrorCode::Internal,
                message: format!("HTTP {status}: {}", String::from_utf8_lossy(&bytes[..bytes.len().min(200)])),
            },
        })
    }

    async fn body(&self, resp: reqwest::Response) -> Result<Vec<u8>, ClientError> {
        let mut out = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(piece) = stream.next().await {
            let piece = piece.map_err(|e| self.unreachable(e))?;
            if out.len() + piece.len() > MAX_MESSAGE {
                return Err(ClientError::Misbehaved("answer larger than the protocol allows".into()));
            }
            out.extend_from_slice(&piece);
        }
        Ok(out)
    }

    /// One request, one answer.
    pub async fn call<Req: Serialize, Resp: DeserializeOwned>(&self, op: &str, req: &Req) -> Result<Resp, ClientError> {
        let resp = self.send(op, encode(req).into()).await?;
        let bytes = self.body(resp).await?;
        decode(&bytes).map_err(ClientError::lie)
    }

    /// A request whose body is streamed (a put), one answer.
    pub async fn call_streaming<Resp: DeserializeOwned>(
        &self,
        op: &str,
        frames: impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    ) -> Result<Resp, ClientError> {
        let resp = self.send(op, reqwest::Body::wrap_stream(frames)).await?;
        let bytes = self.body(resp).await?;
        decode(&bytes).map_err(ClientError::lie)
    }

    /// A request answered by a stream of frames (a read).
    pub async fn frames<Req: Serialize>(&self, op: &str, req: &Req) -> Result<Frames, ClientError> {
        let resp = self.send(op, encode(req).into()).await?;
        Ok(Frames { remote: self.clone(), stream: Box::pin(resp.bytes_stream()), decoder: Decoder::new(), done: false })
    }

    /// The provider's own time for the last request, as it reported it (not verified: for
    /// measurements only).
    pub fn last_server_time(&self) -> Option<std::time::Duration> {
        let us = self.last_server_us.load(std::sync::atomic::Ordering::Relaxed);
        (us != u64::MAX).then(|| std::time::Duration::from_micros(us))
    }

    pub async fn health(&self) -> Result<Health, ClientError> {
        let resp = self.http.get(format!("{}/v1/health", self.base)).send().await.map_err(|e| self.unreachable(e))?;
        let bytes = self.body(resp).await?;
        decode(&bytes).map_err(ClientError::lie)
    }
}

/// The frames of a streamed answer.
pub struct Frames {
    remote: Remote,
    stream: std::pin::Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    decoder: Decoder,
    done: bool,
}

impl Frames {
    /// The next frame decoded, or `None` at a clean end of the stream.
    pub async fn next<T: DeserializeOwned>(&mut self) -> Result<Option<T>, ClientError> {
        loop {
            if let Some(frame) = self.decoder.next_frame().map_err(ClientError::lie)? {
                return decode(&frame).map(Some).map_err(ClientError::lie);
            }
            if self.done {
                return Ok(None);
            }
            match self.stream.next().await {
                Some(Ok(bytes)) => self.decoder.extend(&bytes),
                Some(Err(e)) => return Err(self.remote.unreachable(e)),
                None => {
                    self.done = true;
                    self.decoder.finish().map_err(ClientError::lie)?;
                }
            }
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out = format!("{out}: {text}");
        }
        cur = s.source();
    }
    out
}

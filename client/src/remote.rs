//! The provider as seen over the wire: requests, limits, deadlines, typed errors. Nothing it
//! returns is trusted here; callers verify.
//!
//! Nor is it trusted to be prompt or brief: every call ends within the deadlines of its
//! [`Transport`] (a slow, trickling or stalled provider is [`ClientError::TimedOut`], never
//! "misbehaved"), an answer is at most [`MAX_MESSAGE`] bytes, and an error answer is
//! read up to [`MAX_ERROR_BODY`] bytes and no further.

use crate::error::ClientError;
use crate::link::{ByteStream, Link, LinkAnswer, LinkRequest};
use crate::transport::{parse_ca, Transport};
use crate::violation::ViolationKind::{MalformedAnswer, ShortStream};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;
use vouch_proto::frame::Decoder;
use vouch_proto::{
    decode, decode_shared, encode, ErrorBody, Health, Op, Rpc, MAX_MESSAGE, PROTOCOL_VERSION, VERSION_HEADER,
};

/// Most bytes of an error answer the client reads (its message is for people; the rest is
/// dropped with the connection).
pub const MAX_ERROR_BODY: usize = 64 << 10;

#[derive(Clone)]
pub struct Remote {
    via: Via,
    base: String,
    token: String,
    timeout: Duration,
    min_rate: u64,
    por_part_bytes: usize,
    /// The provider's own time for the last answered request (its `Server-Timing`), in µs.
    last_server_us: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// A request's body.
enum Outgoing {
    Whole(Bytes),
    Stream(ByteStream),
}

/// How requests reach the provider.
#[derive(Clone)]
enum Via {
    Http(reqwest::Client),
    Link(Arc<dyn Link>),
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Remote({})", self.base)
    }
}

impl Remote {
    /// The provider at `base` with the default [`Transport`].
    pub fn new(base: &str, token: &str) -> Result<Remote, ClientError> {
        Self::with(base, token, &Transport::default())
    }

    pub fn with(base: &str, token: &str, transport: &Transport) -> Result<Remote, ClientError> {
        let base = base.trim_end_matches('/').to_string();
        if !base.starts_with("http://") && !base.starts_with("https://") {
            return Err(ClientError::BadInput(format!("server URL {base:?} must start with http:// or https://")));
        }
        vouch_proto::tls::install_provider();
        let mut http = reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).tcp_nodelay(true);
        if let Some(pem) = &transport.ca_pem {
            if !base.starts_with("https://") {
                return Err(ClientError::BadInput(format!("a pinned certificate needs an https:// URL, not {base:?}")));
            }
            // The pinned certificates and nothing else: no system roots.
            http = http.tls_certs_only(parse_ca(pem)?);
        }
        let http = http.build().map_err(|e| ClientError::BadInput(format!("HTTP client: {}", error_chain(&e))))?;
        Ok(Self::via(Via::Http(http), base, token, transport))
    }

    /// The provider behind `link`, in this process (named `name` in messages): the same
    /// checks, deadlines and limits as over HTTP.
    pub fn linked(link: Arc<dyn Link>, name: &str, token: &str, transport: &Transport) -> Remote {
        Self::via(Via::Link(link), name.to_string(), token, transport)
    }

    fn via(via: Via, base: String, token: &str, transport: &Transport) -> Remote {
        Remote {
            via,
            base,
            token: token.to_string(),
            timeout: transport.timeout,
            min_rate: transport.min_rate.max(1),
            por_part_bytes: transport.por_part_bytes.clamp(1, vouch_proto::por::POR_PART_BYTES),
            last_server_us: Default::default(),
        }
    }

    /// The provider's URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// The most bytes of a PoR plan's answer or batch's upload in one message.
    pub(crate) fn por_part_bytes(&self) -> usize {
        self.por_part_bytes
    }

    fn unreachable(&self, e: &(dyn std::error::Error + 'static)) -> ClientError {
        // A stream's failure arrives wrapped in an `io::Error`.
        let inner =
            e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()).map(|inner| inner as &dyn std::error::Error);
        let http =
            e.downcast_ref::<reqwest::Error>().or_else(|| inner.and_then(|i| i.downcast_ref::<reqwest::Error>()));
        if http.is_some_and(reqwest::Error::is_timeout) {
            return self.timed_out(error_chain(e));
        }
        ClientError::Unreachable { url: self.base.clone(), detail: error_chain(e) }
    }

    fn timed_out(&self, detail: impl Into<String>) -> ClientError {
        ClientError::TimedOut { url: self.base.clone(), detail: detail.into() }
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.timeout
    }

    /// Sends a request; its answer's head must come by `deadline` (none: the caller bounds the
    /// wait). An error answer is returned as its typed error.
    async fn send(&self, op: Op, body: Outgoing, deadline: Option<Instant>) -> Result<LinkAnswer, ClientError> {
        let request = self.exchange(op, body);
        let resp = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, request)
                .await
                .map_err(|_| self.timed_out(format!("no answer to {op} within {:?}", self.timeout)))?,
            None => request.await,
        }?;
        self.last_server_us
            .store(resp.server_ms.map_or(u64::MAX, |ms| (ms * 1e3) as u64), std::sync::atomic::Ordering::Relaxed);
        if (200..300).contains(&resp.status) {
            return Ok(resp);
        }
        let status = resp.status;
        let bytes = error_body(resp.body, deadline.unwrap_or_else(|| self.deadline())).await;
        Err(match decode::<ErrorBody>(&bytes) {
            Ok(body) => ClientError::from_server(body.code, body.message),
            Err(_) => ClientError::Refused {
                code: vouch_proto::ErrorCode::Internal,
                message: format!("HTTP {status}: {}", String::from_utf8_lossy(&bytes[..bytes.len().min(200)])),
            },
        })
    }

    /// The request on its way, and the head of its answer.
    async fn exchange(&self, op: Op, body: Outgoing) -> Result<LinkAnswer, ClientError> {
        let http = match &self.via {
            Via::Link(link) => {
                let body = match body {
                    Outgoing::Whole(bytes) => futures::stream::once(async move { Ok(bytes) }).boxed(),
                    Outgoing::Stream(stream) => stream,
                };
                let request = LinkRequest { op, token: self.token.clone(), body };
                return link.exchange(request).await.map_err(|e| self.unreachable(&e));
            }
            Via::Http(http) => http,
        };
        let url = format!("{}{}", self.base, op.path());
        let request = match op {
            Op::Health => http.get(url),
            _ => http.post(url).header(VERSION_HEADER, PROTOCOL_VERSION.to_string()).bearer_auth(&self.token).body(
                match body {
                    Outgoing::Whole(bytes) => reqwest::Body::from(bytes),
                    Outgoing::Stream(stream) => reqwest::Body::wrap_stream(stream),
                },
            ),
        };
        let resp = request.send().await.map_err(|e| self.unreachable(&e))?;
        let server_ms = resp
            .headers()
            .get("server-timing")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split("dur=").nth(1))
            .and_then(|ms| ms.parse::<f64>().ok());
        let status = resp.status().as_u16();
        let body = resp.bytes_stream().map(|piece| piece.map_err(std::io::Error::other)).boxed();
        Ok(LinkAnswer { status, server_ms, body })
    }

    /// A whole answer, at most [`MAX_MESSAGE`] bytes, by `deadline`.
    async fn body(&self, resp: LinkAnswer, deadline: Instant) -> Result<Vec<u8>, ClientError> {
        let mut out = Vec::new();
        let mut stream = resp.body;
        loop {
            let piece = match tokio::time::timeout_at(deadline, stream.next()).await {
                Err(_) => return Err(self.timed_out(format!("the answer did not arrive within {:?}", self.timeout))),
                Ok(None) => return Ok(out),
                Ok(Some(piece)) => piece.map_err(|e| self.unreachable(&e))?,
            };
            if out.len() + piece.len() > MAX_MESSAGE {
                return Err(ClientError::violation(MalformedAnswer, "answer larger than the protocol allows"));
            }
            out.extend_from_slice(&piece);
        }
    }

    /// One request, one answer, within the call deadline: the operation and the answer's type
    /// are the request's ([`Rpc`]).
    pub async fn call<R: Rpc>(&self, req: &R) -> Result<R::Answer, ClientError> {
        self.call_within(req, Duration::ZERO).await
    }

    /// [`Remote::call`] with `extra` time beyond the call deadline: for a request whose honest
    /// work grows with what the provider holds rather than with the request (a PoR batch that
    /// encodes C at once, `vouch_proto::por::por_apply_allowance`).
    pub async fn call_within<R: Rpc>(&self, req: &R, extra: Duration) -> Result<R::Answer, ClientError> {
        let op = R::OP;
        let body = encode(req);
        if body.len() > MAX_MESSAGE {
            // The provider would refuse it part way, which reads as a broken connection: said
            // here for what it is, before anything is sent.
            return Err(ClientError::Refused {
                code: vouch_proto::ErrorCode::TooLarge,
                message: format!(
                    "a {op} request of {} bytes is larger than the protocol allows ({MAX_MESSAGE} bytes)",
                    body.len()
                ),
            });
        }
        let deadline = self.deadline() + extra;
        let resp =
            self.send(op, Outgoing::Whole(body.into()), Some(deadline)).await.map_err(|e| self.waited(e, extra))?;
        let bytes = self.body(resp, deadline).await.map_err(|e| self.waited(e, extra))?;
        decode(&bytes).map_err(ClientError::caught(MalformedAnswer))
    }

    /// A deadline passed after `extra` beyond the timeout: said so (the message names the
    /// timeout alone).
    fn waited(&self, e: ClientError, extra: Duration) -> ClientError {
        match e {
            ClientError::TimedOut { url, detail } if !extra.is_zero() => {
                ClientError::TimedOut { url, detail: format!("{detail}, and {extra:?} more for the provider's work") }
            }
            e => e,
        }
    }

    /// A request whose body is streamed (a put), one answer. The provider must take each frame
    /// within the timeout and keep up the minimum rate, and answer within the timeout of the
    /// last frame.
    pub async fn call_streaming<Resp: DeserializeOwned>(
        &self,
        op: Op,
        frames: impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    ) -> Result<Resp, ClientError> {
        let meter = Arc::new(Mutex::new(UploadMeter::new(StreamBudget::new(self.timeout, self.min_rate))));
        let metered = Metered { inner: Box::pin(frames), meter: meter.clone() };
        let exchange = async {
            let resp = self.send(op, Outgoing::Stream(metered.boxed()), None).await?;
            let bytes = self.body(resp, self.deadline()).await?;
            decode(&bytes).map_err(ClientError::caught(MalformedAnswer))
        };
        let tick = (self.timeout / 8).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let watchdog = async {
            loop {
                tokio::time::sleep(tick).await;
                if let Some(why) = meter.lock().expect("upload meter").overdue() {
                    return why;
                }
            }
        };
        tokio::select! {
            answer = exchange => answer,
            why = watchdog => Err(self.timed_out(why)),
        }
    }

    /// A request answered by a stream of frames (a read). The answer's head must come within
    /// the timeout; [`Frames::next`] bounds the rest.
    pub async fn frames<Req: Serialize>(&self, op: Op, req: &Req) -> Result<Frames, ClientError> {
        let resp = self.send(op, Outgoing::Whole(encode(req).into()), Some(self.deadline())).await?;
        Ok(Frames {
            remote: self.clone(),
            stream: resp.body,
            decoder: Decoder::new(),
            done: false,
            budget: StreamBudget::new(self.timeout, self.min_rate),
        })
    }

    /// The provider's own time for the last request, as it reported it (not verified: for
    /// measurements only).
    pub fn last_server_time(&self) -> Option<std::time::Duration> {
        let us = self.last_server_us.load(std::sync::atomic::Ordering::Relaxed);
        (us != u64::MAX).then(|| std::time::Duration::from_micros(us))
    }

    pub async fn health(&self) -> Result<Health, ClientError> {
        let deadline = self.deadline();
        let resp = tokio::time::timeout_at(deadline, self.exchange(Op::Health, Outgoing::Whole(Bytes::new())))
            .await
            .map_err(|_| self.timed_out(format!("no answer to health within {:?}", self.timeout)))??;
        let bytes = self.body(resp, deadline).await?;
        decode(&bytes).map_err(ClientError::caught(MalformedAnswer))
    }
}

/// At most [`MAX_ERROR_BODY`] bytes of an error answer, whatever arrived by `deadline`.
async fn error_body(mut body: ByteStream, deadline: Instant) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < MAX_ERROR_BODY {
        match tokio::time::timeout_at(deadline, body.next()).await {
            Ok(Some(Ok(piece))) => {
                let room = MAX_ERROR_BODY - out.len();
                out.extend_from_slice(&piece[..piece.len().min(room)]);
            }
            _ => break,
        }
    }
    out
}

/// How long a stream may keep the client waiting: each frame within `timeout`, and all the
/// waiting within `timeout` plus the bytes so far at `min_rate` bytes per second.
#[derive(Clone, Copy, Debug)]
struct StreamBudget {
    timeout: Duration,
    min_rate: u64,
    /// Time spent waiting on the provider so far (not the client's own work).
    waited: Duration,
    bytes: u64,
}

impl StreamBudget {
    fn new(timeout: Duration, min_rate: u64) -> Self {
        StreamBudget { timeout, min_rate: min_rate.max(1), waited: Duration::ZERO, bytes: 0 }
    }

    /// How much longer the current wait may go on, `frame_waited` into it; `None`: over.
    fn left(&self, frame_waited: Duration) -> Option<Duration> {
        let earned = Duration::from_secs_f64(self.bytes as f64 / self.min_rate as f64);
        let total_left = (self.timeout + earned).checked_sub(self.waited + frame_waited)?;
        let frame_left = self.timeout.checked_sub(frame_waited)?;
        Some(total_left.min(frame_left)).filter(|left| !left.is_zero())
    }

    /// Why [`StreamBudget::left`] said no.
    fn overrun(&self, frame_waited: Duration) -> String {
        if frame_waited >= self.timeout {
            format!("no frame within {:?}", self.timeout)
        } else {
            format!("the stream fell below {} KiB/s", self.min_rate / 1024)
        }
    }
}

/// The frames of a streamed answer.
pub struct Frames {
    remote: Remote,
    stream: ByteStream,
    decoder: Decoder,
    done: bool,
    budget: StreamBudget,
}

impl Frames {
    /// The next frame decoded, or `None` at a clean end of the stream.
    pub async fn next<T: DeserializeOwned>(&mut self) -> Result<Option<T>, ClientError> {
        let began = Instant::now();
        let result = self.next_within(began).await;
        self.budget.waited += began.elapsed();
        result
    }

    async fn next_within<T: DeserializeOwned>(&mut self, began: Instant) -> Result<Option<T>, ClientError> {
        loop {
            if let Some(frame) = self.decoder.next_frame().map_err(ClientError::caught(MalformedAnswer))? {
                // Blocks share the frame's bytes (no copy).
                return decode_shared(&frame.freeze()).map(Some).map_err(ClientError::caught(MalformedAnswer));
            }
            if self.done {
                return Ok(None);
            }
            let waited = began.elapsed();
            let Some(left) = self.budget.left(waited) else {
                return Err(self.remote.timed_out(self.budget.overrun(waited)));
            };
            match tokio::time::timeout(left, self.stream.next()).await {
                Err(_) => return Err(self.remote.timed_out(self.budget.overrun(began.elapsed()))),
                Ok(Some(Ok(bytes))) => {
                    self.budget.bytes += bytes.len() as u64;
                    self.decoder.extend(&bytes);
                }
                Ok(Some(Err(e))) => return Err(self.remote.unreachable(&e)),
                Ok(None) => {
                    self.done = true;
                    // The stream was cut inside a frame.
                    self.decoder.finish().map_err(ClientError::caught(ShortStream))?;
                }
            }
        }
    }
}

/// Frames received and decoded by a task of their own, up to [`READ_AHEAD`] ahead of the
/// caller ([`Frames::read_ahead`]): the socket's copies and each frame's copy out of the HTTP
/// body run on another core while the caller checks the frames before them. Nothing is
/// checked here, so nothing of a frame reaches an output before the caller checks it.
pub struct AheadFrames<T> {
    frames: tokio::sync::mpsc::Receiver<Result<Option<T>, ClientError>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// How many decoded frames may wait for the caller.
const READ_AHEAD: usize = 2;

impl Frames {
    /// These frames, read ahead (see [`AheadFrames`]).
    pub fn read_ahead<T: DeserializeOwned + Send + 'static>(mut self) -> AheadFrames<T> {
        let (sender, frames) = tokio::sync::mpsc::channel(READ_AHEAD);
        let task = tokio::spawn(async move {
            loop {
                let next = self.next::<T>().await;
                let last = !matches!(next, Ok(Some(_)));
                if sender.send(next).await.is_err() || last {
                    return;
                }
            }
        });
        AheadFrames { frames, task: Some(task) }
    }
}

impl<T> AheadFrames<T> {
    /// The next frame decoded, or `None` at a clean end of the stream (and after it).
    pub async fn next(&mut self) -> Result<Option<T>, ClientError> {
        if let Some(next) = self.frames.recv().await {
            return next;
        }
        // The task ended: after the end or an error it sent, or by a panic, passed on here.
        if let Some(task) = self.task.take() {
            if let Err(e) = task.await {
                if e.is_panic() {
                    std::panic::resume_unwind(e.into_panic());
                }
            }
        }
        Ok(None)
    }
}

impl<T> Drop for AheadFrames<T> {
    /// A read given up (an error, a lie caught, the caller's future dropped) stops its task,
    /// and with it the stream.
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// An upload's progress, as seen from its body stream: the provider makes the client wait
/// while the HTTP stack holds a frame and does not come back for the next one; the time the
/// client itself takes to produce frames (tagging blocks) is not counted.
#[derive(Debug)]
struct UploadMeter {
    budget: StreamBudget,
    /// When the current wait on the provider began (`None` while the client is producing).
    waiting_since: Option<Instant>,
    /// The last frame has been handed over: what remains is the answer.
    finished: bool,
}

impl UploadMeter {
    fn new(budget: StreamBudget) -> Self {
        // Connecting and sending the request head is waiting on the provider too.
        UploadMeter { budget, waiting_since: Some(Instant::now()), finished: false }
    }

    fn polled(&mut self, poll: &Poll<Option<Result<Bytes, std::io::Error>>>) {
        if let Some(since) = self.waiting_since.take() {
            self.budget.waited += since.elapsed();
        }
        match poll {
            Poll::Ready(Some(Ok(frame))) => {
                self.budget.bytes += frame.len() as u64;
                self.waiting_since = Some(Instant::now());
            }
            Poll::Ready(None) => {
                self.finished = true;
                self.waiting_since = Some(Instant::now());
            }
            Poll::Ready(Some(Err(_))) | Poll::Pending => {}
        }
    }

    /// Why the provider has made the client wait too long, if it has.
    fn overdue(&self) -> Option<String> {
        let waited = self.waiting_since?.elapsed();
        if self.finished {
            return (waited >= self.budget.timeout)
                .then(|| format!("no answer within {:?} of the end of the upload", self.budget.timeout));
        }
        match self.budget.left(waited) {
            Some(_) => None,
            None => Some(format!("the provider stopped taking the upload: {}", self.budget.overrun(waited))),
        }
    }
}

/// An upload body that reports each poll to its [`UploadMeter`].
struct Metered {
    inner: Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>,
    meter: Arc<Mutex<UploadMeter>>,
}

impl Stream for Metered {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let poll = self.inner.as_mut().poll_next(cx);
        self.meter.lock().expect("upload meter").polled(&poll);
        poll
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A request past the protocol's size is refused for its size, here, not sent and cut off
    /// by the provider part way (which would read as "cannot reach the provider").
    #[tokio::test]
    async fn a_request_larger_than_the_protocol_allows_is_refused_for_its_size() {
        let remote = Remote::new("http://127.0.0.1:9", "token").unwrap();
        let request =
            vouch_proto::por::PorPlanRequest { plan: serde_bytes::ByteBuf::from(vec![0; MAX_MESSAGE + 1]), part: 0 };
        match remote.call(&request).await {
            Err(ClientError::Refused { code: vouch_proto::ErrorCode::TooLarge, message }) => {
                assert!(message.contains("larger than the protocol allows"), "{message}")
            }
            other => panic!("expected a refusal for size, got {other:?}"),
        }
    }

    /// Frames of the messages `0..count` (u64s), then `tail` as raw bytes, then the end (or,
    /// with `stall`, a wait that never ends); the stream holds `alive` while it lives and
    /// counts into `pulled` what was taken from it.
    fn counted_frames(count: u64, tail: &[u8], stall: bool, pulled: &Arc<AtomicUsize>, alive: &Arc<()>) -> Frames {
        let mut pieces: Vec<Bytes> =
            (0..count).map(|i| vouch_proto::frame::encode(&vouch_proto::encode(&i)).into()).collect();
        if !tail.is_empty() {
            pieces.push(Bytes::copy_from_slice(tail));
        }
        let (pulled, alive) = (pulled.clone(), alive.clone());
        let stall = futures::stream::iter(stall.then(futures::stream::pending::<Bytes>)).flatten();
        let stream = futures::stream::iter(pieces)
            .chain(stall)
            .map(move |piece| {
                let _held = &alive;
                pulled.fetch_add(1, Ordering::SeqCst);
                Ok(piece)
            })
            .boxed();
        let remote = Remote::new("http://127.0.0.1:9", "token").unwrap();
        let budget = StreamBudget::new(Duration::from_secs(10), 1);
        Frames { remote, stream, decoder: Decoder::new(), done: false, budget }
    }

    async fn let_others_run() {
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
    }

    /// A fast provider is read no further than a few frames ahead of the checks (the memory a
    /// read holds is bounded); a read given up stops its stream; the end reads as the end.
    #[tokio::test]
    async fn frames_are_read_a_bounded_way_ahead_and_a_read_given_up_stops_its_stream() {
        let (pulled, alive) = (Arc::new(AtomicUsize::new(0)), Arc::new(()));
        let mut ahead = counted_frames(100, &[], false, &pulled, &alive).read_ahead::<u64>();
        assert_eq!(ahead.next().await.unwrap(), Some(0));
        let_others_run().await;
        // One handed over, READ_AHEAD waiting, one decoded and waiting for room.
        assert_eq!(pulled.load(Ordering::SeqCst), 1 + READ_AHEAD + 1);
        assert_eq!(ahead.next().await.unwrap(), Some(1));
        drop(ahead);
        // A provider that stalls: the task waits on the stream, not on the reader.
        let mut ahead = counted_frames(1, &[], true, &pulled, &alive).read_ahead::<u64>();
        assert_eq!(ahead.next().await.unwrap(), Some(0));
        let_others_run().await;
        drop(ahead);
        let_others_run().await;
        assert_eq!(Arc::strong_count(&alive), 1, "a stream outlived the read given up");

        let mut ahead = counted_frames(3, &[], false, &pulled, &alive).read_ahead::<u64>();
        for i in 0..3 {
            assert_eq!(ahead.next().await.unwrap(), Some(i));
        }
        assert_eq!(ahead.next().await.unwrap(), None);
        assert_eq!(ahead.next().await.unwrap(), None, "and after the end");
    }

    /// A frame that does not decode, or a stream cut inside a frame, reaches the reader as
    /// the lie it is, after the frames before it.
    #[tokio::test]
    async fn a_bad_frame_read_ahead_is_caught_in_its_place() {
        let (pulled, alive) = (Arc::new(AtomicUsize::new(0)), Arc::new(()));
        let undecodable = vouch_proto::frame::encode(&[0xff; 12]);
        let mut ahead = counted_frames(2, &undecodable, false, &pulled, &alive).read_ahead::<u64>();
        assert_eq!(ahead.next().await.unwrap(), Some(0));
        assert_eq!(ahead.next().await.unwrap(), Some(1));
        let caught = ahead.next().await.unwrap_err();
        assert_eq!(caught.violation_kind(), Some(MalformedAnswer), "{caught:?}");
        let cut = &vouch_proto::frame::encode(&vouch_proto::encode(&u64::MAX))[..8];
        let mut ahead = counted_frames(1, cut, false, &pulled, &alive).read_ahead::<u64>();
        assert_eq!(ahead.next().await.unwrap(), Some(0));
        assert_eq!(ahead.next().await.unwrap_err().violation_kind(), Some(ShortStream));
    }

    #[test]
    fn a_stream_budget_bounds_each_frame_and_the_average_rate() {
        let mut b = StreamBudget::new(Duration::from_secs(10), 1000);
        assert_eq!(b.left(Duration::from_secs(4)), Some(Duration::from_secs(6)));
        assert_eq!(b.left(Duration::from_secs(10)), None, "one frame within the timeout");
        assert!(b.overrun(Duration::from_secs(10)).contains("no frame"));
        // 8 s waited before, 5 000 bytes earned 5 s: 7 s left in all, under the frame's 10.
        b.waited = Duration::from_secs(8);
        b.bytes = 5000;
        assert_eq!(b.left(Duration::ZERO), Some(Duration::from_secs(7)));
        assert_eq!(b.left(Duration::from_secs(7)), None);
        assert!(b.overrun(Duration::from_secs(7)).contains("KiB/s"));
    }
}

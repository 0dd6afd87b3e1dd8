//! The provider over HTTP: routes, authentication, limits, streaming (protocol in `vouch-proto`).
//! VICOS's routes are in [`vicos`].

mod vicos;

use crate::request_error::RequestError;

use crate::limits::{Limits, PutBudget, REQUEST_TIMEOUT};
use crate::provider::ProviderError;
use crate::service::Service;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use vouch_core::namespace::VersionRecord;
use vouch_core::pdp::{FileId, SchemeId};
use vouch_core::por::client::WritePlan;
use vouch_core::por::heap::SLOT_WIDTH;
use vouch_proto::frame::Decoder;
use vouch_proto::por::{
    por_apply_allowance, PorAuditRequest, PorFreeRequest, PorInitRequest, PorLabelRequest, PorMoreRequest,
    PorPlanRequest, PorReadRequest, PorRegionRequest, PorRestoreRequest, PorStageRequest, PorStatusRequest,
    PorWriteRequest,
};
use vouch_proto::{
    decode, decode_shared, encode, encode_frame, AuditRequest, BlocksRequest, CommitStagedRequest, EditRequest,
    ErrorBody, ErrorCode, HealBlocksRequest, Health, LastCommitRequest, ListRequest, LogRequest, LookupRequest, Op,
    PruneRequest, PutFrame, ReadFrame, ReadRequest, RemoveRequest, Rpc, MAX_MESSAGE, PROTOCOL_VERSION, VERSION_HEADER,
};

pub struct App {
    pub provider: Arc<dyn Service>,
    /// SHA-256 of each bearer token -> client name.
    pub clients: HashMap<[u8; 32], String>,
    /// What one request may make the provider hold or wait for.
    pub limits: Limits,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("provider", &self.provider)
            .field("clients", &self.clients.len())
            .field("limits", &self.limits)
            .finish()
    }
}

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route(&Op::Health.path(), get(health))
        .rpc(lookup)
        .rpc(list)
        .rpc(log)
        .route(&Op::Read.path(), post(read))
        .route(&Op::Stage.path(), post(stage))
        .rpc(commit_staged)
        .rpc(edit)
        .rpc(remove)
        .rpc(prune)
        .rpc(audit)
        .rpc(blocks)
        .rpc(last_commit)
        .rpc(heal_blocks)
        .por_rpc(por_init)
        .por_rpc(por_status)
        .por_rpc(por_plan)
        .por_rpc(por_write)
        .por_rpc(por_read)
        .por_rpc(por_audit)
        .por_rpc(por_region)
        .por_rpc(por_restore)
        .por_rpc(por_label)
        .por_rpc(por_more)
        .por_rpc(por_stage)
        .por_rpc(por_free)
        .rpc(vicos::aip_create)
        .rpc(vicos::aip_admit)
        .rpc(vicos::aip_invoke)
        .rpc(vicos::aip_commit)
        .rpc(vicos::aip_commit_auth)
        .rpc(vicos::aip_work)
        .rpc(vicos::aip_history)
        .route(&Op::CosPut.path(), post(vicos::cos_put))
        .route(&Op::CosGet.path(), post(vicos::cos_get))
        .rpc(vicos::cos_delete)
        .with_state(app)
}

/// What a one-request-one-answer handler gives: its operation's answer, or why not.
type Served<R> = Result<<R as Rpc>::Answer, ProviderError>;

/// Routes of one-request-one-answer operations, each at its request type's own operation
/// (`R::OP`): a handler cannot be routed to another operation's path.
trait Routes {
    /// `work` answers `R` at `R::OP`, under the request deadline ([`answer`]).
    fn rpc<R, F, Fut>(self, work: F) -> Self
    where
        R: Rpc + Send + 'static,
        F: Fn(Arc<App>, String, R) -> Fut + Clone + Send + Sync + 'static,
        Fut: std::future::Future<Output = Served<R>> + Send + 'static;

    /// `work` answers the PoR request `R` at `R::OP` ([`answer_por`]).
    fn por_rpc<R, F, Fut>(self, work: F) -> Self
    where
        R: Rpc + Send + 'static,
        F: Fn(Arc<App>, String, R) -> Fut + Clone + Send + Sync + 'static,
        Fut: std::future::Future<Output = Served<R>> + Send + 'static;
}

impl Routes for Router<Arc<App>> {
    fn rpc<R, F, Fut>(self, work: F) -> Self
    where
        R: Rpc + Send + 'static,
        F: Fn(Arc<App>, String, R) -> Fut + Clone + Send + Sync + 'static,
        Fut: std::future::Future<Output = Served<R>> + Send + 'static,
    {
        let handler = move |State(app): State<Arc<App>>, headers: HeaderMap, body: Body| {
            let work = work.clone();
            async move { answer(app, headers, body, work).await }
        };
        self.route(&R::OP.path(), post(handler))
    }

    fn por_rpc<R, F, Fut>(self, work: F) -> Self
    where
        R: Rpc + Send + 'static,
        F: Fn(Arc<App>, String, R) -> Fut + Clone + Send + Sync + 'static,
        Fut: std::future::Future<Output = Served<R>> + Send + 'static,
    {
        let handler = move |State(app): State<Arc<App>>, headers: HeaderMap, body: Body| {
            let work = work.clone();
            async move { answer_por(app, headers, body, work).await }
        };
        self.route(&R::OP.path(), post(handler))
    }
}

/// An error answer as sent: the code and message of a [`ProviderError`] (its status and
/// [`ErrorBody`]).
struct Failure(ErrorCode, String);

impl From<ProviderError> for Failure {
    fn from(e: ProviderError) -> Self {
        if matches!(e, ProviderError::Store(_)) {
            tracing::warn!("storage: {e}");
        }
        Failure(e.code(), e.to_string())
    }
}

impl From<RequestError> for Failure {
    fn from(e: RequestError) -> Self {
        Failure::from(ProviderError::from(e))
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status = match self.0 {
            ErrorCode::BadRequest | ErrorCode::Version => StatusCode::BAD_REQUEST,
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::Conflict => StatusCode::CONFLICT,
            ErrorCode::Storage => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::DataLost | ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, encode(&ErrorBody { code: self.0, message: self.1 })).into_response()
    }
}

fn ok<T: Serialize>(message: &T) -> Response {
    let bytes = encode(message);
    if bytes.len() > MAX_MESSAGE {
        // A client takes no answer past the protocol's size (it would be a lie to it): the
        // honest answer is a refusal for size.
        return Failure::from(RequestError::AnswerTooLarge { bytes: bytes.len() }).into_response();
    }
    bytes.into_response()
}

/// The client a request speaks for, after checking its protocol version and token.
fn authenticate(app: &App, headers: &HeaderMap) -> Result<String, RequestError> {
    let version = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok());
    if version != Some(PROTOCOL_VERSION.to_string().as_str()) {
        return Err(RequestError::Version { said: version.map(str::to_string) });
    }
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or(RequestError::NoToken)?;
    app.clients.get(&crate::config::token_hash(token)).cloned().ok_or(RequestError::UnknownToken)
}

/// Reads and decodes a whole (size-limited) request.
async fn message<T: DeserializeOwned>(body: Body) -> Result<T, RequestError> {
    let bytes = axum::body::to_bytes(body, MAX_MESSAGE).await.map_err(RequestError::Body)?;
    decode(&bytes).map_err(RequestError::Message)
}

/// Runs a non-streaming request under the timeout, and says how long it took in a standard
/// `Server-Timing` header (what `vouch bench e2e` reports as server time).
async fn timed(work: impl std::future::Future<Output = Result<Response, Failure>>) -> Response {
    let started = std::time::Instant::now();
    let response = match tokio::time::timeout(REQUEST_TIMEOUT, work).await {
        Ok(Ok(r)) => r,
        Ok(Err(f)) => f.into_response(),
        Err(_) => Failure::from(RequestError::TimedOut).into_response(),
    };
    with_timing(response, started)
}

/// Authenticates a request and reads its message `R`, within [`REQUEST_TIMEOUT`].
async fn received<R: DeserializeOwned>(app: &App, headers: &HeaderMap, body: Body) -> Result<(String, R), Failure> {
    let read = async { Ok((authenticate(app, headers)?, message::<R>(body).await?)) };
    tokio::time::timeout(REQUEST_TIMEOUT, read).await.unwrap_or(Err(RequestError::TimedOut.into()))
}

fn with_timing(mut response: Response, started: std::time::Instant) -> Response {
    let value = format!("app;dur={:.3}", started.elapsed().as_secs_f64() * 1e3);
    if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
        response.headers_mut().insert("server-timing", v);
    }
    response
}

async fn health() -> Response {
    ok(&Health { protocol: PROTOCOL_VERSION, server: format!("vouch {}", env!("CARGO_PKG_VERSION")) })
}

/// One request, one answer: authenticate, decode `R`, let the provider answer with
/// `R::Answer` (a handler that answers another operation's type does not compile).
async fn answer<R, Fut>(
    app: Arc<App>,
    headers: HeaderMap,
    body: Body,
    work: impl FnOnce(Arc<App>, String, R) -> Fut,
) -> Response
where
    R: Rpc,
    Fut: std::future::Future<Output = Result<R::Answer, ProviderError>>,
{
    timed(async move {
        let client = authenticate(&app, &headers)?;
        let req: R = message(body).await?;
        Ok(ok(&work(app, client, req).await?))
    })
    .await
}

async fn lookup(app: Arc<App>, c: String, r: LookupRequest) -> Served<LookupRequest> {
    let _reading = app.provider.honest().files().reading(&c).await;
    app.provider.located(&c, &r.name, r.version)
}

async fn list(app: Arc<App>, c: String, _: ListRequest) -> Served<ListRequest> {
    // A commit applies its changes to the namespace in memory before they are durable.
    let _reading = app.provider.honest().files().reading(&c).await;
    app.provider.listing(&c)
}

async fn log(app: Arc<App>, c: String, r: LogRequest) -> Served<LogRequest> {
    let _reading = app.provider.honest().files().reading(&c).await;
    app.provider.log(&c, &r.name)
}

async fn edit(app: Arc<App>, c: String, r: EditRequest) -> Served<EditRequest> {
    app.provider.edit(&c, r).await
}

async fn remove(app: Arc<App>, c: String, r: RemoveRequest) -> Served<RemoveRequest> {
    app.provider.remove(&c, &r).await
}

async fn prune(app: Arc<App>, c: String, r: PruneRequest) -> Served<PruneRequest> {
    app.provider.prune(&c, &r).await
}

async fn audit(app: Arc<App>, c: String, r: AuditRequest) -> Served<AuditRequest> {
    app.provider.audit(&c, &r, app.limits.max_audit_bytes).await
}

async fn blocks(app: Arc<App>, c: String, r: BlocksRequest) -> Served<BlocksRequest> {
    let _reading = app.provider.honest().files().reading(&c).await;
    app.provider.block_list(&c, &r.name, r.version)
}

async fn last_commit(app: Arc<App>, c: String, r: LastCommitRequest) -> Served<LastCommitRequest> {
    app.provider.last_commit(&c, &r.name, &r.attempts).await
}

async fn heal_blocks(app: Arc<App>, c: String, r: HealBlocksRequest) -> Served<HealBlocksRequest> {
    app.provider.heal_blocks(&c, &r).await
}

/// A PoR request: authenticated and read within [`REQUEST_TIMEOUT`]; then the provider bounds
/// its work once it holds the client's log, and the wait for the log (a batch being applied
/// to it) is not counted (see `crate::provider::por`).
async fn answer_por<R, Fut>(
    app: Arc<App>,
    headers: HeaderMap,
    body: Body,
    work: impl FnOnce(Arc<App>, String, R) -> Fut,
) -> Response
where
    R: Rpc,
    Fut: std::future::Future<Output = Result<R::Answer, ProviderError>>,
{
    let started = std::time::Instant::now();
    let response = match received::<R>(&app, &headers, body).await {
        Err(f) => f.into_response(),
        Ok((client, req)) => match work(app, client, req).await {
            Ok(answer) => ok(&answer),
            Err(e) => Failure::from(e).into_response(),
        },
    };
    with_timing(response, started)
}

async fn por_init(app: Arc<App>, c: String, r: PorInitRequest) -> Served<PorInitRequest> {
    app.provider.por_init(&c, &r).await
}

async fn por_status(app: Arc<App>, c: String, r: PorStatusRequest) -> Served<PorStatusRequest> {
    app.provider.por_status(&c, &r).await
}

async fn por_plan(app: Arc<App>, c: String, r: PorPlanRequest) -> Served<PorPlanRequest> {
    app.provider.por_plan(&c, &r).await
}

/// A batch, applied in a task of its own: neither this request's deadline nor a dropped
/// connection cuts the apply short (a cut apply is a crash at every retry, and a growth's
/// apply takes minutes at 2^20 slots). The answer waits [`REQUEST_TIMEOUT`] plus the batch's
/// [`por_apply_allowance`] (the client waits as long, beyond its own deadline) and then says
/// the batch is still being applied: the client's next PoR request waits for it and settles
/// it from the log's time. One batch per client is applied at a time, so that a client cannot
/// pile up applies that outlive their requests.
async fn por_write(app: Arc<App>, c: String, r: PorWriteRequest) -> Served<PorWriteRequest> {
    // A plan that does not decode is refused by the apply itself.
    let coded = WritePlan::from_bytes(&r.plan).map_or(0, |plan| plan.coded_bytes_at_once(SLOT_WIDTH));
    let limit = REQUEST_TIMEOUT + por_apply_allowance(coded);
    let Some(applying) = Applying::begin(&app, &c) else { return Err(RequestError::PorApplying.into()) };
    let apply = tokio::spawn(async move {
        let _applying = applying;
        app.provider.por_write(&c, &r).await
    });
    match tokio::time::timeout(limit, apply).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => Err(RequestError::PorApplyFailed(e).into()),
        Err(_) => Err(RequestError::PorStillApplying { limit }.into()),
    }
}

/// A client's batch being applied in its own task, marked as such until the task ends (even
/// by a panic, or the runtime's shutdown).
struct Applying(Arc<App>, String);

impl Applying {
    fn begin(app: &Arc<App>, client: &str) -> Option<Applying> {
        app.provider.honest().por().applying(client).then(|| Applying(app.clone(), client.to_string()))
    }
}

impl Drop for Applying {
    fn drop(&mut self) {
        self.0.provider.honest().por().applied(&self.1);
    }
}

async fn por_read(app: Arc<App>, c: String, r: PorReadRequest) -> Served<PorReadRequest> {
    app.provider.por_read(&c, &r).await
}

async fn por_audit(app: Arc<App>, c: String, r: PorAuditRequest) -> Served<PorAuditRequest> {
    app.provider.por_audit(&c, &r).await
}

async fn por_region(app: Arc<App>, c: String, r: PorRegionRequest) -> Served<PorRegionRequest> {
    app.provider.por_region(&c, &r).await
}

async fn por_label(app: Arc<App>, c: String, r: PorLabelRequest) -> Served<PorLabelRequest> {
    app.provider.por_label(&c, &r).await
}

async fn por_more(app: Arc<App>, c: String, r: PorMoreRequest) -> Served<PorMoreRequest> {
    app.provider.por_more(&c, &r).await
}

async fn por_stage(app: Arc<App>, c: String, r: PorStageRequest) -> Served<PorStageRequest> {
    app.provider.por_stage(&c, &r).await
}

async fn por_free(app: Arc<App>, c: String, r: PorFreeRequest) -> Served<PorFreeRequest> {
    app.provider.por_free(&c, &r).await
}

async fn por_restore(app: Arc<App>, c: String, r: PorRestoreRequest) -> Served<PorRestoreRequest> {
    app.provider.por_restore(&c, &r).await
}

/// A read: the located version, then chunks of proven blocks, as a stream of frames.
async fn read(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let started = async {
        let client = authenticate(&app, &headers)?;
        let req: ReadRequest = message(body).await?;
        if req.start > req.end {
            return Err(Failure::from(RequestError::EmptyRange { start: req.start, end: req.end }));
        }
        let reading = app.provider.honest().files().reading(&client).await;
        let (located, plan) = app.provider.read_plan(&client, &req.name, req.version, req.start, req.end)?;
        drop(reading);
        Ok((client, located, plan))
    };
    let (client, located, plan) = match started.await {
        Ok(x) => x,
        Err(f) => return f.into_response(),
    };
    // Two frames queued for the reader, each sent as one buffer: sent as parts sharing the
    // blocks' bytes, a 512 MB read took three times as long (see `vouch_proto::put_frame_parts`).
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    tokio::spawn(async move {
        let located = Bytes::from(encode_frame(&ReadFrame::Located(located)));
        if tx.send(Ok(located)).await.is_err() {
            return;
        }
        // A few chunks read and encoded ahead, each in its own task: they go on while the
        // chunks before wait for the reader (a stream of futures would make no progress then),
        // so the backend's latency (an S3 round trip per chunk) overlaps with sending.
        let plan = Arc::new(plan);
        let read = |i: usize| {
            let (app, client, plan) = (app.clone(), client.clone(), plan.clone());
            tokio::spawn(async move {
                match app.provider.read_chunk(&client, &plan, &plan.chunks[i]).await {
                    Ok(chunk) => (Bytes::from(encode_frame(&ReadFrame::Chunk(chunk))), false),
                    Err(e) => (error_frame(Failure::from(e)), true),
                }
            })
        };
        let mut ahead: std::collections::VecDeque<_> = (0..plan.chunks.len().min(READ_AHEAD)).map(read).collect();
        let mut next = ahead.len();
        while let Some(task) = ahead.pop_front() {
            let (frame, stop) =
                task.await.unwrap_or_else(|e| (error_frame(Failure::from(RequestError::ReadTask(e))), true));
            if next < plan.chunks.len() && !stop {
                ahead.push_back(read(next));
                next += 1;
            }
            if tx.send(Ok(frame)).await.is_err() || stop {
                ahead.iter().for_each(tokio::task::JoinHandle::abort);
                return;
            }
        }
    });
    Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)).into_response()
}

/// Chunks of a read being fetched from the store at once.
const READ_AHEAD: usize = 3;

/// A read stream's last frame: what went wrong after it began.
fn error_frame(f: Failure) -> Bytes {
    Bytes::from(encode_frame(&ReadFrame::Error(ErrorBody { code: f.0, message: f.1 })))
}

/// A `stage`: frames [`PutFrame::Head`], blocks, [`PutFrame::Tail`], stored as they arrive
/// and kept for the `commit-staged` that commits them.
async fn stage(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    upload(app, headers, body).await
}

async fn commit_staged(app: Arc<App>, c: String, r: CommitStagedRequest) -> Served<CommitStagedRequest> {
    app.provider.commit_staged(&c, &r, &app.limits).await
}

async fn upload(app: Arc<App>, headers: HeaderMap, body: Body) -> Response {
    let started = std::time::Instant::now();
    let work = async {
        let client = authenticate(&app, &headers)?;
        let mut stream = body.into_data_stream();
        let mut decoder = Decoder::new();
        let mut state = None;
        let mut budget = PutBudget::default();
        loop {
            let frame = loop {
                if let Some(f) = decoder.next_frame().map_err(RequestError::Message)? {
                    break Some(f);
                }
                match tokio::time::timeout(app.limits.stream_idle, stream.next()).await {
                    Err(_) => return Err(Failure::from(RequestError::Stalled { idle: app.limits.stream_idle })),
                    Ok(None) => {
                        decoder.finish().map_err(RequestError::Message)?;
                        break None;
                    }
                    Ok(Some(Err(e))) => return Err(Failure::from(RequestError::BrokeOff(e))),
                    Ok(Some(Ok(bytes))) => decoder.extend(&bytes),
                }
            };
            let Some(frame) = frame else { return Err(Failure::from(RequestError::EndedEarly)) };
            // Blocks keep sharing the frame's bytes into their segment (no copy).
            match (decode_shared::<PutFrame>(&frame.freeze()).map_err(RequestError::Message)?, &mut state) {
                (PutFrame::Head(head), None) => {
                    let scheme =
                        SchemeId::from_byte(head.scheme).ok_or(RequestError::UnknownScheme { scheme: head.scheme })?;
                    let file = FileId(head.file);
                    state = Some(app.provider.begin_stage(&client, &head.name, file, scheme, head.attempt)?);
                }
                (PutFrame::Blocks(batch), Some(put)) => {
                    // Checked before the batch is stored; the put's segments so far are deleted
                    // when it is dropped (see `PutState`).
                    budget.take(&app.limits, &batch.blocks)?;
                    app.provider.put_blocks(put, batch.blocks).await?
                }
                (PutFrame::Tail(tail), Some(_)) => {
                    let record = VersionRecord::from_bytes(&tail.record).map_err(RequestError::Record)?;
                    read_to_end(&mut stream, &decoder, app.limits.stream_idle, Op::Stage).await?;
                    let put = state.take().expect("matched Some");
                    return Ok(ok(&app.provider.stage_upload(put, record, &app.limits).await?));
                }
                _ => return Err(Failure::from(RequestError::OutOfOrder { op: Op::Stage })),
            }
        }
    };
    with_timing(work.await.unwrap_or_else(IntoResponse::into_response), started)
}

/// A streamed request's body after its last frame, read to its end: nothing may follow the
/// frame. Read also so that the connection serves the client's next request: hyper closes a
/// connection whose request was left unread, while the client may already be sending its
/// next request on it (which then fails as a broken pipe, an honest provider unreachable).
pub(crate) async fn read_to_end(
    stream: &mut axum::body::BodyDataStream,
    decoder: &Decoder,
    idle: std::time::Duration,
    op: Op,
) -> Result<(), RequestError> {
    decoder.finish().map_err(|_| RequestError::AfterLast { op })?;
    loop {
        match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => return Err(RequestError::Stalled { idle }),
            Ok(None) => return Ok(()),
            Ok(Some(Err(e))) => return Err(RequestError::BrokeOff(e)),
            Ok(Some(Ok(bytes))) if bytes.is_empty() => {}
            Ok(Some(Ok(_))) => return Err(RequestError::AfterLast { op }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer past the protocol's size is never sent (the client would take it for a lie):
    /// the provider refuses for size instead, which the client reports as such.
    #[test]
    fn an_answer_larger_than_the_protocol_allows_is_a_refusal_for_size() {
        let small = ok(&serde_bytes::ByteBuf::from(vec![0; 16]));
        assert_eq!(small.status(), StatusCode::OK);
        let large = ok(&serde_bytes::ByteBuf::from(vec![0; MAX_MESSAGE]));
        assert_eq!(large.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}

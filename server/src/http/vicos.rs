//! VICOS's routes (paper 003, Sec. 4; messages in `vouch_proto::vicos`): the AIP sequencer's
//! `aip-*`, one request one answer, and the object store's `cos-*`, whose objects stream in
//! and out as frames. Authenticated like every route; the group, not the client, names what
//! is addressed (groups are shared: `crate::vicos`).

use super::{authenticate, message, ok, with_timing, App, Failure, RequestError, Served};
use crate::vicos::{CosReader, CosUpload};
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use serde_bytes::ByteBuf;
use std::sync::Arc;
use vouch_proto::frame::Decoder;
use vouch_proto::vicos::{
    AipAdmit, AipCommit, AipCommitAuth, AipCreate, AipHistory, AipInvoke, AipWorkRequest, CosDelete, CosGetFrame,
    CosObject, CosPutFrame,
};
use vouch_proto::{decode, encode_frame, ErrorBody, Op};

/// Bytes of an object per `cos-get` frame (the store's pieces are gathered up to this).
const GET_FRAME_BYTES: usize = 1 << 20;

pub(super) async fn aip_create(app: Arc<App>, caller: String, r: AipCreate) -> Served<AipCreate> {
    app.provider.aip_create(&r, &caller).await
}

pub(super) async fn aip_admit(app: Arc<App>, caller: String, r: AipAdmit) -> Served<AipAdmit> {
    app.provider.aip_admit(&r, &caller).await
}

pub(super) async fn aip_invoke(app: Arc<App>, caller: String, r: AipInvoke) -> Served<AipInvoke> {
    app.provider.aip_invoke(&r, &caller).await
}

pub(super) async fn aip_commit(app: Arc<App>, caller: String, r: AipCommit) -> Served<AipCommit> {
    app.provider.aip_commit(&r, &caller).await
}

pub(super) async fn aip_commit_auth(app: Arc<App>, caller: String, r: AipCommitAuth) -> Served<AipCommitAuth> {
    app.provider.aip_commit_auth(&r, &caller).await
}

pub(super) async fn aip_history(app: Arc<App>, caller: String, r: AipHistory) -> Served<AipHistory> {
    app.provider.aip_history(&r, &caller).await
}

pub(super) async fn aip_work(app: Arc<App>, caller: String, r: AipWorkRequest) -> Served<AipWorkRequest> {
    app.provider.aip_work(&r, &caller).await
}

pub(super) async fn cos_delete(app: Arc<App>, caller: String, r: CosDelete) -> Served<CosDelete> {
    app.provider.cos_delete(&r, &caller).await
}

/// `cos-put`: frames [`CosPutFrame::Head`], `Data`..., `End`; the bytes go to the store as
/// they arrive, bounded by `Limits::max_put_bytes`. An upload that fails or breaks off
/// leaves no object behind.
pub(super) async fn cos_put(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let started = std::time::Instant::now();
    let mut upload = None;
    let result = receive(&app, &headers, body, &mut upload).await;
    if let Some(upload) = upload {
        app.provider.cos_abort(upload).await;
    }
    with_timing(result.unwrap_or_else(IntoResponse::into_response), started)
}

/// The frames of a `cos-put`, into `upload` (left there for the caller to abort on an error).
async fn receive(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    upload: &mut Option<CosUpload>,
) -> Result<Response, Failure> {
    let caller = authenticate(app, headers)?;
    let mut stream = body.into_data_stream();
    let mut decoder = Decoder::new();
    loop {
        let frame = loop {
            if let Some(f) = decoder.next_frame().map_err(RequestError::Message)? {
                break f;
            }
            match tokio::time::timeout(app.limits.stream_idle, stream.next()).await {
                Err(_) => return Err(RequestError::Stalled { idle: app.limits.stream_idle }.into()),
                Ok(None) => {
                    decoder.finish().map_err(RequestError::Message)?;
                    return Err(RequestError::EndedEarly.into());
                }
                Ok(Some(Err(e))) => return Err(RequestError::BrokeOff(e).into()),
                Ok(Some(Ok(bytes))) => decoder.extend(&bytes),
            }
        };
        match (decode::<CosPutFrame>(&frame).map_err(RequestError::Message)?, upload.as_mut()) {
            (CosPutFrame::Head(object), None) => {
                *upload = Some(app.provider.cos_begin_put(&object, app.limits.max_put_bytes, &caller)?);
            }
            (CosPutFrame::Data(data), Some(up)) => {
                app.provider.cos_write(up, Bytes::from(data.into_vec())).await?;
            }
            (CosPutFrame::End, Some(_)) => {
                super::read_to_end(&mut stream, &decoder, app.limits.stream_idle, Op::CosPut).await?;
                let up = upload.take().expect("matched Some");
                return Ok(ok(&app.provider.cos_finish(up).await?));
            }
            _ => return Err(RequestError::OutOfOrder { op: Op::CosPut }.into()),
        }
    }
}

/// `cos-get`: the object as [`CosGetFrame::Data`] frames then `End`; a missing object is
/// `NotFound` before the stream, a failure after it began is an `Error` frame.
pub(super) async fn cos_get(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let started = async {
        let caller = authenticate(&app, &headers)?;
        let object: CosObject = message(body).await?;
        Ok::<_, Failure>(app.provider.cos_get(&object, &caller).await?)
    };
    let reader = match started.await {
        Ok(reader) => reader,
        Err(f) => return f.into_response(),
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    tokio::spawn(send(reader, tx));
    Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)).into_response()
}

/// Gathers the object's pieces into frames of [`GET_FRAME_BYTES`] and sends them; stops when
/// the reader goes away.
async fn send(mut reader: CosReader, tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>) {
    let frame = |f: &CosGetFrame| Ok(Bytes::from(encode_frame(f)));
    let mut held: Vec<u8> = Vec::with_capacity(GET_FRAME_BYTES);
    while let Some(piece) = reader.bytes.next().await {
        let piece = match piece {
            Ok(piece) => piece,
            Err(e) => {
                let f = Failure::from(crate::provider::ProviderError::Store(e));
                let _ = tx.send(frame(&CosGetFrame::Error(ErrorBody { code: f.0, message: f.1 }))).await;
                return;
            }
        };
        let mut piece = &piece[..];
        while !piece.is_empty() {
            let take = piece.len().min(GET_FRAME_BYTES - held.len());
            held.extend_from_slice(&piece[..take]);
            piece = &piece[take..];
            if held.len() == GET_FRAME_BYTES {
                let data = ByteBuf::from(std::mem::replace(&mut held, Vec::with_capacity(GET_FRAME_BYTES)));
                if tx.send(frame(&CosGetFrame::Data(data))).await.is_err() {
                    return;
                }
            }
        }
    }
    if !held.is_empty() && tx.send(frame(&CosGetFrame::Data(ByteBuf::from(held)))).await.is_err() {
        return;
    }
    let _ = tx.send(frame(&CosGetFrame::End)).await;
}

//! Bodies in and out. A put's body streams from the application into the client's upload
//! (which cuts and tags it on a blocking thread) through a small channel, hashed on the way;
//! a get's body streams out a verified range read at a time, so neither holds a whole
//! object in memory.

use crate::object::{etag_of, ObjectMeta};
use base64::Engine as _;
use bytes::Bytes;
use futures::StreamExt;
use md5::{Digest as _, Md5};
use s3s::dto::StreamingBlob;
use s3s::{s3_error, S3Error};
use std::io::Read;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use vouch_client::Client;

/// Bytes of one verified read of a get's body.
const READ_CHUNK: u64 = 4 << 20;
/// Chunks of a put's body in flight between the application and the upload.
const IN_FLIGHT: usize = 8;

/// A put's body, before it is read.
pub struct PutBody {
    body: Option<StreamingBlob>,
    /// The Content-MD5 the application sent (base64), to check the body against.
    content_md5: Option<String>,
}

/// How a put's body ended: its metadata with the ETag, or the S3 error that stopped it.
#[derive(Clone, Default)]
pub struct Outcome(Arc<Mutex<(Option<ObjectMeta>, Option<S3Error>)>>);

impl Outcome {
    pub fn meta(&self) -> Option<ObjectMeta> {
        self.0.lock().expect("put outcome").0.clone()
    }

    pub fn failure(&self) -> Option<S3Error> {
        self.0.lock().expect("put outcome").1.take()
    }

    fn fail(&self, e: S3Error) -> std::io::Error {
        let message = e.to_string();
        self.0.lock().expect("put outcome").1 = Some(e);
        std::io::Error::other(message)
    }
}

impl PutBody {
    pub fn new(body: Option<StreamingBlob>, content_md5: Option<String>) -> PutBody {
        PutBody { body, content_md5 }
    }

    /// The file's bytes as a blocking reader (the body, then `meta`'s trailer with the
    /// body's ETag), and where its outcome will be.
    pub fn into_reader(self, meta: ObjectMeta) -> (impl Read + Send + 'static, Outcome) {
        let (tx, rx) = mpsc::channel(IN_FLIGHT);
        if let Some(mut body) = self.body {
            tokio::spawn(async move {
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.map_err(|e| e.to_string());
                    let failed = chunk.is_err();
                    if tx.send(chunk).await.is_err() || failed {
                        break;
                    }
                }
            });
        }
        let outcome = Outcome::default();
        let reader = BodyReader {
            rx,
            chunk: Bytes::new(),
            md5: Md5::new(),
            want_md5: self.content_md5,
            meta: Some(meta),
            tail: None,
            outcome: outcome.clone(),
        };
        (reader, outcome)
    }
}

struct BodyReader {
    rx: mpsc::Receiver<Result<Bytes, String>>,
    chunk: Bytes,
    md5: Md5,
    want_md5: Option<String>,
    meta: Option<ObjectMeta>,
    tail: Option<std::io::Cursor<Vec<u8>>>,
    outcome: Outcome,
}

impl BodyReader {
    /// The body is over: its ETag goes into the metadata, which follows it.
    fn finish(&mut self) -> std::io::Result<()> {
        let md5 = std::mem::take(&mut self.md5).finalize();
        if let Some(want) = &self.want_md5 {
            let given = base64::engine::general_purpose::STANDARD.decode(want).ok();
            if given.as_deref() != Some(&md5[..]) {
                return Err(self.outcome.fail(s3_error!(BadDigest, "the body does not match its Content-MD5")));
            }
        }
        let mut meta = self.meta.take().expect("finished once");
        meta.etag = etag_of(&md5);
        self.tail = Some(std::io::Cursor::new(meta.trailer_bytes()));
        self.outcome.0.lock().expect("put outcome").0 = Some(meta);
        Ok(())
    }
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if let Some(tail) = &mut self.tail {
                return tail.read(buf);
            }
            if !self.chunk.is_empty() {
                let n = buf.len().min(self.chunk.len());
                let part = self.chunk.split_to(n);
                self.md5.update(&part);
                buf[..n].copy_from_slice(&part);
                return Ok(n);
            }
            // On the upload's blocking thread, never on the runtime's.
            match self.rx.blocking_recv() {
                Some(Ok(chunk)) => self.chunk = chunk,
                Some(Err(e)) => return Err(self.outcome.fail(s3_error!(IncompleteBody, "the body broke off: {e}"))),
                None => self.finish()?,
            }
        }
    }
}

/// Bytes `range` of version `version` of `name`, a verified read of [`READ_CHUNK`] at a time.
/// A read that fails verification ends the stream with an error: the application sees a
/// broken transfer, never bytes that did not verify.
pub fn body_stream(client: Arc<Client>, name: String, version: u64, range: Range<u64>) -> StreamingBlob {
    // Read ahead on a task of its own, a chunk or two: the body's consumer pulls from the
    // channel (which, unlike the read's future, is `Sync`, as s3s asks of a body).
    let (tx, mut rx) = mpsc::channel::<std::io::Result<Bytes>>(1);
    tokio::spawn(async move {
        let mut at = range.start;
        while at < range.end {
            let upto = range.end.min(at + READ_CHUNK);
            let mut out = Vec::with_capacity((upto - at) as usize);
            let chunk = match client.get(&name, Some(version), Some(at..upto), &mut out).await {
                Ok(_) => Ok(Bytes::from(out)),
                Err(e) => {
                    tracing::error!("{name}: a read of the body failed: {e}");
                    Err(std::io::Error::other(e.to_string()))
                }
            };
            let failed = chunk.is_err();
            // The application went away, or the read failed: stop.
            if tx.send(chunk).await.is_err() || failed {
                return;
            }
            at = upto;
        }
    });
    StreamingBlob::wrap(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

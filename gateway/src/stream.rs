//! Bodies in and out. A put's body comes from the application through a small channel,
//! within [`Deadlines`], hashed on the way, into a [`spool`] (memory, then a temporary file):
//! only the spooled file goes to the client's upload, so no lock waits on an application. A
//! get's body streams out a verified range read at a time. Neither holds a whole large
//! object in memory.

use crate::errors::to_s3;
use crate::metrics::Metrics;
use crate::object::{etag_of, ObjectMeta};
use base64::Engine as _;
use bytes::Bytes;
use futures::StreamExt;
use md5::{Digest as _, Md5};
use s3s::checksum::ChecksumHasher;
use s3s::dto::{Checksum, StreamingBlob};
use s3s::{s3_error, S3Error, S3ErrorCode, S3Result, TrailingHeaders};
use std::io::Read;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use vouch_client::Client;

/// Bytes of one verified read of a get's body.
const READ_CHUNK: u64 = 4 << 20;
/// Chunks of a put's body in flight between the application and the upload.
const IN_FLIGHT: usize = 8;
/// Bytes of a spooled put a spool keeps in memory; a longer one goes to a temporary file.
const SPOOL_MEMORY: usize = 4 << 20;

/// How slowly an application's body may arrive: it may pause at most `idle`, and once its
/// first `idle` is over it must have come at `min_rate` bytes a second on average (0: no
/// minimum). Only the time spent waiting on the application counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadlines {
    pub idle: std::time::Duration,
    pub min_rate: u64,
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines { idle: std::time::Duration::from_secs(30), min_rate: 16 << 10 }
    }
}

impl Deadlines {
    /// How long the next chunk may take, after `received` bytes came in `waited`.
    fn allowed(&self, waited: std::time::Duration, received: u64) -> std::time::Duration {
        if self.min_rate == 0 {
            return self.idle;
        }
        let paced = self.idle + std::time::Duration::from_secs_f64(received as f64 / self.min_rate as f64);
        paced.saturating_sub(waited).min(self.idle)
    }
}

/// A put's body, before it is read.
pub struct PutBody {
    body: Option<StreamingBlob>,
    /// The Content-MD5 the application sent (base64), to check the body against.
    content_md5: Option<String>,
    /// The checksums the application sent in headers (`x-amz-checksum-*`, base64).
    claimed: Checksum,
    /// The checksum it sends after the body (an aws-chunked trailer): its header's name, and
    /// where s3s puts the trailer once the body is read.
    trailer: Option<(String, TrailingHeaders)>,
    /// The ETag to store instead of the body's MD5 (a completed multipart upload's).
    etag: Option<String>,
    /// A checksum to compute and store, by its header, where none is claimed (a whole-object
    /// checksum of a completed upload, a part copied into an upload that names one).
    computed: Option<String>,
    /// How slowly the body may arrive; `None` for a source the gateway reads itself (a copy's,
    /// an upload's parts: the client's own deadlines bound its reads of the provider).
    deadlines: Option<Deadlines>,
}

/// The field of `sums` for the checksum header `header`.
fn field<'a>(sums: &'a mut Checksum, header: &str) -> Option<&'a mut Option<String>> {
    Some(match header {
        "x-amz-checksum-crc32" => &mut sums.checksum_crc32,
        "x-amz-checksum-crc32c" => &mut sums.checksum_crc32c,
        "x-amz-checksum-crc64nvme" => &mut sums.checksum_crc64nvme,
        "x-amz-checksum-sha1" => &mut sums.checksum_sha1,
        "x-amz-checksum-sha256" => &mut sums.checksum_sha256,
        _ => return None,
    })
}

/// A hasher of every algorithm `claimed` has a value for, or `trailer` or `computed` names.
fn hasher_for(claimed: &Checksum, trailer: Option<&str>, computed: Option<&str>) -> ChecksumHasher {
    let mut wanted = claimed.clone();
    for name in [trailer, computed].into_iter().flatten() {
        if let Some(slot) = field(&mut wanted, name) {
            *slot = Some(String::new());
        }
    }
    ChecksumHasher {
        crc32: wanted.checksum_crc32.is_some().then(Default::default),
        crc32c: wanted.checksum_crc32c.is_some().then(Default::default),
        crc64nvme: wanted.checksum_crc64nvme.is_some().then(Default::default),
        sha1: wanted.checksum_sha1.is_some().then(Default::default),
        sha256: wanted.checksum_sha256.is_some().then(Default::default),
    }
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
        let deadlines = Some(Deadlines::default());
        PutBody {
            body,
            content_md5,
            claimed: Checksum::default(),
            trailer: None,
            etag: None,
            computed: None,
            deadlines,
        }
    }

    /// The body may arrive as slowly as `deadlines` say (`None`: it is the gateway's own read).
    pub fn with_deadlines(mut self, deadlines: Option<Deadlines>) -> Self {
        self.deadlines = deadlines;
        self
    }

    /// The body stored with `etag` instead of its MD5.
    pub fn with_etag(mut self, etag: String) -> Self {
        self.etag = Some(etag);
        self
    }

    /// The checksum whose header is `header` computed over the body and stored with it,
    /// unless one is claimed for it (then checked, as any claim).
    pub fn with_computed(mut self, header: Option<String>) -> Self {
        self.computed = header;
        self
    }

    /// Whether the body comes with a checksum `header` to check it against (in a header or
    /// a trailer).
    pub fn claims(&self, header: &str) -> bool {
        let mut claimed = self.claimed.clone();
        let in_header = field(&mut claimed, header).is_some_and(|v| v.is_some());
        in_header || self.trailer.as_ref().is_some_and(|(name, _)| name == header)
    }

    /// The checksums to check the body against: `claimed` in headers, and the one in the
    /// trailer `trailer` names (`x-amz-trailer`), which `trailers` holds once the body is read.
    pub fn with_checksums(
        mut self,
        claimed: Checksum,
        trailer: Option<String>,
        trailers: Option<TrailingHeaders>,
    ) -> Self {
        self.claimed = claimed;
        self.trailer = trailer.map(|t| t.trim().to_ascii_lowercase()).zip(trailers);
        self
    }

    /// The file's bytes, chunk by chunk (the body, then `meta`'s trailer with the body's
    /// ETag), for [`spool`] or [`BodyReader::copy_to`]; and where its outcome will be.
    pub fn into_reader(self, meta: ObjectMeta) -> (BodyReader, Outcome) {
        let (tx, rx) = mpsc::channel(IN_FLIGHT);
        if let Some(mut body) = self.body {
            let deadlines = self.deadlines;
            tokio::spawn(async move {
                let (mut waited, mut received) = (std::time::Duration::ZERO, 0u64);
                loop {
                    let began = tokio::time::Instant::now();
                    let next = match deadlines {
                        Some(d) => tokio::time::timeout(d.allowed(waited, received), body.next()).await,
                        None => Ok(body.next().await),
                    };
                    waited += began.elapsed();
                    let chunk = match next {
                        Ok(Some(chunk)) => chunk.map_err(broken_body),
                        Ok(None) => break,
                        // A body that trickles would hold a connection and a spool (and the
                        // locks of whatever waits for it) as long as it likes.
                        Err(_) => Err(s3_error!(
                            RequestTimeout,
                            "the body arrived too slowly ({received} bytes in {} s)",
                            waited.as_secs()
                        )),
                    };
                    received += chunk.as_ref().map_or(0, |c| c.len() as u64);
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
            md5: Md5::new(),
            sums: hasher_for(
                &self.claimed,
                self.trailer.as_ref().map(|(name, _)| name.as_str()),
                self.computed.as_deref(),
            ),
            claimed: self.claimed,
            trailer: self.trailer,
            etag: self.etag,
            computed: self.computed,
            want_md5: self.content_md5,
            meta: Some(meta),
            tail: None,
            outcome: outcome.clone(),
        };
        (reader, outcome)
    }
}

/// Why a put's body ended before its end, as the S3 error to answer with: a source read
/// through the gateway (a copy's, a completed upload's parts) that caught its provider lying
/// is that lie (502 [`crate::errors::VIOLATION_CODE`]), never the application's incomplete
/// body; anything else is the body breaking off.
fn broken_body(e: s3s::StdError) -> S3Error {
    match e.downcast::<ReadFailed>() {
        Ok(failed) => failed.into_s3(),
        Err(e) => s3_error!(IncompleteBody, "the body broke off: {e}"),
    }
}

/// A put's body as it arrives, hashed, then its metadata's trailer ([`spool`] reads it).
pub struct BodyReader {
    rx: mpsc::Receiver<Result<Bytes, S3Error>>,
    md5: Md5,
    sums: ChecksumHasher,
    claimed: Checksum,
    trailer: Option<(String, TrailingHeaders)>,
    etag: Option<String>,
    computed: Option<String>,
    want_md5: Option<String>,
    meta: Option<ObjectMeta>,
    /// After the body: its metadata's trailer, until taken.
    tail: Option<Option<Bytes>>,
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
        meta.etag = self.etag.take().unwrap_or_else(|| etag_of(&md5));
        // Beside any the metadata has already (a completed upload's, made of its parts').
        meta.checksums.extend(self.check_sums()?);
        self.tail = Some(Some(Bytes::from(meta.trailer_bytes())));
        self.outcome.0.lock().expect("put outcome").0 = Some(meta);
        Ok(())
    }
}

impl BodyReader {
    /// The checksums the application sent, each checked against the body: by header name.
    fn check_sums(&mut self) -> std::io::Result<std::collections::BTreeMap<String, String>> {
        let mut claimed = std::mem::take(&mut self.claimed);
        if let Some((name, trailers)) = &self.trailer {
            let sent = trailers.read(|h| h.get(name.as_str()).and_then(|v| v.to_str().ok()).map(str::to_string));
            match (sent.flatten(), field(&mut claimed, name)) {
                (Some(value), Some(slot)) => *slot = Some(value),
                (None, _) => {
                    return Err(self.outcome.fail(s3_error!(InvalidRequest, "the trailer {name} did not arrive")));
                }
                (_, None) => {
                    return Err(self
                        .outcome
                        .fail(s3_error!(InvalidRequest, "{name} is no checksum this gateway knows")));
                }
            }
        }
        let mut computed = std::mem::take(&mut self.sums).finalize();
        let mut checked = std::collections::BTreeMap::new();
        for header in crate::upload_sums::HEADERS {
            let (Some(Some(want)), Some(got)) =
                (field(&mut claimed, header).map(|v| v.take()), field(&mut computed, header))
            else {
                continue;
            };
            if got.as_deref() != Some(want.as_str()) {
                return Err(self.outcome.fail(s3_error!(BadDigest, "the body does not match its {header}")));
            }
            checked.insert(header.to_string(), want);
        }
        if let Some(header) = self.computed.take() {
            if let (false, Some(Some(got))) =
                (checked.contains_key(&header), field(&mut computed, &header).map(Option::take))
            {
                checked.insert(header, got);
            }
        }
        Ok(checked)
    }
}

impl BodyReader {
    /// The body's next chunk, hashed, as it arrived (no copy); after the body, `meta`'s
    /// trailer; then `None`. Blocking: on the spool's blocking thread, never the runtime's.
    fn next_chunk(&mut self) -> std::io::Result<Option<Bytes>> {
        loop {
            if let Some(tail) = &mut self.tail {
                return Ok(tail.take());
            }
            match self.rx.blocking_recv() {
                Some(Ok(chunk)) if chunk.is_empty() => continue,
                Some(Ok(chunk)) => {
                    self.md5.update(&chunk);
                    self.sums.update(&chunk);
                    return Ok(Some(chunk));
                }
                Some(Err(e)) => return Err(self.outcome.fail(e)),
                None => self.finish()?,
            }
        }
    }

    /// Writes the whole of it to `out` (blocking, as [`BodyReader::next_chunk`]).
    pub fn copy_to(mut self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        while let Some(chunk) = self.next_chunk()? {
            out.write_all(&chunk)?;
        }
        Ok(())
    }
}

/// A put's file, read whole (its chunks in memory as they arrived, then past
/// [`SPOOL_MEMORY`] a temporary file), to be read again from its start.
pub enum Spooled {
    Memory(Chunks),
    File(std::io::BufReader<std::fs::File>),
}

/// Chunks read one after the other.
pub struct Chunks(std::collections::VecDeque<Bytes>);

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while let Some(front) = self.0.front_mut() {
            if front.is_empty() {
                self.0.pop_front();
                continue;
            }
            let n = buf.len().min(front.len());
            buf[..n].copy_from_slice(&front.split_to(n));
            return Ok(n);
        }
        Ok(0)
    }
}

impl Read for Spooled {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Spooled::Memory(chunks) => chunks.read(buf),
            Spooled::File(file) => file.read(buf),
        }
    }
}

/// Everything `reader` gives, spooled (blocking: on a blocking thread). The chunks are kept
/// as they arrived, not copied into one buffer, while they fit [`SPOOL_MEMORY`].
pub fn spool(mut reader: BodyReader) -> std::io::Result<Spooled> {
    use std::io::{Seek, Write};
    let (mut memory, mut held) = (std::collections::VecDeque::new(), 0usize);
    while let Some(chunk) = reader.next_chunk()? {
        held += chunk.len();
        memory.push_back(chunk);
        if held > SPOOL_MEMORY {
            // Unnamed, so that nothing is left behind whatever happens to the gateway.
            let mut file = std::io::BufWriter::new(tempfile::tempfile()?);
            for chunk in memory.drain(..) {
                file.write_all(&chunk)?;
            }
            reader.copy_to(&mut file)?;
            let mut file = file.into_inner().map_err(|e| e.into_error())?;
            file.seek(std::io::SeekFrom::Start(0))?;
            return Ok(Spooled::File(std::io::BufReader::new(file)));
        }
    }
    Ok(Spooled::Memory(Chunks(memory)))
}

/// One stretch of a body: bytes `range` of version `version` of the file `name`.
pub struct Piece {
    pub name: String,
    pub version: u64,
    pub range: Range<u64>,
}

/// A read of a body's stream that failed after the stream was handed out: the stream's error.
/// A gateway operation that consumes the stream itself (a copy, a completed upload) answers
/// with it ([`ReadFailed::into_s3`]); one that does not (a GetObject whose headers went out,
/// whose application sees a broken transfer) drops it, and a violation is counted then. So
/// a caught lie is counted once either way: by the answer that names it, or here.
#[derive(Debug)]
pub struct ReadFailed {
    error: Option<vouch_client::ClientError>,
    metrics: Arc<Metrics>,
}

impl ReadFailed {
    /// The S3 error to answer with (counted by the answer's violation header, not here).
    pub fn into_s3(mut self) -> S3Error {
        match self.error.take() {
            Some(e) => to_s3(e, S3ErrorCode::NoSuchKey),
            None => s3_error!(InternalError, "a read failed"),
        }
    }
}

impl std::fmt::Display for ReadFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.error {
            Some(e) => write!(f, "a read of the body failed: {e}"),
            None => f.write_str("a read of the body failed"),
        }
    }
}

impl std::error::Error for ReadFailed {}

impl Drop for ReadFailed {
    fn drop(&mut self) {
        if let Some(kind) = self.error.as_ref().and_then(|e| e.violation_kind()) {
            self.metrics.violation(&kind.to_string());
        }
    }
}

/// The bytes of `pieces`, one after the other, a verified read of [`READ_CHUNK`] at a time.
/// The first read is made before this returns, so that a lie caught there (in any read of up
/// to [`READ_CHUNK`] bytes, the whole of it) is an S3 error with the violation's code; a later
/// read that fails verification ends the stream with a [`ReadFailed`]: an application reading
/// the stream sees a broken transfer, never bytes that did not verify, and a gateway
/// operation reading it answers with the violation.
pub async fn body_stream(client: Arc<Client>, metrics: Arc<Metrics>, pieces: Vec<Piece>) -> S3Result<StreamingBlob> {
    let mut reads: std::collections::VecDeque<(String, u64, Range<u64>)> = pieces
        .into_iter()
        .flat_map(|Piece { name, version, range }| {
            let starts = (range.start..range.end).step_by(READ_CHUNK as usize);
            starts.map(move |at| (name.clone(), version, at..range.end.min(at + READ_CHUNK)))
        })
        .collect();
    let first = match reads.pop_front() {
        Some((name, version, range)) => {
            Some(read(&client, &name, version, range).await.map_err(|e| to_s3(e, S3ErrorCode::NoSuchKey))?)
        }
        None => None,
    };
    // Read ahead on a task of its own, a chunk or two: the body's consumer pulls from the
    // channel (which, unlike the read's future, is `Sync`, as s3s asks of a body).
    let (tx, mut rx) = mpsc::channel::<Result<Bytes, ReadFailed>>(1);
    tokio::spawn(async move {
        if let Some(first) = first {
            if tx.send(Ok(first)).await.is_err() {
                return;
            }
        }
        for (name, version, range) in reads {
            let chunk = read(&client, &name, version, range).await.map_err(|e| {
                match e.violation_kind() {
                    Some(kind) => tracing::error!(%kind, "{name}: the provider misbehaved in a read of the body: {e}"),
                    None => tracing::warn!("{name}: a read of the body failed: {e}"),
                }
                ReadFailed { error: Some(e), metrics: metrics.clone() }
            });
            let failed = chunk.is_err();
            // The application went away, or the read failed: stop.
            if tx.send(chunk).await.is_err() || failed {
                return;
            }
        }
    });
    Ok(StreamingBlob::wrap(futures::stream::poll_fn(move |cx| rx.poll_recv(cx))))
}

/// Bytes `range` of version `version` of `name`, verified.
async fn read(
    client: &Client,
    name: &str,
    version: u64,
    range: Range<u64>,
) -> Result<Bytes, vouch_client::ClientError> {
    let mut out = Vec::with_capacity((range.end - range.start) as usize);
    client.get(name, Some(version), Some(range), &mut out).await?;
    Ok(Bytes::from(out))
}

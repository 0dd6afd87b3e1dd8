//! A put's upload, the half that runs on a blocking thread: the input cut into blocks, the
//! blocks tagged and sent a batch per frame, the intent recorded, then the version record
//! sent as the last frame. The frames reach the request body through a channel; the async
//! half ([`crate::Client::put`]) streams them and checks the answer.

use crate::chunking::{ChunkSource, Cutting, CDC_MAX};
use crate::error::ClientError;
use crate::keys::{ClientKey, Keys};
use crate::remote::Remote;
use crate::verify::Verified;
use bytes::Bytes;
use serde_bytes::ByteBuf;
use std::io::Read;
use std::sync::Arc;
use vouch_core::namespace::VersionRecord;
use vouch_core::pdp::{FileId, TaggedBlock, Upload};
use vouch_core::por::copy::TaggedData;
use vouch_proto::{shared_or_copied, Attempt, BlockBatch, Op, PutFrame, PutHead, PutTail, StagedUpload, WireBlock};

/// Bytes of blocks per upload frame.
const UPLOAD_BATCH_BYTES: usize = 4 << 20;

/// The channel the frames go to the request body through.
pub(crate) type FrameSender = tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>;

/// Where a put's new version goes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewVersion {
    pub file: FileId,
    pub number: u64,
    /// Nonces continue from the latest version's (the older versions' blocks keep theirs).
    pub first_nonce: u64,
}

impl NewVersion {
    /// The version after the proven `latest`, or the first of a new file (marked for PoR
    /// when `por`, see `crate::por`).
    pub(crate) fn after(latest: Option<&Verified>, por: bool) -> NewVersion {
        match latest {
            Some(v) => {
                NewVersion { file: v.entry.file, number: v.entry.next_version, first_nonce: v.record.next_nonce }
            }
            None => NewVersion { file: new_file_id(por), number: 1, first_nonce: 0 },
        }
    }
}

/// A fresh file id, marked for PoR or not (an unmarked one never starts with the mark, see
/// `crate::por`).
fn new_file_id(por: bool) -> FileId {
    loop {
        if let Some(id) = vouch_core::por::copy::file_id(rand::random(), por) {
            return id;
        }
    }
}

/// One put's upload (see the module documentation).
pub(crate) struct PutUpload {
    pub keys: Arc<Keys>,
    pub name: String,
    pub version: NewVersion,
    pub cutting: Cutting,
    pub frames: FrameSender,
    /// Named by the head, and by the commit's intent (see [`crate::Intent`]).
    pub attempt: Attempt,
    /// Keep the tagged blocks (for the version's PoR copy, or the portal cache) while they
    /// are no more than this many bytes; past it, none are kept.
    pub keep_blocks: Option<u64>,
}

/// A put's frames in flight, counted in frame parts (about two per block): a few frames.
pub(crate) fn frame_channel() -> (FrameSender, tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>) {
    tokio::sync::mpsc::channel(2048)
}

/// Stages `upload` through `remote` (`stage`): its blocks are tagged and sent as they are cut
/// (`frames` is the receiving end of its [`PutUpload::frames`]), and the provider stores them
/// and checks them against the record. Nothing is committed: the caller commits the upload
/// (`commit-staged`, [`crate::commit::Commit::commit_staged`]).
pub(crate) async fn stage(
    remote: &Remote,
    upload: PutUpload,
    frames: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    reader: impl Read + Send + 'static,
    progress: impl Fn(u64) + Send + 'static,
) -> Result<Uploaded, ClientError> {
    let producer = tokio::task::spawn_blocking(move || upload.run(reader, progress));
    let staged =
        remote.call_streaming::<StagedUpload>(Op::Stage, tokio_stream::wrappers::ReceiverStream::new(frames)).await;
    let produced =
        producer.await.map_err(|e| ClientError::Io { what: "upload".into(), source: std::io::Error::other(e) })?;
    staged?;
    produced
}

/// What an upload sent: the version record, its block count, and the blocks when kept.
pub(crate) type Uploaded = (VersionRecord, u64, Vec<TaggedData>);

impl PutUpload {
    /// Sends the whole upload. Returns the version record sent and how many blocks it has.
    fn run(self, reader: impl Read, progress: impl Fn(u64)) -> Result<Uploaded, ClientError> {
        let key = self.keys.owner()?;
        let NewVersion { file, number, first_nonce } = self.version;
        self.send(&PutFrame::Head(PutHead {
            name: self.name.clone(),
            file: file.0,
            scheme: key.scheme() as u8,
            attempt: self.attempt,
        }))?;
        let block_size = match self.cutting {
            Cutting::Fixed(n) => n,
            Cutting::Content => CDC_MAX as usize,
        };
        // A fresh salt per attempt: a retry after a refused commit reuses the nonces.
        let mut upload = Upload::continuing(key, rand::random(), file, block_size, first_nonce).map_err(bad_input)?;
        let mut batch = Batch {
            kept: self.keep_blocks.map(|_| Vec::new()),
            keep_limit: self.keep_blocks.unwrap_or(0),
            ..Batch::default()
        };
        let total = self.send_blocks(&mut upload, reader, &mut batch, &progress)?;
        let (state, _list) = upload.finish(|t, d| batch.add(t, Bytes::copy_from_slice(d))).map_err(bad_input)?;
        self.flush(&mut batch)?;
        progress(total);
        let record = VersionRecord {
            number,
            scheme: key.scheme(),
            file,
            root: state.root,
            len: state.len,
            next_nonce: state.next_nonce,
            time: unix_now(),
        };
        self.send(&PutFrame::Tail(PutTail { record: ByteBuf::from(record.to_bytes().to_vec()) }))?;
        Ok((record, state.next_nonce - first_nonce, batch.kept.unwrap_or_default()))
    }

    /// Cuts `reader` into blocks, tags them and sends them a batch at a time. Returns the
    /// bytes read.
    fn send_blocks(
        &self,
        upload: &mut Upload<'_, ClientKey>,
        reader: impl Read,
        batch: &mut Batch,
        progress: &impl Fn(u64),
    ) -> Result<u64, ClientError> {
        let mut total = 0u64;
        let mut chunks = ChunkSource::new(reader, self.cutting);
        while let Some(blocks) = chunks.next_batch(UPLOAD_BATCH_BYTES)? {
            total += blocks.iter().map(|b| b.len() as u64).sum::<u64>();
            // The blocks read are shared into the frames, not copied (a block joined from two
            // reads by a fixed-size upload is the exception).
            match self.cutting {
                Cutting::Fixed(_) => {
                    for b in &blocks {
                        upload.push(b, |t, d| batch.add(t, shared_or_copied(b, d)));
                    }
                }
                Cutting::Content => {
                    let refs: Vec<&[u8]> = blocks.iter().map(|b| &b[..]).collect();
                    let mut owners = blocks.iter();
                    upload
                        .push_blocks(&refs, |t, d| {
                            let data =
                                owners.next().map_or_else(|| Bytes::copy_from_slice(d), |b| shared_or_copied(b, d));
                            batch.add(t, data)
                        })
                        .map_err(bad_input)?;
                }
            }
            if batch.bytes >= UPLOAD_BATCH_BYTES {
                self.flush(batch)?;
                progress(total);
            }
        }
        Ok(total)
    }

    /// Sends the batch's blocks, if any, as one frame.
    fn flush(&self, batch: &mut Batch) -> Result<(), ClientError> {
        if batch.blocks.is_empty() {
            return Ok(());
        }
        batch.bytes = 0;
        self.send(&PutFrame::Blocks(BlockBatch { blocks: std::mem::take(&mut batch.blocks) }))
    }

    /// A frame goes out in parts that share the blocks' bytes (no copy into a frame).
    fn send(&self, frame: &PutFrame) -> Result<(), ClientError> {
        vouch_proto::put_frame_parts(frame).into_iter().try_for_each(|part| {
            self.frames.blocking_send(Ok(part)).map_err(|_| ClientError::Io {
                what: "upload".into(),
                source: std::io::Error::other("the provider closed the upload"),
            })
        })
    }
}

/// Tagged blocks waiting for their frame.
#[derive(Default)]
struct Batch {
    blocks: Vec<WireBlock>,
    bytes: usize,
    /// Every block sent, when kept (their bytes shared, not copied), up to `keep_limit` bytes.
    kept: Option<Vec<TaggedData>>,
    keep_limit: u64,
    kept_bytes: u64,
}

impl Batch {
    fn add(&mut self, t: &TaggedBlock, data: Bytes) {
        self.bytes += data.len();
        self.kept_bytes += data.len() as u64;
        if self.kept_bytes > self.keep_limit {
            self.kept = None;
        }
        if let Some(kept) = &mut self.kept {
            kept.push(TaggedData { nonce: t.nonce, tag: t.tag.clone(), data: data.clone() });
        }
        self.blocks.push(WireBlock { nonce: t.nonce, tag: ByteBuf::from(t.tag.clone()), data });
    }
}

fn bad_input(e: impl std::fmt::Display) -> ClientError {
    ClientError::BadInput(e.to_string())
}

/// What a put, edit or get did, for reports.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Transfer {
    pub name: String,
    pub version: u64,
    pub bytes: u64,
    pub blocks: u64,
    /// Proof bytes received and checked.
    pub proof_bytes: u64,
    pub seconds: f64,
}

/// Seconds since the Unix epoch by this machine's clock (0 before it): the time a version
/// or an object records.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

pub(crate) fn committed_proof_bytes(c: &vouch_proto::Committed) -> u64 {
    let opt = |b: &Option<serde_bytes::ByteBuf>| b.as_ref().map_or(0, |b| b.len() as u64);
    c.lookup.proof.len() as u64 + opt(&c.file_update) + opt(&c.versions_update) + c.namespace_update.len() as u64
}

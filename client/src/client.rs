//! The client's operations: each request's answer is verified against the namespace root
//! before anything is returned, written or saved.

use crate::chunking::{ChunkSource, Cutting, CDC_MAX};
use crate::error::ClientError;
use crate::intent::{self, Intent, Planned};
use crate::remote::Remote;
use crate::state::{Root, StateDir};
use crate::violation::ViolationKind;
use bytes::Bytes;
use rayon::prelude::*;
use serde_bytes::ByteBuf;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::Path;
use std::time::Instant;
use vouch_core::namespace::{
    check_name, proof_from_bytes, verify_commit, verify_listing, verify_log, verify_lookup, verify_version,
    verify_versions, Change, CommitProof, EntryRecord, Found, LookupProof, VersionProof, VersionRecord,
};
use vouch_core::pdp::linear::LinearKey;
use vouch_core::pdp::{self, Challenge, FileId, PossessionProof, SchemeId, Tagger, Upload};
use vouch_core::{hash, verify_multi_proof, MultiProof, UpdateProof};
use vouch_proto::Op;
use vouch_proto::{
    AuditAnswer, AuditRequest, BlockBatch, Committed, ListRequest, Listing, Located, Log, LogRequest, LookupRequest,
    PruneRequest, PutFrame, PutHead, PutTail, ReadChunk, ReadFrame, ReadRequest, RemoveRequest, WireBlock, WireLookup,
};

/// Bytes of blocks per upload frame.
const UPLOAD_BATCH_BYTES: usize = 4 << 20;

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

#[derive(Clone, Debug, serde::Serialize)]
pub struct AuditReport {
    pub name: String,
    pub version: u64,
    pub file_bytes: u64,
    pub challenged_offsets: u32,
    pub challenged_blocks: usize,
    pub proof_bytes: usize,
    pub verified: bool,
    pub seconds: f64,
}

/// A verified version: its entry and record.
#[derive(Clone, Debug)]
pub struct Verified {
    pub entry: EntryRecord,
    pub record: VersionRecord,
}

pub struct Client {
    pub(crate) state: StateDir,
    pub(crate) remote: Remote,
    pub(crate) key: LinearKey,
    /// The change sent and not yet settled, as in the state directory's `intent` file.
    pub(crate) pending: std::sync::Mutex<Option<Intent>>,
    /// Taken while a pending change is being settled (one settles, the others wait).
    pub(crate) settling: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("dir", &self.state.dir).field("remote", &self.remote).finish()
    }
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

pub(crate) fn lookup_from_wire(w: &WireLookup) -> Result<LookupProof, ClientError> {
    Ok(LookupProof {
        index: w.index,
        entries: w
            .entries
            .iter()
            .map(|e| EntryRecord::from_bytes(e))
            .collect::<Result<_, _>>()
            .map_err(ClientError::caught(ViolationKind::BadLookupProof))?,
        proof: proof_from_bytes(w.proof.to_vec()).map_err(ClientError::caught(ViolationKind::BadLookupProof))?,
    })
}

pub(crate) fn update_from_wire(bytes: &ByteBuf) -> Result<UpdateProof, ClientError> {
    UpdateProof::from_bytes(bytes).map_err(ClientError::caught(ViolationKind::BadCommitProof))
}

impl Client {
    /// Opens the client whose state is in `dir`.
    pub fn open(dir: &Path) -> Result<Client, ClientError> {
        let state = StateDir::open(dir)?;
        let transport = crate::transport::Transport::from_config(&state.dir, &state.config)?;
        let remote = Remote::with(&state.config.server, &state.secret.token, &transport)?;
        let key = LinearKey::from_secret(state.secret.key);
        let pending = std::sync::Mutex::new(intent::load(&state.dir)?);
        Ok(Client { state, remote, key, pending, settling: tokio::sync::Mutex::new(()) })
    }

    /// Creates a client state in `dir` (fresh key) for the provider at `server`.
    pub fn init(dir: &Path, server: &str, token: &str) -> Result<Client, ClientError> {
        Remote::new(server, token)?;
        StateDir::init(dir, server, token)?;
        Client::open(dir)
    }

    /// The namespace root as saved (before a change left unsettled by a crash is settled: every
    /// operation that talks to the provider settles it first).
    pub fn root(&self) -> Root {
        self.state.root()
    }

    /// The provider's reported time for the last request (measurements only; not verified).
    pub fn last_server_time(&self) -> Option<std::time::Duration> {
        self.remote.last_server_time()
    }

    pub fn server(&self) -> &str {
        &self.state.config.server
    }

    pub async fn health(&self) -> Result<vouch_proto::Health, ClientError> {
        self.remote.health().await
    }

    /// Checks a located answer: the name's lookup, then the version asked for.
    pub(crate) fn verify_located(
        &self,
        name: &str,
        want: Option<u64>,
        located: &Located,
    ) -> Result<(Found, Option<Verified>), ClientError> {
        let lookup = lookup_from_wire(&located.lookup)?;
        let root = self.state.root();
        let found = verify_lookup(&root.digest, root.len, name, &lookup)
            .map_err(ClientError::caught(ViolationKind::BadLookupProof))?;
        let Found::At { entry, .. } = &found else {
            if located.version.is_some() {
                return Err(ClientError::violation(
                    ViolationKind::MalformedAnswer,
                    "a version of a name proven absent",
                ));
            }
            return Ok((found, None));
        };
        let wire = located.version.as_ref().ok_or_else(|| {
            ClientError::violation(ViolationKind::MalformedAnswer, "the version of a name proven present is missing")
        })?;
        let bad = ViolationKind::BadVersionProof;
        let answer = VersionProof {
            index: wire.index,
            record: VersionRecord::from_bytes(&wire.record).map_err(ClientError::caught(bad))?,
            proof: MultiProof::from_bytes(wire.proof.to_vec()).map_err(ClientError::caught(bad))?,
        };
        verify_version(entry, want, &answer).map_err(|e| {
            // A proof that holds for another version than the one asked for (an older one as
            // the latest) is told apart from one that does not hold at all.
            let proven = verify_versions(entry, &[answer.index], std::slice::from_ref(&answer.record), &answer.proof);
            if proven.is_ok() {
                let asked = want.map_or_else(|| "the latest".to_string(), |n| format!("version {n}"));
                let got = format!("version {} ({} of {})", answer.record.number, answer.index + 1, entry.versions);
                ClientError::violation(ViolationKind::WrongVersion, format!("{asked} asked for, {got} proven"))
            } else {
                ClientError::violation(ViolationKind::BadVersionProof, e)
            }
        })?;
        let verified = Verified { entry: entry.clone(), record: answer.record };
        Ok((found, Some(verified)))
    }

    /// The verified latest (or given) version of `name`.
    pub async fn version(&self, name: &str, want: Option<u64>) -> Result<Verified, ClientError> {
        check_name(name).map_err(|e| ClientError::BadInput(e.to_string()))?;
        self.settle().await?;
        let asked = self.remote.call(Op::Lookup, &LookupRequest { name: name.into(), version: want }).await;
        let located: Located = self.absent_checked(name, want, asked).await?;
        match self.verify_located(name, want, &located)? {
            (_, Some(v)) => Ok(v),
            (_, None) => Err(ClientError::NotFound(format!("{name} (the provider proved it absent)"))),
        }
    }

    /// The provider's bare "not found" (an error, not a proof) for a version of `name`. The
    /// latest version is never missing (an existing name has one; an absent name is proven
    /// absent), so that answer is a lie. A version asked by number is checked against the
    /// name's log, which is proven complete (`verify_log`): a version the log lists was hidden.
    pub(crate) async fn absent_checked<T>(
        &self,
        name: &str,
        want: Option<u64>,
        result: Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        let v = match (result, want) {
            (Err(e @ ClientError::NotFound(_)), None) => {
                return Err(e.absence_unproven(&format!("the latest version of {name}")))
            }
            (Err(ClientError::NotFound(_)), Some(v)) => v,
            (result, _) => return result,
        };
        if self.log(name).await?.iter().any(|r| r.number == v) {
            return Err(ClientError::violation(
                ViolationKind::HiddenVersion,
                format!("it says version {v} of {name} is not found; its own proven log lists it"),
            ));
        }
        Err(ClientError::NotFound(format!("version {v} of {name} (not in its proven log)")))
    }

    /// Checks a commit's proofs and, when they hold, records the new root (and forgets the
    /// commit's intent: the change is settled).
    pub(crate) fn accept_commit(
        &self,
        name: &str,
        found: &Found,
        change: &Change,
        answer: &Committed,
    ) -> Result<Option<EntryRecord>, ClientError> {
        let (root, entry) = check_commit(&self.state.root(), name, Some(found), change, answer)?;
        self.adopt(root)?;
        Ok(entry)
    }

    /// Stores `reader`'s bytes as a new version of `name` (the first, for a new name).
    pub async fn put(
        &mut self,
        name: &str,
        reader: impl Read + Send + 'static,
        block_size: Option<usize>,
        progress: impl Fn(u64) + Send + 'static,
    ) -> Result<Transfer, ClientError> {
        let started = Instant::now();
        check_name(name).map_err(|e| ClientError::BadInput(e.to_string()))?;
        let cutting = Cutting::from_option(block_size).map_err(ClientError::BadInput)?;
        self.settle().await?;
        let located: Located = self
            .remote
            .call(Op::Lookup, &LookupRequest { name: name.into(), version: None })
            .await
            .map_err(|e| e.absence_unproven(name))?;
        let (found, latest) = self.verify_located(name, None, &located)?;
        // Written by the upload just before its last frame: from then on the commit may happen.
        let (dir, old, intent_name) = (self.state.dir.clone(), self.state.root(), name.to_string());
        let (file, number, first_nonce) = match &latest {
            Some(v) => (v.entry.file, v.entry.next_version, v.record.next_nonce),
            None => (FileId(rand::random()), 1, 0),
        };
        // Counted in frame parts (about two per block): a few frames in flight.
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2048);
        let secret = self.state.secret.key;
        let head = PutFrame::Head(PutHead { name: name.into(), file: file.0, scheme: SchemeId::Linear as u8 });
        let producer = tokio::task::spawn_blocking(move || -> Result<(VersionRecord, u64), ClientError> {
            let key = LinearKey::from_secret(secret);
            // A frame goes out in parts that share the blocks' bytes (no copy into a frame).
            let send = |frame: &PutFrame| {
                vouch_proto::put_frame_parts(frame).into_iter().try_for_each(|part| {
                    tx.blocking_send(Ok(part)).map_err(|_| ClientError::Io {
                        what: "upload".into(),
                        source: std::io::Error::other("the provider closed the upload"),
                    })
                })
            };
            send(&head)?;
            let fixed = match cutting {
                Cutting::Fixed(n) => n,
                Cutting::Content => CDC_MAX as usize,
            };
            // A fresh salt per attempt: a retry after a refused commit reuses the nonces.
            let mut upload = Upload::continuing(&key, rand::random(), file, fixed, first_nonce)
                .map_err(|e| ClientError::BadInput(e.to_string()))?;
            let mut batch: Vec<WireBlock> = Vec::new();
            let mut batch_bytes = 0usize;
            let mut total = 0u64;
            let collect = |t: &pdp::TaggedBlock, d: Bytes, batch: &mut Vec<WireBlock>, n: &mut usize| {
                *n += d.len();
                batch.push(WireBlock { nonce: t.nonce, tag: ByteBuf::from(t.tag.clone()), data: d });
            };
            let mut chunks = ChunkSource::new(reader, cutting);
            while let Some(blocks) = chunks.next_batch(UPLOAD_BATCH_BYTES)? {
                total += blocks.iter().map(|b| b.len() as u64).sum::<u64>();
                // The blocks read are shared into the frames, not copied (a block joined from
                // two reads by a fixed-size upload is the exception).
                let blocks: Vec<Bytes> = blocks.into_iter().map(Bytes::from).collect();
                match cutting {
                    Cutting::Fixed(_) => {
                        for b in &blocks {
                            upload.push(b, |t, d| collect(t, shared_or_copied(b, d), &mut batch, &mut batch_bytes));
                        }
                    }
                    Cutting::Content => {
                        let refs: Vec<&[u8]> = blocks.iter().map(|b| &b[..]).collect();
                        let mut owners = blocks.iter();
                        upload
                            .push_blocks(&refs, |t, d| {
                                let data =
                                    owners.next().map_or_else(|| Bytes::copy_from_slice(d), |b| shared_or_copied(b, d));
                                collect(t, data, &mut batch, &mut batch_bytes)
                            })
                            .map_err(|e| ClientError::BadInput(e.to_string()))?;
                    }
                }
                if batch_bytes >= UPLOAD_BATCH_BYTES {
                    send(&PutFrame::Blocks(BlockBatch { blocks: std::mem::take(&mut batch) }))?;
                    batch_bytes = 0;
                    progress(total);
                }
            }
            let (state, _list) = upload
                .finish(|t, d| collect(t, Bytes::copy_from_slice(d), &mut batch, &mut batch_bytes))
                .map_err(|e| ClientError::BadInput(e.to_string()))?;
            if !batch.is_empty() {
                send(&PutFrame::Blocks(BlockBatch { blocks: batch }))?;
            }
            progress(total);
            let record = VersionRecord {
                number,
                scheme: SchemeId::Linear,
                file,
                root: state.root,
                len: state.len,
                next_nonce: state.next_nonce,
                time: now(),
            };
            intent::record(&dir, &Intent { old, name: intent_name, change: Planned::Put(record) })?;
            send(&PutFrame::Tail(PutTail { record: ByteBuf::from(record.to_bytes().to_vec()) }))?;
            Ok((record, state.next_nonce - first_nonce))
        });
        let answer =
            self.remote.call_streaming::<Committed>(Op::Put, tokio_stream::wrappers::ReceiverStream::new(rx)).await;
        let produced = producer.await;
        // The upload may have recorded its intent (whatever became of the request).
        self.reload_pending()?;
        let produced =
            produced.map_err(|e| ClientError::Io { what: "upload".into(), source: std::io::Error::other(e) })?;
        let answer = answer.map_err(|e| e.absence_unproven(name))?;
        let (record, blocks) = produced?;
        self.accept_commit(name, &found, &Change::Append(record), &answer)?;
        Ok(Transfer {
            name: name.into(),
            version: record.number,
            bytes: record.len,
            blocks,
            proof_bytes: committed_proof_bytes(&answer),
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Streams the verified bytes `range` of a version of `name` into `out`. Each chunk is
    /// checked (list proof, tags, lengths, order) before it is written; a cut-short stream is
    /// an error after the verified prefix.
    pub async fn get(
        &self,
        name: &str,
        want: Option<u64>,
        range: Option<Range<u64>>,
        out: &mut (impl Write + Send),
    ) -> Result<Transfer, ClientError> {
        let started = Instant::now();
        self.settle().await?;
        let mut proof_bytes = 0u64;
        let mut blocks = 0u64;
        let (verified, written) = self
            .read_blocks(name, want, range, |chunk_blocks, proof| {
                proof_bytes += proof as u64;
                for (slice, _) in chunk_blocks {
                    out.write_all(slice).map_err(ClientError::io("writing the output"))?;
                    blocks += 1;
                }
                Ok(())
            })
            .await?;
        Ok(Transfer {
            name: name.into(),
            version: verified.record.number,
            bytes: written,
            blocks,
            proof_bytes,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// The verified blocks covering `range`, chunk by chunk: `each` gets, per block, the part of
    /// it inside the range and the block's (start, whole data).
    pub(crate) async fn read_blocks(
        &self,
        name: &str,
        want: Option<u64>,
        range: Option<Range<u64>>,
        mut each: impl FnMut(Vec<(&[u8], (u64, &[u8]))>, usize) -> Result<(), ClientError>,
    ) -> Result<(Verified, u64), ClientError> {
        check_name(name).map_err(|e| ClientError::BadInput(e.to_string()))?;
        let (start, end) = range.map_or((0, u64::MAX), |r| (r.start, r.end));
        if start > end {
            return Err(ClientError::BadInput(format!("empty range {start}..{end}")));
        }
        let req = ReadRequest { name: name.into(), version: want, start, end };
        let opened = async {
            let mut frames = self.remote.frames(Op::Read, &req).await?;
            match frames.next::<ReadFrame>().await? {
                Some(ReadFrame::Located(l)) => Ok((frames, l)),
                Some(ReadFrame::Error(e)) => Err(ClientError::from_server(e.code, e.message)),
                _ => Err(ClientError::violation(
                    ViolationKind::MalformedAnswer,
                    "a read must begin with the version's proof",
                )),
            }
        };
        let (mut frames, located) = self.absent_checked(name, want, opened.await).await?;
        let verified = match self.verify_located(name, want, &located)? {
            (_, Some(v)) => v,
            (_, None) => return Err(ClientError::NotFound(format!("{name} (the provider proved it absent)"))),
        };
        let end = end.min(verified.record.len);
        if start > end {
            return Err(ClientError::BadInput(format!("range starts past the end ({} bytes)", verified.record.len)));
        }
        let mut pos = start;
        while let Some(frame) = frames.next::<ReadFrame>().await? {
            let chunk = match frame {
                ReadFrame::Chunk(c) => c,
                // The header proved the version: it is not missing (nor is it lost: `DataLost`).
                ReadFrame::Error(e) => {
                    let what =
                        format!("version {} of {name}, just proven by the read's header,", verified.record.number);
                    let e = ClientError::from_server(e.code, e.message);
                    return Err(e.not_found_is(ViolationKind::HiddenVersion, &what));
                }
                ReadFrame::Located(_) => {
                    return Err(ClientError::violation(ViolationKind::MalformedAnswer, "a second header in a read"))
                }
            };
            if pos >= end {
                return Err(ClientError::violation(
                    ViolationKind::BlocksPastRange,
                    format!("a chunk after the range's end {end}"),
                ));
            }
            let starts = self.verify_chunk(&verified.record, &chunk, pos)?;
            let mut parts = Vec::with_capacity(starts.len());
            for (block_start, block) in starts.iter().zip(&chunk.blocks) {
                if *block_start >= end {
                    return Err(ClientError::violation(
                        ViolationKind::BlocksPastRange,
                        format!("a block at byte {block_start}, past the range's end {end}"),
                    ));
                }
                let data = &block.data;
                let from = pos.saturating_sub(*block_start) as usize;
                let to = (end.min(block_start + data.len() as u64) - block_start) as usize;
                parts.push((&data[from..to], (*block_start, &data[..])));
                pos = block_start + to as u64;
            }
            each(parts, chunk.proof.len())?;
        }
        if pos < end {
            return Err(ClientError::violation(
                ViolationKind::ShortStream,
                format!("the stream ended at byte {pos} of {end}"),
            ));
        }
        Ok((verified, end - start))
    }

    /// Checks one chunk of a read that must continue at byte `pos`: the list proof of its
    /// blocks against the version root, each block's tag against its bytes, and that the
    /// blocks follow each other from `pos` on. Returns each block's start.
    pub(crate) fn verify_chunk(
        &self,
        record: &VersionRecord,
        chunk: &ReadChunk,
        pos: u64,
    ) -> Result<Vec<u64>, ClientError> {
        let (offsets, blocks) = (chunk.starts.len(), chunk.blocks.len());
        if blocks < offsets {
            return Err(ClientError::violation(
                ViolationKind::MissingBlock,
                format!("a read chunk of {offsets} offsets carries {blocks} blocks"),
            ));
        }
        if offsets == 0 || blocks != offsets {
            return Err(ClientError::violation(
                ViolationKind::MalformedAnswer,
                format!("a read chunk of {offsets} offsets carries {blocks} blocks"),
            ));
        }
        let bad = ViolationKind::BadReadProof;
        let proof = MultiProof::from_bytes(chunk.proof.to_vec()).map_err(ClientError::caught(bad))?;
        let proven = verify_multi_proof(&record.root, &chunk.starts, &proof).map_err(ClientError::caught(bad))?;
        let mut next = pos;
        for (i, p) in proven.iter().enumerate() {
            let contiguous =
                if i == 0 { p.start <= next && next < p.start + u64::from(p.length) } else { p.start == next };
            if !contiguous {
                return Err(ClientError::violation(
                    ViolationKind::MisplacedBlock,
                    format!("block at byte {} is not the one that follows byte {next}", p.start),
                ));
            }
            next = p.start + u64::from(p.length);
        }
        let scheme = record.scheme as u8;
        let file = record.file;
        let bad = proven.par_iter().zip(&chunk.blocks).position_any(|(p, b)| {
            b.data.len() != p.length as usize
                || !self.key.check_block(&file, b.nonce, &b.data, &b.tag)
                || hash::pdp_leaf(scheme, b.nonce, &b.tag) != p.tag
        });
        if let Some(i) = bad {
            return Err(ClientError::violation(
                ViolationKind::AlteredBlock,
                format!("block at byte {} was altered", proven[i].start),
            ));
        }
        Ok(proven.iter().map(|p| p.start).collect())
    }

    /// Every name, verified complete.
    pub async fn list(&self) -> Result<Vec<EntryRecord>, ClientError> {
        self.settle().await?;
        let listing: Listing =
            self.remote.call(Op::List, &ListRequest {}).await.map_err(|e| e.absence_unproven("the namespace"))?;
        let root = self.state.root();
        let (listed, held) = (listing.entries.len() as u64, root.len);
        if listed < held {
            return Err(ClientError::violation(
                ViolationKind::HiddenName,
                format!("the listing has {listed} of the {held} names the client's root holds"),
            ));
        }
        let bad = ViolationKind::BadListingProof;
        let entries: Vec<EntryRecord> = listing
            .entries
            .iter()
            .map(|e| EntryRecord::from_bytes(e))
            .collect::<Result<_, _>>()
            .map_err(ClientError::caught(bad))?;
        let proof = proof_from_bytes(listing.proof.to_vec()).map_err(ClientError::caught(bad))?;
        verify_listing(&root.digest, root.len, &entries, proof.as_ref()).map_err(ClientError::caught(bad))?;
        Ok(entries)
    }

    /// Every kept version of `name`, oldest first, verified complete.
    pub async fn log(&self, name: &str) -> Result<Vec<VersionRecord>, ClientError> {
        check_name(name).map_err(|e| ClientError::BadInput(e.to_string()))?;
        self.settle().await?;
        // A log always comes with the name's lookup, proving it present or absent.
        let log: Log =
            self.remote.call(Op::Log, &LogRequest { name: name.into() }).await.map_err(|e| e.absence_unproven(name))?;
        let lookup = lookup_from_wire(&log.lookup)?;
        let root = self.state.root();
        let found = verify_lookup(&root.digest, root.len, name, &lookup)
            .map_err(ClientError::caught(ViolationKind::BadLookupProof))?;
        let Found::At { entry, .. } = found else {
            return Err(ClientError::NotFound(format!("{name} (the provider proved it absent)")));
        };
        let (logged, held) = (log.versions.len() as u64, entry.versions);
        if logged < held {
            return Err(ClientError::violation(
                ViolationKind::HiddenVersion,
                format!("the log has {logged} of the {held} versions of {name} its proven entry holds"),
            ));
        }
        let bad = ViolationKind::BadLogProof;
        let records: Vec<VersionRecord> = log
            .versions
            .iter()
            .map(|r| VersionRecord::from_bytes(r))
            .collect::<Result<_, _>>()
            .map_err(ClientError::caught(bad))?;
        let proof = MultiProof::from_bytes(log.proof.to_vec()).map_err(ClientError::caught(bad))?;
        verify_log(&entry, &records, &proof).map_err(ClientError::caught(bad))?;
        Ok(records)
    }

    /// Removes `name` and all its versions.
    pub async fn remove(&mut self, name: &str) -> Result<(), ClientError> {
        // Proven present: a "not found" from here on is a lie.
        let latest = self.version(name, None).await?;
        self.intend(Intent { old: self.root(), name: name.into(), change: Planned::Remove })?;
        let answer: Committed = self
            .remote
            .call(Op::Remove, &RemoveRequest { name: name.into() })
            .await
            .map_err(|e| e.absence_unproven(name))?;
        let found = Found::At { index: lookup_from_wire(&answer.lookup)?.index, entry: latest.entry };
        self.accept_commit(name, &found, &Change::Remove, &answer)?;
        Ok(())
    }

    /// Drops old versions of `name` (never the latest).
    pub async fn prune(&mut self, name: &str, versions: &[u64]) -> Result<(), ClientError> {
        let all = self.log(name).await?;
        let latest = self.version(name, None).await?;
        let mut positions = Vec::new();
        for v in versions {
            let p = all
                .iter()
                .position(|r| r.number == *v)
                .ok_or_else(|| ClientError::NotFound(format!("version {v} of {name}")))?;
            if p + 1 == all.len() {
                return Err(ClientError::BadInput("the latest version cannot be pruned".into()));
            }
            positions.push(p as u64);
        }
        // Every version pruned is in the proven log: a "not found" from here on is a lie.
        self.intend(Intent { old: self.root(), name: name.into(), change: Planned::Prune(positions.clone()) })?;
        let answer: Committed = self
            .remote
            .call(Op::Prune, &PruneRequest { name: name.into(), versions: versions.to_vec() })
            .await
            .map_err(|e| e.absence_unproven(&format!("{name} or a version of it")))?;
        let found = Found::At { index: lookup_from_wire(&answer.lookup)?.index, entry: latest.entry };
        self.accept_commit(name, &found, &Change::Prune(positions), &answer)?;
        Ok(())
    }

    /// A possession challenge of `count` random offsets over a version of `name`.
    pub async fn audit(&self, name: &str, want: Option<u64>, count: u32) -> Result<AuditReport, ClientError> {
        check_name(name).map_err(|e| ClientError::BadInput(e.to_string()))?;
        if count == 0 || count > 10_000 {
            return Err(ClientError::BadInput("a challenge has 1 to 10000 offsets".into()));
        }
        let started = Instant::now();
        let seed: [u8; 32] = rand::random();
        self.settle().await?;
        let asked = self.remote.call(Op::Audit, &AuditRequest { name: name.into(), version: want, seed, count }).await;
        let answer: AuditAnswer = self.absent_checked(name, want, asked).await?;
        let v = match self.verify_located(name, want, &answer.located)? {
            (_, Some(v)) => v,
            (_, None) => return Err(ClientError::NotFound(format!("{name} (the provider proved it absent)"))),
        };
        let challenge = Challenge::new(seed, count);
        let mut blocks = 0;
        if v.record.len == 0 {
            // Nothing to hold: the proven record says the version is empty.
            if !answer.proof.is_empty() {
                return Err(ClientError::violation(
                    ViolationKind::MalformedAnswer,
                    "a possession proof for a version proven empty",
                ));
            }
        } else {
            let proof = PossessionProof::from_bytes(&answer.proof)
                .map_err(ClientError::caught(ViolationKind::BadAuditProof))?;
            blocks = proof.blocks.len();
            let c = v.record.client_file();
            pdp::verify_possession(&self.key, &c.file, &c.root, c.len, &challenge, &proof)
                .map_err(ClientError::caught(ViolationKind::BadAuditProof))?;
        }
        Ok(AuditReport {
            name: name.into(),
            version: v.record.number,
            file_bytes: v.record.len,
            challenged_offsets: count,
            challenged_blocks: blocks,
            proof_bytes: answer.proof.len(),
            verified: true,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// Checks the provider's answer to a commit of `change` to `name` from the root `old`: the
/// lookup the commit started from (equal to the client's own proven view `found`, when it has
/// one), then the update of each level. Returns the root after the change and the name's
/// entry (`None` once removed). Pure: a commit just answered and one settled after a crash
/// ([`crate::intent`]) are checked alike.
pub(crate) fn check_commit(
    old: &Root,
    name: &str,
    found: Option<&Found>,
    change: &Change,
    answer: &Committed,
) -> Result<(Root, Option<EntryRecord>), ClientError> {
    let lookup = lookup_from_wire(&answer.lookup)?;
    let seen = verify_lookup(&old.digest, old.len, name, &lookup)
        .map_err(ClientError::caught(ViolationKind::BadLookupProof))?;
    if found.is_some_and(|f| *f != seen) {
        return Err(ClientError::violation(
            ViolationKind::BadCommitProof,
            "the commit started from another state of the name than the one the client proved",
        ));
    }
    let proof = CommitProof {
        versions: answer.versions_update.as_ref().map(update_from_wire).transpose()?,
        namespace: update_from_wire(&answer.namespace_update)?,
    };
    let done = verify_commit(&old.digest, old.len, name, &seen, change, &proof)
        .map_err(ClientError::caught(ViolationKind::BadCommitProof))?;
    Ok((Root { digest: done.ns_root, len: done.ns_len }, done.entry))
}

pub(crate) fn committed_proof_bytes(c: &Committed) -> u64 {
    let opt = |b: &Option<ByteBuf>| b.as_ref().map_or(0, |b| b.len() as u64);
    c.lookup.proof.len() as u64 + opt(&c.file_update) + opt(&c.versions_update) + c.namespace_update.len() as u64
}

/// `part` as a slice of `owner` when it lies inside it (no copy), otherwise a copy.
fn shared_or_copied(owner: &Bytes, part: &[u8]) -> Bytes {
    let (start, at) = (owner.as_ptr() as usize, part.as_ptr() as usize);
    if at >= start && at + part.len() <= start + owner.len() {
        owner.slice_ref(part)
    } else {
        Bytes::copy_from_slice(part)
    }
}

//! The provider's logic over the store, without HTTP: namespaces, versions, blocks, proofs.
//!
//! Every answer carries what the client needs to check it against its one root digest; the
//! provider is trusted with nothing. Changes are serialised by one write lock and committed to
//! the metadata store in one batch (blocks' segments first, see `vouch_store::segments`; a
//! small edit's blocks inside the batch itself, so that a commit costs one flush).

use crate::keys;
use crate::misbehave::Misbehave;
use serde_bytes::ByteBuf;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use vouch_core::namespace::{
    commit_edits, lookup_indices, proof_bytes, Change, EntryRecord, Found, LookupProof, VersionRecord,
};
use vouch_core::pdp::{self, Challenge, FileId, Held, SchemeId};
use vouch_core::{hash, Block, Edit, FlexList};
use vouch_proto::{
    AuditAnswer, AuditRequest, BlockList, BlockMeta, Committed, EditRequest, ErrorCode, Listing, Located, Log,
    PruneRequest, ReadChunk, WireBlock, WireEdit, WireLookup, WireVersion, READ_CHUNK_BYTES,
};
use vouch_store::{
    delete_inline_segment, load_list, next_segment, put_inline_segments, put_segments, read_stored_blocks,
    record_segments, save_edited_list, save_list, ListWriter, Location, MetaBatch, MetaDb, MetaStore, ObjectBlobs,
    Segment, SegmentPacker, StoreError, DEFAULT_SEGMENT_SIZE, INLINE_BIT, INLINE_MAX,
};

/// Most offsets one audit may ask for.
pub const MAX_CHALLENGE: u32 = 10_000;
/// Block lists kept in memory between requests.
const LIST_CACHE: usize = 16;

/// Why the provider cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ProviderError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ProviderError::BadRequest(_) => ErrorCode::BadRequest,
            ProviderError::NotFound(_) => ErrorCode::NotFound,
            ProviderError::Conflict(_) => ErrorCode::Conflict,
            ProviderError::Store(StoreError::Corrupt { .. }) => ErrorCode::DataLost,
            ProviderError::Store(_) => ErrorCode::Storage,
        }
    }
}

fn bad(why: impl ToString) -> ProviderError {
    ProviderError::BadRequest(why.to_string())
}

fn corrupt(at: &str, why: impl ToString) -> ProviderError {
    ProviderError::Store(StoreError::Corrupt { at: at.to_string(), detail: why.to_string() })
}

/// A version found for a request: its entry, record and block list.
struct Version {
    entry: EntryRecord,
    record: VersionRecord,
    list: Arc<FlexList>,
}

/// The provider: one store, many clients' namespaces.
pub struct Provider {
    blobs: ObjectBlobs,
    meta: MetaDb,
    write: tokio::sync::Mutex<()>,
    lists: Mutex<HashMap<String, Arc<FlexList>>>,
    misbehave: Misbehave,
    /// First audit proof per (file, version), for [`Misbehave::ReplayProof`].
    first_proofs: Mutex<HashMap<String, Vec<u8>>>,
    /// The next unreserved segment number: concurrent puts pack into disjoint segments.
    next_segment: Mutex<u64>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("blobs", &self.blobs).field("misbehave", &self.misbehave).finish()
    }
}

impl Provider {
    pub fn open(blobs: ObjectBlobs, meta: MetaDb, misbehave: Misbehave) -> Result<Self, StoreError> {
        let next = next_segment(&meta)?;
        Ok(Provider {
            blobs,
            meta,
            write: tokio::sync::Mutex::new(()),
            lists: Mutex::new(HashMap::new()),
            misbehave,
            first_proofs: Mutex::new(HashMap::new()),
            next_segment: Mutex::new(next),
        })
    }

    fn reserve_segment(&self) -> u64 {
        let mut next = self.next_segment.lock().expect("segment counter");
        *next += 1;
        *next - 1
    }

    /// A packer for a fresh segment, in the blob store or inline in the metadata store.
    fn packer(&self, inline: bool) -> SegmentPacker {
        let id = self.reserve_segment();
        if inline {
            SegmentPacker::new(id | INLINE_BIT, INLINE_MAX)
        } else {
            SegmentPacker::new(id, DEFAULT_SEGMENT_SIZE)
        }
    }

    pub fn misbehave(&self) -> Misbehave {
        self.misbehave
    }

    // ---- reading the namespace ----

    fn entries(&self, client: &str) -> Result<Vec<EntryRecord>, ProviderError> {
        let prefix = keys::entry_prefix(client);
        self.meta
            .scan(&prefix)?
            .into_iter()
            .map(|(k, v)| EntryRecord::from_bytes(&v).map_err(|e| corrupt(&String::from_utf8_lossy(&k), e)))
            .collect()
    }

    fn versions(&self, client: &str, file: &FileId) -> Result<Vec<VersionRecord>, ProviderError> {
        self.meta
            .scan(&keys::version_prefix(client, file))?
            .into_iter()
            .map(|(k, v)| VersionRecord::from_bytes(&v).map_err(|e| corrupt(&String::from_utf8_lossy(&k), e)))
            .collect()
    }

    fn list(&self, client: &str, record: &VersionRecord) -> Result<Arc<FlexList>, ProviderError> {
        let name = keys::list(client, &record.file, record.number);
        if let Some(list) = self.lists.lock().expect("list cache").get(&name) {
            return Ok(list.clone());
        }
        let list = load_list(&self.meta, &name)?;
        let list = Arc::new(list);
        self.cache_list(name, list.clone());
        Ok(list)
    }

    fn cache_list(&self, name: String, list: Arc<FlexList>) {
        let mut cache = self.lists.lock().expect("list cache");
        if cache.len() >= LIST_CACHE {
            cache.clear();
        }
        cache.insert(name, list);
    }

    /// The namespace list, the lookup proof of `name` and what it found.
    fn lookup(entries: &[EntryRecord], name: &str) -> Result<(LookupProof, Found), ProviderError> {
        let len = entries.len() as u64;
        let index = entries.partition_point(|e| e.name.as_str() < name) as u64;
        let found = index < len && entries[index as usize].name == name;
        let indices = lookup_indices(index, len, found);
        let proof = if len == 0 { None } else { Some(namespace_list(entries)?.prove(&indices).map_err(bad)?) };
        let answer =
            LookupProof { index, entries: indices.iter().map(|&i| entries[i as usize].clone()).collect(), proof };
        let found =
            if found { Found::At { index, entry: entries[index as usize].clone() } } else { Found::Absent { index } };
        Ok((answer, found))
    }

    /// Where `name` is and, when it exists, the version asked for (`None`: the latest).
    fn locate(&self, client: &str, name: &str, want: Option<u64>) -> Result<(Located, Option<Version>), ProviderError> {
        let entries = self.entries(client)?;
        let (answer, found) = Self::lookup(&entries, name)?;
        let Found::At { entry, .. } = found else {
            return Ok((Located { lookup: wire_lookup(&answer), version: None }, None));
        };
        let records = self.versions(client, &entry.file)?;
        let position = match want {
            // The old-version lie: the one before the latest, when there is one.
            None if self.misbehave == Misbehave::OldVersion && records.len() > 1 => records.len() - 2,
            None => records.len().checked_sub(1).ok_or_else(|| corrupt(name, "a name without versions"))?,
            Some(n) => records
                .iter()
                .position(|r| r.number == n)
                .filter(|&p| self.misbehave != Misbehave::HideVersion || p + 1 == records.len())
                .ok_or_else(|| ProviderError::NotFound(format!("version {n} of {name}")))?,
        };
        let record = records[position];
        let proof = version_list(&records)?.prove(&[position as u64]).map_err(bad)?;
        let version = WireVersion {
            index: position as u64,
            record: ByteBuf::from(record.to_bytes().to_vec()),
            proof: ByteBuf::from(proof.as_bytes().to_vec()),
        };
        let list = self.list(client, &record)?;
        Ok((Located { lookup: wire_lookup(&answer), version: Some(version) }, Some(Version { entry, record, list })))
    }

    pub fn located(&self, client: &str, name: &str, want: Option<u64>) -> Result<Located, ProviderError> {
        Ok(self.locate(client, name, want)?.0)
    }

    pub fn listing(&self, client: &str) -> Result<Listing, ProviderError> {
        let mut entries = self.entries(client)?;
        let mut proof = Vec::new();
        if !entries.is_empty() {
            let indices: Vec<u64> = (0..entries.len() as u64).collect();
            proof = namespace_list(&entries)?.prove(&indices).map_err(bad)?.as_bytes().to_vec();
        }
        if self.misbehave == Misbehave::HideFile && !entries.is_empty() {
            entries.remove(0);
        }
        Ok(Listing {
            entries: entries.iter().map(|e| ByteBuf::from(e.to_bytes())).collect(),
            proof: ByteBuf::from(proof),
        })
    }

    pub fn log(&self, client: &str, name: &str) -> Result<Log, ProviderError> {
        let entries = self.entries(client)?;
        let (answer, found) = Self::lookup(&entries, name)?;
        let (versions, proof) = match found {
            Found::At { entry, .. } => {
                let records = self.versions(client, &entry.file)?;
                let indices: Vec<u64> = (0..records.len() as u64).collect();
                let proof = if indices.is_empty() {
                    Vec::new()
                } else {
                    version_list(&records)?.prove(&indices).map_err(bad)?.as_bytes().to_vec()
                };
                (records.iter().map(|r| ByteBuf::from(r.to_bytes().to_vec())).collect(), proof)
            }
            Found::Absent { .. } => (Vec::new(), Vec::new()),
        };
        Ok(Log { lookup: wire_lookup(&answer), versions, proof: ByteBuf::from(proof) })
    }

    // ---- reading blocks ----

    /// A read of `start..end`: the located version, then the chunks of blocks to send (each
    /// produced on demand by [`Provider::read_chunk`]).
    pub fn read_plan(
        &self,
        client: &str,
        name: &str,
        want: Option<u64>,
        start: u64,
        end: u64,
    ) -> Result<(Located, ReadPlan), ProviderError> {
        let (located, version) = self.locate(client, name, want)?;
        let Some(version) = version else {
            return Ok((located, ReadPlan { chunks: Vec::new(), file: FileId([0; 16]), list: Arc::default() }));
        };
        let list = version.list;
        let end = end.min(list.total_len());
        let mut chunks = Vec::new();
        let mut current: Vec<u64> = Vec::new();
        let mut bytes = 0usize;
        let mut at = start;
        while at < end {
            let found = list.search(at).ok_or_else(|| bad(format!("offset {at} is past the end")))?;
            current.push(found.start);
            bytes += found.block.length as usize;
            at = found.start + u64::from(found.block.length);
            if bytes >= READ_CHUNK_BYTES {
                chunks.push(std::mem::take(&mut current));
                bytes = 0;
            }
        }
        if !current.is_empty() {
            chunks.push(current);
        }
        if self.misbehave == Misbehave::TruncateStream {
            // End the stream early: after the first chunk, or halfway through the only one.
            if chunks.len() > 1 {
                chunks.truncate(1);
            } else if let Some(only) = chunks.first_mut() {
                only.truncate(only.len() / 2);
                chunks.retain(|c| !c.is_empty());
            }
        }
        Ok((located, ReadPlan { chunks, file: version.record.file, list }))
    }

    /// The blocks starting at `starts`, with their multi-proof.
    pub async fn read_chunk(&self, client: &str, plan: &ReadPlan, starts: &[u64]) -> Result<ReadChunk, ProviderError> {
        let proof = plan.list.prove(starts).map_err(bad)?;
        let nonces = starts
            .iter()
            .map(|&s| Ok(plan.list.search(s).ok_or_else(|| bad("offset past the end"))?.block.block_ref))
            .collect::<Result<Vec<u64>, ProviderError>>()?;
        let indexed = self.indexed_many(client, &plan.file, &nonces)?;
        let entries: Vec<(u64, Location, Vec<u8>)> =
            nonces.into_iter().zip(indexed).map(|(n, (location, tag))| (n, location, tag)).collect();
        let locations: Vec<Location> = entries.iter().map(|e| e.1).collect();
        let data = read_stored_blocks(&self.blobs, &self.meta, &locations).await?;
        let mut blocks: Vec<WireBlock> = entries
            .into_iter()
            .zip(data)
            .map(|((nonce, _, tag), data)| WireBlock {
                nonce,
                tag: ByteBuf::from(tag),
                data: ByteBuf::from(data.to_vec()),
            })
            .collect();
        self.tamper(&mut blocks);
        Ok(ReadChunk { starts: starts.to_vec(), proof: ByteBuf::from(proof.as_bytes().to_vec()), blocks })
    }

    fn tamper(&self, blocks: &mut Vec<WireBlock>) {
        match self.misbehave {
            Misbehave::CorruptBlock => {
                if let Some(b) = blocks.first_mut().filter(|b| !b.data.is_empty()) {
                    b.data[0] ^= 1;
                }
            }
            Misbehave::DropBlock if !blocks.is_empty() => {
                blocks.remove(0);
            }
            Misbehave::SwapBlocks if blocks.len() > 1 => {
                let (a, b) = (blocks[0].data.clone(), blocks[1].data.clone());
                blocks[0].data = b;
                blocks[1].data = a;
            }
            _ => {}
        }
    }

    /// Where a block is and its tag, from the index.
    fn indexed(&self, client: &str, file: &FileId, nonce: u64) -> Result<(Location, Vec<u8>), ProviderError> {
        Ok(self.indexed_many(client, file, &[nonce])?.pop().expect("one asked, one found"))
    }

    /// Where many blocks are and their tags, in one read of the index.
    fn indexed_many(
        &self,
        client: &str,
        file: &FileId,
        nonces: &[u64],
    ) -> Result<Vec<(Location, Vec<u8>)>, ProviderError> {
        let keys: Vec<Vec<u8>> = nonces.iter().map(|&n| keys::block(client, file, n)).collect();
        let values = self.meta.get_many(&keys)?;
        keys.iter()
            .zip(values)
            .map(|(key, value)| {
                let at = || String::from_utf8_lossy(key).into_owned();
                let value = value.ok_or_else(|| corrupt(&at(), "block listed but not indexed"))?;
                let location = value
                    .get(..Location::ENCODED_LEN)
                    .and_then(Location::from_bytes)
                    .ok_or_else(|| corrupt(&at(), "short index entry"))?;
                Ok((location, value[Location::ENCODED_LEN..].to_vec()))
            })
            .collect()
    }

    /// A stored block's tag and bytes (the store checks the bytes' checksum).
    async fn block(&self, client: &str, file: &FileId, nonce: u64) -> Result<(Vec<u8>, Vec<u8>), ProviderError> {
        let (location, tag) = self.indexed(client, file, nonce)?;
        let data = read_stored_blocks(&self.blobs, &self.meta, &[location]).await?;
        Ok((tag, data.into_iter().next().expect("one block asked, one read").to_vec()))
    }

    /// Every block of a version without its bytes, with one multi-proof (for `sync`).
    pub fn block_list(&self, client: &str, name: &str, want: Option<u64>) -> Result<BlockList, ProviderError> {
        let (located, version) = self.locate(client, name, want)?;
        let mut out = BlockList { located, starts: Vec::new(), proof: ByteBuf::new(), blocks: Vec::new() };
        let Some(version) = version else { return Ok(out) };
        let blocks: Vec<(u64, u64)> = version.list.iter().map(|l| (l.start, l.block.block_ref)).collect();
        let nonces: Vec<u64> = blocks.iter().map(|b| b.1).collect();
        for ((start, nonce), (_, tag)) in
            blocks.into_iter().zip(self.indexed_many(client, &version.record.file, &nonces)?)
        {
            out.starts.push(start);
            out.blocks.push(BlockMeta { nonce, tag: ByteBuf::from(tag) });
        }
        if !out.starts.is_empty() {
            out.proof = ByteBuf::from(version.list.prove(&out.starts).map_err(bad)?.as_bytes().to_vec());
        }
        if self.misbehave == Misbehave::CorruptBlock {
            if let Some(b) = out.blocks.first_mut() {
                b.tag[0] ^= 1;
            }
        }
        Ok(out)
    }

    // ---- audits ----

    pub async fn audit(&self, client: &str, req: &AuditRequest) -> Result<AuditAnswer, ProviderError> {
        if req.count == 0 || req.count > MAX_CHALLENGE {
            return Err(bad(format!("a challenge has 1 to {MAX_CHALLENGE} offsets")));
        }
        let (located, version) = self.locate(client, &req.name, req.version)?;
        let Some(version) = version else {
            return Ok(AuditAnswer { located, proof: ByteBuf::new() });
        };
        let replay_key = keys::list(client, &version.record.file, version.record.number);
        if self.misbehave == Misbehave::ReplayProof {
            if let Some(old) = self.first_proofs.lock().expect("proofs").get(&replay_key) {
                return Ok(AuditAnswer { located, proof: ByteBuf::from(old.clone()) });
            }
        }
        let mut seed = req.seed;
        if self.misbehave == Misbehave::OtherChallenge {
            seed[0] ^= 1;
        }
        let challenge = Challenge::new(seed, req.count);
        let list = &version.list;
        let (offsets, _) = challenge.expand(list.total_len());
        let mut held: HashMap<u64, (Vec<u8>, Vec<u8>)> = HashMap::new();
        for at in offsets {
            let found = list.search(at).ok_or_else(|| bad("offset past the end"))?;
            let nonce = found.block.block_ref;
            if let std::collections::hash_map::Entry::Vacant(slot) = held.entry(nonce) {
                slot.insert(self.block(client, &version.record.file, nonce).await?);
            }
        }
        if matches!(self.misbehave, Misbehave::CorruptBlock | Misbehave::DropBlock | Misbehave::SwapBlocks) {
            // Whatever the lie, one challenged block's bytes are not what was stored.
            if let Some((_, data)) = held.values_mut().next() {
                data[0] ^= 1;
            }
        }
        let proof = pdp::prove(version.record.scheme, list, &challenge, |nonce| {
            held.get(&nonce).map(|(tag, data)| Held { nonce, tag, data })
        })
        .map_err(|e| corrupt(&replay_key, e))?;
        let bytes = proof.to_bytes();
        self.first_proofs.lock().expect("proofs").entry(replay_key).or_insert_with(|| bytes.clone());
        Ok(AuditAnswer { located, proof: ByteBuf::from(bytes) })
    }

    // ---- changes ----

    /// Starts storing a new version of `name` from uploaded blocks (`put`): feed the blocks in
    /// file order to [`Provider::put_blocks`], then end with [`Provider::finish_put`].
    pub fn begin_put(
        &self,
        client: &str,
        name: &str,
        file: FileId,
        scheme: SchemeId,
    ) -> Result<PutState, ProviderError> {
        self.begin(client, name, file, scheme, false)
    }

    /// A put whose segments are kept in the metadata store when `inline` (a small edit's).
    fn begin(
        &self,
        client: &str,
        name: &str,
        file: FileId,
        scheme: SchemeId,
        inline: bool,
    ) -> Result<PutState, ProviderError> {
        vouch_core::namespace::check_name(name).map_err(bad)?;
        Ok(PutState {
            client: client.to_string(),
            name: name.to_string(),
            file,
            scheme,
            packer: self.packer(inline),
            inline,
            packed: 0,
            written: Vec::new(),
            kept_inline: Vec::new(),
            leaves: Vec::new(),
            batch: MetaBatch::default(),
            nonces: HashSet::new(),
            writing: tokio::task::JoinSet::new(),
        })
    }

    /// Adds blocks to a put; each segment is written (in the background) as soon as it is full.
    pub async fn put_blocks(&self, put: &mut PutState, blocks: Vec<WireBlock>) -> Result<(), ProviderError> {
        for b in blocks {
            if put.packed > 0 && put.packed + b.data.len() > DEFAULT_SEGMENT_SIZE {
                self.flush(put).await?;
            }
            self.stage_block(put, b)?;
        }
        Ok(())
    }

    /// Starts writing the current segment and starts the next one; at most two segments are
    /// being written at a time, so receiving goes on while the disk works.
    async fn flush(&self, put: &mut PutState) -> Result<(), ProviderError> {
        let fresh = self.packer(put.inline);
        let (sealed, _) = std::mem::replace(&mut put.packer, fresh).finish();
        put.packed = 0;
        if put.inline {
            put.kept_inline.extend(sealed);
            return Ok(());
        }
        put.written.extend(sealed.iter().map(|(id, s)| (*id, s.len())));
        while put.writing.len() >= 2 {
            joined(put.writing.join_next().await)?;
        }
        let blobs = self.blobs.clone();
        put.writing.spawn(async move { put_segments(&blobs, sealed).await });
        Ok(())
    }

    /// Writes what is left and waits for every segment of the put to be stored: only then may
    /// metadata name them.
    async fn written(&self, put: &mut PutState) -> Result<(), ProviderError> {
        if put.packed > 0 {
            self.flush(put).await?;
        }
        while let Some(done) = put.writing.join_next().await {
            joined(Some(done))?;
        }
        Ok(())
    }

    fn stage_block(&self, put: &mut PutState, b: WireBlock) -> Result<(), ProviderError> {
        if b.data.is_empty() || b.data.len() > pdp::MAX_BLOCK_LEN || b.tag.len() != put.scheme.tag_len() {
            return Err(bad("a block must hold 1 byte to 1 MiB and a tag of its scheme's length"));
        }
        if !put.nonces.insert(b.nonce) {
            return Err(bad(format!("nonce {} used twice", b.nonce)));
        }
        put.leaves.push(leaf_of(put.scheme, &b));
        let len = b.data.len();
        let at = put.packer.add_shared(bytes::Bytes::from(b.data.into_vec()));
        put.packed += len;
        let mut value = at.to_bytes().to_vec();
        value.extend_from_slice(&b.tag);
        put.batch.put(keys::block(&put.client, &put.file, b.nonce), value);
        Ok(())
    }

    /// The batch a put commits: its blocks' index entries and its segments' bookkeeping.
    fn sealed_batch(&self, mut put: PutState) -> MetaBatch {
        let next = *self.next_segment.lock().expect("segment counter");
        record_segments(&mut put.batch, &put.written, next);
        put_inline_segments(&mut put.batch, &put.kept_inline);
        put.batch
    }

    /// Ends a put: checks the client's record against the blocks, then commits the version.
    pub async fn finish_put(&self, mut put: PutState, record: VersionRecord) -> Result<Committed, ProviderError> {
        if record.file != put.file || record.scheme != put.scheme {
            return Err(bad("the version record names another file or scheme than the upload"));
        }
        let started = std::time::Instant::now();
        let leaves = std::mem::take(&mut put.leaves);
        let list = tokio::task::spawn_blocking(move || FlexList::build_parallel(&leaves, rayon::current_num_threads()))
            .await
            .map_err(|e| bad(format!("list build failed: {e}")))?
            .map_err(bad)?;
        if list.root() != record.root || list.total_len() != record.len {
            return Err(bad("the uploaded blocks do not build the version record's root and length"));
        }
        let built = started.elapsed();
        self.written(&mut put).await?;
        let written = started.elapsed();
        let _guard = self.write.lock().await;
        let (client, name) = (put.client.clone(), put.name.clone());
        let batch = self.sealed_batch(put);
        let done = self.commit(&client, &name, Change::Append(record), Some(NewList { list, base: None }), None, batch);
        tracing::debug!(?built, ?written, total = ?started.elapsed(), "put");
        done
    }

    /// Applies a batch of edits to the latest version, making a new version.
    pub async fn edit(&self, client: &str, req: EditRequest) -> Result<Committed, ProviderError> {
        let _guard = self.write.lock().await;
        let started = std::time::Instant::now();
        let (_, version) = self.locate(client, &req.name, None)?;
        let version = version.ok_or_else(|| ProviderError::NotFound(req.name.clone()))?;
        let located = started.elapsed();
        if version.record.number != req.base {
            return Err(ProviderError::Conflict(format!(
                "edits name version {}, the latest is {}",
                req.base, version.record.number
            )));
        }
        let base = version.record;
        if req.blocks.iter().enumerate().any(|(i, b)| b.nonce != base.next_nonce + i as u64) {
            return Err(bad("new blocks take the version's next nonces in order"));
        }
        // A small commit's blocks go in the metadata transaction: one flush, not two.
        let inline = req.blocks.iter().map(|b| b.data.len()).sum::<usize>() <= INLINE_MAX;
        let mut put = self.begin(client, &req.name, base.file, base.scheme, inline)?;
        let blocks = req.blocks.len() as u64;
        self.put_blocks(&mut put, req.blocks).await?;
        if put.packed > 0 {
            // The disk writes the new blocks while the lists are updated.
            self.flush(&mut put).await?;
        }
        let leaves = std::mem::take(&mut put.leaves);
        let block = |i: u32| leaves.get(i as usize).copied().ok_or_else(|| bad(format!("edit names block {i}")));
        let edits = req
            .edits
            .iter()
            .map(|e| {
                Ok(match *e {
                    WireEdit::Insert { at, block: i } => Edit::Insert { at, block: block(i)? },
                    WireEdit::Modify { at, block: i } => Edit::Modify { at, block: block(i)? },
                    WireEdit::Remove { at } => Edit::Remove { at },
                })
            })
            .collect::<Result<Vec<_>, ProviderError>>()?;
        let staged = started.elapsed();
        // The new version's list replaces the old one in the cache; when nothing else holds
        // the old one (a read in flight), it is edited in place instead of copied.
        let base_list = keys::list(client, &base.file, base.number);
        self.lists.lock().expect("list cache").remove(&base_list);
        let mut list = Arc::try_unwrap(version.list).unwrap_or_else(|shared| (*shared).clone());
        let update = list.multi_update(&edits).map_err(bad)?;
        let updated = started.elapsed();
        let record = VersionRecord {
            number: version.entry.next_version,
            scheme: base.scheme,
            file: base.file,
            root: list.root(),
            len: list.total_len(),
            next_nonce: base.next_nonce + blocks,
            time: req.time,
        };
        self.written(&mut put).await?;
        let flushed = started.elapsed();
        let batch = self.sealed_batch(put);
        let list = NewList { list, base: Some((base_list, edits)) };
        let done = self.commit(client, &req.name, Change::Append(record), Some(list), Some(update.to_bytes()), batch);
        tracing::debug!(?located, ?staged, ?updated, ?flushed, total = ?started.elapsed(), "edit");
        done
    }

    pub async fn remove(&self, client: &str, name: &str) -> Result<Committed, ProviderError> {
        let _guard = self.write.lock().await;
        self.commit(client, name, Change::Remove, None, None, MetaBatch::default())
    }

    pub async fn prune(&self, client: &str, req: &PruneRequest) -> Result<Committed, ProviderError> {
        let _guard = self.write.lock().await;
        let entries = self.entries(client)?;
        let (_, found) = Self::lookup(&entries, &req.name)?;
        let Found::At { entry, .. } = found else { return Err(ProviderError::NotFound(req.name.clone())) };
        let records = self.versions(client, &entry.file)?;
        let positions = req
            .versions
            .iter()
            .map(|n| {
                records
                    .iter()
                    .position(|r| r.number == *n)
                    .map(|p| p as u64)
                    .ok_or_else(|| ProviderError::NotFound(format!("version {n} of {}", req.name)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.commit(client, &req.name, Change::Prune(positions), None, None, MetaBatch::default())
    }

    /// The common end of every change: computes the version-list and namespace updates (the
    /// client recomputes the same edits from the lookup), adds the records to `batch` and
    /// commits it, unless the provider is lying about it ([`Misbehave::Rollback`]).
    fn commit(
        &self,
        client: &str,
        name: &str,
        change: Change,
        new_list: Option<NewList>,
        file_update: Option<Vec<u8>>,
        mut batch: MetaBatch,
    ) -> Result<Committed, ProviderError> {
        let started = std::time::Instant::now();
        let entries = self.entries(client)?;
        let (answer, found) = Self::lookup(&entries, name)?;
        let plan = commit_edits(&found, &change).map_err(bad)?;
        let records = match &found {
            Found::At { entry, .. } => self.versions(client, &entry.file)?,
            Found::Absent { .. } => Vec::new(),
        };
        let versions_update = match &change {
            Change::Remove => None,
            _ => {
                let mut versions = version_list(&records)?;
                let proof = versions.multi_update(&plan.versions).map_err(bad)?;
                Some((proof, versions.root(), versions.total_len()))
            }
        };
        let (ns_edit, new_entry) =
            plan.namespace_edit(name, &change, versions_update.as_ref().map(|(_, root, len)| (*root, *len)));
        let mut ns = namespace_list(&entries)?;
        let namespace_update = ns.multi_update(&[ns_edit]).map_err(bad)?;
        let proven = started.elapsed();

        match (&change, &new_entry) {
            (Change::Append(record), Some(entry)) => {
                batch.put(keys::version(client, &record.file, record.number), record.to_bytes().to_vec());
                batch.put(keys::entry(client, name), entry.to_bytes());
                let new = new_list.as_ref().ok_or_else(|| bad("a new version needs its block list"))?;
                let name = keys::list(client, &record.file, record.number);
                match &new.base {
                    Some((base, changes)) => save_edited_list(&mut batch, &self.meta, &name, base, &new.list, changes)?,
                    None => save_list(&mut batch, &self.meta, &name, &new.list)?,
                }
            }
            (Change::Prune(positions), Some(entry)) => {
                batch.put(keys::entry(client, name), entry.to_bytes());
                let dropped: Vec<&VersionRecord> = positions.iter().map(|&p| &records[p as usize]).collect();
                let kept: Vec<&VersionRecord> =
                    records.iter().filter(|r| !dropped.iter().any(|d| d.number == r.number)).collect();
                self.forget_versions(client, &plan.entry.file, &dropped, &kept, &mut batch)?;
            }
            (Change::Remove, None) => {
                batch.delete(keys::entry(client, name));
                let all: Vec<&VersionRecord> = records.iter().collect();
                self.forget_versions(client, &plan.entry.file, &all, &[], &mut batch)?;
            }
            _ => return Err(bad("inconsistent change")),
        }
        let batched = started.elapsed();
        if self.misbehave != Misbehave::Rollback {
            self.meta.commit(&batch)?;
            tracing::debug!(?proven, ?batched, stored = ?started.elapsed(), "commit");
            if let (Change::Append(record), Some(list)) = (&change, new_list) {
                self.cache_list(keys::list(client, &record.file, record.number), Arc::new(list.list));
            }
        }
        Ok(Committed {
            lookup: wire_lookup(&answer),
            file_update: file_update.map(ByteBuf::from),
            versions_update: versions_update.map(|(p, _, _)| ByteBuf::from(p.to_bytes())),
            namespace_update: ByteBuf::from(namespace_update.to_bytes()),
        })
    }

    /// Deletes versions' records and lists, and the blocks no kept version uses. (Their
    /// segments' space comes back at the next compaction.)
    fn forget_versions(
        &self,
        client: &str,
        file: &FileId,
        dropped: &[&VersionRecord],
        kept: &[&VersionRecord],
        batch: &mut MetaBatch,
    ) -> Result<(), ProviderError> {
        let mut live = HashSet::new();
        for r in kept {
            live.extend(self.list(client, r)?.iter().map(|l| l.block.block_ref));
        }
        let mut lists = ListWriter::new(&self.meta);
        for r in dropped {
            batch.delete(keys::version(client, file, r.number));
            lists.delete(&keys::list(client, file, r.number))?;
        }
        lists.finish(batch);
        // Inline segments hold one commit's blocks: they go with the last of them.
        let (mut dropped_inline, mut kept_inline) = (HashSet::new(), HashSet::new());
        for (key, value) in self.meta.scan(&keys::block_prefix(client, file))? {
            let nonce = std::str::from_utf8(&key[key.len() - 16..]).ok().and_then(|h| u64::from_str_radix(h, 16).ok());
            let at = value.get(..Location::ENCODED_LEN).and_then(Location::from_bytes);
            let at = at.ok_or_else(|| corrupt(&String::from_utf8_lossy(&key), "short index entry"))?;
            let dropped = nonce.is_some_and(|n| !live.contains(&n));
            if at.is_inline() {
                if dropped { &mut dropped_inline } else { &mut kept_inline }.insert(at.segment);
            }
            if dropped {
                batch.delete(key);
            }
        }
        for segment in dropped_inline.difference(&kept_inline) {
            delete_inline_segment(batch, *segment);
        }
        self.lists.lock().expect("list cache").clear();
        Ok(())
    }
}

/// The block list of a new version, and for an edit, the list it was edited from and how.
struct NewList {
    list: FlexList,
    base: Option<(String, Vec<Edit>)>,
}

/// A put in progress.
#[derive(Debug)]
pub struct PutState {
    client: String,
    name: String,
    file: FileId,
    scheme: SchemeId,
    packer: SegmentPacker,
    /// Segments go to the metadata store, not the blob store (a small edit's).
    inline: bool,
    packed: usize,
    /// Segments written so far, with their sizes.
    written: Vec<(u64, usize)>,
    /// Inline segments, written with the commit.
    kept_inline: Vec<(u64, Segment)>,
    leaves: Vec<Block>,
    batch: MetaBatch,
    nonces: HashSet<u64>,
    /// Segment writes in flight.
    writing: tokio::task::JoinSet<Result<(), StoreError>>,
}

fn joined(done: Option<Result<Result<(), StoreError>, tokio::task::JoinError>>) -> Result<(), ProviderError> {
    match done {
        None | Some(Ok(Ok(()))) => Ok(()),
        Some(Ok(Err(e))) => Err(e.into()),
        Some(Err(e)) => Err(bad(format!("segment write failed: {e}"))),
    }
}

/// The FlexList leaf of an uploaded block.
fn leaf_of(scheme: SchemeId, b: &WireBlock) -> Block {
    Block::new(hash::pdp_leaf(scheme as u8, b.nonce, &b.tag), b.data.len() as u32, b.nonce)
}

fn namespace_list(entries: &[EntryRecord]) -> Result<FlexList, ProviderError> {
    FlexList::build(&entries.iter().map(EntryRecord::leaf).collect::<Vec<_>>()).map_err(|e| corrupt("namespace", e))
}

fn version_list(records: &[VersionRecord]) -> Result<FlexList, ProviderError> {
    FlexList::build(&records.iter().map(VersionRecord::leaf).collect::<Vec<_>>()).map_err(|e| corrupt("versions", e))
}

fn wire_lookup(answer: &LookupProof) -> WireLookup {
    WireLookup {
        index: answer.index,
        entries: answer.entries.iter().map(|e| ByteBuf::from(e.to_bytes())).collect(),
        proof: ByteBuf::from(proof_bytes(answer.proof.as_ref())),
    }
}

/// The chunks of a read, produced one at a time.
#[derive(Debug)]
pub struct ReadPlan {
    pub chunks: Vec<Vec<u64>>,
    file: FileId,
    list: Arc<FlexList>,
}

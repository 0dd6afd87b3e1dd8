//! Changes: puts, edits, removes and prunes, each one verified commit.

use super::*;

impl Provider {
    // ---- changes ----

    /// Starts storing a new version of `name` from uploaded blocks (`put`): feed the blocks in
    /// file order to [`Provider::put_blocks`], then end with [`Provider::finish_put`]. The put
    /// counts as a change in flight from here on (see `settle`).
    pub async fn begin_put(
        &self,
        client: &str,
        name: &str,
        file: FileId,
        scheme: SchemeId,
    ) -> Result<PutState, ProviderError> {
        let mut put = self.begin(client, name, file, scheme, false)?;
        put.in_flight = Some(self.changing(client).await);
        Ok(put)
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
            in_flight: None,
            blobs: self.blobs.clone(),
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
        let at = put.packer.add_shared(b.data);
        put.packed += len;
        let mut value = at.to_bytes().to_vec();
        value.extend_from_slice(&b.tag);
        put.batch.put(keys::block(&put.client, &put.file, b.nonce), value);
        Ok(())
    }

    /// The batch a put commits: its blocks' index entries and its segments' bookkeeping.
    fn sealed_batch(&self, mut put: PutState) -> MetaBatch {
        let next = *self.next_segment.lock().expect("segment counter");
        let mut batch = std::mem::take(&mut put.batch);
        record_segments(&mut batch, &put.hand_over_segments(), next);
        put_inline_segments(&mut batch, &put.kept_inline);
        batch
    }

    /// Ends a put: checks the client's record against the blocks, then commits the version.
    pub async fn finish_put(&self, put: PutState, record: VersionRecord) -> Result<Committed, ProviderError> {
        let staged = self.stage_put(put, record).await?;
        self.commit(staged)
    }

    /// A put's change, staged: its list built and checked against the record, its segments
    /// written, the write lock taken.
    pub(crate) async fn stage_put(
        &self,
        mut put: PutState,
        record: VersionRecord,
    ) -> Result<Staged<'_>, ProviderError> {
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
        let write = self.write.lock().await;
        let (client, name) = (put.client.clone(), put.name.clone());
        let in_flight = put.in_flight.take();
        let batch = self.sealed_batch(put);
        tracing::debug!(?built, ?written, total = ?started.elapsed(), "put staged");
        Ok(Staged {
            client,
            name,
            change: Change::Append(record),
            new_list: Some(NewList { list, base: None }),
            file_update: None,
            batch,
            _write: write,
            _in_flight: in_flight,
        })
    }

    /// Applies a batch of edits to the latest version, making a new version.
    pub async fn edit(&self, client: &str, req: EditRequest) -> Result<Committed, ProviderError> {
        let staged = self.stage_edit(client, req).await?;
        self.commit(staged)
    }

    /// An edit's change, staged: its blocks stored (or sealed for the commit's batch), the
    /// version's list edited.
    pub(crate) async fn stage_edit(&self, client: &str, req: EditRequest) -> Result<Staged<'_>, ProviderError> {
        let in_flight = self.changing(client).await;
        let write = self.write.lock().await;
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
            // Seals the blocks: a large edit's segments are written while the lists are
            // updated; a small edit's go into the commit's own batch.
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
        tracing::debug!(?located, ?staged, ?updated, ?flushed, total = ?started.elapsed(), "edit staged");
        Ok(Staged {
            client: client.to_string(),
            name: req.name,
            change: Change::Append(record),
            new_list: Some(NewList { list, base: Some((base_list, edits)) }),
            file_update: Some(update.to_bytes()),
            batch,
            _write: write,
            _in_flight: Some(in_flight),
        })
    }

    pub async fn remove(&self, client: &str, name: &str) -> Result<Committed, ProviderError> {
        let staged = self.stage_remove(client, name).await?;
        self.commit(staged)
    }

    pub(crate) async fn stage_remove(&self, client: &str, name: &str) -> Result<Staged<'_>, ProviderError> {
        let in_flight = self.changing(client).await;
        let write = self.write.lock().await;
        Ok(Staged::without_blocks(client, name, Change::Remove, write, in_flight))
    }

    pub async fn prune(&self, client: &str, req: &PruneRequest) -> Result<Committed, ProviderError> {
        let staged = self.stage_prune(client, req).await?;
        self.commit(staged)
    }

    pub(crate) async fn stage_prune(&self, client: &str, req: &PruneRequest) -> Result<Staged<'_>, ProviderError> {
        let in_flight = self.changing(client).await;
        let write = self.write.lock().await;
        let (_, found) = self.lookup(client, &req.name)?;
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
        Ok(Staged::without_blocks(client, &req.name, Change::Prune(positions), write, in_flight))
    }

    /// Deletes versions' records and lists, and the blocks no kept version uses. (Their
    /// segments' space comes back at the next compaction.)
    pub(super) fn forget_versions(
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
pub(crate) struct NewList {
    pub(super) list: FlexList,
    pub(super) base: Option<(String, Vec<Edit>)>,
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
    /// Holds the client's change gate for the whole upload (a put's own; an edit holds it
    /// itself).
    in_flight: Option<tokio::sync::OwnedRwLockReadGuard<()>>,
    /// Where `written` went: an abandoned put deletes them from here (see `Drop`).
    blobs: ObjectBlobs,
}

impl PutState {
    /// The segments this put wrote, handed to the batch that commits them: from here on they
    /// belong to the index, and dropping the put deletes nothing.
    fn hand_over_segments(&mut self) -> Vec<(u64, usize)> {
        std::mem::take(&mut self.written)
    }
}

/// A put dropped before it handed its segments over (an error, a limit, a refused record, a
/// dropped connection) deletes the segments it wrote, once its writes in flight have ended (a
/// write still landing after the delete would leave one behind). Outside a runtime, or when a
/// delete fails, the orphans wait for the sweep at the next start (`Provider::sweep_orphans`).
impl Drop for PutState {
    fn drop(&mut self) {
        if self.written.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let segments = std::mem::take(&mut self.written);
        let mut writing = std::mem::replace(&mut self.writing, tokio::task::JoinSet::new());
        let blobs = self.blobs.clone();
        runtime.spawn(async move {
            use vouch_store::BlobStore as _;
            while writing.join_next().await.is_some() {}
            for (id, _) in segments {
                match blobs.delete(&vouch_store::segment_key(id)).await {
                    Ok(()) => tracing::debug!(segment = id, "deleted a segment of an abandoned put"),
                    Err(e) => tracing::warn!(segment = id, "abandoned put: {e} (the next start sweeps it)"),
                }
            }
        });
    }
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

impl Provider {
    /// Deletes the segments that no committed entry names (what a crash or a failed commit left
    /// behind); returns how many. Only while nothing is being written: the server runs it
    /// before it serves.
    pub async fn sweep_orphans(&self) -> Result<usize, ProviderError> {
        Ok(vouch_store::sweep_orphans(&self.blobs, &self.meta).await?)
    }
}

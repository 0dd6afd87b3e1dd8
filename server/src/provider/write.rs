//! Changes: puts, edits, removes and prunes, each one verified commit.

use super::*;

impl Files {
    // ---- changes ----

    /// Starts a `stage` (see `staged`): feed the blocks in file order to
    /// [`Files::put_blocks`], then end with [`Files::stage_upload`]. It takes no change gate:
    /// a staged upload cannot commit by itself (its `commit-staged` takes the gate).
    pub fn begin_stage(
        &self,
        client: &str,
        name: &str,
        file: FileId,
        scheme: SchemeId,
        attempt: Attempt,
    ) -> Result<PutState, ProviderError> {
        vouch_core::namespace::check_name(name).map_err(FilesError::BadName)?;
        Ok(PutState {
            client: client.to_string(),
            name: name.to_string(),
            file,
            scheme,
            attempt,
            upload: self.repo.upload(&keys::owner(client, &file))?,
            leaves: Vec::new(),
            nonces: HashSet::new(),
        })
    }

    /// Adds blocks to a put; the repository writes each full segment in the background.
    pub async fn put_blocks(&self, put: &mut PutState, blocks: Vec<WireBlock>) -> Result<(), ProviderError> {
        for b in blocks {
            let scheme_tag = put.scheme.tag_len();
            if b.data.is_empty() || b.data.len() > pdp::MAX_BLOCK_LEN || b.tag.len() != scheme_tag {
                let (nonce, bytes, tag) = (b.nonce, b.data.len(), b.tag.len());
                return Err(FilesError::BadBlock { nonce, bytes, tag, scheme_tag }.into());
            }
            if !put.nonces.insert(b.nonce) {
                return Err(FilesError::NonceTwice { nonce: b.nonce }.into());
            }
            put.leaves.push(leaf_of(put.scheme, &b));
            put.upload.add(b.nonce, &b.tag, b.data).await?;
        }
        Ok(())
    }

    /// A put's blocks checked against its record (they build its root and length) and
    /// written: its name, list and stored blocks.
    pub(super) async fn seal_put(
        &self,
        mut put: PutState,
        record: &VersionRecord,
    ) -> Result<(String, FlexList, StoredBlocks), ProviderError> {
        if record.file != put.file || record.scheme != put.scheme {
            return Err(FilesError::OtherUpload.into());
        }
        let started = std::time::Instant::now();
        let leaves = std::mem::take(&mut put.leaves);
        let list = tokio::task::spawn_blocking(move || FlexList::build_parallel(&leaves, rayon::current_num_threads()))
            .await
            .map_err(FilesError::ListBuild)?
            .map_err(FilesError::Build)?;
        if list.root() != record.root || list.total_len() != record.len {
            return Err(FilesError::NotTheRecord.into());
        }
        let built = started.elapsed();
        let blocks = put.upload.finish().await?;
        tracing::debug!(?built, written = ?started.elapsed(), "put sealed");
        Ok((put.name, list, blocks))
    }

    /// Applies a batch of edits to the latest version, making a new version.
    pub async fn edit(&self, client: &str, req: EditRequest) -> Result<Committed, ProviderError> {
        let staged = self.stage_edit(client, req).await?;
        self.commit_one(staged).await
    }

    /// An edit's change, staged: its blocks stored (or sealed for the commit's batch), the
    /// version's list edited.
    pub async fn stage_edit(&self, client: &str, req: EditRequest) -> Result<Batch<'_>, ProviderError> {
        let in_flight = self.changing(client, &[req.attempt]).await?;
        let write = self.write.lock().await;
        let started = std::time::Instant::now();
        let (_, version) = self.locate(client, &req.name, None)?;
        let version = version.ok_or_else(|| FilesError::NoSuchName { name: req.name.clone() })?;
        let located = started.elapsed();
        if version.record.number != req.base {
            let (name, base, latest) = (req.name.clone(), req.base, version.record.number);
            return Err(FilesError::StaleBase { name, base, latest }.into());
        }
        let base = version.record;
        if req.blocks.iter().enumerate().any(|(i, b)| b.nonce != base.next_nonce + i as u64) {
            return Err(FilesError::EditNonces { next: base.next_nonce }.into());
        }
        let mut put = self.begin_stage(client, &req.name, base.file, base.scheme, req.attempt)?;
        let blocks = req.blocks.len() as u64;
        self.put_blocks(&mut put, req.blocks).await?;
        // A large edit's segments are written while the lists are updated (a small edit's
        // ride in the commit).
        put.upload.seal().await?;
        let leaves = std::mem::take(&mut put.leaves);
        let block = |block: u32| {
            leaves.get(block as usize).copied().ok_or(FilesError::NoEditBlock { block, blocks: leaves.len() })
        };
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
            .collect::<Result<Vec<_>, FilesError>>()?;
        let staged = started.elapsed();
        // The new version's list replaces the old one in the cache; when nothing else holds
        // the old one (a read in flight), it is edited in place instead of copied.
        let base_list = keys::list(client, &base.file, base.number);
        self.lists.lock().expect("list cache").remove(&base_list);
        let mut list = Arc::try_unwrap(version.list).unwrap_or_else(|shared| (*shared).clone());
        let update = list.multi_update(&edits).map_err(FilesError::Edit)?;
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
        let stored = put.upload.finish().await?;
        let flushed = started.elapsed();
        tracing::debug!(?located, ?staged, ?updated, ?flushed, total = ?started.elapsed(), "edit staged");
        let staged = Staged {
            name: req.name,
            change: Change::Append(record),
            new_list: Some(NewList { list, base: Some((base_list, edits)) }),
            file_update: Some(update.to_bytes()),
            blocks: Some(stored),
        };
        Ok(Batch::one(client, staged, Holding { _write: write, _in_flight: in_flight }))
    }

    pub async fn remove(&self, client: &str, req: &RemoveRequest) -> Result<Committed, ProviderError> {
        let staged = self.stage_remove(client, req).await?;
        self.commit_one(staged).await
    }

    pub async fn stage_remove(&self, client: &str, req: &RemoveRequest) -> Result<Batch<'_>, ProviderError> {
        let in_flight = self.changing(client, &[req.attempt]).await?;
        let write = self.write.lock().await;
        let staged = Staged::without_blocks(&req.name, Change::Remove);
        Ok(Batch::one(client, staged, Holding { _write: write, _in_flight: in_flight }))
    }

    pub async fn prune(&self, client: &str, req: &PruneRequest) -> Result<Committed, ProviderError> {
        let staged = self.stage_prune(client, req).await?;
        self.commit_one(staged).await
    }

    pub async fn stage_prune(&self, client: &str, req: &PruneRequest) -> Result<Batch<'_>, ProviderError> {
        let in_flight = self.changing(client, &[req.attempt]).await?;
        let write = self.write.lock().await;
        let (_, found) = self.lookup(client, &req.name)?;
        let Found::At { entry, .. } = found else {
            return Err(FilesError::NoSuchName { name: req.name.clone() }.into());
        };
        let records = self.versions(client, &entry.file)?;
        let positions = req
            .versions
            .iter()
            .map(|n| {
                records
                    .iter()
                    .position(|r| r.number == *n)
                    .map(|p| p as u64)
                    .ok_or_else(|| FilesError::NoSuchVersion { name: req.name.clone(), version: *n })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let staged = Staged::without_blocks(&req.name, Change::Prune(positions));
        Ok(Batch::one(client, staged, Holding { _write: write, _in_flight: in_flight }))
    }

    /// Deletes versions' records and lists, and the blocks no kept version uses. (Their
    /// segments' space comes back when the repository compacts.)
    pub(super) fn forget_versions(
        &self,
        client: &str,
        file: &FileId,
        dropped: &[&VersionRecord],
        kept: &[&VersionRecord],
        commit: &mut Commit,
    ) -> Result<(), ProviderError> {
        let mut live = HashSet::new();
        for r in kept {
            live.extend(self.list(client, r)?.iter().map(|l| l.block.block_ref));
        }
        for r in dropped {
            commit.delete_record(&keys::version(client, file, r.number));
            commit.delete_list(&keys::list(client, file, r.number));
        }
        commit.forget_blocks_except(&keys::owner(client, file), live);
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
    pub(super) client: String,
    name: String,
    file: FileId,
    scheme: SchemeId,
    pub(super) attempt: Attempt,
    /// The blocks, packed by the repository (an abandoned put's segments are deleted when it
    /// is dropped).
    upload: Upload,
    leaves: Vec<Block>,
    nonces: HashSet<u64>,
}

/// The FlexList leaf of an uploaded block.
pub(super) fn leaf_of(scheme: SchemeId, b: &WireBlock) -> Block {
    Block::new(hash::pdp_leaf(scheme as u8, b.nonce, &b.tag), b.data.len() as u32, b.nonce)
}

impl Files {
    /// Writes again the bytes of blocks the client's file `req.file` holds (each known by
    /// nonce and tag), where its copy of them was damaged or lost: the index moves to the new
    /// copies, and the damaged ones are left to compaction. Nothing else changes, and nothing
    /// is believed: the client reads and checks the blocks afterwards.
    pub async fn heal_blocks(&self, client: &str, req: &HealBlocksRequest) -> Result<HealedBlocks, ProviderError> {
        let len = req.file.len();
        let file = FileId(req.file.as_ref().try_into().map_err(|_| FilesError::FileIdLength { len })?);
        let owner = keys::owner(client, &file);
        let ids: Vec<u64> = req.blocks.iter().map(|b| b.nonce).collect();
        let mut named = HashSet::new();
        if let Some(&nonce) = ids.iter().find(|&&nonce| !named.insert(nonce)) {
            return Err(FilesError::BlockTwice { nonce }.into());
        }
        let tags = self.repo.block_tags(&owner, &ids).map_err(|source| FilesError::NotHeld { source })?;
        for (b, tag) in req.blocks.iter().zip(&tags) {
            if b.tag[..] != tag[..] {
                return Err(FilesError::WrongTag { nonce: b.nonce }.into());
            }
            if b.data.is_empty() {
                return Err(FilesError::EmptyBlock { nonce: b.nonce }.into());
            }
        }
        let mut upload = self.repo.upload(&owner)?;
        for b in &req.blocks {
            upload.add(b.nonce, &b.tag, b.data.clone()).await?;
        }
        let stored = upload.finish().await?;
        let _write = self.write.lock().await;
        let mut commit = self.repo.begin();
        commit.replace_blocks(stored);
        self.repo.commit(commit).await?;
        Ok(HealedBlocks { healed: req.blocks.len() as u64 })
    }
}

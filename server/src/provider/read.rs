//! Answers that read: blocks with their proofs, block lists, possession proofs.

use super::*;

impl Files {
    // ---- reading blocks ----

    /// A read of `start..end`: the located version, then the chunks of blocks to send (each
    /// produced on demand by [`Files::read_chunk`]).
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
            let found = list.search(at).ok_or(FilesError::PastEnd { offset: at, len: list.total_len() })?;
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
        Ok((located, ReadPlan { chunks, file: version.record.file, list }))
    }

    /// The blocks starting at `starts`, with their multi-proof.
    pub async fn read_chunk(&self, client: &str, plan: &ReadPlan, starts: &[u64]) -> Result<ReadChunk, ProviderError> {
        let proof = plan.list.prove(starts).map_err(FilesError::Proof)?;
        let past_end = |offset| FilesError::PastEnd { offset, len: plan.list.total_len() };
        let nonces = starts
            .iter()
            .map(|&s| Ok(plan.list.search(s).ok_or_else(|| past_end(s))?.block.block_ref))
            .collect::<Result<Vec<u64>, FilesError>>()?;
        let stored = self.repo.read_blocks(&keys::owner(client, &plan.file), &nonces).await?;
        let blocks: Vec<WireBlock> = nonces
            .into_iter()
            .zip(stored)
            .map(|(nonce, b)| WireBlock { nonce, tag: ByteBuf::from(b.tag), data: b.data })
            .collect();
        Ok(ReadChunk { starts: starts.to_vec(), proof: ByteBuf::from(proof.as_bytes().to_vec()), blocks })
    }

    /// A stored block's tag and bytes (the store checks the bytes' checksum).
    async fn block(&self, client: &str, file: &FileId, nonce: u64) -> Result<(Vec<u8>, Vec<u8>), ProviderError> {
        let stored = self.repo.read_blocks(&keys::owner(client, file), &[nonce]).await?;
        let b = stored.into_iter().next().expect("one block asked, one read");
        Ok((b.tag, b.data.to_vec()))
    }

    /// Every block of a version without its bytes, with one multi-proof (for `sync`).
    pub fn block_list(&self, client: &str, name: &str, want: Option<u64>) -> Result<BlockList, ProviderError> {
        let (located, version) = self.locate(client, name, want)?;
        let mut out = BlockList { located, starts: Vec::new(), proof: ByteBuf::new(), blocks: Vec::new() };
        let Some(version) = version else { return Ok(out) };
        let blocks: Vec<(u64, u64)> = version.list.iter().map(|l| (l.start, l.block.block_ref)).collect();
        let nonces: Vec<u64> = blocks.iter().map(|b| b.1).collect();
        let tags = self.repo.block_tags(&keys::owner(client, &version.record.file), &nonces)?;
        for ((start, nonce), tag) in blocks.into_iter().zip(tags) {
            out.starts.push(start);
            out.blocks.push(BlockMeta { nonce, tag: ByteBuf::from(tag) });
        }
        if !out.starts.is_empty() {
            out.proof = ByteBuf::from(version.list.prove(&out.starts).map_err(FilesError::Proof)?.as_bytes().to_vec());
        }
        Ok(out)
    }

    // ---- audits ----

    /// A possession proof for the challenge `req`: [`Files::challenged`], then
    /// [`Files::prove_possession`].
    pub async fn audit(&self, client: &str, req: &AuditRequest, max_bytes: u64) -> Result<AuditAnswer, ProviderError> {
        match self.challenged(client, req, max_bytes).await? {
            Challenged::Nothing(located) => Ok(AuditAnswer { located, proof: ByteBuf::new() }),
            Challenged::Blocks(held) => Ok(self.prove_possession(held)?.0),
        }
    }

    /// The version an audit asks for and its challenged blocks, read from storage. The
    /// distinct challenged blocks are held in memory together while the aggregate is computed:
    /// a challenge whose blocks hold more than `max_bytes` is refused
    /// ([`FilesError::AuditTooLarge`]) before any is read.
    pub async fn challenged(
        &self,
        client: &str,
        req: &AuditRequest,
        max_bytes: u64,
    ) -> Result<Challenged, ProviderError> {
        if req.count == 0 || req.count > MAX_CHALLENGE {
            return Err(FilesError::ChallengeSize { count: req.count }.into());
        }
        let reading = self.reading(client).await;
        let (located, version) = self.locate(client, &req.name, req.version)?;
        drop(reading);
        // An absent name, and an empty file (its proven record says 0 bytes), need no proof.
        let Some(version) = version.filter(|v| v.list.total_len() > 0) else {
            return Ok(Challenged::Nothing(located));
        };
        let challenge = Challenge::new(req.seed, req.count);
        let list = &version.list;
        let (offsets, _) = challenge.expand(list.total_len());
        let mut challenged = Vec::new();
        let mut seen = HashSet::new();
        let mut challenged_bytes = 0u64;
        for at in offsets {
            let found = list.search(at).ok_or(FilesError::PastEnd { offset: at, len: list.total_len() })?;
            if seen.insert(found.block.block_ref) {
                challenged.push(found.block.block_ref);
                challenged_bytes += u64::from(found.block.length);
            }
        }
        if challenged_bytes > max_bytes {
            return Err(FilesError::AuditTooLarge { bytes: challenged_bytes, max: max_bytes }.into());
        }
        let mut blocks = HashMap::new();
        for nonce in challenged {
            blocks.insert(nonce, self.block(client, &version.record.file, nonce).await?);
        }
        Ok(Challenged::Blocks(HeldBlocks { located, record: version.record, list: version.list, challenge, blocks }))
    }

    /// The possession proof over held blocks: the answer, and the proof itself.
    pub fn prove_possession(&self, held: HeldBlocks) -> Result<(AuditAnswer, PossessionProof), ProviderError> {
        let at = format!("possession proof of {}", keys::hex(&held.record.file));
        let proof = pdp::prove(held.record.scheme, &held.list, &held.challenge, |nonce| {
            held.blocks.get(&nonce).map(|(tag, data)| Held { nonce, tag, data })
        })
        .map_err(|e| corrupt(&at, e))?;
        Ok((AuditAnswer { located: held.located, proof: ByteBuf::from(proof.to_bytes()) }, proof))
    }
}

/// What an audit challenged.
pub enum Challenged {
    /// An absent name or an empty file: no proof owed.
    Nothing(Located),
    Blocks(HeldBlocks),
}

/// The challenged blocks of a version, read and held for proving.
pub struct HeldBlocks {
    pub located: Located,
    pub record: VersionRecord,
    list: Arc<FlexList>,
    challenge: Challenge,
    /// Per nonce: (tag, bytes).
    pub blocks: HashMap<u64, (Vec<u8>, Vec<u8>)>,
}

/// The chunks of a read, produced one at a time.
#[derive(Debug)]
pub struct ReadPlan {
    /// Per chunk, the start offsets of its blocks.
    pub chunks: Vec<Vec<u64>>,
    file: FileId,
    pub(crate) list: Arc<FlexList>,
}

impl ReadPlan {
    /// The block list the plan reads from.
    pub fn list(&self) -> &Arc<FlexList> {
        &self.list
    }
}

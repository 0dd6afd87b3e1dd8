//! Answers that read: blocks with their proofs, block lists, possession proofs.

use super::*;

impl Provider {
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
        if let (Misbehave::PastRange, Some(last)) = (self.misbehave, chunks.last_mut()) {
            // The block after the range, proven like the rest.
            if let Some(next) = list.search(at) {
                last.push(next.start);
            }
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
        let mut proof = proof.as_bytes().to_vec();
        if self.misbehave == Misbehave::StretchBlock {
            stretch_last_block(&mut proof, &mut blocks, starts);
        }
        Ok(ReadChunk { starts: starts.to_vec(), proof: ByteBuf::from(proof), blocks })
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

    /// A possession proof for the challenge `req`. The distinct challenged blocks are held in
    /// memory together while the aggregate is computed: a challenge whose blocks hold more than
    /// `max_bytes` is refused ([`ProviderError::TooLarge`]) before any is read.
    pub async fn audit(&self, client: &str, req: &AuditRequest, max_bytes: u64) -> Result<AuditAnswer, ProviderError> {
        if req.count == 0 || req.count > MAX_CHALLENGE {
            return Err(bad(format!("a challenge has 1 to {MAX_CHALLENGE} offsets")));
        }
        let (located, version) = self.locate(client, &req.name, req.version)?;
        // An absent name, and an empty file (its proven record says 0 bytes), need no proof.
        let Some(version) = version.filter(|v| v.list.total_len() > 0) else {
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
        let mut challenged = Vec::new();
        let mut seen = HashSet::new();
        let mut challenged_bytes = 0u64;
        for at in offsets {
            let found = list.search(at).ok_or_else(|| bad("offset past the end"))?;
            if seen.insert(found.block.block_ref) {
                challenged.push(found.block.block_ref);
                challenged_bytes += u64::from(found.block.length);
            }
        }
        if challenged_bytes > max_bytes {
            return Err(ProviderError::TooLarge(format!(
                "the challenged blocks hold {challenged_bytes} bytes, more than the {max_bytes} this provider \
                 holds for one audit: challenge fewer offsets"
            )));
        }
        let mut held: HashMap<u64, (Vec<u8>, Vec<u8>)> = HashMap::new();
        for nonce in challenged {
            held.insert(nonce, self.block(client, &version.record.file, nonce).await?);
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
        let mut proof = proof;
        if self.misbehave == Misbehave::StretchBlock {
            // A challenged block claims its unopened neighbour's bytes (which it could then
            // drop, answering for them with zeros).
            let forged = (0..64).find_map(|which| {
                vouch_core::flexlist::tamper::move_length(proof.list.as_bytes(), which, 1).ok().flatten()
            });
            if let Some(list) = forged.and_then(|f| vouch_core::MultiProof::from_bytes(f).ok()) {
                proof.list = list;
            }
        }
        let bytes = proof.to_bytes();
        self.first_proofs.lock().expect("proofs").entry(replay_key).or_insert_with(|| bytes.clone());
        Ok(AuditAnswer { located, proof: ByteBuf::from(bytes) })
    }
}

/// The chunks of a read, produced one at a time.
#[derive(Debug)]
pub struct ReadPlan {
    pub chunks: Vec<Vec<u64>>,
    file: FileId,
    list: Arc<FlexList>,
}

/// [`Misbehave::StretchBlock`]: the chunk's last block claims up to 4 KiB of the bytes that
/// follow it (taken from its neighbour's rank in the proof, so every sum still adds up) and
/// is served padded with zeros, as if the neighbour's bytes had been thrown away.
fn stretch_last_block(proof: &mut Vec<u8>, blocks: &mut [WireBlock], starts: &[u64]) {
    use vouch_core::flexlist::tamper;
    let (Some(&last), Some(block)) = (starts.iter().max(), blocks.last_mut()) else { return };
    let Ok(leaves) = tamper::opened_leaves(proof) else { return };
    let Some(which) = leaves.iter().position(|&(start, _)| start == last) else { return };
    for z in [4096, 512, 64, 1] {
        if let Ok(Some(forged)) = tamper::move_length(proof, which, z) {
            *proof = forged;
            let mut data = block.data.to_vec();
            data.resize(data.len() + z as usize, 0);
            block.data = ByteBuf::from(data);
            return;
        }
    }
}

//! Lies in answers that read: blocks, block lists, versions, listings, possession proofs.

use super::{Misbehave, Misbehaving};
use serde_bytes::ByteBuf;
use vouch_core::flexlist::tamper;
use vouch_core::namespace::VersionRecord;
use vouch_core::MultiProof;
use vouch_proto::{AuditAnswer, AuditRequest, BlockList, Listing, Located, ReadChunk, WireBlock};
use vouch_server::{Challenged, FilesError, ProviderError, ReadPlan};

impl Misbehaving {
    /// The version to look up in place of `want`: [`Misbehave::OldVersion`] serves the one
    /// before the latest as the latest; [`Misbehave::HideVersion`] says any version but the
    /// latest is not found.
    fn version_asked(&self, client: &str, name: &str, want: Option<u64>) -> Result<Option<u64>, ProviderError> {
        if !matches!(self.lie, Misbehave::OldVersion | Misbehave::HideVersion) {
            return Ok(want);
        }
        let log = self.honest.files().log(client, name)?;
        let numbers: Vec<u64> =
            log.versions.iter().filter_map(|r| VersionRecord::from_bytes(r).ok()).map(|r| r.number).collect();
        match (self.lie, want) {
            (Misbehave::OldVersion, None) if numbers.len() > 1 => Ok(Some(numbers[numbers.len() - 2])),
            (Misbehave::HideVersion, Some(n)) if numbers.last() != Some(&n) => {
                Err(FilesError::NoSuchVersion { name: name.to_string(), version: n }.into())
            }
            _ => Ok(want),
        }
    }
}

pub(crate) fn located(
    liar: &Misbehaving,
    client: &str,
    name: &str,
    want: Option<u64>,
) -> Result<Located, ProviderError> {
    liar.honest.files().located(client, name, liar.version_asked(client, name, want)?)
}

pub(crate) fn listing(liar: &Misbehaving, client: &str) -> Result<Listing, ProviderError> {
    let mut listing = liar.honest.files().listing(client)?;
    if liar.lie == Misbehave::HideFile && !listing.entries.is_empty() {
        listing.entries.remove(0);
    }
    Ok(listing)
}

pub(crate) fn read_plan(
    liar: &Misbehaving,
    client: &str,
    name: &str,
    want: Option<u64>,
    start: u64,
    end: u64,
) -> Result<(Located, ReadPlan), ProviderError> {
    let want = liar.version_asked(client, name, want)?;
    let (located, mut plan) = liar.honest.files().read_plan(client, name, want, start, end)?;
    match liar.lie {
        Misbehave::PastRange => {
            // The block after the range, proven like the rest.
            let list = plan.list().clone();
            let last = plan.chunks.last_mut().and_then(|c| c.last().copied().map(|s| (c, s)));
            if let Some((chunk, start)) = last {
                let after = list.search(start).map(|b| b.start + u64::from(b.block.length));
                if let Some(next) = after.and_then(|at| list.search(at)) {
                    chunk.push(next.start);
                }
            }
        }
        Misbehave::TruncateStream => {
            // End the stream early: after the first chunk, or halfway through the only one.
            if plan.chunks.len() > 1 {
                plan.chunks.truncate(1);
            } else if let Some(only) = plan.chunks.first_mut() {
                only.truncate(only.len() / 2);
                plan.chunks.retain(|c| !c.is_empty());
            }
        }
        _ => {}
    }
    Ok((located, plan))
}

pub(crate) async fn read_chunk(
    liar: &Misbehaving,
    client: &str,
    plan: &ReadPlan,
    starts: &[u64],
) -> Result<ReadChunk, ProviderError> {
    let mut chunk = liar.honest.files().read_chunk(client, plan, starts).await?;
    let blocks = &mut chunk.blocks;
    match liar.lie {
        Misbehave::CorruptBlock => {
            if let Some(b) = blocks.first_mut().filter(|b| !b.data.is_empty()) {
                let mut altered = b.data.to_vec();
                altered[0] ^= 1;
                b.data = altered.into();
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
        Misbehave::StretchBlock => stretch_last_block(&mut chunk.proof, blocks, starts),
        _ => {}
    }
    Ok(chunk)
}

pub(crate) fn block_list(
    liar: &Misbehaving,
    client: &str,
    name: &str,
    want: Option<u64>,
) -> Result<BlockList, ProviderError> {
    let want = liar.version_asked(client, name, want)?;
    let mut list = liar.honest.files().block_list(client, name, want)?;
    if liar.lie == Misbehave::CorruptBlock {
        if let Some(b) = list.blocks.first_mut() {
            b.tag[0] ^= 1;
        }
    }
    Ok(list)
}

pub(crate) async fn audit(
    liar: &Misbehaving,
    client: &str,
    req: &AuditRequest,
    max_bytes: u64,
) -> Result<AuditAnswer, ProviderError> {
    let mut req = req.clone();
    req.version = liar.version_asked(client, &req.name, req.version)?;
    if liar.lie == Misbehave::OtherChallenge {
        req.seed[0] ^= 1;
    }
    let mut held = match liar.honest.files().challenged(client, &req, max_bytes).await? {
        Challenged::Nothing(located) => return Ok(AuditAnswer { located, proof: ByteBuf::new() }),
        Challenged::Blocks(held) => held,
    };
    let replay_key = format!("{client}/{:?}/{}", held.record.file, held.record.number);
    if liar.lie == Misbehave::ReplayProof {
        if let Some(old) = liar.first_proofs.lock().expect("proofs").get(&replay_key) {
            return Ok(AuditAnswer { located: held.located, proof: ByteBuf::from(old.clone()) });
        }
    }
    if matches!(liar.lie, Misbehave::CorruptBlock | Misbehave::DropBlock | Misbehave::SwapBlocks) {
        // Whatever the lie, one challenged block's bytes are not what was stored.
        if let Some((_, data)) = held.blocks.values_mut().next() {
            data[0] ^= 1;
        }
    }
    let (mut answer, mut proof) = liar.honest.files().prove_possession(held)?;
    if liar.lie == Misbehave::StretchBlock {
        // A challenged block claims its unopened neighbour's bytes (which it could then
        // drop, answering for them with zeros).
        let forged = (0..64).find_map(|which| tamper::move_length(proof.list.as_bytes(), which, 1).ok().flatten());
        if let Some(list) = forged.and_then(|f| MultiProof::from_bytes(f).ok()) {
            proof.list = list;
            answer.proof = ByteBuf::from(proof.to_bytes());
        }
    }
    if liar.lie == Misbehave::ReplayProof {
        liar.first_proofs.lock().expect("proofs").entry(replay_key).or_insert_with(|| answer.proof.to_vec());
    }
    Ok(answer)
}

/// [`Misbehave::StretchBlock`]: the chunk's last block claims up to 4 KiB of the bytes that
/// follow it (taken from its neighbour's rank in the proof, so every sum still adds up) and
/// is served padded with zeros, as if the neighbour's bytes had been thrown away.
fn stretch_last_block(proof: &mut ByteBuf, blocks: &mut [WireBlock], starts: &[u64]) {
    let (Some(&last), Some(block)) = (starts.iter().max(), blocks.last_mut()) else { return };
    let Ok(leaves) = tamper::opened_leaves(proof) else { return };
    let Some(which) = leaves.iter().position(|&(start, _)| start == last) else { return };
    for z in [4096, 512, 64, 1] {
        if let Ok(Some(forged)) = tamper::move_length(proof, which, z) {
            *proof = ByteBuf::from(forged);
            let mut data = block.data.to_vec();
            data.resize(data.len() + z as usize, 0);
            block.data = data.into();
            return;
        }
    }
}

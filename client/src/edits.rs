//! Changing stored files in place: `edit` (a byte range) and `sync` (to a local file). Both
//! end as one batch of block edits (FlexDPDP multiUpdate), verified by the client
//! (verifyMultiUpdate) before the new version is accepted: the VCS commit of paper 000 Sec. 4.4.

use crate::chunking::Cutting;
use crate::client::Client;
use crate::commit::Commit;
use crate::error::ClientError;
use crate::intent::{new_attempt, EditPlan, Intent, Planned};
use crate::keys::ClientKey;
use crate::upload::{committed_proof_bytes, unix_now, Transfer};
use crate::verify::{self, valid_name, StoredBlock, Verified};
use rayon::prelude::*;
use serde_bytes::ByteBuf;
use std::collections::HashMap;
use std::ops::Range;
use std::time::Instant;
use vouch_core::namespace::{Change, Found, VersionRecord};
use vouch_core::pdp::{self, Tagger};
use vouch_core::Edit;
use vouch_proto::{BlockList, BlocksRequest, Committed, EditRequest, WireBlock, WireEdit};

/// A change of bytes in a stored file, made as one verified batch (`vouch edit`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ByteEdit {
    Insert { at: u64, data: Vec<u8> },
    Delete { range: Range<u64> },
    Replace { at: u64, data: Vec<u8> },
}

/// What a sync sent.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SyncReport {
    pub name: String,
    pub version: u64,
    /// False when the stored version already equalled the local file (no new version).
    pub changed: bool,
    pub edits: usize,
    pub blocks_total: usize,
    pub blocks_kept: usize,
    pub blocks_sent: u64,
    pub bytes_sent: u64,
    /// Bytes of the block list and its proof received to diff against.
    pub list_bytes: u64,
    /// All proofs of the commit (block list, version list, namespace, lookup).
    pub proof_bytes: u64,
    /// The block list's multiUpdate proof alone (what the papers report per commit).
    pub file_proof_bytes: u64,
    /// The provider's reported time for the commit, in ms (not verified).
    pub server_ms: Option<f64>,
    pub seconds: f64,
}

/// A batch being assembled: edits in old-version offsets and the new blocks they bring.
struct Batch {
    edits: Vec<Edit>,
    wire: Vec<WireEdit>,
    blocks: Vec<WireBlock>,
    state: pdp::ClientFile,
    /// This attempt's salt: a retry after a refused commit reuses the nonces, never the salt.
    salt: pdp::Salt,
    bytes: u64,
}

impl Batch {
    fn new(latest: &VersionRecord) -> Batch {
        let state = latest.client_file();
        Batch { edits: Vec::new(), wire: Vec::new(), blocks: Vec::new(), state, salt: rand::random(), bytes: 0 }
    }

    /// Replaces the stored blocks starting at `old` (consecutive, ending at `end`) by
    /// `bytes` cut into blocks: modify in place while both last, then remove or insert.
    fn replace(
        &mut self,
        key: &ClientKey,
        old: &[u64],
        end: u64,
        bytes: &[u8],
        cutting: Cutting,
    ) -> Result<(), ClientError> {
        let pieces = cutting.cut(bytes);
        let tagged =
            self.state.tag_blocks(key, &self.salt, &pieces).map_err(|e| ClientError::BadInput(e.to_string()))?;
        for (i, t) in tagged.iter().enumerate() {
            let index = self.blocks.len() as u32;
            self.blocks.push(WireBlock {
                nonce: t.nonce,
                tag: ByteBuf::from(t.tag.clone()),
                data: bytes::Bytes::copy_from_slice(pieces[i]),
            });
            self.bytes += pieces[i].len() as u64;
            if let Some(&at) = old.get(i) {
                self.edits.push(Edit::Modify { at, block: t.leaf });
                self.wire.push(WireEdit::Modify { at, block: index });
            } else {
                self.edits.push(Edit::Insert { at: end, block: t.leaf });
                self.wire.push(WireEdit::Insert { at: end, block: index });
            }
        }
        for &at in old.iter().skip(tagged.len()) {
            self.edits.push(Edit::Remove { at });
            self.wire.push(WireEdit::Remove { at });
        }
        Ok(())
    }
}

impl Commit<'_> {
    /// Sends a batch against `latest` and verifies the answer at every level.
    async fn edit_batch(
        &self,
        name: &str,
        latest: Verified,
        batch: Batch,
    ) -> Result<(VersionRecord, Committed), ClientError> {
        let time = unix_now();
        let req = EditRequest {
            name: name.into(),
            base: latest.record.number,
            edits: batch.wire,
            blocks: batch.blocks,
            time,
            attempt: new_attempt(),
        };
        let plan = EditPlan {
            base: latest.record,
            number: latest.entry.next_version,
            next_nonce: batch.state.next_nonce,
            time,
            edits: batch.edits,
        };
        let client = self.client;
        let por_file = vouch_core::por::copy::is_por_file(&latest.record.file);
        if por_file {
            client.por().owe_copy(&self.lock, name).await?;
        }
        let intent = Intent::one(client.root(), name, Planned::Edit(plan.clone()), req.attempt);
        client.ledger.intend(intent)?;
        // The name was proven present: a "not found" is a lie.
        let answer: Committed = client.remote.call(&req).await.map_err(|e| e.absence_unproven(name))?;
        let record = plan.record(&answer)?;
        let found = Found::At { index: verify::lookup_from_wire(&answer.lookup)?.index, entry: latest.entry };
        self.accept(name, Some(&found), &Change::Append(record), &answer)?;
        if por_file {
            // Only the blocks the edit wrote take new slots.
            client.por().pay_edit(&self.lock, name, &plan.base, &record, &req.blocks).await?;
        }
        Ok((record, answer))
    }
}

impl Client {
    /// Changes bytes of the latest version of `name` as one verified batch of block edits,
    /// making a new version. Only the blocks the change touches are read and sent.
    pub async fn edit(
        &self,
        name: &str,
        change: &ByteEdit,
        block_size: Option<usize>,
    ) -> Result<Transfer, ClientError> {
        let started = Instant::now();
        let cutting = Cutting::from_option(block_size).map_err(ClientError::BadInput)?;
        let key = self.keys.owner()?;
        valid_name(name)?;
        let commit = Commit::begin(self).await?;
        let latest = commit.reads().version(name, None).await?;
        self.keys.same_scheme(name, Some(&latest.record))?;
        let len = latest.record.len;
        let (a, b, new_bytes) = match change {
            ByteEdit::Insert { at, data } => (*at, *at, data.as_slice()),
            ByteEdit::Delete { range } => (range.start, range.end, &[][..]),
            ByteEdit::Replace { at, data } => (*at, at.saturating_add(data.len() as u64).min(len), data.as_slice()),
        };
        if a > b || b > len {
            return Err(ClientError::BadInput(format!("the change {a}..{b} is outside the file ({len} bytes)")));
        }
        // The blocks the change touches, read verified. An insert at offset 0 or at the end
        // touches none.
        let mut touched: Vec<(u64, Vec<u8>)> = Vec::new();
        if a < len && (a < b || a > 0) {
            let until = if a == b { a + 1 } else { b };
            commit
                .reads()
                .read_blocks(name, Some(latest.record.number), Some(a..until), |parts, _| {
                    touched.extend(parts.into_iter().map(|(_, (s, d))| (s, d.to_vec())));
                    Ok(())
                })
                .await?;
        }
        // Neither does an insert at a block boundary.
        if a == b && touched.first().is_some_and(|(s, _)| *s == a) {
            touched.clear();
        }
        let (lo, hi) = match (touched.first(), touched.last()) {
            (Some((s, _)), Some((ls, ld))) => (*s, ls + ld.len() as u64),
            _ => (a, a),
        };
        let region: Vec<u8> = touched.iter().flat_map(|(_, d)| d.iter().copied()).collect();
        let mut new_region = region[..(a - lo) as usize].to_vec();
        new_region.extend_from_slice(new_bytes);
        new_region.extend_from_slice(&region[(b - lo) as usize..]);
        if region == new_region {
            return Err(ClientError::BadInput("the change leaves the file as it is".into()));
        }
        let mut batch = Batch::new(&latest.record);
        let old: Vec<u64> = touched.iter().map(|(s, _)| *s).collect();
        batch.replace(key, &old, hi, &new_region, cutting)?;
        let blocks = batch.blocks.len() as u64;
        let (record, answer) = commit.edit_batch(name, latest, batch).await?;
        Ok(Transfer {
            name: name.into(),
            version: record.number,
            bytes: new_region.len() as u64,
            blocks,
            proof_bytes: committed_proof_bytes(&answer),
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Makes `name` equal to the local file `path`, sending only what differs: the stored
    /// blocks still found in the file (at their old offset, or shifted by the change in
    /// length) stay; every gap between them is re-cut from the local bytes. One verified batch.
    /// A name that does not exist yet is put whole.
    pub async fn sync(&self, name: &str, path: &std::path::Path) -> Result<SyncReport, ClientError> {
        let started = Instant::now();
        let local = LocalFile::open(path)?;
        let key = self.keys.owner()?;
        let commit = Commit::begin(self).await?;
        // An absent name is proven absent in the answer, never a bare "not found".
        let answer: BlockList = self
            .remote
            .call(&BlocksRequest { name: name.into(), version: None })
            .await
            .map_err(|e| e.absence_unproven(name))?;
        let list_bytes = (answer.proof.len() + answer.blocks.iter().map(|b| b.tag.len() + 8).sum::<usize>()) as u64;
        let latest = match verify::located(&self.root(), name, None, &answer.located)? {
            (_, Some(v)) => v,
            (_, None) => {
                let t = commit.put(name, local.file, (Cutting::Content, false, None), |_| {}, started).await?;
                return Ok(SyncReport {
                    name: name.into(),
                    version: t.version,
                    changed: true,
                    edits: 0,
                    blocks_total: 0,
                    blocks_kept: 0,
                    blocks_sent: t.blocks,
                    bytes_sent: t.bytes,
                    list_bytes,
                    proof_bytes: t.proof_bytes,
                    file_proof_bytes: 0,
                    server_ms: self.remote.last_server_time().map(|d| d.as_secs_f64() * 1e3),
                    seconds: started.elapsed().as_secs_f64(),
                });
            }
        };
        self.keys.same_scheme(name, Some(&latest.record))?;
        let stored = verify::block_list(&latest.record, &answer)?;
        let file = &latest.record.file;
        let plan = diff(&stored, &local, |i, bytes| key.check_block(file, stored[i].nonce, bytes, &stored[i].tag))
            .map_err(ClientError::io(format!("reading {}", path.display())))?;
        let mut batch = Batch::new(&latest.record);
        let mut bytes = Vec::new();
        for gap in &plan.gaps {
            local
                .read(gap.local.clone(), &mut bytes)
                .map_err(ClientError::io(format!("reading {}", path.display())))?;
            batch.replace(key, &gap.old, gap.end, &bytes, Cutting::Content)?;
        }
        let (edits, sent, bytes_sent) = (batch.edits.len(), batch.blocks.len() as u64, batch.bytes);
        if edits == 0 {
            return Ok(SyncReport {
                name: name.into(),
                version: latest.record.number,
                changed: false,
                edits: 0,
                blocks_total: stored.len(),
                blocks_kept: plan.kept,
                blocks_sent: 0,
                bytes_sent: 0,
                list_bytes,
                proof_bytes: 0,
                file_proof_bytes: 0,
                server_ms: None,
                seconds: started.elapsed().as_secs_f64(),
            });
        }
        let (record, committed) = commit.edit_batch(name, latest, batch).await?;
        Ok(SyncReport {
            name: name.into(),
            version: record.number,
            changed: true,
            edits,
            blocks_total: stored.len(),
            blocks_kept: plan.kept,
            blocks_sent: sent,
            bytes_sent,
            list_bytes,
            proof_bytes: committed_proof_bytes(&committed),
            file_proof_bytes: committed.file_update.as_ref().map_or(0, |p| p.len() as u64),
            server_ms: self.remote.last_server_time().map(|d| d.as_secs_f64() * 1e3),
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// The bytes `sync` compares: read where they are needed, never copied whole into memory
/// (for a large file, faulting in a buffer of its size cost more than all the tag checks).
pub(crate) trait LocalBytes: Sync {
    fn len(&self) -> usize;
    /// `out` becomes the bytes of `range`, which is within `len()`.
    fn read(&self, range: Range<usize>, out: &mut Vec<u8>) -> std::io::Result<()>;
}

impl LocalBytes for [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }

    fn read(&self, range: Range<usize>, out: &mut Vec<u8>) -> std::io::Result<()> {
        out.clear();
        out.extend_from_slice(&self[range]);
        Ok(())
    }
}

/// A local file read in place with positioned reads (`pread`), from any thread. A file
/// changed while it is synced can give a version mixing old and new bytes, as with any tool
/// that reads a live file; every block sent is tagged from the bytes actually read.
pub(crate) struct LocalFile {
    file: std::fs::File,
    len: usize,
}

impl LocalFile {
    fn open(path: &std::path::Path) -> Result<Self, ClientError> {
        let what = || format!("reading {}", path.display());
        let file = std::fs::File::open(path).map_err(ClientError::io(what()))?;
        let len = file.metadata().map_err(ClientError::io(what()))?.len();
        let len = usize::try_from(len).map_err(|_| ClientError::BadInput(format!("{} is too large", what())))?;
        Ok(LocalFile { file, len })
    }
}

impl LocalBytes for LocalFile {
    fn len(&self) -> usize {
        self.len
    }

    fn read(&self, range: Range<usize>, out: &mut Vec<u8>) -> std::io::Result<()> {
        out.resize(range.len(), 0);
        std::os::unix::fs::FileExt::read_exact_at(&self.file, out, range.start as u64)
    }
}

/// Stored blocks to replace, and the local bytes that replace them.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Gap {
    /// Starts of the consecutive stored blocks replaced (maybe none: a pure insert).
    pub old: Vec<u64>,
    /// Where the gap ends in the stored version (the next kept block's start, or its length).
    pub end: u64,
    pub local: Range<usize>,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub gaps: Vec<Gap>,
    pub kept: usize,
}

/// Which stored blocks survive in `local` and what fills the gaps between them.
///
/// Two ways to find the stored blocks in the local file, one after the other:
/// 1. by position: each block where the previous kept block's shift, or the change in total
///    length, puts it (right around any one change, and for fixed-size blocks);
/// 2. by content, only inside the gaps that the first way left: each content-defined chunk of
///    the gap's local bytes against the next stored blocks of its length (right for
///    content-defined blocks around any number of changes).
///
/// `matches(i, at)` says whether stored block `i` equals the local bytes at `at` (the tag
/// check), so a kept block is an equality and any plan rebuilds `local` exactly. The tag
/// checks by position are the whole cost for a small change to a large file (one per block),
/// so they run on every core, each over a contiguous piece of the blocks; chunking touches
/// only the gaps, not the whole file.
pub(crate) fn diff(
    stored: &[StoredBlock],
    local: &(impl LocalBytes + ?Sized),
    matches: impl Fn(usize, &[u8]) -> bool + Sync,
) -> std::io::Result<Plan> {
    // The first read error wins; a block that could not be read is not kept.
    let failed = std::sync::Mutex::new(None);
    let fits = |i: usize, at: usize| {
        let range = at..at + stored[i].len as usize;
        if range.end > local.len() {
            return false;
        }
        let mut bytes = Vec::new();
        match local.read(range, &mut bytes) {
            Ok(()) => matches(i, &bytes),
            Err(e) => {
                failed.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                false
            }
        }
    };
    let by_position = by_position(stored, local.len(), &fits);
    let kept = with_gaps_by_content(stored, local, &by_position, &fits)?;
    if let Some(e) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    Ok(plan_from(stored, local.len(), &kept))
}

/// Kept (stored index, local offset) pairs, finding each block at its expected position.
/// Pieces of the block list are walked in parallel, each starting unshifted; a pair that
/// overlaps the piece before's last kept block is dropped, so the pairs stay increasing.
fn by_position(
    stored: &[StoredBlock],
    local_len: usize,
    fits: &(impl Fn(usize, usize) -> bool + Sync),
) -> Vec<(usize, usize)> {
    let stored_len = stored.last().map_or(0, |b| b.start + u64::from(b.len));
    let delta = local_len as i128 - i128::from(stored_len);
    let piece = stored.len().div_ceil(rayon::current_num_threads().max(1)).max(1);
    let starts: Vec<usize> = (0..stored.len()).step_by(piece).collect();
    let pieces: Vec<Vec<(usize, usize)>> = starts
        .into_par_iter()
        .map(|from| {
            let (mut kept, mut cursor, mut shift) = (Vec::new(), 0usize, 0i128);
            for (i, StoredBlock { start: s, len: l, .. }) in stored.iter().enumerate().skip(from).take(piece) {
                let at = [shift, delta]
                    .into_iter()
                    .filter_map(|sh| usize::try_from(i128::from(*s) + sh).ok())
                    .find(|&at| at >= cursor && fits(i, at));
                if let Some(at) = at {
                    kept.push((i, at));
                    cursor = at + *l as usize;
                    shift = at as i128 - i128::from(*s);
                }
            }
            kept
        })
        .collect();
    let (mut kept, mut cursor) = (Vec::new(), 0usize);
    for (i, at) in pieces.into_iter().flatten() {
        if at >= cursor {
            kept.push((i, at));
            cursor = at + stored[i].len as usize;
        }
    }
    kept
}

/// `kept` with the pairs found by content in each gap between two kept blocks (and before
/// the first, after the last).
fn with_gaps_by_content(
    stored: &[StoredBlock],
    local: &(impl LocalBytes + ?Sized),
    kept: &[(usize, usize)],
    fits: &impl Fn(usize, usize) -> bool,
) -> std::io::Result<Vec<(usize, usize)>> {
    let mut out = Vec::with_capacity(kept.len());
    let (mut next_block, mut next_byte, mut gap) = (0usize, 0usize, Vec::new());
    for &(i, at) in kept.iter().chain([&(stored.len(), local.len())]) {
        if next_block < i && next_byte < at {
            local.read(next_byte..at, &mut gap)?;
            let chunks = local_chunks(&gap);
            let found = by_content(&stored[next_block..i], &chunks, &|j, off| fits(next_block + j, next_byte + off));
            out.extend(found.into_iter().map(|(j, off)| (next_block + j, next_byte + off)));
        }
        if i < stored.len() {
            out.push((i, at));
            (next_block, next_byte) = (i + 1, at + stored[i].len as usize);
        }
    }
    Ok(out)
}

/// Kept pairs found by content: each local chunk against the next few stored blocks of its
/// length after the last kept one (nearest first, so repeated content stays aligned).
fn by_content(
    stored: &[StoredBlock],
    chunks: &[(usize, usize)],
    fits: &impl Fn(usize, usize) -> bool,
) -> Vec<(usize, usize)> {
    let mut by_len: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, b) in stored.iter().enumerate() {
        by_len.entry(b.len).or_default().push(i);
    }
    let (mut kept, mut next) = (Vec::new(), 0usize);
    for &(at, len) in chunks {
        let Some(same) = u32::try_from(len).ok().and_then(|l| by_len.get(&l)) else { continue };
        let from = same.partition_point(|&i| i < next);
        if let Some(&i) = same[from..].iter().take(4).find(|&&i| fits(i, at)) {
            kept.push((i, at));
            next = i + 1;
        }
    }
    kept
}

/// The gaps around kept blocks (both coordinates increasing).
fn plan_from(stored: &[StoredBlock], local_len: usize, kept: &[(usize, usize)]) -> Plan {
    let stored_len = stored.last().map_or(0, |b| b.start + u64::from(b.len));
    let (mut gaps, mut old, mut cursor) = (Vec::new(), Vec::new(), 0usize);
    let mut keep = kept.iter().peekable();
    for (i, StoredBlock { start: s, len: l, .. }) in stored.iter().enumerate() {
        match keep.peek() {
            Some(&&(k, at)) if k == i => {
                keep.next();
                if !old.is_empty() || cursor < at {
                    gaps.push(Gap { old: std::mem::take(&mut old), end: *s, local: cursor..at });
                }
                cursor = at + *l as usize;
            }
            _ => old.push(*s),
        }
    }
    if !old.is_empty() || cursor < local_len {
        gaps.push(Gap { old, end: stored_len, local: cursor..local_len });
    }
    Plan { gaps, kept: kept.len() }
}

/// (offset, length) of `local`'s content-defined chunks.
pub(crate) fn local_chunks(local: &[u8]) -> Vec<(usize, usize)> {
    let mut at = 0;
    Cutting::Content
        .cut(local)
        .iter()
        .map(|c| {
            at += c.len();
            (at - c.len(), c.len())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored blocks of `sizes` over `data`, "tag" = the bytes themselves.
    fn blocks(data: &[u8], sizes: &[usize]) -> Vec<StoredBlock> {
        let mut at = 0;
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let b =
                    StoredBlock { start: at as u64, len: n as u32, nonce: i as u64, tag: data[at..at + n].to_vec() };
                at += n;
                b
            })
            .collect()
    }

    fn plan(stored: &[StoredBlock], local: &[u8]) -> Plan {
        diff(stored, local, |i, bytes| bytes == &stored[i].tag[..]).unwrap()
    }

    /// Applies a plan the way the provider would, to check it rebuilds `local`.
    fn rebuild(stored: &[StoredBlock], local: &[u8], plan: &Plan) -> Vec<u8> {
        let mut out = Vec::new();
        let mut gaps = plan.gaps.iter().peekable();
        for StoredBlock { start: s, tag: bytes, .. } in stored {
            if let Some(g) = gaps.peek() {
                if g.old.first() == Some(s) || (g.old.is_empty() && g.end == *s) {
                    out.extend_from_slice(&local[g.local.clone()]);
                    gaps.next();
                }
            }
            if !plan.gaps.iter().any(|g| g.old.contains(s)) {
                out.extend_from_slice(bytes);
            }
        }
        for g in gaps {
            out.extend_from_slice(&local[g.local.clone()]);
        }
        out
    }

    #[test]
    fn diff_keeps_untouched_blocks_and_rebuilds_the_local_file() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let stored = blocks(&data, &[100; 10]);
        let cases: Vec<(Vec<u8>, usize)> = vec![
            (data.clone(), 10),
            (
                {
                    let mut d = data.clone();
                    d.splice(250..250, [1, 2, 3]);
                    d
                },
                9,
            ),
            (
                {
                    let mut d = data.clone();
                    d.drain(250..260);
                    d
                },
                9,
            ),
            (
                {
                    let mut d = data.clone();
                    d[550] ^= 1;
                    d
                },
                9,
            ),
            (
                {
                    let mut d = data.clone();
                    d.extend([9; 50]);
                    d
                },
                10,
            ),
            (
                {
                    let mut d = data.clone();
                    d.splice(0..0, [9; 50]);
                    d
                },
                10,
            ),
            (
                {
                    let mut d = data.clone();
                    d.drain(0..100);
                    d
                },
                9,
            ),
            (Vec::new(), 0),
            (
                {
                    let mut d = data.clone();
                    d[50] ^= 1;
                    d.splice(700..700, [4; 30]);
                    d
                },
                9,
            ),
        ];
        for (local, kept) in cases {
            let p = plan(&stored, &local);
            assert_eq!(p.kept, kept, "kept blocks for a local file of {} bytes", local.len());
            assert_eq!(rebuild(&stored, &local, &p), local);
        }
    }

    #[test]
    fn diff_of_content_defined_blocks_survives_scattered_changes() {
        let data: Vec<u8> = (0..600_000u64).map(|i| (i.wrapping_mul(0x9e37_79b9) >> 13) as u8).collect();
        let sizes: Vec<usize> = Cutting::Content.cut(&data).iter().map(|b| b.len()).collect();
        let stored = blocks(&data, &sizes);
        let mut local = data.clone();
        local.splice(500_000..500_010, []);
        local[300_000] ^= 1;
        local.splice(100_000..100_000, [5u8; 999]);
        let p = plan(&stored, &local);
        assert!(p.kept + 6 >= stored.len(), "kept {} of {}", p.kept, stored.len());
        assert_eq!(rebuild(&stored, &local, &p), local);
    }

    #[test]
    fn diff_stays_aligned_in_repetitive_content() {
        // Low-entropy data: many content-defined blocks are identical.
        let data: Vec<u8> = (0..2_000_000u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as u8).collect();
        let sizes: Vec<usize> = Cutting::Content.cut(&data).iter().map(|b| b.len()).collect();
        let stored = blocks(&data, &sizes);
        let mut local = data.clone();
        local.splice(700_000..700_000, *b"inserted");
        let p = plan(&stored, &local);
        assert!(p.kept + 2 >= stored.len(), "kept {} of {}", p.kept, stored.len());
        assert_eq!(rebuild(&stored, &local, &p), local);
    }

    #[test]
    fn diff_finds_every_untouched_block_around_random_edits() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        let data: Vec<u8> = (0..400_000u64).map(|i| (i.wrapping_mul(0x9e37_79b9) >> 13) as u8).collect();
        for case in 0..40 {
            let sizes: Vec<usize> = match case % 2 {
                0 => Cutting::Content.cut(&data).iter().map(|b| b.len()).collect(),
                _ => Cutting::Fixed(8192).cut(&data).iter().map(|b| b.len()).collect(),
            };
            let stored = blocks(&data, &sizes);
            // Edits at increasing offsets of the original, so "touched" is easy to tell.
            let mut touched: Vec<std::ops::Range<usize>> = Vec::new();
            let mut local = Vec::new();
            let mut at = 0;
            // Fixed-size blocks are found by position: around one change (any shift between
            // two changes is not searched for), content-defined ones around any number.
            let edits = if case % 2 == 0 { 1 + next(4) } else { 1 };
            for _ in 0..edits {
                let start = at + next(data.len() / 5);
                let end = (start + next(3000)).min(data.len());
                if start >= data.len() {
                    break;
                }
                local.extend_from_slice(&data[at..start]);
                local.extend(std::iter::repeat_n(next(256) as u8, next(3000)));
                touched.push(start..end.max(start + 1));
                at = end;
            }
            local.extend_from_slice(&data[at.min(data.len())..]);
            let untouched = stored
                .iter()
                .filter(|b| {
                    let r = b.start as usize..(b.start + u64::from(b.len)) as usize;
                    touched.iter().all(|t| t.end <= r.start || r.end < t.start)
                })
                .count();
            let p = plan(&stored, &local);
            assert_eq!(rebuild(&stored, &local, &p), local, "case {case}");
            assert!(p.kept <= stored.len());
            assert!(
                p.kept + 3 * touched.len() >= untouched,
                "case {case}: kept {} of {untouched} untouched blocks around {} edits",
                p.kept,
                touched.len()
            );
        }
    }
}

//! The PoR log over the real HTTP protocol: a client made of `vouch_core::por`'s pure parts
//! creates its log, writes blocks in batches, reads them back through U, audits every level
//! and C, and repairs C after its bytes are damaged on the backend itself.

use rand::{rngs::StdRng, RngCore, SeedableRng};
use std::path::Path;
use vouch_core::por::audit::{parts, picks, verify_part, PartProof};
use vouch_core::por::checksum::{ChecksumKey, SealKey};
use vouch_core::por::client::{plan, verify_read, write, write_opened, LogState, RawRead, ReadError, WriteContext};
use vouch_core::por::heap::{encode_slot, join_block, slots_for, split_block, SLOT_DATA_BYTES, SLOT_WIDTH};
use vouch_core::por::stream::ContextReader;

/// Blocks of H are pairs of writes; every batch flushes its group.
const GROUP_LOG: u32 = 1;
use serde_bytes::ByteBuf;
use vouch_core::por::repair::{recover_raw, RegionRead};
use vouch_core::por::wire::{sealed_list_to_bytes, slots_to_bytes};
use vouch_proto::por::*;

/// The least part of a plan's answer a client may ask for.
const SMALL_PART: usize = 4 << 10;
use vouch_misbehave::{Misbehave, Misbehaving};
use vouch_proto::{decode, encode, ErrorBody, ErrorCode, Op, Rpc, PROTOCOL_VERSION, VERSION_HEADER};
use vouch_server::{Provider, RunningServer, ServeOptions, Service};
use vouch_testkit::provider;

const TOKEN: &str = "por-token";
/// A second client's.
const BOB: &str = "por-token-bob";

struct Client {
    token: &'static str,
    http: reqwest::Client,
    base: String,
    state: LogState,
    seal: SealKey,
    sums: ChecksumKey,
    next: u64,
    /// Labels for the next batch.
    labels: Vec<PorLabel>,
}

impl Client {
    fn new<S: Service>(server: &RunningServer<S>) -> Client {
        Client::with_token(server, TOKEN)
    }

    fn with_token<S: Service>(server: &RunningServer<S>, token: &'static str) -> Client {
        let seal = SealKey::new(&[1; 32]);
        let state = LogState::new(2, GROUP_LOG, &seal).0;
        let sums = ChecksumKey::grouped(&[2; 32], SLOT_WIDTH, GROUP_LOG);
        vouch_proto::tls::install_provider();
        Client {
            token,
            http: reqwest::Client::new(),
            base: format!("http://{}", server.addr),
            state,
            seal,
            sums,
            next: 0,
            labels: Vec::new(),
        }
    }

    fn init_request(&self) -> PorInitRequest {
        let coded = LogState::new(2, GROUP_LOG, &self.seal).1;
        PorInitRequest { log_capacity: 2, group_log: GROUP_LOG as u8, coded: sealed_list_to_bytes(&coded).into() }
    }

    /// `req`, sent to its own operation; its answer, or the provider's refusal.
    async fn call<R: Rpc>(&self, req: &R) -> Result<R::Answer, ErrorBody> {
        let response = self
            .http
            .post(format!("{}{}", self.base, R::OP.path()))
            .bearer_auth(self.token)
            .header(VERSION_HEADER, PROTOCOL_VERSION.to_string())
            .body(encode(req))
            .send()
            .await
            .unwrap();
        let ok = response.status().is_success();
        let body = response.bytes().await.unwrap();
        if ok {
            Ok(decode(&body).unwrap())
        } else {
            Err(decode(&body).unwrap())
        }
    }

    /// Writes `blocks` into fresh slots, one batch; returns where each starts.
    async fn put(&mut self, blocks: &[Vec<u8>]) -> Vec<u64> {
        let (mut writes, mut slots, mut firsts) = (Vec::new(), Vec::new(), Vec::new());
        for block in blocks {
            firsts.push(self.next);
            slots.extend(split_block(self.next, block));
            let count = slots_for(block.len() as u64);
            writes.extend(self.next..self.next + count);
            self.next += count;
        }
        self.send(writes, slots, Vec::new()).await;
        firsts
    }

    /// The answer to a plan, in parts of the least size a client may ask for (a client's
    /// messages stay small whatever the log's size).
    async fn context(&self, plan: &[u8]) -> Vec<u8> {
        let request = PorPlanRequest { plan: plan.to_vec().into(), part: SMALL_PART as u32 };
        let answer: PorContext = self.call(&request).await.unwrap();
        let mut context = answer.context.into_vec();
        assert!(context.len() <= SMALL_PART);
        while (context.len() as u64) < answer.total {
            let more: PorMoreAnswer = self.call(&PorMoreRequest { offset: context.len() as u64 }).await.unwrap();
            assert!(!more.part.is_empty() && more.part.len() <= SMALL_PART);
            context.extend_from_slice(&more.part);
        }
        assert_eq!(context.len() as u64, answer.total);
        context
    }

    /// `request` with `upload` staged in parts of an odd size but the last, which it carries.
    async fn staged(&self, mut request: PorWriteRequest, upload: Vec<u8>) -> PorWriteRequest {
        const PART: usize = 1000;
        let staged = upload.len().saturating_sub(1) / PART * PART;
        for (i, part) in upload[..staged].chunks(PART).enumerate() {
            let stage = PorStageRequest { offset: (i * PART) as u64, part: part.to_vec().into() };
            let answer: PorStaged = self.call(&stage).await.unwrap();
            assert_eq!(answer.staged, ((i + 1) * PART) as u64);
        }
        (request.staged, request.upload) = (staged as u64, upload[staged..].to_vec().into());
        request
    }

    /// Writes ⊥ over U's slots `indices` (App. A.3's delete), sending their indices alone.
    async fn delete(&mut self, indices: &[u64]) {
        let slots: Vec<u64> = indices.iter().flat_map(|&i| encode_slot(i, None)).collect();
        self.send(indices.to_vec(), slots, indices.to_vec()).await;
    }

    async fn send(&mut self, writes: Vec<u64>, slots: Vec<u64>, deleted: Vec<u64>) {
        let planned = plan(&self.state, &writes, true).unwrap();
        let context = WriteContext::from_bytes(&self.context(&planned.to_bytes()).await).unwrap();
        let written = write(&self.state, &planned, &context, &writes, &slots, &self.seal, &self.sums).unwrap();
        let data: Vec<u64> = writes
            .iter()
            .zip(slots.chunks_exact(SLOT_WIDTH))
            .filter(|(i, _)| !deleted.contains(i))
            .flat_map(|(_, s)| s.to_vec())
            .collect();
        let request = PorWriteRequest {
            plan: planned.to_bytes().into(),
            writes,
            deleted,
            slots: slots_to_bytes(&data).into(),
            upload: ByteBuf::new(),
            staged: 0,
            labels: std::mem::take(&mut self.labels),
            incarnation: 0,
        };
        let request = self.staged(request, written.upload_bytes()).await;
        let status: PorStatus = self.call(&request).await.unwrap();
        assert_eq!(
            (u32::from(status.log_capacity), status.time),
            (written.state.schedule.log_capacity, written.state.schedule.time)
        );
        self.state = written.state;
    }

    async fn get(&self, first: u64, len: u64) -> Result<Vec<u8>, ReadError> {
        let indices: Vec<u64> = (first..first + slots_for(len)).collect();
        let answer: PorReadAnswer = self.call(&PorReadRequest { indices: indices.clone() }).await.unwrap();
        let read = RawRead::from_bytes(&answer.read).unwrap();
        verify_read(&self.state, &indices, &read, &self.seal, &self.sums)?;
        Ok(join_block(first, len, &read.slots).unwrap())
    }

    /// Every part's verdict; `Err` when the provider cannot answer at all.
    async fn audit(&self, lambda: u32) -> Result<Vec<bool>, ErrorBody> {
        let seed = [9; 32];
        let answer: PorAuditAnswer = self.call(&PorAuditRequest { seed, lambda }).await?;
        let all = parts(&self.state.schedule);
        assert_eq!(answer.parts.len(), all.len());
        Ok(all
            .iter()
            .zip(&answer.parts)
            .map(|(part, answer)| {
                let chosen = picks(&seed, part, lambda as usize);
                let PorPartAnswer::Proof(bytes) = answer else { return false };
                PartProof::from_bytes(bytes, chosen.len(), self.sums.region_width(part.region))
                    .is_ok_and(|proof| verify_part(&self.seal, &self.sums, part, &chosen, &proof).is_ok())
            })
            .collect())
    }

    async fn label(&self, key: &[u8]) -> Option<Vec<u8>> {
        let answer: PorLabelAnswer = self.call(&PorLabelRequest { key: key.to_vec().into() }).await.unwrap();
        answer.value.map(|v| v.to_vec())
    }

    /// A whole region, read five slots a page (as a client pages through a large one).
    async fn region(&self, region: u8) -> RegionRead {
        let slots = if region == 0xFE { 2 * self.state.schedule.capacity() } else { 2 << region };
        let mut whole = RegionRead::default();
        for first in (0..slots).step_by(5) {
            let answer: PorRegionAnswer = self.call(&PorRegionRequest { region, first, count: 5 }).await.unwrap();
            let page = RegionRead::from_bytes(&answer.region).unwrap();
            assert_eq!(page.slots.len() as u64, (slots - first).min(5));
            whole.slots.extend(page.slots);
            whole.sealed.extend(page.sealed);
        }
        let past = PorRegionRequest { region, first: slots, count: 5 };
        assert_eq!(self.call(&past).await.unwrap_err().code, ErrorCode::BadRequest);
        whole
    }
}

/// Alice and Bob, as the provider knows them.
const CLIENTS: &[(&str, &str)] = &[(TOKEN, "alice"), (BOB, "bob")];

async fn serve(data: &Path, lie: Misbehave) -> RunningServer<Misbehaving> {
    provider::start(data, &vouch_server::Blocks::Local, lie, ServeOptions::default(), CLIENTS).await
}

async fn serve_provider(honest: Provider) -> RunningServer<Provider> {
    provider::serve(provider::ANY_PORT, honest, ServeOptions::default(), CLIENTS).await
}

fn files_named(dir: &Path, part: &str, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_named(&path, part, out);
        } else if path.to_string_lossy().contains(part) {
            out.push(path);
        }
    }
}

#[tokio::test]
async fn blocks_written_through_the_server_read_back_audit_and_repair() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(data.path(), Misbehave::None).await;
    let mut client = Client::new(&server);
    let none: Result<PorStatus, _> = client.call(&PorStatusRequest::default()).await;
    assert_eq!(none.unwrap_err().code, ErrorCode::NotFound);
    let init = client.init_request();
    let _: PorStatus = client.call(&init).await.unwrap();
    let again: Result<PorStatus, _> = client.call(&init).await;
    assert_eq!(again.unwrap_err().code, ErrorCode::Conflict);

    // Blocks of several sizes in three batches: U grows from 4 slots past 16.
    let mut rng = StdRng::seed_from_u64(5);
    let mut stored = Vec::new();
    for sizes in [vec![100, SLOT_DATA_BYTES], vec![3 * SLOT_DATA_BYTES + 1, 0, 7000], vec![20_000, 1]] {
        let blocks: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&n| {
                let mut b = vec![0; n];
                rng.fill_bytes(&mut b);
                b
            })
            .collect();
        let firsts = client.put(&blocks).await;
        stored.extend(firsts.into_iter().zip(blocks));
    }
    assert!(client.state.schedule.log_capacity >= 4);

    // Labels are kept with their batch; an oversized one refuses the batch, which changes
    // nothing.
    let label = |key: &[u8], value: &[u8]| PorLabel { key: key.to_vec().into(), value: value.to_vec().into() };
    assert_eq!(client.label(b"file-1").await, None);
    client.labels = vec![label(b"file-1", b"where")];
    let firsts = client.put(&[vec![5; 10]]).await;
    stored.push((firsts[0], vec![5; 10]));
    assert_eq!(client.label(b"file-1").await, Some(b"where".to_vec()));
    let before: PorStatus = client.call(&PorStatusRequest::default()).await.unwrap();
    let planned = plan(&client.state, &[client.next], true).unwrap();
    let context = WriteContext::from_bytes(&client.context(&planned.to_bytes()).await).unwrap();
    let slots = split_block(client.next, b"x");
    let written = write(&client.state, &planned, &context, &[client.next], &slots, &client.seal, &client.sums).unwrap();
    let oversized = PorWriteRequest {
        plan: planned.to_bytes().into(),
        writes: vec![client.next],
        deleted: Vec::new(),
        slots: slots_to_bytes(&slots).into(),
        upload: written.upload_bytes().into(),
        staged: 0,
        labels: vec![label(&[7; 65], b"too long a key")],
        incarnation: 0,
    };
    let refused: Result<PorStatus, _> = client.call(&oversized).await;
    assert_eq!(refused.unwrap_err().code, ErrorCode::BadRequest);
    let after: PorStatus = client.call(&PorStatusRequest::default()).await.unwrap();
    assert_eq!(before, after, "a refused batch changes nothing");
    for (first, block) in &stored {
        assert_eq!(&client.get(*first, block.len() as u64).await.unwrap(), block);
    }
    assert!(client.audit(8).await.unwrap().iter().all(|&ok| ok));

    // Small batches until H holds a level beside C, one C (no window: every batch flushes its group).
    while client.state.schedule.filled_levels().next().is_none() || client.state.schedule.in_window() {
        let firsts = client.put(&[vec![9; 50]]).await;
        stored.push((firsts[0], vec![9; 50]));
    }

    // Damage C on the backend itself: a quarter of its slots overwritten with bytes that are
    // no field elements.
    let mut segments = Vec::new();
    files_named(data.path(), "coded-", &mut segments);
    segments.retain(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("slots-")));
    assert_eq!(segments.len(), 1, "{segments:?}");
    let mut bytes = std::fs::read(&segments[0]).unwrap();
    let slot_bytes = SLOT_WIDTH * 8;
    let slots = bytes.len() / slot_bytes;
    for i in (0..slots).step_by(4) {
        bytes[i * slot_bytes..(i + 1) * slot_bytes].fill(0xff);
    }
    std::fs::write(&segments[0], &bytes).unwrap();
    let all_slots = 2 * client.state.schedule.capacity() as u32;
    // Every slot picked: C's part fails (its bytes are lost), the levels' parts still prove.
    let verdicts = client.audit(all_slots).await.unwrap();
    let (coded_ok, levels_ok) = verdicts.split_last().unwrap();
    assert!(!coded_ok && !levels_ok.is_empty() && levels_ok.iter().all(|&ok| ok), "{verdicts:?}");

    // Repair: U from what is left of C and the levels, checked against U's root.
    let coded = client.region(0xFE).await;
    assert_eq!(coded.slots.iter().filter(|s| s.is_none()).count(), slots.div_ceil(4));
    let mut levels = Vec::new();
    for level in client.state.schedule.filled_levels() {
        levels.push(client.region(level as u8).await);
    }
    let raw = recover_raw(&client.state.schedule, &coded, &levels, &[], &client.seal, &client.sums).unwrap();
    let indices: Vec<u64> = (0..client.state.schedule.capacity()).collect();
    let answer: PorReadAnswer = client.call(&PorReadRequest { indices: indices.clone() }).await.unwrap();
    let read = RawRead { slots: raw, ..RawRead::from_bytes(&answer.read).unwrap() };
    verify_read(&client.state, &indices, &read, &client.seal, &client.sums).unwrap();
    for (first, block) in &stored {
        let at = *first as usize * SLOT_WIDTH;
        let len = slots_for(block.len() as u64) as usize * SLOT_WIDTH;
        assert_eq!(&join_block(*first, block.len() as u64, &read.slots[at..at + len]).unwrap(), block);
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn each_por_lie_is_caught() {
    for lie in [Misbehave::ForgePorAggregate, Misbehave::SwapPorSlots] {
        let data = tempfile::tempdir().unwrap();
        let server = serve(data.path(), lie).await;
        let mut client = Client::new(&server);
        let _: PorStatus = client.call(&client.init_request()).await.unwrap();
        let blocks = vec![vec![7u8; 2 * SLOT_DATA_BYTES], vec![9u8; 10]];
        let firsts = client.put(&blocks).await;
        let audit = client.audit(8).await.unwrap();
        let read = client.get(firsts[0], blocks[0].len() as u64).await;
        match lie {
            Misbehave::ForgePorAggregate => {
                assert!(audit.iter().all(|ok| !ok), "every forged part is caught: {audit:?}");
                assert_eq!(read.unwrap(), blocks[0]);
            }
            _ => {
                assert!(audit.iter().all(|&ok| ok));
                assert_eq!(read, Err(ReadError::RawRoot), "swapped slots are caught");
                assert_eq!(client.get(firsts[1], 10).await.unwrap(), blocks[1], "a one-slot read is honest");
            }
        }
        server.shutdown().await.unwrap();
    }
}

async fn free(client: &Client, most_slots: u64, most_runs: u32) -> Vec<(u64, u64)> {
    let answer: PorFreeAnswer = client.call(&PorFreeRequest { most_slots, most_runs }).await.unwrap();
    answer.runs
}

/// ⊥ writes travel as indices; the provider's free index follows U through writes, reopens
/// and growth, and names runs within the limits asked.
#[tokio::test]
async fn deleted_slots_are_named_free_until_data_takes_them() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(data.path(), Misbehave::None).await;
    let mut client = Client::new(&server);
    let _: PorStatus = client.call(&client.init_request()).await.unwrap();
    let blocks: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 100]).collect();
    let firsts = client.put(&blocks).await;
    assert_eq!(firsts, (0..10).collect::<Vec<u64>>());
    assert_eq!(free(&client, 100, 100).await, vec![]);

    client.delete(&[2, 3, 4, 7]).await;
    assert_eq!(free(&client, 100, 100).await, vec![(2, 3), (7, 1)]);
    assert_eq!(free(&client, 2, 100).await, vec![(2, 2)], "no more slots than asked");
    assert_eq!(free(&client, 100, 1).await, vec![(2, 3)], "no more runs than asked");
    // The ⊥ slots read back as ⊥, and the others as they were.
    let answer: PorReadAnswer = client.call(&PorReadRequest { indices: vec![3, 5] }).await.unwrap();
    let read = RawRead::from_bytes(&answer.read).unwrap();
    verify_read(&client.state, &[3, 5], &read, &client.seal, &client.sums).unwrap();
    assert_eq!(read.slots[..SLOT_WIDTH], encode_slot(3, None)[..]);
    assert_eq!(client.get(5, 100).await.unwrap(), blocks[5]);

    // Data written over a ⊥ slot takes it out of the index.
    client.next = 3;
    client.put(&[vec![42; 10]]).await;
    assert_eq!(free(&client, 100, 100).await, vec![(2, 1), (4, 1), (7, 1)]);
    server.shutdown().await.unwrap();
    let server = serve(data.path(), Misbehave::None).await;
    client.base = format!("http://{}", server.addr);
    assert_eq!(free(&client, 100, 100).await, vec![(2, 1), (4, 1), (7, 1)], "kept across a restart");

    // A ⊥ write must be one of the batch's writes, and the other slots must fit the rest.
    let planned = plan(&client.state, &[8], true).unwrap();
    for (writes, deleted, slots) in [
        (vec![8], vec![9], Vec::new()),
        (vec![8], vec![8], encode_slot(8, None)),
        (vec![8], vec![8, 8 + (1 << 56)], Vec::new()),
    ] {
        let request = PorWriteRequest {
            plan: planned.to_bytes().into(),
            writes,
            deleted,
            slots: slots_to_bytes(&slots).into(),
            upload: Vec::new().into(),
            staged: 0,
            labels: Vec::new(),
            incarnation: 0,
        };
        let refused: Result<PorStatus, _> = client.call(&request).await;
        assert_eq!(refused.unwrap_err().code, ErrorCode::BadRequest);
    }
    // Staged parts out of order, or a batch naming more than was staged, are refused.
    let stray = PorStageRequest { offset: 5, part: vec![1; 10].into() };
    assert_eq!(client.call(&stray).await.unwrap_err().code, ErrorCode::BadRequest);
    let request = PorWriteRequest {
        plan: planned.to_bytes().into(),
        writes: vec![8],
        deleted: vec![8],
        slots: ByteBuf::new(),
        upload: ByteBuf::new(),
        staged: 10,
        labels: Vec::new(),
        incarnation: 0,
    };
    let refused: Result<PorStatus, _> = client.call(&request).await;
    assert_eq!(refused.unwrap_err().code, ErrorCode::BadRequest);
    let past = PorMoreRequest { offset: 1 << 40 };
    assert_eq!(client.call(&past).await.unwrap_err().code, ErrorCode::BadRequest);
    assert_eq!(client.audit(8).await.unwrap(), vec![true; parts(&client.state.schedule).len()]);
}

/// Two clients' logs are written side by side (each behind its own lock), and each reads
/// back and audits its own blocks only.
#[tokio::test]
async fn two_clients_write_their_logs_side_by_side() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(data.path(), Misbehave::None).await;
    let (mut alice, mut bob) = (Client::new(&server), Client::with_token(&server, BOB));
    for client in [&alice, &bob] {
        let _: PorStatus = client.call(&client.init_request()).await.unwrap();
    }
    let blocks =
        |seed: u8| -> Vec<Vec<u8>> { (0..6).map(|i| vec![seed.wrapping_add(i); 5000 + 700 * i as usize]).collect() };
    let write_all = async |client: &mut Client, seed: u8| {
        let mut firsts = Vec::new();
        for block in blocks(seed) {
            firsts.extend(client.put(&[block]).await);
        }
        firsts
    };
    let (at_alice, at_bob) = tokio::join!(write_all(&mut alice, 1), write_all(&mut bob, 101));
    for (client, firsts, seed) in [(&alice, at_alice, 1), (&bob, at_bob, 101)] {
        for (first, block) in firsts.into_iter().zip(blocks(seed)) {
            assert_eq!(client.get(first, block.len() as u64).await.unwrap(), block);
        }
        assert!(client.audit(16).await.unwrap().into_iter().all(|ok| ok));
    }
    assert_ne!(alice.state.raw_root, bob.state.raw_root, "two logs");
}

/// Slots of two elements (the header U's slots start with, `index + 1`, and one more): 2^21
/// slots of U are 32 MB, and C 64 MB (of the heap's slots, 10 GB and 20 GB).
const NARROW: usize = 2;
/// Segments of C of 2^16 such slots: C of 2^21 is encoded by 32 leaves and 5 merges.
const NARROW_SEGMENT: usize = 1 << 20;

/// How many messages each part of a batch took, in [`Client::send_in_parts`].
#[derive(Debug, Default)]
struct Parts {
    /// The plan's answer: its first part, then `por-more`s.
    answer: usize,
    answer_bytes: u64,
    /// The upload: `por-stage`s, then the batch itself.
    upload: usize,
    upload_bytes: u64,
}

impl Client {
    /// A client of a provider whose logs have slots of `width` elements.
    fn narrow<S: Service>(server: &RunningServer<S>, width: usize) -> Client {
        Client { sums: ChecksumKey::grouped(&[2; 32], width, GROUP_LOG), ..Client::new(server) }
    }

    /// Writes `slots` (flat, of the log's width) at U indices `writes`, one batch, the plan's
    /// answer read in parts of `part` bytes and the upload sent in parts of at most
    /// [`POR_PART_BYTES`], as a client does past one message; says how many parts each took.
    async fn send_in_parts(&mut self, writes: &[u64], slots: &[u64], part: usize) -> Parts {
        let mut parts = Parts::default();
        let planned = plan(&self.state, writes, true).unwrap();
        let request = PorPlanRequest { plan: planned.to_bytes().into(), part: part as u32 };
        let answer: PorContext = self.call(&request).await.unwrap();
        // As the client does: the answer taken a part at a time, U's checksums checked as they
        // come, C sealed as its upload goes.
        let mut reader = ContextReader::new(&self.state, &planned, answer.total, &self.seal, &self.sums).unwrap();
        reader.feed(&answer.context).unwrap();
        parts.answer = 1;
        while reader.wants_more() {
            let more: PorMoreAnswer = self.call(&PorMoreRequest { offset: reader.received() }).await.unwrap();
            assert!(!more.part.is_empty() && more.part.len() <= part);
            reader.feed(&more.part).unwrap();
            parts.answer += 1;
        }
        parts.answer_bytes = answer.total;
        let (context, raw) = reader.finish().unwrap();
        let written =
            write_opened(&self.state, &planned, &context, raw, writes, slots, &self.seal, &self.sums).unwrap();
        let state = written.state;
        let mut upload = written.upload(&self.seal, POR_PART_BYTES).peekable();
        let mut staged = 0;
        let last = loop {
            let chunk = upload.next().unwrap();
            parts.upload_bytes += chunk.len() as u64;
            if upload.peek().is_none() {
                break chunk;
            }
            let stage = PorStageRequest { offset: staged, part: chunk.to_vec().into() };
            let answer: PorStaged = self.call(&stage).await.unwrap();
            staged += chunk.len() as u64;
            assert_eq!(answer.staged, staged);
            parts.upload += 1;
        };
        let request = PorWriteRequest {
            plan: planned.to_bytes().into(),
            writes: writes.to_vec(),
            deleted: Vec::new(),
            slots: slots_to_bytes(slots).into(),
            upload: last.into(),
            staged,
            labels: Vec::new(),
            incarnation: 0,
        };
        let status: PorStatus = self.call(&request).await.unwrap();
        parts.upload += 1;
        let after = state.schedule;
        assert_eq!((u32::from(status.log_capacity), status.time), (after.log_capacity, after.time));
        self.state = state;
        parts
    }
}

/// Issue #43 item 6: a log of 2^21 slots (of two elements each, so that it takes tens of MB).
/// Growth to 2^21 re-encodes C over all of U at once (32 leaves and 5 merges of segments),
/// and its batch travels in parts: the plan's answer (all of U's sealed checksums) and the
/// upload (all of C's, 2^22 of them: 235 MB, more than one message can hold) each in more
/// than one. The grown log reads back under U's root, takes more batches, and every part
/// audits; the encode leaves none of its merge stages on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_grown_to_2_21_slots_travels_in_parts_and_verifies() {
    let data = tempfile::tempdir().unwrap();
    let provider = Provider::open_dir(data.path(), &vouch_server::Blocks::Local).unwrap();
    let server = serve_provider(provider.with_por_shape(NARROW, NARROW_SEGMENT)).await;
    let mut client = Client::narrow(&server, NARROW);
    let _: PorStatus = client.call(&client.init_request()).await.unwrap();
    let value = |index: u64| index.wrapping_mul(0x9E37_79B9).wrapping_add(7) % (1 << 56);
    let slots = |indices: &[u64]| -> Vec<u64> { indices.iter().flat_map(|&i| [i + 1, value(i)]).collect() };

    let first: Vec<u64> = (0..5).collect();
    client.send_in_parts(&first, &slots(&first), 64 << 10).await;
    // The highest slot of a log of 2^21: U grows to it in one batch.
    let far = (1u64 << 21) - 1;
    let parts = client.send_in_parts(&[far], &slots(&[far]), 64 << 10).await;
    assert_eq!(client.state.schedule.log_capacity, 21);
    assert!(parts.answer_bytes > (1 << 21) / 8, "the answer names each slot of U: {parts:?}");
    assert!(parts.answer > 1, "the plan's answer came in one part: {parts:?}");
    assert!(parts.upload_bytes > (2 << 21) * 56, "the upload holds C's sealed checksums: {parts:?}");
    assert!(parts.upload_bytes as usize > vouch_proto::MAX_MESSAGE && parts.upload > 1, "{parts:?}");

    let mut stages = Vec::new();
    files_named(data.path(), "cstage-", &mut stages);
    assert_eq!(stages, Vec::<std::path::PathBuf>::new(), "the encode's merge stages are deleted");
    let mut coded = Vec::new();
    files_named(data.path(), "coded-", &mut coded);
    coded.retain(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("slots-")));
    let bytes: u64 = coded.iter().map(|p| std::fs::metadata(p).unwrap().len()).sum();
    assert_eq!(bytes, (2 << 21) * 8 * NARROW as u64, "C of 2^22 slots, in {} segments", coded.len());

    // More batches on the grown log, in one part each now (no C is rebuilt).
    let more: Vec<u64> = (5..40).collect();
    let parts = client.send_in_parts(&more, &slots(&more), 64 << 10).await;
    assert_eq!((parts.answer, parts.upload), (1, 1), "{parts:?}");
    let indices: Vec<u64> = (0..40).chain([far]).collect();
    let answer: PorReadAnswer = client.call(&PorReadRequest { indices: indices.clone() }).await.unwrap();
    let read = RawRead::from_bytes(&answer.read).unwrap();
    verify_read(&client.state, &indices, &read, &client.seal, &client.sums).unwrap();
    assert_eq!(read.slots, slots(&indices));
    let verdicts = client.audit(64).await.unwrap();
    assert!(verdicts.len() >= 2 && verdicts.iter().all(|&ok| ok), "{verdicts:?}");
    server.shutdown().await.unwrap();
}

/// A batch's apply is no longer than its request can wait: a provider slower than its client
/// (`Misbehave::SlowPorWrite`, honest) still applies the batch after the client stopped
/// waiting, a second batch meanwhile is refused as "unavailable" (one apply at a time per
/// client), and the log's status waits for the apply and answers for the log after it.
#[tokio::test]
async fn a_batch_is_applied_after_its_client_stopped_waiting() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(data.path(), Misbehave::SlowPorWrite).await;
    let mut client = Client::new(&server);
    let _: PorStatus = client.call(&client.init_request()).await.unwrap();
    let block = vec![3u8; 2 * SLOT_DATA_BYTES];
    let writes: Vec<u64> = (0..slots_for(block.len() as u64)).collect();
    let slots = split_block(0, &block);
    let planned = plan(&client.state, &writes, true).unwrap();
    let context = WriteContext::from_bytes(&client.context(&planned.to_bytes()).await).unwrap();
    let written = write(&client.state, &planned, &context, &writes, &slots, &client.seal, &client.sums).unwrap();
    let request = PorWriteRequest {
        plan: planned.to_bytes().into(),
        writes: writes.clone(),
        deleted: Vec::new(),
        slots: slots_to_bytes(&slots).into(),
        upload: written.upload_bytes().into(),
        staged: 0,
        labels: Vec::new(),
        incarnation: 0,
    };
    let impatient = client
        .http
        .post(format!("{}{}", client.base, Op::PorWrite.path()))
        .bearer_auth(client.token)
        .header(VERSION_HEADER, PROTOCOL_VERSION.to_string())
        .timeout(std::time::Duration::from_millis(300))
        .body(encode(&request))
        .send()
        .await;
    assert!(impatient.is_err_and(|e| e.is_timeout()), "the client stopped waiting");
    let again: Result<PorStatus, _> = client.call(&request).await;
    assert_eq!(again.unwrap_err().code, ErrorCode::Storage, "one apply at a time");
    let status: PorStatus = client.call(&PorStatusRequest::default()).await.unwrap();
    let after = written.state.schedule;
    assert_eq!((u32::from(status.log_capacity), status.time), (after.log_capacity, after.time), "applied");
    client.state = written.state;
    client.next = writes.len() as u64;
    assert_eq!(client.get(0, block.len() as u64).await.unwrap(), block);
    let firsts = client.put(&[vec![4u8; 100]]).await;
    assert_eq!(client.get(firsts[0], 100).await.unwrap(), vec![4u8; 100]);
    assert!(client.audit(8).await.unwrap().into_iter().all(|ok| ok));
}

//! What one authenticated client can make the provider hold or wait for, each bound enforced
//! over the real HTTP protocol. The client here is raw (hand-written HTTP/1.1 over a socket),
//! so a test controls every byte: it can stop midway, drop the connection, or never read.

use serde_bytes::ByteBuf;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use vouch_core::namespace::VersionRecord;
use vouch_core::pdp::{FileId, SchemeId};
use vouch_core::{hash, Block, FlexList};
use vouch_proto::{
    decode, encode, encode_frame, Attempt, BlockBatch, CommitStagedRequest, ErrorBody, ErrorCode, PutFrame, PutHead,
    PutTail, ReadRequest, StagedPut, WireBlock, PROTOCOL_VERSION, VERSION_HEADER,
};
use vouch_server::{Limits, Provider, RunningServer, ServeOptions};
use vouch_store::{BlobStore, MetaDb, ObjectBlobs, Repository};
use vouch_testkit::provider;

const TOKEN: &str = "limits-token";
const MIB: usize = 1 << 20;
/// Generous bound for anything that should take a second or two.
const PATIENCE: Duration = Duration::from_secs(60);

async fn serve(data: &Path, limits: Limits) -> RunningServer {
    let options = ServeOptions { limits, ..ServeOptions::default() };
    let honest = Provider::open_dir(data, &vouch_server::Blocks::Local).unwrap();
    provider::serve(provider::ANY_PORT, honest, options, &[(TOKEN, "alice")]).await
}

// ---- a raw HTTP/1.1 client ----

async fn request_head(tcp: &mut TcpStream, op: &str, length: Option<usize>) {
    let framing = match length {
        Some(n) => format!("Content-Length: {n}"),
        None => "Transfer-Encoding: chunked".to_string(),
    };
    let head = format!(
        "POST /v1/{op} HTTP/1.1\r\nHost: vouch\r\n{VERSION_HEADER}: {PROTOCOL_VERSION}\r\n\
         Authorization: Bearer {TOKEN}\r\nConnection: close\r\n{framing}\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
}

/// Opens a put's upload (`stage`): the request head, then the body in HTTP chunks ([`chunk`]).
async fn open_put(addr: std::net::SocketAddr) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    request_head(&mut tcp, "stage", None).await;
    tcp
}

async fn chunk(tcp: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    tcp.write_all(format!("{:x}\r\n", bytes.len()).as_bytes()).await?;
    tcp.write_all(bytes).await?;
    tcp.write_all(b"\r\n").await
}

/// The status and body of the answer (the request said `Connection: close`).
async fn answer(tcp: &mut TcpStream) -> (u16, Vec<u8>) {
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, tcp.read_to_end(&mut raw)).await.expect("an answer").unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status");
    (status, raw[split + 4..].to_vec())
}

fn refusal(status: u16, body: &[u8]) -> ErrorBody {
    assert_ne!(status, 200, "expected a refusal");
    decode(body).expect("an error body")
}

// ---- puts ----

fn head_frame(name: &str) -> Vec<u8> {
    encode_frame(&PutFrame::Head(PutHead {
        name: name.into(),
        file: [7; 16],
        scheme: SchemeId::Linear as u8,
        attempt: Attempt([1; 16]),
    }))
}

/// `count` blocks of `len` bytes from nonce `first` on (the provider checks tags only through
/// the client's audits, so any bytes of the right length do).
fn blocks(first: u64, count: u64, len: usize) -> Vec<WireBlock> {
    (first..first + count)
        .map(|nonce| WireBlock {
            nonce,
            tag: ByteBuf::from(vec![1; SchemeId::Linear.tag_len()]),
            data: bytes::Bytes::from(vec![nonce as u8; len]),
        })
        .collect()
}

fn blocks_frame(blocks: Vec<WireBlock>) -> Vec<u8> {
    encode_frame(&PutFrame::Blocks(BlockBatch { blocks }))
}

/// The last frame of a put of `all`: the record of the list those blocks build.
/// The version record of `all` as a client computes it.
fn record_of(all: &[WireBlock]) -> VersionRecord {
    let leaves: Vec<Block> = all
        .iter()
        .map(|b| Block::new(hash::pdp_leaf(SchemeId::Linear as u8, b.nonce, &b.tag), b.data.len() as u32, b.nonce))
        .collect();
    let list = FlexList::build(&leaves).unwrap();
    VersionRecord {
        number: 1,
        scheme: SchemeId::Linear,
        file: FileId([7; 16]),
        root: list.root(),
        len: list.total_len(),
        next_nonce: all.len() as u64,
        time: 0,
    }
}

fn tail_frame(all: &[WireBlock]) -> Vec<u8> {
    encode_frame(&PutFrame::Tail(PutTail { record: ByteBuf::from(record_of(all).to_bytes().to_vec()) }))
}

/// A whole put of `count` blocks of `len` bytes: staged, 4 blocks to a frame, then
/// committed. The answer of the stage when it is refused, else of the commit.
async fn put(addr: std::net::SocketAddr, name: &str, count: u64, len: usize) -> (u16, Vec<u8>) {
    let mut tcp = open_put(addr).await;
    chunk(&mut tcp, &head_frame(name)).await.unwrap();
    let all = blocks(0, count, len);
    for batch in all.chunks(4) {
        if chunk(&mut tcp, &blocks_frame(batch.to_vec())).await.is_err() {
            break; // refused midway: the answer says why
        }
    }
    let _ = chunk(&mut tcp, &tail_frame(&all)).await;
    let _ = tcp.write_all(b"0\r\n\r\n").await;
    let (status, body) = answer(&mut tcp).await;
    if status != 200 {
        return (status, body);
    }
    let record = ByteBuf::from(record_of(&all).to_bytes().to_vec());
    let commit =
        encode(&CommitStagedRequest { puts: vec![StagedPut { name: name.into(), attempt: Attempt([1; 16]), record }] });
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    request_head(&mut tcp, "commit-staged", Some(commit.len())).await;
    tcp.write_all(&commit).await.unwrap();
    answer(&mut tcp).await
}

/// The segment objects in the local blob directory (not the store's temporary files).
fn segment_files(data: &Path) -> HashSet<String> {
    let dir = data.join("blobs").join("segments");
    let Ok(entries) = std::fs::read_dir(&dir) else { return HashSet::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.len() == 16 && n.chars().all(|c| c.is_ascii_hexdigit()))
        .map(|n| format!("segments/{n}"))
        .collect()
}

/// The segments the metadata names (the server must be stopped): checked against the index,
/// and every segment file, for there must be no orphan among them.
async fn named_segments(data: &Path) -> HashSet<String> {
    let meta = MetaDb::open(&data.join("meta.redb")).unwrap();
    let repo = Repository::open(ObjectBlobs::local(&data.join("blobs")).unwrap(), meta).unwrap();
    let report = repo.check().await.unwrap();
    assert!(report.is_ok() && report.orphan_segments == 0, "{report:?}");
    let files = segment_files(data);
    assert_eq!(files.len() as u64, report.segments, "{report:?}");
    files
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < PATIENCE, "waited {PATIENCE:?} for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn data_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("provider");
    (dir, data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_past_its_block_or_byte_limit_is_refused_as_too_large() {
    let (_dir, data) = data_dir();
    let limits = Limits { max_put_blocks: 4, max_put_bytes: 10_000, ..Limits::default() };
    let server = serve(&data, limits).await;

    let (status, body) = put(server.addr, "many.bin", 5, 100).await;
    let error = refusal(status, &body);
    assert_eq!((status, error.code), (413, ErrorCode::TooLarge), "{error:?}");
    assert!(error.message.contains("4 blocks"), "{error:?}");

    let (status, body) = put(server.addr, "big.bin", 3, 4000).await;
    let error = refusal(status, &body);
    assert_eq!((status, error.code), (413, ErrorCode::TooLarge), "{error:?}");
    assert!(error.message.contains("10000 bytes"), "{error:?}");

    // At the limits exactly, a put is stored.
    let (status, body) = put(server.addr, "fits.bin", 4, 2500).await;
    assert_eq!(status, 200, "{:?}", decode::<ErrorBody>(&body));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_that_stalls_is_ended() {
    let (_dir, data) = data_dir();
    let server = serve(&data, Limits { stream_idle: Duration::from_secs(1), ..Limits::default() }).await;
    let mut tcp = open_put(server.addr).await;
    chunk(&mut tcp, &head_frame("slow.bin")).await.unwrap();
    // Then nothing: the provider gives up after the idle time.
    let (status, body) = answer(&mut tcp).await;
    let error = refusal(status, &body);
    assert!(error.message.contains("stalled"), "{error:?}");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_put_leaves_no_segment_behind() {
    let (_dir, data) = data_dir();
    let server = serve(&data, Limits::default()).await;
    let mut tcp = open_put(server.addr).await;
    chunk(&mut tcp, &head_frame("dropped.bin")).await.unwrap();
    // 40 MiB: the first 32 MiB segment is written to the blob store while the put goes on.
    for batch in 0..10 {
        chunk(&mut tcp, &blocks_frame(blocks(batch * 4, 4, MIB))).await.unwrap();
    }
    wait_until("the first segment to be written", || !segment_files(&data).is_empty()).await;
    drop(tcp);
    wait_until("the abandoned put's segments to be deleted", || segment_files(&data).is_empty()).await;
    server.shutdown().await.unwrap();
    assert!(named_segments(&data).await.is_empty(), "nothing was committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_sweeps_orphan_segments_and_keeps_the_named_ones() {
    let (_dir, data) = data_dir();
    let server = serve(&data, Limits::default()).await;
    let (status, _) = put(server.addr, "kept.bin", 34, MIB).await;
    assert_eq!(status, 200);
    server.shutdown().await.unwrap();
    let named = named_segments(&data).await;
    assert_eq!(named.len(), 2, "34 MiB make two segments");
    assert_eq!(segment_files(&data), named);

    // What a crash between a segment's write and its commit leaves.
    let orphan = "segments/0000010000000000".to_string();
    ObjectBlobs::local(&data.join("blobs")).unwrap().put(&orphan, vec![0u8; 1000].into()).await.unwrap();
    assert!(segment_files(&data).contains(&orphan));
    let server = serve(&data, Limits::default()).await;
    server.shutdown().await.unwrap();
    assert_eq!(segment_files(&data), named, "the orphan is gone, the named segments are kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_never_consumes_does_not_pin_the_provider() {
    let (_dir, data) = data_dir();
    let server = serve(&data, Limits { stream_idle: Duration::from_secs(1), ..Limits::default() }).await;
    // 48 MiB: more than the socket buffers of both ends hold.
    let (status, _) = put(server.addr, "big.bin", 48, MIB).await;
    assert_eq!(status, 200);

    let request = encode(&ReadRequest { name: "big.bin".into(), version: None, start: 0, end: u64::MAX });
    let mut reader = TcpStream::connect(server.addr).await.unwrap();
    request_head(&mut reader, "read", Some(request.len())).await;
    reader.write_all(&request).await.unwrap();
    // The reader keeps its connection open and reads nothing. A graceful shutdown waits for
    // the answers in flight: it ends only because the stalled answer is ended.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stopped = tokio::time::timeout(PATIENCE, server.shutdown()).await;
    assert!(matches!(stopped, Ok(Ok(()))), "the provider was pinned by a reader: {stopped:?}");
    // What the reader got is cut short (the provider gave up on it).
    let mut got = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, reader.read_to_end(&mut got)).await.expect("the connection ended");
    assert!(got.len() < 48 * MIB, "the whole file was delivered: the read was never stalled");
}

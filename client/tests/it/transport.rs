//! The client against a provider that tries to hold it: an endless error body, an answer
//! trickled a byte at a time, an upload it stops taking. Each ends with a typed error within
//! the client's deadlines (never "misbehaved"). And TLS: a client pinning the provider's
//! certificate reads verified over https://; one pinning another certificate cannot connect.
//!
//! The hostile servers are a few lines over a loopback socket; every loop they run is bounded
//! and ends when the client goes away.

use crate::common;

use bytes::Bytes;
use common::{sample, TOKEN};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use vouch_client::{Client, ClientError, KeyChoice, Remote, Transport, MAX_ERROR_BODY};
use vouch_proto::{ListRequest, Listing, Op};
use vouch_server::{Blocks, Provider, ServeOptions};
use vouch_testkit::provider;

const MIB: usize = 1 << 20;
/// Generous bound for what should take a second or two.
const PATIENCE: Duration = Duration::from_secs(30);

/// How a hostile provider treats every connection.
#[derive(Clone, Copy)]
enum Hostile {
    /// An error status, then an endless body (1 GiB at most).
    EndlessError,
    /// A success status, then one byte every 100 ms (a minute at most): the start of a frame
    /// that never ends.
    Trickle,
    /// Reads nothing and answers nothing (for a minute at most).
    Silent,
}

/// What a hostile server did.
#[derive(Default)]
struct Seen {
    /// Body bytes it wrote before the client went away.
    written: AtomicU64,
    /// Its connection task has ended.
    ended: AtomicBool,
}

async fn hostile(how: Hostile) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let shared = seen.clone();
    tokio::spawn(async move {
        // One connection per test is all a call makes.
        let Ok((mut tcp, _)) = listener.accept().await else { return };
        serve_hostile(&mut tcp, how, &shared).await;
        shared.ended.store(true, Ordering::SeqCst);
    });
    (url, seen)
}

async fn serve_hostile(tcp: &mut TcpStream, how: Hostile, seen: &Seen) {
    if let Hostile::Silent = how {
        tokio::time::sleep(Duration::from_secs(60)).await;
        return;
    }
    // The request head (the body, if any, is left unread).
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 << 10 {
        if tcp.read_exact(&mut byte).await.is_err() {
            return;
        }
        head.push(byte[0]);
    }
    let (status, pieces, piece, pause) = match how {
        Hostile::EndlessError => ("500 Internal Server Error", 16 << 10, 64 << 10, Duration::ZERO),
        Hostile::Trickle => ("200 OK", 600, 1, Duration::from_millis(100)),
        Hostile::Silent => unreachable!(),
    };
    let head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n", pieces * piece);
    if tcp.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    // A frame's length (1000 bytes: it never completes), then filler.
    let body = [0xe8, 0x03, 0, 0].into_iter().chain(std::iter::repeat(b'x'));
    let mut body = body.take(pieces * piece);
    for _ in 0..pieces {
        let filler: Vec<u8> = body.by_ref().take(piece).collect();
        if tcp.write_all(&filler).await.is_err() {
            return;
        }
        seen.written.fetch_add(piece as u64, Ordering::SeqCst);
        tokio::time::sleep(pause).await;
    }
}

fn with_timeout(secs: u64) -> Transport {
    Transport { timeout: Duration::from_secs(secs), ..Transport::default() }
}

async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < PATIENCE, "waited {PATIENCE:?} for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_error_body_is_read_no_further_than_its_bound() {
    let (url, seen) = hostile(Hostile::EndlessError).await;
    let remote = Remote::with(&url, TOKEN, &with_timeout(20)).unwrap();
    let started = Instant::now();
    let r = remote.call(&ListRequest {}).await;
    match &r {
        Err(ClientError::Refused { message, .. }) => assert!(message.contains("HTTP 500"), "{message}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    // The client hung up after its bound: the server's writes failed long before its 1 GiB.
    wait_until("the hostile server to notice", || seen.ended.load(Ordering::SeqCst)).await;
    let written = seen.written.load(Ordering::SeqCst);
    assert!(written < 256 * MIB as u64, "the client took {written} bytes of an error body");
    assert!(written as usize >= MAX_ERROR_BODY, "the server did send a large body ({written} bytes)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_answer_ends_at_the_call_deadline() {
    let (url, _) = hostile(Hostile::Trickle).await;
    let remote = Remote::with(&url, TOKEN, &with_timeout(1)).unwrap();
    let started = Instant::now();
    let r = remote.call(&ListRequest {}).await;
    assert!(matches!(r, Err(ClientError::TimedOut { .. })), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_read_ends_at_the_frame_deadline_of_the_clients_config() {
    let (url, _) = hostile(Hostile::Trickle).await;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("client");
    drop(Client::init(&state, &url, TOKEN).unwrap());
    std::fs::write(state.join("config.toml"), format!("server = \"{url}\"\ntimeout_secs = 1\n")).unwrap();
    let client = Client::open(&state).unwrap();
    let started = Instant::now();
    let mut out = Vec::new();
    let r = client.get("f.bin", None, None, &mut out).await;
    assert!(matches!(r, Err(ClientError::TimedOut { .. })), "{r:?}");
    assert!(out.is_empty());
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_the_provider_stops_taking_ends_at_the_deadline() {
    let (url, _) = hostile(Hostile::Silent).await;
    let remote = Remote::with(&url, TOKEN, &with_timeout(1)).unwrap();
    // 256 MiB offered, produced on demand: far more than the socket buffers take.
    let frames = futures::stream::iter((0..256).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![0u8; MIB]))));
    let started = Instant::now();
    let r = remote.call_streaming::<Listing>(Op::Stage, frames).await;
    assert!(matches!(&r, Err(ClientError::TimedOut { detail, .. }) if detail.contains("upload")), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}

// ---- TLS ----

async fn start_tls(data: &Path, cert: &str, key: &str) -> vouch_server::RunningServer {
    let tls = vouch_server::tls::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
    let options = ServeOptions { tls: Some(tls), ..ServeOptions::default() };
    let honest = Provider::open_dir(data, &Blocks::Local).unwrap();
    provider::serve(provider::ANY_PORT, honest, options, provider::ALICE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_a_pinned_client_reads_verified_and_another_certificate_cannot_connect() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = ["localhost".to_string(), "127.0.0.1".to_string()];
    let (cert, key) = vouch_server::tls::self_signed(&hosts).unwrap();
    let server = start_tls(&dir.path().join("provider"), &cert, &key).await;
    let url = format!("https://{}", server.addr);
    let pinned = dir.path().join("cert.pem");
    std::fs::write(&pinned, &cert).unwrap();

    let client = Client::create(&dir.path().join("client"), &url, TOKEN, Some(&pinned), KeyChoice::Linear).unwrap();
    let data = sample(300_000, 3);
    client.put("f.bin", std::io::Cursor::new(data.clone()), Some(4096), |_| {}).await.unwrap();
    let mut back = Vec::new();
    client.get("f.bin", None, None, &mut back).await.unwrap();
    assert_eq!(back, data);
    assert!(client.audit("f.bin", None, 50).await.unwrap().verified);

    // A client that pins another certificate trusts nothing this provider shows.
    let (other, _) = vouch_server::tls::self_signed(&hosts).unwrap();
    let other_pem = dir.path().join("other.pem");
    std::fs::write(&other_pem, &other).unwrap();
    let stranger =
        Client::create(&dir.path().join("stranger"), &url, TOKEN, Some(&other_pem), KeyChoice::Linear).unwrap();
    let r = stranger.list().await;
    match &r {
        Err(ClientError::Unreachable { detail, .. }) => {
            assert!(detail.to_lowercase().contains("certificate"), "{detail}")
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    // Plain http:// to a TLS port is no answer either (and no lie).
    let plain = Client::init(&dir.path().join("plain"), &format!("http://{}", server.addr), TOKEN).unwrap();
    let r = plain.list().await;
    assert!(!matches!(r, Ok(_) | Err(ClientError::Misbehaved(_))), "{r:?}");
    server.shutdown().await.unwrap();
}

#[test]
fn a_pinned_certificate_needs_https_and_a_pem_file() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, _) = vouch_server::tls::self_signed(&["localhost".to_string()]).unwrap();
    let pem = dir.path().join("cert.pem");
    std::fs::write(&pem, &cert).unwrap();
    let r = Client::create(&dir.path().join("a"), "http://127.0.0.1:1", TOKEN, Some(&pem), KeyChoice::Linear);
    assert!(matches!(r, Err(ClientError::BadInput(_))), "{r:?}");
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate").unwrap();
    let r = Client::create(&dir.path().join("b"), "https://127.0.0.1:1", TOKEN, Some(&junk), KeyChoice::Linear);
    assert!(matches!(r, Err(ClientError::BadInput(_))), "{r:?}");
    assert!(!dir.path().join("a").join("state").exists() && !dir.path().join("b").join("state").exists());
    // A pinned state that lost its certificate refuses to run rather than trust anything else.
    let c = Client::create(&dir.path().join("c"), "https://127.0.0.1:1", TOKEN, Some(&pem), KeyChoice::Linear).unwrap();
    drop(c);
    std::fs::remove_file(dir.path().join("c").join("ca.pem")).unwrap();
    let r = Client::open(&dir.path().join("c"));
    assert!(matches!(r, Err(ClientError::State(_))), "{r:?}");
}

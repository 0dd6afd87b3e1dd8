//! Connections that hold the gateway without asking anything: a client that sends its request
//! head a byte at a time (slowloris), one that never finishes its TLS handshake, and thousands
//! of idle sockets. Each is closed after `header_read_timeout_secs`, at most `max_connections`
//! are served at once, and a real application is still served.

use crate::common;

use common::{config, Harness};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use vouch_gateway::GatewayConfig;
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;

/// Waits until the gateway closes `stream` (a read ends or fails), at most `limit`; how long
/// it took, or `None` when it stayed open.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    let closed = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => continue,
            }
        }
    };
    tokio::time::timeout(limit, closed).await.ok().map(|()| started.elapsed())
}

/// The value of the gauge `name` in `text` (Prometheus text).
fn gauge(text: &str, name: &str) -> i64 {
    text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).unwrap_or_else(|| panic!("{name}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_sending_its_head_a_byte_at_a_time_is_cut_off() {
    let quick = GatewayConfig { header_read_timeout_secs: 1, ..config() };
    let h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], quick).await;
    let addr = h.gateway.as_ref().unwrap().addr;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let started = Instant::now();
    writer.write_all(b"GET /box/k HTTP/1.1\r\nHost: x\r\nX-Slow: ").await.unwrap();
    // A byte every 100 ms for up to 10 s: each keeps an idle-read timeout from firing, and
    // the head never ends.
    let trickle = tokio::spawn(async move {
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if writer.write_all(b"a").await.is_err() {
                return;
            }
        }
    });
    let mut buf = [0u8; 1024];
    let closed = async {
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => continue,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), closed).await.expect("the gateway closes a head that never ends");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "closed after {took:?}");
    trickle.abort();
    h.store("box").put(&Path::from("k"), PutPayload::from(vec![1])).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_client_that_never_finishes_its_handshake_is_cut_off() {
    let pem = tempfile::tempdir().unwrap();
    let (cert, key) = vouch_proto::tls::self_signed(&["127.0.0.1".into()]).unwrap();
    let (cert_path, key_path) = (pem.path().join("cert.pem"), pem.path().join("key.pem"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let config =
        GatewayConfig { tls_cert: Some(cert_path), tls_key: Some(key_path), header_read_timeout_secs: 1, ..config() };
    let h = Harness::configured(Blocks::Local, Misbehave::None, &[], config).await;
    let addr = h.gateway.as_ref().unwrap().addr;
    // One sends nothing; one the first bytes of a ClientHello (a handshake record's header).
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut partial = TcpStream::connect(addr).await.unwrap();
    partial.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).await.unwrap();
    for (what, stream) in [("silent", &mut silent), ("partial", &mut partial)] {
        let took = closed_within(stream, Duration::from_secs(10)).await;
        assert!(took.is_some_and(|t| t < Duration::from_secs(5)), "{what}: closed after {took:?}");
    }
}

/// 5,000 sockets that connect and send nothing, against a gateway serving at most 500
/// connections at once, each closed after a second: the gateway never holds more than 500,
/// serves a real application meanwhile (after the sockets ahead of it in the listen
/// backlog), and closes each one it took. (A socket the kernel completed but the gateway never
/// accepted, its backlog full, is not the gateway's to close: the count of connections it
/// holds going back to none is what says it let go of everything.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_idle_sockets_are_capped_and_closed_and_a_real_client_is_served() {
    const IDLE: usize = 5000;
    const CAP: usize = 500;
    let config = GatewayConfig { header_read_timeout_secs: 1, max_connections: CAP, ..config() };
    let h = Harness::configured(Blocks::Local, Misbehave::None, &["box"], config).await;
    let gateway = h.gateway.as_ref().unwrap();
    let addr = gateway.addr;
    let started = Instant::now();
    let idle: Vec<_> = (0..IDLE)
        .map(|_| {
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.unwrap();
                closed_within(&mut stream, Duration::from_secs(60)).await;
            })
        })
        .collect();
    // The gauge, sampled while the idle sockets come and go, until it is back to none.
    let metrics = gateway.metrics.clone();
    let sampling = tokio::spawn(async move {
        let mut most = 0;
        for _ in 0..1200 {
            let open = gauge(&metrics.render(), "vouch_gateway_connections");
            most = most.max(open);
            if open == 0 && most > 0 {
                return (most, true);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (most, false)
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let store = h.store("box");
    store.put(&Path::from("real"), PutPayload::from(b"served".to_vec())).await.unwrap();
    let got = store.get(&Path::from("real")).await.unwrap().bytes().await.unwrap();
    assert_eq!(&got[..], b"served");
    let served_after = started.elapsed();
    let (most, released) = sampling.await.unwrap();
    assert!(most > 0 && most <= CAP as i64, "connections open at once: {most}");
    assert!(released, "the gateway still holds idle connections after {:?}", started.elapsed());
    eprintln!(
        "{IDLE} idle sockets: the real client was served after {served_after:?}, every connection closed after {:?}",
        started.elapsed()
    );
    for socket in idle {
        socket.abort();
    }
}

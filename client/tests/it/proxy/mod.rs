//! A lying proxy for tests: HTTP/1.1 in front of an honest provider, forwarding each request
//! unless told to lie about its operation (a bare error instead of the answer, or a read cut
//! after its verified header). One request per connection; bodies with a length (not `put`).
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use vouch_proto::{ErrorBody, ErrorCode, ReadFrame};

/// What the proxy does with a request of one operation.
#[derive(Clone, Copy, Debug)]
pub enum Lie {
    /// Answers this error itself, without asking the provider.
    Bare(ErrorCode),
    /// A read: forwards it, keeps the first frame (the verified header), then this error.
    CutRead(ErrorCode),
}

pub type Rules = Arc<Mutex<HashMap<&'static str, Lie>>>;

fn status(code: ErrorCode) -> u16 {
    match code {
        ErrorCode::NotFound => 404,
        ErrorCode::Storage => 503,
        _ => 500,
    }
}

/// A read answer cut after its first frame, then an error frame.
fn cut_read(body: &[u8], code: ErrorCode) -> Vec<u8> {
    let first = 4 + u32::from_le_bytes(body[..4].try_into().unwrap()) as usize;
    let mut out = body[..first].to_vec();
    let error = ReadFrame::Error(ErrorBody { code, message: "lost in the middle".into() });
    out.extend_from_slice(&vouch_proto::encode_frame(&error));
    out
}

/// Passes the provider's status and body through, changed or not.
pub type Pass = Box<dyn FnOnce(u16, Vec<u8>) -> (u16, Vec<u8>) + Send>;

/// What the proxy does with one request.
pub enum Answer {
    /// Answers this status and body itself, without asking the provider.
    Own(u16, Vec<u8>),
    /// Forwards the request and passes the provider's status and body through this first.
    Forward(Pass),
    /// Waits for the gate to open, then forwards as `Forward` does.
    After(Gate, Pass),
    /// Forwards as `Forward` does, then holds the answer until the gate opens.
    Hold(Gate, Pass),
    /// Forwards as `Forward` does and sends what the pass made, announced as the start of a
    /// body without end: the connection stays open and nothing more comes.
    Endless(Pass),
}

/// What a test opens (`add_permits`, one per request) to let a held request or answer go on.
pub type Gate = Arc<tokio::sync::Semaphore>;

/// Serves HTTP/1.1 on a free port (one request per connection, bodies with a length or
/// chunked) and
/// answers each request `/v1/{op}` as `decide(op)` says. Returns the proxy's URL.
pub async fn proxy(upstream: String, decide: impl Fn(&str) -> Answer + Send + Sync + 'static) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    vouch_proto::tls::install_provider();
    let http = reqwest::Client::new();
    let decide = Arc::new(decide);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let (http, upstream, decide) = (http.clone(), upstream.clone(), decide.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let head_end = loop {
                    let mut piece = [0u8; 8192];
                    let n = socket.read(&mut piece).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&piece[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                let path = head.split_whitespace().nth(1).unwrap().to_string();
                let header = |name: &str| {
                    head.lines().find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
                    })
                };
                let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
                let len = match chunked {
                    // A streamed request (`stage`): its chunks joined into one body.
                    true => {
                        let body = dechunk(&mut socket, buf.split_off(head_end)).await;
                        buf.extend_from_slice(&body);
                        body.len()
                    }
                    false => header("content-length").map_or(0, |v| v.parse().unwrap()),
                };
                while buf.len() < head_end + len {
                    let mut piece = [0u8; 8192];
                    let n = socket.read(&mut piece).await.unwrap();
                    assert!(n > 0, "request body cut short");
                    buf.extend_from_slice(&piece[..n]);
                }
                let mut endless = false;
                let (before, pass, after) = match decide(path.trim_start_matches("/v1/")) {
                    Answer::Own(code, body) => (None, Err((code, body)), None),
                    Answer::Forward(pass) => (None, Ok(pass), None),
                    Answer::After(gate, pass) => (Some(gate), Ok(pass), None),
                    Answer::Hold(gate, pass) => (None, Ok(pass), Some(gate)),
                    Answer::Endless(pass) => {
                        endless = true;
                        (None, Ok(pass), None)
                    }
                };
                if let Some(gate) = before {
                    gate.acquire().await.unwrap().forget();
                }
                let (code, body) = match pass {
                    Err(own) => own,
                    Ok(pass) => {
                        let mut req =
                            http.post(format!("{upstream}{path}")).body(buf[head_end..head_end + len].to_vec());
                        for name in [vouch_proto::VERSION_HEADER, "authorization"] {
                            if let Some(v) = header(name) {
                                req = req.header(name, v);
                            }
                        }
                        let resp = req.send().await.unwrap();
                        let code = resp.status().as_u16();
                        pass(code, resp.bytes().await.unwrap().to_vec())
                    }
                };
                if let Some(gate) = after {
                    gate.acquire().await.unwrap().forget();
                }
                let announced = if endless { body.len() + (1 << 40) } else { body.len() };
                let head = format!("HTTP/1.1 {code} X\r\ncontent-length: {announced}\r\nconnection: close\r\n\r\n");
                socket.write_all(head.as_bytes()).await.unwrap();
                socket.write_all(&body).await.unwrap();
                if endless {
                    socket.flush().await.unwrap();
                    std::future::pending::<()>().await;
                }
                socket.shutdown().await.unwrap();
            });
        }
    });
    format!("http://{addr}")
}

/// The body of a chunked request, read from `socket` after `read` (what came with its head).
async fn dechunk(socket: &mut tokio::net::TcpStream, mut read: Vec<u8>) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        // `size\r\n`, `size` bytes, `\r\n`; a size of 0 ends it (with no trailers here).
        let line_end = loop {
            if let Some(i) = read.windows(2).position(|w| w == b"\r\n") {
                break i;
            }
            fill(socket, &mut read).await;
        };
        let size = usize::from_str_radix(std::str::from_utf8(&read[..line_end]).unwrap().trim(), 16).unwrap();
        while read.len() < line_end + 2 + size + 2 {
            fill(socket, &mut read).await;
        }
        body.extend_from_slice(&read[line_end + 2..line_end + 2 + size]);
        read.drain(..line_end + 2 + size + 2);
        if size == 0 {
            return body;
        }
    }
}

async fn fill(socket: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) {
    use tokio::io::AsyncReadExt;
    let mut piece = [0u8; 8192];
    let n = socket.read(&mut piece).await.unwrap();
    assert!(n > 0, "request body cut short");
    buf.extend_from_slice(&piece[..n]);
}

/// A proxy that forwards each request unless `rules` names a lie for its operation.
pub async fn lying_proxy(upstream: String, rules: Rules) -> String {
    proxy(upstream, move |op| match rules.lock().unwrap().get(op).copied() {
        Some(Lie::Bare(code)) => {
            Answer::Own(status(code), vouch_proto::encode(&ErrorBody { code, message: "no such thing".into() }))
        }
        Some(Lie::CutRead(error)) => {
            Answer::Forward(Box::new(
                move |code, body| {
                    if code == 200 {
                        (code, cut_read(&body, error))
                    } else {
                        (code, body)
                    }
                },
            ))
        }
        None => Answer::Forward(Box::new(|code, body| (code, body))),
    })
    .await
}

/// From now on, lie `what` about `op` (and about nothing else).
pub fn lie(rules: &Rules, op: &'static str, what: Lie) {
    let mut rules = rules.lock().unwrap();
    rules.clear();
    rules.insert(op, what);
}

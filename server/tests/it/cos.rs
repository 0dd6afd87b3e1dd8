//! A VICOS group's cloud object store over HTTP (paper 003, Sec. 4.1 and 4.3): objects under
//! translated keys `k || x` streamed in and out, deleted one by one or all of a key's at
//! once, bounded in size, and missing objects reported as missing.

use crate::support_vicos as support;

use serde_bytes::ByteBuf;
use std::net::SocketAddr;
use std::path::Path;
use support::*;
use vouch_proto::frame::Decoder;
use vouch_proto::vicos::{AipAck, CosDelete, CosGetFrame, CosObject, CosPutFrame};
use vouch_proto::{decode, encode, encode_frame, ErrorBody, ErrorCode, Op};
use vouch_server::Limits;

const MB: usize = 1_000_000;

fn object(group: &str, key: &[u8], nonce: u8) -> CosObject {
    CosObject { group: group.into(), key: ByteBuf::from(key.to_vec()), nonce: [nonce; 16] }
}

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// `cos-put` of `data` in frames of at most 1 MiB.
async fn cos_put(addr: SocketAddr, object: &CosObject, data: &[u8]) -> Result<AipAck, ErrorBody> {
    let mut body = encode_frame(&CosPutFrame::Head(object.clone()));
    for piece in data.chunks(1 << 20) {
        body.extend(encode_frame(&CosPutFrame::Data(ByteBuf::from(piece.to_vec()))));
    }
    body.extend(encode_frame(&CosPutFrame::End));
    let (status, answer) = post(addr, BOB, Op::CosPut, body).await;
    match status {
        200 => Ok(decode(&answer).unwrap()),
        _ => Err(decode(&answer).unwrap()),
    }
}

/// `cos-get`: the object's bytes (the stream must end with `End`).
async fn cos_get(addr: SocketAddr, object: &CosObject) -> Result<Vec<u8>, ErrorBody> {
    let (status, answer) = post(addr, ALICE, Op::CosGet, encode(object)).await;
    if status != 200 {
        return Err(decode(&answer).unwrap());
    }
    let mut frames = Decoder::new();
    frames.extend(&answer);
    let mut data = Vec::new();
    while let Some(frame) = frames.next_frame().unwrap() {
        match decode::<CosGetFrame>(&frame).unwrap() {
            CosGetFrame::Data(piece) => {
                assert!(piece.len() <= 1 << 20, "frames of at most 1 MiB");
                data.extend_from_slice(&piece);
            }
            CosGetFrame::End => {
                frames.finish().unwrap();
                assert!(frames.next_frame().unwrap().is_none(), "nothing after the end");
                return Ok(data);
            }
            CosGetFrame::Error(e) => return Err(e),
        }
    }
    panic!("a cos-get stream without its end");
}

async fn cos_del(addr: SocketAddr, group: &str, key: &[u8], nonce: Option<u8>) -> Result<AipAck, ErrorBody> {
    let req = CosDelete { group: group.into(), key: ByteBuf::from(key.to_vec()), nonce: nonce.map(|n| [n; 16]) };
    call(addr, ALICE, &req).await
}

/// The files under the blob store's folder of VICOS objects (staging files included).
fn object_files(data: &Path) -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            match entry.file_type().unwrap().is_dir() {
                true => walk(&entry.path(), out),
                false => out.push(entry.path().display().to_string()),
            }
        }
    }
    let mut out = Vec::new();
    walk(&data.join("blobs").join("vicos"), &mut out);
    out
}

#[tokio::test]
async fn objects_round_trip_and_deletes_take_one_or_every_nonce_of_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), Limits::default()).await;
    let addr = server.addr;
    create(addr, ALICE, "g").await.unwrap();
    // A group's objects are its members' own: bob speaks for no member of it yet.
    refused(cos_put(addr, &object("g", b"photo", 1), b"v").await, ErrorCode::Unauthorized);
    admit(addr, BOB, "g", 1, &admission("g")).await.unwrap();
    let large = bytes(5 * MB, 1);
    let (x1, x2) = (object("g", b"photo", 1), object("g", b"photo", 2));
    cos_put(addr, &x1, &large).await.unwrap();
    cos_put(addr, &x2, b"second version").await.unwrap();
    assert_eq!(cos_get(addr, &x1).await.unwrap(), large, "5 MB streamed in and out");
    assert_eq!(cos_get(addr, &x2).await.unwrap(), b"second version", "the nonces keep both objects");
    let empty = object("g", b"", 3);
    cos_put(addr, &empty, b"").await.unwrap();
    assert_eq!(cos_get(addr, &empty).await.unwrap(), b"", "an empty key and an empty object");
    // A long key (named by its hash in the store) and one that shares a prefix with another.
    let (long, prefix) = (object("g", &[b'k'; 1024], 1), object("g", b"phot", 1));
    cos_put(addr, &long, b"long").await.unwrap();
    cos_put(addr, &prefix, b"prefix").await.unwrap();
    assert_eq!(cos_get(addr, &long).await.unwrap(), b"long");

    // One nonce, then all of a key's (`cos-del(k||*)`), leaving other keys alone.
    cos_del(addr, "g", b"photo", Some(2)).await.unwrap();
    refused(cos_get(addr, &x2).await, ErrorCode::NotFound);
    assert_eq!(cos_get(addr, &x1).await.unwrap(), large);
    cos_put(addr, &object("g", b"photo", 3), b"third").await.unwrap();
    cos_del(addr, "g", b"photo", None).await.unwrap();
    for nonce in [1, 3] {
        refused(cos_get(addr, &object("g", b"photo", nonce)).await, ErrorCode::NotFound);
    }
    assert_eq!(cos_get(addr, &prefix).await.unwrap(), b"prefix", "another key with the same start stays");
    cos_del(addr, "g", b"photo", None).await.unwrap();
    cos_del(addr, "g", b"never", Some(9)).await.expect("deletes are idempotent");
    cos_del(addr, "g", &[b'k'; 1024], None).await.unwrap();
    refused(cos_get(addr, &long).await, ErrorCode::NotFound);

    // Objects belong to groups that exist, under keys of bounded length.
    refused(cos_put(addr, &object("nobody", b"k", 1), b"v").await, ErrorCode::NotFound);
    refused(cos_get(addr, &object("nobody", b"k", 1)).await, ErrorCode::NotFound);
    refused(cos_del(addr, "nobody", b"k", None).await, ErrorCode::NotFound);
    refused(cos_put(addr, &object("g", &[0; 1025], 1), b"v").await, ErrorCode::BadRequest);
    refused(cos_get(addr, &object("../g", b"k", 1)).await, ErrorCode::BadRequest);

    // In a group bob created, alice (no member's client there) neither reads nor deletes.
    create(addr, BOB, "h").await.unwrap();
    let theirs = object("h", b"k", 1);
    cos_put(addr, &theirs, b"bob's").await.unwrap();
    refused(cos_get(addr, &theirs).await, ErrorCode::Unauthorized);
    refused(cos_del(addr, "h", b"k", None).await, ErrorCode::Unauthorized);
    admit(addr, ALICE, "h", 2, &admission("h")).await.unwrap();
    assert_eq!(cos_get(addr, &theirs).await.unwrap(), b"bob's", "the refused delete took nothing");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_oversized_or_broken_upload_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { max_put_bytes: 3 * MB as u64, ..Limits::default() };
    let server = serve(dir.path(), limits).await;
    let addr = server.addr;
    create(addr, ALICE, "g").await.unwrap();
    admit(addr, BOB, "g", 1, &admission("g")).await.unwrap();
    let too_large = object("g", b"big", 1);
    let message = refused(cos_put(addr, &too_large, &bytes(3 * MB + 1, 7)).await, ErrorCode::TooLarge);
    assert!(message.contains("3000000"), "{message}");
    refused(cos_get(addr, &too_large).await, ErrorCode::NotFound);
    cos_put(addr, &object("g", b"fits", 1), &bytes(3 * MB, 7)).await.expect("at the bound");

    // Frames out of order, and a stream without its end.
    let data = encode_frame(&CosPutFrame::Data(ByteBuf::from(vec![1; 10])));
    let (status, _) = post(addr, BOB, Op::CosPut, data).await;
    assert_eq!(status, 400);
    let mut cut = encode_frame(&CosPutFrame::Head(object("g", b"cut", 1)));
    cut.extend(encode_frame(&CosPutFrame::Data(ByteBuf::from(vec![1; 10]))));
    let (status, answer) = post(addr, BOB, Op::CosPut, cut).await;
    assert_eq!((status, decode::<ErrorBody>(&answer).unwrap().code), (400, ErrorCode::BadRequest));
    refused(cos_get(addr, &object("g", b"cut", 1)).await, ErrorCode::NotFound);
    // Bytes after the end: refused, and the object is not kept.
    let mut trailing = encode_frame(&CosPutFrame::Head(object("g", b"trailing", 1)));
    trailing.extend(encode_frame(&CosPutFrame::Data(ByteBuf::from(vec![1; 10]))));
    trailing.extend(encode_frame(&CosPutFrame::End));
    trailing.extend(b"more");
    let (status, answer) = post(addr, BOB, Op::CosPut, trailing).await;
    let error = decode::<ErrorBody>(&answer).unwrap();
    assert_eq!((status, error.code), (400, ErrorCode::BadRequest));
    assert!(error.message.contains("after its last frame"), "{}", error.message);
    refused(cos_get(addr, &object("g", b"trailing", 1)).await, ErrorCode::NotFound);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(object_files(dir.path()).len(), 1, "only the object that fits: {:?}", object_files(dir.path()));
    server.shutdown().await.unwrap();
}

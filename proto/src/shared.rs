//! Block bytes through the protocol without copies.
//!
//! A block's bytes are the bulk of every put and read; each copy of them costs as much as the
//! disk write they end in. So [`WireBlock::data`](crate::WireBlock) is a [`Bytes`], and:
//!
//! * **decoding** a frame with [`decode_shared`] gives blocks whose bytes are slices of the
//!   received frame (postcard borrows them from the input, and the field's deserializer turns
//!   a borrowed slice of the frame into a shared [`Bytes`] of it instead of copying);
//! * **encoding** a put's blocks ([`PutFrame::Blocks`]) with [`put_frame_parts`] gives the
//!   frame as a list of parts: small parts for lengths, nonces and tags, and each block's own
//!   [`Bytes`], shared, not copied. The parts concatenated are byte for byte postcard's
//!   encoding of the frame (tested against it), so the wire format is unchanged. (A read's
//!   chunks go out whole instead: sent as parts by the server's body, a 512 MB read took
//!   three times as long, each small part a wake-up and a write of its own; the client's
//!   request body takes them well, a put went from 1.2 s to 0.9 s.)

use crate::{encode_frame, BlockBatch, PutFrame, WireBlock, WireError};
use bytes::{BufMut, Bytes, BytesMut};
use serde::de::{DeserializeOwned, Deserializer, Error, SeqAccess, Visitor};
use std::cell::RefCell;

/// Blocks shorter than this are copied into the small parts: a part of its own would cost
/// more than the copy.
const SHARE_MIN: usize = 1024;

thread_local! {
    /// The frame that [`decode_shared`] is decoding on this thread.
    static FRAME: RefCell<Option<Bytes>> = const { RefCell::new(None) };
}

/// Decodes `frame`; every block's bytes are a slice of `frame`, not a copy.
pub fn decode_shared<T: DeserializeOwned>(frame: &Bytes) -> Result<T, WireError> {
    let previous = FRAME.with(|f| f.replace(Some(frame.clone())));
    let decoded = crate::decode(frame);
    FRAME.with(|f| *f.borrow_mut() = previous);
    decoded
}

/// The field serializer of [`WireBlock::data`]: plain bytes, as `serde_bytes` writes them.
pub(crate) fn serialize_bytes<S: serde::Serializer>(bytes: &Bytes, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(bytes)
}

/// The field deserializer of [`WireBlock::data`]: bytes borrowed from the frame being decoded
/// by [`decode_shared`] are shared, any other bytes copied.
pub(crate) fn deserialize_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
    d.deserialize_bytes(SharedBytes)
}

struct SharedBytes;

impl<'de> Visitor<'de> for SharedBytes {
    type Value = Bytes;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("bytes")
    }

    fn visit_borrowed_bytes<E: Error>(self, v: &'de [u8]) -> Result<Bytes, E> {
        Ok(FRAME.with(|f| match f.borrow().as_ref() {
            Some(frame) => shared_or_copied(frame, v),
            None => Bytes::copy_from_slice(v),
        }))
    }

    fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Bytes, E> {
        Ok(Bytes::copy_from_slice(v))
    }

    fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
        Ok(Bytes::from(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element()? {
            out.push(b);
        }
        Ok(Bytes::from(out))
    }
}

/// `part` as a slice of `owner` when it lies inside it (no copy), otherwise a copy.
pub fn shared_or_copied(owner: &Bytes, part: &[u8]) -> Bytes {
    if within(owner, part) {
        owner.slice_ref(part)
    } else {
        Bytes::copy_from_slice(part)
    }
}

/// Whether `part` lies inside `whole`'s memory (then `slice_ref` cannot panic).
fn within(whole: &Bytes, part: &[u8]) -> bool {
    let (start, at) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    at >= start && at + part.len() <= start + whole.len()
}

/// `frame` as one [`crate::frame`] in parts (see the module doc).
pub fn put_frame_parts(frame: &PutFrame) -> Vec<Bytes> {
    match frame {
        PutFrame::Blocks(BlockBatch { blocks }) => {
            let mut w = Parts::new(PUT_BLOCKS_VARIANT);
            w.blocks(blocks);
            w.finish()
        }
        other => vec![Bytes::from(encode_frame(other))],
    }
}

/// postcard's variant index (declaration order) of the frame written here.
const PUT_BLOCKS_VARIANT: u32 = 1;

/// A frame being written as parts: `small` collects bytes until a block's own bytes are
/// shared as a part of their own.
struct Parts {
    parts: Vec<Bytes>,
    small: BytesMut,
    len: usize,
}

impl Parts {
    fn new(variant: u32) -> Self {
        let mut w = Parts { parts: Vec::new(), small: BytesMut::with_capacity(4096), len: 0 };
        w.varint(u64::from(variant));
        w
    }

    /// postcard's varint: 7 bits per byte, least significant first.
    fn varint(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.small.put_u8(byte);
                return;
            }
            self.small.put_u8(byte | 0x80);
        }
    }

    fn copied(&mut self, bytes: &[u8]) {
        self.varint(bytes.len() as u64);
        self.small.put_slice(bytes);
    }

    fn shared(&mut self, bytes: &Bytes) {
        if bytes.len() < SHARE_MIN {
            return self.copied(bytes);
        }
        self.varint(bytes.len() as u64);
        self.flush();
        self.len += bytes.len();
        self.parts.push(bytes.clone());
    }

    fn blocks(&mut self, blocks: &[WireBlock]) {
        self.varint(blocks.len() as u64);
        for WireBlock { nonce, tag, data } in blocks {
            self.varint(*nonce);
            self.copied(tag);
            self.shared(data);
        }
    }

    fn flush(&mut self) {
        if !self.small.is_empty() {
            self.len += self.small.len();
            self.parts.push(self.small.split().freeze());
        }
    }

    /// The parts, after the frame's length prefix.
    fn finish(mut self) -> Vec<Bytes> {
        self.flush();
        let mut parts = Vec::with_capacity(self.parts.len() + 1);
        parts.push(Bytes::copy_from_slice(&(self.len as u32).to_le_bytes()));
        parts.extend(self.parts);
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Attempt, PutHead, ReadChunk, ReadFrame};
    use proptest::prelude::*;
    use serde_bytes::ByteBuf;

    fn arb_block() -> impl Strategy<Value = WireBlock> {
        (any::<u64>(), proptest::collection::vec(any::<u8>(), 0..40), 0usize..5000, any::<u8>()).prop_map(
            |(nonce, tag, len, fill)| WireBlock {
                nonce,
                tag: ByteBuf::from(tag),
                data: Bytes::from((0..len).map(|i| fill.wrapping_add(i as u8)).collect::<Vec<_>>()),
            },
        )
    }

    fn joined(parts: &[Bytes]) -> Vec<u8> {
        parts.concat()
    }

    proptest! {
        #[test]
        fn parts_are_postcards_frame_and_decode_back_shared(
            starts in proptest::collection::vec(any::<u64>(), 0..20),
            proof in proptest::collection::vec(any::<u8>(), 0..300),
            blocks in proptest::collection::vec(arb_block(), 0..12),
        ) {
            let put = PutFrame::Blocks(BlockBatch { blocks: blocks.clone() });
            let put_bytes = joined(&put_frame_parts(&put));
            prop_assert_eq!(&put_bytes, &encode_frame(&put));
            let decoded: PutFrame = decode_shared(&Bytes::from(put_bytes).slice(4..)).unwrap();
            prop_assert_eq!(&decoded, &put);

            // A read chunk, encoded whole, decodes with its blocks sharing the frame.
            let read = ReadFrame::Chunk(ReadChunk { starts, proof: ByteBuf::from(proof), blocks });
            let frame = Bytes::from(encode_frame(&read)).slice(4..);
            let decoded: ReadFrame = decode_shared(&frame).unwrap();
            prop_assert_eq!(&decoded, &read);
            if let ReadFrame::Chunk(c) = decoded {
                for b in c.blocks.iter().filter(|b| !b.data.is_empty()) {
                    prop_assert!(within(&frame, &b.data), "a block's bytes were copied");
                }
            }
        }
    }

    #[test]
    fn other_frames_are_one_part() {
        let head = PutFrame::Head(PutHead { name: "n".into(), file: [3; 16], scheme: 1, attempt: Attempt([5; 16]) });
        let tail = PutFrame::Tail(crate::PutTail { record: ByteBuf::from(vec![9; 40]) });
        for f in [&head, &tail] {
            assert_eq!(put_frame_parts(f), vec![Bytes::from(encode_frame(f))]);
        }
        let empty = PutFrame::Blocks(BlockBatch { blocks: vec![] });
        assert_eq!(joined(&put_frame_parts(&empty)), encode_frame(&empty));
    }

    #[test]
    fn decoding_outside_a_shared_frame_copies_and_hostile_bytes_are_an_error() {
        let block = WireBlock { nonce: 9, tag: ByteBuf::from(vec![1, 2]), data: Bytes::from(vec![7u8; 3000]) };
        let bytes = crate::encode(&block);
        let plain: WireBlock = crate::decode(&bytes).unwrap();
        assert_eq!(plain, block);
        let shared: WireBlock = decode_shared(&Bytes::from(bytes.clone())).unwrap();
        assert_eq!(shared, block);
        for cut in 0..bytes.len() {
            assert!(decode_shared::<WireBlock>(&Bytes::copy_from_slice(&bytes[..cut])).is_err());
        }
        // The frame in use does not leak into a later decode on the same thread.
        assert!(FRAME.with(|f| f.borrow().is_none()));
    }
}

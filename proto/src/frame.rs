//! Length-prefixed frames: `len:u32le || message`, each at most [`crate::MAX_FRAME`] bytes.

use crate::{WireError, MAX_FRAME};
use bytes::{Buf, BytesMut};

/// Appends one frame holding `message` to `out`.
pub fn put(out: &mut Vec<u8>, message: &[u8]) {
    out.extend_from_slice(&(message.len() as u32).to_le_bytes());
    out.extend_from_slice(message);
}

/// `message` as one frame.
pub fn encode(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + message.len());
    put(&mut out, message);
    out
}

/// Cuts frames out of a byte stream that arrives in pieces of any size.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: BytesMut,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds received bytes.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<BytesMut>, WireError> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_le_bytes(self.buf[..4].try_into().expect("4 bytes")) as usize;
        if len > MAX_FRAME {
            return Err(WireError::FrameTooLarge(len));
        }
        if self.buf.len() < 4 + len {
            self.buf.reserve(4 + len - self.buf.len());
            return Ok(None);
        }
        self.buf.advance(4);
        Ok(Some(self.buf.split_to(len)))
    }

    /// Call at the end of the stream: an unfinished frame is [`WireError::Truncated`].
    pub fn finish(&self) -> Result<(), WireError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(WireError::Truncated)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_encoded_into_its_frame_is_the_message_framed() {
        let message =
            crate::ReadFrame::Error(crate::ErrorBody { code: crate::ErrorCode::NotFound, message: "x".repeat(300) });
        assert_eq!(crate::encode_frame(&message), encode(&crate::encode(&message)));
    }

    #[test]
    fn frames_survive_any_split() {
        let mut stream = Vec::new();
        for m in [&b"one"[..], b"", &[7u8; 1000]] {
            put(&mut stream, m);
        }
        for piece in [1, 3, 4, 5, 999, 5000] {
            let mut d = Decoder::new();
            let mut got = Vec::new();
            for part in stream.chunks(piece) {
                d.extend(part);
                while let Some(f) = d.next_frame().unwrap() {
                    got.push(f.to_vec());
                }
            }
            d.finish().unwrap();
            assert_eq!(got, vec![b"one".to_vec(), vec![], vec![7u8; 1000]]);
        }
    }

    #[test]
    fn oversized_and_truncated_frames_are_errors() {
        let mut d = Decoder::new();
        d.extend(&((MAX_FRAME as u32) + 1).to_le_bytes());
        assert_eq!(d.next_frame(), Err(WireError::FrameTooLarge(MAX_FRAME + 1)));
        let mut d = Decoder::new();
        d.extend(&encode(b"hello")[..6]);
        assert_eq!(d.next_frame(), Ok(None));
        assert_eq!(d.finish(), Err(WireError::Truncated));
    }
}

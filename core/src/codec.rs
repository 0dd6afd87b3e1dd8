//! Explicit byte layouts: a bounds-checked reader and canonical LEB128 varints.
//!
//! Decoders of untrusted bytes read through [`Reader`], which never panics and never allocates:
//! every read is checked against the remaining input and fails with [`CodecError`].

use crate::hash::{Digest, DIGEST_LEN};

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The input ended in the middle of a field.
    #[error("input truncated")]
    Truncated,
    /// A varint had more than 10 bytes or did not fit in 64 bits.
    #[error("varint overflows 64 bits")]
    VarintOverflow,
    /// A varint had a redundant trailing zero group (every value has exactly one encoding).
    #[error("varint not in its shortest form")]
    NonCanonicalVarint,
}

/// Appends `v` as an unsigned LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Number of bytes [`put_varint`] writes for `v`.
pub fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A cursor over untrusted input.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub fn u8(&mut self) -> Result<u8, CodecError> {
        let (&b, rest) = self.buf.split_first().ok_or(CodecError::Truncated)?;
        self.buf = rest;
        Ok(b)
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.buf.len() < n {
            return Err(CodecError::Truncated);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// The next `N` bytes, as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        Ok(self.bytes(N)?.try_into().expect("N bytes"))
    }

    pub fn u16_le(&mut self) -> Result<u16, CodecError> {
        self.array().map(u16::from_le_bytes)
    }

    pub fn u32_le(&mut self) -> Result<u32, CodecError> {
        self.array().map(u32::from_le_bytes)
    }

    pub fn digest(&mut self) -> Result<Digest, CodecError> {
        let mut d = [0u8; DIGEST_LEN];
        d.copy_from_slice(self.bytes(DIGEST_LEN)?);
        Ok(Digest(d))
    }

    pub fn u64_le(&mut self) -> Result<u64, CodecError> {
        self.array().map(u64::from_le_bytes)
    }

    /// A canonical unsigned LEB128 varint.
    pub fn varint(&mut self) -> Result<u64, CodecError> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            let part = u64::from(b & 0x7f);
            if i == 9 && b > 1 {
                return Err(CodecError::VarintOverflow);
            }
            v |= part << (7 * i);
            if b & 0x80 == 0 {
                if b == 0 && i > 0 {
                    return Err(CodecError::NonCanonicalVarint);
                }
                return Ok(v);
            }
        }
        Err(CodecError::VarintOverflow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_length() {
        for v in [0, 1, 127, 128, 300, 16383, 16384, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            let mut r = Reader::new(&out);
            assert_eq!(r.varint(), Ok(v));
            assert!(r.is_empty());
        }
    }

    #[test]
    fn varint_rejects_bad_forms() {
        assert_eq!(Reader::new(&[0x80, 0x00]).varint(), Err(CodecError::NonCanonicalVarint));
        assert_eq!(Reader::new(&[0x80]).varint(), Err(CodecError::Truncated));
        assert_eq!(Reader::new(&[0xff; 10]).varint(), Err(CodecError::VarintOverflow));
        let mut eleven = vec![0xff; 9];
        eleven.push(0x02);
        assert_eq!(Reader::new(&eleven).varint(), Err(CodecError::VarintOverflow));
    }
}

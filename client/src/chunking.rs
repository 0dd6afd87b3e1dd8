//! How the client cuts files into blocks.
//!
//! By default content-defined (FastCDC 2020, 4 / 16 / 64 KiB min / average / max): block
//! boundaries follow the content, so after an insert or delete the blocks further on are the
//! same blocks as before, and `sync` sends only the changed ones. 16 KiB on average is the
//! block size `vouch bench pdp` found best for proofs. A fixed size can be asked for instead.

use crate::error::ClientError;
use bytes::Bytes;
use std::io::Read;
use std::ops::Range;
use vouch_core::pdp::MAX_BLOCK_LEN;

pub const CDC_MIN: u32 = 4 << 10;
pub const CDC_AVG: u32 = 16 << 10;
pub const CDC_MAX: u32 = 64 << 10;

/// Block cutting: content-defined, or fixed-size blocks of this many bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cutting {
    Content,
    Fixed(usize),
}

impl Cutting {
    /// `None` is content-defined; a size is checked to be 1 byte to 1 MiB.
    pub fn from_option(block_size: Option<usize>) -> Result<Cutting, String> {
        match block_size {
            None => Ok(Cutting::Content),
            Some(n) if n > 0 && n <= MAX_BLOCK_LEN => Ok(Cutting::Fixed(n)),
            Some(n) => Err(format!("block size must be 1 to {MAX_BLOCK_LEN} bytes, not {n}")),
        }
    }

    /// `bytes` cut into blocks (none for no bytes).
    pub fn cut<'a>(&self, bytes: &'a [u8]) -> Vec<&'a [u8]> {
        match *self {
            Cutting::Fixed(n) => bytes.chunks(n).collect(),
            Cutting::Content => fastcdc::v2020::FastCDC::new(bytes, CDC_MIN, CDC_AVG, CDC_MAX)
                .map(|c| &bytes[c.offset..c.offset + c.length])
                .collect(),
        }
    }
}

/// A file read in batches of blocks: content-defined chunks, or for fixed cutting plain
/// pieces of bytes (the upload cuts those itself).
///
/// Each batch is one buffer read from the input, and its blocks are slices of it: a block's
/// bytes are copied once, by the read, and then shared up to the wire. Only the batch's last
/// chunk, which the buffer's end may have cut short, is carried into the next buffer and cut
/// again there (chunking restarts cleanly at any chunk boundary, so the blocks are the ones a
/// single pass over the whole input gives).
pub struct ChunkSource<R: Read> {
    reader: R,
    cutting: Cutting,
    carry: Vec<u8>,
    eof: bool,
}

impl<R: Read> ChunkSource<R> {
    pub fn new(reader: R, cutting: Cutting) -> Self {
        ChunkSource { reader, cutting, carry: Vec::new(), eof: false }
    }

    /// About `bytes` worth of blocks (fewer at the end); `None` at the end of the input.
    pub fn next_batch(&mut self, bytes: usize) -> Result<Option<Vec<Bytes>>, ClientError> {
        // Room for at least one whole chunk beyond what is carried.
        let want = bytes.max(2 * CDC_MAX as usize);
        loop {
            if self.eof && self.carry.is_empty() {
                return Ok(None);
            }
            let mut buf = Vec::with_capacity(self.carry.len() + want);
            buf.append(&mut self.carry);
            let more = want.saturating_sub(buf.len()) as u64;
            let read =
                (&mut self.reader).take(more).read_to_end(&mut buf).map_err(ClientError::io("reading the input"))?;
            if (read as u64) < more {
                self.eof = true;
            }
            let data = Bytes::from(buf);
            if data.is_empty() {
                return Ok(None);
            }
            let blocks = match self.cutting {
                Cutting::Fixed(_) => vec![data],
                Cutting::Content => {
                    let mut cuts: Vec<Range<usize>> = fastcdc::v2020::FastCDC::new(&data, CDC_MIN, CDC_AVG, CDC_MAX)
                        .map(|c| c.offset..c.offset + c.length)
                        .collect();
                    if !self.eof {
                        if let Some(last) = cuts.pop() {
                            self.carry = data[last].to_vec();
                        }
                    }
                    cuts.into_iter().map(|r| data.slice(r)).collect()
                }
            };
            if !blocks.is_empty() {
                return Ok(Some(blocks));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_defined_blocks_resynchronise_after_an_insert() {
        let data: Vec<u8> = (0..400_000u64).map(|i| (i.wrapping_mul(0x9e37_79b9) >> 11) as u8).collect();
        let before = Cutting::Content.cut(&data);
        let mut changed = data.clone();
        changed.splice(100_000..100_000, [7u8; 123]);
        let after = Cutting::Content.cut(&changed);
        assert_eq!(before.concat(), data);
        assert!(before.iter().all(|b| b.len() <= CDC_MAX as usize));
        let shared = after.iter().filter(|b| before.contains(b)).count();
        assert!(shared + 3 >= before.len(), "{shared} of {} blocks survive an insert", before.len());
        assert_eq!(Cutting::Fixed(10).cut(&data[..25]).len(), 3);
        assert!(Cutting::from_option(Some(0)).is_err());
        assert!(Cutting::Content.cut(&[]).is_empty());
        // Streamed cutting equals cutting in memory.
        let mut source = ChunkSource::new(std::io::Cursor::new(data.clone()), Cutting::Content);
        let mut streamed = Vec::new();
        while let Some(batch) = source.next_batch(50_000).unwrap() {
            streamed.extend(batch);
        }
        assert_eq!(streamed, before.iter().map(|b| Bytes::copy_from_slice(b)).collect::<Vec<_>>());
    }

    /// Returns at most `step` bytes per read, then fails if `fail` says so.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
        fail: bool,
    }

    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.at == self.data.len() && self.fail {
                return Err(std::io::Error::other("disk gone"));
            }
            let n = self.step.min(out.len()).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn batches_are_the_whole_cut_whatever_the_reads_and_sizes() {
        let data: Vec<u8> = (0..700_000u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 23) as u8).collect();
        let whole = Cutting::Content.cut(&data);
        for (step, batch) in [(1 << 20, 1), (7, 100_000), (65_536, 300_000), (4096, 1 << 22)] {
            for cutting in [Cutting::Content, Cutting::Fixed(5000)] {
                let reader = Trickle { data: data.clone(), at: 0, step, fail: false };
                let mut source = ChunkSource::new(reader, cutting);
                let mut blocks = Vec::new();
                while let Some(b) = source.next_batch(batch).unwrap() {
                    assert!(!b.is_empty());
                    blocks.extend(b);
                }
                assert_eq!(blocks.concat(), data, "step {step}, batch {batch}, {cutting:?}");
                if cutting == Cutting::Content {
                    assert_eq!(blocks.len(), whole.len(), "step {step}, batch {batch}");
                    assert!(blocks.iter().zip(&whole).all(|(a, b)| a == b));
                }
            }
        }
        let failing = Trickle { data: vec![1; 10], at: 0, step: 3, fail: true };
        let mut source = ChunkSource::new(failing, Cutting::Content);
        assert!(matches!(source.next_batch(1 << 20), Err(ClientError::Io { .. })));
        let mut empty = ChunkSource::new(std::io::empty(), Cutting::Content);
        assert!(empty.next_batch(100).unwrap().is_none());
    }
}

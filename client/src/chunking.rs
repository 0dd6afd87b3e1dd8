//! How the client cuts files into blocks.
//!
//! By default content-defined (FastCDC 2020, 4 / 16 / 64 KiB min / average / max): block
//! boundaries follow the content, so after an insert or delete the blocks further on are the
//! same blocks as before, and `sync` sends only the changed ones. 16 KiB on average is the
//! block size `vouch bench pdp` found best for proofs. A fixed size can be asked for instead.

use crate::error::ClientError;
use std::io::Read;
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
pub struct ChunkSource<R: Read> {
    inner: Source<R>,
}

enum Source<R: Read> {
    Content(fastcdc::v2020::StreamCDC<R>),
    Bytes(R),
}

impl<R: Read> ChunkSource<R> {
    pub fn new(reader: R, cutting: Cutting) -> Self {
        let inner = match cutting {
            Cutting::Content => Source::Content(fastcdc::v2020::StreamCDC::new(reader, CDC_MIN, CDC_AVG, CDC_MAX)),
            Cutting::Fixed(_) => Source::Bytes(reader),
        };
        ChunkSource { inner }
    }

    /// About `bytes` worth of blocks (fewer at the end); `None` at the end of the input.
    pub fn next_batch(&mut self, bytes: usize) -> Result<Option<Vec<Vec<u8>>>, ClientError> {
        let mut out = Vec::new();
        let mut have = 0;
        match &mut self.inner {
            Source::Content(cdc) => {
                while have < bytes {
                    match cdc.next() {
                        None => break,
                        Some(Err(e)) => {
                            return Err(ClientError::Io {
                                what: "reading the input".into(),
                                source: std::io::Error::other(e.to_string()),
                            })
                        }
                        Some(Ok(chunk)) => {
                            have += chunk.data.len();
                            out.push(chunk.data);
                        }
                    }
                }
            }
            Source::Bytes(reader) => {
                let mut buf = vec![0u8; bytes];
                while have < bytes {
                    let n = reader.read(&mut buf[have..]).map_err(ClientError::io("reading the input"))?;
                    if n == 0 {
                        break;
                    }
                    have += n;
                }
                buf.truncate(have);
                if have > 0 {
                    out.push(buf);
                }
            }
        }
        Ok(if out.is_empty() { None } else { Some(out) })
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
        assert_eq!(streamed, before.iter().map(|b| b.to_vec()).collect::<Vec<_>>());
    }
}

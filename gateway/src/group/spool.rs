//! Where a group object waits until it is verified. The group hashes the whole stored object
//! (its BLAKE3 hash in ADICT), so a read knows it is the right one only at its last byte: the
//! object goes into a spool (memory up to [`MEMORY_LIMIT`], past it a temporary file), and the
//! application gets bytes from the spool only after the group's `get` returned Ok. A put's
//! body is spooled too, so that an aborted put can be sent again.

use bytes::Bytes;
use s3s::dto::StreamingBlob;
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::sync::Arc;
use tempfile::NamedTempFile;
use tokio::sync::mpsc;

/// Bytes a spool keeps in memory; a longer object goes to a temporary file.
pub(crate) const MEMORY_LIMIT: usize = 8 << 20;
/// Bytes of a spooled file read at once into a response body.
const BODY_CHUNK: usize = 1 << 20;

/// A spool being written.
pub(crate) struct Spool {
    memory: Vec<u8>,
    file: Option<NamedTempFile>,
    len: u64,
    limit: usize,
}

impl Spool {
    pub(crate) fn new() -> Spool {
        Spool::with_limit(MEMORY_LIMIT)
    }

    /// A spool that moves to a file past `limit` bytes.
    pub(crate) fn with_limit(limit: usize) -> Spool {
        Spool { memory: Vec::new(), file: None, len: 0, limit }
    }

    /// The bytes written, to be read.
    pub(crate) fn finish(self) -> std::io::Result<Spooled> {
        let kept = match self.file {
            Some(mut file) => {
                file.flush()?;
                Kept::File(file)
            }
            None => Kept::Memory(Bytes::from(self.memory)),
        };
        Ok(Spooled { kept, len: self.len })
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.file.is_none() && self.memory.len() + buf.len() > self.limit {
            let mut file = tempfile::Builder::new().prefix("vouch-gateway-").tempfile()?;
            file.write_all(&self.memory)?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        match &mut self.file {
            Some(file) => file.write_all(buf)?,
            None => self.memory.extend_from_slice(buf),
        }
        self.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

/// A finished spool.
pub(crate) struct Spooled {
    kept: Kept,
    len: u64,
}

enum Kept {
    Memory(Bytes),
    /// Removed when the last holder of the spool lets it go.
    File(NamedTempFile),
}

impl Spooled {
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// A reader of bytes `range` of its own (several may read at once, and a put reads again
    /// for each attempt).
    pub(crate) fn reader(&self, range: Range<u64>) -> std::io::Result<Box<dyn Read + Send>> {
        let range = range.start.min(self.len)..range.end.min(self.len);
        match &self.kept {
            Kept::Memory(bytes) => Ok(Box::new(std::io::Cursor::new(bytes.slice(in_memory(range)?)))),
            Kept::File(file) => {
                let mut file = file.reopen()?;
                file.seek(SeekFrom::Start(range.start))?;
                Ok(Box::new(file.take(range.end - range.start)))
            }
        }
    }

    /// Bytes `range`, in memory (for a short stretch such as an object's tail).
    pub(crate) fn read(&self, range: Range<u64>) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.reader(range)?.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Bytes `range` as a response body: from memory at once, from a file a chunk at a time
    /// on a blocking thread (which holds the spool, and so its file, until the body ends).
    pub(crate) fn body(self: Arc<Self>, range: Range<u64>) -> std::io::Result<StreamingBlob> {
        if let Kept::Memory(bytes) = &self.kept {
            let range = in_memory(range.start.min(self.len)..range.end.min(self.len))?;
            let chunk = bytes.slice(range);
            return Ok(StreamingBlob::wrap(futures::stream::iter([Ok::<_, std::io::Error>(chunk)])));
        }
        let mut reader = self.reader(range)?;
        let (tx, mut rx) = mpsc::channel::<std::io::Result<Bytes>>(2);
        tokio::task::spawn_blocking(move || {
            let _spool = self;
            loop {
                let mut chunk = Vec::with_capacity(BODY_CHUNK);
                let read = (&mut reader).take(BODY_CHUNK as u64).read_to_end(&mut chunk).map(|_| Bytes::from(chunk));
                let end = matches!(&read, Ok(chunk) if chunk.is_empty());
                let failed = read.is_err();
                // The application went away, the body is over, or the file failed: stop.
                if end || tx.blocking_send(read).is_err() || failed {
                    return;
                }
            }
        });
        Ok(StreamingBlob::wrap(futures::stream::poll_fn(move |cx| rx.poll_recv(cx))))
    }
}

/// A range of a spool kept in memory (whose length fits in memory) as indices.
fn in_memory(range: Range<u64>) -> std::io::Result<Range<usize>> {
    let index = |at: u64| usize::try_from(at).map_err(std::io::Error::other);
    Ok(index(range.start)?..index(range.end)?)
}

/// A writer that keeps only the last `keep` bytes of what goes through it, and counts all:
/// for a read that needs an object's length and metadata (at its end), not its body.
pub(crate) struct Tail {
    kept: Vec<u8>,
    keep: usize,
    len: u64,
}

impl Tail {
    pub(crate) fn new(keep: usize) -> Tail {
        Tail { kept: Vec::new(), keep, len: 0 }
    }

    /// Every byte's count, and the last `keep` bytes (all of them when fewer).
    pub(crate) fn finish(mut self) -> (u64, Vec<u8>) {
        let cut = self.kept.len().saturating_sub(self.keep);
        self.kept.drain(..cut);
        (self.len, self.kept)
    }
}

impl Write for Tail {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.kept.extend_from_slice(buf);
        // Trimmed once twice over: amortised, each byte moves a bounded number of times.
        if self.kept.len() > 2 * self.keep {
            let cut = self.kept.len() - self.keep;
            self.kept.drain(..cut);
        }
        self.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    async fn body_of(spooled: &Arc<Spooled>, range: Range<u64>) -> Vec<u8> {
        let chunks: Vec<Bytes> = spooled.clone().body(range).unwrap().try_collect().await.unwrap();
        chunks.concat()
    }

    #[tokio::test]
    async fn a_spool_reads_back_what_was_written_from_memory_or_a_file() {
        let data = sample(3 * BODY_CHUNK + 17);
        // Under the limit: memory; past it (written in pieces, across the limit): a file.
        for limit in [usize::MAX, 1000] {
            let mut spool = Spool::with_limit(limit);
            for piece in data.chunks(777) {
                spool.write_all(piece).unwrap();
            }
            let on_file = spool.file.is_some();
            assert_eq!(on_file, limit == 1000, "limit {limit}");
            let spooled = Arc::new(spool.finish().unwrap());
            assert_eq!(spooled.len(), data.len() as u64);
            assert_eq!(spooled.read(0..data.len() as u64).unwrap(), data);
            assert_eq!(spooled.read(10..20).unwrap(), &data[10..20]);
            // Past the end: cut at the end, never an error or made-up bytes.
            assert_eq!(spooled.read(data.len() as u64 - 3..u64::MAX).unwrap(), &data[data.len() - 3..]);
            // Two readers at once, each from its own place.
            let (mut a, mut b) = (spooled.reader(0..5).unwrap(), spooled.reader(100..105).unwrap());
            let (mut x, mut y) = (Vec::new(), Vec::new());
            b.read_to_end(&mut y).unwrap();
            a.read_to_end(&mut x).unwrap();
            assert_eq!((x.as_slice(), y.as_slice()), (&data[..5], &data[100..105]));
            assert_eq!(body_of(&spooled, 0..data.len() as u64).await, data);
            assert_eq!(body_of(&spooled, 5..BODY_CHUNK as u64 + 9).await, &data[5..BODY_CHUNK + 9]);
            assert!(body_of(&spooled, 8..8).await.is_empty());
        }
    }

    #[test]
    fn a_tail_keeps_the_last_bytes_and_counts_all() {
        let data = sample(100_000);
        let mut tail = Tail::new(1000);
        for piece in data.chunks(333) {
            tail.write_all(piece).unwrap();
        }
        assert_eq!(tail.finish(), (100_000, data[99_000..].to_vec()));
        let mut short = Tail::new(1000);
        short.write_all(&data[..10]).unwrap();
        assert_eq!(short.finish(), (10, data[..10].to_vec()));
    }
}

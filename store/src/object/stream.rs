//! Objects written and read as streams: a long value (VICOS's `cos-put` and `cos-get`,
//! paper 003 Sec. 4.3: "cos-put and cos-get actually stream long values") goes through the
//! provider a part at a time, never whole in its memory.
//!
//! What is safe to try again is (the start of a read, a write whose parts have not gone yet:
//! [`super::retry`]); what is not fails with an error that says so: a write whose parts have
//! gone (the writer no longer holds them), a read whose first bytes have been handed out.
//! A read that stalls midway is given up after the store's deadline.

use super::ObjectBlobs;
use crate::StoreError;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};

/// Bytes of one part of a multipart upload: above S3's 5 MiB minimum, and what a writer holds
/// before it sends (an object smaller than this goes up as one plain put).
const PART_BYTES: usize = 8 << 20;
/// Parts of one upload in flight at once (back pressure on the writer beyond).
const PARTS_IN_FLIGHT: usize = 2;

/// An object written as its bytes arrive. Nothing is visible under its key before
/// [`BlobWriter::finish`], and a writer abandoned ([`BlobWriter::abort`], or dropped) leaves
/// nothing visible: a local store deletes its staging file; an S3 store is told to abort the
/// upload on `abort` (a bucket's lifecycle rule reaps the parts of one merely dropped).
/// A writer holds at most [`PART_BYTES`] plus the parts in flight in memory.
pub struct BlobWriter {
    blobs: ObjectBlobs,
    key: String,
    path: Path,
    /// Bytes not yet handed to an upload, and how many.
    held: Vec<Bytes>,
    held_len: usize,
    /// The multipart upload, started once the object outgrows one part.
    upload: Option<WriteMultipart>,
    /// Bytes handed to the upload so far.
    sent: u64,
}

impl std::fmt::Debug for BlobWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobWriter").field("key", &self.key).field("multipart", &self.upload.is_some()).finish()
    }
}

impl ObjectBlobs {
    /// Starts writing the object `key` (replacing any object there once finished).
    pub fn writer(&self, key: &str) -> Result<BlobWriter, StoreError> {
        let path = self.path(key)?;
        let (blobs, key) = (self.clone(), key.to_string());
        Ok(BlobWriter { blobs, key, path, held: Vec::new(), held_len: 0, upload: None, sent: 0 })
    }

    /// The object `key` as a stream of its bytes, in order; [`StoreError::NotFound`] (before
    /// any byte) when there is none. An error in the middle ends the stream, and so does a
    /// stall longer than the deadline ([`StoreError::TimedOut`]).
    pub async fn get_stream(&self, key: &str) -> Result<BoxStream<'static, Result<Bytes, StoreError>>, StoreError> {
        let path = &self.path(key)?;
        let open = move || async move { self.inner.get(path).await.map_err(|e| self.err(key, e)) };
        let got = self.retried(key, open).await?;
        let (blobs, key) = (self.clone(), key.to_string());
        let body = Some(got.into_stream());
        Ok(futures::stream::unfold(body, move |body| {
            let (blobs, key) = (blobs.clone(), key.clone());
            async move {
                let mut body = body?;
                match tokio::time::timeout(blobs.patience.deadline, body.next()).await {
                    Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some(body))),
                    Ok(Some(Err(e))) => Some((Err(blobs.err(&key, e)), None)),
                    Ok(None) => None,
                    Err(_) => Some((Err(blobs.timed_out(&key)), None)),
                }
            }
        })
        .boxed())
    }
}

impl BlobWriter {
    /// Appends `bytes`; waits while the parts in flight are at their bound.
    pub async fn write(&mut self, bytes: Bytes) -> Result<(), StoreError> {
        self.held_len += bytes.len();
        self.held.push(bytes);
        if self.held_len < PART_BYTES {
            return Ok(());
        }
        if self.upload.is_none() {
            // Nothing has gone yet: a start that failed is safe to make again.
            let (blobs, path, key) = (&self.blobs, &self.path, self.key.as_str());
            let start = move || async move { blobs.inner.put_multipart(path).await.map_err(|e| blobs.err(key, e)) };
            let upload = self.blobs.retried(key, start).await?;
            self.upload = Some(WriteMultipart::new_with_chunk_size(upload, PART_BYTES));
        }
        let upload = self.upload.as_mut().expect("started above");
        let (blobs, key) = (&self.blobs, self.key.as_str());
        let room = async { upload.wait_for_capacity(PARTS_IN_FLIGHT).await.map_err(|e| blobs.err(key, e)) };
        let waited = blobs.within(key, room).await;
        waited.map_err(|e| interrupted(e, self.sent))?;
        for part in self.held.drain(..) {
            self.sent += part.len() as u64;
            upload.put(part);
        }
        self.held_len = 0;
        Ok(())
    }

    /// Makes the object visible, whole and durable (as [`crate::BlobStore::put`] does).
    pub async fn finish(mut self) -> Result<(), StoreError> {
        let held = std::mem::take(&mut self.held);
        let (blobs, key) = (self.blobs.clone(), self.key.clone());
        match self.upload.take() {
            // Held whole: a put safe to make again.
            None => blobs.put_whole(&self.path, &key, held.into_iter().collect::<PutPayload>()).await,
            Some(mut upload) => {
                let sent = self.sent + held.iter().map(|part| part.len() as u64).sum::<u64>();
                held.into_iter().for_each(|part| upload.put(part));
                let done = async { upload.finish().await.map_err(|e| blobs.err(&key, e)) };
                blobs.within(&key, done).await.map_err(|e| interrupted(e, sent))?;
                blobs.make_durable(&key).await
            }
        }
    }

    /// Abandons the object: nothing becomes visible under its key.
    pub async fn abort(mut self) -> Result<(), StoreError> {
        match self.upload.take() {
            None => Ok(()),
            Some(upload) => {
                let (blobs, key) = (&self.blobs, self.key.as_str());
                blobs.within(key, async { upload.abort().await.map_err(|e| blobs.err(key, e)) }).await
            }
        }
    }
}

/// The failure of a streamed write after `sent` bytes had gone: not tried again, since the
/// writer no longer holds them, and said so (the caller writes the object again).
fn interrupted(e: StoreError, sent: u64) -> StoreError {
    let why = |detail: String| {
        format!("{detail} (a streamed write, {sent} bytes sent: not tried again; write the object again)")
    };
    match e {
        StoreError::Backend { at, detail } => StoreError::Backend { at, detail: why(detail) },
        StoreError::Unreachable { endpoint, detail } => StoreError::Unreachable { endpoint, detail: why(detail) },
        StoreError::TimedOut { at, detail } => StoreError::TimedOut { at, detail: why(detail) },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BlobStore;
    use futures::TryStreamExt;

    async fn read_all(blobs: &ObjectBlobs, key: &str) -> Vec<u8> {
        let parts: Vec<Bytes> = blobs.get_stream(key).await.unwrap().try_collect().await.unwrap();
        parts.concat()
    }

    #[tokio::test]
    async fn objects_written_as_streams_read_back_whole_and_abandoned_ones_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = ObjectBlobs::local(dir.path()).unwrap();
        // Small (one plain put) and large (a multipart upload of several parts, the last short).
        for (key, len) in [("s/small", 1000usize), ("s/large", 2 * PART_BYTES + 12345)] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut writer = blobs.writer(key).unwrap();
            for piece in data.chunks(1 << 20) {
                writer.write(Bytes::copy_from_slice(piece)).await.unwrap();
            }
            writer.finish().await.unwrap();
            assert_eq!(read_all(&blobs, key).await, data, "{key}");
        }
        for len in [10, PART_BYTES + 1] {
            let mut writer = blobs.writer("s/abandoned").unwrap();
            writer.write(Bytes::from(vec![1; len])).await.unwrap();
            writer.abort().await.unwrap();
        }
        let mut dropped = blobs.writer("s/dropped").unwrap();
        dropped.write(Bytes::from(vec![1; PART_BYTES + 1])).await.unwrap();
        drop(dropped);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert_eq!(blobs.list("s").await.unwrap(), vec!["s/large".to_string(), "s/small".to_string()]);
        assert!(matches!(blobs.get_stream("s/missing").await, Err(StoreError::NotFound { .. })));
        assert!(matches!(blobs.writer("s/../x"), Err(StoreError::InvalidKey { .. })));
    }
}

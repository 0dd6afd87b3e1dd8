//! A blob store that fails when told to: a decorator over any object store, which is how
//! crash and fault tests stop the store at a chosen point (as redb's crash tests wrap their
//! storage backend). Production types carry no fault hooks; a test wraps the backend
//! ([`crate::ObjectBlobs::with_faults`]) and arms the [`Faults`] it shares with it.
//!
//! A failed put writes nothing (the object store's puts are atomic), so a put that fails
//! stands for the process dying just before it: what came before is stored, nothing after.
//! A garbled put stores its bytes in another order: a backend (or a provider) that keeps the
//! data, not what was written.

use async_trait::async_trait;
use futures::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, Result,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Which keys' puts are garbled.
type KeyFilter = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// What a wrapped store refuses or garbles; shared between the test and the store it wraps.
pub struct Faults {
    /// Puts that still succeed; every put after them fails.
    puts_left: AtomicU64,
    /// Puts made so far.
    puts: AtomicU64,
    deletes_fail: AtomicBool,
    garbled: Mutex<Option<KeyFilter>>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults")
            .field("puts_left", &self.puts_left)
            .field("puts", &self.puts)
            .field("deletes_fail", &self.deletes_fail)
            .finish_non_exhaustive()
    }
}

impl Faults {
    /// Faults that refuse nothing until armed.
    pub fn new() -> Arc<Faults> {
        Arc::new(Faults {
            puts_left: AtomicU64::new(u64::MAX),
            puts: AtomicU64::new(0),
            deletes_fail: false.into(),
            garbled: Mutex::new(None),
        })
    }

    /// The next `n` puts succeed and every one after them fails, until [`Faults::heal`].
    pub fn fail_puts_after(&self, n: u64) {
        self.puts_left.store(n, Ordering::SeqCst);
    }

    /// Every delete fails while `on`.
    pub fn fail_deletes(&self, on: bool) {
        self.deletes_fail.store(on, Ordering::SeqCst);
    }

    /// From now on, every put whose key `matching` accepts stores its 8-byte words in the
    /// reverse order (the same bytes, the same size, not where they were written).
    pub fn garble_puts(&self, matching: impl Fn(&str) -> bool + Send + Sync + 'static) {
        *self.garbled.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(matching));
    }

    /// Refuses and garbles nothing again.
    pub fn heal(&self) {
        self.fail_puts_after(u64::MAX);
        self.fail_deletes(false);
        *self.garbled.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Puts made through the wrapped store so far, failed ones included.
    pub fn puts(&self) -> u64 {
        self.puts.load(Ordering::SeqCst)
    }

    fn put(&self, location: &Path) -> Result<()> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        let allowed = self.puts_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| match left {
            u64::MAX => Some(u64::MAX),
            0 => None,
            left => Some(left - 1),
        });
        allowed.map(|_| ()).map_err(|_| refused("put", location))
    }

    /// `payload` as stored under `location`: garbled when the key matches.
    fn stored(&self, location: &Path, payload: PutPayload) -> PutPayload {
        let garbled = self.garbled.lock().unwrap_or_else(|e| e.into_inner());
        match garbled.as_ref() {
            Some(matching) if matching(location.as_ref()) => {
                let bytes: Vec<u8> = payload.into_iter().flat_map(|part| part.to_vec()).collect();
                let mut words: Vec<&[u8]> = bytes.chunks(8).collect();
                words.reverse();
                PutPayload::from(words.concat())
            }
            _ => payload,
        }
    }

    fn delete(&self, location: &Path) -> Result<()> {
        match self.deletes_fail.load(Ordering::SeqCst) {
            true => Err(refused("delete", location)),
            false => Ok(()),
        }
    }
}

fn refused(what: &str, location: &Path) -> object_store::Error {
    object_store::Error::Generic {
        store: "faulty",
        source: format!("{what} of {location} refused (test fault)").into(),
    }
}

/// `inner` behind `faults`.
#[derive(Debug)]
pub(crate) struct Faulty {
    pub(crate) inner: Arc<dyn ObjectStore>,
    pub(crate) faults: Arc<Faults>,
}

impl std::fmt::Display for Faulty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Faulty {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.faults.put(location)?;
        let payload = self.faults.stored(location, payload);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.faults.put(location)?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let faults = self.faults.clone();
        let checked = locations.map(move |location| {
            let location = location?;
            faults.delete(&location)?;
            Ok(location)
        });
        self.inner.delete_stream(checked.boxed())
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.faults.put(to)?;
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlobStore, ObjectBlobs};

    #[tokio::test]
    async fn armed_faults_fail_puts_and_deletes_and_garble_what_they_match() {
        let dir = tempfile::tempdir().unwrap();
        let faults = Faults::new();
        let blobs = ObjectBlobs::local(dir.path()).unwrap().with_faults(faults.clone());
        faults.fail_puts_after(1);
        blobs.put("a", vec![1u8; 8].into()).await.unwrap();
        assert!(blobs.put("b", vec![2u8; 8].into()).await.is_err(), "the second put fails");
        assert!(blobs.get("b").await.is_err(), "and stores nothing");
        faults.fail_deletes(true);
        assert!(blobs.delete("a").await.is_err());
        assert_eq!(blobs.get("a").await.unwrap().as_ref(), [1u8; 8]);
        faults.heal();
        faults.garble_puts(|key| key.starts_with("g"));
        let words: Vec<u8> = (0..16).collect();
        blobs.put("garbled", words.clone().into()).await.unwrap();
        blobs.put("kept", words.clone().into()).await.unwrap();
        let garbled = blobs.get("garbled").await.unwrap();
        assert_eq!(garbled[..8], words[8..]);
        assert_eq!(garbled[8..], words[..8]);
        assert_eq!(blobs.get("kept").await.unwrap().as_ref(), words.as_slice());
        faults.heal();
        blobs.delete("a").await.unwrap();
        assert_eq!(faults.puts(), 4);
    }
}

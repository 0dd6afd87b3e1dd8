//! A blob store that fails when told to: a decorator over any object store, which is how
//! crash and fault tests stop the store at a chosen point (as redb's crash tests wrap their
//! storage backend). Production types carry no fault hooks; a test wraps the backend
//! ([`crate::ObjectBlobs::with_faults`]) and arms the [`Faults`] it shares with it.
//!
//! A failed put writes nothing (the object store's puts are atomic), so a put that fails
//! stands for the process dying just before it: what came before is stored, nothing after.

use async_trait::async_trait;
use futures::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, Result,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// What a wrapped store refuses; shared between the test and the store it wraps.
#[derive(Debug)]
pub struct Faults {
    /// Puts that still succeed; every put after them fails.
    puts_left: AtomicU64,
    /// Puts made so far.
    puts: AtomicU64,
    deletes_fail: AtomicBool,
}

impl Faults {
    /// Faults that refuse nothing until armed.
    pub fn new() -> Arc<Faults> {
        Arc::new(Faults { puts_left: AtomicU64::new(u64::MAX), puts: AtomicU64::new(0), deletes_fail: false.into() })
    }

    /// The next `n` puts succeed and every one after them fails, until [`Faults::heal`].
    pub fn fail_puts_after(&self, n: u64) {
        self.puts_left.store(n, Ordering::SeqCst);
    }

    /// Every delete fails while `on`.
    pub fn fail_deletes(&self, on: bool) {
        self.deletes_fail.store(on, Ordering::SeqCst);
    }

    /// Refuses nothing again.
    pub fn heal(&self) {
        self.fail_puts_after(u64::MAX);
        self.fail_deletes(false);
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

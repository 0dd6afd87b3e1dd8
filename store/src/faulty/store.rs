//! [`Faulty`]: an object store behind [`Faults`], each of its calls counted and struck as armed.

use super::{Call, Fault, Faults};
use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, Extensions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
    UploadPart,
};
use std::sync::Arc;

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

/// A transient failure, as a backend's 503 reads.
fn unavailable(call: Call, location: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "faulty",
        source: format!("{call:?} of {location}: 503 Service Unavailable (test fault)").into(),
    }
}

/// A full device, as the local file system reports it.
fn full(call: Call, location: &str) -> object_store::Error {
    let io = std::io::Error::new(
        std::io::ErrorKind::StorageFull,
        format!("{call:?} of {location}: no space left on device (test fault)"),
    );
    object_store::Error::Generic { store: "faulty", source: Box::new(io) }
}

/// What a call cut short by [`Fault::Partial`] fails with, after doing part of its work.
fn cut(call: Call, location: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "faulty",
        source: format!("{call:?} of {location}: connection reset midway (test fault)").into(),
    }
}

/// What `fault` does before the call reaches the backend: a pause, a hang, a failure. `true`
/// for [`Fault::Partial`], which the call does itself (it alone knows what half of it is).
async fn enter(fault: Option<Fault>, call: Call, location: &str) -> Result<bool> {
    match fault {
        None => Ok(false),
        Some(Fault::Slow(pause)) => {
            tokio::time::sleep(pause).await;
            Ok(false)
        }
        Some(Fault::Timeout) => futures::future::pending().await,
        Some(Fault::Error) => Err(unavailable(call, location)),
        Some(Fault::Full) => Err(full(call, location)),
        Some(Fault::Partial) => Ok(true),
    }
}

/// The first half of `bytes`: what a torn write leaves.
fn half(bytes: &Bytes) -> Bytes {
    bytes.slice(..bytes.len() / 2)
}

fn concat(payload: &PutPayload) -> Bytes {
    payload.iter().flat_map(|part| part.iter().copied()).collect::<Vec<u8>>().into()
}

/// `got` with its body broken off halfway: the first half of its bytes, then an error.
fn broken(got: GetResult, call: Call, location: &Path) -> GetResult {
    let GetResult { payload, meta, range, attributes, extensions } = got;
    let mut keep = (range.end - range.start) / 2;
    let body = match payload {
        GetResultPayload::Stream(body) => body,
        file => GetResult {
            payload: file,
            meta: meta.clone(),
            range: range.clone(),
            attributes: Attributes::new(),
            extensions: Extensions::new(),
        }
        .into_stream(),
    };
    let head = body.scan((), move |_, chunk| {
        let next = match chunk {
            Ok(_) if keep == 0 => None,
            Ok(bytes) => {
                let n = keep.min(bytes.len() as u64);
                keep -= n;
                Some(Ok(bytes.slice(..n as usize)))
            }
            Err(e) => Some(Err(e)),
        };
        futures::future::ready(next)
    });
    let error = cut(call, location.as_ref());
    let payload = GetResultPayload::Stream(head.chain(stream::once(async move { Err(error) })).boxed());
    GetResult { payload, meta, range, attributes, extensions }
}

#[async_trait]
impl ObjectStore for Faulty {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.faults.put(location)?;
        let partial = enter(self.faults.strike(Call::Put), Call::Put, location.as_ref()).await?;
        let payload = self.faults.stored(location, payload);
        if partial {
            self.inner.put_opts(location, half(&concat(&payload)).into(), opts).await?;
            return Err(cut(Call::Put, location.as_ref()));
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.faults.put(location)?;
        let fault = self.faults.strike(Call::Multipart);
        let upload = self.inner.put_multipart_opts(location, opts).await?;
        Ok(match fault {
            None => upload,
            Some(fault) => Box::new(FaultyUpload {
                upload,
                fault,
                first: None,
                inner: self.inner.clone(),
                location: location.clone(),
            }),
        })
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let call = match (options.head, &options.range) {
            (true, _) => Call::Head,
            (false, Some(_)) => Call::GetRange,
            (false, None) => Call::Get,
        };
        let partial = enter(self.faults.strike(call), call, location.as_ref()).await?;
        let got = self.inner.get_opts(location, options).await?;
        match (partial, call) {
            (false, _) => Ok(got),
            (true, Call::Head) => Err(cut(call, location.as_ref())),
            (true, _) => Ok(broken(got, call, location)),
        }
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let (faults, inner) = (self.faults.clone(), self.inner.clone());
        let checked = locations.then(move |location| {
            let (faults, inner) = (faults.clone(), inner.clone());
            async move {
                let location = location?;
                faults.delete(&location)?;
                if enter(faults.strike(Call::Delete), Call::Delete, location.as_ref()).await? {
                    // Deleted, and the answer lost on its way back.
                    match inner.delete(&location).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(e),
                    }
                    return Err(cut(Call::Delete, location.as_ref()));
                }
                Ok(location)
            }
        });
        self.inner.delete_stream(checked.boxed())
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let fault = self.faults.strike(Call::List);
        let listing = self.inner.list(prefix);
        let at = prefix.map_or_else(String::new, |p| p.to_string());
        stream::once(async move {
            match enter(fault, Call::List, &at).await {
                Ok(false) => listing,
                Ok(true) => listing.take(1).chain(stream::once(async move { Err(cut(Call::List, &at)) })).boxed(),
                Err(e) => stream::once(async move { Err(e) }).boxed(),
            }
        })
        .flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let at = prefix.map_or_else(String::new, |p| p.to_string());
        if enter(self.faults.strike(Call::List), Call::List, &at).await? {
            return Err(cut(Call::List, &at));
        }
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.faults.put(to)?;
        if enter(self.faults.strike(Call::Copy), Call::Copy, to.as_ref()).await? {
            let bytes = self.inner.get(from).await?.bytes().await?;
            self.inner.put(to, half(&bytes).into()).await?;
            return Err(cut(Call::Copy, to.as_ref()));
        }
        self.inner.copy_opts(from, to, options).await
    }
}

/// A multipart upload a fault strikes when it completes.
#[derive(Debug)]
struct FaultyUpload {
    upload: Box<dyn MultipartUpload>,
    fault: Fault,
    /// The first part sent: what a torn completion leaves under the key.
    first: Option<PutPayload>,
    inner: Arc<dyn ObjectStore>,
    location: Path,
}

#[async_trait]
impl MultipartUpload for FaultyUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        if self.first.is_none() {
            self.first = Some(data.clone());
        }
        self.upload.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        if !enter(Some(self.fault), Call::Multipart, self.location.as_ref()).await? {
            return self.upload.complete().await;
        }
        self.upload.abort().await?;
        self.inner.put(&self.location, self.first.take().unwrap_or_default()).await?;
        Err(cut(Call::Multipart, self.location.as_ref()))
    }

    async fn abort(&mut self) -> Result<()> {
        self.upload.abort().await
    }
}

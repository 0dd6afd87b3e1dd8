//! A pass-through S3 proxy, the bound beside the gateway's figures: the gateway's S3 layer
//! (s3s, with the same SigV4 and payload checks) forwarding each PUT and GET to the raw
//! backend, with no verification, no tags and no provider in between. On one machine, where
//! the clients, the portal and the S3 server share the cores, no portal that sits in the data
//! path can move bytes faster than this; the gateway's distance from it is what verifying
//! costs, and the proxy's distance from raw is what the extra hop costs.

use bytes::Bytes;
use futures::StreamExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use s3s::auth::SimpleAuth;
use s3s::dto::{ETag, GetObjectInput, GetObjectOutput, PutObjectInput, PutObjectOutput, StreamingBlob};
use s3s::service::S3ServiceBuilder;
use s3s::{s3_error, S3Request, S3Response, S3Result, S3};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The proxy: keys of any bucket go to `store` under `prefix`.
struct Proxy {
    store: Arc<dyn ObjectStore>,
    prefix: String,
}

impl Proxy {
    fn key(&self, key: &str) -> Key {
        Key::from(format!("{}{key}", self.prefix))
    }
}

/// The backend's ETag (quoted on the wire) as s3s takes it.
fn strong(etag: &str) -> ETag {
    ETag::Strong(etag.trim_matches('"').to_string())
}

fn backend_error(e: object_store::Error) -> s3s::S3Error {
    match e {
        object_store::Error::NotFound { .. } => s3_error!(NoSuchKey),
        e => s3_error!(InternalError, "the backend: {e}"),
    }
}

#[async_trait::async_trait]
impl S3 for Proxy {
    async fn put_object(&self, req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        let input = req.input;
        let mut body = input.body.ok_or_else(|| s3_error!(IncompleteBody))?;
        // The body's chunks, forwarded as they are (no copy into one buffer).
        let mut chunks: Vec<Bytes> = Vec::new();
        while let Some(chunk) = body.next().await {
            chunks.push(chunk.map_err(|e| s3_error!(IncompleteBody, "{e}"))?);
        }
        let put = self.store.put(&self.key(&input.key), PutPayload::from_iter(chunks)).await.map_err(backend_error)?;
        Ok(S3Response::new(PutObjectOutput { e_tag: put.e_tag.as_deref().map(strong), ..Default::default() }))
    }

    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        let got = self.store.get(&self.key(&req.input.key)).await.map_err(backend_error)?;
        let (len, e_tag) = (got.meta.size, got.meta.e_tag.as_deref().map(strong));
        // Forwarded chunk by chunk through a small channel, as the gateway's own bodies are.
        let (tx, mut rx) = tokio::sync::mpsc::channel(8);
        let mut chunks = got.into_stream();
        tokio::spawn(async move {
            while let Some(chunk) = chunks.next().await {
                let failed = chunk.is_err();
                if tx.send(chunk.map_err(std::io::Error::other)).await.is_err() || failed {
                    return;
                }
            }
        });
        let body = StreamingBlob::wrap(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
        Ok(S3Response::new(GetObjectOutput {
            body: Some(body),
            content_length: Some(len as i64),
            e_tag,
            ..Default::default()
        }))
    }
}

/// A proxy serving on a loopback port of its own until the runtime ends, answering to the
/// access key `access_key` / `secret_key`; its address.
pub(crate) async fn start(
    store: Arc<dyn ObjectStore>,
    prefix: String,
    access_key: &str,
    secret_key: &str,
) -> std::io::Result<SocketAddr> {
    let mut auth = SimpleAuth::new();
    auth.register(access_key.to_string(), secret_key.to_string().into());
    let mut builder = S3ServiceBuilder::new(Proxy { store, prefix });
    builder.set_auth(auth);
    let service = builder.build();
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            let handler = move |req: hyper::Request<Incoming>| {
                let service = service.clone();
                async move {
                    let answer = service.call(req.map(s3s::Body::from)).await;
                    Ok::<_, Infallible>(answer.unwrap_or_else(|_| {
                        let mut failed = hyper::Response::new(s3s::Body::empty());
                        *failed.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
                        failed
                    }))
                }
            };
            tokio::spawn(async move {
                let io = TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service_fn(handler)).await;
            });
        }
    });
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    #[test]
    fn the_proxy_forwards_puts_and_gets_and_refuses_a_wrong_key() {
        let rt = crate::measure::runtime().unwrap();
        rt.block_on(async {
            let backend: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let addr = start(backend.clone(), "under/".into(), "AK", "SK-secret").await.unwrap();
            vouch_proto::tls::install_provider();
            let client = |secret: &str| {
                object_store::aws::AmazonS3Builder::new()
                    .with_endpoint(format!("http://{addr}"))
                    .with_allow_http(true)
                    .with_region("us-east-1")
                    .with_bucket_name("bench")
                    .with_access_key_id("AK")
                    .with_secret_access_key(secret)
                    .build()
                    .unwrap()
            };
            let (proxied, body) = (client("SK-secret"), Bytes::from(vec![7u8; 300_000]));
            proxied.put(&Key::from("k"), body.clone().into()).await.unwrap();
            let stored = backend.get(&Key::from("under/k")).await.unwrap().bytes().await.unwrap();
            assert_eq!(stored, body, "kept under the prefix, as sent");
            assert_eq!(proxied.get(&Key::from("k")).await.unwrap().bytes().await.unwrap(), body);
            let missing = proxied.get(&Key::from("nothing")).await;
            assert!(matches!(missing, Err(object_store::Error::NotFound { .. })), "{missing:?}");
            let forged = client("another secret").put(&Key::from("k2"), body.into()).await;
            assert!(forged.is_err() && backend.head(&Key::from("under/k2")).await.is_err());
        });
    }
}

//! A provider on loopback, a vouch client of it, and the gateway in front: what the
//! gateway's tests talk to, as an application would.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;
use vouch_client::Client;
use vouch_gateway::{AccessKey, GatewayConfig, RunningGateway};
use vouch_misbehave::{Misbehave, Misbehaving};
use vouch_server::{Blocks, RunningServer, ServeOptions};
use vouch_testkit::provider::{self, TOKEN};

pub const ACCESS_KEY: &str = "test-app";
pub const SECRET_KEY: &str = "test-app-secret";

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub server: Option<RunningServer<Misbehaving>>,
    pub gateway: Option<RunningGateway>,
    pub client: Arc<Client>,
    pub config: GatewayConfig,
}

/// The gateway's configuration: loopback, any port, the test's key.
pub fn config() -> GatewayConfig {
    GatewayConfig::new("127.0.0.1:0", vec![AccessKey { access_key: ACCESS_KEY.into(), secret_key: SECRET_KEY.into() }])
}

async fn provider(data: &std::path::Path, blocks: &Blocks, misbehave: Misbehave) -> RunningServer<Misbehaving> {
    provider::start(data, blocks, misbehave, ServeOptions::default(), provider::ALICE).await
}

impl Harness {
    /// A gateway over an honest provider, with `buckets` made.
    pub async fn new(buckets: &[&str]) -> Harness {
        Harness::lying(Misbehave::None, buckets).await
    }

    /// A gateway over a provider that behaves as `misbehave` says, with `buckets` made.
    pub async fn lying(misbehave: Misbehave, buckets: &[&str]) -> Harness {
        Harness::on(Blocks::Local, misbehave, buckets).await
    }

    /// A gateway over an honest provider whose blobs are in `blocks` (e.g. a MinIO bucket).
    pub async fn on(blocks: Blocks, misbehave: Misbehave, buckets: &[&str]) -> Harness {
        Harness::configured(blocks, misbehave, buckets, config()).await
    }

    /// A gateway configured as `config` says.
    pub async fn configured(blocks: Blocks, misbehave: Misbehave, buckets: &[&str], config: GatewayConfig) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let server = provider(&dir.path().join("provider"), &blocks, misbehave).await;
        let state = dir.path().join("client");
        Client::init(&state, &format!("http://{}", server.addr), TOKEN).unwrap();
        let client = Arc::new(Client::open(&state).unwrap());
        let gateway = vouch_gateway::start(&config, client.clone()).await.unwrap();
        let harness = Harness { dir, server: Some(server), gateway: Some(gateway), client, config };
        for bucket in buckets {
            harness.make_bucket(bucket).await;
        }
        harness
    }

    /// Stops the gateway and its client, and starts both again over the same state, on the
    /// same port (so that an application's handles still reach it).
    pub async fn restart_gateway(&mut self) {
        let old = self.gateway.take().unwrap();
        let listen = old.addr.to_string();
        old.shutdown().await;
        let state = self.dir.path().join("client");
        self.client = Arc::new(Client::open(&state).unwrap());
        let config = GatewayConfig { listen, metrics_listen: None, ..self.config.clone() };
        self.gateway = Some(vouch_gateway::start(&config, self.client.clone()).await.unwrap());
    }

    /// Stops the provider, lets `damage` work on its blob store, and starts it again (and the
    /// gateway and its client, which name its new port).
    pub async fn restart_provider(&mut self, damage: impl AsyncFnOnce(&vouch_store::ObjectBlobs)) {
        self.server.take().unwrap().shutdown().await.unwrap();
        let data = self.dir.path().join("provider");
        damage(&vouch_store::ObjectBlobs::local(&data.join("blobs")).unwrap()).await;
        let server = provider(&data, &Blocks::Local, Misbehave::None).await;
        let config = format!("server = \"http://{}\"\n", server.addr);
        std::fs::write(self.dir.path().join("client").join("config.toml"), config).unwrap();
        self.server = Some(server);
        self.restart_gateway().await;
    }

    /// Makes a bucket the way `CreateBucket` does (object_store has no call for it).
    pub async fn make_bucket(&self, bucket: &str) {
        let empty = std::io::Cursor::new(Vec::new());
        self.client.put(&vouch_gateway::names::bucket_name(bucket), empty, None, |_| {}).await.unwrap();
    }

    pub fn endpoint(&self) -> String {
        let scheme = if self.config.tls_cert.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.gateway.as_ref().unwrap().addr)
    }

    /// An object_store client of `bucket` through the gateway, signing with `secret`.
    pub fn store_with(&self, bucket: &str, secret: &str) -> object_store::aws::AmazonS3 {
        vouch_proto::tls::install_provider();
        object_store::aws::AmazonS3Builder::new()
            // The tests check bytes, not latency (`vouch bench gateway` measures that): a put
            // queued behind many writers of one key may take longer than the default 30 s
            // on a slow machine, and is no error. (Set first: it replaces every client option.)
            .with_client_options(object_store::ClientOptions::new().with_timeout(std::time::Duration::from_secs(600)))
            .with_endpoint(self.endpoint())
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_bucket_name(bucket)
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(secret)
            .with_retry(object_store::RetryConfig { max_retries: 0, ..Default::default() })
            .build()
            .unwrap()
    }

    pub fn store(&self, bucket: &str) -> object_store::aws::AmazonS3 {
        self.store_with(bucket, SECRET_KEY)
    }
}

/// An answer to a raw request: its status, headers and body.
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Answer {
    /// The S3 error code its body names (empty when none).
    pub fn code(&self) -> &str {
        self.body.split_once("<Code>").and_then(|(_, rest)| rest.split_once("</Code>")).map_or("", |(code, _)| code)
    }

    /// The value of the header `name` (empty when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
    }
}

impl Harness {
    /// A URL for `method` on the raw `path` (`"box"` a bucket, `"box/key"` an object) with
    /// `query`, presigned for `expires` by object_store (which has no call for most of what the
    /// tests ask); headers sent with it are not signed.
    pub async fn presigned(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, &str)],
        expires: std::time::Duration,
    ) -> String {
        presign(&self.endpoint(), method, path, query, expires).await
    }

    /// `method` on `path` with `query` (signed) and `headers`, with no body.
    pub async fn raw(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Answer {
        self.raw_with(method, path, query, headers, Vec::new()).await
    }

    /// `method` on `path` with `query` (signed), `headers` and `body`.
    pub async fn raw_with(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Answer {
        let url = self.presigned(method.clone(), path, query, std::time::Duration::from_secs(300)).await;
        vouch_proto::tls::install_provider();
        let mut request = reqwest::Client::new().request(method, url).body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        answer(request).await
    }
}

/// What `request` gets.
pub async fn answer(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    Answer { status, headers, body: response.text().await.unwrap() }
}

pub use vouch_testkit::sample;

/// A URL for `method` on the raw `path` of the gateway at `endpoint`, with `query`, presigned
/// for `expires` with the test's access key by object_store.
#[allow(dead_code)] // not every test binary presigns
pub async fn presign(
    endpoint: &str,
    method: reqwest::Method,
    path: &str,
    query: &[(&str, &str)],
    expires: std::time::Duration,
) -> String {
    use object_store::signer::{SignedUrlOptions, Signer};
    vouch_proto::tls::install_provider();
    // Virtual-hosted style with the bare endpoint: the URL's path is `path` itself.
    let signer = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_virtual_hosted_style_request(true)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name("unused")
        .with_access_key_id(ACCESS_KEY)
        .with_secret_access_key(SECRET_KEY)
        .build()
        .unwrap();
    let options = SignedUrlOptions::default().with_query(query.iter().copied());
    let path = object_store::path::Path::from(path);
    signer.signed_url_opts(method, &path, expires, &options).await.unwrap().to_string()
}

/// A PUT of the presigned `url` to the gateway at `addr` with `headers` and a body of `len`
/// bytes sent as `body` says: each piece after its pause. The answer's status and body.
pub async fn put_slowly(
    addr: std::net::SocketAddr,
    url: &str,
    headers: &[(&str, &str)],
    len: usize,
    body: tokio::sync::mpsc::Receiver<(Duration, Vec<u8>)>,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = reqwest::Url::parse(url).unwrap();
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut from, mut to) = stream.into_split();
    let host = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let mut head = format!(
        "PUT {}?{} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len}\r\nConnection: close\r\n",
        url.path(),
        url.query().unwrap_or_default()
    );
    for (name, value) in headers {
        head += &format!("{name}: {value}\r\n");
    }
    head += "\r\n";
    to.write_all(head.as_bytes()).await.unwrap();
    let sender = tokio::spawn(async move {
        let mut body = body;
        while let Some((pause, piece)) = body.recv().await {
            tokio::time::sleep(pause).await;
            // The gateway may have answered and closed already.
            if to.write_all(&piece).await.is_err() {
                return;
            }
        }
        // The connection stays open for the answer (a half-closed one is dropped by hyper).
        std::future::pending::<()>().await;
        drop(to);
    });
    let mut answer = Vec::new();
    let _ = from.read_to_end(&mut answer).await;
    sender.abort();
    let answer = String::from_utf8_lossy(&answer).to_string();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer)
}

/// The body pieces of a trickle: `piece` bytes every `every`, `len` in all.
pub fn trickle(len: usize, piece: usize, every: Duration) -> tokio::sync::mpsc::Receiver<(Duration, Vec<u8>)> {
    let (tx, rx) = tokio::sync::mpsc::channel(len / piece + 1);
    for _ in 0..len / piece {
        tx.try_send((every, vec![b'x'; piece])).unwrap();
    }
    rx
}

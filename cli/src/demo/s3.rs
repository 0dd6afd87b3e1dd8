//! The gateway in the demo: an S3 endpoint on the user's side, serving the demo client's
//! files to an unchanged S3 client (the demo's own, over HTTP, signing as any SDK does), which
//! puts, lists and gets verified objects; then the provider behind the gateway lies, and the
//! lie reaches the S3 client as the S3 error `VouchIntegrityViolation`, never as data.

use super::{sample_seeded, Lie, Story, World};
use crate::output::human;
use anyhow::{anyhow, Context};
use futures::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{path::Path as Key, ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;
use vouch_gateway::{AccessKey, GatewayConfig, RunningGateway};
use vouch_misbehave::Misbehave;

const ACCESS_KEY: &str = "demo-app";
const BUCKET: &str = "photos";
/// The S3 error a lie caught behind the gateway shows as.
const CAUGHT_AS: &str = "VouchIntegrityViolation";

pub(super) async fn show(world: &mut World, story: &mut Story) -> anyhow::Result<()> {
    story.system("gateway", "an S3 endpoint on your side: unchanged S3 clients get verified data or an error");
    world.provider(Misbehave::None).await?;
    let secret = base16ct::lower::encode_string(&rand::random::<[u8; 16]>());
    let mut gateway = start(world, &secret, "127.0.0.1:0").await?;
    let endpoint = format!("http://{}", gateway.addr);
    story.step("gateway", format!("S3 on {endpoint}, serving the demo client's namespace (nothing cached)"));
    create_bucket(&endpoint, &secret).await?;
    let s3 = s3_client(&endpoint, &secret)?;
    let photo = sample_seeded(300_000, 11);
    let key = Key::from("cat.jpg");
    s3.put(&key, PutPayload::from(photo.clone())).await.context("an S3 PUT through the gateway")?;
    let listed: Vec<String> =
        s3.list(None).map_ok(|o| o.location.to_string()).try_collect().await.context("an S3 listing")?;
    let back = s3.get(&key).await.context("an S3 GET")?.bytes().await.context("an S3 GET's body")?;
    if back != photo {
        return Err(anyhow!("the S3 GET through the gateway read back other bytes"));
    }
    story.step(
        "s3",
        format!(
            "CreateBucket {BUCKET}, PUT cat.jpg ({}), ListObjectsV2 {listed:?}, GET verified and byte-exact",
            human(photo.len() as u64)
        ),
    );

    let lies = [
        (Misbehave::CorruptBlock, "corrupt-block behind the gateway", "GET"),
        (Misbehave::HideFile, "hide-file behind the gateway", "ListObjectsV2"),
    ];
    for (lie, name, op) in lies {
        gateway.shutdown().await;
        world.provider(lie).await?;
        gateway = start(world, &secret, &gateway_addr(&endpoint)).await?;
        // A new S3 client: the last one's connections went with the gateway stopped.
        let s3 = s3_client(&endpoint, &secret)?;
        let answer = match op {
            "GET" => match s3.get(&key).await {
                Ok(got) => got.bytes().await.map(|_| ()),
                Err(e) => Err(e),
            },
            _ => s3.list(None).try_collect::<Vec<_>>().await.map(|_| ()),
        };
        story.lie(s3_verdict(name, op, answer));
    }
    gateway.shutdown().await;
    Ok(())
}

/// The gateway over a fresh client of the demo's state, on `listen`.
async fn start(world: &World, secret: &str, listen: &str) -> anyhow::Result<RunningGateway> {
    let keys = vec![AccessKey { access_key: ACCESS_KEY.into(), secret_key: secret.into() }];
    // Nothing cached: every GET goes to the provider, so its lies reach the gateway's checks.
    let config = GatewayConfig { cache_mb: 0, ..GatewayConfig::new(listen, keys) };
    let client = Arc::new(world.client()?);
    vouch_gateway::start(&config, client).await.with_context(|| format!("starting the gateway on {listen}"))
}

fn gateway_addr(endpoint: &str) -> String {
    endpoint.trim_start_matches("http://").to_string()
}

fn s3_client(endpoint: &str, secret: &str) -> anyhow::Result<AmazonS3> {
    vouch_proto::tls::install_provider();
    AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name(BUCKET)
        .with_access_key_id(ACCESS_KEY)
        .with_secret_access_key(secret)
        // A lie is answered at once; retrying it would only print it later.
        .with_retry(object_store::RetryConfig { max_retries: 0, ..Default::default() })
        .build()
        .context("the demo's S3 client")
}

/// CreateBucket, presigned by the S3 client's signer (it has no call of its own for it).
async fn create_bucket(endpoint: &str, secret: &str) -> anyhow::Result<()> {
    use object_store::signer::Signer;
    vouch_proto::tls::install_provider();
    // Virtual-hosted style over the bare endpoint: the URL's path is the bucket's name.
    let signer = AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_virtual_hosted_style_request(true)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name(BUCKET)
        .with_access_key_id(ACCESS_KEY)
        .with_secret_access_key(secret)
        .build()?;
    let url = signer.signed_url(http::Method::PUT, &Key::from(BUCKET), std::time::Duration::from_secs(60)).await?;
    let answer = reqwest::Client::new().put(url.as_str()).send().await.context("CreateBucket")?;
    match answer.status().is_success() {
        true => Ok(()),
        false => Err(anyhow!("CreateBucket: {} {}", answer.status(), answer.text().await.unwrap_or_default())),
    }
}

/// How the S3 client fared against a lie that should reach it as `VouchIntegrityViolation`.
fn s3_verdict(lie: &str, op: &str, answer: Result<(), object_store::Error>) -> Lie {
    let (caught, how) = match &answer {
        Err(e) if e.to_string().contains(CAUGHT_AS) => (true, format!("{op}: HTTP 502 {CAUGHT_AS}, no data")),
        Err(e) => (false, format!("{op}: another error than {CAUGHT_AS}: {e}")),
        Ok(()) => (false, format!("{op}: answered as if true")),
    };
    Lie { system: "", lie: lie.into(), caught, expected: CAUGHT_AS, violation: caught.then_some(CAUGHT_AS), how }
}

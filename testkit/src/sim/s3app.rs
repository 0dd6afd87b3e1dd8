//! The S3 application of a run: SigV4-signed requests handed to the real gateway's service
//! in-process ([`vouch_gateway::in_process`]), answered whole.

use super::model::Model;
use crate::crash::s3::S3;
use bytes::Bytes;
use vouch_gateway::{AccessKey, GatewayConfig, InProcessGateway};

pub(super) const OBJECTS: [&str; 3] = ["o0", "o1", "dir/o2"];
const BUCKET: &str = "sim";
const ACCESS: (&str, &str) = ("SIMACCESSKEY", "sim-secret-key-of-the-simulator");

/// The gateway, the S3 application's signer, and the truth of the objects.
pub(super) struct S3App {
    gateway: InProcessGateway,
    signer: S3,
    pub(super) model: Model,
}

/// How an S3 request ended, as the invariants see it.
pub(super) enum Answer {
    Ok(Bytes),
    NoSuchKey,
    Violation(String),
    /// An outage, or a body broken off midway: the application has no answer.
    Fault(String),
}

impl S3App {
    /// The gateway over `client`, its bucket made (while the adversary waits).
    pub(super) async fn new(client: std::sync::Arc<vouch_client::Client>) -> Result<S3App, String> {
        let key = AccessKey { access_key: ACCESS.0.into(), secret_key: ACCESS.1.into() };
        let config = GatewayConfig { keep_replaced_secs: 0, ..GatewayConfig::new("127.0.0.1:0", vec![key]) };
        let gateway = vouch_gateway::in_process(&config, client);
        let signer = S3 { host: "gateway.sim".into(), access_key: ACCESS.0.into(), secret_key: ACCESS.1.into() };
        let app = S3App { gateway, signer, model: Model::default() };
        match app.request("PUT", None, &[], Vec::new()).await {
            Answer::Ok(_) => Ok(app),
            Answer::NoSuchKey => Err("making the bucket: no such key".into()),
            Answer::Violation(e) | Answer::Fault(e) => Err(format!("making the bucket: {e}")),
        }
    }

    pub(super) async fn request(
        &self,
        method: &str,
        key: Option<&str>,
        query: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Answer {
        let path = match key {
            Some(key) => format!("/{BUCKET}/{key}"),
            None => format!("/{BUCKET}"),
        };
        let (target, headers) = self.signer.signed(method, &path, query, &body);
        let mut request = http::Request::builder().method(method).uri(target);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request = request.header("content-length", body.len()).body(Bytes::from(body));
        let Ok(request) = request else { return Answer::Fault("an S3 request of invalid parts".into()) };
        let (head, body, broke) = self.gateway.call(request).await;
        let text = || String::from_utf8_lossy(&body).into_owned();
        let code = text().split("<Code>").nth(1).and_then(|rest| rest.split("</Code>").next()).map(str::to_string);
        match (head.status.as_u16(), code.as_deref()) {
            (_, _) if broke => Answer::Fault(format!("{method} {path}: the body broke off after its headers")),
            (200..=299, _) => Answer::Ok(body),
            (404, Some("NoSuchKey")) => Answer::NoSuchKey,
            (_, Some(vouch_gateway::errors::VIOLATION_CODE)) => Answer::Violation(text()),
            (status, _) => Answer::Fault(format!("{method} {path}: HTTP {status}: {}", text())),
        }
    }
}

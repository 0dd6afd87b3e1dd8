//! Real S3 applications, unchanged, against the gateway: boto3 (`clients/boto3_ops.py`,
//! every operation with the checksums current SDKs send by default, multipart uploads,
//! presigned URLs), the aws CLI (`clients/aws_cli.sh`), rclone (`clients/rclone.sh`) and the
//! backup tool restic (`clients/restic.sh`). Each runs against a gateway whose provider keeps
//! its blocks on its local disk, and all of them in turn against one whose provider keeps them
//! in S3 (MinIO). The project's `scripts/s3-clients.sh` installs them when missing.

use crate::common;

use common::{config, Harness, ACCESS_KEY, SECRET_KEY};
use vouch_gateway::GatewayConfig;
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;

/// Runs `<program> clients/<script> ENDPOINT KEY SECRET [MORE]` off the runtime; panics with
/// its output when it fails.
async fn run(program: &str, script: &str, endpoint: String, more: &[&str]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients").join(script);
    let output = tokio::process::Command::new(program)
        .arg(path)
        .args([endpoint.as_str(), ACCESS_KEY, SECRET_KEY])
        .args(more)
        .output()
        .await
        .expect("the client runs (scripts/s3-clients.sh installs boto3 and the aws CLI)");
    assert!(
        output.status.success(),
        "{script} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_does_every_operation_through_the_gateway() {
    let h = Harness::new(&[]).await;
    run("python3", "boto3_ops.py", h.endpoint(), &[]).await;
}

/// Over https, botocore sends streamed bodies' checksums as aws-chunked trailers, which the
/// gateway reads after the body and checks before it commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_does_every_operation_over_tls_with_checksums_in_trailers() {
    let pem = tempfile::tempdir().unwrap();
    let (cert, key) = vouch_proto::tls::self_signed(&["127.0.0.1".into()]).unwrap();
    let (cert_path, key_path) = (pem.path().join("cert.pem"), pem.path().join("key.pem"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let config = GatewayConfig { tls_cert: Some(cert_path.clone()), tls_key: Some(key_path), ..config() };
    let h = Harness::configured(Blocks::Local, Misbehave::None, &[], config).await;
    assert!(h.endpoint().starts_with("https://"));
    run("python3", "boto3_ops.py", h.endpoint(), &[cert_path.to_str().unwrap()]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aws_cli_copies_up_and_down_through_the_gateway() {
    let h = Harness::new(&[]).await;
    run("bash", "aws_cli.sh", h.endpoint(), &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rclone_copies_checks_and_purges_through_the_gateway() {
    let h = Harness::new(&[]).await;
    run("bash", "rclone.sh", h.endpoint(), &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restic_backs_up_checks_restores_and_prunes_through_the_gateway() {
    let h = Harness::new(&[]).await;
    run("bash", "restic.sh", h.endpoint(), &[]).await;
}

/// The same tools, one after another, through a gateway whose provider keeps its blocks in S3
/// (the aws CLI's run with 20 MB and 100 files: the same calls, less to move twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_runs_through_a_gateway_whose_provider_is_on_s3() {
    let minio = vouch_testkit::minio::Minio::start();
    let h = Harness::on(Blocks::S3(minio.config.clone()), Misbehave::None, &[]).await;
    run("python3", "boto3_ops.py", h.endpoint(), &[]).await;
    run("bash", "aws_cli.sh", h.endpoint(), &["20000000", "100"]).await;
    run("bash", "rclone.sh", h.endpoint(), &[]).await;
    run("bash", "restic.sh", h.endpoint(), &[]).await;
}

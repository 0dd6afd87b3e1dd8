//! Real S3 applications, unchanged, against the gateway: boto3 (`clients/boto3_ops.py`,
//! every operation with the checksums current SDKs send by default, multipart uploads,
//! presigned URLs), the aws CLI (`clients/aws_cli.sh`) and rclone (`clients/rclone.sh`). The
//! project's `scripts/s3-clients.sh` installs them when missing.

mod common;

use common::{Harness, ACCESS_KEY, SECRET_KEY};

/// Runs `<program> clients/<script> ENDPOINT KEY SECRET` off the runtime; panics with its
/// output when it fails.
async fn run(program: &str, script: &str, endpoint: String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients").join(script);
    let output = tokio::process::Command::new(program)
        .arg(path)
        .args([endpoint.as_str(), ACCESS_KEY, SECRET_KEY])
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
    run("python3", "boto3_ops.py", h.endpoint()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aws_cli_copies_up_and_down_through_the_gateway() {
    let h = Harness::new(&[]).await;
    run("bash", "aws_cli.sh", h.endpoint()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rclone_copies_checks_and_purges_through_the_gateway() {
    let h = Harness::new(&[]).await;
    run("bash", "rclone.sh", h.endpoint()).await;
}

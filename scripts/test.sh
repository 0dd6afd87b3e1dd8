#!/usr/bin/env bash
# Runs every test of the workspace. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
# The S3 backend's tests run against a real MinIO that they start themselves; build it first
# (about 5 minutes on a fresh machine, reused afterwards) so that wait is visible here.
scripts/minio.sh install >/dev/null
# The gateway's tests drive real S3 applications (boto3, the aws CLI).
scripts/s3-clients.sh
cargo test --workspace --locked --all-targets
# Every decoder of untrusted bytes under libFuzzer, briefly, from the committed corpus.
scripts/fuzz.sh 10

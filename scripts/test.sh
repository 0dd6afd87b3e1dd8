#!/usr/bin/env bash
# Runs every test of the workspace. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
# The S3 backend's tests run against a real MinIO that they start themselves; build it first
# (about 5 minutes on a fresh machine, reused afterwards) so that wait is visible here.
scripts/minio.sh install >/dev/null
# The gateway's tests drive real S3 applications (boto3, the aws CLI).
scripts/s3-clients.sh
# Every decoder of untrusted bytes also replays the committed fuzz corpus here (the
# `fuzz_corpus` tests); `scripts/fuzz.sh` runs libFuzzer over them on a nightly toolchain.
# Arguments go to cargo test (`--no-run` builds the tests only).
cargo test --workspace --locked --all-targets "$@"

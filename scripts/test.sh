#!/usr/bin/env bash
# Runs every test of the workspace. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked --all-targets
# Every decoder of untrusted bytes under libFuzzer, briefly, from the committed corpus.
scripts/fuzz.sh 10

#!/usr/bin/env bash
# Runs every cargo-fuzz target for a few seconds, starting from the committed corpus.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 15)
# Needs a nightly toolchain (libFuzzer instrumentation); installs cargo-fuzz when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-15}"
if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz: no nightly toolchain on this machine; cargo-fuzz cannot instrument. The corpus replay in 'cargo test' still ran." >&2
  exit 0
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked --quiet
cd fuzz
# One unoptimised build of every target (a smoke run of seconds needs no optimiser, and the
# build is most of the time), then the targets run on it, as many at once as there are cores
# (each runs on one).
cargo +nightly fuzz build --dev
fuzz_one() {
  local target="$1" scratch log
  scratch="$(mktemp -d)"
  log="$(mktemp)"
  if ! cargo +nightly fuzz run --dev "$target" "$scratch" "corpus/$target" -- -max_total_time="$seconds" -rss_limit_mb=2048 >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $target FAILED (crashing input under fuzz/artifacts/$target)" >&2
    touch "$failures/$target"
    return 1
  fi
  echo "fuzz: $target for ${seconds}s: $(grep -E "^Done [0-9]+ runs" "$log")"
  rm -rf "$scratch" "$log"
}
at_once="$(nproc 2>/dev/null || echo 1)"
failures="$(mktemp -d)"
for target in $(cargo +nightly fuzz list); do
  while [ "$(jobs -rp | wc -l)" -ge "$at_once" ]; do
    wait -n || true
  done
  fuzz_one "$target" &
done
wait
if [ -n "$(ls -A "$failures")" ]; then
  echo "fuzz: failed: $(ls "$failures" | tr '\n' ' ')" >&2
  exit 1
fi
rm -rf "$failures"

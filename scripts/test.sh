#!/usr/bin/env bash
# Runs every test of the workspace. This is the README's test command; .ci/run calls it.
#
#   scripts/test.sh            # build every test binary, then run them, two at a time
#   scripts/test.sh --build FILE   # build them, and list them in FILE, without running them
#   scripts/test.sh --run FILE     # run the binaries FILE lists, without cargo (.ci/run
#                                  # lints beside them, holding cargo's lock on target/)
#   scripts/test.sh ARGS...    # plain `cargo test --workspace --all-targets ARGS...`
#                              # (`--no-run` builds them only; `-- FILTER` runs some)
set -euo pipefail
cd "$(dirname "$0")/.."
# The S3 backend's tests run against a real MinIO that they start themselves; build it first
# (about 5 minutes on a fresh machine, reused afterwards) so that wait is visible here.
scripts/minio.sh install >/dev/null
# The gateway's tests drive real S3 applications (boto3, the aws CLI).
scripts/s3-clients.sh
# The report page's test renders it in a headless browser.
scripts/browser.sh >/dev/null
# Every decoder of untrusted bytes also replays the committed fuzz corpus here (the
# `fuzz_corpus` tests); `scripts/fuzz.sh` runs libFuzzer over them on a nightly toolchain.
mode=all list=
case "${1:-}" in
  --build | --run) mode=${1#--} list=${2:?"scripts/test.sh $1 FILE"} ;;
  "") ;;
  *) exec cargo test --workspace --locked --all-targets "$@" ;;
esac

# `cargo test` runs its test binaries one after another, and most of them wait on sockets,
# processes and MinIO much of the time: one core idles. They run here as many at a time as
# there are cores, the longest first, each in its package's directory as cargo would run
# it, with its output printed whole when it ends.
lanes=$(nproc)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
if [[ $mode == run ]]; then
  cp "$list" "$logs/binaries"
else
  cargo test --workspace --locked --all-targets --no-run --message-format=json-render-diagnostics \
    | python3 scripts/test_binaries.py >"$logs/binaries"
  if [[ $mode == build ]]; then
    cp "$logs/binaries" "$list"
    exit 0
  fi
fi

run_one() {
  local logs=$1 dir=$2 exe=$3 name=$4 status=0 log
  log=$(mktemp "$logs/run.XXXXXX")
  local started=$SECONDS
  (cd "$dir" && "$exe") >"$log" 2>&1 || status=$?
  {
    flock 9
    echo "     Running $name: ${exe##*/} ($((SECONDS - started)) s)"
    cat "$log"
    [[ $status -eq 0 ]] || echo "test.sh: $name failed (exit $status)" >&2
  } 9>>"$logs/print.lock"
  return "$status"
}
export -f run_one

status=0
tr '\n' '\0' <"$logs/binaries" \
  | xargs -0 -P "$lanes" -I{} bash -c 'IFS=$'"'\t'"' read -r dir exe name <<<"$2"; run_one "$1" "$dir" "$exe" "$name"' _ "$logs" {} \
  || status=$?
cat "$logs"/run.* | awk -v binaries="$(wc -l <"$logs/binaries")" '
  /^test result:/ { for (i = 1; i < NF; i++) { n = $i + 0; w = $(i + 1); sub(/[;,]$/, "", w)
    if (w == "passed") p += n; if (w == "failed") f += n; if (w == "ignored") g += n } }
  END { printf "test.sh: %d test binaries: %d passed, %d failed, %d ignored\n", binaries, p, f, g }'
exit "$status"

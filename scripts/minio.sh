#!/usr/bin/env bash
# A throwaway local MinIO server for the S3 storage backend tests.
#
#   scripts/minio.sh install     # build minio with `go install` if it is missing; prints its path
#   scripts/minio.sh start DIR   # serve DIR/data on a free 127.0.0.1 port with an empty bucket `vouch`;
#                                # prints `export VOUCH_S3_*=...`
#   scripts/minio.sh stop DIR    # stop the server started in DIR (idempotent)
#
# Typical use:
#   dir=$(mktemp -d); eval "$(scripts/minio.sh start "$dir")"; cargo test ...; scripts/minio.sh stop "$dir"
#
# Needs only Go (the Go module proxy), curl and python3. Listens on loopback only.
set -euo pipefail

ACCESS_KEY=vouchtest
SECRET_KEY=vouchtest-secret-123

die() { echo "minio.sh: $*" >&2; exit 1; }

install() {
  local bin
  if bin=$(command -v minio); then echo "$bin"; return; fi
  bin="$(go env GOPATH)/bin/minio"
  if [[ ! -x $bin ]]; then
    echo "minio.sh: building minio with 'go install github.com/minio/minio@latest' (about 5 minutes the first time)..." >&2
    GOBIN="$(dirname "$bin")" go install github.com/minio/minio@latest >&2
  fi
  echo "$bin"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local dir=$1 bin port console pid i code
  bin=$(install)
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  if [[ -f $dir/minio.pid ]] && kill -0 "$(cat "$dir/minio.pid")" 2>/dev/null; then
    die "a server is already running from $dir (pid $(cat "$dir/minio.pid")); stop it first"
  fi
  port=$(free_port)
  console=$(free_port)
  while [[ $console == "$port" ]]; do console=$(free_port); done
  MINIO_ROOT_USER=$ACCESS_KEY MINIO_ROOT_PASSWORD=$SECRET_KEY MINIO_BROWSER=off \
    nohup "$bin" server "$dir/data" --address "127.0.0.1:$port" --console-address "127.0.0.1:$console" \
    >"$dir/minio.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/minio.pid"
  for ((i = 0; i < 120; i++)); do
    # Live is not yet ready under load (S3 calls may answer 503 for a while): the bucket's
    # creation is retried with the health check; 409 means an earlier try already made it.
    code=000
    if curl -sf -o /dev/null "http://127.0.0.1:$port/minio/health/live"; then
      code=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" \
        --user "$ACCESS_KEY:$SECRET_KEY" -X PUT "http://127.0.0.1:$port/vouch" || true)
    fi
    if [[ $code == 200 || $code == 409 ]]; then
      echo "export VOUCH_S3_ENDPOINT=http://127.0.0.1:$port"
      echo "export VOUCH_S3_BUCKET=vouch"
      echo "export VOUCH_S3_ACCESS_KEY=$ACCESS_KEY"
      echo "export VOUCH_S3_SECRET_KEY=$SECRET_KEY"
      echo "export VOUCH_S3_REGION=us-east-1"
      return
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  tail -n 30 "$dir/minio.log" >&2 || true
  stop "$dir"
  die "minio did not become healthy or could not create the bucket on 127.0.0.1:$port (last answer $code; log: $dir/minio.log)"
}

stop() {
  local dir=$1 pid i
  [[ -f $dir/minio.pid ]] || return 0
  pid=$(cat "$dir/minio.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/minio.pid"
}

case "${1:-}" in
  install) install ;;
  start) [[ $# -eq 2 ]] || die "usage: $0 start DIR"; start "$2" ;;
  stop) [[ $# -eq 2 ]] || die "usage: $0 stop DIR"; stop "$2" ;;
  *) die "usage: $0 install | start DIR | stop DIR" ;;
esac

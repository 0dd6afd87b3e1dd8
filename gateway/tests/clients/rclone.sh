#!/usr/bin/env bash
# rclone against the vouch gateway: make a bucket, copy a tree up (one file multipart), check
# it (sizes and MD5s), copy it back, sync a tree up (twice, with changes) and back, list,
# delete, purge. Usage: rclone.sh ENDPOINT KEY SECRET.
set -euo pipefail
export RCLONE_CONFIG=/dev/null
export RCLONE_CONFIG_GW_TYPE=s3 RCLONE_CONFIG_GW_PROVIDER=Other RCLONE_CONFIG_GW_ENDPOINT=$1
export RCLONE_CONFIG_GW_ACCESS_KEY_ID=$2 RCLONE_CONFIG_GW_SECRET_ACCESS_KEY=$3 RCLONE_CONFIG_GW_REGION=us-east-1
export RCLONE_CONFIG_GW_FORCE_PATH_STYLE=true
# (AWS_CA_BUNDLE, if the machine sets one, trips rclone's S3 client; the gateway here is plain HTTP.)
rc() { env -u AWS_CA_BUNDLE rclone --retries 1 --low-level-retries 1 "$@"; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src/sub"
for i in 1 2 3; do head -c $((i * 10000)) /dev/urandom > "$dir/src/file$i"; done
head -c 12000000 /dev/urandom > "$dir/src/sub/big"
rc mkdir gw:rcl
rc copy --s3-upload-cutoff 5M --s3-chunk-size 5M "$dir/src" gw:rcl/data
rc check "$dir/src" gw:rcl/data
rc copy gw:rcl/data "$dir/back"
diff -r "$dir/src" "$dir/back"
[[ $(rc lsf -R gw:rcl/data | sort | tr '\n' ' ') == "file1 file2 file3 sub/ sub/big " ]] || { rc lsf -R gw:rcl/data >&2; exit 1; }
# A tree synced up, changed, synced again (deletions too), and synced back: byte-identical.
for i in $(seq 1 60); do mkdir -p "$dir/tree/d$((i % 6))"; head -c $((i * 101)) /dev/urandom > "$dir/tree/d$((i % 6))/f$i"; done
rc sync "$dir/tree" gw:rcl/tree
rm "$dir/tree/d1/f1"; head -c 7000 /dev/urandom > "$dir/tree/d2/f2"; echo new > "$dir/tree/d3/new"
rc sync "$dir/tree" gw:rcl/tree
rc check "$dir/tree" gw:rcl/tree
rc sync gw:rcl/tree "$dir/tree-back"
diff -r "$dir/tree" "$dir/tree-back"
rc deletefile gw:rcl/data/file2
[[ $(rc lsf gw:rcl/data | sort | tr '\n' ' ') == "file1 file3 sub/ " ]] || { rc lsf gw:rcl/data >&2; exit 1; }
rc purge gw:rcl
if rc lsd gw: | grep -q " rcl$"; then echo "purged, yet listed" >&2; exit 1; fi
echo "rclone: copy, check, copy back, sync both ways, list, delete, purge as S3 says"

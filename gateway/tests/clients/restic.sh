#!/usr/bin/env bash
# restic, a backup tool that keeps its repository in S3, against the vouch gateway: init,
# backup a tree, a full check that reads every pack back, restore (byte-identical), a second
# backup after changes, forget and prune, and a check again. Usage: restic.sh ENDPOINT KEY SECRET.
set -euo pipefail
endpoint=$1
export AWS_ACCESS_KEY_ID=$2 AWS_SECRET_ACCESS_KEY=$3 AWS_DEFAULT_REGION=us-east-1
export RESTIC_PASSWORD="a restic repository password" RESTIC_REPOSITORY="s3:$endpoint/restic/repo"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export RESTIC_CACHE_DIR=$dir/cache
# The S3 client restic uses picks path style on a plain IP endpoint, and is told so anyway.
r() { env -u AWS_CA_BUNDLE restic -o s3.bucket-lookup=path -q "$@"; }
mkdir -p "$dir/data/docs" "$dir/data/photos"
for i in $(seq 1 40); do head -c $((i * 997)) /dev/urandom > "$dir/data/docs/note$i.txt"; done
head -c 6000000 /dev/urandom > "$dir/data/photos/big.raw"
r init
r backup "$dir/data"
r check --read-data
r restore latest --target "$dir/restored"
diff -r "$dir/data" "$dir/restored$dir/data"
# Changes, a second snapshot; the first one forgotten and its data pruned.
rm "$dir/data/docs/note1.txt"
head -c 3000000 /dev/urandom > "$dir/data/photos/big.raw"
echo "added" > "$dir/data/docs/new.txt"
r backup "$dir/data"
[[ $(r snapshots --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') == 2 ]]
r forget --keep-last 1 --prune
[[ $(r snapshots --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') == 1 ]]
r check --read-data
rm -rf "$dir/restored"
r restore latest --target "$dir/restored"
diff -r "$dir/data" "$dir/restored$dir/data"
echo "restic: init, backup, check --read-data, restore, forget --prune, check again as S3 says"

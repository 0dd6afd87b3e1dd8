#!/usr/bin/env bash
# The aws CLI against the vouch gateway: make a bucket, copy a 50 MB file up (multipart, 8 MiB
# parts) and back, copy it server-side (UploadPartCopy past 8 MiB), sync a tree of a few
# hundred files up and back (and again after changes, with --delete), s3api head-object and
# list-object-versions, a presigned GET, list, remove.
# Usage: aws_cli.sh ENDPOINT ACCESS_KEY SECRET_KEY [BYTES FILES] (50 MB and 300 files by default).
set -euo pipefail
endpoint=$1 size=${4:-50000000} files=${5:-300}
export AWS_ACCESS_KEY_ID=$2 AWS_SECRET_ACCESS_KEY=$3 AWS_DEFAULT_REGION=us-east-1
export AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_MAX_ATTEMPTS=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# SigV4 for presigned URLs too (the CLI may sign them with SigV2, which the gateway refuses).
printf '[default]\ns3 =\n    signature_version = s3v4\n' > "$dir/config"
export AWS_CONFIG_FILE=$dir/config
s3() { aws --endpoint-url "$endpoint" s3 "$@"; }
s3api() { aws --endpoint-url "$endpoint" s3api "$@"; }
head -c "$size" /dev/urandom > "$dir/big"
echo "small file" > "$dir/small.txt"
s3 mb s3://cli >/dev/null
s3 cp "$dir/big" s3://cli/data/big >/dev/null
s3 cp "$dir/small.txt" s3://cli/small.txt >/dev/null
# Server-side: the CLI copies an object over 8 MiB part by part (UploadPartCopy, ranges); the
# copy read back is the file sent (which checks the upload, the copy and the download).
s3 cp s3://cli/data/big s3://cli/data/copy >/dev/null
s3 cp s3://cli/data/copy "$dir/copied" >/dev/null
cmp "$dir/big" "$dir/copied"
s3 rm s3://cli/data/copy >/dev/null

# A tree of files in 10 folders, synced up and down; then changed and deleted files synced
# with --delete both ways.
for i in $(seq 1 "$files"); do
  mkdir -p "$dir/tree/d$((i % 10))"
  head -c $((i * 37)) /dev/urandom > "$dir/tree/d$((i % 10))/f$i"
done
s3 sync "$dir/tree" s3://cli/tree >/dev/null
s3 sync s3://cli/tree "$dir/tree-back" >/dev/null
diff -r "$dir/tree" "$dir/tree-back"
[[ $(s3 ls --recursive s3://cli/tree/ | wc -l) == "$files" ]] || { s3 ls --recursive s3://cli/tree/ | wc -l >&2; exit 1; }
rm "$dir/tree/d1/f1" "$dir/tree/d2/f2"
head -c 5000 /dev/urandom > "$dir/tree/d3/f3"
echo "new" > "$dir/tree/d4/new"
s3 sync --delete "$dir/tree" s3://cli/tree >/dev/null
s3 sync --delete s3://cli/tree "$dir/tree-back" >/dev/null
diff -r "$dir/tree" "$dir/tree-back"

# s3api: an object's head, and the versions tools list before they clean a bucket.
head=$(s3api head-object --bucket cli --key data/big)
python3 -c 'import json,sys; h=json.loads(sys.argv[1]); n=int(sys.argv[2]); assert h["ContentLength"] == n and h["ETag"].endswith("-%d\"" % -(-n // 8388608)), h' "$head" "$size"
versions=$(s3api list-object-versions --bucket cli --prefix tree/d4/)
python3 -c 'import json,sys; v=json.loads(sys.argv[1])["Versions"]; assert len(v) == int(sys.argv[2]) // 10 + 1 and all(x["VersionId"] == "null" and x["IsLatest"] for x in v), v' "$versions" "$files"
# A presigned GET, fetched by a plain HTTP client.
url=$(aws --endpoint-url "$endpoint" s3 presign s3://cli/small.txt --expires-in 60)
python3 -c 'import sys, urllib.request; assert urllib.request.urlopen(sys.argv[1]).read() == b"small file\n"' "$url"

listing=$(s3 ls --recursive s3://cli/)
grep -q "$size data/big" <<<"$listing" || { echo "listing: $listing" >&2; exit 1; }
grep -q "small.txt" <<<"$listing"
s3 rm s3://cli/data/big >/dev/null
if s3 ls s3://cli/data/ | grep -q big; then echo "removed, yet listed" >&2; exit 1; fi
echo "aws cli: mb, cp up, down and server-side (multipart), sync both ways, s3api, presign, ls, rm as S3 says"

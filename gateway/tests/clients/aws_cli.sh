#!/usr/bin/env bash
# The aws CLI against the vouch gateway: make a bucket, copy a file up (multipart, 8 MiB
# parts) and back, copy it server-side (UploadPartCopy past 8 MiB), list, remove.
# Usage: aws_cli.sh ENDPOINT ACCESS_KEY SECRET_KEY.
set -euo pipefail
endpoint=$1
export AWS_ACCESS_KEY_ID=$2 AWS_SECRET_ACCESS_KEY=$3 AWS_DEFAULT_REGION=us-east-1
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_MAX_ATTEMPTS=1
s3() { aws --endpoint-url "$endpoint" s3 "$@"; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
head -c 20000000 /dev/urandom > "$dir/big"
echo "small file" > "$dir/small.txt"
s3 mb s3://cli >/dev/null
s3 cp "$dir/big" s3://cli/data/big >/dev/null
s3 cp "$dir/small.txt" s3://cli/small.txt >/dev/null
s3 cp s3://cli/data/big "$dir/back" >/dev/null
cmp "$dir/big" "$dir/back"
# Server-side: the CLI copies an object over 8 MiB part by part (UploadPartCopy, ranges).
s3 cp s3://cli/data/big s3://cli/data/copy >/dev/null
s3 cp s3://cli/data/copy "$dir/copied" >/dev/null
cmp "$dir/big" "$dir/copied"
s3 rm s3://cli/data/copy >/dev/null
listing=$(s3 ls --recursive s3://cli/)
grep -q "20000000 data/big" <<<"$listing" || { echo "listing: $listing" >&2; exit 1; }
grep -q "small.txt" <<<"$listing"
s3 rm s3://cli/data/big >/dev/null
if s3 ls s3://cli/data/ | grep -q big; then echo "removed, yet listed" >&2; exit 1; fi
echo "aws cli: mb, cp up, down and server-side (multipart), ls, rm as S3 says"

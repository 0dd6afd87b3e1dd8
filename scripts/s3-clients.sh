#!/usr/bin/env bash
# The unchanged S3 applications the gateway's tests run against it, installed when missing:
# boto3 and the aws CLI from PyPI (with awscrt, which botocore needs for CRC32C and
# CRC64NVME checksums), and rclone and restic (a backup tool that keeps its repository in S3)
# from Debian's packages. Prints nothing when all are there.
set -euo pipefail

if ! python3 -c 'import boto3, awscrt' 2>/dev/null || ! command -v aws >/dev/null; then
  echo "s3-clients.sh: installing boto3, awscrt and the aws CLI with pip..." >&2
  python3 -m pip install --quiet --disable-pip-version-check boto3 awscrt awscli >&2
fi
missing=()
for tool in rclone restic; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if (( ${#missing[@]} )); then
  echo "s3-clients.sh: installing ${missing[*]} with apt-get..." >&2
  sudo=$([[ $(id -u) == 0 ]] || echo sudo)
  $sudo apt-get install -y -qq "${missing[@]}" >&2 \
    || { $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq "${missing[@]}" >&2; }
fi
python3 -c 'import boto3, awscrt' || { echo "s3-clients.sh: boto3 or awscrt did not install" >&2; exit 1; }
command -v aws >/dev/null || { echo "s3-clients.sh: the aws CLI did not install" >&2; exit 1; }
command -v rclone >/dev/null || { echo "s3-clients.sh: rclone did not install" >&2; exit 1; }
command -v restic >/dev/null || { echo "s3-clients.sh: restic did not install" >&2; exit 1; }

"""boto3 against the vouch gateway: every operation an application makes, with the checksums
current SDKs send by default. Usage: boto3_ops.py ENDPOINT ACCESS_KEY SECRET_KEY [CA_PEM].
Over https (CA_PEM: the gateway's certificate), botocore sends the checksums of streamed
bodies (PutObject, UploadPart) as aws-chunked trailers; the script checks that it did.
Exits non-zero (with the failed assertion) when anything is not as S3 says."""
import base64
import datetime
import hashlib
import io
import os
import ssl
import sys
import urllib.request
import zlib

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, key, secret = sys.argv[1:4]
ca = sys.argv[4] if len(sys.argv) > 4 else None
s3 = boto3.client(
    "s3",
    endpoint_url=endpoint,
    aws_access_key_id=key,
    aws_secret_access_key=secret,
    region_name="us-east-1",
    verify=ca if ca else True,
    # SigV4 for presigned URLs too: the gateway refuses SigV2, which boto3 may pick for them.
    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
)

# The checksums' location in each body-carrying request: a header, or a trailer.
trailers = []


def seen(request, **_):
    trailer = request.headers.get("x-amz-trailer")
    trailers.append(trailer.decode() if isinstance(trailer, bytes) else trailer)


s3.meta.events.register("before-send.s3.PutObject", seen)
s3.meta.events.register("before-send.s3.UploadPart", seen)


def error_code(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"]
    raise AssertionError("expected an error")


s3.create_bucket(Bucket="boto")
assert "boto" in [b["Name"] for b in s3.list_buckets()["Buckets"]]
assert error_code(lambda: s3.create_bucket(Bucket="boto")) == "BucketAlreadyOwnedByYou"
s3.head_bucket(Bucket="boto")

# A put with the SDK's default checksum, read back whole, in a range, and its checksum.
data = os.urandom(300_000)
put = s3.put_object(Bucket="boto", Key="dir/a.bin", Body=data)
assert put["ETag"].strip('"') == hashlib.md5(data).hexdigest(), put["ETag"]
got = s3.get_object(Bucket="boto", Key="dir/a.bin", ChecksumMode="ENABLED")
assert got["Body"].read() == data
assert got["ContentLength"] == len(data)
part = s3.get_object(Bucket="boto", Key="dir/a.bin", Range="bytes=100-199")
assert part["Body"].read() == data[100:200]
assert part["ContentRange"] == f"bytes 100-199/{len(data)}", part["ContentRange"]
assert s3.head_object(Bucket="boto", Key="dir/a.bin")["ContentLength"] == len(data)

# Each checksum algorithm, checked by the gateway and returned on request.
for algorithm in ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"]:
    body = os.urandom(70_000)
    s3.put_object(Bucket="boto", Key=f"sum/{algorithm}", Body=body, ChecksumAlgorithm=algorithm)
    head = s3.head_object(Bucket="boto", Key=f"sum/{algorithm}", ChecksumMode="ENABLED")
    assert head.get(f"Checksum{algorithm}"), (algorithm, head)
    read = s3.get_object(Bucket="boto", Key=f"sum/{algorithm}", ChecksumMode="ENABLED")
    assert read["Body"].read() == body
# A checksum that does not match the body is refused, and nothing is stored.
wrong = lambda: s3.put_object(Bucket="boto", Key="bad", Body=b"hello", ChecksumCRC32="AAAAAA==")
assert error_code(wrong) in ("BadDigest", "InvalidRequest"), error_code(wrong)
assert error_code(lambda: s3.head_object(Bucket="boto", Key="bad")) in ("404", "NoSuchKey")

# Metadata.
s3.put_object(Bucket="boto", Key="meta", Body=b"x", ContentType="text/plain", Metadata={"colour": "blue"})
head = s3.head_object(Bucket="boto", Key="meta")
assert head["ContentType"] == "text/plain" and head["Metadata"] == {"colour": "blue"}, head
# Expires is kept; a body sent aws-chunked (checksums in trailers, over https) is stored with
# the Content-Encoding it was sent with, less that framing.
expires = datetime.datetime(2037, 1, 1, tzinfo=datetime.timezone.utc)
s3.put_object(Bucket="boto", Key="zipped", Body=b"gz", ContentEncoding="gzip", Expires=expires)
head = s3.head_object(Bucket="boto", Key="zipped")
assert head["ContentEncoding"] == "gzip", head
assert head["ResponseMetadata"]["HTTPHeaders"]["expires"] == "Thu, 01 Jan 2037 00:00:00 GMT", head
s3.delete_object(Bucket="boto", Key="zipped")

# Listing in pages, with a delimiter.
for i in range(25):
    s3.put_object(Bucket="boto", Key=f"many/{i:02}", Body=str(i).encode())
keys = []
for page in s3.get_paginator("list_objects_v2").paginate(Bucket="boto", Prefix="many/", PaginationConfig={"PageSize": 10}):
    keys += [o["Key"] for o in page.get("Contents", [])]
assert keys == [f"many/{i:02}" for i in range(25)], keys
top = s3.list_objects_v2(Bucket="boto", Delimiter="/")
assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["dir/", "many/", "sum/"], top["CommonPrefixes"]
assert [o["Key"] for o in top["Contents"]] == ["meta"]

# Copy, conditional writes, deletes.
s3.copy_object(Bucket="boto", Key="copy.bin", CopySource={"Bucket": "boto", "Key": "dir/a.bin"})
assert s3.get_object(Bucket="boto", Key="copy.bin")["Body"].read() == data
# A copy keeps its source's checksums (the same bytes), and is an object of its own time.
source = s3.head_object(Bucket="boto", Key="sum/SHA256", ChecksumMode="ENABLED")
copied = s3.copy_object(Bucket="boto", Key="sum-copy", CopySource={"Bucket": "boto", "Key": "sum/SHA256"})
head = s3.head_object(Bucket="boto", Key="sum-copy", ChecksumMode="ENABLED")
assert head["ChecksumSHA256"] == source["ChecksumSHA256"], (source, head)
assert head["ETag"] == source["ETag"] == copied["CopyObjectResult"]["ETag"], (source, head, copied)
assert head["LastModified"] >= source["LastModified"], (source, head)
s3.delete_object(Bucket="boto", Key="sum-copy")
assert error_code(lambda: s3.put_object(Bucket="boto", Key="meta", Body=b"y", IfNoneMatch="*")) == "PreconditionFailed"
s3.delete_objects(Bucket="boto", Delete={"Objects": [{"Key": f"many/{i:02}"} for i in range(25)]})
assert "Contents" not in s3.list_objects_v2(Bucket="boto", Prefix="many/")
s3.delete_object(Bucket="boto", Key="copy.bin")
assert error_code(lambda: s3.get_object(Bucket="boto", Key="copy.bin")) == "NoSuchKey"
assert error_code(lambda: s3.get_object(Bucket="nothere", Key="x")) == "NoSuchBucket"

# A multipart upload (three parts of 5 MiB and less), as upload_fileobj makes it with threads.
big = os.urandom(12 * 1024 * 1024 + 123)
chunk = 5 * 1024 * 1024
transfer = TransferConfig(multipart_threshold=chunk, multipart_chunksize=chunk)
s3.upload_fileobj(io.BytesIO(big), "boto", "big.bin", Config=transfer)
head = s3.head_object(Bucket="boto", Key="big.bin")
parts_md5 = b"".join(hashlib.md5(big[i : i + chunk]).digest() for i in range(0, len(big), chunk))
assert head["ETag"].strip('"') == hashlib.md5(parts_md5).hexdigest() + "-3", head["ETag"]
assert head["ContentLength"] == len(big)
assert s3.get_object(Bucket="boto", Key="big.bin")["Body"].read() == big
# Multipart checksums carried to the object: COMPOSITE (the SHA-256 of the parts' SHA-256s,
# then -2) and FULL_OBJECT (the CRC32 of the whole object), each part's checked on its bytes.
b64 = lambda raw: base64.b64encode(raw).decode()
crc32 = lambda raw: b64(zlib.crc32(raw).to_bytes(4, "big"))
pieces = [os.urandom(5 * 1024 * 1024), os.urandom(1000)]
whole = b"".join(pieces)
up = s3.create_multipart_upload(Bucket="boto", Key="composite", ChecksumAlgorithm="SHA256")["UploadId"]
sent = lambda i, p, alg: s3.upload_part(Bucket="boto", Key="composite", UploadId=up, PartNumber=i, Body=p, ChecksumAlgorithm=alg)
assert error_code(lambda: sent(1, pieces[0], "CRC32")) == "InvalidRequest"
done = [sent(i + 1, p, "SHA256") for i, p in enumerate(pieces)]
assert [d["ChecksumSHA256"] for d in done] == [b64(hashlib.sha256(p).digest()) for p in pieces], done
listed = [{"PartNumber": i + 1, "ETag": d["ETag"], "ChecksumSHA256": d["ChecksumSHA256"]} for i, d in enumerate(done)]
swapped = [dict(listed[0], ChecksumSHA256=listed[1]["ChecksumSHA256"]), listed[1]]
complete = lambda key, up, parts, **kw: s3.complete_multipart_upload(
    Bucket="boto", Key=key, UploadId=up, MultipartUpload={"Parts": parts}, **kw)
assert error_code(lambda: complete("composite", up, swapped)) == "InvalidPart"
completed = complete("composite", up, listed)
composite = b64(hashlib.sha256(b"".join(hashlib.sha256(p).digest() for p in pieces)).digest()) + "-2"
head = s3.head_object(Bucket="boto", Key="composite", ChecksumMode="ENABLED")
assert completed["ChecksumSHA256"] == head["ChecksumSHA256"] == composite, (completed, head, composite)
assert head["ChecksumType"] == "COMPOSITE", head
attributes = s3.get_object_attributes(Bucket="boto", Key="composite", ObjectAttributes=["Checksum"])
assert attributes["Checksum"]["ChecksumSHA256"] == composite, attributes
# Its copy is one object: the SHA-256 of all its bytes.
s3.copy_object(Bucket="boto", Key="composite-copy", CopySource={"Bucket": "boto", "Key": "composite"})
head = s3.head_object(Bucket="boto", Key="composite-copy", ChecksumMode="ENABLED")
assert head["ChecksumSHA256"] == b64(hashlib.sha256(whole).digest()), head
assert head["ChecksumType"] == "FULL_OBJECT", head
up = s3.create_multipart_upload(Bucket="boto", Key="full", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")["UploadId"]
done = [s3.upload_part(Bucket="boto", Key="full", UploadId=up, PartNumber=i + 1, Body=p, ChecksumAlgorithm="CRC32")
        for i, p in enumerate(pieces)]
listed = [{"PartNumber": i + 1, "ETag": d["ETag"], "ChecksumCRC32": d["ChecksumCRC32"]} for i, d in enumerate(done)]
# A whole-object checksum named at completion is checked on the bytes; a wrong one stores nothing.
assert error_code(lambda: complete("full", up, listed, ChecksumCRC32=crc32(b"other"), ChecksumType="FULL_OBJECT")) == "BadDigest"
assert error_code(lambda: complete("full", up, listed, ChecksumType="COMPOSITE")) == "InvalidRequest"
completed = complete("full", up, listed, ChecksumCRC32=crc32(whole), ChecksumType="FULL_OBJECT")
head = s3.head_object(Bucket="boto", Key="full", ChecksumMode="ENABLED")
assert completed["ChecksumCRC32"] == head["ChecksumCRC32"] == crc32(whole), (completed, head)
assert head["ChecksumType"] == "FULL_OBJECT", head
# botocore checks a whole-object checksum on the bytes it reads.
assert s3.get_object(Bucket="boto", Key="full", ChecksumMode="ENABLED")["Body"].read() == whole
for key in ("composite", "composite-copy", "full"):
    s3.delete_object(Bucket="boto", Key=key)
# An aborted upload leaves nothing, and takes no more parts.
up = s3.create_multipart_upload(Bucket="boto", Key="aborted")["UploadId"]
s3.upload_part(Bucket="boto", Key="aborted", UploadId=up, PartNumber=1, Body=b"x" * 100)
s3.upload_part(Bucket="boto", Key="aborted", UploadId=up, PartNumber=3, Body=b"z" * 300)
parts = s3.list_parts(Bucket="boto", Key="aborted", UploadId=up)["Parts"]
assert [(p["PartNumber"], p["Size"]) for p in parts] == [(1, 100), (3, 300)], parts
assert parts[0]["ETag"].strip('"') == hashlib.md5(b"x" * 100).hexdigest()
page = s3.list_parts(Bucket="boto", Key="aborted", UploadId=up, MaxParts=1)
assert page["IsTruncated"] and [p["PartNumber"] for p in page["Parts"]] == [1], page
rest = s3.list_parts(Bucket="boto", Key="aborted", UploadId=up, PartNumberMarker=page["NextPartNumberMarker"])
assert [p["PartNumber"] for p in rest["Parts"]] == [3], rest
uploads = s3.list_multipart_uploads(Bucket="boto").get("Uploads", [])
assert [(u["Key"], u["UploadId"]) for u in uploads] == [("aborted", up)], uploads
# Uploads come a page at a time (by key, then upload id).
more = [s3.create_multipart_upload(Bucket="boto", Key="paged")["UploadId"] for _ in range(2)]
seen_uploads, marker = [], {}
while True:
    page = s3.list_multipart_uploads(Bucket="boto", MaxUploads=1, **marker)
    seen_uploads += [(u["Key"], u["UploadId"]) for u in page.get("Uploads", [])]
    if not page["IsTruncated"]:
        break
    marker = {"KeyMarker": page["NextKeyMarker"], "UploadIdMarker": page["NextUploadIdMarker"]}
assert seen_uploads == [("aborted", up)] + [("paged", u) for u in sorted(more)], seen_uploads
for u in more:
    s3.abort_multipart_upload(Bucket="boto", Key="paged", UploadId=u)
s3.abort_multipart_upload(Bucket="boto", Key="aborted", UploadId=up)
assert not s3.list_multipart_uploads(Bucket="boto").get("Uploads"), "aborted, yet listed"
assert error_code(lambda: s3.head_object(Bucket="boto", Key="aborted")) in ("404", "NoSuchKey")
late = lambda: s3.upload_part(Bucket="boto", Key="aborted", UploadId=up, PartNumber=2, Body=b"y")
assert error_code(late) == "NoSuchUpload"

# A presigned URL, fetched by a plain HTTP client.
url = s3.generate_presigned_url("get_object", Params={"Bucket": "boto", "Key": "dir/a.bin"}, ExpiresIn=60)
tls = ssl.create_default_context(cafile=ca) if ca else None
with urllib.request.urlopen(url, context=tls) as answer:
    assert answer.read() == data
# A presigned PUT, sent by a plain HTTP client, then read back.
url = s3.generate_presigned_url("put_object", Params={"Bucket": "boto", "Key": "presigned"}, ExpiresIn=60)
sent = urllib.request.Request(url, data=b"put by a presigned URL", method="PUT")
with urllib.request.urlopen(sent, context=tls) as answer:
    assert answer.status == 200
assert s3.get_object(Bucket="boto", Key="presigned")["Body"].read() == b"put by a presigned URL"
if ca:
    assert any(t and t.startswith("x-amz-checksum-") for t in trailers), trailers

# A bucket emptied and removed as test suites and tools clean up: its versioning and
# location asked, then every version listed (a page at a time) and deleted in batches.
assert "Status" not in s3.get_bucket_versioning(Bucket="boto")
assert s3.get_bucket_location(Bucket="boto").get("LocationConstraint") is None
listed = []
for page in s3.get_paginator("list_object_versions").paginate(Bucket="boto", PaginationConfig={"PageSize": 3}):
    assert not page.get("DeleteMarkers"), page
    versions = page.get("Versions", [])
    assert all(v["VersionId"] == "null" and v["IsLatest"] for v in versions), versions
    listed += [v["Key"] for v in versions]
    if versions:
        doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in versions]
        assert not s3.delete_objects(Bucket="boto", Delete={"Objects": doomed}).get("Errors"), doomed
assert "big.bin" in listed and "meta" in listed and len(listed) == len(set(listed)), listed
assert not s3.list_objects_v2(Bucket="boto").get("Contents"), "emptied, yet listed"
s3.delete_bucket(Bucket="boto")
assert error_code(lambda: s3.head_bucket(Bucket="boto")) in ("404", "NoSuchBucket")
print("boto3: every operation as S3 says", "(checksums in trailers)" if ca else "")

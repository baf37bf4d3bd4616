"""Failure records Lambda wrote to S3 (a source whose on-failure destination is a bucket).

The failure queue then holds S3 event notifications, not records: ``s3_objects`` tells one from the
other, ``read_record`` fetches the invocation record an object holds, and ``payload_of`` reads the
payload back through a ``PayloadRef`` (the redrive), refusing an object whose bytes changed.

Errors: ``RecordGone`` when the object no longer exists (lifecycle expiry, deleted: final), and
``RecordChanged`` when its bytes are not the ones the enrichment read (final); anything else S3
answers (throttling, access) is raised as it is, so the caller fails and is tried again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from botocore.exceptions import ClientError

from serverless_retry.selfheal.state import read
from serverless_retry.selfheal.types import S3_RECORD_PREFIX, PayloadRef

__all__ = [
    "STORED_RECORD_MAX_BYTES",
    "RecordChanged",
    "RecordGone",
    "S3Object",
    "StoredRecord",
    "is_s3_test_event",
    "payload_of",
    "read_record",
    "s3_objects",
]

# An invocation record holds a payload of at most 1 MB and the function's response; far more than
# that is no record of ours, and is not read into memory.
STORED_RECORD_MAX_BYTES = 8 * 1_048_576
_GONE_CODES = ("NoSuchKey", "404", "NotFound", "NoSuchBucket")


class RecordGone(LookupError):
    """The object is not there (expired or deleted): nothing to read, now or later."""


class RecordChanged(ValueError):
    """The object's bytes are not the ones its pointer names (sha256 or size differ)."""


@dataclass(frozen=True)
class S3Object:
    bucket: str
    key: str  # decoded (S3 notifications URL-encode keys)
    size: int


@dataclass(frozen=True)
class StoredRecord:
    text: str  # the invocation record as JSON, as Lambda wrote it
    ref: PayloadRef


def is_s3_test_event(document: object) -> bool:
    """The message S3 sends once when a notification is configured (no object behind it)."""
    return isinstance(document, Mapping) and document.get("Event") == "s3:TestEvent"


def s3_objects(document: object) -> list[S3Object] | None:
    """The objects an S3 event notification names; None if ``document`` is no S3 notification."""
    if not isinstance(document, Mapping):
        return None
    records = document.get("Records")
    if not isinstance(records, list) or not records:
        return None
    out: list[S3Object] = []
    for record in records:
        if not isinstance(record, Mapping) or record.get("eventSource") != "aws:s3":
            return None
        s3 = record.get("s3")
        bucket = s3.get("bucket") if isinstance(s3, Mapping) else None
        obj = s3.get("object") if isinstance(s3, Mapping) else None
        if not isinstance(bucket, Mapping) or not isinstance(obj, Mapping):
            return None
        name, key, size = bucket.get("name"), obj.get("key"), obj.get("size", 0)
        if not isinstance(name, str) or not isinstance(key, str):
            return None
        out.append(S3Object(name, unquote_plus(key), size if isinstance(size, int) else 0))
    return out


def _get(s3: Any, bucket: str, key: str) -> bytes:
    try:
        response = s3.get_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in _GONE_CODES:
            raise RecordGone(f"s3://{bucket}/{key} is gone ({code}): it expired or was deleted") from None
        raise
    length = response.get("ContentLength")
    if isinstance(length, int) and length > STORED_RECORD_MAX_BYTES:
        raise RecordChanged(
            f"s3://{bucket}/{key} is {length} bytes; no invocation record is over {STORED_RECORD_MAX_BYTES}"
        )
    body: bytes = response["Body"].read()
    return body


def read_record(s3: Any, obj: S3Object) -> StoredRecord:
    """The invocation record in ``obj``, with the pointer that reads it back."""
    if not obj.key.startswith(S3_RECORD_PREFIX):
        raise RecordChanged(
            f"s3://{obj.bucket}/{obj.key} is not under {S3_RECORD_PREFIX}, where Lambda writes failure records"
        )
    body = _get(s3, obj.bucket, obj.key)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordChanged(f"s3://{obj.bucket}/{obj.key} is not UTF-8 text: {exc}") from None
    ref: PayloadRef = {
        "bucket": obj.bucket,
        "key": obj.key,
        "size": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    return StoredRecord(text, ref)


def payload_of(s3: Any, ref: Mapping[str, Any]) -> Any:
    """The payload (the event as it first arrived, retry state removed) of the record ``ref`` names."""
    bucket, key, digest = ref.get("bucket"), ref.get("key"), ref.get("sha256")
    if not isinstance(bucket, str) or not isinstance(key, str) or not isinstance(digest, str):
        raise RecordChanged(f"the payload pointer is incomplete: {dict(ref)!r}")
    body = _get(s3, bucket, key)
    actual = hashlib.sha256(body).hexdigest()
    if actual != digest or len(body) != ref.get("size", len(body)):
        raise RecordChanged(
            f"s3://{bucket}/{key} changed since it was read: sha256 {actual} ({len(body)} bytes), "
            f"the pointer says {digest} ({ref.get('size')} bytes); not redriven"
        )
    document = json.loads(body)
    return read(document["requestPayload"]).event

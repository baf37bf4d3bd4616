"""The archive's objects as the operator's commands read and change them (S3: list, get, a conditional
rewrite, delete).

Conditional writes (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html):
PutObject with ``IfMatch=<etag>`` writes only while the object is the one read, else 412
PreconditionFailed; a concurrent conditional write may instead get 409 ConditionalRequestConflict, to
be answered by reading the object again. ListObjectsV2 returns at most 1,000 keys a page, in UTF-8
binary order (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html): the archive's
keys sort by day, so a listing from a day on can stop at the first key past the last day."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from botocore.exceptions import ClientError
from serverless_retry.archive.record import (
    ArchiveFormatError,
    ArchiveRecord,
    encode_record,
    parse_archive_record,
)

from serverless_retry_tools.commands.archive_location import ArchiveLocation

__all__ = ["ArchiveObjects", "ArchiveReadError", "StoredRecord", "parse_record"]

_CONFLICT = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "412", "409"})
MAX_PAGES = 100_000  # 100 million keys: a bound on one listing, far past any archive's lifecycle


class ArchiveReadError(Exception):
    """An object under the prefix that is no archive record (corrupt, or something else's)."""


@dataclass(frozen=True)
class StoredRecord:
    key: str
    record: dict[str, Any]  # an ArchiveRecord (serverless-retry-archive/1)
    etag: str
    metadata: dict[str, str]


def parse_record(text: str | bytes) -> dict[str, Any]:
    """An ArchiveRecord from an object's body (the archive's own reader); ArchiveReadError saying
    what is wrong otherwise."""
    try:
        return dict(parse_archive_record(text))
    except ArchiveFormatError as exc:
        raise ArchiveReadError(str(exc)) from None


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class ArchiveObjects:
    """One archive location through an S3 client."""

    def __init__(self, s3: Any, location: ArchiveLocation) -> None:
        self.s3 = s3
        self.location = location

    def keys(self, prefix: str, start_after: str | None = None) -> Iterator[str]:
        """Every key under ``prefix`` (after ``start_after``), in S3's order, page by page."""
        params: dict[str, Any] = {"Bucket": self.location.bucket, "Prefix": prefix}
        if start_after:
            params["StartAfter"] = start_after
        for _ in range(MAX_PAGES):
            page = self.s3.list_objects_v2(**params)
            for item in page.get("Contents", []):
                yield str(item["Key"])
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            params["ContinuationToken"] = token

    def read(self, key: str) -> StoredRecord:
        """The record and the ETag it was read at; ArchiveReadError when it is no record (gone too)."""
        try:
            got = self.s3.get_object(Bucket=self.location.bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                raise ArchiveReadError("gone (deleted since it was listed)") from None
            raise
        record = parse_record(got["Body"].read())
        return StoredRecord(key, record, str(got.get("ETag", "")), dict(got.get("Metadata", {})))

    def rewrite(self, stored: StoredRecord, record: dict[str, Any]) -> bool:
        """Write ``record`` over the object only if it is still the one read (IfMatch its ETag), with
        its metadata kept; False when it changed meanwhile (412, or 409 for a concurrent write)."""
        try:
            self.s3.put_object(
                Bucket=self.location.bucket,
                Key=stored.key,
                Body=encode_record(cast(ArchiveRecord, record)),
                ContentType="application/json",
                Metadata=stored.metadata,
                IfMatch=stored.etag,
            )
        except ClientError as exc:
            if _code(exc) in _CONFLICT:
                return False
            raise
        return True

    def delete(self, key: str) -> None:
        self.s3.delete_object(Bucket=self.location.bucket, Key=key)

"""The archive's S3 calls: write a record once, list keys by day/outcome/error type, read one with its
ETag, mark it redriven by a conditional rewrite, delete it.

S3's conditional writes (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html):
PutObject with ``IfNoneMatch="*"`` writes only when no object has the key, else 412
PreconditionFailed (here: already archived, the same message, since the key is a function of it);
``IfMatch=<etag>`` writes only over the object with that ETag, else 412 (or 404 when it is gone). Two
conditional writes racing on one key may get 409 ConditionalRequestConflict: a put_new that gets it
fails (its message is tried again and then finds the object), a mark that gets it is not made.

ListObjectsV2 returns at most 1,000 keys a page, in UTF-8 binary order
(https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html): archive keys sort by day, so
one listing from a day on can stop at the first key past the last day.

Sizes: an SQS message is at most 1 MiB (a queue's MaximumMessageSize is 1,024 to 1,048,576 bytes), so a
record (the message, its original and their JSON escaping) is a few MiB at the very most, far below
PutObject's 5 GB for one request: no multipart or special case. The x-amz-meta-* values are key-safe
ASCII of at most ~420 bytes in all, below the 2 KB of user-defined metadata S3 allows
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any, Literal

from serverless_retry.archive.record import (
    DEAD_DIR,
    ArchiveRecord,
    RedriveMark,
    encode_record,
    key_safe,
    object_key,
    object_metadata,
    parse_archive_record,
    parse_object_key,
)

__all__ = ["MAX_DAY_PREFIXES", "MAX_PAGES", "ArchiveStore"]

MAX_PAGES = 100_000  # 100 million keys in one listing: a bound far past any archive's lifecycle
# A day range longer than this is one listing of dead/ from its first day (StartAfter) rather than one
# listing per day.
MAX_DAY_PREFIXES = 400
_CONFLICT = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict", "409"})
_GONE = frozenset({"NoSuchKey", "404"})


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return ""
    error = response.get("Error")
    return str(error.get("Code", "")) if isinstance(error, dict) else ""


class ArchiveStore:
    """One archive (bucket and prefix) through an S3 client (boto3's, or anything shaped like it)."""

    def __init__(self, client: Any, bucket: str, prefix: str) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix

    @property
    def dead(self) -> str:
        return f"{self.prefix}{DEAD_DIR}"

    # --- writing ------------------------------------------------------------------------------------

    def put_new(self, record: ArchiveRecord) -> Literal["written", "already"]:
        """Write ``record`` at its key unless an object is there ("already": this message, archived
        before). Any other failure raises (after the client's own retries)."""
        key = object_key(record, self.prefix)
        if record["key"] != key:
            raise ValueError(f"record key {record['key']!r} is not its key under {self.prefix!r}: {key!r}")
        try:
            self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=encode_record(record),
                ContentType="application/json",
                Metadata=object_metadata(record),
                IfNoneMatch="*",
            )
        except Exception as exc:
            if _code(exc) in ("PreconditionFailed", "412"):
                return "already"
            raise
        return "written"

    def mark_redriven(
        self, key: str, etag: str, mark: RedriveMark, record: ArchiveRecord | None = None
    ) -> bool:
        """Append ``mark`` to the record's ``redriven`` and rewrite it, only if the object is still the
        one read at ``etag`` (``record``: that read, else read again now). False when it changed or is
        gone (another run marked or deleted it): read it again before deciding anything."""
        if record is None:
            try:
                record, current = self.get(key)
            except Exception as exc:
                if _code(exc) in _GONE:
                    return False
                raise
            if current != etag:
                return False
        marked: ArchiveRecord = {**record, "redriven": [*record["redriven"], mark]}
        try:
            self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=encode_record(marked),
                ContentType="application/json",
                Metadata=object_metadata(marked),
                IfMatch=etag,
            )
        except Exception as exc:
            if _code(exc) in _CONFLICT | _GONE:
                return False
            raise
        return True

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=key)

    # --- reading ------------------------------------------------------------------------------------

    def get(self, key: str) -> tuple[ArchiveRecord, str]:
        """The record at ``key`` and the ETag it was read at. ``ArchiveFormatError`` for an object that
        is no record; the client's error (NoSuchKey) for one that is gone."""
        got = self.client.get_object(Bucket=self.bucket, Key=key)
        return parse_archive_record(got["Body"].read()), str(got.get("ETag", ""))

    def list(
        self,
        *,
        first_day: date | None = None,
        last_day: date | None = None,
        outcome: str | None = None,
        error_type: str | None = None,
    ) -> Iterator[str]:
        """Archive keys of the days ``first_day`` to ``last_day`` (UTC, both included; None: unbounded),
        of one outcome and one error type when given (as written, or made key-safe here; "none" for no
        error), in S3's order. A bounded range lists only its days' prefixes; other objects under the
        prefix are never listed."""
        want_outcome = key_safe(outcome) if outcome is not None else None
        want_error = key_safe(error_type) if error_type is not None else None
        for prefix, start_after in self._listings(first_day, last_day, want_outcome, want_error):
            for key in self._keys(prefix, start_after):
                parts = parse_object_key(key, self.prefix)
                if parts is None:
                    continue
                if last_day is not None and parts.day > last_day:
                    return  # keys sort by day: nothing further can be in range
                if first_day is not None and parts.day < first_day:
                    continue
                if want_outcome is not None and parts.outcome != want_outcome:
                    continue
                if want_error is not None and parts.error_type != want_error:
                    continue
                yield key

    def _listings(
        self, first: date | None, last: date | None, outcome: str | None, error_type: str | None
    ) -> builtins.list[tuple[str, str | None]]:
        """(prefix, StartAfter) of each ListObjectsV2 listing that covers the range."""
        if first is None or last is None or (last - first).days >= MAX_DAY_PREFIXES:
            # One listing of dead/, from just before the first day's keys ("dead/2026/11/30" sorts
            # before "dead/2026/11/30/...").
            after = f"{self.dead}{first:%Y/%m/%d}" if first is not None else None
            return [(self.dead, after)]
        out: builtins.list[tuple[str, str | None]] = []
        for offset in range(max(0, (last - first).days + 1)):
            prefix = f"{self.dead}{first + timedelta(days=offset):%Y/%m/%d}/"
            if outcome is not None:
                prefix += f"{outcome}/"
                if error_type is not None:
                    prefix += f"{error_type}/"
            out.append((prefix, None))
        return out

    def _keys(self, prefix: str, start_after: str | None) -> Iterator[str]:
        params: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        if start_after:
            params["StartAfter"] = start_after
        for _ in range(MAX_PAGES):
            page = self.client.list_objects_v2(**params)
            for item in page.get("Contents", []):
                yield str(item["Key"])
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            params["ContinuationToken"] = token
        raise RuntimeError(f"listing {prefix!r}: more than {MAX_PAGES} pages")

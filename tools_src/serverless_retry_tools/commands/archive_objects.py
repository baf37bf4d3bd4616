"""The archive's objects as the operator's commands read and change them: the archive's own store
(:class:`serverless_retry.archive.store.ArchiveStore`: day-prefix listing, a read with its ETag, the
redrive mark by a conditional rewrite, delete), with what cannot be read as a record turned into one
error the commands report per object and go on (ArchiveReadError).

Conditional writes (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html):
the mark is a PutObject with ``IfMatch=<etag read>``; S3 refuses it with 412 PreconditionFailed when
the object changed since (or 409 ConditionalRequestConflict for a concurrent conditional write): the
store answers False, and the redrive reads the object again before deciding anything."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

from botocore.exceptions import ClientError
from serverless_retry.archive.record import ArchiveFormatError, ArchiveRecord, RedriveMark
from serverless_retry.archive.store import ArchiveStore

from serverless_retry_tools.commands.archive_location import ArchiveLocation

__all__ = ["ArchiveObjects", "ArchiveReadError", "StoredRecord"]


class ArchiveReadError(Exception):
    """An object under the prefix that is no archive record (corrupt, something else's, or gone)."""


@dataclass(frozen=True)
class StoredRecord:
    key: str
    record: ArchiveRecord
    etag: str  # as read: the mark is written only over this version


class ArchiveObjects:
    """One archive location through an S3 client."""

    def __init__(self, s3: Any, location: ArchiveLocation) -> None:
        self.location = location
        self.store = ArchiveStore(s3, location.bucket, location.prefix)

    def keys(
        self,
        *,
        first_day: date | None,
        last_day: date,
        outcome: str | None = None,
        error_type: str | None = None,
    ) -> Iterator[str]:
        """The archive keys of those days (one outcome, one error type: only theirs), in S3's order."""
        return self.store.list(first_day=first_day, last_day=last_day, outcome=outcome, error_type=error_type)

    def read(self, key: str) -> StoredRecord:
        """The record and the ETag it was read at; ArchiveReadError when it is no record, or gone."""
        try:
            record, etag = self.store.get(key)
        except ArchiveFormatError as exc:
            raise ArchiveReadError(str(exc)) from None
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise ArchiveReadError("gone (deleted since it was listed)") from None
            raise
        return StoredRecord(key, record, etag)

    def mark(self, stored: StoredRecord, mark: RedriveMark) -> bool:
        """Append ``mark`` over the version read; False when the object changed (or went) since."""
        return self.store.mark_redriven(stored.key, stored.etag, mark, stored.record)

    def delete(self, key: str) -> None:
        self.store.delete(key)

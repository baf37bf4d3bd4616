"""Where an archive is (``--archive s3://bucket/prefix/``) and what its keys say without a GET.

The archiver writes each terminal message to
``<prefix>dead/<yyyy>/<mm>/<dd>/<outcome>/<error_type>/<chain_id>.<attempt>.<digest12>.json`` (the day
it became terminal, UTC), so outcome, error type, chain id and attempt filter from the key alone and
an object is read only when something needs its body. The key itself is the archive's
(:mod:`serverless_retry.archive.record`), and so is the listing by day
(:meth:`serverless_retry.archive.store.ArchiveStore.list`). Pure: no AWS here."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from serverless_retry.archive.record import DEAD_DIR, ArchiveKey, key_safe, parse_object_key

__all__ = [
    "ArchiveKey",
    "ArchiveLocation",
    "is_archive_url",
    "key_safe",
    "parse_archive_location",
    "parse_key",
]

SCHEME = "s3://"
# A bucket name as S3 allows it for general purpose buckets: 3-63 lowercase letters, digits, dots and
# hyphens, beginning and ending with a letter or digit
# (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


@dataclass(frozen=True)
class ArchiveLocation:
    bucket: str
    prefix: str  # exactly as the archiver's SERVERLESS_RETRY_ARCHIVE_PREFIX ("" or "serverless-retry/")

    @property
    def dead(self) -> str:
        return f"{self.prefix}{DEAD_DIR}"

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}"


def is_archive_url(text: str | None) -> bool:
    return bool(text) and str(text).startswith(SCHEME)


def parse_archive_location(text: str) -> ArchiveLocation:
    """``s3://bucket/prefix/`` → the location (an argparse type: a bad one is a usage error)."""
    if not text.startswith(SCHEME):
        raise argparse.ArgumentTypeError(f"expected s3://BUCKET/PREFIX/, got {text!r}")
    bucket, _, prefix = text[len(SCHEME) :].partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise argparse.ArgumentTypeError(
            f"{bucket!r} is no S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)"
        )
    if prefix and not prefix.endswith("/"):
        # The archiver's prefix is joined to "dead/" as it is: "serverless-retry" would look under
        # "serverless-retrydead/" and find nothing, silently. Say so instead.
        raise argparse.ArgumentTypeError(
            f"the prefix {prefix!r} must end with / (the archive's keys are {prefix}/dead/...)"
        )
    return ArchiveLocation(bucket, prefix)


def parse_key(key: str, location: ArchiveLocation) -> ArchiveKey | None:
    """The parts of an archive key; None for any other object under the prefix."""
    return parse_object_key(key, location.prefix)

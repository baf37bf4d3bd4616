"""Where an archive is (``--archive s3://bucket/prefix/``) and what its keys say without a GET.

The archiver writes each terminal message to
``<prefix>dead/<yyyy>/<mm>/<dd>/<outcome>/<error_type>/<chain_id>.<attempt>.<digest12>.json`` (the day
it became terminal, UTC). So a day range is listed one day prefix at a time, a single outcome and error
type narrow that prefix further, and outcome, error type, chain id and attempt filter from the key
alone: an object is read only when something needs its body. The key itself is the archive's
(:mod:`serverless_retry.archive.record`); this module adds where to list. Pure: no AWS here."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from serverless_retry.archive.record import DEAD_DIR, ArchiveKey, key_safe, parse_object_key

__all__ = [
    "MAX_DAY_PREFIXES",
    "ArchiveKey",
    "ArchiveLocation",
    "day_prefixes",
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
# More days than this in a range: one listing of the whole dead/ prefix from the first day on
# (StartAfter), instead of one listing a day.
MAX_DAY_PREFIXES = 400


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


def _day(prefix: str, day: date) -> str:
    return f"{prefix}{day:%Y/%m/%d}/"


def day_prefixes(
    location: ArchiveLocation,
    first: date | None,
    last: date,
    *,
    outcomes: Sequence[str] = (),
    error_types: Sequence[str] = (),
) -> Iterator[tuple[str, str | None]]:
    """(prefix, start_after) listings that cover every key of the days ``first`` to ``last``.

    A bounded range of at most MAX_DAY_PREFIXES days: one prefix per day, narrowed by a single outcome
    (and then a single error type). No first day (no --newer-than), or too many days: the whole
    ``dead/`` prefix from the first day on; the caller stops at the last day (keys sort by date)."""
    if first is None or (last - first).days >= MAX_DAY_PREFIXES:
        after = _day(location.dead, first)[:-1] if first is not None else None
        yield location.dead, after
        return
    for offset in range((last - first).days + 1):
        prefix = _day(location.dead, first + timedelta(days=offset))
        if len(outcomes) == 1:
            prefix += key_safe(outcomes[0]) + "/"
            if len(error_types) == 1:
                prefix += key_safe(error_types[0]) + "/"
        yield prefix, None

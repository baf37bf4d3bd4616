"""The archiver's settings, read from its environment at cold start. Pure: a bad value raises
``ConfigError`` naming the variable (the house wording, as ``environment`` and ``config`` do).

``SERVERLESS_RETRY_ARCHIVE_BUCKET``   the bucket (required)
``SERVERLESS_RETRY_ARCHIVE_PREFIX``   the key prefix: "" or ending in "/", no leading "/" (default
                                      "serverless-retry/")
``SERVERLESS_RETRY_ARCHIVE_SOURCES``  JSON: queue ARN -> {"place", "source_queue_arn", "deployment"},
                                      one entry per queue the archiver reads
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

from serverless_retry.archive.record import PLACES, ArchiveSource, Place
from serverless_retry.environment import optional, required
from serverless_retry.errors import ConfigError

__all__ = [
    "DEFAULT_PREFIX",
    "ENV_BUCKET",
    "ENV_PREFIX",
    "ENV_SOURCES",
    "MAX_PREFIX_BYTES",
    "ArchiverSettings",
]

ENV_BUCKET = "SERVERLESS_RETRY_ARCHIVE_BUCKET"
ENV_PREFIX = "SERVERLESS_RETRY_ARCHIVE_PREFIX"
ENV_SOURCES = "SERVERLESS_RETRY_ARCHIVE_SOURCES"
DEFAULT_PREFIX = "serverless-retry/"
# An S3 key is at most 1,024 bytes of UTF-8; the rest of an archive key takes at most 456 (dead/, the
# day, 100 + 100 + 200 characters of key-safe ASCII, the attempt, the digest), so a prefix of at most 200
# bytes always leaves room (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
MAX_PREFIX_BYTES = 200
# General purpose bucket names: 3-63 lowercase letters, digits, dots and hyphens, a letter or digit at
# each end (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
# SQS queue ARNs: up to 80 characters of A-Z a-z 0-9 - _, a FIFO queue's ending in ".fifo".
_QUEUE_NAME = r"(?=[A-Za-z0-9_.-]{1,80}$)[A-Za-z0-9_-]+(?:\.fifo)?"
_SQS_ARN = re.compile(rf"^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{{12}}:{_QUEUE_NAME}$")
_SOURCE_KEYS = frozenset({"place", "source_queue_arn", "deployment"})


@dataclass(frozen=True)
class ArchiverSettings:
    bucket: str
    prefix: str
    sources: Mapping[str, ArchiveSource]  # by the ARN of the queue the archiver reads (read-only)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ArchiverSettings:
        env = os.environ if environ is None else environ
        return cls(bucket=_bucket(env), prefix=_prefix(env), sources=_sources(env))


def _bucket(env: Mapping[str, str]) -> str:
    bucket = required(env, ENV_BUCKET)
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise ConfigError(ENV_BUCKET, f"must be an S3 bucket name (3-63 of a-z 0-9 . -), got {bucket!r}")
    return bucket


def _prefix(env: Mapping[str, str]) -> str:
    prefix = env.get(ENV_PREFIX, DEFAULT_PREFIX).strip()
    if (
        prefix.startswith("/")
        or (prefix and not prefix.endswith("/"))
        or len(prefix.encode("utf-8", "surrogatepass")) > MAX_PREFIX_BYTES
    ):
        raise ConfigError(
            ENV_PREFIX,
            f"must be empty or end in '/', without a leading '/' (at most {MAX_PREFIX_BYTES} bytes of UTF-8), "
            f"got {prefix!r}",
        )
    if "//" in prefix:
        raise ConfigError(ENV_PREFIX, f"must not hold an empty segment ('//'), got {prefix!r}")
    return prefix


def _arn(value: object) -> bool:
    return isinstance(value, str) and bool(_SQS_ARN.match(value))


def _source(arn: str, value: object) -> ArchiveSource:
    where = f"entry {arn!r}"
    if not isinstance(value, dict):
        raise ConfigError(ENV_SOURCES, f"{where}: expected an object, got {type(value).__name__}")
    entry: dict[str, Any] = value
    unknown = sorted(set(entry) - _SOURCE_KEYS)
    if unknown:
        raise ConfigError(ENV_SOURCES, f"{where}: unknown field(s) {', '.join(unknown)}")
    place = entry.get("place")
    if place not in PLACES:
        raise ConfigError(ENV_SOURCES, f"{where}: place must be one of {', '.join(PLACES)}, got {place!r}")
    back = entry.get("source_queue_arn")
    if back is not None and not _arn(back):
        raise ConfigError(
            ENV_SOURCES, f"{where}: source_queue_arn must be an SQS queue ARN or null, got {back!r}"
        )
    deployment = entry.get("deployment")
    if not isinstance(deployment, str) or not deployment.strip():
        raise ConfigError(ENV_SOURCES, f"{where}: deployment must be a non-empty string, got {deployment!r}")
    return ArchiveSource(place=cast(Place, place), source_queue_arn=back, deployment=deployment)


def _sources(env: Mapping[str, str]) -> Mapping[str, ArchiveSource]:
    raw = optional(env, ENV_SOURCES)
    if raw is None:
        raise ConfigError(
            ENV_SOURCES, "required but not set (JSON: queue ARN -> {place, source_queue_arn, deployment})"
        )
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(ENV_SOURCES, f"must be JSON: {exc}") from None
    if not isinstance(document, dict) or not document:
        raise ConfigError(ENV_SOURCES, "must be a non-empty JSON object: queue ARN -> {place, ...}")
    sources: dict[str, ArchiveSource] = {}
    for arn, value in document.items():
        if not _arn(arn):
            raise ConfigError(
                ENV_SOURCES, f"key {arn!r}: must be an SQS queue ARN (arn:aws:sqs:<region>:<account>:<name>)"
            )
        sources[arn] = _source(arn, value)
    return MappingProxyType(sources)

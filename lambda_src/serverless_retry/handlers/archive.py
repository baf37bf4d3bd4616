"""Lambda entry point of the archiver: ``serverless_retry.handlers.archive.handler``.

An SQS event source mapping (with ReportBatchItemFailures) on each terminal queue of a deployment
invokes it; each message becomes one S3 object before it is acknowledged (see
:mod:`serverless_retry.archive.archiver`). The settings are read at import (cold start): a bad
``SERVERLESS_RETRY_ARCHIVE_*`` value fails the init with a ``ConfigError`` naming the variable, before
any message is received. The S3 client is built on the first invocation.

Its role needs ``s3:PutObject`` on ``<prefix>dead/*`` (a 412 on ``If-None-Match`` needs no read), and
``s3:GetObject`` on ``<prefix>payloads/*`` to read a pointer's payload (a final envelope too large for
its queue, which the consumer keeps in the archive's bucket).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

from serverless_retry import environment
from serverless_retry.archive.archiver import ArchiveBatchResponse, Archiver, pointer_resolver
from serverless_retry.archive.settings import ArchiverSettings
from serverless_retry.archive.store import ArchiveStore
from serverless_retry.aws import client
from serverless_retry.observability import make_logger

__all__ = ["archiver", "handler", "settings"]

settings = ArchiverSettings.from_env()
logger = make_logger(os.environ.get("POWERTOOLS_SERVICE_NAME") or "serverless-retry-archive")
_clock = environment.clock(os.environ)


@functools.cache
def archiver() -> Archiver:
    """The archiver, its S3 client (and boto3) made on the first invocation, then kept."""
    s3 = client("s3")
    store = ArchiveStore(s3, settings.bucket, settings.prefix)
    resolve = pointer_resolver(s3, settings.bucket, settings.prefix)
    return Archiver(store, settings, clock=_clock, logger=logger, resolve=resolve)


@logger.inject_lambda_context(clear_state=True)
def handler(event: Mapping[str, Any], context: Any) -> ArchiveBatchResponse:
    return archiver()(event)

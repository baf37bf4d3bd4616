"""One SQS batch of a terminal queue drained into the archive: each message written as one object,
then acknowledged.

Order of operations, per message: find the queue it came from in the settings (a queue the archiver
was not configured for is not archived: its message stays, and the failure is logged); build its
record (an unreadable message is archived as outcome "unknown", body verbatim; a pointer's payload is
read, so the record holds the whole original, and a payload that cannot be read fails the message);
write it with ``IfNoneMatch="*"`` ("already" counts as archived: the same message, written by an
earlier try).
**A message is acknowledged only when its object exists**: any failure (after the S3 client's own
retries) puts it in ``batchItemFailures`` so the queue delivers it again; a record without a
``messageId`` cannot be named there, so a failure of one fails the whole batch (raised). One metrics
line and one log line per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, Protocol, TypedDict

from aws_lambda_powertools import Logger

from serverless_retry.archive.metrics import ArchiveCounts, ArchiveMetrics
from serverless_retry.archive.record import ArchiveRecord, archive_record
from serverless_retry.archive.settings import ENV_SOURCES, ArchiverSettings
from serverless_retry.clock import Clock
from serverless_retry.errors import EventShapeError
from serverless_retry.observability import make_logger
from serverless_retry.payload_pointer import PayloadTarget
from serverless_retry.payload_store import resolve_pointer
from serverless_retry.terminal import TerminalView

__all__ = [
    "LOGGED_FAILURES",
    "ArchiveBatchResponse",
    "ArchiveWriter",
    "Archiver",
    "BatchItemFailure",
    "UnnamedFailure",
    "pointer_resolver",
]

LOGGED_FAILURES = 20  # the batch's log line names at most this many failed messages


def pointer_resolver(s3: Any, bucket: str, prefix: str) -> Callable[[TerminalView], TerminalView | None]:
    """Reads a pointer's payload into the whole message. Only ``<prefix>payloads/`` of the archive's
    bucket is read: a pointer to anywhere else is a producer's body shaped like one (None: archived as
    it came), never a reason to copy another object. A payload of ours that cannot be read (missing,
    changed, no access: PayloadError) fails that message: it stays in its queue rather than be
    archived with nothing a redrive could send."""
    target = PayloadTarget(bucket, prefix)

    def resolve(view: TerminalView) -> TerminalView | None:
        location = view.payload
        if location is None:
            return view
        if location["bucket"] != bucket or not location["key"].startswith(f"{prefix}payloads/"):
            return None
        return resolve_pointer(view, s3, target)

    return resolve


class ArchiveWriter(Protocol):
    def put_new(self, record: ArchiveRecord) -> Literal["written", "already"]: ...


class BatchItemFailure(TypedDict):
    itemIdentifier: str


class ArchiveBatchResponse(TypedDict):
    batchItemFailures: list[BatchItemFailure]


class UnnamedFailure(Exception):
    """A message with no messageId was not archived: only failing the whole batch keeps it."""


class Archiver:
    def __init__(
        self,
        store: ArchiveWriter,
        settings: ArchiverSettings,
        *,
        clock: Clock,
        logger: Logger | None = None,
        metrics: ArchiveMetrics | None = None,
        resolve: Callable[[TerminalView], TerminalView | None] | None = None,
    ) -> None:
        self.resolve = resolve
        self.store = store
        self.settings = settings
        self.clock = clock
        self.logger = logger or make_logger()
        self.metrics = metrics or ArchiveMetrics()

    def __call__(self, event: Mapping[str, Any]) -> ArchiveBatchResponse:
        records = event.get("Records") if isinstance(event, Mapping) else None
        if not isinstance(records, list) or not all(
            isinstance(r, Mapping) and r.get("eventSource") == "aws:sqs" for r in records
        ):
            # Raised, never answered: the sender's retries keep whatever this was.
            raise EventShapeError("the archiver takes SQS events only (Records of eventSource aws:sqs)")
        counts = ArchiveCounts()
        failures: list[BatchItemFailure] = []
        failed: list[dict[str, str]] = []
        unnamed = 0
        now = self.clock.now()
        for message in records:
            message_id = message.get("messageId")
            problem = self._archive(message, now, counts)
            if problem is None:
                continue
            counts.failed += 1
            if isinstance(message_id, str) and message_id:
                failures.append({"itemIdentifier": message_id})
            else:
                unnamed += 1
            if len(failed) < LOGGED_FAILURES:
                failed.append({"message_id": str(message_id), "error": problem})
        self.metrics.publish(counts, self.logger)
        log = self.logger.error if counts.failed else self.logger.info
        log(
            "archive batch",
            extra={
                "messages": len(records),
                "archived": counts.archived,
                "already_archived": counts.already,
                "failed": counts.failed,
                "failures": failed,
            },
        )
        if unnamed:
            raise UnnamedFailure(f"{unnamed} message(s) without a messageId not archived: the batch fails")
        return {"batchItemFailures": failures}

    def _archive(self, message: Mapping[str, Any], now: datetime, counts: ArchiveCounts) -> str | None:
        """Archive one message; None when its object exists, else why not."""
        queue = message.get("eventSourceARN")
        source = self.settings.sources.get(queue) if isinstance(queue, str) else None
        if source is None:
            return f"queue {queue!r} is not in {ENV_SOURCES}: not archived, left in its queue"
        try:
            record = archive_record(
                message, source=source, now=now, prefix=self.settings.prefix, resolve=self.resolve
            )
            result = self.store.put_new(record)
        except Exception as exc:  # any failure: the message stays in its queue, tried again
            return f"{type(exc).__name__}: {exc}"[:500]
        if result == "already":
            counts.already += 1
        else:
            counts.archived += 1
        return None

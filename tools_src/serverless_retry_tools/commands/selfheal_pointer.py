"""Self-healing records whose payload stayed in S3 (``payload: null`` with a ``payload_ref``: the failure
record Lambda wrote to the bucket was too large for a bus event).

``redrive --to-function`` reads such a payload back through its pointer with the one reader the
pattern's own redrive uses (:func:`serverless_retry.selfheal.stored.payload_of`, sha256-checked), then
re-invokes with it as with any other record. A record whose object is gone or changed is refused and
stays in the queue; any other S3 answer (access, throttling) ends the pass, as a failed send does.
``inspect`` shows the pointer (key, size) where the payload would be.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from serverless_retry.redrive.queue import ExhaustedMessage, RedriveReport, describe_error
from serverless_retry.selfheal.stored import RecordChanged, RecordGone, payload_of
from serverless_retry.selfheal.types import PayloadRef

__all__ = ["StoredPayloads", "body_text", "pointer_of", "pointer_text", "with_pointer"]


def pointer_of(message: ExhaustedMessage) -> PayloadRef | None:
    """The S3 pointer of a self-healing record that carries no payload of its own; None otherwise."""
    detail = message.failure
    if detail is None or detail.get("payload") is not None:
        return None
    ref = detail.get("payload_ref")
    return ref if isinstance(ref, Mapping) else None


def pointer_text(ref: PayloadRef) -> str:
    return f"in S3: s3://{ref.get('bucket')}/{ref.get('key')} ({ref.get('size')} bytes)"


def body_text(message: ExhaustedMessage) -> str:
    """What ``inspect`` shows as the body: the pointer where the payload stayed in S3."""
    ref = pointer_of(message)
    return message.body if ref is None else pointer_text(ref)


def with_pointer(row: dict[str, Any], message: ExhaustedMessage, bodies: bool) -> dict[str, Any]:
    """An ``inspect --json`` row with the pointer (when there is one) and, asked for, the body."""
    ref = pointer_of(message)
    if ref is not None:
        row["payload_ref"] = dict(ref)
    if bodies:
        row["body"] = body_text(message)
    return row


class StoredPayloads:
    """The ``select`` of a redrive to a function: fills in the payload of each pointer-only record the
    filters chose, before the redrive judges and sends it (the detail is filled in place: it is the
    one that redrive re-invokes). Records it could not read are kept in ``unreadable``."""

    def __init__(self, s3: Any) -> None:
        self.s3 = s3
        self.unreadable: list[tuple[ExhaustedMessage, str]] = []
        self.stopped: str | None = None
        self.reads = 0

    def select(self, message: ExhaustedMessage) -> bool:
        ref = pointer_of(message)
        if ref is None or message.failure is None:
            return True
        try:
            self.reads += 1
            message.failure["payload"] = payload_of(self.s3, ref)
        except (RecordGone, RecordChanged) as exc:
            self.unreadable.append((message, f"its payload could not be read back from S3: {exc}"))
            return False
        except (ClientError, BotoCoreError) as exc:  # not this record's fault: the pass ends here
            why = f"reading its payload from S3 failed: {describe_error(exc)}"
            self.unreadable.append((message, why))
            self.stopped = why
            return False
        return True

    def should_stop(self) -> str | None:
        return self.stopped

    def account(self, report: RedriveReport) -> None:
        """The records not read count as failed (left in place), not as skipped by the filters."""
        taken = {id(message) for message, _ in self.unreadable}
        report.skipped = [m for m in report.skipped if id(m) not in taken]
        report.failed.extend(self.unreadable)
        if self.stopped and report.stopped is None:
            report.stopped = self.stopped

"""The consumer's ``processing failed; retries planned`` log line, read back (log tooling, tests).

The consumer writes, once per batch, ``count`` retried messages and ``retries``: a RetryLogGroup per
distinct decision. ``retry_log_entries`` turns a parsed line back into one RetryLogEntry per message.
Kept apart from the consumer, which only writes the groups: a Lambda never reads its own lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Required, TypedDict

__all__ = ["RetryLogEntry", "RetryLogGroup", "retry_log_entries"]


class RetryLogGroup(TypedDict, total=False):
    """The retried messages of a batch that share one decision, in the ``RETRIES_PLANNED`` line.

    Grouped because a batch's failures mostly share their error and attempt: the line then costs a
    fraction of one entry per message, and every message's decision is still in it."""

    error_type: Required[str]
    error: Required[str]  # str(error), cut to 256 characters
    attempt: Required[int]  # the attempt that failed (1 = first delivery)
    transport: Required[str | None]  # sqs-delay, sqs-hops, scheduler or visibility
    delays: Required[dict[str, int]]  # this delivery's SQS message id → delay_seconds, in record order
    # message id → retry id (the first delivery's message id, the same across attempts), only for
    # messages whose retry id is not their own message id (the copies of earlier retries)
    retry_ids: dict[str, str]


class RetryLogEntry(TypedDict):
    """One retried message's decision, as ``retry_log_entries`` reads it from a ``RETRIES_PLANNED``
    line."""

    message_id: str  # this delivery's SQS message id
    retry_id: str  # the first delivery's message id, the same across attempts
    attempt: int  # the attempt that failed (1 = first delivery)
    error_type: str
    error: str  # str(error), cut to 256 characters
    delay_seconds: int
    transport: str | None  # sqs-delay, sqs-hops, scheduler or visibility


def retry_log_entries(line: Mapping[str, Any]) -> list[RetryLogEntry]:
    """Every retried message's decision in one ``RETRIES_PLANNED`` log line (parsed JSON), in record
    order within each group. Malformed parts are skipped."""
    entries: list[RetryLogEntry] = []
    groups = line.get("retries")
    for group in groups if isinstance(groups, list) else []:
        delays = group.get("delays") if isinstance(group, Mapping) else None
        if not isinstance(delays, Mapping):
            continue
        retry_ids = group.get("retry_ids")
        if not isinstance(retry_ids, Mapping):
            retry_ids = {}
        for message_id, delay in delays.items():
            entries.append(
                {
                    "message_id": message_id,
                    "retry_id": retry_ids.get(message_id, message_id),
                    "attempt": group.get("attempt"),
                    "error_type": group.get("error_type"),
                    "error": group.get("error"),
                    "delay_seconds": delay,
                    "transport": group.get("transport"),
                }
            )
    return entries

"""Receive and delete SQS batches the way Lambda's pollers (event source mappings and Pipes) do."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

__all__ = ["RECEIVE_WAIT_SECONDS", "delete_messages", "receive_batch"]

# Long polls are short so that a stop, or a changed batch size, is noticed within a second.
RECEIVE_WAIT_SECONDS = 1


def receive_batch(
    sqs: Any, queue_url: str, batch_size: int, window: float, stop: threading.Event
) -> list[dict[str, Any]]:
    """Up to ``batch_size`` messages (with every attribute), received with the queue's own
    visibility timeout. With no batching window: whatever the first non-empty receive brings. With
    one: keep receiving until the batch is full or the window (real seconds, counted from the first
    message) closes. An empty result means the queue was idle for one long poll."""
    batch: list[dict[str, Any]] = []
    window_end: float | None = None
    while not stop.is_set() and len(batch) < batch_size:
        wait = RECEIVE_WAIT_SECONDS
        if window_end is not None:
            left = window_end - time.monotonic()
            if left <= 0:
                break
            wait = RECEIVE_WAIT_SECONDS if left >= RECEIVE_WAIT_SECONDS else 0
        got = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=min(10, batch_size - len(batch)),
            WaitTimeSeconds=wait,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not got:
            if not batch:
                return batch
            if wait == 0:
                stop.wait(0.05)
            continue
        # A message received twice within the window (its visibility timeout is shorter than the
        # window) counts once, with its latest receipt handle, which is the one that can delete it.
        fresh = {m["MessageId"] for m in got}
        batch = [m for m in batch if m["MessageId"] not in fresh] + got
        if window <= 0:
            break
        if window_end is None:
            window_end = time.monotonic() + window
    return batch


def delete_messages(
    sqs: Any, queue_url: str, messages: list[dict[str, Any]], ids: Iterable[str]
) -> list[dict[str, Any]]:
    """DeleteMessageBatch for the messages whose MessageId is in ``ids``; returns the failed entries."""
    handles = {m["MessageId"]: m["ReceiptHandle"] for m in messages}
    wanted = [i for i in ids if i in handles]
    failed: list[dict[str, Any]] = []
    for start in range(0, len(wanted), 10):
        chunk = wanted[start : start + 10]
        response = sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(n), "ReceiptHandle": handles[mid]} for n, mid in enumerate(chunk)],
        )
        failed.extend(response.get("Failed", []))
    return failed

"""What the demos send to and read back from the emulator: workloads onto a queue, queue depths for
the progress lines, every message of a final queue, a function's log lines."""

from __future__ import annotations

from typing import Any

from serverless_retry_tools.local.demos.accounting import SentMessage
from serverless_retry_tools.local.demos.scheduled_workload import WorkItem

__all__ = ["queue_counts", "queue_depth", "read_log_lines", "receive_all", "send_items"]

_COUNTS = {
    "visible": "ApproximateNumberOfMessages",
    "in_flight": "ApproximateNumberOfMessagesNotVisible",
    "delayed": "ApproximateNumberOfMessagesDelayed",
}


def queue_counts(sqs: Any, url: str) -> dict[str, int]:
    """The queue's messages: ``visible``, ``in_flight`` and ``delayed``."""
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(_COUNTS.values()))["Attributes"]
    return {name: int(attrs.get(attribute, 0)) for name, attribute in _COUNTS.items()}


def queue_depth(sqs: Any, url: str) -> int:
    """Every message the queue holds, visible or not."""
    return sum(queue_counts(sqs, url).values())


def send_items(sqs: Any, url: str, items: list[WorkItem]) -> list[SentMessage]:
    """Send a workload in batches of ten; each item's message id is kept for the accounting."""
    sent: list[SentMessage] = []
    for start in range(0, len(items), 10):
        chunk = items[start : start + 10]
        response = sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": item.body} for i, item in enumerate(chunk)]
        )
        if response.get("Failed"):
            raise RuntimeError(f"SendMessageBatch failed for {response['Failed']}")
        ids = {int(entry["Id"]): entry["MessageId"] for entry in response["Successful"]}
        sent.extend(
            SentMessage(ids[i], item.label, item.order_id, item.expected) for i, item in enumerate(chunk)
        )
    return sent


def receive_all(sqs: Any, url: str, limit: int) -> list[dict[str, Any]]:
    """Every message of a final queue, with its system and message attributes (hidden for the
    12-hour maximum, which stays long at any clock scale, so none is read twice)."""
    received: list[dict[str, Any]] = []
    empty_reads = 0
    for _ in range(limit // 10 + 20):  # bounded: at most `limit` messages plus some empty reads
        messages = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=43_200,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            empty_reads += 1
            if empty_reads >= 2:
                break
            continue
        received.extend(messages)
    return received


def read_log_lines(logs: Any, group: str) -> list[str]:
    """Every line of a log group; none when the group does not exist (the function never logged)."""
    lines: list[str] = []
    try:
        for page in logs.get_paginator("filter_log_events").paginate(logGroupName=group):
            lines.extend(event["message"] for event in page.get("events", []))
    except logs.exceptions.ResourceNotFoundException:
        pass
    return lines

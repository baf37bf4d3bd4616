"""Safe redrive out of the retry-exhausted queue, and a read-only look into it.

Safe means: a message is sent to its destination *before* it is deleted from the exhausted queue, so a
crash in between leaves a duplicate at worst, never a loss; messages that a filter skips are released
at once (visibility 0) so they stay where they were. Redriven messages start a fresh retry budget: the
original body and attributes go back as a new message, exactly as the producer sent them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from serverless_retry.delivery import api_attributes
from serverless_retry.terminal import read_terminal

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef


@dataclass(frozen=True)
class ExhaustedMessage:
    """One message of the retry-exhausted queue, decoded."""

    message_id: str
    receipt_handle: str
    outcome: str
    reason: str
    envelope_id: str
    attempt: int
    error_type: str
    first_failed_at: str
    body: str
    attributes: dict[str, Any]


def decode(message: MessageTypeDef) -> ExhaustedMessage:
    """One received message, in whichever form it was written (terminal.read_terminal): a message
    carrying no outcome shows as ``unknown`` with its body untouched."""
    view = read_terminal(
        message.get("Body", ""), message.get("MessageAttributes"), message_id=message.get("MessageId", "")
    )
    return ExhaustedMessage(
        message_id=message.get("MessageId", ""),
        receipt_handle=message.get("ReceiptHandle", ""),
        outcome=view.outcome,
        reason=view.reason,
        envelope_id=view.id,
        attempt=view.attempt,
        error_type=view.error_type,
        first_failed_at=view.first_failed_at,
        body=view.body,
        attributes=dict(view.attributes),
    )


def _receive(
    sqs: SQSClient, queue_url: str, visibility: int, max_messages: int, wait_seconds: int
) -> list[MessageTypeDef]:
    response = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=max(1, min(10, max_messages)),
        VisibilityTimeout=visibility,
        WaitTimeSeconds=wait_seconds,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    )
    return list(response.get("Messages", []))


def iter_exhausted(
    sqs: SQSClient,
    queue_url: str,
    *,
    limit: int,
    visibility: int = 60,
    empty_polls: int = 2,
    wait_seconds: int = 1,
) -> Iterator[ExhaustedMessage]:
    """Receive up to ``limit`` distinct messages, each hidden for ``visibility`` seconds so one scan
    never sees a message twice; stops after ``empty_polls`` empty receives in a row. Callers release
    what they keep, after the scan."""
    seen: set[str] = set()
    empties = 0
    while len(seen) < limit and empties < empty_polls:
        batch = _receive(sqs, queue_url, visibility, limit - len(seen), wait_seconds)
        fresh = [raw for raw in batch if raw.get("MessageId", "") not in seen]
        if not fresh:
            empties += 1
            continue
        empties = 0
        for raw in fresh:
            seen.add(raw.get("MessageId", ""))
            yield decode(raw)


def release(sqs: SQSClient, queue_url: str, message: ExhaustedMessage) -> None:
    sqs.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=message.receipt_handle, VisibilityTimeout=0
    )


@dataclass
class RedriveReport:
    redriven: list[ExhaustedMessage] = field(default_factory=list)
    skipped: list[ExhaustedMessage] = field(default_factory=list)
    failed: list[tuple[ExhaustedMessage, str]] = field(default_factory=list)


def redrive(
    sqs: SQSClient,
    *,
    from_queue_url: str,
    to_queue_url: str,
    limit: int,
    select: Callable[[ExhaustedMessage], bool] = lambda _m: True,
    dry_run: bool = False,
    message_group_id: str | None = None,
    wait_seconds: int = 1,
) -> RedriveReport:
    """Send selected exhausted messages back to ``to_queue_url`` with a fresh retry budget."""
    report = RedriveReport()
    fifo = to_queue_url.endswith(".fifo")
    keep: list[ExhaustedMessage] = []
    for message in iter_exhausted(sqs, from_queue_url, limit=limit, wait_seconds=wait_seconds):
        if dry_run or not select(message):
            (report.redriven if dry_run and select(message) else report.skipped).append(message)
            keep.append(message)
            continue
        params: dict[str, Any] = {"QueueUrl": to_queue_url, "MessageBody": message.body}
        if fifo:
            params["MessageGroupId"] = message_group_id or message.envelope_id
            params["MessageDeduplicationId"] = f"redrive-{message.message_id}"[:128]
        try:
            attributes = api_attributes(message.attributes)  # a corrupt attribute fails this message only
            if attributes:
                params["MessageAttributes"] = attributes
            sqs.send_message(**params)
        except Exception as exc:  # the message stays in the exhausted queue: nothing is lost
            report.failed.append((message, f"{type(exc).__name__}: {exc}"))
            keep.append(message)
            continue
        sqs.delete_message(QueueUrl=from_queue_url, ReceiptHandle=message.receipt_handle)
        report.redriven.append(message)
    for message in keep:
        release(sqs, from_queue_url, message)
    return report

"""Sending a batch's failed records where they go next: a delayed copy, a schedule, a visibility
change, or the retry-exhausted queue.

Every method reports which records' calls did NOT succeed (by the record's message id, the ``key``);
the consumer puts exactly those in ``batchItemFailures`` so the queue redelivers them. Nothing here
raises for an AWS failure: an unexpected error fails only the records it concerns.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from serverless_retry.aws import AwsClients
from serverless_retry.config import QueueTargets
from serverless_retry.envelope import MessageAttribute, sqs_message_size
from serverless_retry.terminal import FinalForm, final_message  # re-exported: the consumer's imports

if TYPE_CHECKING:
    from mypy_boto3_scheduler.type_defs import TargetTypeDef
    from mypy_boto3_sqs.type_defs import (
        ChangeMessageVisibilityBatchRequestEntryTypeDef,
        MessageAttributeValueTypeDef,
        SendMessageBatchRequestEntryTypeDef,
    )

__all__ = [
    "SCHEDULE_RETRY_POLICY",
    "Delivery",
    "FinalForm",
    "Outgoing",
    "ScheduledRetry",
    "VisibilityChange",
    "at_expression",
    "final_message",
]

SQS_BATCH_MAX_ENTRIES = 10
# A SendMessageBatch's bodies together may not exceed the service's message size limit (256 KiB
# before 2025, 1 MiB since); a queue configured above 256 KiB implies the larger limit.
_LEGACY_BATCH_BYTES = 262_144
# Scheduler keeps retrying a failed delivery to SQS for up to a day, then dead-letters the envelope.
SCHEDULE_RETRY_POLICY = {"MaximumEventAgeInSeconds": 86_400, "MaximumRetryAttempts": 185}


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One SQS message to send; ``key`` is the record it stands for."""

    key: str
    body: str
    attributes: dict[str, MessageAttribute] = field(default_factory=dict)
    delay_seconds: int = 0  # real seconds (already converted by the clock)
    group_id: str | None = None  # FIFO targets only
    dedup_id: str | None = None  # FIFO targets only


@dataclass(frozen=True, slots=True)
class ScheduledRetry:
    key: str
    name: str  # deterministic: envelope.schedule_name(id, attempt); also the ClientToken
    at: datetime  # logical UTC time the retry is due
    body: str  # the envelope JSON, delivered verbatim as the SQS message body
    group_id: str | None = None  # FIFO source queue: the record's MessageGroupId
    description: str = ""


@dataclass(frozen=True, slots=True)
class VisibilityChange:
    key: str
    receipt_handle: str
    timeout_seconds: int  # real seconds


def at_expression(due: datetime) -> str:
    """``at(YYYY-MM-DDTHH:MM:SS)`` in UTC, rounded up to the second so a retry never fires early."""
    if due.microsecond:
        due = due.replace(microsecond=0) + timedelta(seconds=1)
    return f"at({due:%Y-%m-%dT%H:%M:%S})"


def dedup_id(*parts: object) -> str:
    """A deterministic MessageDeduplicationId: a redelivered record's copy is deduplicated by FIFO."""
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()


class Delivery:
    def __init__(self, clients: AwsClients, targets: QueueTargets, logger: Logger) -> None:
        self._clients = clients
        self._targets = targets
        self._logger = logger
        self._batch_bytes = max(_LEGACY_BATCH_BYTES, targets.max_message_bytes)

    # -- SQS ----------------------------------------------------------------------------------------
    def send_delayed(self, messages: Sequence[Outgoing]) -> set[str]:
        """Delayed copies back to the source queue. Returns the keys that were not sent."""
        return self._send_batches(self._targets.queue_url, messages)

    def send_exhausted(self, messages: Sequence[Outgoing]) -> set[str]:
        """Final copies to the retry-exhausted queue. Returns the keys that were not sent."""
        return self._send_batches(self._targets.exhausted_queue_url, messages)

    def _send_batches(self, queue_url: str, messages: Sequence[Outgoing]) -> set[str]:
        failed: set[str] = set()
        for chunk in self._chunks(messages):
            failed |= self._send_batch(queue_url, chunk)
        return failed

    def _chunks(self, messages: Sequence[Outgoing]) -> Iterator[list[Outgoing]]:
        chunk: list[Outgoing] = []
        size = 0
        for message in messages:
            n = sqs_message_size(message.body, message.attributes)
            if chunk and (len(chunk) == SQS_BATCH_MAX_ENTRIES or size + n > self._batch_bytes):
                yield chunk
                chunk, size = [], 0
            chunk.append(message)
            size += n
        if chunk:
            yield chunk

    def _send_batch(self, queue_url: str, chunk: list[Outgoing]) -> set[str]:
        # Entry Ids are positions: record ids may repeat within a batch and need not match [\w-]{1,80}.
        entries: list[SendMessageBatchRequestEntryTypeDef] = []
        for i, message in enumerate(chunk):
            entry: SendMessageBatchRequestEntryTypeDef = {"Id": str(i), "MessageBody": message.body}
            if message.delay_seconds:
                entry["DelaySeconds"] = message.delay_seconds
            if message.attributes:
                entry["MessageAttributes"] = api_attributes(message.attributes)
            if message.group_id is not None:
                entry["MessageGroupId"] = message.group_id
            if message.dedup_id is not None:
                entry["MessageDeduplicationId"] = message.dedup_id
            entries.append(entry)
        try:
            response = self._clients.sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        except Exception as exc:
            self._logger.error(
                "SendMessageBatch failed; its records go back to the queue",
                extra={
                    "queue_url": queue_url,
                    "error": _describe(exc),
                    "message_ids": [m.key for m in chunk],
                },
            )
            return {m.key for m in chunk}
        failed = {chunk[int(f["Id"])].key for f in response.get("Failed", [])}
        if failed:
            self._logger.error(
                "SendMessageBatch entries failed; their records go back to the queue",
                extra={
                    "queue_url": queue_url,
                    "failures": [
                        {
                            "message_id": chunk[int(f["Id"])].key,
                            "code": f.get("Code"),
                            "error": f.get("Message"),
                        }
                        for f in response.get("Failed", [])
                    ],
                },
            )
        return failed

    def change_visibility(self, changes: Sequence[VisibilityChange]) -> set[str]:
        """Hide messages until their next attempt. Returns the keys whose change failed (they come back
        after the queue's own visibility timeout instead)."""
        failed: set[str] = set()
        for start in range(0, len(changes), SQS_BATCH_MAX_ENTRIES):
            chunk = changes[start : start + SQS_BATCH_MAX_ENTRIES]
            entries: list[ChangeMessageVisibilityBatchRequestEntryTypeDef] = [
                {"Id": str(i), "ReceiptHandle": c.receipt_handle, "VisibilityTimeout": c.timeout_seconds}
                for i, c in enumerate(chunk)
            ]
            try:
                response = self._clients.sqs.change_message_visibility_batch(
                    QueueUrl=self._targets.queue_url, Entries=entries
                )
            except Exception as exc:
                self._logger.error("ChangeMessageVisibilityBatch failed", extra={"error": _describe(exc)})
                failed.update(c.key for c in chunk)
                continue
            for f in response.get("Failed", []):
                failed.add(chunk[int(f["Id"])].key)
                self._logger.error(
                    "ChangeMessageVisibility entry failed",
                    extra={
                        "message_id": chunk[int(f["Id"])].key,
                        "code": f.get("Code"),
                        "error": f.get("Message"),
                    },
                )
        return failed

    # -- EventBridge Scheduler ----------------------------------------------------------------------
    def schedule_all(self, retries: Sequence[ScheduledRetry]) -> set[str]:
        return {r.key for r in retries if not self.schedule(r)}

    def schedule(self, retry: ScheduledRetry) -> bool:
        """Create the one-time schedule. True when it exists afterwards (created now or before)."""
        targets = self._targets
        if targets.schedule_group is None or targets.scheduler_role_arn is None:
            # Config validation requires both whenever the policy can choose the Scheduler.
            self._logger.error("a retry needs EventBridge Scheduler but no schedule group/role is configured")
            return False
        target: TargetTypeDef = {
            "Arn": targets.queue_arn,
            "RoleArn": targets.scheduler_role_arn,
            "Input": retry.body,
            "DeadLetterConfig": {"Arn": targets.dlq_arn},
            "RetryPolicy": dict(SCHEDULE_RETRY_POLICY),  # type: ignore[typeddict-item]
        }
        if retry.group_id is not None:
            target["SqsParameters"] = {"MessageGroupId": retry.group_id}
        try:
            self._clients.scheduler.create_schedule(
                Name=retry.name,
                GroupName=targets.schedule_group,
                # Same name + token for the same (id, attempt): a redelivered record cannot schedule twice.
                ClientToken=retry.name.replace(".", "-"),
                ScheduleExpression=at_expression(retry.at),
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"},
                ActionAfterCompletion="DELETE",
                State="ENABLED",
                Description=retry.description[:512],
                Target=target,
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConflictException":
                return True  # already scheduled by an earlier delivery of this record
            self._logger.error(
                "CreateSchedule failed; the record goes back to the queue",
                extra={"message_id": retry.key, "schedule": retry.name, "error": _describe(exc)},
            )
            return False
        except Exception as exc:
            self._logger.error(
                "CreateSchedule failed; the record goes back to the queue",
                extra={"message_id": retry.key, "schedule": retry.name, "error": _describe(exc)},
            )
            return False
        return True


def api_attributes(attributes: Mapping[str, MessageAttribute]) -> dict[str, MessageAttributeValueTypeDef]:
    """Envelope form (binary as base64 text) → boto3 form (binary as bytes); bytes pass through, so
    attributes received from boto3 can be sent again as they are."""
    out: dict[str, MessageAttributeValueTypeDef] = {}
    for name, attr in attributes.items():
        value: dict[str, Any] = {"DataType": attr["DataType"]}
        if "BinaryValue" in attr:
            binary: Any = attr["BinaryValue"]
            value["BinaryValue"] = binary if isinstance(binary, bytes) else base64.b64decode(binary)
        if "StringValue" in attr:
            value["StringValue"] = attr["StringValue"]
        out[name] = value  # type: ignore[assignment]
    return out


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', type(exc).__name__)}: {error.get('Message', '')}"
    return f"{type(exc).__name__}: {exc}"

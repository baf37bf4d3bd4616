"""What Lambda's SQS poller does with a batch, as pure functions: build the event from ReceiveMessage
results, and read the function's answer to decide which messages to delete.

The rules for the answer are AWS's (Lambda developer guide, "Reporting batch item failures"): with
``ReportBatchItemFailures`` a null/empty response or an empty/null ``batchItemFailures`` list is a
complete success; an invalid response, an item without a usable ``itemIdentifier`` or one naming a
message not in the batch fails the whole batch. Without it, any return is success. An error (the
handler raised, timed out or crashed) always fails the whole batch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from serverless_retry.testing import sqs_record

__all__ = ["SYNC_PAYLOAD_LIMIT", "BatchVerdict", "judge_batch", "split_by_payload", "sqs_event"]

# Lambda's limit on a synchronous invocation's payload (request and response): 6 MB.
SYNC_PAYLOAD_LIMIT = 6 * 1024 * 1024
M = TypeVar("M", bound=Mapping[str, Any])

# System attributes Lambda copies into each record's "attributes" when SQS returns them.
_RECORD_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "AWSTraceHeader",
    "DeadLetterQueueSourceArn",
)


def sqs_event(messages: Iterable[Mapping[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """The Lambda event for ``messages`` as boto3's ReceiveMessage returns them (with
    ``MessageSystemAttributeNames=["All"]`` and ``MessageAttributeNames=["All"]``), built by the same
    record builder users' tests use (:func:`serverless_retry.testing.sqs_record`)."""
    records = []
    for message in messages:
        system = message.get("Attributes") or {}
        records.append(
            sqs_record(
                message["Body"],
                message_id=message["MessageId"],
                receipt_handle=message["ReceiptHandle"],
                attributes=message.get("MessageAttributes") or {},
                system_attributes={k: str(system[k]) for k in _RECORD_ATTRIBUTES if k in system},
                queue_arn=queue_arn,
                region=region,
                md5_of_body=message.get("MD5OfBody"),
                md5_of_message_attributes=message.get("MD5OfMessageAttributes"),
            )
        )
    return {"Records": records}


def split_by_payload(
    messages: Sequence[M], queue_arn: str, region: str, limit: int = SYNC_PAYLOAD_LIMIT
) -> list[list[M]]:
    """``messages`` in order, cut into runs whose Lambda event stays within ``limit`` bytes (the
    poller invokes once per run, as Lambda keeps each batch within the invocation payload limit)."""
    runs: list[list[M]] = []
    current: list[M] = []
    size = len(b'{"Records": []}')
    for message in messages:
        record = len(json.dumps(sqs_event([message], queue_arn, region)["Records"][0]).encode()) + 2
        if current and size + record > limit:
            runs.append(current)
            current, size = [], len(b'{"Records": []}')
        current.append(message)
        size += record
    if current:
        runs.append(current)
    return runs


@dataclass(frozen=True)
class BatchVerdict:
    """Which messages of a batch to delete; ``why`` explains a whole-batch failure."""

    delete: tuple[str, ...]
    keep: tuple[str, ...]
    why: str = ""

    @property
    def complete_failure(self) -> bool:
        return not self.delete and bool(self.keep) and bool(self.why)


def judge_batch(
    message_ids: Sequence[str],
    *,
    errored: bool,
    response: Any,
    report_batch_item_failures: bool,
    error_text: str = "",
) -> BatchVerdict:
    """Apply Lambda's rules to one invocation's outcome. ``message_ids`` are the batch, in order."""
    ids = tuple(message_ids)

    def fail_all(why: str) -> BatchVerdict:
        return BatchVerdict(delete=(), keep=ids, why=why)

    if errored:
        return fail_all(error_text or "the function returned an error")
    if not report_batch_item_failures or response is None:
        return BatchVerdict(delete=ids, keep=())
    if not isinstance(response, Mapping):
        return fail_all(f"invalid partial batch response (not an object): {response!r:.200}")
    failures = response.get("batchItemFailures")
    if failures is None or failures == []:
        return BatchVerdict(delete=ids, keep=())
    if not isinstance(failures, list):
        return fail_all("invalid partial batch response: batchItemFailures is not a list")
    keep: set[str] = set()
    known = set(ids)
    for item in failures:
        identifier = item.get("itemIdentifier") if isinstance(item, Mapping) else None
        if not isinstance(identifier, str) or not identifier:
            return fail_all(f"invalid partial batch response: item {item!r:.200} has no itemIdentifier")
        if identifier not in known:
            return fail_all(f"invalid partial batch response: {identifier!r} is not in the batch")
        keep.add(identifier)
    return BatchVerdict(
        delete=tuple(i for i in ids if i not in keep), keep=tuple(i for i in ids if i in keep)
    )

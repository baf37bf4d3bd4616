"""What Lambda's stream poller does with one invocation's outcome, as pure functions: which records
of the batch are done, and what the next batch from the shard's checkpoint is.

The answer (Lambda developer guide, "Configuring partial batch response with Kinesis Data Streams",
https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html, and the
same page for DynamoDB, services-ddb-batchfailurereporting): without ``ReportBatchItemFailures``
any return is a complete success and an error a complete failure. With it, a null or empty response
and a null or empty ``batchItemFailures`` list are a complete success; an empty or null
``itemIdentifier``, or an item with a bad key name, is a complete failure; otherwise Lambda
checkpoints before the record with the lowest reported sequence number and retries from there. An
itemIdentifier that names no record of the batch is taken as a complete failure here, as for SQS
(the streams page says nothing of it; it names no record to checkpoint before).

Retries (kinesis-on-failure-destination.html): a function error is retried until
MaximumRetryAttempts (-1: no limit) or MaximumRecordAgeInSeconds; BisectBatchOnFunctionError
splits a failed batch in two ("splitting batches doesn't consume the retry quota"), regardless of
ReportBatchItemFailures; with both on, a partial answer retries only the records from the reported
one. A throttle (before invocation) is retried until the records expire, consuming no retries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RECORD_AGE_EXCEEDED",
    "RETRY_ATTEMPTS_EXHAUSTED",
    "Planned",
    "RetryPolicy",
    "StreamVerdict",
    "expired_prefix",
    "judge_stream_batch",
    "plan_next",
]

# The on-failure invocation record's requestContext.condition.
RETRY_ATTEMPTS_EXHAUSTED = "RetryAttemptsExhausted"
RECORD_AGE_EXCEEDED = "RecordAgeExceeded"


@dataclass(frozen=True)
class StreamVerdict:
    """``done`` records from the batch's start succeeded; the rest are retried. ``why`` explains a
    failure; ``partial`` says the function itself named where to retry from."""

    done: int
    size: int
    why: str = ""
    partial: bool = False

    @property
    def success(self) -> bool:
        return self.done == self.size

    @property
    def complete_failure(self) -> bool:
        return self.done == 0 and not self.partial and self.size > 0


def judge_stream_batch(
    sequence_numbers: Sequence[str],
    *,
    errored: bool,
    response: Any,
    report_batch_item_failures: bool,
    error_text: str = "",
) -> StreamVerdict:
    """Lambda's rules for one invocation of a stream batch (``sequence_numbers`` in shard order)."""
    size = len(sequence_numbers)

    def fail_all(why: str) -> StreamVerdict:
        return StreamVerdict(done=0, size=size, why=why)

    if errored:
        return fail_all(error_text or "the function returned an error")
    if not report_batch_item_failures or response is None or response in ({}, ""):
        return StreamVerdict(done=size, size=size)
    if not isinstance(response, Mapping):
        return fail_all(f"invalid partial batch response (not an object): {response!r:.200}")
    failures = response.get("batchItemFailures")
    if failures is None or failures == []:
        return StreamVerdict(done=size, size=size)
    if not isinstance(failures, list):
        return fail_all("invalid partial batch response: batchItemFailures is not a list")
    position = {seq: i for i, seq in enumerate(sequence_numbers)}
    lowest = size
    for item in failures:
        identifier = item.get("itemIdentifier") if isinstance(item, Mapping) else None
        if not isinstance(identifier, str) or not identifier:
            return fail_all(f"invalid partial batch response: item {item!r:.200} has no itemIdentifier")
        if identifier not in position:
            return fail_all(f"invalid partial batch response: {identifier!r} is not in the batch")
        lowest = min(lowest, position[identifier])
    return StreamVerdict(
        done=lowest, size=size, why=f"batch item failure at {sequence_numbers[lowest]}", partial=True
    )


@dataclass(frozen=True)
class RetryPolicy:
    maximum_retry_attempts: int = -1  # -1: until the records expire
    maximum_record_age: int = -1  # seconds; -1: no limit
    bisect: bool = False

    @classmethod
    def of(cls, mapping: Mapping[str, Any]) -> RetryPolicy:
        def number(key: str) -> int:
            value = mapping.get(key)
            return -1 if value is None else int(value)

        return cls(
            maximum_retry_attempts=number("MaximumRetryAttempts"),
            maximum_record_age=number("MaximumRecordAgeInSeconds"),
            bisect=bool(mapping.get("BisectBatchOnFunctionError")),
        )


# The next batches from the checkpoint: (records, retries already spent on them); past them, a
# fresh batch of up to BatchSize.
Plan = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Planned:
    """After one invocation: ``done`` records succeeded; then ``discard`` records are given up
    (sent to the on-failure destination with ``condition``); then ``plan``."""

    done: int
    discard: int
    plan: Plan
    condition: str = ""


def plan_next(verdict: StreamVerdict, retries: int, policy: RetryPolicy, rest: Plan) -> Planned:
    """What follows ``verdict`` for a batch on which ``retries`` retries were spent; ``rest`` is the
    plan that followed it."""
    if verdict.success:
        return Planned(done=verdict.size, discard=0, plan=rest)
    left = verdict.size - verdict.done
    if verdict.complete_failure and policy.bisect and left > 1:
        half = left // 2
        return Planned(done=0, discard=0, plan=((half, retries), (left - half, retries), *rest))
    limit = policy.maximum_retry_attempts
    if limit != -1 and retries + 1 > limit:
        return Planned(done=verdict.done, discard=left, plan=rest, condition=RETRY_ATTEMPTS_EXHAUSTED)
    return Planned(done=verdict.done, discard=0, plan=((left, retries + 1), *rest))


def expired_prefix(arrivals: Sequence[float], now: float, maximum_record_age: int) -> int:
    """How many records from the start of the shard's pending records are older than the
    mapping's MaximumRecordAgeInSeconds (Lambda discards them instead of invoking)."""
    if maximum_record_age == -1:
        return 0
    count = 0
    for arrival in arrivals:
        if now - arrival <= maximum_record_age:
            break
        count += 1
    return count

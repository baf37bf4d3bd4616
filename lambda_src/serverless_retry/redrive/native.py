"""SQS's own redrive, ``StartMessageMoveTask``, and when it cannot be used.

It applies to a dead-letter queue fed by an SQS redrive policy only (AWS: "currently limited to
supporting message redrive from queues that are configured as dead-letter queues of other Amazon SQS
queues"), moves every message unchanged, at most 500 messages per second, one task per queue at a time.
:func:`check_native` says why it does not apply to a queue (a retry-exhausted queue, Lambda destination
records, Scheduler dead-letter events) before anything is started.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from serverless_retry.redrive.queue import Scan, attribute_int

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

__all__ = ["NativeCheck", "check_native", "start_native", "wait_native"]


@dataclass(frozen=True)
class NativeCheck:
    queue_arn: str
    destination_arn: str | None
    source_queue_urls: tuple[str, ...]  # the queues whose redrive policy targets this one
    approximate_messages: int | None
    sampled: int
    origins: dict[str, int]
    problems: tuple[str, ...]  # any problem: StartMessageMoveTask does not apply
    warnings: tuple[str, ...]

    @property
    def applies(self) -> bool:
        return not self.problems


def _queue_arn(sqs: SQSClient, queue_url: str) -> tuple[str, int | None]:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["QueueArn", "ApproximateNumberOfMessages"]
    )["Attributes"]
    return attributes["QueueArn"], attribute_int(attributes, "ApproximateNumberOfMessages")


def check_native(
    sqs: SQSClient, queue_url: str, to_queue_url: str | None, *, sample: int = 10
) -> NativeCheck:
    """Whether StartMessageMoveTask can redrive ``queue_url``, and if not, why. Looks at up to
    ``sample`` messages and releases them at once."""
    queue_arn, approximate = _queue_arn(sqs, queue_url)
    destination_arn = _queue_arn(sqs, to_queue_url)[0] if to_queue_url else None
    sources = tuple(sqs.list_dead_letter_source_queues(QueueUrl=queue_url).get("queueUrls", []))
    problems: list[str] = []
    warnings: list[str] = []
    if not sources:
        problems.append(
            "no SQS queue's redrive policy names this queue as its dead-letter queue: StartMessageMoveTask "
            "only moves messages out of DLQs whose sources are SQS queues. A retry-exhausted queue is filled "
            "by the consumer (and a failure queue by Lambda destinations or a pipe), not by a redrive policy; "
            "use the client-side redrive (leave out --native)"
        )
    if destination_arn is not None and destination_arn.endswith(".fifo") != queue_arn.endswith(".fifo"):
        problems.append(
            "a FIFO dead-letter queue redrives only to a FIFO queue, a standard one only to a standard one"
        )
    scan = Scan(sqs, queue_url, visibility=30, wait_seconds=0)
    try:
        looked = list(scan.messages(sample))
    finally:
        scan.release_all()
    origins = Counter(m.origin for m in looked)
    terminal = [m for m in looked if m.kind in ("envelope", "compact", "pointer")]
    if terminal:
        problems.append(
            f"{len(terminal)} of {len(looked)} sampled messages are serverless-retry final messages (outcome "
            f"{terminal[0].outcome}): moved unchanged they would reach the consumer as they are and be rejected "
            "as invalid-envelope; the client-side redrive unwraps them"
        )
    healing = [m for m in looked if m.kind == "self-healing"]
    if healing:
        problems.append(
            f"{len(healing)} of {len(looked)} sampled messages are self-healing records (outcome "
            f"{healing[0].outcome}): no queue's consumer takes them; re-invoke the function that failed "
            "with --to-function"
        )
    if origins["lambda-destination"]:
        problems.append(
            f"{origins['lambda-destination']} of {len(looked)} sampled messages are Lambda on-failure destination "
            "records: their body is the invocation record, not the original event, and no SQS queue is their "
            "source; StartMessageMoveTask would hand the record to the consumer as is"
        )
    if origins["scheduler-dlq"] and destination_arn is None:
        problems.append(
            f"{origins['scheduler-dlq']} of {len(looked)} sampled messages were put here by EventBridge Scheduler "
            "(a retry schedule that could not deliver), not moved by the redrive policy: they have no source queue "
            "to go back to; give --to-queue-url"
        )
    if origins["unknown"] and destination_arn is None:
        warnings.append(
            f"{origins['unknown']} of {len(looked)} sampled messages carry no DeadLetterQueueSourceArn (SQS sets it "
            "when its redrive policy moves a message): without --to-queue-url SQS returns each message to the queue "
            "it came from, and these may have none"
        )
    return NativeCheck(
        queue_arn=queue_arn,
        destination_arn=destination_arn,
        source_queue_urls=sources,
        approximate_messages=approximate,
        sampled=len(looked),
        origins=dict(origins),
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


def start_native(sqs: SQSClient, check: NativeCheck, *, rate: float | None = None) -> str:
    """Start the move task; returns its handle. Refuses when :func:`check_native` found a problem."""
    if not check.applies:
        raise ValueError("StartMessageMoveTask does not apply: " + "; ".join(check.problems))
    params: dict[str, Any] = {"SourceArn": check.queue_arn}
    if check.destination_arn:
        params["DestinationArn"] = check.destination_arn
    if rate is not None:
        params["MaxNumberOfMessagesPerSecond"] = int(rate)
    return str(sqs.start_message_move_task(**params)["TaskHandle"])


def wait_native(
    sqs: SQSClient,
    queue_arn: str,
    handle: str,
    *,
    timeout: float,
    poll: float = 2.0,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Poll ListMessageMoveTasks until the task ends or ``timeout`` passes; returns its last status
    (``Status`` RUNNING means it goes on in AWS after we stop watching)."""
    deadline = monotonic() + timeout
    while True:
        tasks = sqs.list_message_move_tasks(SourceArn=queue_arn, MaxResults=10).get("Results", [])
        # ListMessageMoveTasks gives a TaskHandle for running tasks only: match it, else the newest.
        task: dict[str, Any] = next(
            (dict(t) for t in tasks if t.get("TaskHandle") == handle), dict(tasks[0]) if tasks else {}
        )
        if on_progress is not None:
            on_progress(task)
        if task.get("Status") != "RUNNING" or monotonic() >= deadline:
            return task
        sleep(poll)

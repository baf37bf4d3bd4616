"""Shared pieces of the benchmarks: the consumer's environment, processors, in-memory AWS fakes,
SQS events, a null stdout and timing helpers.

The consumer is built the way ``consumer_from_env`` builds it for the Lambda handler (settings from
environment variables, processor imported from ``module:function``), except that its AWS clients are
injected. Processors live here so ``SERVERLESS_RETRY_PROCESSOR=_common:noop`` imports them (the
script's own directory is first on ``sys.path``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from serverless_retry.aws import AwsClients
from serverless_retry.config import ConsumerSettings
from serverless_retry.consumer import RetryingConsumer
from serverless_retry.errors import RetryableError
from serverless_retry.message import Message

ACCOUNT = "123456789012"
REGION = "us-east-1"
QUEUE = "orders"
BATCH = 10
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/orders-scheduler"
SCHEDULE_GROUP = "orders-retries"

# The example policy of the retry policy reference (docs/retry-policy.md): a first failure of an unnamed error waits ≤ 10 s, so `auto` picks the SQS delay.
EXAMPLE_POLICY: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "tests" / "events" / "policy-design.json").read_text()
)

POWERTOOLS_ENV = {
    "POWERTOOLS_SERVICE_NAME": "orders",
    "POWERTOOLS_METRICS_NAMESPACE": "ServerlessRetry",
}


# -- processors (ours take a Message, Powertools' take an SQSRecord) ------------------------------------
def noop(message: Message) -> None:
    return None


def reads_message(message: Message) -> None:
    """What a real processor does first: read the body and an attribute."""
    message.body  # noqa: B018
    message.attributes["tenant"]["StringValue"]


def always_retry(message: Message) -> None:
    raise RetryableError("downstream busy")


def baseline_noop(record: Any) -> None:
    return None


def baseline_reads(record: Any) -> None:
    record.body  # noqa: B018
    record.message_attributes["tenant"].string_value  # noqa: B018


def baseline_raise(record: Any) -> None:
    raise RetryableError("downstream busy")


# -- building the consumer ---------------------------------------------------------------------------
def queue_url(name: str, endpoint: str = f"https://sqs.{REGION}.amazonaws.com") -> str:
    return f"{endpoint}/{ACCOUNT}/{name}"


def queue_arn(name: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


def consumer_env(
    policy: Mapping[str, Any],
    processor: str,
    *,
    endpoint: str = f"https://sqs.{REGION}.amazonaws.com",
    queue: str = QUEUE,
) -> dict[str, str]:
    """The environment Terraform gives the consumer Lambda (the shared contract's variables)."""
    return {
        "SERVERLESS_RETRY_PROCESSOR": processor,
        "SERVERLESS_RETRY_POLICY": json.dumps(policy),
        "SERVERLESS_RETRY_QUEUE_URL": queue_url(queue, endpoint),
        "SERVERLESS_RETRY_QUEUE_ARN": queue_arn(queue),
        "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": queue_url(f"{queue}-exhausted", endpoint),
        "SERVERLESS_RETRY_DLQ_ARN": queue_arn(f"{queue}-dlq"),
        "SERVERLESS_RETRY_SCHEDULE_GROUP": SCHEDULE_GROUP,
        "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN": ROLE_ARN,
        **POWERTOOLS_ENV,
    }


def build_consumer(env: Mapping[str, str], clients: AwsClients) -> RetryingConsumer:
    """What ``consumer_from_env`` does (no idempotency table), with the clients injected."""
    settings = ConsumerSettings.from_env(env)
    return RetryingConsumer.from_settings(settings, settings.load_processor(), clients=clients)


# -- AWS faked in memory -------------------------------------------------------------------------------
class FakeSqs:
    """The SQS calls the delivery makes; every entry succeeds. Counts calls by operation."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def send_message_batch(self, *, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls["SendMessageBatch"] += 1
        return {"Successful": [{"Id": e["Id"], "MessageId": f"m-{e['Id']}"} for e in Entries], "Failed": []}

    def change_message_visibility_batch(
        self, *, QueueUrl: str, Entries: list[dict[str, Any]]
    ) -> dict[str, Any]:
        self.calls["ChangeMessageVisibilityBatch"] += 1
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


class FakeScheduler:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def create_schedule(self, **params: Any) -> dict[str, Any]:
        self.calls["CreateSchedule"] += 1
        return {"ScheduleArn": f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/x/{params['Name']}"}


def fake_clients(sqs: FakeSqs, scheduler: FakeScheduler) -> AwsClients:
    return AwsClients.of(sqs=cast(Any, sqs), scheduler=cast(Any, scheduler))


# -- events -------------------------------------------------------------------------------------------
def event_from_messages(messages: Sequence[Mapping[str, Any]], arn: str) -> dict[str, Any]:
    """The Lambda event an event source mapping builds from ReceiveMessage output."""
    records = []
    for m in messages:
        attributes: dict[str, Any] = {}
        for name, value in m.get("MessageAttributes", {}).items():
            attribute: dict[str, Any] = {
                "dataType": value["DataType"],
                "stringListValues": [],
                "binaryListValues": [],
            }
            if "StringValue" in value:
                attribute["stringValue"] = value["StringValue"]
            if "BinaryValue" in value:
                attribute["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
            attributes[name] = attribute
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": dict(m.get("Attributes", {})),
                "messageAttributes": attributes,
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": REGION,
            }
        )
    return {"Records": records}


# -- output -------------------------------------------------------------------------------------------
@contextlib.contextmanager
def stdout_to_null() -> Iterator[TextIO]:
    """Send stdout (Powertools' JSON logs and EMF metric lines) to /dev/null; yield the real stdout.

    Powertools' Logger binds its handler to ``sys.stdout`` when it is created, so build loggers and
    consumers inside this block. The lines are still formatted and written, only the sink is null.
    """
    real = sys.stdout
    with open(os.devnull, "w", encoding="utf-8") as null:
        sys.stdout = null
        try:
            yield real
        finally:
            sys.stdout = real


def table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        cells = [
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells), file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


# -- timing -------------------------------------------------------------------------------------------
def loops_for(fn: Callable[[], object], seconds: float) -> int:
    """How many calls of ``fn`` take about ``seconds`` (at least 1)."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / 4 or n >= 1 << 20:
            return max(1, round(n * seconds / max(elapsed, 1e-9)))
        n *= 4


def timed(fn: Callable[[], object], loops: int) -> float:
    """Seconds per call of ``fn`` over ``loops`` calls."""
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def median(values: list[float]) -> float:
    return statistics.median(values)

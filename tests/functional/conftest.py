"""Functional tier: the consumer against moto's SQS and Scheduler (in-process ``mock_aws``).

moto's SQS measures delays and visibility timeouts with its own clock; the ``clock`` fixture patches
it to follow the test's FrozenClock, so advancing the clock is what makes a delayed copy due.
"""

from __future__ import annotations

import io
import json
import logging
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import Any
from unittest import mock

import boto3
import pytest
from aws_lambda_powertools import Logger
from moto import mock_aws
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.config import QueueTargets
from serverless_retry.consumer import RetryingConsumer
from serverless_retry.consumer.claims import ClaimStore, DynamoDBClaims
from serverless_retry.message import Processor
from serverless_retry.observability import ConsumerMetrics
from serverless_retry.policy import RetryPolicy

from tests.support.fakeaws import FakeDynamoDBClient

ACCOUNT = "123456789012"
REGION = "us-east-1"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/orders-scheduler"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_SCHEDULER", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "orders")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "ServerlessRetry")


@pytest.fixture
def clock() -> Iterator[FrozenClock]:
    frozen = FrozenClock()

    def millis() -> float:
        return frozen.now().timestamp() * 1000

    def seconds() -> float:
        return frozen.now().timestamp()

    # Records built by serverless_retry.testing are stamped (SentTimestamp, first receive) by it too:
    # the consumer takes a decision's "now" from the record's own timestamps.
    with (
        mock.patch("moto.sqs.models.unix_time_millis", millis),
        mock.patch("moto.sqs.models.unix_time", seconds),
        mock.patch("serverless_retry.testing.time", SimpleNamespace(time=seconds)),
    ):
        yield frozen


@dataclass
class Stack:
    """A source queue (with DLQ redrive), a retry-exhausted queue and a schedule group, on moto."""

    sqs: Any
    scheduler: Any
    queue_url: str
    queue_arn: str
    dlq_url: str
    dlq_arn: str
    exhausted_url: str
    group: str
    schedule_dlq_arn: str = ""  # standard queue the schedules dead-letter to (the DLQ unless FIFO)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def targets(self, **overrides: Any) -> QueueTargets:
        values: dict[str, Any] = {
            "queue_url": self.queue_url,
            "queue_arn": self.queue_arn,
            "exhausted_queue_url": self.exhausted_url,
            "dlq_arn": self.schedule_dlq_arn or self.dlq_arn,
            "schedule_group": self.group,
            "scheduler_role_arn": ROLE_ARN,
        }
        values.update(overrides)
        return QueueTargets(**values)

    def called(self, operation: str) -> list[dict[str, Any]]:
        return [params for name, params in self.calls if name == operation]

    def receive(self, url: str, *, visibility: int = 30, limit: int = 10) -> list[dict[str, Any]]:
        """Every currently visible message (bounded), with all system and message attributes."""
        out: list[dict[str, Any]] = []
        for _ in range(limit):
            got = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                VisibilityTimeout=visibility,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not got:
                break
            out.extend(got)
        return out

    def drain(self, url: str) -> list[dict[str, Any]]:
        """Receive and delete every visible message (up to 5000)."""
        messages = self.receive(url, limit=500)
        for m in messages:
            self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        return messages

    def schedules(self) -> list[dict[str, Any]]:
        names = [s["Name"] for s in self.scheduler.list_schedules(GroupName=self.group).get("Schedules", [])]
        return [self.scheduler.get_schedule(GroupName=self.group, Name=n) for n in names]


def make_stack(name: str = "orders", *, fifo: bool = False, max_receive_count: int = 5) -> Stack:
    sqs = boto3.client("sqs", region_name=REGION)
    scheduler = boto3.client("scheduler", region_name=REGION)
    suffix = ".fifo" if fifo else ""
    fifo_attrs = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if fifo else {}
    dlq_url = sqs.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=fifo_attrs)["QueueUrl"]
    dlq_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}-dlq{suffix}"
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)})
    queue_url = sqs.create_queue(
        QueueName=f"{name}{suffix}",
        Attributes={"VisibilityTimeout": "30", "RedrivePolicy": redrive, **fifo_attrs},
    )["QueueUrl"]
    exhausted_url = sqs.create_queue(QueueName=f"{name}-exhausted{suffix}", Attributes=fifo_attrs)["QueueUrl"]
    group = f"{name}-retries"
    scheduler.create_schedule_group(Name=group)
    # The Scheduler takes no FIFO dead-letter queue: a FIFO source's schedules use a standard one.
    schedule_dlq_arn = dlq_arn
    if fifo:
        sqs.create_queue(QueueName=f"{name}-schedule-dlq")
        schedule_dlq_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}-schedule-dlq"
    stack = Stack(
        sqs=sqs,
        scheduler=scheduler,
        queue_url=queue_url,
        queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}{suffix}",
        dlq_url=dlq_url,
        dlq_arn=dlq_arn,
        exhausted_url=exhausted_url,
        group=group,
        schedule_dlq_arn=schedule_dlq_arn,
    )

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        stack.calls.append((model.name, json.loads(json.dumps(params, default=repr))))

    for client in (sqs, scheduler):
        client.meta.events.register("before-parameter-build.*.*", record)
    return stack


@pytest.fixture
def aws(clock: FrozenClock) -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture
def stack(aws: None) -> Stack:
    return make_stack()


class _CurrentStdout(io.TextIOBase):
    """Writes to whatever sys.stdout is now: pytest swaps it per test, a logging handler would
    otherwise keep writing to the first test's (closed) capture."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


TEST_LOGGER = Logger(service="orders-test", logger_handler=logging.StreamHandler(_CurrentStdout()))
QUIET_LOGGER = Logger(
    service="orders-quiet", level="ERROR", logger_handler=logging.StreamHandler(_CurrentStdout())
)


def make_consumer(
    stack: Stack,
    processor: Processor,
    policy: dict[str, Any],
    clock: FrozenClock,
    *,
    clients: AwsClients | None = None,
    seed: int = 7,
    logger: Logger | None = None,
    claims: ClaimStore | None = None,
    **target_overrides: Any,
) -> RetryingConsumer:
    """``claims``: the consumer's claims store; a FIFO ordered one, which needs a store, gets an
    in-memory table when none is given."""
    targets = stack.targets(**target_overrides)
    if claims is None and targets.in_place:
        table = FakeDynamoDBClient(clock, random.Random(seed))
        claims = DynamoDBClaims(lambda: table, "claims", retention_seconds=targets.retention_seconds)
    return RetryingConsumer(
        processor,
        RetryPolicy.from_dict(policy),
        targets,
        clients=clients or AwsClients.of(sqs=stack.sqs, scheduler=stack.scheduler),
        clock=clock,
        rand=random.Random(seed),
        logger=logger or TEST_LOGGER,
        metrics=ConsumerMetrics(),
        claims=claims,
    )


def event_from(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """The Lambda event an event source mapping builds from received SQS messages."""
    records = []
    for m in messages:
        attributes = {k: v for k, v in m.get("Attributes", {}).items()}
        message_attributes = {}
        for name, value in m.get("MessageAttributes", {}).items():
            converted: dict[str, Any] = {
                "dataType": value["DataType"],
                "stringListValues": [],
                "binaryListValues": [],
            }
            if "StringValue" in value:
                converted["stringValue"] = value["StringValue"]
            if "BinaryValue" in value:
                import base64

                converted["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
            message_attributes[name] = converted
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": attributes,
                "messageAttributes": message_attributes,
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
        )
    return {"Records": records}


def failure_ids(response: dict[str, Any]) -> list[str]:
    return [f["itemIdentifier"] for f in response["batchItemFailures"]]


def envelope_of(body: str) -> dict[str, Any]:
    document = json.loads(body)
    assert isinstance(document, dict)
    assert "serverless_retry" in document
    return document


def at_of(moment: datetime) -> str:
    return f"at({moment:%Y-%m-%dT%H:%M:%S})"


Raiser = Callable[..., None]

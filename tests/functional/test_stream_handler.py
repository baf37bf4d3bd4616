"""``serverless_retry.handlers.stream.handler``, built from the environment as in Lambda (claims on, as
the module's default): a stream record's retry copy, fed back as the retry queue's SQS event through
the same handler, runs the same processor with attempt 2 and the stream fields intact; a record that
keeps failing ends in the retry-exhausted queue with the reason."""

from __future__ import annotations

import base64
import copy
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import boto3
import pytest
from serverless_retry import environment
from serverless_retry.clock import FrozenClock
from serverless_retry.errors import ConfigError
from serverless_retry.redrive.options import RedriveOptions
from serverless_retry.redrive.queue import redrive
from serverless_retry.streams.stream_message import StreamMessage
from serverless_retry.terminal import read_terminal
from serverless_retry.testing import lambda_context

from tests.functional.conftest import REGION, ROLE_ARN, Stack, event_from, failure_ids

HANDLER = "serverless_retry.handlers.stream"
EVENTS = Path(__file__).resolve().parents[1] / "events"
POLICY = {"max_attempts": 3, "backoff": {"strategy": "fixed", "base_seconds": 20, "max_seconds": 600}}
RUNS: list[StreamMessage] = []
FIXED: list[bool] = []  # set once the "downstream" is fixed: always-fails then succeeds


def process(message: StreamMessage) -> None:
    """The user's processor the handler imports (SERVERLESS_RETRY_PROCESSOR)."""
    RUNS.append(message)
    if message.kind == "kinesis":
        kind = message.json()["behaviour"]
    else:
        image = message.new_image if message.new_image is not None else message.old_image
        assert image is not None
        kind = image["behaviour"]
    if kind == "retryable" and message.attempt == 1:
        raise TimeoutError("downstream timed out")
    if kind == "always-fails" and not FIXED:
        raise ConnectionError("downstream refused")


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return loaded


@pytest.fixture
def handler(stack: Stack, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    RUNS.clear()
    FIXED.clear()
    boto3.client("dynamodb", region_name=REGION).create_table(
        TableName="stream-claims",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    env = {
        "SERVERLESS_RETRY_PROCESSOR": "tests.functional.test_stream_handler:process",
        "SERVERLESS_RETRY_POLICY": json.dumps(POLICY),
        "SERVERLESS_RETRY_QUEUE_URL": stack.queue_url,
        "SERVERLESS_RETRY_QUEUE_ARN": stack.queue_arn,
        "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": stack.exhausted_url,
        "SERVERLESS_RETRY_DLQ_ARN": stack.dlq_arn,
        "SERVERLESS_RETRY_SCHEDULE_GROUP": stack.group,
        "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN": ROLE_ARN,
        "SERVERLESS_RETRY_CLAIMS_TABLE": "stream-claims",
        "SERVERLESS_RETRY_VISIBILITY_TIMEOUT_SECONDS": "30",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(environment, "clock", lambda env: clock)  # the test's clock, as moto's
    monkeypatch.delitem(sys.modules, HANDLER, raising=False)
    yield importlib.import_module(HANDLER)
    sys.modules.pop(HANDLER, None)


def retry_queue_round(stack: Stack, module: ModuleType) -> int:
    """One receive of the retry queue through the handler; what it does not report is deleted."""
    messages = stack.receive(stack.queue_url)
    if messages:
        failed = set(failure_ids(module.handler(event_from(messages, stack.queue_arn), lambda_context())))
        for m in messages:
            if m["MessageId"] not in failed:
                stack.sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=m["ReceiptHandle"])
    return len(messages)


def kinesis_record(kind: str) -> dict[str, Any]:
    record = copy.deepcopy(sample("kinesis-batch.json")["Records"][1])
    record["kinesis"]["data"] = base64.b64encode(
        json.dumps({"order_id": "o-2", "behaviour": kind}).encode()
    ).decode()
    return record


def test_the_retry_copy_runs_the_same_processor_with_attempt_2(
    stack: Stack, clock: FrozenClock, handler: ModuleType
) -> None:
    event = {"Records": [kinesis_record("retryable")]}
    assert handler.handler(event, lambda_context()) == {"batchItemFailures": []}
    clock.advance(21)
    assert retry_queue_round(stack, handler) == 1

    first, retry = RUNS
    assert (first.attempt, retry.attempt) == (1, 2)
    for field in (
        "kind", "data", "partition_key", "sequence_number", "shard_id", "event_source_arn", "event_id",
        "approximate_arrival",
    ):  # fmt: skip
        assert getattr(retry, field) == getattr(first, field), field
    assert retry.record == first.record
    assert retry.retry.id == first.retry.id
    assert retry.retry.source == first.event_source_arn
    assert [h["error_type"] for h in retry.retry.history] == ["TimeoutError"]
    clock.advance(60)
    assert stack.receive(stack.queue_url) == []  # processed: nothing left anywhere
    assert stack.receive(stack.exhausted_url) == []


def test_a_record_that_keeps_failing_ends_in_the_exhausted_queue_with_the_reason(
    stack: Stack, clock: FrozenClock, handler: ModuleType
) -> None:
    record = copy.deepcopy(sample("dynamodb-stream-batch.json")["Records"][1])
    record["dynamodb"]["NewImage"]["behaviour"] = {"S": "always-fails"}
    assert handler.handler({"Records": [record]}, lambda_context()) == {"batchItemFailures": []}
    for _ in range(10):  # bounded: attempts 2 and 3 come 20 s apart
        clock.advance(30)
        retry_queue_round(stack, handler)
    assert [(m.attempt, m.event_name, m.keys) for m in RUNS] == [
        (1, "MODIFY", {"order_id": "o-2"}),
        (2, "MODIFY", {"order_id": "o-2"}),
        (3, "MODIFY", {"order_id": "o-2"}),
    ]
    (final,) = [
        read_terminal(m["Body"], m.get("MessageAttributes")) for m in stack.drain(stack.exhausted_url)
    ]
    assert final.outcome == "exhausted"
    assert final.reason.startswith("attempt 3 >= max_attempts 3")
    assert final.id == RUNS[0].retry.id
    assert final.error_type == "ConnectionError"
    assert json.loads(final.body) == record  # the stream record, position and all
    assert stack.receive(stack.queue_url) == []


def test_a_redriven_final_copy_runs_again_as_the_same_stream_message(
    stack: Stack, clock: FrozenClock, handler: ModuleType
) -> None:
    """The operator's redrive of the retry-exhausted queue into the retry queue (downstream fixed)
    runs the record once more through the same handler and processor, in the chain's next generation."""
    record = copy.deepcopy(sample("dynamodb-stream-batch.json")["Records"][1])
    record["dynamodb"]["NewImage"]["behaviour"] = {"S": "always-fails"}
    handler.handler({"Records": [record]}, lambda_context())
    for _ in range(10):  # bounded: attempts 2 and 3, then the final copy
        clock.advance(30)
        retry_queue_round(stack, handler)
    assert [m.attempt for m in RUNS] == [1, 2, 3]
    FIXED.append(True)

    def ticking() -> float:  # moto's receive polls its clock until the wait is over: let it pass
        return clock.advance(0.01).timestamp()

    with mock.patch("moto.sqs.models.unix_time", ticking):
        options = RedriveOptions(from_queue_url=stack.exhausted_url, to_queue_url=stack.queue_url)
        report = redrive(stack.sqs, options, clock=clock, wait_seconds=0)
    assert len(report.moved) == 1
    clock.advance(1)
    assert retry_queue_round(stack, handler) == 1
    redriven = RUNS[-1]
    assert redriven.retry.id == RUNS[0].retry.id
    assert redriven.retry.generation == 1
    assert redriven.keys == {"order_id": "o-2"}
    assert redriven.sequence_number == record["dynamodb"]["SequenceNumber"]
    clock.advance(60)
    assert stack.receive(stack.queue_url) == []
    assert stack.receive(stack.exhausted_url) == []


def test_a_bad_ordering_fails_the_cold_start_naming_the_variable(
    handler: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVERLESS_RETRY_STREAM_ORDERING", "ordered")
    sys.modules.pop(HANDLER, None)
    with pytest.raises(
        ConfigError, match=r"^SERVERLESS_RETRY_STREAM_ORDERING: must be one of unordered, blocking"
    ):
        importlib.import_module(HANDLER)
    assert HANDLER not in sys.modules

"""The stream consumer's responses where no AWS call is needed, or every one fails (fake clients):
blocking mode, and records without a sequence number, which a partial batch response cannot name."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.config import QueueTargets
from serverless_retry.errors import EventShapeError, UnhandledRecordError
from serverless_retry.observability import ConsumerMetrics
from serverless_retry.policy import RetryPolicy
from serverless_retry.streams.consumer import StreamRetryingConsumer
from serverless_retry.streams.stream_message import StreamMessage

EVENTS = Path(__file__).resolve().parents[1] / "events"
URL = "https://sqs.us-east-1.amazonaws.com/123456789012"
ARN = "arn:aws:sqs:us-east-1:123456789012"


class DownSQS:
    """Every call fails, as an SQS endpoint that does not answer."""

    def __getattr__(self, name: str) -> Any:
        def fail(**_: Any) -> Any:
            raise ConnectionError(f"{name}: endpoint unreachable")

        return fail


def consumer(ordering: str, processor: Any) -> StreamRetryingConsumer:
    targets = QueueTargets(
        queue_url=f"{URL}/orders-stream-retries",
        queue_arn=f"{ARN}:orders-stream-retries",
        exhausted_queue_url=f"{URL}/orders-stream-exhausted",
        dlq_arn=f"{ARN}:orders-stream-dlq",
    )
    return StreamRetryingConsumer.build(
        processor,
        RetryPolicy.from_dict({"max_attempts": 3, "backoff": {"max_seconds": 600}}),
        targets,
        ordering=ordering,  # type: ignore[arg-type]
        clients=AwsClients.of(sqs=DownSQS()),  # type: ignore[arg-type]
        clock=FrozenClock(),
        logger=Logger(service="stream-test", level="CRITICAL"),
        metrics=ConsumerMetrics(),
    )


def kinesis() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / "kinesis-batch.json").read_text())
    return loaded


def fail_on(kind: str) -> Any:
    def process(message: StreamMessage) -> None:
        if message.json()["behaviour"] == kind:
            raise TimeoutError("down")

    return process


def test_blocking_names_the_failed_record_and_every_later_one_without_a_call() -> None:
    event = kinesis()
    sequences = [r["kinesis"]["sequenceNumber"] for r in event["Records"]]
    response = consumer("blocking", fail_on("retryable"))(event)
    assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == sequences[1:]


def test_blocking_with_no_failure_reports_nothing() -> None:
    assert consumer("blocking", fail_on("none"))(kinesis()) == {"batchItemFailures": []}


def test_blocking_fails_the_invocation_when_the_failed_record_has_no_sequence_number() -> None:
    event = kinesis()
    del event["Records"][0]["kinesis"]["sequenceNumber"]  # unreadable, so it fails first
    with pytest.raises(EventShapeError, match="no sequence number"):
        consumer("blocking", fail_on("none"))(event)


def test_unordered_reports_the_first_unsent_hand_off_when_sqs_is_down() -> None:
    event = kinesis()
    second = event["Records"][1]["kinesis"]["sequenceNumber"]
    response = consumer("unordered", fail_on("retryable"))(event)
    assert response == {"batchItemFailures": [{"itemIdentifier": second}]}


def test_an_unsent_record_without_a_sequence_number_fails_the_invocation() -> None:
    event = kinesis()
    broken = copy.deepcopy(event["Records"][2])
    del broken["kinesis"]["sequenceNumber"]
    event["Records"] = [event["Records"][0], broken, event["Records"][1]]
    with pytest.raises(UnhandledRecordError, match="no sequence number"):
        consumer("unordered", fail_on("none"))(event)


def test_an_unknown_ordering_is_refused() -> None:
    with pytest.raises(ValueError, match="ordering must be one of unordered, blocking"):
        consumer("park", fail_on("none"))

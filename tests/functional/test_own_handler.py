"""The "own handler" form of docs/patterns/scheduled-retry.md: RetryingConsumer.from_settings(ConsumerSettings.from_env(), fn)."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws
from serverless_retry import ConsumerSettings, Message, RetryingConsumer
from serverless_retry.testing import lambda_context, sqs_event

SEEN: list[str] = []


def never_imported(message: Message) -> None:  # pragma: no cover - the explicit processor wins
    raise AssertionError("the processor named in the environment must not be called")


def mine(message: Message) -> None:
    SEEN.append(message.body)
    if message.json().get("fail"):
        raise TimeoutError("downstream timed out")


def test_own_handler_uses_the_given_processor_and_the_wired_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        queue = sqs.create_queue(QueueName="orders")["QueueUrl"]
        exhausted = sqs.create_queue(QueueName="orders-exhausted")["QueueUrl"]
        arn = "arn:aws:sqs:us-east-1:123456789012:orders"
        for name, value in {
            "SERVERLESS_RETRY_PROCESSOR": f"{__name__}:never_imported",
            "SERVERLESS_RETRY_POLICY": json.dumps({"max_attempts": 1, "backoff": {"max_seconds": 600}}),
            "SERVERLESS_RETRY_QUEUE_URL": queue,
            "SERVERLESS_RETRY_QUEUE_ARN": arn,
            "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": exhausted,
            "SERVERLESS_RETRY_DLQ_ARN": arn + "-dlq",
        }.items():
            monkeypatch.setenv(name, value)
        consumer = RetryingConsumer.from_settings(ConsumerSettings.from_env(), mine)

        response = consumer(sqs_event([{"fail": False}, {"fail": True}], queue_arn=arn), lambda_context())

        assert response == {"batchItemFailures": []}
        assert [json.loads(body) for body in SEEN] == [{"fail": False}, {"fail": True}]
        [final] = sqs.receive_message(QueueUrl=exhausted)["Messages"]
        meta = json.loads(final["Body"])["serverless_retry"]
        assert (meta["outcome"], meta["final_error"]["type"]) == ("exhausted", "TimeoutError")

"""The "Testing your own processor" example of docs/patterns/scheduled-retry.md, kept runnable: the page shows this file's
``example`` block verbatim (a test below checks that), so the documented example cannot rot."""

from __future__ import annotations

import json
import re
from pathlib import Path

# --- example ---
import boto3
from moto import mock_aws
from serverless_retry import AwsClients, HttpError, Message, QueueTargets, RetryingConsumer, RetryPolicy
from serverless_retry.testing import FrozenClock, lambda_context, record_calls, sqs_event


def handle(message: Message) -> None:  # the processor under test
    order = message.json()
    if order.get("status") == "throttled":
        raise HttpError(429, "slow down", retry_after=120)


def test_a_throttled_order_is_retried_after_retry_after() -> None:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        queue = sqs.create_queue(QueueName="orders")["QueueUrl"]
        exhausted = sqs.create_queue(QueueName="orders-exhausted")["QueueUrl"]
        arn = "arn:aws:sqs:us-east-1:123456789012:orders"
        calls = record_calls(sqs)
        consumer = RetryingConsumer(
            handle,
            RetryPolicy.from_dict({"rules": [{"http_status": [429], "honor_retry_after": True}]}),
            QueueTargets(queue, arn, exhausted, dlq_arn=arn + "-dlq"),
            clients=AwsClients.of(sqs=sqs),
            clock=FrozenClock(),
        )

        event = sqs_event([{"id": 1, "status": "ok"}, {"id": 2, "status": "throttled"}], queue_arn=arn)
        response = consumer(event, lambda_context())

        assert response == {"batchItemFailures": []}  # both handled: one done, one re-enqueued
        [(operation, params)] = calls
        assert operation == "SendMessageBatch"
        [entry] = params["Entries"]
        assert entry["DelaySeconds"] == 120  # the server's Retry-After
        envelope = json.loads(entry["MessageBody"])
        assert envelope["serverless_retry"]["attempt"] == 2
        assert json.loads(envelope["body"]) == {"id": 2, "status": "throttled"}


# --- end example ---


def test_readme_shows_this_example_verbatim() -> None:
    source = Path(__file__).read_text()
    example = re.search(r"# --- example ---\n(.*?)# --- end example ---", source, re.S)
    assert example is not None
    page = (Path(__file__).resolve().parents[2] / "docs" / "patterns" / "scheduled-retry.md").read_text()
    assert example.group(1).strip() in page

"""The optional idempotency guard (SERVERLESS_RETRY_IDEMPOTENCY_TABLE): keyed on RetryContext.id, so
a message SQS delivers twice is processed once, while a failed attempt can still be retried."""

from __future__ import annotations

import boto3
from serverless_retry.clock import FrozenClock
from serverless_retry.consumer import IdempotentProcessor, idempotent_processor
from serverless_retry.errors import RetryableError
from serverless_retry.message import Message
from serverless_retry.testing import lambda_context, sqs_record

from .conftest import REGION, Stack, envelope_of, failure_ids, make_consumer

FIXED_30 = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 30}}


def make_table(name: str = "idempotency") -> str:
    boto3.client("dynamodb", region_name=REGION).create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def test_a_duplicate_delivery_is_processed_once(stack: Stack, clock: FrozenClock) -> None:
    calls: list[str] = []
    processor = idempotent_processor(lambda m: calls.append(m.body), make_table())
    assert isinstance(processor, IdempotentProcessor)
    consumer = make_consumer(stack, processor, FIXED_30, clock)
    record = sqs_record("order-1", message_id="m-1", queue_arn=stack.queue_arn)

    assert failure_ids(consumer({"Records": [record]}, lambda_context())) == []
    assert failure_ids(consumer({"Records": [dict(record)]}, lambda_context())) == []

    assert calls == ["order-1"]


def test_a_failed_attempt_leaves_no_record_so_the_retry_runs(stack: Stack, clock: FrozenClock) -> None:
    attempts: list[int] = []

    def process(message: Message) -> None:
        attempts.append(message.retry.attempt)
        if message.retry.attempt == 1:
            raise RetryableError("busy")

    consumer = make_consumer(stack, idempotent_processor(process, make_table()), FIXED_30, clock)
    assert (
        failure_ids(
            consumer(
                {"Records": [sqs_record("o", message_id="m-2", queue_arn=stack.queue_arn)]}, lambda_context()
            )
        )
        == []
    )
    clock.advance(31)
    [copy] = stack.receive(stack.queue_url)
    assert envelope_of(copy["Body"])["serverless_retry"]["id"] == "m-2"
    retry = sqs_record(copy["Body"], message_id=copy["MessageId"], queue_arn=stack.queue_arn)

    assert failure_ids(consumer({"Records": [retry]}, lambda_context())) == []
    assert (
        failure_ids(consumer({"Records": [retry]}, lambda_context())) == []
    )  # redelivered after success: skipped

    assert attempts == [1, 2]

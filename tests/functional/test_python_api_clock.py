"""serverless_retry.testing shares the consumer's clock, as a user's own test runs it: plain
``mock_aws``, the default policy, a ``FrozenClock()`` and none of this suite's patches of moto's or
the helpers' time (the ``clock`` fixture would hide the very disagreement tested here).

- a retry copy fed back with ``next_delivery`` runs its next attempt (before: exhausted as
  ``invalid-envelope``, "later than any retry the policy could have planned");
- ``sqs_record`` / ``sqs_event`` stamp the clock they are given; the old calls keep working;
- ``sent_messages`` lists what was sent, ``next_delivery`` reads every shape of copy;
- the page's multi-attempt example passes on its own, outside the suite's fixtures.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from serverless_retry import AwsClients, Message, QueueTargets, RetryingProcessor, RetryPolicy
from serverless_retry.testing import (
    FrozenClock,
    lambda_context,
    next_delivery,
    record_calls,
    sent_messages,
    sqs_event,
    sqs_record,
)

from .test_python_api_docs import load

ARN = "arn:aws:sqs:us-east-1:123456789012:orders"


class World:
    def __init__(self) -> None:
        self.sqs = boto3.client("sqs", region_name="us-east-1")
        self.queue = self.sqs.create_queue(QueueName="orders")["QueueUrl"]
        self.exhausted = self.sqs.create_queue(QueueName="orders-exhausted")["QueueUrl"]
        self.clock = FrozenClock()  # the default a user gets: 2026-11-30, not today
        self.processor = RetryingProcessor(
            policy=RetryPolicy(),
            targets=QueueTargets(self.queue, ARN, self.exhausted, dlq_arn=ARN + "-dlq"),
            clients=AwsClients.of(sqs=self.sqs),
            clock=self.clock,
        )
        self.calls = record_calls(self.sqs)

    def exhausted_bodies(self) -> list[dict[str, Any]]:
        return [
            json.loads(m["Body"])
            for m in self.sqs.receive_message(QueueUrl=self.exhausted).get("Messages", [])
        ]


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        yield World()


def test_a_retry_copy_fed_back_runs_its_next_attempt(world: World) -> None:
    attempts: list[int] = []

    def record_handler(message: Message) -> None:
        attempts.append(message.attempt)
        if message.attempt == 1:
            raise TimeoutError("payment API timed out")

    event = sqs_event([{"order_id": "o-1"}], queue_arn=ARN, clock=world.clock)
    assert world.processor.process(event, record_handler, lambda_context()) == {"batchItemFailures": []}
    [copy] = sent_messages(world.calls, world.queue)
    world.calls.clear()
    before = world.clock.now()
    record = next_delivery(copy, world.clock)
    assert world.clock.now() - before == timedelta(seconds=copy["DelaySeconds"])  # moved on to its due time
    assert world.processor.process(sqs_event([record]), record_handler, lambda_context()) == {
        "batchItemFailures": []
    }
    assert attempts == [1, 2]
    assert world.exhausted_bodies() == []  # before: attempt 2 never ran, the copy was "invalid-envelope"
    assert sent_messages(world.calls) == []


def test_the_helpers_stamp_the_clock_they_are_given_and_the_old_calls_still_work() -> None:
    clock = FrozenClock()
    millis = str(int(clock.now().timestamp() * 1000))
    record = sqs_record("o-1", clock=clock)
    assert record["attributes"]["SentTimestamp"] == millis
    assert record["attributes"]["ApproximateFirstReceiveTimestamp"] == millis
    [record] = sqs_event(["o-1"], clock=clock)["Records"]
    assert record["attributes"]["SentTimestamp"] == millis

    assert sqs_record("o-1", sent_at=1_000.5, clock=clock)["attributes"]["SentTimestamp"] == "1000500"
    # No clock= : the latest FrozenClock made (the test's own); with none alive, the real time.
    assert sqs_event(["o-1"])["Records"][0]["attributes"]["SentTimestamp"] == millis
    later = FrozenClock(clock.now() + timedelta(days=1))
    assert FrozenClock.latest() is later
    assert sqs_record("o-1")["attributes"]["SentTimestamp"] == str(int(later.now().timestamp() * 1000))
    del clock, later
    gc.collect()
    assert FrozenClock.latest() is None
    unstamped = int(sqs_event(["o-1"])["Records"][0]["attributes"]["SentTimestamp"]) / 1000
    assert abs(unstamped - time.time()) < 60  # no frozen clock: the real time (a system clock's)


def test_records_made_without_clock_agree_with_the_test_s_frozen_clock(world: World) -> None:
    """Defect 10 as a user met it: a FrozenClock for the consumer, and the helpers called without
    clock= (before: stamped with the real time, so the fed-back copy looked days further out than the
    policy could plan, and went to the retry-exhausted queue as invalid-envelope)."""
    attempts: list[int] = []

    def record_handler(message: Message) -> None:
        attempts.append(message.attempt)
        if message.attempt == 1:
            raise TimeoutError("payment API timed out")

    event = sqs_event([{"order_id": "o-1"}], queue_arn=ARN)
    assert world.processor.process(event, record_handler, lambda_context()) == {"batchItemFailures": []}
    [copy] = sent_messages(world.calls, world.queue)
    world.clock.advance(copy["DelaySeconds"])
    again = sqs_event([sqs_record(copy["MessageBody"], queue_arn=ARN)])
    assert world.processor.process(again, record_handler, lambda_context()) == {"batchItemFailures": []}
    assert attempts == [1, 2]
    assert world.exhausted_bodies() == []


def test_sent_messages_lists_single_and_batch_sends_of_one_queue(world: World) -> None:
    world.sqs.send_message(QueueUrl=world.queue, MessageBody="a", DelaySeconds=5)
    world.sqs.send_message_batch(
        QueueUrl=world.exhausted, Entries=[{"Id": "0", "MessageBody": "b"}, {"Id": "1", "MessageBody": "c"}]
    )
    assert [m["MessageBody"] for m in sent_messages(world.calls)] == ["a", "b", "c"]
    [single] = sent_messages(world.calls, world.queue)
    assert single == {"QueueUrl": world.queue, "MessageBody": "a", "DelaySeconds": 5}
    assert [m["MessageBody"] for m in sent_messages(world.calls, world.exhausted)] == ["b", "c"]


def test_next_delivery_reads_every_shape_of_copy_and_never_turns_the_clock_back() -> None:
    clock = FrozenClock()
    start = clock.now()
    due = start + timedelta(seconds=120)
    envelope = json.dumps({"body": "o-1", "serverless_retry": {"due_at": f"{due:%Y-%m-%dT%H:%M:%SZ}"}})

    record = next_delivery(envelope, clock)  # the body alone: arrives at its due_at
    assert clock.now() == due
    assert record["attributes"]["SentTimestamp"] == str(int(start.timestamp() * 1000))
    assert record["attributes"]["ApproximateFirstReceiveTimestamp"] == str(int(due.timestamp() * 1000))
    assert record["eventSourceARN"].endswith(":serverless-retry-test")

    received = {"Body": "plain", "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}}
    record = next_delivery(received, clock)  # a ReceiveMessage message, no delay: now
    assert clock.now() == due
    assert record["messageAttributes"]["k"]["stringValue"] == "v"

    sent = {
        "QueueUrl": "https://sqs.eu-west-1.amazonaws.com/111122223333/ledger.fifo",
        "MessageBody": "x",
        "DelaySeconds": 30,
        "MessageGroupId": "g-1",
    }
    record = next_delivery(sent, clock)  # SendMessage's parameters: after DelaySeconds, on its queue
    assert clock.now() == due + timedelta(seconds=30)
    assert record["eventSourceARN"] == "arn:aws:sqs:eu-west-1:111122223333:ledger.fifo"
    assert record["awsRegion"] == "eu-west-1"
    assert record["attributes"]["MessageGroupId"] == "g-1"

    past = json.dumps({"serverless_retry": {"due_at": "2020-01-01T00:00:00Z"}})
    next_delivery(past, clock)
    assert clock.now() == due + timedelta(seconds=30)  # never back
    with pytest.raises(ValueError, match="MessageBody"):
        next_delivery({"Id": "0"}, clock)


def test_frozen_clock_advance_to_moves_on_only() -> None:
    clock = FrozenClock()
    later = datetime(2026, 12, 1, tzinfo=UTC)
    assert clock.advance_to(later) == later
    assert clock.advance_to(later - timedelta(days=1)) == later


def test_the_page_s_multi_attempt_example_passes_outside_the_suite_s_fixtures() -> None:
    module = load("test_orders_retries.py")
    tests = [value for name, value in vars(module).items() if name.startswith("test_")]
    assert len(tests) == 2
    for test in tests:
        test()

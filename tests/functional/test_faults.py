"""When the call that replaces a failed record does not succeed, the record goes back to the queue
(``batchItemFailures``) and nothing was sent for it: never lost, never half-handled."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.errors import NonRetryableError, RetryableError
from serverless_retry.message import Message
from serverless_retry.testing import sqs_record

from .conftest import REGION, Stack, envelope_of, failure_ids, make_consumer
from .faults import FaultyScheduler, FaultySqs, fail_operation

FIXED_30 = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 30}}
FIXED_2H = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 7200, "max_seconds": 7200}}


def always_fail(message: Message) -> None:
    raise RetryableError("busy")


def records(stack: Stack, *bodies: str) -> dict[str, Any]:
    return {"Records": [sqs_record(b, message_id=b, queue_arn=stack.queue_arn) for b in bodies]}


def copies_in_source_queue(stack: Stack, clock: FrozenClock) -> list[str]:
    clock.advance(3600)
    return sorted(envelope_of(m["Body"])["body"] for m in stack.drain(stack.queue_url))


def test_failed_send_message_batch_entry_returns_only_that_record(stack: Stack, clock: FrozenClock) -> None:
    sqs = FaultySqs(stack.sqs, fail_entry=lambda url, entry: '"body":"b"' in entry["MessageBody"])
    consumer = make_consumer(stack, always_fail, FIXED_30, clock, clients=AwsClients.of(sqs=sqs))

    response = consumer(records(stack, "a", "b", "c"))

    assert failure_ids(response) == ["b"]
    assert sqs.injected_entries == 3  # tried again within the invocation, then handed back
    assert copies_in_source_queue(stack, clock) == ["a", "c"]  # nothing was sent for b

    # The queue redelivers b; this time the send works and b is handled like the others.
    healthy = make_consumer(stack, always_fail, FIXED_30, clock)
    assert failure_ids(healthy(records(stack, "b"))) == []
    assert copies_in_source_queue(stack, clock) == ["b"]


def test_failed_send_message_batch_call_returns_every_record_of_the_chunk(
    stack: Stack, clock: FrozenClock
) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    fail_operation(sqs, "SendMessageBatch", "ServiceUnavailable", status=503)
    consumer = make_consumer(stack, always_fail, FIXED_30, clock, clients=AwsClients.of(sqs=sqs))

    response = consumer(records(stack, "a", "b", "c"))

    assert failure_ids(response) == ["a", "b", "c"]
    assert copies_in_source_queue(stack, clock) == []


def test_throttled_create_schedule_becomes_delay_hops(stack: Stack, clock: FrozenClock) -> None:
    scheduler = boto3.client("scheduler", region_name=REGION)
    fail_operation(scheduler, "CreateSchedule", "ThrottlingException")
    consumer = make_consumer(
        stack, always_fail, FIXED_2H, clock, clients=AwsClients.of(sqs=stack.sqs, scheduler=scheduler)
    )

    response = consumer(records(stack, "a"))

    # Handled: the retry waits in the source queue in hops of <= 900 s instead of going to the DLQ.
    assert failure_ids(response) == []
    assert stack.schedules() == []
    [call] = stack.called("SendMessageBatch")
    [entry] = call["Entries"]
    assert (call["QueueUrl"], entry["DelaySeconds"]) == (stack.queue_url, 900)
    meta = envelope_of(entry["MessageBody"])["serverless_retry"]
    assert (meta["attempt"], meta["due_at"]) == (2, "2026-11-30T12:00:00Z")
    assert meta["history"][0]["transport"] == "scheduler"  # what was decided; the hops carry it out


@pytest.mark.parametrize(
    ("code", "status"), [("ServiceQuotaExceededException", 402), ("InternalServerException", 500)]
)
def test_every_refusal_of_the_scheduler_falls_back_to_hops(
    stack: Stack, clock: FrozenClock, code: str, status: int
) -> None:
    scheduler = boto3.client("scheduler", region_name=REGION)
    fail_operation(scheduler, "CreateSchedule", code, status=status)
    consumer = make_consumer(
        stack, always_fail, FIXED_2H, clock, clients=AwsClients.of(sqs=stack.sqs, scheduler=scheduler)
    )
    assert failure_ids(consumer(records(stack, "a"))) == []
    assert [e["DelaySeconds"] for c in stack.called("SendMessageBatch") for e in c["Entries"]] == [900]


def test_a_misconfigured_scheduler_returns_the_record(stack: Stack, clock: FrozenClock) -> None:
    scheduler = boto3.client("scheduler", region_name=REGION)
    fail_operation(scheduler, "CreateSchedule", "AccessDeniedException", status=403)
    consumer = make_consumer(
        stack, always_fail, FIXED_2H, clock, clients=AwsClients.of(sqs=stack.sqs, scheduler=scheduler)
    )

    response = consumer(records(stack, "a"))

    # Not a refusal but a configuration error: back to the queue, where the DLQ alarm will tell.
    assert failure_ids(response) == ["a"]
    assert stack.schedules() == []
    assert not stack.called("SendMessageBatch")


def test_one_throttled_schedule_among_several(stack: Stack, clock: FrozenClock) -> None:
    scheduler = FaultyScheduler(
        stack.scheduler, throttle=lambda params: '"body":"b"' in params["Target"]["Input"]
    )
    consumer = make_consumer(
        stack, always_fail, FIXED_2H, clock, clients=AwsClients.of(sqs=stack.sqs, scheduler=scheduler)
    )

    response = consumer(records(stack, "a", "b", "c"))

    assert failure_ids(response) == []
    bodies = sorted(envelope_of(s["Target"]["Input"])["body"] for s in stack.schedules())
    assert bodies == ["a", "c"]
    [call] = stack.called("SendMessageBatch")
    assert [envelope_of(e["MessageBody"])["body"] for e in call["Entries"]] == ["b"]


def test_failed_exhausted_send_returns_the_record(stack: Stack, clock: FrozenClock) -> None:
    sqs = FaultySqs(stack.sqs, fail_call=lambda url: url == stack.exhausted_url)

    def process(message: Message) -> None:
        raise NonRetryableError("bad") if message.body == "x" else RetryableError("busy")

    consumer = make_consumer(stack, process, FIXED_30, clock, clients=AwsClients.of(sqs=sqs))

    response = consumer(records(stack, "x", "y"))

    assert failure_ids(response) == ["x"]  # y's delayed copy went out; x's exhausted copy did not
    assert stack.receive(stack.exhausted_url) == []
    assert copies_in_source_queue(stack, clock) == ["y"]


def test_failed_visibility_change_still_keeps_the_message(stack: Stack, clock: FrozenClock) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    fail_operation(sqs, "ChangeMessageVisibilityBatch", "InternalError", status=500)
    policy = {"transport": "visibility", "backoff": {"strategy": "fixed", "base_seconds": 120}}
    consumer = make_consumer(stack, always_fail, policy, clock, clients=AwsClients.of(sqs=sqs))

    response = consumer(records(stack, "a"))

    assert failure_ids(response) == ["a"]  # back after the queue's own visibility timeout instead


def test_a_malformed_record_is_kept_alone_with_its_reason(stack: Stack, clock: FrozenClock) -> None:
    seen: list[str] = []
    consumer = make_consumer(stack, lambda m: seen.append(m.body), FIXED_30, clock)
    event = records(stack, "a", "b")
    del event["Records"][0]["body"]

    response = consumer(event)

    # Not handed back to reach the DLQ with only a log line: kept in the retry-exhausted queue.
    assert failure_ids(response) == []
    assert seen == ["b"]
    [final] = stack.receive(stack.exhausted_url)
    meta = envelope_of(final["Body"])["serverless_retry"]
    assert (meta["outcome"], meta["id"], meta["reason"]) == (
        "invalid-envelope",
        "a",
        "unhandled record: it has no body",
    )


def test_a_bug_while_planning_a_retry_fails_only_that_record(stack: Stack, clock: FrozenClock) -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("str() of this error fails")

    def process(message: Message) -> None:
        if message.body == "a":
            raise Unprintable()
        raise RetryableError("busy")

    consumer = make_consumer(stack, process, FIXED_30, clock)

    response = consumer(records(stack, "a", "b"))

    # Either the core copes with the odd error (a is retried) or a goes back to the queue; b is retried.
    assert set(failure_ids(response)) <= {"a"}
    assert "b" in copies_in_source_queue(stack, clock)

"""Issue 9's classes of defect, each against moto: FIFO ordered/unordered, one chain per message
(claims), at() fixed at call time, exceptions that are not Exceptions, events that are not SQS
events, records from another queue, and copies that arrive before they are due."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import pytest
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.consumer.claims import DynamoDBClaims
from serverless_retry.errors import EventShapeError, RetryableError
from serverless_retry.message import Message
from serverless_retry.testing import sqs_record

from .conftest import REGION, Stack, envelope_of, event_from, failure_ids, make_consumer, make_stack

EVENTS = Path(__file__).resolve().parents[1] / "events"
FIXED_30 = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 30}}
FIXED_2H = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 7200, "max_seconds": 7200}}


def always_fail(message: Message) -> None:
    raise RetryableError("busy")


# -- 7. wrong inputs -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sample", "says"),
    [
        ("not-sqs-sns.json", "from 'aws:sns'"),
        ("not-sqs-apigateway.json", "API Gateway request"),
        ("not-sqs-eventbridge.json", "EventBridge event"),
    ],
)
def test_an_event_that_is_not_an_sqs_event_is_an_error(
    stack: Stack, clock: FrozenClock, sample: str, says: str
) -> None:
    seen: list[Message] = []
    consumer = make_consumer(stack, seen.append, FIXED_30, clock)
    event = json.loads((EVENTS / sample).read_text())
    with pytest.raises(EventShapeError, match=says):
        consumer(event)
    assert seen == []
    assert stack.calls == []


def test_a_record_from_another_queue_is_refused_alone(stack: Stack, clock: FrozenClock) -> None:
    seen: list[str] = []
    consumer = make_consumer(stack, lambda m: seen.append(m.body), FIXED_30, clock)
    other = "arn:aws:sqs:us-east-1:123456789012:payments"
    event = {
        "Records": [
            sqs_record("ours", message_id="a", queue_arn=stack.queue_arn),
            sqs_record("theirs", message_id="b", queue_arn=other),
        ]
    }
    event["Records"][1]["body"] = "theirs"

    response = consumer(event)

    assert failure_ids(response) == ["b"]  # back to its own queue (and its DLQ), never into ours
    assert seen == ["ours"]
    assert not stack.called("SendMessageBatch")


# -- 6. exceptions that escape ---------------------------------------------------------------------------
@pytest.mark.parametrize("error", [asyncio.CancelledError(), SystemExit(3), KeyboardInterrupt()])
def test_a_base_exception_fails_only_its_own_record(
    stack: Stack, clock: FrozenClock, error: BaseException
) -> None:
    done: list[str] = []

    def process(message: Message) -> None:
        if message.body == "bad":
            raise error
        done.append(message.body)

    consumer = make_consumer(stack, process, FIXED_30, clock)
    records = [sqs_record(b, message_id=b, queue_arn=stack.queue_arn) for b in ("a", "bad", "c")]

    response = consumer({"Records": records})

    assert failure_ids(response) == []
    assert done == ["a", "c"]
    [call] = stack.called("SendMessageBatch")
    [entry] = call["Entries"]
    meta = envelope_of(entry["MessageBody"])["serverless_retry"]
    assert meta["history"][0]["error_type"] == type(error).__name__


def test_an_error_whose_str_raises_is_retried_and_exhausted(stack: Stack, clock: FrozenClock) -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    def process(message: Message) -> None:
        raise Unprintable()

    consumer = make_consumer(stack, process, {"max_attempts": 1}, clock)
    assert failure_ids(consumer({"Records": [sqs_record("x", queue_arn=stack.queue_arn)]})) == []
    [final] = stack.receive(stack.exhausted_url)
    meta = envelope_of(final["Body"])["serverless_retry"]
    assert meta["outcome"] == "exhausted"
    assert meta["final_error"]["type"] == "Unprintable"


# -- 5. at() fixed at call time ---------------------------------------------------------------------------
def test_a_slow_batch_never_hands_the_scheduler_a_past_time(aws: None, clock: FrozenClock) -> None:
    stack = make_stack("slow", fifo=True)

    def slow(message: Message) -> None:
        clock.advance(20)  # each record takes 20 s: the batch takes 200 s
        raise RetryableError("busy")

    policy = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 0}}
    consumer = make_consumer(stack, slow, policy, clock, fifo_order="unordered")
    start = clock.now()
    records = [sqs_record(f"m{i}", queue_arn=stack.queue_arn, message_group_id=f"g{i}") for i in range(10)]

    assert failure_ids(consumer({"Records": records})) == []

    calls = stack.called("CreateSchedule")
    assert len(calls) == 10
    for call in calls:  # every at() is at least 5 s after the moment CreateSchedule was called
        at = datetime.fromisoformat(call["ScheduleExpression"][3:-1] + "+00:00")
        assert at >= start + timedelta(seconds=200 + 5)


# -- 13. refusals become delay hops; early copies wait unprocessed -------------------------------------------
def test_a_copy_that_arrives_early_waits_again_without_the_processor(
    stack: Stack, clock: FrozenClock
) -> None:
    seen: list[Message] = []
    policy = {**FIXED_2H, "transport": "sqs-hops"}
    make_consumer(stack, always_fail, policy, clock)(
        {"Records": [sqs_record("o", message_id="o", queue_arn=stack.queue_arn)]}
    )
    [first] = [e for c in stack.called("SendMessageBatch") for e in c["Entries"]]
    assert first["DelaySeconds"] == 900
    stack.calls.clear()

    for hop in range(1, 8):  # 7200 s = 8 hops of 900 s
        clock.advance(900)
        [copy] = stack.drain(stack.queue_url)
        response = make_consumer(stack, seen.append, policy, clock)(event_from([copy], stack.queue_arn))
        assert failure_ids(response) == []
        [entry] = [e for c in stack.called("SendMessageBatch") for e in c["Entries"]]
        assert entry["MessageBody"] == copy["Body"]  # the same envelope, unprocessed
        assert entry["DelaySeconds"] == min(900, 7200 - 900 * hop)
        stack.calls.clear()
    assert seen == []
    clock.advance(900)
    [copy] = stack.drain(stack.queue_url)
    make_consumer(stack, seen.append, policy, clock)(event_from([copy], stack.queue_arn))
    assert [(m.body, m.retry.attempt) for m in seen] == [("o", 2)]


# -- 2. FIFO ordering ----------------------------------------------------------------------------------------
def fifo_batch(stack: Stack, groups: list[str]) -> list[dict[str, Any]]:
    for n, group in enumerate(groups):
        stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=f"{group}-{n}", MessageGroupId=group)
    return stack.receive(stack.queue_url)


def test_fifo_ordered_retries_in_place_and_holds_back_the_rest_of_the_group(
    aws: None, clock: FrozenClock
) -> None:
    stack = make_stack("ledger", fifo=True)
    done: list[str] = []

    def process(message: Message) -> None:
        if message.body == "A-0":
            raise RetryableError("busy")
        done.append(message.body)

    consumer = make_consumer(stack, process, FIXED_30, clock)  # fifo_order defaults to "ordered"
    messages = fifo_batch(stack, ["A", "A", "B", "A", "B"])
    ids = {m["Body"]: m["MessageId"] for m in messages}

    response = consumer(event_from(messages, stack.queue_arn))

    # A-0 failed: it stays (hidden 30 s) and A-1, A-3 are handed back unprocessed; group B goes on.
    assert failure_ids(response) == [ids["A-0"], ids["A-1"], ids["A-3"]]
    assert done == ["B-2", "B-4"]
    assert not stack.called("SendMessageBatch")
    assert not stack.called("CreateSchedule")
    [call] = stack.called("ChangeMessageVisibilityBatch")
    timeouts = {e["ReceiptHandle"]: e["VisibilityTimeout"] for e in call["Entries"]}
    receipts = {m["Body"]: m["ReceiptHandle"] for m in messages}
    assert timeouts == {receipts["A-0"]: 30, receipts["A-1"]: 0, receipts["A-3"]: 0}


def test_fifo_ordered_a_record_that_cannot_be_claimed_still_holds_its_group(
    aws: None, clock: FrozenClock
) -> None:
    # The table is unreachable when a redelivered record needs its claim (which holds the final
    # decision it may have to repeat): that record waits hidden, and the later records of its group
    # go back with it, not overtaking it.
    stack = make_stack("ledger", fifo=True)
    done: list[str] = []
    consumer = make_consumer(stack, lambda m: done.append(m.body), FIXED_30, clock)
    consumer.claims = mock.Mock(claim=mock.Mock(side_effect=ConnectionError("table unreachable")))
    messages = fifo_batch(stack, ["A", "A", "B"])
    ids = {m["Body"]: m["MessageId"] for m in messages}
    event = event_from(messages, stack.queue_arn)
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = "2"  # A-0 comes back

    response = consumer(event)

    assert failure_ids(response) == [ids["A-0"], ids["A-1"]]
    assert done == ["B-2"]
    timeouts = {
        e["Id"]: e["VisibilityTimeout"] for e in stack.called("ChangeMessageVisibilityBatch")[0]["Entries"]
    }
    assert sorted(timeouts.values()) == [0, 240]  # A-0 hidden (twice the wait: its second receive)


def test_fifo_unordered_retries_leave_the_group_through_the_scheduler(aws: None, clock: FrozenClock) -> None:
    stack = make_stack("events", fifo=True)
    done: list[str] = []

    def process(message: Message) -> None:
        if message.body == "A-0":
            raise RetryableError("busy")
        done.append(message.body)

    consumer = make_consumer(stack, process, FIXED_30, clock, fifo_order="unordered")
    messages = fifo_batch(stack, ["A", "A"])

    assert failure_ids(consumer(event_from(messages, stack.queue_arn))) == []
    assert done == ["A-1"]  # the rest of the group overtakes the retry, as documented
    [schedule] = stack.schedules()
    assert schedule["Target"]["SqsParameters"] == {"MessageGroupId": "A"}


# -- 4. one chain per message: claims ---------------------------------------------------------------------------
def claims_table(name: str = "idempotency") -> DynamoDBClaims:
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return DynamoDBClaims(lambda: client, name)


def test_a_duplicate_copy_of_an_attempt_ends_its_chain(stack: Stack, clock: FrozenClock) -> None:
    claims = claims_table()
    runs: list[tuple[str, int]] = []

    def process(message: Message) -> None:
        runs.append((message.message_id, message.retry.attempt))
        raise RetryableError("busy")

    def consumer() -> Any:
        built = make_consumer(stack, process, FIXED_30, clock)
        built.claims = claims
        built.delivery.resend_after_timeout = True
        return built

    original = sqs_record("o", message_id="o", queue_arn=stack.queue_arn)
    # Two copies of attempt 2, as a redelivery after a lost response makes them (with the table the
    # redelivered record itself is acknowledged: its claim is done; see the next test).
    make_consumer(stack, process, FIXED_30, clock)({"Records": [original]})
    make_consumer(stack, process, FIXED_30, clock)({"Records": [original]})
    clock.advance(31)
    copies = stack.drain(stack.queue_url)
    assert len(copies) == 2

    response = consumer()(event_from(copies, stack.queue_arn))

    assert failure_ids(response) == []
    assert [attempt for _, attempt in runs] == [1, 1, 2]  # attempt 2 ran once: the other copy ended
    clock.advance(31)
    assert len(stack.drain(stack.queue_url)) == 1  # one attempt-3 copy: one chain


def test_a_redelivered_copy_runs_again_and_its_two_next_copies_make_one_chain(
    stack: Stack, clock: FrozenClock
) -> None:
    # A copy that claimed on its first receive writes nothing more (one write per retried message), so
    # its own redelivery after a lost response runs again: at least once, in the same SQS message. The
    # two attempt-3 copies it leaves are one chain: the second is a provable duplicate of the first.
    claims = claims_table()
    runs: list[int] = []

    def process(message: Message) -> None:
        runs.append(message.retry.attempt)
        raise RetryableError("busy")

    consumer = make_consumer(stack, process, FIXED_30, clock, clients=AwsClients.of(sqs=stack.sqs))
    consumer.claims = claims
    record = sqs_record("o", message_id="o", queue_arn=stack.queue_arn)
    consumer({"Records": [record]})
    clock.advance(31)
    [copy] = stack.drain(stack.queue_url)
    copy_event = event_from([copy], stack.queue_arn)
    consumer(copy_event)  # attempt 2 runs and sends attempt 3; then its response is lost:
    redelivered = json.loads(json.dumps(copy_event))
    redelivered["Records"][0]["attributes"]["ApproximateReceiveCount"] = "2"

    assert failure_ids(consumer(redelivered)) == []
    assert runs == [1, 2, 2]
    clock.advance(31)
    third = stack.drain(stack.queue_url)
    assert len(third) == 2
    assert failure_ids(consumer(event_from(third, stack.queue_arn))) == []
    assert runs == [1, 2, 2, 3]  # attempt 3 ran once; the other copy waits for the first one's lease
    clock.advance(31)
    fourth = stack.drain(stack.queue_url)
    assert len(fourth) == 1  # one attempt-4 copy (the waiting duplicate is still delayed)
    clock.advance(3600)
    waited = stack.drain(stack.queue_url)
    assert len(waited) == 1
    assert failure_ids(consumer(event_from(waited, stack.queue_arn))) == []
    assert runs == [1, 2, 2, 3]  # the duplicate of attempt 3 is acknowledged: that attempt moved on


def test_a_redelivery_after_the_schedule_fired_and_deleted_itself_starts_no_second_chain(
    stack: Stack, clock: FrozenClock
) -> None:
    claims = claims_table()
    runs: list[tuple[int, str]] = []

    def process(message: Message) -> None:
        runs.append((message.retry.attempt, message.message_id))
        raise RetryableError("busy")

    consumer = make_consumer(stack, process, FIXED_2H, clock)
    consumer.claims = claims
    record = sqs_record("o", message_id="o", queue_arn=stack.queue_arn)
    assert failure_ids(consumer({"Records": [record]})) == []
    [schedule] = stack.schedules()
    # The schedule fires (its copy reaches the queue) and deletes itself; then the original record
    # comes back, its invocation's response having been lost.
    clock.advance(7200)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=schedule["Target"]["Input"])
    stack.scheduler.delete_schedule(GroupName=stack.group, Name=schedule["Name"])
    redelivered = {**record, "attributes": {**record["attributes"], "ApproximateReceiveCount": "2"}}

    # Not provable yet (the copy has not claimed): the redelivery runs attempt 1 again, in the same
    # SQS message, and schedules attempt 2 again.
    assert failure_ids(consumer({"Records": [redelivered]})) == []
    assert runs == [(1, "o"), (1, "o")]
    [second] = stack.schedules()
    clock.advance(7200)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=second["Target"]["Input"])
    copies = stack.drain(stack.queue_url)
    assert len(copies) == 2

    assert failure_ids(consumer(event_from(copies, stack.queue_arn))) == []

    assert [attempt for attempt, _ in runs] == [1, 1, 2]  # attempt 2 ran in one copy: one chain


def test_a_message_in_progress_elsewhere_is_handed_back_not_retried(stack: Stack, clock: FrozenClock) -> None:
    from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError
    from serverless_retry.consumer import IdempotentProcessor

    class Busy(IdempotentProcessor):
        def __init__(self) -> None:  # no persistence needed: the guard says "in progress"
            pass

        def _guarded(self, **_: Any) -> None:  # type: ignore[override]
            raise IdempotencyAlreadyInProgressError("another invocation holds it")

    consumer = make_consumer(stack, Busy(), FIXED_30, clock)
    response = consumer({"Records": [sqs_record("o", message_id="o", queue_arn=stack.queue_arn)]})

    assert failure_ids(response) == ["o"]  # back to the queue; retrying it would start a second chain
    assert not stack.called("SendMessageBatch")

"""A retried copy's timing and its message group, checked in what moto's queue holds afterwards:

- an SQS-delayed copy becomes visible at decision time + delay, however long the rest of its batch ran
  (DelaySeconds is taken when SendMessageBatch is called, from the decision's due time);
- on a standard queue, a copy keeps the producer's MessageGroupId (SQS fair queues) on every transport
  that can carry it: SQS delays, delay hops, the re-delay of an early copy, the retry-exhausted queue.
  EventBridge Scheduler documents SqsParameters.MessageGroupId for FIFO targets only: a scheduled
  retry to a standard queue goes without it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from serverless_retry.clock import FrozenClock
from serverless_retry.consumer.delivery import Outgoing, send_delay
from serverless_retry.errors import NonRetryableError, RetryableError
from serverless_retry.message import Message

from .conftest import Stack, envelope_of, event_from, failure_ids, make_consumer

FIXED_60 = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 60}}
FIXED_30 = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 30}}
HOURS_2 = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 7200, "max_seconds": 7200}}


def settle(stack: Stack, messages: list[dict[str, Any]], response: dict[str, Any]) -> None:
    failed = set(failure_ids(response))
    for m in messages:
        if m["MessageId"] not in failed:
            stack.sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=m["ReceiptHandle"])


def sent_entries(stack: Stack, url: str) -> list[dict[str, Any]]:
    return [e for c in stack.called("SendMessageBatch") if c["QueueUrl"] == url for e in c["Entries"]]


# --- the delay is taken at send time ---------------------------------------------------------------------


def test_a_delayed_copy_is_visible_at_decision_time_plus_delay_after_a_slow_batch(
    stack: Stack, clock: FrozenClock
) -> None:
    """The first record fails (retry in 60 s); the two after it take 20 s each. Sent with the full 60 s
    after the batch, the copy would come at 100 s; it must come at 60 s."""
    decided = clock.now()

    def process(message: Message) -> None:
        if message.body == "fails":
            raise RetryableError("downstream busy")
        clock.advance(20)  # a slow record: the batch goes on

    consumer = make_consumer(stack, process, FIXED_60, clock)
    for body in ("fails", "slow-1", "slow-2"):
        stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body)
    messages = stack.receive(stack.queue_url)
    assert [m["Body"] for m in messages] == ["fails", "slow-1", "slow-2"]

    response = consumer(event_from(messages, stack.queue_arn))
    settle(stack, messages, response)

    assert failure_ids(response) == []
    [entry] = sent_entries(stack, stack.queue_url)
    assert entry["DelaySeconds"] == 20  # 60 s from the decision, 40 s of which the batch took
    assert envelope_of(entry["MessageBody"])["serverless_retry"]["due_at"] == "2026-11-30T10:01:00Z"
    clock.advance(19)
    assert stack.receive(stack.queue_url) == []
    clock.advance(1)
    [copy] = stack.receive(stack.queue_url)
    assert (clock.now() - decided).total_seconds() == 60
    assert envelope_of(copy["Body"])["serverless_retry"]["attempt"] == 2


def test_a_copy_already_due_when_sent_takes_no_delay(stack: Stack, clock: FrozenClock) -> None:
    def process(message: Message) -> None:
        if message.body == "fails":
            raise RetryableError("downstream busy")
        clock.advance(45)  # longer than the 30 s retry delay

    consumer = make_consumer(stack, process, FIXED_30, clock)
    for body in ("fails", "slow"):
        stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body)
    messages = stack.receive(stack.queue_url)

    settle(stack, messages, consumer(event_from(messages, stack.queue_arn)))

    [entry] = sent_entries(stack, stack.queue_url)
    assert "DelaySeconds" not in entry  # never negative: due already, visible at once
    [copy] = stack.receive(stack.queue_url)
    assert envelope_of(copy["Body"])["serverless_retry"]["attempt"] == 2


def test_send_delay_rounds_up_never_negative_never_above_900() -> None:
    due = datetime(2026, 11, 30, 10, 0, 10, tzinfo=UTC)
    copy = Outgoing("m", "body", delay_seconds=900, due_at=due)
    # 9.7 s left: 10, so the copy is never visible before it is due (SQS counts whole seconds).
    assert send_delay(copy, datetime(2026, 11, 30, 10, 0, 0, 300_000, tzinfo=UTC)) == 10
    assert send_delay(copy, due) == 0
    assert send_delay(copy, datetime(2026, 11, 30, 10, 5, tzinfo=UTC)) == 0  # past due
    assert send_delay(copy, datetime(2026, 11, 30, 9, 0, tzinfo=UTC)) == 900  # a hop: at most its limit
    assert send_delay(Outgoing("m", "b", delay_seconds=5_000), None) == 900  # never above SQS's 900
    assert send_delay(Outgoing("m", "b", delay_seconds=-3), None) == 0


# --- the producer's MessageGroupId on a standard queue (fair queues) -------------------------------------


def fail_with(error: BaseException) -> Any:
    def process(message: Message) -> None:
        raise error

    return process


def receive_grouped(stack: Stack, body: str, group: str) -> list[dict[str, Any]]:
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body, MessageGroupId=group)
    messages = stack.receive(stack.queue_url)
    assert messages[0]["Attributes"]["MessageGroupId"] == group  # SQS returns it on a standard queue
    return messages


def test_a_delayed_copy_keeps_the_producers_group(stack: Stack, clock: FrozenClock) -> None:
    consumer = make_consumer(stack, fail_with(RetryableError("busy")), FIXED_30, clock)
    messages = receive_grouped(stack, "order", "tenant-a")

    settle(stack, messages, consumer(event_from(messages, stack.queue_arn)))

    [entry] = sent_entries(stack, stack.queue_url)
    assert (entry["MessageGroupId"], entry["DelaySeconds"]) == ("tenant-a", 30)
    clock.advance(30)
    [copy] = stack.receive(stack.queue_url)
    assert copy["Attributes"]["MessageGroupId"] == "tenant-a"


def test_delay_hops_and_an_early_copys_wait_keep_the_producers_group(
    stack: Stack, clock: FrozenClock
) -> None:
    policy = {**HOURS_2, "transport": "sqs-hops"}
    consumer = make_consumer(stack, fail_with(RetryableError("busy")), policy, clock)
    messages = receive_grouped(stack, "order", "tenant-b")

    settle(stack, messages, consumer(event_from(messages, stack.queue_arn)))
    [hop] = sent_entries(stack, stack.queue_url)
    assert (hop["MessageGroupId"], hop["DelaySeconds"]) == ("tenant-b", 900)

    clock.advance(900)  # the copy arrives early (due in 2 h): it waits again, in the same group
    early = stack.receive(stack.queue_url)
    assert early[0]["Attributes"]["MessageGroupId"] == "tenant-b"
    settle(stack, early, consumer(event_from(early, stack.queue_arn)))
    [_, wait] = sent_entries(stack, stack.queue_url)
    assert (wait["MessageGroupId"], wait["DelaySeconds"]) == ("tenant-b", 900)


def test_the_exhausted_copy_keeps_the_producers_group(stack: Stack, clock: FrozenClock) -> None:
    consumer = make_consumer(stack, fail_with(NonRetryableError("bad order")), FIXED_30, clock)
    messages = receive_grouped(stack, "order", "tenant-c")

    settle(stack, messages, consumer(event_from(messages, stack.queue_arn)))

    [entry] = sent_entries(stack, stack.exhausted_url)
    assert entry["MessageGroupId"] == "tenant-c"
    [final] = stack.receive(stack.exhausted_url)
    assert final["Attributes"]["MessageGroupId"] == "tenant-c"


def test_a_scheduled_retry_to_a_standard_queue_carries_no_group(stack: Stack, clock: FrozenClock) -> None:
    """The documented limit: SqsParameters.MessageGroupId is for FIFO targets in the Scheduler's API."""
    consumer = make_consumer(stack, fail_with(RetryableError("busy")), HOURS_2, clock)
    messages = receive_grouped(stack, "order", "tenant-d")

    settle(stack, messages, consumer(event_from(messages, stack.queue_arn)))

    [call] = stack.called("CreateSchedule")
    assert "SqsParameters" not in call["Target"]
    assert sent_entries(stack, stack.queue_url) == []


def test_a_record_without_a_group_sends_none(stack: Stack, clock: FrozenClock) -> None:
    consumer = make_consumer(stack, fail_with(RetryableError("busy")), FIXED_30, clock)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody="order")
    messages = stack.receive(stack.queue_url)

    settle(stack, messages, consumer(event_from(messages, stack.queue_arn)))

    [entry] = sent_entries(stack, stack.queue_url)
    assert "MessageGroupId" not in entry

"""The consumer's outcomes, each checked in what moto's queues and Scheduler hold afterwards."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider
from serverless_retry.clock import FrozenClock
from serverless_retry.envelope import RetryContext, schedule_name
from serverless_retry.errors import HttpError, NonRetryableError, RetryableError
from serverless_retry.message import Message
from serverless_retry.observability import BatchCounts, ConsumerMetrics
from serverless_retry.testing import sqs_record

from .conftest import ROLE_ARN, Stack, at_of, envelope_of, event_from, failure_ids, make_consumer

FIXED_30 = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 30}}
FIXED_2H = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 7200, "max_seconds": 7200}}


def send_and_receive(stack: Stack, body: str, **kwargs: Any) -> list[dict[str, Any]]:
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body, **kwargs)
    return stack.receive(stack.queue_url)


def settle(stack: Stack, messages: list[dict[str, Any]], response: dict[str, Any]) -> None:
    """What the event source mapping does after the invocation: delete all but the failures."""
    failed = set(failure_ids(response))
    for m in messages:
        if m["MessageId"] not in failed:
            stack.sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=m["ReceiptHandle"])


def raising(error: BaseException) -> Any:
    def process(message: Message) -> None:
        raise error

    return process


def emf_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]


def value(emf: dict[str, Any], name: str) -> float:
    raw = emf[name]
    return float(sum(raw)) if isinstance(raw, list) else float(raw)


def test_success_hands_the_original_to_the_processor_and_reports_nothing(
    stack: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[Message] = []
    consumer = make_consumer(stack, seen.append, FIXED_30, clock)
    attrs = {"tenant": {"DataType": "String", "StringValue": "acme"}}
    messages = send_and_receive(stack, '{"order": 1}', MessageAttributes=attrs)

    response = consumer(event_from(messages, stack.queue_arn))

    assert response == {"batchItemFailures": []}
    [message] = seen
    assert message.body == '{"order": 1}'
    assert message.json() == {"order": 1}
    assert message.attributes == attrs
    assert message.retry.attempt == 1
    assert message.retry.id == messages[0]["MessageId"] == message.message_id
    assert message.record["receiptHandle"] == messages[0]["ReceiptHandle"]
    # The consumer builds it on a fast path; it must equal one built the ordinary way.
    context = RetryContext(message.message_id, 1, None, (), stack.queue_arn)
    assert message == Message(message.message_id, '{"order": 1}', attrs, context, message.record)
    assert message.retry == context
    assert not stack.called("SendMessageBatch")
    assert not stack.called("CreateSchedule")
    [emf] = emf_lines(capsys.readouterr().out)
    assert value(emf, "Processed") == 1
    assert emf["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "ServerlessRetry"


def test_emf_lines_are_what_powertools_serializes() -> None:
    counts = BatchCounts(processed=7, exhausted=2, invalid_envelope=1)
    counts.retry_scheduled["scheduler"] = 3
    main, per_transport = [json.loads(line) for line in ConsumerMetrics("NS", "svc").lines(counts)]

    expected = AmazonCloudWatchEMFProvider(namespace="NS", service="svc", dimension_set={"service": "svc"})
    for name, value in (("Processed", 7), ("Exhausted", 2), ("InvalidEnvelope", 1)):
        expected.add_metric(name=name, unit=MetricUnit.Count, value=value)
    document = expected.serialize_metric_set()
    main["_aws"].pop("Timestamp")
    document["_aws"].pop("Timestamp")  # type: ignore[misc]
    assert main == document
    assert per_transport["transport"] == "scheduler"
    assert per_transport["RetryScheduled"] == [3.0]
    assert per_transport["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service", "transport"]]


def test_retryable_error_sends_a_delayed_copy_that_carries_the_envelope(
    stack: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    consumer = make_consumer(stack, raising(RetryableError("downstream busy")), FIXED_30, clock)
    attrs = {"tenant": {"DataType": "String", "StringValue": "acme"}}
    messages = send_and_receive(stack, '{"order": 2}', MessageAttributes=attrs)
    first_id = messages[0]["MessageId"]

    response = consumer(event_from(messages, stack.queue_arn))
    settle(stack, messages, response)

    assert failure_ids(response) == []
    [call] = stack.called("SendMessageBatch")
    assert call["QueueUrl"] == stack.queue_url
    [entry] = call["Entries"]
    assert entry["DelaySeconds"] == 30
    assert "MessageAttributes" not in entry  # the envelope carries them
    retry_emf = [e for e in emf_lines(capsys.readouterr().out) if "RetryScheduled" in e]
    assert [(value(e, "RetryScheduled"), e["transport"]) for e in retry_emf] == [(1, "sqs-delay")]

    clock.advance(29)
    assert stack.receive(stack.queue_url) == []
    clock.advance(2)
    [copy] = stack.receive(stack.queue_url)
    envelope = envelope_of(copy["Body"])
    meta = envelope["serverless_retry"]
    assert envelope["body"] == '{"order": 2}'
    assert envelope["attributes"] == attrs
    assert meta["id"] == first_id
    assert meta["attempt"] == 2
    assert meta["first_failed_at"] == "2026-11-30T10:00:00Z"
    assert meta["source"] == stack.queue_arn
    assert [(h["error_type"], h["error"], h["delay_seconds"], h["transport"]) for h in meta["history"]] == [
        ("RetryableError", "downstream busy", 30, "sqs-delay")
    ]

    # The second attempt sees the original message again, with its retry context.
    seen: list[Message] = []
    response = make_consumer(stack, seen.append, FIXED_30, clock)(event_from([copy], stack.queue_arn))
    assert failure_ids(response) == []
    [message] = seen
    assert (message.body, message.attributes) == ('{"order": 2}', attrs)
    assert (message.retry.id, message.retry.attempt) == (first_id, 2)
    assert message.retry.history[0]["error_type"] == "RetryableError"
    assert message.message_id == copy["MessageId"] != first_id


def test_long_delay_creates_one_time_schedule_with_dead_letter_and_delete(
    stack: Stack, clock: FrozenClock
) -> None:
    consumer = make_consumer(stack, raising(HttpError(503, "unavailable")), FIXED_2H, clock)
    messages = send_and_receive(stack, "plain text body")

    response = consumer(event_from(messages, stack.queue_arn))

    assert failure_ids(response) == []
    assert not stack.called("SendMessageBatch")
    [schedule] = stack.schedules()
    assert schedule["Name"] == schedule_name(messages[0]["MessageId"], 2)
    assert schedule["GroupName"] == stack.group
    assert schedule["ScheduleExpression"] == at_of(clock.now() + timedelta(seconds=7200))
    assert schedule["ScheduleExpression"] == "at(2026-11-30T12:00:00)"
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert schedule["ActionAfterCompletion"] == "DELETE"
    target = schedule["Target"]
    assert target["Arn"] == stack.queue_arn
    assert target["RoleArn"] == ROLE_ARN
    assert target["DeadLetterConfig"] == {"Arn": stack.dlq_arn}
    assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185}
    assert "SqsParameters" not in target
    envelope = envelope_of(target["Input"])
    assert envelope["body"] == "plain text body"
    assert envelope["serverless_retry"]["attempt"] == 2
    assert envelope["serverless_retry"]["history"][0]["transport"] == "scheduler"
    [call] = stack.called("CreateSchedule")
    assert call["ClientToken"] == call["Name"] == schedule["Name"]


def test_redelivered_record_does_not_create_a_second_schedule(stack: Stack, clock: FrozenClock) -> None:
    policy = {"max_attempts": 5, "backoff": {"base_seconds": 3000, "max_seconds": 7200, "jitter": "equal"}}
    consumer = make_consumer(stack, raising(RetryableError("later")), policy, clock)
    record = sqs_record("body", message_id="m-1", queue_arn=stack.queue_arn)

    first = consumer({"Records": [record]})
    clock.advance(40)  # the same record comes back (e.g. the invocation's response was lost)
    second = consumer({"Records": [record]})

    assert failure_ids(first) == failure_ids(second) == []
    assert len(stack.called("CreateSchedule")) == 2
    [schedule] = stack.schedules()
    assert schedule["Name"] == schedule_name("m-1", 2)


@pytest.mark.parametrize("message_id", ["m-1", "m-2", "m-3", "m-4"])
def test_jitter_repeats_for_a_redelivered_record(stack: Stack, clock: FrozenClock, message_id: str) -> None:
    # Full jitter draws anywhere in [0, 1800] s, across the 900 s SQS limit: a redelivered record must
    # draw the same delay (hence the same transport and schedule name), or it could add a second copy.
    policy = {"max_attempts": 5, "backoff": {"base_seconds": 900, "max_seconds": 7200, "jitter": "full"}}
    record = sqs_record("body", message_id=message_id, queue_arn=stack.queue_arn)
    for seed in (7, 7):  # two consumers (e.g. two Lambda instances) with the same configuration
        make_consumer(stack, raising(RetryableError("later")), policy, clock, seed=seed)(
            {"Records": [record]}
        )
        clock.advance(5)
    delays = [c["Entries"][0]["DelaySeconds"] for c in stack.called("SendMessageBatch")]
    bodies = [c["Entries"][0]["MessageBody"] for c in stack.called("SendMessageBatch")]
    schedules = [c["ScheduleExpression"] for c in stack.called("CreateSchedule")]
    assert (len(delays), len(schedules)) in ((2, 0), (0, 2))
    assert len(set(bodies)) <= 1  # the same decision: the same due time, a byte-identical copy
    if delays:  # both copies are visible at that due time: the one sent 5 s later waits 5 s less
        assert delays[0] - delays[1] == 5
    assert len(stack.schedules()) == len(schedules) // 2


def test_non_retryable_error_goes_to_the_exhausted_queue_with_reason_and_traceback(
    stack: Stack, clock: FrozenClock
) -> None:
    def process(message: Message) -> None:
        validate_order(message.json())

    def validate_order(order: dict[str, Any]) -> None:
        raise NonRetryableError(f"order {order['order']} has no customer")

    consumer = make_consumer(stack, process, FIXED_30, clock)
    attrs = {"tenant": {"DataType": "String", "StringValue": "acme"}}
    messages = send_and_receive(stack, '{"order": 3}', MessageAttributes=attrs)

    response = consumer(event_from(messages, stack.queue_arn))
    settle(stack, messages, response)

    assert failure_ids(response) == []
    assert not stack.called("SendMessageBatch") or all(
        c["QueueUrl"] == stack.exhausted_url for c in stack.called("SendMessageBatch")
    )
    assert stack.receive(stack.queue_url) == []
    [final] = stack.receive(stack.exhausted_url)
    envelope = envelope_of(final["Body"])
    meta = envelope["serverless_retry"]
    assert envelope["body"] == '{"order": 3}'
    assert envelope["attributes"] == attrs
    assert meta["outcome"] == "non-retryable"
    assert "NonRetryableError" in meta["reason"]
    assert meta["final_error"]["type"] == "NonRetryableError"
    assert meta["final_error"]["message"] == "order 3 has no customer"
    assert "validate_order" in meta["final_error"]["traceback"]
    assert "Traceback" in meta["final_error"]["traceback"]
    assert meta["exhausted_at"] == "2026-11-30T10:00:00Z"


def retry_envelope(stack: Stack, *, attempt: int, first_failed_at: str, body: str = '{"order": 9}') -> str:
    return json.dumps(
        {
            "serverless_retry": {
                "v": 1,
                "id": "first-id",
                "attempt": attempt,
                "first_failed_at": first_failed_at,
                "source": stack.queue_arn,
                "history": [
                    {
                        "at": first_failed_at,
                        "error_type": "RetryableError",
                        "error": "busy",
                        "delay_seconds": 30,
                        "transport": "sqs-delay",
                    }
                ],
            },
            "body": body,
            "attributes": {},
        }
    )


def test_exhaustion_by_attempts(stack: Stack, clock: FrozenClock) -> None:
    consumer = make_consumer(stack, raising(RetryableError("still busy")), FIXED_30, clock)
    record = sqs_record(
        retry_envelope(stack, attempt=5, first_failed_at="2026-11-30T09:58:00Z"), queue_arn=stack.queue_arn
    )

    response = consumer({"Records": [record]})

    assert failure_ids(response) == []
    [final] = stack.receive(stack.exhausted_url)
    meta = envelope_of(final["Body"])["serverless_retry"]
    assert (meta["outcome"], meta["id"], meta["attempt"]) == ("exhausted", "first-id", 5)
    assert meta["reason"] == "attempt 5 >= max_attempts 5"
    assert meta["final_error"]["message"] == "still busy"
    assert len(meta["history"]) == 1
    assert envelope_of(final["Body"])["body"] == '{"order": 9}'


def test_exhaustion_by_age(stack: Stack, clock: FrozenClock) -> None:
    policy = {**FIXED_30, "max_age_seconds": 3600}
    consumer = make_consumer(stack, raising(RetryableError("still busy")), policy, clock)
    record = sqs_record(
        retry_envelope(stack, attempt=2, first_failed_at="2026-11-30T08:00:00Z"), queue_arn=stack.queue_arn
    )

    response = consumer({"Records": [record]})

    assert failure_ids(response) == []
    [final] = stack.receive(stack.exhausted_url)
    meta = envelope_of(final["Body"])["serverless_retry"]
    assert meta["outcome"] == "exhausted"
    assert "max_age_seconds 3600" in meta["reason"]


def test_invalid_envelope_goes_to_exhausted_and_never_reaches_the_processor(
    stack: Stack, clock: FrozenClock
) -> None:
    seen: list[Message] = []
    consumer = make_consumer(stack, seen.append, FIXED_30, clock)
    raw = '{"serverless_retry": {"v": 2, "id": "x", "attempt": 1}, "body": "b"}'
    messages = send_and_receive(stack, raw)

    response = consumer(event_from(messages, stack.queue_arn))

    assert failure_ids(response) == []
    assert seen == []
    [final] = stack.receive(stack.exhausted_url)
    envelope = envelope_of(final["Body"])
    meta = envelope["serverless_retry"]
    assert meta["outcome"] == "invalid-envelope"
    assert meta["reason"]
    assert envelope["body"] == raw  # the raw body, verbatim
    assert "final_error" not in meta


def test_envelope_key_spelled_with_unicode_escape_is_still_validated(
    stack: Stack, clock: FrozenClock
) -> None:
    seen: list[Message] = []
    consumer = make_consumer(stack, seen.append, FIXED_30, clock)
    raw = '{"\\u0073erverless_retry": {"v": 99}}'
    response = consumer({"Records": [sqs_record(raw, queue_arn=stack.queue_arn)]})
    assert failure_ids(response) == []
    assert seen == []
    [final] = stack.receive(stack.exhausted_url)
    assert envelope_of(final["Body"])["serverless_retry"]["outcome"] == "invalid-envelope"


def test_binary_attributes_survive_the_round_trip(stack: Stack, clock: FrozenClock) -> None:
    consumer = make_consumer(stack, raising(RetryableError("busy")), FIXED_30, clock)
    attrs = {"blob": {"DataType": "Binary", "BinaryValue": b"\xff\x00raw"}}
    messages = send_and_receive(stack, "b", MessageAttributes=attrs)
    settle(stack, messages, consumer(event_from(messages, stack.queue_arn)))
    clock.advance(31)
    [copy] = stack.receive(stack.queue_url)

    seen: list[Message] = []
    make_consumer(stack, seen.append, FIXED_30, clock)(event_from([copy], stack.queue_arn))

    [message] = seen
    assert message.attributes == {"blob": {"DataType": "Binary", "BinaryValue": "/wByYXc="}}


def test_one_failing_record_does_not_affect_the_others(stack: Stack, clock: FrozenClock) -> None:
    done: list[str] = []

    def process(message: Message) -> None:
        if message.body == "bad":
            raise ValueError("cannot parse")
        done.append(message.body)

    consumer = make_consumer(stack, process, FIXED_30, clock)
    records = [sqs_record(b, queue_arn=stack.queue_arn) for b in ("a", "bad", "c")]

    response = consumer({"Records": records})

    assert failure_ids(response) == []
    assert done == ["a", "c"]
    [call] = stack.called("SendMessageBatch")
    assert [envelope_of(e["MessageBody"])["body"] for e in call["Entries"]] == ["bad"]


def test_many_retries_are_sent_in_batches_of_ten(stack: Stack, clock: FrozenClock) -> None:
    consumer = make_consumer(stack, raising(RetryableError("busy")), FIXED_30, clock)
    records = [sqs_record(f"m{i}", queue_arn=stack.queue_arn) for i in range(25)]

    response = consumer({"Records": records})

    assert failure_ids(response) == []
    assert [len(c["Entries"]) for c in stack.called("SendMessageBatch")] == [10, 10, 5]
    clock.advance(31)
    assert len(stack.receive(stack.queue_url)) == 25


def test_fifo_queue_retries_through_the_scheduler_with_the_message_group(
    aws: None, clock: FrozenClock
) -> None:
    from .conftest import make_stack

    stack = make_stack("payments", fifo=True)
    consumer = make_consumer(stack, raising(RetryableError("busy")), FIXED_30, clock, fifo_order="unordered")
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody="p1", MessageGroupId="customer-7")
    messages = stack.receive(stack.queue_url)

    response = consumer(event_from(messages, stack.queue_arn))

    assert failure_ids(response) == []
    assert not stack.called("SendMessageBatch")
    [schedule] = stack.schedules()
    assert schedule["Target"]["SqsParameters"] == {"MessageGroupId": "customer-7"}
    assert schedule["Target"]["DeadLetterConfig"] == {"Arn": stack.schedule_dlq_arn}
    assert not stack.schedule_dlq_arn.endswith(".fifo")
    assert schedule["ScheduleExpression"] == "at(2026-11-30T10:00:30)"
    meta = envelope_of(schedule["Target"]["Input"])["serverless_retry"]
    assert meta["history"][0]["transport"] == "scheduler"


def test_an_immediate_fifo_retry_is_scheduled_a_few_seconds_ahead(aws: None, clock: FrozenClock) -> None:
    from .conftest import make_stack

    stack = make_stack("instant", fifo=True)
    policy = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 0}}
    consumer = make_consumer(stack, raising(RetryableError("busy")), policy, clock, fifo_order="unordered")
    record = sqs_record("p", queue_arn=stack.queue_arn, message_group_id="g")

    assert failure_ids(consumer({"Records": [record]})) == []

    [schedule] = stack.schedules()
    assert schedule["ScheduleExpression"] == "at(2026-11-30T10:00:05)"  # never an at() in the past
    assert envelope_of(schedule["Target"]["Input"])["serverless_retry"]["history"][0]["delay_seconds"] == 0


def test_fifo_exhausted_copy_keeps_the_group_and_is_deduplicated(aws: None, clock: FrozenClock) -> None:
    from .conftest import make_stack

    stack = make_stack("ledger", fifo=True)
    consumer = make_consumer(stack, raising(NonRetryableError("no")), FIXED_30, clock)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody="l1", MessageGroupId="acct-1")
    messages = stack.receive(stack.queue_url)
    record = event_from(messages, stack.queue_arn)

    assert failure_ids(consumer(record)) == []
    assert failure_ids(consumer(record)) == []  # a redelivery: FIFO deduplicates the second copy

    [call, _] = stack.called("SendMessageBatch")
    assert call["Entries"][0]["MessageGroupId"] == "acct-1"
    finals = stack.receive(stack.exhausted_url)
    assert len(finals) == 1
    assert finals[0]["Attributes"]["MessageGroupId"] == "acct-1"


VISIBILITY = {
    "max_attempts": 3,
    "transport": "visibility",
    "backoff": {"strategy": "fixed", "base_seconds": 120},
}


def test_visibility_transport_hides_the_same_message_and_counts_receives(
    stack: Stack, clock: FrozenClock
) -> None:
    attempts: list[int] = []

    def process(message: Message) -> None:
        attempts.append(message.retry.attempt)
        raise RetryableError("busy")

    consumer = make_consumer(stack, process, VISIBILITY, clock)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody="v1")

    for _ in range(2):
        messages = stack.receive(stack.queue_url)
        response = consumer(event_from(messages, stack.queue_arn))
        settle(stack, messages, response)
        assert failure_ids(response) == [messages[0]["MessageId"]]  # not deleted: it is the retry
        clock.advance(100)
        assert stack.receive(stack.queue_url) == []  # hidden for 120 s, not the queue's 30 s
        clock.advance(21)

    [call, _] = stack.called("ChangeMessageVisibilityBatch")
    assert call["Entries"][0]["VisibilityTimeout"] == 120
    messages = stack.receive(stack.queue_url)
    response = consumer(event_from(messages, stack.queue_arn))
    settle(stack, messages, response)

    assert attempts == [1, 2, 3]
    assert failure_ids(response) == []
    assert stack.receive(stack.queue_url) == []
    [final] = stack.receive(stack.exhausted_url)
    meta = envelope_of(final["Body"])["serverless_retry"]
    assert (meta["outcome"], meta["attempt"], meta["reason"]) == (
        "exhausted",
        3,
        "attempt 3 >= max_attempts 3",
    )
    assert envelope_of(final["Body"])["body"] == "v1"


def test_visibility_transport_measures_age_from_the_first_receive(stack: Stack, clock: FrozenClock) -> None:
    policy = {**VISIBILITY, "max_attempts": 10, "max_age_seconds": 300}
    consumer = make_consumer(stack, raising(RetryableError("busy")), policy, clock)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody="v2")
    for _ in range(4):  # the 4th attempt comes 3 x 121 s > 300 s after the first receive
        messages = stack.receive(stack.queue_url)
        settle(stack, messages, consumer(event_from(messages, stack.queue_arn)))
        clock.advance(121)
    [final] = stack.receive(stack.exhausted_url)
    meta = envelope_of(final["Body"])["serverless_retry"]
    assert meta["outcome"] == "exhausted"
    assert "max_age_seconds 300" in meta["reason"]
    assert meta["attempt"] == 4


def test_unmatched_dead_letter_rule_and_http_status_rules(stack: Stack, clock: FrozenClock) -> None:
    policy = {
        "max_attempts": 5,
        "unmatched": "dead-letter",
        "backoff": {"strategy": "fixed", "base_seconds": 30, "max_seconds": 7200},
        "rules": [{"http_status": [429], "honor_retry_after": True}],
    }
    errors: dict[str, BaseException] = {
        "throttled": HttpError(429, "slow down", retry_after=5000),
        "bug": KeyError("customer"),
    }

    def process(message: Message) -> None:
        raise errors[message.body]

    consumer = make_consumer(stack, process, policy, clock)
    records = [sqs_record(b, message_id=b, queue_arn=stack.queue_arn) for b in ("throttled", "bug")]

    response = consumer({"Records": records})

    assert failure_ids(response) == []
    [schedule] = stack.schedules()
    assert schedule["ScheduleExpression"] == at_of(clock.now() + timedelta(seconds=5000))
    [final] = stack.receive(stack.exhausted_url)
    meta = envelope_of(final["Body"])["serverless_retry"]
    assert (meta["outcome"], meta["id"], meta["final_error"]["type"]) == ("non-retryable", "bug", "KeyError")


def test_fields_ride_on_the_first_emf_line_and_never_replace_a_metric(
    capsys: pytest.CaptureFixture[str],
) -> None:
    counts = BatchCounts(processed=1)
    counts.retry_scheduled["sqs-delay"] = 2
    metrics = ConsumerMetrics("NS", "svc")
    bare = [json.loads(line) for line in metrics.lines(counts)]
    capsys.readouterr()

    metrics.publish(
        counts,
        {"message": "m", "retries": [{"delays": {"a": 1}}], "Processed": "x", "service": "y", "_aws": 0},
    )

    main, per_transport = emf_lines(capsys.readouterr().out)
    for line in (main, per_transport, *bare):
        line["_aws"].pop("Timestamp")
    # The metrics line is Powertools' document plus the fields that name no metric or dimension.
    assert main == {**bare[0], "message": "m", "retries": [{"delays": {"a": 1}}]}
    assert per_transport == bare[1]

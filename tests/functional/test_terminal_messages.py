"""Issue 9 item 10 on moto: a message at the source queue's size limit reaches the retry-exhausted queue
with its outcome and reason, and inspect/redrive select it and restore its exact body and attributes."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest
from serverless_retry.clock import FrozenClock
from serverless_retry.config import ConsumerSettings
from serverless_retry.envelope import sqs_message_size
from serverless_retry.errors import ConfigError, NonRetryableError, RetryableError
from serverless_retry.message import Message
from serverless_retry.redrive.options import options_from_mapping
from serverless_retry.redrive.queue import decode, redrive
from serverless_retry.terminal import FRAME_OVERHEAD_BYTES

from .conftest import Stack, event_from, failure_ids, make_consumer

SOURCE_MAX = 2048
EXHAUSTED_MAX = SOURCE_MAX + FRAME_OVERHEAD_BYTES  # the relationship the Terraform modules enforce
POLICY = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 30}}
TEN_ATTRIBUTES: dict[str, dict[str, Any]] = {
    **{f"a{i}": {"DataType": "String", "StringValue": f"v{i}"} for i in range(8)},
    "amount": {"DataType": "Number", "StringValue": "12.5"},
    "sig": {"DataType": "Binary", "BinaryValue": b"\x00\xff\x10signature"},
}


def raising(error: BaseException) -> Any:
    def process(message: Message) -> None:
        raise error

    return process


def at_the_limit(attributes: dict[str, dict[str, Any]], fill: str = '"') -> str:
    """A body that makes the message exactly SOURCE_MAX bytes (SQS's count), in characters that JSON
    escaping doubles: the final envelope cannot fit, however large its queue's margin."""
    return fill * (SOURCE_MAX - sqs_message_size("", attributes))  # type: ignore[arg-type]


def limited_stack(stack: Stack) -> Stack:
    """The queues as the modules create them: the exhausted queue larger than the source by the frame."""
    stack.sqs.set_queue_attributes(
        QueueUrl=stack.queue_url, Attributes={"MaximumMessageSize": str(SOURCE_MAX)}
    )
    stack.sqs.set_queue_attributes(
        QueueUrl=stack.exhausted_url, Attributes={"MaximumMessageSize": str(EXHAUSTED_MAX)}
    )
    return stack


def sent_to_exhausted(stack: Stack) -> list[dict[str, Any]]:
    return [
        entry
        for call in stack.called("SendMessageBatch")
        if call["QueueUrl"] == stack.exhausted_url
        for entry in call["Entries"]
    ]


def entry_size(entry: dict[str, Any]) -> int:
    """SQS's count of a SendMessageBatch entry (the call recorder keeps binary values as repr text)."""
    attributes = {
        name: {**value, "BinaryValue": ast.literal_eval(value["BinaryValue"])}
        if "BinaryValue" in value
        else value
        for name, value in entry.get("MessageAttributes", {}).items()
    }
    return sqs_message_size(entry["MessageBody"], attributes)


@pytest.mark.parametrize(
    ("error", "outcome", "reason"),
    [
        (RetryableError("busy"), "too-large-to-retry", "maximum message size of 2048 bytes"),
        (NonRetryableError("bad order"), "non-retryable", "the processor says no attempt can succeed"),
    ],
)
def test_a_message_at_the_source_limit_with_ten_attributes_keeps_its_reason(
    stack: Stack, clock: FrozenClock, error: BaseException, outcome: str, reason: str
) -> None:
    limited_stack(stack)
    consumer = make_consumer(
        stack,
        raising(error),
        POLICY,
        clock,
        max_message_bytes=SOURCE_MAX,
        exhausted_max_message_bytes=EXHAUSTED_MAX,
    )
    body = at_the_limit(TEN_ATTRIBUTES)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body, MessageAttributes=TEN_ATTRIBUTES)
    [received] = stack.receive(stack.queue_url)

    response = consumer(event_from([received], stack.queue_arn))

    assert failure_ids(response) == []
    [entry] = sent_to_exhausted(stack)
    assert entry_size(entry) <= EXHAUSTED_MAX
    assert len(entry["MessageAttributes"]) == 10
    [final] = stack.receive(stack.exhausted_url)
    message = decode(final)  # what inspect and redrive read
    assert message.outcome == outcome
    assert reason in message.reason
    assert message.envelope_id == received["MessageId"]
    assert message.body == body
    assert set(message.attributes) == set(TEN_ATTRIBUTES)


def test_redrive_selects_it_by_outcome_and_restores_it_exactly(stack: Stack, clock: FrozenClock) -> None:
    limited_stack(stack)
    consumer = make_consumer(
        stack,
        raising(RetryableError("busy")),
        POLICY,
        clock,
        max_message_bytes=SOURCE_MAX,
        exhausted_max_message_bytes=EXHAUSTED_MAX,
    )
    body = at_the_limit(TEN_ATTRIBUTES, fill="\\")
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body, MessageAttributes=TEN_ATTRIBUTES)
    [received] = stack.receive(stack.queue_url)
    consumer(event_from([received], stack.queue_arn))
    stack.sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=received["ReceiptHandle"])

    options = options_from_mapping(
        {
            "from_queue_url": stack.exhausted_url,
            "to_queue_url": stack.queue_url,
            "outcome": "too-large-to-retry",
        }
    )
    clock.advance(0.001)  # moto shows a message released at this very millisecond only once it has passed
    report = redrive(stack.sqs, options, clock=clock, wait_seconds=0)

    assert [m.outcome for m in report.redriven] == ["too-large-to-retry"]
    [back] = stack.receive(stack.queue_url)
    assert back["Body"] == body
    assert back["MessageAttributes"] == TEN_ATTRIBUTES
    assert stack.receive(stack.exhausted_url) == []


def test_a_final_envelope_that_fits_is_still_preferred(stack: Stack, clock: FrozenClock) -> None:
    consumer = make_consumer(
        stack,
        raising(NonRetryableError("bad order")),
        POLICY,
        clock,
        max_message_bytes=SOURCE_MAX,
        exhausted_max_message_bytes=EXHAUSTED_MAX,
    )
    stack.sqs.send_message(
        QueueUrl=stack.queue_url, MessageBody='{"order": 1}', MessageAttributes=TEN_ATTRIBUTES
    )
    consumer(event_from(stack.receive(stack.queue_url), stack.queue_arn))
    [final] = stack.receive(stack.exhausted_url)
    assert final.get("MessageAttributes", {}) == {}
    envelope = json.loads(final["Body"])
    assert envelope["serverless_retry"]["outcome"] == "non-retryable"
    assert envelope["serverless_retry"]["final_error"]["traceback"]
    assert decode(final).attributes["sig"] == {"DataType": "Binary", "BinaryValue": "AP8Qc2lnbmF0dXJl"}


# --- SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES -------------------------------------------------

URL = "https://sqs.us-east-1.amazonaws.com/123456789012"
ARN = "arn:aws:sqs:us-east-1:123456789012"
ENV = {
    "SERVERLESS_RETRY_PROCESSOR": "tests.functional.processors:record",
    "SERVERLESS_RETRY_POLICY": json.dumps({"transport": "sqs-delay"}),
    "SERVERLESS_RETRY_QUEUE_URL": f"{URL}/orders",
    "SERVERLESS_RETRY_QUEUE_ARN": f"{ARN}:orders",
    "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": f"{URL}/orders-exhausted",
    "SERVERLESS_RETRY_DLQ_ARN": f"{ARN}:orders-dlq",
}


def test_the_exhausted_size_defaults_to_the_source_size() -> None:
    assert ConsumerSettings.from_env(ENV).targets.exhausted_max_message_bytes == 262_144
    env = {**ENV, "SERVERLESS_RETRY_MAX_MESSAGE_BYTES": "65536"}
    targets = ConsumerSettings.from_env(env).targets
    assert (targets.max_message_bytes, targets.exhausted_max_message_bytes) == (65_536, 65_536)
    env["SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES"] = "1048576"
    assert ConsumerSettings.from_env(env).targets.exhausted_max_message_bytes == 1_048_576


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("big", "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES: must be an integer, got 'big'"),
        ("1048577", "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES: must be between 1024 and 1048576"),
        (
            "131072",
            "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES: must be at least SERVERLESS_RETRY_MAX_MESSAGE_BYTES "
            "(262144)",
        ),
    ],
)
def test_a_bad_exhausted_size_fails_the_cold_start(value: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerSettings.from_env({**ENV, "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES": value})
    assert str(info.value).startswith(problem)

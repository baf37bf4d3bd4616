"""The Python API's pure parts: Message.sqs_record, the decorators' two spellings, and settings whose
processor is given in code. (On SQS: tests/functional/test_python_api.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from serverless_retry import (
    ConfigError,
    ConsumerSettings,
    Message,
    RetryContext,
    RetryingProcessor,
    retrying_consumer,
    self_healing,
)
from serverless_retry.envelope import unwrap
from serverless_retry.message import first_delivery, message_attributes
from serverless_retry.testing import lambda_context, sqs_record

ARN = "arn:aws:sqs:us-east-1:123456789012:orders"
ENVIRONMENT = {
    "SERVERLESS_RETRY_POLICY": json.dumps({"max_attempts": 3, "backoff": {"max_seconds": 600}}),
    "SERVERLESS_RETRY_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
    "SERVERLESS_RETRY_QUEUE_ARN": ARN,
    "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted",
    "SERVERLESS_RETRY_DLQ_ARN": ARN + "-dlq",
}


def test_a_first_delivery_s_sqs_record_is_its_own_record_built_once() -> None:
    record = sqs_record({"order": "o-1"}, queue_arn=ARN, attributes={"tenant": "acme"})
    message = first_delivery(record["messageId"], record["body"], record, ARN)

    view = message.sqs_record
    assert isinstance(view, SQSRecord)
    assert view.raw_event == record
    assert view.json_body == {"order": "o-1"}
    assert view.message_attributes["tenant"].string_value == "acme"  # type: ignore[union-attr]
    assert message.sqs_record is view  # built on first read, then kept


def test_a_first_delivery_s_attributes_convert_once_whichever_way_they_are_read() -> None:
    record = sqs_record({"order": "o-1"}, queue_arn=ARN, attributes={"tenant": "acme"})
    expected = {"tenant": {"DataType": "String", "StringValue": "acme"}}

    read_by_consumer = first_delivery(record["messageId"], record["body"], record, ARN)
    converted = message_attributes(read_by_consumer)
    assert converted == expected
    assert read_by_consumer.attributes is converted  # the processor then sees that very dict

    read_by_processor = first_delivery(record["messageId"], record["body"], record, ARN)
    read_by_processor.attributes["tenant"]["StringValue"] = "edited"  # a processor's own change...
    assert message_attributes(read_by_processor)["tenant"]["StringValue"] == "edited"  # ...is kept

    bare = sqs_record({"order": "o-2"}, queue_arn=ARN)
    assert message_attributes(first_delivery(bare["messageId"], bare["body"], bare, ARN)) == {}
    built = Message("m", "b", expected, RetryContext("m", 1, None, (), ARN), record)
    assert message_attributes(built) is expected


def test_a_retry_copy_s_sqs_record_is_the_unwrapped_record() -> None:
    envelope = {
        "serverless_retry": {
            "v": 1,
            "id": "first-id",
            "attempt": 3,
            "first_failed_at": "2026-01-01T00:00:00Z",
            "source": ARN,
            "history": [],
        },
        "body": "plain text, not JSON",
        "attributes": {"trace": {"DataType": "String", "StringValue": "t-1"}},
    }
    record = sqs_record(envelope, queue_arn=ARN, message_id="copy-id", receive_count=2)
    incoming = unwrap(record["body"], {}, message_id="copy-id", source=ARN)
    assert incoming.kind == "envelope"
    message = Message("copy-id", incoming.body, incoming.attributes, incoming.context, record)

    view = message.sqs_record
    assert view.body == "plain text, not JSON"
    assert view.message_attributes["trace"].string_value == "t-1"  # type: ignore[union-attr]
    assert view.raw_event["md5OfMessageAttributes"] is None  # SQS's was over the envelope's attributes
    assert (view.message_id, view.attributes.approximate_receive_count) == ("copy-id", "2")
    assert record["body"] == json.dumps(envelope)  # the raw record is left as it came


def test_self_healing_takes_both_decorator_spellings() -> None:
    def handler(event: Any, context: Any, retry: RetryContext) -> tuple[Any, int]:
        return event, retry.attempt

    for wrapped in (self_healing(handler), self_healing()(handler)):
        assert wrapped({"order": 1}, lambda_context()) == ({"order": 1}, 1)
        assert wrapped.__wrapped__ is handler  # type: ignore[attr-defined]


def test_retrying_consumer_takes_the_hook_or_a_processor_not_both() -> None:
    def hook(*_: object) -> None: ...

    def record_handler(message: Message) -> None: ...

    with pytest.raises(TypeError, match="on_exhausted"):
        retrying_consumer(processor=RetryingProcessor(), on_exhausted=hook)
    assert callable(retrying_consumer(record_handler))
    assert callable(retrying_consumer(on_exhausted=hook)(record_handler))


def test_settings_without_a_processor_variable_only_when_the_processor_is_given_in_code() -> None:
    with pytest.raises(ConfigError, match="SERVERLESS_RETRY_PROCESSOR"):
        ConsumerSettings.from_env(ENVIRONMENT)
    settings = ConsumerSettings.from_env(ENVIRONMENT, processor_required=False)
    assert settings.processor == ""
    with pytest.raises(ConfigError, match="SERVERLESS_RETRY_PROCESSOR"):
        ConsumerSettings.from_env(
            {**ENVIRONMENT, "SERVERLESS_RETRY_PROCESSOR": "not a spec"}, processor_required=False
        )
    assert RetryingProcessor(environ=ENVIRONMENT).settings.policy.max_attempts == 3

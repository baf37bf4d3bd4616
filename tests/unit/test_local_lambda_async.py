"""Lambda's async invocation rules as the emulator applies them (pure): payload limits, retries and
their delays, event age, the invocation record's exact shape (checked against the corpus D1's
enrichment reads), destinations' special cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from serverless_retry_tools.local.aws_rules.lambda_async import (
    MAX_ASYNC_PAYLOAD_BYTES,
    SNS_DESTINATION_MAX_BYTES,
    AsyncInvokeRejected,
    AsyncSettings,
    InvalidEventInvokeConfig,
    Queued,
    accept_payload,
    after_attempt,
    after_throttle,
    dead_letter_attributes,
    destination_record,
    error_payload,
    eventbridge_entry,
    format_timestamp,
    on_pickup,
    sns_destination_message,
    validate_event_invoke_config,
)

EVENTS = Path(__file__).resolve().parents[1] / "events"
ARN = "arn:aws:lambda:us-east-1:123456789012:function:orders-fn"
T0 = 1_796_032_800_000  # 2026-11-30T10:00:00Z


def queued(payload: Any = None, **over: Any) -> Queued:
    base: Queued = {
        "v": 1,
        "function_arn": ARN,
        "qualifier": "$LATEST",
        "request_id": "e4b46cbf-b738-4c2f-8880-a18cdf61200e",
        "payload": json.dumps({"k": "v"} if payload is None else payload),
        "enqueued_ms": T0,
        "invoke_count": 0,
        "trigger": "invoke",
    }
    base.update(over)  # type: ignore[typeddict-item]
    return base


def test_payload_limit_is_one_megabyte_of_json() -> None:
    body = json.dumps("x" * (MAX_ASYNC_PAYLOAD_BYTES - 2)).encode()
    assert len(body) == MAX_ASYNC_PAYLOAD_BYTES
    assert accept_payload(body) == body.decode()
    with pytest.raises(AsyncInvokeRejected) as caught:
        accept_payload(body + b" ")
    assert (caught.value.code, caught.value.status) == ("RequestEntityTooLargeException", 413)


def test_payload_must_be_json_and_empty_is_an_empty_object() -> None:
    with pytest.raises(AsyncInvokeRejected) as caught:
        accept_payload(b"not json")
    assert (caught.value.code, caught.value.status) == ("InvalidRequestContentException", 400)
    assert accept_payload(b"") == "{}"
    assert accept_payload(None) == "{}"


@pytest.mark.parametrize(
    ("config", "code"),
    [
        ({"MaximumRetryAttempts": 3}, "ValidationException"),
        ({"MaximumRetryAttempts": -1}, "ValidationException"),
        ({"MaximumEventAgeInSeconds": 59}, "ValidationException"),
        ({"MaximumEventAgeInSeconds": 21601}, "ValidationException"),
        (
            {
                "DestinationConfig": {
                    "OnFailure": {"Destination": "arn:aws:dynamodb:us-east-1:123456789012:table/t"}
                }
            },
            "InvalidParameterValueException",
        ),
        (
            {"DestinationConfig": {"OnSuccess": {"Destination": "arn:aws:s3:::bucket"}}},
            "InvalidParameterValueException",
        ),
        (
            {
                "DestinationConfig": {
                    "OnFailure": {"Destination": "arn:aws:events:us-east-1:123456789012:rule/r"}
                }
            },
            "InvalidParameterValueException",
        ),
    ],
)
def test_event_invoke_config_checks(config: dict[str, Any], code: str) -> None:
    with pytest.raises(InvalidEventInvokeConfig) as caught:
        validate_event_invoke_config(config)
    assert caught.value.code == code


def test_valid_event_invoke_configs_pass() -> None:
    for config in (
        {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60},
        {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 21600},
        {"DestinationConfig": {"OnFailure": {"Destination": "arn:aws:s3:::bucket"}}},
        {
            "DestinationConfig": {
                "OnSuccess": {"Destination": "arn:aws:events:us-east-1:123456789012:event-bus/b"}
            }
        },
    ):
        validate_event_invoke_config(config)


def test_defaults_are_two_retries_and_six_hours() -> None:
    settings = AsyncSettings.from_config(None)
    assert (settings.max_retry_attempts, settings.max_event_age_seconds) == (2, 21600)
    assert (settings.on_success, settings.on_failure) == (None, None)


def test_retries_wait_one_then_two_minutes_then_exhaust() -> None:
    settings = AsyncSettings()
    assert after_attempt(settings, 1, ok=False).delay_seconds == 60
    assert after_attempt(settings, 2, ok=False).delay_seconds == 120
    final = after_attempt(settings, 3, ok=False)
    assert (final.action, final.condition) == ("discard", "RetriesExhausted")
    assert after_attempt(settings, 2, ok=True).action == "success"


def test_throttles_back_off_from_one_second_to_five_minutes_and_never_exhaust() -> None:
    delays = [after_throttle(n).delay_seconds for n in range(1, 13)]
    assert delays == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]
    assert after_throttle(10_000) == after_throttle(12)  # bounded however long it lasts
    assert {after_throttle(n).action for n in range(1, 50)} == {"retry"}  # only the event's age ends it


def test_no_retries_exhausts_at_once() -> None:
    step = after_attempt(AsyncSettings(max_retry_attempts=0), 1, ok=False)
    assert (step.action, step.condition) == ("discard", "RetriesExhausted")


def test_event_age_is_checked_when_its_turn_comes() -> None:
    settings = AsyncSettings(max_event_age_seconds=60)
    assert on_pickup(settings, queued(), T0 + 60_000).action == "invoke"
    step = on_pickup(settings, queued(), T0 + 60_001)
    assert (step.action, step.condition) == ("discard", "EventAgeExceeded")


def test_failure_record_has_the_shape_of_the_corpus() -> None:
    corpus = json.loads((EVENTS / "destination-sns-retries-exhausted.json").read_text())
    error = {
        "errorType": "HTTPError",
        "errorMessage": "HTTP 503: upstream unavailable; Retry-After: 120",
        "stackTrace": [
            "Traceback (most recent call last):\n",
            '  File "/var/task/x.py", line 1, in h\n',
            "HTTPError: 503\n",
        ],
    }
    request = queued(corpus["requestPayload"], request_id=corpus["requestContext"]["requestId"])
    record = destination_record(
        request,
        condition="RetriesExhausted",
        at_ms=T0 + 4512,
        invoke_count=1,
        response=error_payload(error, request["request_id"]),
        function_error="Unhandled",
    )
    assert list(record) == list(corpus)
    assert record["timestamp"] == "2026-11-30T10:00:04.512Z"
    assert record["requestContext"] == corpus["requestContext"]
    assert record["responseContext"] == corpus["responseContext"]
    assert list(record["responsePayload"]) == ["errorMessage", "errorType", "requestId", "stackTrace"]
    assert record["responsePayload"]["stackTrace"] == ['  File "/var/task/x.py", line 1, in h\n']


def test_event_age_exceeded_record_has_no_response() -> None:
    corpus = json.loads((EVENTS / "destination-sns-event-age-exceeded.json").read_text())
    record = destination_record(
        queued(corpus["requestPayload"]), condition="EventAgeExceeded", at_ms=T0, invoke_count=0
    )
    assert list(record) == list(corpus)
    assert record["requestContext"]["approximateInvokeCount"] == 0


def test_success_record() -> None:
    corpus = json.loads((EVENTS / "destination-success.json").read_text())
    record = destination_record(
        queued(), condition="Success", at_ms=T0, invoke_count=1, response={"ok": True}
    )
    assert record["responseContext"] == corpus["responseContext"]
    assert record["responsePayload"] == {"ok": True}


def test_timeout_and_crash_payloads() -> None:
    timeout = error_payload({"errorMessage": "Task timed out after 3.00 seconds"}, "r-1", timed_out=True)
    assert timeout == {
        "errorType": "Sandbox.Timedout",
        "errorMessage": "RequestId: r-1 Error: Task timed out after 3.00 seconds",
    }
    crash = error_payload(
        {"errorType": "Runtime.ExitError", "errorMessage": "RequestId: r-1 Error: Runtime exited"}, "r-1"
    )
    assert crash == {"errorType": "Runtime.ExitError", "errorMessage": "RequestId: r-1 Error: Runtime exited"}


def test_eventbridge_destination_entry() -> None:
    bus = "arn:aws:events:us-east-1:123456789012:event-bus/results"
    record = destination_record(
        queued(),
        condition="RetriesExhausted",
        at_ms=T0,
        invoke_count=3,
        response={},
        function_error="Unhandled",
    )
    entry = eventbridge_entry(record, bus_arn=bus)
    assert entry["Source"] == "lambda"
    assert entry["DetailType"] == "Lambda Function Invocation Result - Failure"
    assert entry["Resources"] == [bus, f"{ARN}:$LATEST"]
    assert json.loads(entry["Detail"]) == record
    success = destination_record(queued(), condition="Success", at_ms=T0, invoke_count=1)
    assert (
        eventbridge_entry(success, bus_arn=bus)["DetailType"] == "Lambda Function Invocation Result - Success"
    )


def test_sns_destination_drops_the_payloads_of_a_record_too_large() -> None:
    big = destination_record(
        queued({"blob": "x" * SNS_DESTINATION_MAX_BYTES}), condition="Success", at_ms=T0, invoke_count=1
    )
    slim = json.loads(sns_destination_message(big))
    assert "requestPayload" not in slim
    assert "responsePayload" not in slim
    assert slim["requestContext"] == big["requestContext"]
    small = destination_record(queued(), condition="Success", at_ms=T0, invoke_count=1)
    assert json.loads(sns_destination_message(small)) == small


def test_dead_letter_attributes() -> None:
    attrs = dead_letter_attributes("r-1", "200", "boom" * 300)
    assert attrs["RequestID"] == {"DataType": "String", "StringValue": "r-1"}
    assert len(attrs["ErrorMessage"]["StringValue"]) == 1024


def test_format_timestamp_has_milliseconds() -> None:
    assert format_timestamp(T0 + 7) == "2026-11-30T10:00:00.007Z"

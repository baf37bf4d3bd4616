"""Destination records -> bus event details, over the real-shaped corpus in tests/events/."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.types import ERROR_INVALID_RECORD, ERROR_MISSING_TYPE, FailureMeta

from tests.selfheal_corpus import load, pipe_record

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
ORDERS = "arn:aws:lambda:us-east-1:123456789012:function:orders-fn"
TOPIC = "arn:aws:sns:us-east-1:123456789012:orders"
META_TYPES = {name: hint for name, hint in FailureMeta.__annotations__.items()}


def detail_of(name: str) -> dict[str, Any]:
    return dict(failure_detail(pipe_record(load(name)), NOW))


# (file, expected meta fields, the payload it must carry: the event as it first arrived)
CORPUS = [
    (
        "destination-sns-retries-exhausted.json",
        {
            "source_type": "sns",
            "source": TOPIC,
            "function_arn": ORDERS,
            "function_name": "orders-fn",
            "function_qualifier": "$LATEST",
            "condition": "RetriesExhausted",
            "error_type": "HTTPError",
            "error_message": "HTTP 503: upstream unavailable; Retry-After: 120",
            "retry_count": 0,
            "attempt": 1,
            "invoke_count": 1,
            "retry_id": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
            "request_id": "e4b46cbf-b738-4c2f-8880-a18cdf61200e",
            "first_failed_at": "2026-11-30T10:00:04Z",
            "failed_at": "2026-11-30T10:00:04Z",
            "previous_delay_seconds": 0,
            "response": None,
        },
        "sns-event.json",
    ),
    (
        "destination-sns-keyerror.json",
        {"function_name": "invoices-fn", "error_type": "KeyError", "error_message": "'sku'", "attempt": 1},
        "sns-event-no-subject.json",
    ),
    (
        "destination-eventbridge-retries-exhausted.json",
        {
            "source_type": "eventbridge",
            "source": "com.example.orders",
            "error_type": "ConnectionError",
            "invoke_count": 3,
            "retry_id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
        },
        "eventbridge-event.json",
    ),
    (
        "destination-direct-timeout.json",
        {
            "source_type": "direct",
            "source": "arn:aws:lambda:us-east-1:123456789012:function:reindex-fn",
            "function_name": "reindex-fn",
            "function_qualifier": "7",
            "error_type": "Sandbox.Timedout",
            "stack_trace": [],
            "retry_id": "3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
        },
        "direct-event.json",
    ),
    (
        "destination-direct-crash-no-error-type.json",
        {
            "error_type": ERROR_MISSING_TYPE,
            "error_message": load("destination-direct-crash-no-error-type.json")["responsePayload"][
                "errorMessage"
            ],
        },
        "direct-event.json",
    ),
    (
        "destination-sns-event-age-exceeded.json",
        {
            "condition": "EventAgeExceeded",
            "error_type": ERROR_MISSING_TYPE,
            "error_message": "",
            "invoke_count": 0,
            "failed_at": "2026-11-30T16:00:00Z",
            "response": None,
        },
        "sns-event.json",
    ),
    (
        "destination-eventbridge-handled-error.json",
        {"error_type": "ValidationError", "response": {"code": "E_AMOUNT"}},
        "eventbridge-event.json",
    ),
    (
        "destination-sns-redriven.json",
        {
            "attempt": 3,
            "retry_count": 2,
            "retry_id": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
            "first_failed_at": "2026-11-30T10:00:04Z",
            "failed_at": "2026-11-30T10:01:30Z",
            "previous_delay_seconds": 40,
            "error_type": "HTTPError",
        },
        "sns-event.json",
    ),
    (
        "destination-eventbridge-redriven.json",
        {
            "attempt": 2,
            "retry_count": 1,
            "retry_id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
            "previous_delay_seconds": 10,
        },
        "eventbridge-event.json",
    ),
    (
        "destination-direct-redriven.json",
        {"attempt": 2, "retry_id": "3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "error_type": "TimeoutError"},
        "direct-event.json",
    ),
]


@pytest.mark.parametrize(("name", "expected", "original"), CORPUS, ids=[c[0] for c in CORPUS])
def test_each_record_gives_its_meta_and_the_original_event(
    name: str, expected: dict[str, Any], original: str
) -> None:
    detail = detail_of(name)
    meta = detail["meta"]
    assert {key: meta[key] for key in expected} == expected
    assert meta["problem"] == ""
    assert detail["payload"] == load(original)  # the retry state is taken off, nothing else changes


@pytest.mark.parametrize(
    "name", [c[0] for c in CORPUS] + ["destination-success.json", "destination-invalid-retry-state.json"]
)
def test_every_meta_field_is_present_with_its_type(name: str) -> None:
    meta = detail_of(name)["meta"]
    assert set(meta) == set(META_TYPES)
    for key in ("v", "retry_count", "attempt", "invoke_count", "previous_delay_seconds"):
        assert type(meta[key]) is int, key
        assert meta[key] >= 0, key
    assert meta["attempt"] == meta["retry_count"] + 1
    for key in (
        "source_type",
        "source",
        "function_arn",
        "function_name",
        "condition",
        "error_type",
        "retry_id",
        "failed_at",
    ):
        assert isinstance(meta[key], str), key
    assert meta["error_type"], "error_type is never empty"
    assert isinstance(meta["stack_trace"], list)
    assert isinstance(meta["trimmed"], list)


def test_the_stack_trace_and_request_id_are_not_in_response() -> None:
    meta = detail_of("destination-sns-retries-exhausted.json")["meta"]
    assert len(meta["stack_trace"]) == 4
    assert meta["response"] is None  # errorType/errorMessage/stackTrace/requestId only: nothing else left


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("this is not JSON", "not JSON"),
        ("[1, 2, 3]", "JSON array"),
        (
            json.dumps({"version": "1.0", "timestamp": "2026-11-30T10:00:00.000Z"}),
            "requestContext is missing",
        ),
        (json.dumps(load("destination-success.json")), "'Success' is not a failure"),
        (json.dumps(load("destination-invalid-retry-state.json")), "invalid retry state"),
    ],
)
def test_unreadable_records_become_invalid_with_the_raw_body(body: str, problem: str) -> None:
    detail = failure_detail(pipe_record(body, "m-1"), NOW)
    meta = detail["meta"]
    assert meta["error_type"] == ERROR_INVALID_RECORD
    assert problem in meta["problem"]
    assert detail["payload"] == body  # verbatim, for a person to read in the exhausted queue
    assert meta["failure_message_id"] == "m-1"
    assert meta["retry_count"] == 0


def test_an_invalid_record_keeps_the_function_it_names() -> None:
    meta = failure_detail(pipe_record(load("destination-success.json")), NOW)["meta"]
    assert (meta["function_name"], meta["condition"]) == ("orders-fn", "Success")


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r["requestContext"].pop("functionArn"),
        lambda r: r["requestContext"].__setitem__("functionArn", "arn:aws:sqs:us-east-1:123456789012:q"),
        lambda r: r["requestContext"].pop("requestId"),
        lambda r: r["requestContext"].__setitem__("approximateInvokeCount", "3"),
        lambda r: r["requestContext"].__setitem__("condition", 7),
        lambda r: r.pop("timestamp"),
        lambda r: r.__setitem__("timestamp", "yesterday"),
        lambda r: r.pop("requestPayload"),
    ],
)
def test_a_record_missing_what_routing_needs_is_invalid(mutate: Any) -> None:
    record = load("destination-sns-retries-exhausted.json")
    mutate(record)
    assert failure_detail(pipe_record(record), NOW)["meta"]["error_type"] == ERROR_INVALID_RECORD


@pytest.mark.parametrize("record", [None, "text", 5, {"messageId": "m"}, {"body": 5}])
def test_a_broken_pipe_record_is_invalid_not_an_exception(record: Any) -> None:
    meta = failure_detail(record, NOW)["meta"]
    assert meta["error_type"] == ERROR_INVALID_RECORD
    assert meta["failed_at"] == "2026-11-30T12:00:00Z"  # dated by the enrichment's clock


@pytest.mark.parametrize(
    ("response", "error_type", "rest"),
    [
        ("a plain string", ERROR_MISSING_TYPE, "a plain string"),
        ({"errorType": "", "errorMessage": "x"}, ERROR_MISSING_TYPE, {"errorType": ""}),
        ({"errorType": 5, "errorMessage": "x"}, ERROR_MISSING_TYPE, {"errorType": 5}),
        ({"errorType": "  Boom  ", "errorMessage": {"nested": 1}}, "Boom", None),
    ],
)
def test_odd_response_payloads_are_representable(response: Any, error_type: str, rest: Any) -> None:
    record = load("destination-eventbridge-retries-exhausted.json")
    record["responsePayload"] = response
    meta = failure_detail(pipe_record(record), NOW)["meta"]
    assert (meta["error_type"], meta["response"]) == (error_type, rest)


def test_long_error_messages_are_cut() -> None:
    record = load("destination-eventbridge-retries-exhausted.json")
    record["responsePayload"]["errorMessage"] = "x" * 5000
    assert len(failure_detail(pipe_record(record), NOW)["meta"]["error_message"]) == 512


def test_the_mixed_pipe_batch() -> None:
    batch = load("pipe-batch-mixed.json")
    types = [failure_detail(record, NOW)["meta"]["error_type"] for record in batch]
    assert types == [
        "HTTPError",
        "KeyError",
        "ConnectionError",
        "Sandbox.Timedout",
        ERROR_MISSING_TYPE,
        *[ERROR_INVALID_RECORD] * 5,
    ]

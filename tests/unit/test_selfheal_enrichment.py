"""The enrichment's size guard and batch planning (pure): trim the stack trace and the response,
never the payload; too large for the bus -> exhausted queue; batch overflow -> deferred."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from serverless_retry.envelope import sqs_message_size
from serverless_retry.selfheal.enrichment import (
    EXHAUSTED_WRAPPER_RESERVE_BYTES,
    PUTEVENTS_MAX_BYTES,
    Limits,
    detail_bytes,
    entry_bytes,
    fit,
    plan_batch,
    too_large_message,
)
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.types import BUS_DETAIL_TYPE, BUS_SOURCE

from tests.selfheal_corpus import destination_record, load, pipe_record

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LIMITS = Limits()


def record_with(
    payload: Any, *, frames: int = 4, frame_size: int = 100, response_extra: Any = None, n: int = 0
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "errorType": "ConnectionError",
        "errorMessage": "reset",
        "stackTrace": [f"frame {i} " + "x" * frame_size for i in range(frames)],
    }
    if response_extra is not None:
        response["extra"] = response_extra
    return pipe_record(destination_record(payload, response), message_id=f"m-{n}")


def test_an_entry_is_counted_as_aws_does() -> None:
    # Source + DetailType + Detail (UTF-8 bytes) + 14 for Time + our reserve for Resources.
    assert entry_bytes(100) == 100 + len(BUS_SOURCE) + len(BUS_DETAIL_TYPE) + 14 + 512


def test_a_detail_is_measured_in_its_largest_serialised_form() -> None:
    detail = failure_detail(record_with({"text": "é" * 1000}), NOW)
    compact_utf8 = len(json.dumps(detail, ensure_ascii=False, separators=(",", ":")).encode())
    assert detail_bytes(detail) >= compact_utf8
    assert detail_bytes(detail) >= len(json.dumps(detail).encode())  # \u escapes: 6 bytes per é


def test_the_detail_budget_respects_putevents_and_the_exhausted_queue() -> None:
    assert entry_bytes(Limits(1_048_576).detail_max) < PUTEVENTS_MAX_BYTES
    assert Limits(65_536).detail_max == 65_536 - EXHAUSTED_WRAPPER_RESERVE_BYTES


def test_small_events_are_untouched() -> None:
    detail = failure_detail(record_with({"a": 1}), NOW)
    assert fit(detail, LIMITS.detail_max) == (detail, detail_bytes(detail))


def test_the_stack_trace_goes_first_then_the_response_never_the_payload() -> None:
    payload = {"blob": "p" * 150_000}
    detail = failure_detail(
        record_with(payload, frames=50, frame_size=2_000, response_extra="r" * 40_000), NOW
    )
    assert detail_bytes(detail) > LIMITS.detail_max
    # the last 5 frames are enough here
    fitted = fit(detail, detail_bytes(detail) - 80_000)
    assert fitted is not None
    meta = fitted[0]["meta"]
    assert len(meta["stack_trace"]) == 5
    assert meta["stack_trace"] == detail["meta"]["stack_trace"][-5:]
    assert meta["trimmed"] == ["stack_trace"]
    assert meta["response"] == {"extra": "r" * 40_000}
    # a tighter budget drops the trace, then the response
    fitted = fit(detail, 152_000)
    assert fitted is not None
    assert fitted[0]["meta"]["stack_trace"] == []
    assert fitted[0]["meta"]["response"] is None
    assert fitted[0]["meta"]["trimmed"] == ["stack_trace", "response"]
    assert fitted[0]["payload"] == payload
    assert detail["meta"]["stack_trace"]  # the original detail is not mutated


def test_a_payload_too_large_for_the_bus_is_never_cut() -> None:
    detail = failure_detail(record_with({"blob": "p" * 300_000}), NOW)
    assert fit(detail, LIMITS.detail_max) is None


def test_plan_batch_sorts_records_into_events_too_large_and_deferred() -> None:
    records = [
        record_with({"i": 0, "blob": "a" * 150_000}, n=0),
        record_with({"i": 1}, n=1),
        record_with({"i": 2, "blob": "b" * 300_000}, n=2),  # too large for any bus event
        record_with({"i": 3, "blob": "c" * 150_000}, n=3),  # fits alone, not beside record 0
        record_with({"i": 4}, n=4),
    ]
    plan = plan_batch(records, NOW, LIMITS)
    assert [d["payload"]["i"] for d in plan.events] == [0, 1, 4]
    assert [d["payload"]["i"] for _, d in plan.too_large] == [2]
    assert [r["messageId"] for r in plan.deferred] == ["m-3"]
    total = sum(entry_bytes(detail_bytes(d)) for d in plan.events)
    assert total < PUTEVENTS_MAX_BYTES  # the whole PutEvents request fits


def test_an_item_is_trimmed_harder_to_share_the_request_before_it_is_deferred() -> None:
    first = record_with({"i": 0, "blob": "a" * 200_000}, n=0)
    second = record_with({"i": 1, "blob": "b" * 40_000}, frames=30, frame_size=1_000, n=1)
    plan = plan_batch([first, second], NOW, LIMITS)
    assert [d["payload"]["i"] for d in plan.events] == [0, 1]
    assert plan.events[1]["meta"]["trimmed"] == ["stack_trace"]
    assert plan.deferred == []


def test_the_first_record_always_fits_when_it_fits_alone() -> None:
    plan = plan_batch([record_with({"blob": "a" * 250_000}, frames=0)], NOW, LIMITS)
    assert len(plan.events) == 1


def test_the_mixed_corpus_batch_all_reaches_the_bus() -> None:
    plan = plan_batch(load("pipe-batch-mixed.json"), NOW, LIMITS)
    assert len(plan.events) == 10
    assert plan.too_large == plan.deferred == []


def test_too_large_message_is_an_exhausted_record_when_the_queue_can_hold_it() -> None:
    record = record_with({"blob": "p" * 300_000})
    detail = failure_detail(record, NOW)
    body, attributes = too_large_message(record, detail, 1_048_576)
    assert attributes == {}
    parsed = json.loads(body)
    assert parsed["outcome"] == "too-large-for-bus"
    assert "262144" in parsed["reason"]
    assert parsed["detail"] == json.loads(json.dumps(detail))  # whole: payload, stack trace and all


def test_too_large_message_falls_back_to_the_raw_record_with_a_compact_attribute() -> None:
    # no stack trace to drop: the ExhaustedRecord (payload + meta) is larger than the raw record
    record = record_with({"blob": "p" * 300_000}, frames=0)
    detail = failure_detail(record, NOW)
    # room for the compact attribute (~230 bytes), not for the ExhaustedRecord's meta (~320 more)
    body, attributes = too_large_message(record, detail, len(record["body"].encode()) + 280)
    assert body == record["body"]  # the destination record, verbatim
    meta = json.loads(attributes["serverless_retry"]["StringValue"])
    assert meta["outcome"] == "too-large-for-bus"
    assert meta["function_name"] == "orders-fn"
    assert sqs_message_size(body, attributes) <= len(record["body"].encode()) + 280


@pytest.mark.parametrize("room", [0, 10])
def test_too_large_message_sends_the_raw_record_bare_as_a_last_resort(room: int) -> None:
    record = record_with({"blob": "p" * 300_000}, frames=0)
    detail = failure_detail(record, NOW)
    body, attributes = too_large_message(record, detail, len(record["body"].encode()) + room)
    assert (body, attributes) == (record["body"], {})

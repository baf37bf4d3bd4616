"""An operator's redrive of a failed invocation (pure): the event as it first arrived, in the function
that failed, with the retry state continued or fresh, over every source type of tests/events."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from serverless_retry.envelope import MAX_ATTEMPT
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.redrive import ASYNC_INVOKE_MAX_BYTES
from serverless_retry.selfheal.reinvoke import NotReinvocable, reinvocation
from serverless_retry.selfheal.state import read
from serverless_retry.selfheal.types import FailureDetail

EVENTS = Path(__file__).resolve().parent.parent / "events"
NOW = datetime(2026, 11, 30, 10, 5, tzinfo=UTC)


def detail_of(name: str) -> FailureDetail:
    return failure_detail({"messageId": "f-1", "body": (EVENTS / name).read_text()}, NOW)


REDRIVABLE = [
    "destination-sns-retries-exhausted.json",
    "destination-sns-redriven.json",
    "destination-eventbridge-retries-exhausted.json",
    "destination-eventbridge-redriven.json",
    "destination-direct-timeout.json",
    "destination-direct-redriven.json",
    "destination-sns-event-age-exceeded.json",  # no error type: still the event and its function
]


@pytest.mark.parametrize("name", REDRIVABLE)
def test_the_state_goes_on_by_default_and_the_event_is_untouched(name: str) -> None:
    detail = detail_of(name)
    meta = detail["meta"]
    again = reinvocation(detail, fresh=False)
    carried = read(json.loads(again.payload))
    assert (again.function, again.form) == (meta["function_arn"], "next-attempt")
    assert carried.event == detail["payload"]
    assert carried.source_type == meta["source_type"]
    assert carried.state == {
        "v": 1,
        "id": meta["retry_id"],
        "attempt": meta["attempt"] + 1,
        "first_failed_at": meta["first_failed_at"],
        "previous_delay_seconds": 0,
    }


@pytest.mark.parametrize("name", REDRIVABLE)
def test_fresh_sends_the_event_exactly_as_it_first_arrived(name: str) -> None:
    detail = detail_of(name)
    again = reinvocation(detail, fresh=True)
    assert (json.loads(again.payload), again.form) == (detail["payload"], "original")
    assert read(json.loads(again.payload)).state is None


def test_a_named_function_must_be_the_one_that_failed() -> None:
    detail = detail_of("destination-direct-timeout.json")  # reindex-fn, qualifier 7
    for name in (
        "reindex-fn",
        "reindex-fn:7",
        "arn:aws:lambda:us-east-1:123456789012:function:reindex-fn:live",
    ):
        assert reinvocation(detail, fresh=False, function=name).function == name
    with pytest.raises(NotReinvocable, match=r"^failed in reindex-fn, not in orders-fn: select"):
        reinvocation(detail, fresh=False, function="orders-fn")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"error_type": "InvalidFailureRecord", "problem": "not JSON"}, "an invalid failure record"),
        ({"source_type": "unknown"}, "names no function that failed"),
        ({"function_arn": "unknown"}, "names no function that failed"),
        ({"retry_id": ""}, "no retry id to continue"),
        ({"first_failed_at": "yesterday"}, "is not a timestamp"),
        ({"attempt": 0}, "not a whole number >= 1"),
    ],
)
def test_what_cannot_be_invoked_again_says_why(change: dict[str, Any], problem: str) -> None:
    detail = detail_of("destination-sns-redriven.json")
    broken: FailureDetail = {"payload": detail["payload"], "meta": {**detail["meta"], **change}}  # type: ignore[typeddict-item]
    with pytest.raises(NotReinvocable, match=problem):
        reinvocation(broken, fresh=False)


def test_a_payload_that_is_not_the_event_its_record_names_is_refused() -> None:
    detail = detail_of("destination-sns-redriven.json")
    with pytest.raises(NotReinvocable, match="is not the sns event"):
        reinvocation({"payload": {"not": "sns"}, "meta": detail["meta"]}, fresh=False)


def test_the_last_attempt_a_state_can_carry_goes_fresh_with_a_note() -> None:
    detail = detail_of("destination-sns-redriven.json")
    last: FailureDetail = {"payload": detail["payload"], "meta": {**detail["meta"], "attempt": MAX_ATTEMPT}}
    again = reinvocation(last, fresh=False)
    assert (again.form, read(json.loads(again.payload)).state) == ("original", None)
    assert "last one retry state can carry" in again.note


def test_an_event_too_large_for_an_async_invoke_is_refused() -> None:
    detail = detail_of("destination-direct-redriven.json")
    big: FailureDetail = {"payload": {"blob": "x" * ASYNC_INVOKE_MAX_BYTES}, "meta": detail["meta"]}
    with pytest.raises(NotReinvocable, match=f"an asynchronous Invoke takes {ASYNC_INVOKE_MAX_BYTES}"):
        reinvocation(big, fresh=True)

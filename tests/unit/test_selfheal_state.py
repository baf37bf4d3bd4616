"""Retry state as metadata: round trips for each source type, the decorator, and (Hypothesis) the
business payload is never altered anywhere between the first delivery and a redrive."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serverless_retry import InvalidRetryState, RetryContext, read_retry_state, self_healing
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.state import attach, classify, read
from serverless_retry.selfheal.types import RetryState, SourceType
from serverless_retry.testing import lambda_context

from tests.selfheal_corpus import destination_record, load, pipe_record

STATE: RetryState = {
    "v": 1,
    "id": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
    "attempt": 2,
    "first_failed_at": "2026-11-30T10:00:04Z",
    "previous_delay_seconds": 30,
}
FIRST_EVENTS = [
    ("sns-event.json", "sns"),
    ("sns-event-no-subject.json", "sns"),
    ("eventbridge-event.json", "eventbridge"),
    ("direct-event.json", "direct"),
]


@pytest.mark.parametrize(("name", "kind"), FIRST_EVENTS)
def test_classify_the_real_shapes(name: str, kind: SourceType) -> None:
    assert classify(load(name)) == kind


@pytest.mark.parametrize(("name", "kind"), FIRST_EVENTS)
def test_attach_then_read_gives_back_the_event_and_the_state(name: str, kind: SourceType) -> None:
    event = load(name)
    before = copy.deepcopy(event)
    carried = read(attach(event, kind, STATE))
    assert carried.event == before
    assert carried.state == STATE
    assert carried.source_type == kind
    assert event == before  # attach copies, never mutates the caller's event


def test_where_the_state_rides() -> None:
    sns = attach(load("sns-event.json"), "sns", STATE)
    attribute = sns["Records"][0]["Sns"]["MessageAttributes"]["serverless_retry"]
    assert attribute["Type"] == "String"
    assert json.loads(attribute["Value"]) == STATE
    assert sns["Records"][0]["Sns"]["Message"] == load("sns-event.json")["Records"][0]["Sns"]["Message"]
    eb = attach(load("eventbridge-event.json"), "eventbridge", STATE)
    assert eb["serverless_retry"] == STATE
    assert eb["detail"] == load("eventbridge-event.json")["detail"]  # the state stays outside detail
    assert attach([1, 2], "direct", STATE) == {"serverless_retry": STATE, "payload": [1, 2]}


@pytest.mark.parametrize(
    "state",
    [
        {**STATE, "attempt": 1},
        {**STATE, "attempt": True},
        {**STATE, "v": 2},
        {**STATE, "id": ""},
        {**STATE, "first_failed_at": "2026-11-30 10:00"},
        {**STATE, "previous_delay_seconds": -1},
        {**STATE, "extra": 1},
        {k: v for k, v in STATE.items() if k != "id"},
        "not an object",
    ],
)
@pytest.mark.parametrize("kind", ["eventbridge", "direct"])
def test_a_malformed_state_is_refused(state: Any, kind: SourceType) -> None:
    event = load("eventbridge-event.json") if kind == "eventbridge" else {"a": 1}
    with pytest.raises(InvalidRetryState):
        read(
            {**event, "serverless_retry": state}
            if kind == "eventbridge"
            else {"serverless_retry": state, "payload": event}
        )


@pytest.mark.parametrize("value", ["not json", json.dumps({**STATE, "attempt": 0}), None])
def test_a_malformed_sns_attribute_is_refused(value: Any) -> None:
    event = load("sns-event.json")
    event["Records"][0]["Sns"]["MessageAttributes"]["serverless_retry"] = {"Type": "String", "Value": value}
    with pytest.raises(InvalidRetryState):
        read(event)


def test_the_reserved_key_in_a_direct_payload_is_refused() -> None:
    with pytest.raises(InvalidRetryState, match="reserved key"):
        read({"serverless_retry": STATE, "payload": 1, "other": 2})


# --- the decorator ----------------------------------------------------------------------------------


def _handler() -> tuple[list[tuple[Any, RetryContext]], Any]:
    seen: list[tuple[Any, RetryContext]] = []

    @self_healing
    def handler(event: Any, context: Any, retry: RetryContext) -> str:
        seen.append((event, retry))
        return "done"

    return seen, handler


@pytest.mark.parametrize(("name", "kind"), FIRST_EVENTS)
def test_first_delivery_and_redrive_hand_the_user_the_same_event(name: str, kind: SourceType) -> None:
    seen, handler = _handler()
    context = lambda_context("orders-fn")
    first = load(name)
    assert handler(first, context) == "done"
    assert handler(attach(first, kind, STATE), context) == "done"
    (event1, retry1), (event2, retry2) = seen
    assert event1 == event2 == load(name)
    assert (retry1.attempt, retry1.first_failed_at) == (1, None)
    assert (retry2.attempt, retry2.id) == (2, STATE["id"])
    assert retry2.first_failed_at == datetime(2026, 11, 30, 10, 0, 4, tzinfo=UTC)
    assert retry1.source == retry2.source


def test_the_first_delivery_id_is_the_one_the_enrichment_uses() -> None:
    # SNS MessageId / EventBridge id / the direct invocation's request id: the decorator and the
    # enrichment must name the same retry id, so idempotency keys match across attempts.
    for name in ("sns-event.json", "eventbridge-event.json", "direct-event.json"):
        context = lambda_context("orders-fn")
        _, retry = read_retry_state(load(name), context)
        record = destination_record(load(name))
        record["requestContext"]["requestId"] = context.aws_request_id
        meta = failure_detail(pipe_record(record), datetime.now(UTC))["meta"]
        assert retry.id == meta["retry_id"], name
        assert retry.source == meta["source"], name


def test_user_errors_propagate_unchanged() -> None:
    @self_healing
    def handler(event: Any, context: Any, retry: RetryContext) -> None:
        raise KeyError("sku")

    with pytest.raises(KeyError):
        handler(load("eventbridge-event.json"), lambda_context())


def test_a_bad_state_fails_before_the_user_code_runs() -> None:
    seen, handler = _handler()
    with pytest.raises(InvalidRetryState):
        handler({"serverless_retry": {"v": 1}, "payload": {}}, lambda_context())
    assert seen == []


# --- Hypothesis: the payload is never altered ---------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=40)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
attribute_names = st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True).filter(
    lambda n: n != "serverless_retry"
)
sns_attributes = st.dictionaries(
    attribute_names,
    st.fixed_dictionaries(
        {"Type": st.sampled_from(["String", "Number", "String.Array"]), "Value": st.text(max_size=30)}
    ),
    max_size=9,
)
states = st.builds(
    lambda retry_id, attempt, delay: {
        "v": 1,
        "id": retry_id,
        "attempt": attempt,
        "first_failed_at": "2026-11-30T10:00:04Z",
        "previous_delay_seconds": delay,
    },
    st.text(min_size=1, max_size=60),
    st.integers(2, 9_999),
    st.integers(0, 86_400),
)


def _sns_event(message: str, subject: str | None, attributes: dict[str, Any]) -> dict[str, Any]:
    event = load("sns-event.json")
    event["Records"][0]["Sns"].update(Message=message, Subject=subject, MessageAttributes=attributes)
    return event


def _eventbridge_event(detail: Any) -> dict[str, Any]:
    return {**load("eventbridge-event.json"), "detail": detail}


def _direct(payload: Any) -> Any:
    return payload


first_events = st.one_of(
    st.builds(
        _sns_event, st.text(max_size=200), st.none() | st.text(min_size=1, max_size=100), sns_attributes
    ),
    st.builds(_eventbridge_event, json_values),
    # direct payloads: anything except the reserved key at the top level
    json_values.filter(lambda v: not (isinstance(v, dict) and "serverless_retry" in v)).map(_direct),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event=first_events, state=st.none() | states)
def test_payload_never_altered_from_first_delivery_through_enrichment_and_decorator(
    event: Any, state: Any
) -> None:
    original = copy.deepcopy(event)
    kind = classify(event)
    delivered = event if state is None else attach(event, kind, state)
    # the function sees the original...
    seen, handler = _handler()
    handler(copy.deepcopy(delivered), lambda_context())
    assert seen[0][0] == original
    # ...the failure record carries the delivered event; the enrichment gives back the original
    detail = failure_detail(pipe_record(destination_record(delivered)), datetime.now(UTC))
    assert detail["meta"]["problem"] == ""
    assert detail["payload"] == original
    assert detail["meta"]["attempt"] == (1 if state is None else state["attempt"])
    # and the next redrive delivers the original again, with the next state
    if state is not None:
        again = attach(
            detail["payload"], detail["meta"]["source_type"], {**state, "attempt": state["attempt"] + 1}
        )
        assert read(again).event == original
    assert event == original  # nothing along the way mutated the caller's object

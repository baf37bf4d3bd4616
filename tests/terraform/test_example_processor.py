"""The scheduled-retry example's processor (examples/scheduled-retry/src/orders_example): each
`behaviour` fails exactly as the demo contract says. Pure Python; it ships in the example's zip."""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverless_retry import HttpError
from serverless_retry.envelope import RetryContext
from serverless_retry.message import Message


def message(order: dict[str, Any] | str, attempt: int = 1) -> Message:
    body = order if isinstance(order, str) else json.dumps(order)
    retry = RetryContext(id="m-1", attempt=attempt, first_failed_at=None, history=(), source="arn:aws:sqs:x")
    return Message(message_id=f"m-{attempt}", body=body, attributes={}, retry=retry, record={})


def handle(order: dict[str, Any] | str, attempt: int = 1) -> object:
    from orders_example.process import handle as processor

    return processor(message(order, attempt))


def test_ok_and_missing_behaviour_succeed() -> None:
    assert handle({"order_id": "o-1", "behaviour": "ok"}) == "confirmation-o-1-1"
    assert handle({"order_id": "o-2"}, attempt=3) == "confirmation-o-2-3"


@pytest.mark.parametrize(
    ("behaviour", "default_fail_times", "status", "default_retry_after"),
    [("throttle", 2, 429, 30), ("long-throttle", 1, 503, 1800)],
)
def test_throttles_until_fail_times(
    behaviour: str, default_fail_times: int, status: int, default_retry_after: int
) -> None:
    for attempt in range(1, default_fail_times + 1):
        with pytest.raises(HttpError) as caught:
            handle({"behaviour": behaviour}, attempt)
        assert (caught.value.status, caught.value.retry_after) == (status, default_retry_after)
    assert handle({"behaviour": behaviour}, default_fail_times + 1)
    with pytest.raises(HttpError) as caught:
        handle({"behaviour": behaviour, "retry_after": 5, "fail_times": 4}, 4)
    assert caught.value.retry_after == 5
    assert handle({"behaviour": behaviour, "fail_times": 0}, 1)


def test_timeout_until_fail_times_and_always_timeout() -> None:
    for attempt in (1, 2, 3):
        with pytest.raises(TimeoutError):
            handle({"behaviour": "timeout"}, attempt)
    assert handle({"behaviour": "timeout"}, 4)
    for attempt in (1, 6, 50):
        with pytest.raises(TimeoutError):
            handle({"behaviour": "always-timeout"}, attempt)


@pytest.mark.parametrize(
    "order",
    [
        {"behaviour": "invalid"},
        {"behaviour": "teleport"},
        {"behaviour": "timeout", "fail_times": "three"},
        {"behaviour": "throttle", "retry_after": [1]},
        "not json",
        "[1, 2]",
    ],
    ids=["invalid", "unknown-behaviour", "bad-fail-times", "bad-retry-after", "not-json", "not-an-object"],
)
def test_bad_orders_raise_validation_error(order: dict[str, Any] | str) -> None:
    from orders_example.downstream import ValidationError

    with pytest.raises(ValidationError):
        handle(order, attempt=1)

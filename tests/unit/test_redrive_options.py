"""Redrive options, validated once for the CLI and the Lambda event alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from serverless_retry.redrive.options import OptionsError, options_from_mapping, parse_duration, parse_rate

SRC = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted"
DST = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
EVENT = Path(__file__).resolve().parents[1] / "events" / "redrive-queue-event.json"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("15m", 900), ("2h", 7200), ("7d", 604800), ("1.5h", 5400), (30, 30)],
)
def test_durations(text: Any, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "-5m", "5 weeks", "", "h", True, float("nan")])
def test_bad_durations(text: Any) -> None:
    with pytest.raises(OptionsError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "rate"), [("10", 10), ("10/s", 10), ("0.5/s", 0.5), ("30/m", 0.5), (25, 25)]
)
def test_rates(text: Any, rate: float) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["0", "0/s", "-1", "fast", "10/h", "1e9", False, 5000])
def test_bad_rates(text: Any) -> None:
    with pytest.raises(OptionsError):
        parse_rate(text)


def test_the_event_file_is_valid_options() -> None:
    options = options_from_mapping(
        {"from_queue_url": SRC, "to_queue_url": DST, **json.loads(EVENT.read_text())}
    )
    assert (options.outcomes, options.error_types, options.older_than) == (
        ("exhausted",),
        ("TimeoutError",),
        3600,
    )
    assert (options.max_messages, options.rate, options.dry_run, options.reset_attempts) == (
        500,
        20,
        True,
        False,
    )


@pytest.mark.parametrize(
    ("given", "option"),
    [
        ({"max": -1}, "max"),
        ({"max": 0}, "max"),
        ({"max": 1.5}, "max"),
        ({"max": True}, "max"),
        ({"rate": 0}, "rate"),
        ({"dry_run": "yes"}, "dry_run"),
        ({"outcome": [""]}, "outcome"),
        ({"outcome": 3}, "outcome"),
        ({"older_than": "2h", "newer_than": "1h"}, "newer_than"),
        ({"to_queue_url": SRC}, "to_queue_url"),  # into itself
        ({"to_queue_url": None}, "to_queue_url"),  # required without native
        ({"to_queue_url": "orders"}, "to_queue_url"),
        ({"maxx": 3}, "maxx"),
        ({"native": True, "outcome": "exhausted"}, "native"),
        ({"native": True, "max": 3}, "native"),
        ({"native": True, "reset_attempts": True}, "native"),
        ({"native": True, "rate": 0.5}, "rate"),
        ({"native": True, "rate": 501}, "rate"),
        ({"message_group_id": ""}, "message_group_id"),
        ({"to_function": True}, "to_function"),  # and to_queue_url: one destination
        ({"to_queue_url": None, "to_function": "orders fn"}, "to_function"),
        ({"to_queue_url": None, "to_function": 3}, "to_function"),
        ({"to_queue_url": None, "to_function": "arn:aws:sqs:us-east-1:123456789012:q"}, "to_function"),
        ({"to_queue_url": None, "to_function": True, "message_group_id": "g"}, "message_group_id"),
        ({"to_queue_url": None, "to_function": True, "native": True}, "native"),
    ],
)
def test_nonsense_is_refused_naming_the_option(given: dict[str, Any], option: str) -> None:
    with pytest.raises(OptionsError) as raised:
        options_from_mapping({"from_queue_url": SRC, "to_queue_url": DST} | given)
    assert raised.value.option == option


def test_native_needs_no_destination() -> None:
    options = options_from_mapping({"from_queue_url": SRC, "native": True, "rate": 50})
    assert (options.native, options.to_queue_url, options.rate) == (True, None, 50)


@pytest.mark.parametrize(
    ("value", "function"),
    [
        (True, None),  # each record back to the function that failed
        ("orders-fn", "orders-fn"),
        ("orders-fn:live", "orders-fn:live"),
        ("arn:aws:lambda:us-east-1:123456789012:function:orders-fn", "arn:aws:lambda:us-east-1:123456789012:function:orders-fn"),
    ],
)  # fmt: skip
def test_to_function_is_a_destination_of_its_own(value: object, function: str | None) -> None:
    options = options_from_mapping({"from_queue_url": SRC, "to_function": value})
    assert (options.to_function, options.function, options.to_queue_url) == (True, function, None)
    assert not options_from_mapping(
        {"from_queue_url": SRC, "to_queue_url": DST, "to_function": False}
    ).to_function


def test_not_a_mapping() -> None:
    with pytest.raises(OptionsError, match="JSON object"):
        options_from_mapping([])  # type: ignore[arg-type]

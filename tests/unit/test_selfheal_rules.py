"""The contract's bus rules are exhaustive and disjoint over the grid of issue 7 — (known sources, an
unknown one) x (retryable, do-not-retry, missing error type, invalid record) x (retry count 0 ..
limit + 2) — checked with a small matcher of the pattern features the rules use (exact values,
anything-but, numeric, fields that must exist). The emulator's TestEventPattern grid runs the same
patterns through the real matcher."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.rules import EVENT_PATTERN_MAX_CHARS, bus_rules
from serverless_retry.selfheal.types import BUS_DETAIL_TYPE, BUS_SOURCE

from tests.selfheal_corpus import destination_record, load, pipe_record

LIMITS = {"orders-fn": 3, "invoices-fn": 1, "reindex-fn": 0}
DNR = ["KeyError", "ValidationError"]
RULES = bus_rules(LIMITS, DNR)


def _value_matches(condition: Any, value: Any) -> bool:
    if isinstance(condition, dict):
        [(kind, arg)] = condition.items()
        if kind == "anything-but":
            return value is not None and value not in arg
        if kind == "numeric":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return False
            op, bound = arg
            return {"<": value < bound, ">=": value >= bound}[op]
        raise AssertionError(f"unexpected condition {condition}")
    return value == condition


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    for key, condition in pattern.items():
        if key not in event:
            return False  # a missing field matches nothing the rules use
        if isinstance(condition, dict):
            if not isinstance(event[key], dict) or not matches(condition, event[key]):
                return False
        elif not any(_value_matches(c, event[key]) for c in condition):
            return False
    return True


def bus_event(meta: dict[str, Any]) -> dict[str, Any]:
    return {"source": BUS_SOURCE, "detail-type": BUS_DETAIL_TYPE, "detail": {"payload": {}, "meta": meta}}


def grid() -> list[tuple[str, str, int, dict[str, Any]]]:
    out = []
    now = datetime(2026, 11, 30, tzinfo=UTC)
    for function in [*LIMITS, "payments-fn"]:
        for kind, response in [
            ("retryable", {"errorType": "ConnectionError", "errorMessage": "reset"}),
            ("do-not-retry", {"errorType": "KeyError", "errorMessage": "'sku'"}),
            ("missing", {"errorMessage": "Process exited before completing request"}),
            ("invalid", None),
        ]:
            for count in range(LIMITS.get(function, 3) + 3):
                if kind == "invalid":
                    record = load("destination-success.json")
                    record["requestContext"]["functionArn"] = record["requestContext"]["functionArn"].replace(
                        "orders-fn", function
                    )
                else:
                    record = destination_record(load("direct-event.json"), response, function=function)
                meta = failure_detail(pipe_record(record), now)["meta"]
                meta["retry_count"], meta["attempt"] = count, count + 1
                out.append((function, kind, count, dict(meta)))
    return out


@pytest.mark.parametrize(("function", "kind", "count", "meta"), grid())
def test_every_event_matches_exactly_one_rule(
    function: str, kind: str, count: int, meta: dict[str, Any]
) -> None:
    matched = [rule.name for rule in RULES if matches(rule.pattern, bus_event(meta))]
    assert len(matched) == 1, matched
    [name] = matched
    if function not in LIMITS:
        expected = "invalid-record" if kind == "invalid" else "unknown-source"
    elif kind == "invalid":
        expected = "invalid-record"
    elif kind in ("do-not-retry", "missing"):
        expected = "do-not-retry"
    else:
        expected = f"retry-{function}" if count < LIMITS[function] else f"budget-{function}"
    assert name == expected


def test_the_rules_match_nothing_from_another_source() -> None:
    meta = failure_detail(pipe_record(load("destination-sns-retries-exhausted.json")), datetime.now(UTC))[
        "meta"
    ]
    event = {**bus_event(dict(meta)), "source": "com.example.forged"}
    assert not any(matches(rule.pattern, event) for rule in RULES)


def test_patterns_fit_eventbridges_size_limit_for_twenty_sources() -> None:
    many = {f"source-function-{i:02d}-with-a-long-name": 3 for i in range(20)}
    for rule in bus_rules(many, DNR):
        assert len(json.dumps(rule.pattern, separators=(",", ":"))) <= EVENT_PATTERN_MAX_CHARS, rule.name


def test_exhausted_rules_name_their_outcome() -> None:
    outcomes = {rule.name: rule.outcome for rule in RULES}
    assert outcomes["retry-orders-fn"] is None
    assert outcomes["budget-orders-fn"] == "exhausted"
    assert outcomes["do-not-retry"] == "non-retryable"
    assert outcomes["invalid-record"] == "invalid-failure-record"
    assert outcomes["unknown-source"] == "unknown-source"

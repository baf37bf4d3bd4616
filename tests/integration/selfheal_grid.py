"""The grid of issue 7 item 7 — (known sources, an unknown one) x (retryable, do-not-retry, missing
error type, invalid record) x (retry count 0 ... limit + 2) — as real bus events (metas made by the
enrichment itself from destination records), and the check that every one matches exactly the rule
the contract says, asked of the emulator's TestEventPattern.

A rule is known by its *role*, so the contract's rules (selfheal.rules.bus_rules) and the rules a
module applied (named its own way) are checked alike: ``("redrive", None, function)`` for a retry
rule, ``("exhausted", outcome, function or None)`` for an exhausted rule (the budget rule names its
function).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.rules import BusRule
from serverless_retry.selfheal.types import BUS_DETAIL_TYPE, BUS_SOURCE

from tests.selfheal_corpus import destination_record, load, pipe_record

Role = tuple[str, str | None, str | None]  # (target, outcome, function)
KINDS = ("retryable", "do-not-retry", "missing", "invalid")


@dataclass(frozen=True)
class Case:
    function: str
    kind: str
    count: int
    event: dict[str, Any]
    expected: Role


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: str  # as PutRule / TestEventPattern take it
    role: Role


def contract_rules(rules: Sequence[BusRule]) -> list[Rule]:
    out = []
    for rule in rules:
        function = rule.name.split("-", 1)[1] if rule.name.startswith(("retry-", "budget-")) else None
        role: Role = (
            ("redrive", None, function) if rule.outcome is None else ("exhausted", rule.outcome, function)
        )
        out.append(Rule(rule.name, json.dumps(rule.pattern, separators=(",", ":")), role))
    return out


def _response(kind: str, do_not_retry: str) -> dict[str, Any] | None:
    return {
        "retryable": {"errorType": "ConnectionError", "errorMessage": "connection reset"},
        "do-not-retry": {"errorType": do_not_retry, "errorMessage": "'sku'"},
        "missing": {"errorMessage": "RequestId: x Error: Runtime exited with error: exit status 1"},
        "invalid": None,
    }[kind]


def expected_role(function: str, kind: str, count: int, limits: Mapping[str, int]) -> Role:
    if kind == "invalid":
        return ("exhausted", "invalid-failure-record", None)
    if function not in limits:
        return ("exhausted", "unknown-source", None)
    if kind in ("do-not-retry", "missing"):
        return ("exhausted", "non-retryable", None)
    if count < limits[function]:
        return ("redrive", None, function)
    return ("exhausted", "exhausted", function)


def grid(limits: Mapping[str, int], do_not_retry: Sequence[str], unknown: str = "payments-fn") -> list[Case]:
    now = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    cases = []
    for function in [*sorted(limits), unknown]:
        for kind in KINDS:
            for count in range(limits.get(function, 3) + 3):
                if kind == "invalid":
                    record = load("destination-success.json")  # a Success record is not a failure
                    arn = record["requestContext"]["functionArn"]
                    record["requestContext"]["functionArn"] = arn.replace("orders-fn", function)
                else:
                    record = destination_record(
                        load("sns-event.json"), _response(kind, do_not_retry[0]), function=function
                    )
                detail = failure_detail(pipe_record(record), now)
                meta = dict(detail["meta"])
                meta["retry_count"], meta["attempt"] = count, count + 1
                event = {
                    "version": "0",
                    "id": f"grid-{function}-{kind}-{count}",
                    "detail-type": BUS_DETAIL_TYPE,
                    "source": BUS_SOURCE,
                    "account": "123456789012",
                    "time": "2026-11-30T10:00:05Z",
                    "region": "us-east-1",
                    "resources": [],
                    "detail": {"payload": detail["payload"], "meta": meta},
                }
                cases.append(Case(function, kind, count, event, expected_role(function, kind, count, limits)))
    return cases


def check(events: Any, rules: Sequence[Rule], cases: Sequence[Case]) -> list[str]:
    """Ask TestEventPattern for every (event, rule); the problems found (empty: exhaustive and
    disjoint, each event on the rule its role says)."""
    problems = []
    for case in cases:
        text = json.dumps(case.event)
        matched = [
            r for r in rules if events.test_event_pattern(EventPattern=r.pattern, Event=text)["Result"]
        ]
        where = f"{case.function} / {case.kind} / retry_count {case.count}"
        if len(matched) != 1:
            problems.append(f"{where}: matched {[r.name for r in matched]}, expected exactly one")
        elif matched[0].role != case.expected:
            problems.append(f"{where}: matched {matched[0].name} {matched[0].role}, expected {case.expected}")
    return problems

"""The contract's bus rules (selfheal.rules.bus_rules, the table the self-healing module renders) are
exhaustive and disjoint over issue 7's grid, asked of the emulator's TestEventPattern; and PutEvents
routes every grid event to the same rule (one matcher for both). The applied example's own rules go
through the same grid in test_selfheal_example.py."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from serverless_retry.selfheal.rules import bus_rules
from serverless_retry_tools.local.emulator.emulator import Emulator

from tests.integration.selfheal_grid import check, contract_rules, grid

LIMITS = {"fn-one": 3, "fn-two": 0}  # a source with retries and one with none
DO_NOT_RETRY = ["KeyError", "ValidationError"]


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


def _client(emulator: Emulator, service: str) -> Any:
    return boto3.client(service, **emulator.client_kwargs())  # type: ignore[call-overload]


def test_every_grid_event_matches_exactly_the_rule_the_contract_says(emulator: Emulator) -> None:
    rules = contract_rules(bus_rules(LIMITS, DO_NOT_RETRY))
    cases = grid(LIMITS, DO_NOT_RETRY)
    assert len(cases) == sum(limit + 3 for limit in (*LIMITS.values(), 3)) * 4  # counts 0 .. limit + 2
    assert check(_client(emulator, "events"), rules, cases) == []


def test_put_events_routes_the_grid_as_test_event_pattern_answers(emulator: Emulator) -> None:
    events, sqs = _client(emulator, "events"), _client(emulator, "sqs")
    rules = contract_rules(bus_rules(LIMITS, DO_NOT_RETRY))
    bus = events.create_event_bus(Name="grid")["EventBusArn"]
    queues: dict[str, str] = {}
    for rule in rules:
        url = sqs.create_queue(QueueName=f"grid-{rule.name}")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name=rule.name, EventBusName=bus, EventPattern=rule.pattern)  # PutRule accepts each
        events.put_targets(Rule=rule.name, EventBusName=bus, Targets=[{"Id": "q", "Arn": arn}])
        queues[rule.name] = url
    cases = grid(LIMITS, DO_NOT_RETRY)
    by_role = {rule.role: rule.name for rule in rules}  # one rule per role (the test above)
    expected = {case.event["id"]: by_role[case.expected] for case in cases}
    for case in cases:
        events.put_events(
            Entries=[
                {
                    "Source": case.event["source"],
                    "DetailType": case.event["detail-type"],
                    "Detail": json.dumps({**case.event["detail"], "grid_id": case.event["id"]}),
                    "EventBusName": bus,
                }
            ]
        )
    routed: dict[str, list[str]] = {}
    deadline = time.monotonic() + 30
    while sum(len(v) for v in routed.values()) < len(cases) and time.monotonic() < deadline:
        for name, url in queues.items():
            for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
                routed.setdefault(json.loads(message["Body"])["detail"]["grid_id"], []).append(name)
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert routed == {k: [v] for k, v in expected.items()}

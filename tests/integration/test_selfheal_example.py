"""examples/self-healing applied to the emulator (one apply per test run, shared with the terraform tier:
tests/terraform/stack.py) and driven by the local runtime, end to end: the outcomes the demo shows,
the applied rules through issue 7's grid, and a failing redrive that ends in the redrive DLQ."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from serverless_retry_tools.local.demos.selfheal_accounting import SelfHealingAccounting
from serverless_retry_tools.local.demos.selfheal_demo import Layout, collect, publish, settled_probe
from serverless_retry_tools.local.demos.selfheal_workload import build_messages
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent

from tests.integration.selfheal_grid import Role, Rule, check, grid
from tests.terraform.stack import Applied


@pytest.fixture(scope="module")
def example(self_healing_stack: Applied) -> Applied:
    return self_healing_stack


@pytest.fixture(scope="module")
def layout(example: Applied) -> Layout:
    return Layout.from_outputs(example.outputs)


class Drive:
    """A fresh runtime on the shared stack, run until nothing is in transit."""

    def __init__(self, example: Applied, layout: Layout, work_dir: Path) -> None:
        self.example = example
        self.layout = layout
        self.clients = {s: example.client(s) for s in ("sqs", "sns", "scheduler", "logs", "lambda", "events")}
        self.events: list[RuntimeEvent] = []
        self.runtime = Runtime(example.emulator.url, work_dir=work_dir, on_event=self.events.append)
        self._quiet = 0

    def settled(self) -> bool:
        self._quiet = self._quiet + 1 if not any(settled_probe(self.clients, self.layout).values()) else 0
        return self._quiet >= 3

    def run(self, deadline: float = 150.0) -> bool:
        return self.runtime.run(until=self.settled, deadline_seconds=deadline, check_every=0.5)


@pytest.fixture
def drive(example: Applied, layout: Layout, tmp_path: Path) -> Iterator[Drive]:
    return Drive(example, layout, tmp_path)


def _report(result: SelfHealingAccounting) -> list[str]:
    return [
        f"{d.message.key} {d.expected.function}: {d.outcome}, {d.attempts} attempts ({'; '.join(d.problems)})"
        for d in result.unexpected
    ] + [f"unknown {f.place}: {f.outcome} {f.function} {f.reason[:100]}" for f in result.unknown_finals]


def test_the_example_ends_every_delivery_as_the_demo_says(drive: Drive, layout: Layout) -> None:
    messages = build_messages(
        2, layout.functions, seed=11
    )  # 1 healed + 1 spent order, 1 good + 1 bad invoice
    published = publish(drive.clients["sns"], layout, messages)
    assert drive.run(), settled_probe(drive.clients, layout)
    result = collect(drive.clients, layout, published, drive.events)
    assert _report(result) == []
    assert result.totals == {"exhausted": 1, "non-retryable": 1, "processed": 4}
    charge = {d.outcome: d for d in result.deliveries if d.expected.function == layout.functions.charge}
    assert (charge["exhausted"].attempts, charge["exhausted"].error_type) == (4, "HttpError")
    assert charge["exhausted"].delays == (10, 20, 40)  # the example's policy: exponential from 10 s
    assert (charge["processed"].attempts, charge["processed"].delays) == (3, (10, 20))  # healed on attempt 3
    audit = [d for d in result.deliveries if d.expected.function == layout.functions.audit]
    assert [(d.outcome, d.attempts) for d in audit] == [("processed", 1)] * 2  # each order once


def test_the_exhausted_record_keeps_the_original_sns_message(drive: Drive, layout: Layout) -> None:
    sns, sqs = drive.clients["sns"], drive.clients["sqs"]
    attributes = {"tenant": {"DataType": "String", "StringValue": "acme"}}
    message_id = sns.publish(
        TopicArn=layout.topics["invoices"],
        Message='{"invoice_id": "kept"}',
        Subject="keep me",
        MessageAttributes=attributes,
    )["MessageId"]
    assert drive.run()
    bodies = [
        json.loads(m["Body"])
        for m in sqs.receive_message(QueueUrl=layout.exhausted_queue_url, MaxNumberOfMessages=10).get(
            "Messages", []
        )
    ]
    (record,) = [b for b in bodies if b["detail"]["meta"]["retry_id"] == message_id]
    assert record["outcome"] == "non-retryable"
    sns_record = record["detail"]["payload"]["Records"][0]["Sns"]
    assert sns_record["Message"] == '{"invoice_id": "kept"}'
    assert sns_record["Subject"] == "keep me"
    assert sns_record["MessageAttributes"] == {
        "tenant": {"Type": "String", "Value": "acme"}
    }  # no retry state
    assert record["detail"]["meta"]["error_type"] == "KeyError"
    collect(drive.clients, layout, [], drive.events)  # leave the queues empty for the next test


def _applied_rules(drive: Drive, layout: Layout) -> list[Rule]:
    events, lam = drive.clients["events"], drive.clients["lambda"]
    redrive_arn = lam.get_function(FunctionName=layout.redrive_function)["Configuration"]["FunctionArn"]
    bus = layout.event_bus
    rules = []
    for summary in events.list_rules(EventBusName=bus)["Rules"]:
        (target,) = events.list_targets_by_rule(Rule=summary["Name"], EventBusName=bus)["Targets"]
        pattern = json.loads(summary["EventPattern"])
        names = pattern["detail"]["meta"].get("function_name", [])
        function = names[0] if len(names) == 1 and isinstance(names[0], str) else None
        if target["Arn"] == redrive_arn:
            role: Role = ("redrive", None, function)
        else:
            template = target["InputTransformer"]["InputTemplate"]
            outcome = json.loads(template.replace("<detail>", "null"))["outcome"]
            role = ("exhausted", outcome, function if outcome == "exhausted" else None)
        rules.append(Rule(summary["Name"], summary["EventPattern"], role))
    return rules


def _limits(drive: Drive, layout: Layout) -> dict[str, int]:
    """The example's retry limits by function name (its output is keyed by source: charge, invoice)."""
    by_source = drive.example.outputs["retry_limits"]
    names = {"charge": layout.functions.charge, "invoice": layout.functions.invoice}
    return {names[source]: int(limit) for source, limit in by_source.items()}


def test_the_applied_rules_are_exhaustive_and_disjoint_over_the_grid(drive: Drive, layout: Layout) -> None:
    rules = _applied_rules(drive, layout)
    limits = _limits(drive, layout)
    assert limits == {layout.functions.charge: 3, layout.functions.invoice: 2}
    assert check(drive.clients["events"], rules, grid(limits, ["KeyError"])) == []


def test_a_redrive_that_keeps_failing_ends_in_the_redrive_dlq(drive: Drive, layout: Layout) -> None:
    lam, sns = drive.clients["lambda"], drive.clients["sns"]
    config = lam.get_function_configuration(FunctionName=layout.redrive_function)
    variables = dict(config["Environment"]["Variables"])
    broken = {
        **variables,
        "SERVERLESS_RETRY_SCHEDULE_GROUP": "no-such-group",
    }  # every schedule it creates fails
    lam.update_function_configuration(FunctionName=layout.redrive_function, Environment={"Variables": broken})
    try:
        message_id = sns.publish(TopicArn=layout.topics["orders"], Message='{"order_id": "doomed"}')[
            "MessageId"
        ]
        assert drive.run(deadline=120)
    finally:
        lam.update_function_configuration(
            FunctionName=layout.redrive_function, Environment={"Variables": variables}
        )
    redrive_runs = [
        e.detail
        for e in drive.events
        if e.kind == "async-invoke" and e.detail["function"] == layout.redrive_function
    ]
    assert [r["ok"] for r in redrive_runs] == [False, False, False]  # Lambda's own two retries
    result = collect(drive.clients, layout, [], drive.events)
    dead = [f for f in result.unknown_finals if f.message_id == message_id]
    assert [(f.place, f.function) for f in dead] == [("redrive-dlq", layout.functions.charge)]
    assert [e for e in drive.events if e.kind == "error"] == []

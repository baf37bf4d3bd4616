"""examples/scheduled-retry applied once to the emulator, driven by the local runtime."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from serverless_retry_tools.local.schedules import parse_at
from serverless_retry_tools.local.workload import MALFORMED, WorkItem, build_workload

from .conftest import Stack
from .harness import Harness

pytestmark = pytest.mark.integration


def _order(order_id: str, behaviour: str, expected: str = "processed", **fields: object) -> WorkItem:
    return WorkItem(
        behaviour, order_id, json.dumps({"order_id": order_id, "behaviour": behaviour, **fields}), expected
    )


def test_a_second_plan_is_empty(stack: Stack) -> None:
    empty, output = stack.terraform.plan_is_empty(stack.variables)
    assert empty, output[-3000:]


def test_every_workload_outcome(stack: Stack, tmp_path: Path) -> None:
    harness = Harness(stack, tmp_path)
    items = build_workload(12, seed=3)
    sent = harness.send(items)
    assert harness.run(deadline=90), f"not settled; runtime errors: {harness.runtime.errors}"
    accounting = harness.account(sent)
    assert accounting.balanced, accounting.totals
    fates = {f.sent.order_id: f for f in accounting.fates}
    for item in items:
        assert fates[item.order_id].outcome == item.expected, (item, fates[item.order_id])
    by_label = {f.sent.label: f for f in accounting.fates}
    assert by_label["ok"].attempts == 1
    assert by_label["always-timeout"].attempts == 6  # the timeout rule's own budget
    assert set(by_label["always-timeout"].transports) == {"sqs-delay"}
    assert by_label["long-throttle"].transports == ("scheduler",)
    assert "sqs-delay" in by_label["throttle"].transports
    assert by_label["invalid"].transports == ()
    assert by_label[MALFORMED].outcome == "invalid-envelope"
    assert not harness.runtime.errors


def test_the_scheduler_path_is_fired_by_the_runtime(stack: Stack, tmp_path: Path) -> None:
    # A slow clock while the schedule is inspected, so "now" is measured to a few logical seconds.
    harness = Harness(stack, tmp_path, clock_scale=10)
    group = stack.outputs["schedule_group_name"]
    sent = harness.send([_order("o-sched", "long-throttle", retry_after=1800, fail_times=1)])
    seen: dict[str, object] = {}

    def schedule_created() -> bool:
        schedules = harness.scheduler.list_schedules(GroupName=group)["Schedules"]
        if schedules:
            seen.update(harness.scheduler.get_schedule(Name=schedules[0]["Name"], GroupName=group))
            seen["logical_now"] = harness.runtime.clock.now()
        return bool(schedules)

    assert harness.run(until=schedule_created, deadline=30)
    due = parse_at(str(seen["ScheduleExpression"]), str(seen.get("ScheduleExpressionTimezone") or "UTC"))
    assert due is not None
    lead = (due - seen["logical_now"]).total_seconds()  # type: ignore[operator]
    assert timedelta(seconds=1770).total_seconds() < lead <= 1801, lead
    target = seen["Target"]
    assert isinstance(target, dict)
    assert target["Arn"] == stack.outputs["queue_arn"]
    assert target["DeadLetterConfig"]["Arn"] == stack.outputs["dlq_arn"]
    assert seen["ActionAfterCompletion"] == "DELETE"
    assert seen["FlexibleTimeWindow"] == {"Mode": "OFF"}

    # A new, fast runtime (its logical time starts from the real now, as every runtime's does)
    # fires it once its clock reaches at(), ~6 real seconds later, and deletes it.
    second = Harness(stack, tmp_path / "second")
    second.started_ms = harness.started_ms
    assert second.run(deadline=30)
    fired = [e.detail for e in second.events if e.kind == "schedule-fired"]
    assert len(fired) == 1
    assert fired[0]["lateness_logical_s"] >= 0  # never early
    assert not harness.scheduler.list_schedules(GroupName=group)["Schedules"]
    (fate,) = second.account(sent).fates
    assert (fate.outcome, fate.attempts, fate.transports) == ("processed", 2, ("scheduler",))


def test_at_least_once_after_a_handler_crash(stack: Stack, tmp_path: Path) -> None:
    """A batch whose invocation fails comes back after the visibility timeout and lands once."""
    harness = Harness(stack, tmp_path)
    function = stack.outputs["function_name"]
    original = harness.lam.get_function_configuration(FunctionName=function)["Environment"]["Variables"]
    broken = {**original, "SERVERLESS_RETRY_POLICY": "{not json"}  # the handler fails at init
    harness.lam.update_function_configuration(FunctionName=function, Environment={"Variables": broken})
    restored = False
    try:
        sent = harness.send([_order("o-crash", "ok")])

        def crash_then_settle() -> bool:
            nonlocal restored
            if not restored and harness.runtime.stats["failed_batches"] >= 1:
                harness.lam.update_function_configuration(
                    FunctionName=function, Environment={"Variables": original}
                )
                restored = True
            return restored and harness.settled()

        assert harness.run(until=crash_then_settle, deadline=60)
    finally:
        if not restored:
            harness.lam.update_function_configuration(
                FunctionName=function, Environment={"Variables": original}
            )
    batches = harness.batches()
    assert [b["kept"] for b in batches] == [1, 0], batches  # failed whole, then deleted once
    assert "SERVERLESS_RETRY_POLICY" in batches[0]["why"] or batches[0]["why"]
    accounting = harness.account(sent)
    assert accounting.balanced
    (fate,) = accounting.fates
    assert fate.outcome == "processed"
    assert accounting.emf_processed == 1  # processed exactly once


def test_a_batch_size_change_is_read_from_the_emulator(stack: Stack, tmp_path: Path) -> None:
    harness = Harness(stack, tmp_path)
    (mapping,) = harness.lam.list_event_source_mappings(EventSourceArn=stack.outputs["queue_arn"])[
        "EventSourceMappings"
    ]
    original = mapping["BatchSize"]
    harness.lam.update_event_source_mapping(UUID=mapping["UUID"], BatchSize=2)
    try:
        sent = harness.send([_order(f"o-bs{n}", "ok") for n in range(7)])
        assert harness.run(deadline=30)
    finally:
        harness.lam.update_event_source_mapping(UUID=mapping["UUID"], BatchSize=original)
    sizes = [b["size"] for b in harness.batches()]
    assert sum(sizes) == 7
    assert max(sizes) == 2
    assert harness.account(sent).balanced

"""FIFO retries end to end on the emulator, under AWS's constraints (issue 9's "FIFO retries shown
working on the emulator").

The stack is tests/terraform/fixtures/fifo-retry, applied once per run (tests/terraform/stack.py):
modules/scheduled-retry with fifo = true twice, ``ordered`` and ``unordered``, deploying the consumer
zip of dist/ with the example's processor, policy: 4 attempts, a fixed 30 s between them. The local
runtime runs the event source mappings and the schedules; the emulator enforces what AWS does for
FIFO: the Scheduler sends only the Input and a MessageGroupId (so the queue must deduplicate by
content), refuses a FIFO dead-letter queue, and a message group is not delivered while one of its
messages is in flight. What happened is read from the processor's and the consumer's own log lines,
in the order the function wrote them, each stamped with the emulator's logical time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from serverless_retry.consumer import RETRIES_PLANNED
from serverless_retry.retry_log import retry_log_entries
from serverless_retry_tools.local.aws_rules.schedules import parse_at
from serverless_retry_tools.local.demos.demo_queues import receive_all
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent

from tests.terraform.stack import Applied

pytestmark = pytest.mark.integration

CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})
WAIT = 30  # the fixture's fixed backoff, logical seconds
RETRY_AFTER = 300  # the unordered test's server hint, logical seconds
# A log line is stamped when the runtime reads it, a little after the function wrote it; at x100 a
# few real milliseconds are tenths of a logical second, more under load. The bounds below are lower
# bounds (a retry never comes early), loosened by this much for the stamping.
STAMP_SLACK = 10.0


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Line:
    at: datetime  # logical time the runtime read it
    record: dict[str, Any]

    @property
    def message(self) -> str:
        return str(self.record.get("message", ""))


class Fifo:
    """One source of the stack, a runtime, and what its function logged."""

    def __init__(self, applied: Applied, order: str, work_dir: Path) -> None:
        self.source: dict[str, Any] = applied.outputs["sources"][order]
        self.sqs = applied.client("sqs", config=CONFIG)
        self.scheduler = applied.client("scheduler", config=CONFIG)
        self.events: list[RuntimeEvent] = []
        self.lines: list[Line] = []
        self._lock = threading.Lock()
        self.runtime = Runtime(
            applied.emulator.url,
            region=applied.emulator.region,
            work_dir=work_dir,
            on_event=self.events.append,
            log_tap=self._tap,
        )
        self.ids: dict[str, str] = {}  # SQS message id -> order id
        self._quiet = 0

    def _tap(self, function: str, line: str) -> None:
        if function != self.source["function_name"] or not line.startswith("{"):
            return
        try:
            record = json.loads(line)
        except ValueError:
            return
        if isinstance(record, dict) and "message" in record:
            now = self.runtime.clock.now()
            # The consumer writes one line per batch for the retries it planned: one Line per retry.
            retries = retry_log_entries(record) if record["message"] == RETRIES_PLANNED else None
            record.pop("retries", None)
            with self._lock:
                if retries is not None:
                    self.lines.extend(Line(now, {**record, **entry}) for entry in retries)
                else:
                    self.lines.append(Line(now, record))

    def send(self, group: str, order_id: str, behaviour: str, **fields: Any) -> None:
        body = json.dumps({"order_id": order_id, "behaviour": behaviour, **fields})
        # What modules/scheduled-retry's README tells a FIFO producer to send: a group id, no deduplication id.
        sent = self.sqs.send_message(
            QueueUrl=self.source["queue_url"], MessageBody=body, MessageGroupId=group
        )
        self.ids[sent["MessageId"]] = order_id

    def pending(self) -> int:
        attributes = self.sqs.get_queue_attributes(QueueUrl=self.source["queue_url"], AttributeNames=["All"])
        waiting = sum(
            int(attributes["Attributes"][k])
            for k in (
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            )
        )
        group = self.source["schedule_group_name"]
        schedules = self.scheduler.list_schedules(GroupName=group)["Schedules"] if group else []
        return waiting + len(schedules)

    def settled(self) -> bool:
        self._quiet = self._quiet + 1 if self.pending() == 0 else 0
        return self._quiet >= 2

    def run(self, until: Callable[[], bool] | None = None, deadline: float = 90.0) -> None:
        satisfied = self.runtime.run(until=until or self.settled, deadline_seconds=deadline, check_every=0.2)
        assert satisfied, f"not settled in {deadline:.0f} s; runtime errors: {self.runtime.errors}"
        assert not self.runtime.errors, self.runtime.errors

    # -- evidence ---------------------------------------------------------------------------------------
    def accepted(self) -> list[tuple[str, int, Line]]:
        """(order id, attempt, line) of each success, in the order the function logged them."""
        return [
            (str(line.record["order_id"]), int(line.record["attempt"]), line)
            for line in self.lines
            if line.message == "order accepted"
        ]

    def failures(self, order_id: str) -> list[Line]:
        """The consumer's line for each failed attempt: a retry planned, or the final copy."""
        return [
            line
            for line in self.lines
            if (
                line.message.startswith("processing failed")
                or line.message == "message goes to the retry-exhausted queue"
            )
            and self.ids.get(str(line.record.get("message_id"))) == order_id
        ]

    def position(self, order_id: str, attempt: int | None = None) -> int:
        for n, line in enumerate(self.lines):
            if (
                line.message == "order accepted"
                and line.record.get("order_id") == order_id
                and (attempt is None or line.record.get("attempt") == attempt)
            ):
                return n
        raise AssertionError(f"{order_id} was never accepted: {[line.record for line in self.lines]}")

    def drain(self, url: str) -> list[dict[str, Any]]:
        return receive_all(self.sqs, url, limit=200)


def test_ordered_a_failing_message_holds_its_group_and_is_retried_in_place(
    fifo_retry_stack: Applied, tmp_path: Path
) -> None:
    fifo = Fifo(fifo_retry_stack, "ordered", tmp_path)
    fifo.send("A", "a1", "timeout", fail_times=2)  # fails twice, succeeds on attempt 3
    fifo.send("A", "a2", "ok")
    fifo.send("A", "a3", "ok")
    fifo.send("B", "b1", "always-timeout")  # exhausted after max_attempts 4
    fifo.send("B", "b2", "ok")
    fifo.send("C", "c1", "ok")
    fifo.send("C", "c2", "ok")
    fifo.run()

    accepted = fifo.accepted()
    # Each order but b1 succeeded exactly once; a1 on its third attempt, in place (the same SQS
    # message: its retry id is its own message id, its attempts SQS's ApproximateReceiveCount).
    assert sorted(order for order, _, _ in accepted) == ["a1", "a2", "a3", "b2", "c1", "c2"]
    ((_, a1_attempt, a1_line),) = [a for a in accepted if a[0] == "a1"]
    assert a1_attempt == 3
    assert fifo.ids[str(a1_line.record["id"])] == "a1"
    a1_failures = fifo.failures("a1")
    assert [f.record["attempt"] for f in a1_failures] == [1, 2]
    assert {f.record["transport"] for f in a1_failures} == {"visibility"}
    # The group waited: each attempt came a whole wait after the failure before it, never earlier.
    for before, after in zip(a1_failures, [*a1_failures[1:], a1_line], strict=True):
        assert after.at - before.at >= timedelta(seconds=WAIT - STAMP_SLACK), (before, after)
    # Group A in order: nothing of it ran between a1's failure and its success; then a2, then a3.
    assert fifo.position("a1") < fifo.position("a2") < fifo.position("a3")
    # Other groups went on meanwhile: C was done before a1's first retry even came back.
    assert fifo.position("c1") < fifo.position("c2") < fifo.lines.index(a1_failures[1])

    # b1 was retried in place until its budget ran out, then went to the retry-exhausted queue with
    # the reason; only then did b2, behind it in group B, run.
    b1_failures = fifo.failures("b1")
    assert [f.record["attempt"] for f in b1_failures] == [1, 2, 3, 4]
    assert b1_failures[-1].record["outcome"] == "exhausted"
    (final,) = fifo.drain(fifo.source["exhausted_queue_url"])
    envelope = json.loads(final["Body"])["serverless_retry"]
    assert (envelope["outcome"], envelope["attempt"], fifo.ids[envelope["id"]]) == ("exhausted", 4, "b1")
    assert final["Attributes"]["MessageGroupId"] == "B"  # the exhausted queue is FIFO too, same group
    assert fifo.lines.index(b1_failures[-1]) < fifo.position("b2")
    assert b1_failures[-1].at - b1_failures[0].at >= timedelta(seconds=3 * WAIT - STAMP_SLACK)

    # Nothing else anywhere: no DLQ, no Scheduler (ordered never leaves the queue).
    assert fifo.drain(fifo.source["dlq_url"]) == []
    assert fifo.source["schedule_group_name"] is None
    assert not [e for e in fifo.events if e.kind.startswith("schedule")]


def test_unordered_the_retry_leaves_its_group_through_a_schedule_and_comes_back(
    fifo_retry_stack: Applied, tmp_path: Path
) -> None:
    fifo = Fifo(fifo_retry_stack, "unordered", tmp_path)
    group = fifo.source["schedule_group_name"]
    # 429 with Retry-After 300 once, then success: the policy honours Retry-After for errors no rule
    # names, so the retry waits 300 logical s (3 real s at x100), long enough to look at its schedule.
    fifo.send("U", "u1", "throttle", fail_times=1, retry_after=RETRY_AFTER)
    fifo.send("U", "u2", "ok")
    fifo.send("U", "u3", "ok")
    seen: dict[str, Any] = {}

    def schedule_seen_then_settled() -> bool:
        if not seen:
            schedules = fifo.scheduler.list_schedules(GroupName=group)["Schedules"]
            if schedules:
                seen.update(fifo.scheduler.get_schedule(Name=schedules[0]["Name"], GroupName=group))
        return bool(seen) and fifo.settled()

    fifo.run(until=schedule_seen_then_settled)

    # The retry's schedule sends exactly what the Scheduler can: the envelope as Input and the
    # message's group id, no deduplication id (the queue deduplicates by content); a delivery that
    # fails dead-letters to the standard schedule DLQ, never to the FIFO DLQ.
    target = seen["Target"]
    assert target["Arn"] == fifo.source["queue_arn"]
    assert target["SqsParameters"] == {"MessageGroupId": "U"}
    assert target["DeadLetterConfig"] == {"Arn": fifo.source["schedule_dlq_arn"]}
    assert not target["DeadLetterConfig"]["Arn"].endswith(".fifo")
    assert target["RoleArn"] == fifo.source["scheduler_role_arn"]
    assert (seen["ActionAfterCompletion"], seen["FlexibleTimeWindow"]) == ("DELETE", {"Mode": "OFF"})
    envelope = json.loads(target["Input"])["serverless_retry"]
    assert (fifo.ids[envelope["id"]], envelope["attempt"]) == ("u1", 2)
    # The wait counts from the record's own first receive (every decision is a function of the
    # record), which the envelope keeps as the time of the failure: at() is that + Retry-After.
    (failed_at,) = [entry["at"] for entry in envelope["history"]]
    due = parse_at(seen["ScheduleExpression"], seen.get("ScheduleExpressionTimezone") or "UTC")
    assert due is not None
    assert abs(due - _time(failed_at) - timedelta(seconds=RETRY_AFTER)) <= timedelta(seconds=1)

    # The rest of the group overtook the retry, which came back after its wait and succeeded.
    (failure,) = fifo.failures("u1")
    assert failure.record["transport"] == "scheduler"
    assert fifo.position("u2") < fifo.position("u3") < fifo.position("u1", attempt=2)
    retried = fifo.lines[fifo.position("u1", attempt=2)]
    assert retried.at >= due  # never before its time
    assert sorted((o, a) for o, a, _ in fifo.accepted()) == [("u1", 2), ("u2", 1), ("u3", 1)]
    (fired,) = [e.detail for e in fifo.events if e.kind == "schedule-fired"]
    assert 0 <= fired["lateness_logical_s"] <= 60  # within the Scheduler's one-minute window
    assert fifo.scheduler.list_schedules(GroupName=group)["Schedules"] == []  # deleted after it ran
    for url in ("exhausted_queue_url", "dlq_url", "schedule_dlq_url"):
        assert fifo.drain(fifo.source[url]) == [], url


def test_the_schedules_dead_letter_queue_must_be_standard_and_catches_failed_deliveries(
    fifo_retry_stack: Applied, tmp_path: Path
) -> None:
    """Why the module makes <name>-schedule-dlq: the Scheduler refuses the FIFO DLQ as a schedule's
    dead-letter queue at CreateSchedule, and the standard one takes what a schedule cannot deliver
    (here a send without a MessageGroupId, which a FIFO queue refuses), with the Scheduler's reason."""
    fifo = Fifo(fifo_retry_stack, "unordered", tmp_path)
    group = fifo.source["schedule_group_name"]
    at = fifo.runtime.clock.now() + timedelta(seconds=10)
    target = {
        "Arn": fifo.source["queue_arn"],
        "RoleArn": fifo.source["scheduler_role_arn"],
        "Input": json.dumps({"order_id": "lost", "behaviour": "ok"}),
        "RetryPolicy": {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60},
    }
    schedule = {
        "GroupName": group,
        "ScheduleExpression": f"at({at:%Y-%m-%dT%H:%M:%S})",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "ActionAfterCompletion": "DELETE",
    }
    with pytest.raises(ClientError) as refused:
        fifo.scheduler.create_schedule(
            Name="fifo-dlq",
            Target={**target, "DeadLetterConfig": {"Arn": fifo.source["dlq_arn"]}},
            **schedule,
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "target.deadLetterConfig.arn" in refused.value.response["Error"]["Message"]
    fifo.scheduler.create_schedule(
        Name="no-group",
        Target={**target, "DeadLetterConfig": {"Arn": fifo.source["schedule_dlq_arn"]}},
        **schedule,
    )
    fifo.run()
    (dead,) = fifo.drain(fifo.source["schedule_dlq_url"])
    assert json.loads(dead["Body"]) == {"order_id": "lost", "behaviour": "ok"}
    reason = {k: v["StringValue"] for k, v in dead["MessageAttributes"].items()}
    assert reason["ERROR_CODE"] == "MissingParameter"
    assert reason["TARGET_ARN"] == fifo.source["queue_arn"]
    assert fifo.accepted() == []  # never reached the queue

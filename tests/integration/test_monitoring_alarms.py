"""modules/monitoring on the emulator: its alarms go to ALARM within the time they promise after a
failure, and back to OK after the fix, evaluated by the emulator's CloudWatch in logical time
(serverless_retry_tools.local.emulator.cloudwatch).

The promise: an alarm looks at ``evaluation_periods`` periods, so it fires within that many periods
of the condition, plus a minute for the metric to be published and one for the alarm to be
evaluated ("fires within one period plus two minutes", docs/modules/monitoring.md); the same bound
holds for its return to OK once the condition is gone (the period's statistic must forget it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from serverless_retry_tools.local.runtime.runtime import Runtime

from tests.terraform.stack import Applied

pytestmark = pytest.mark.integration

# Polling slack (logical seconds) on top of a promise: the test looks every 50 real ms.
SLACK = 30.0


@dataclass
class Watch:
    """Each alarm's state changes as the test saw them, with the emulator's logical clock."""

    stack: Applied
    names: dict[str, str]  # concern -> alarm name
    changes: dict[str, list[tuple[str, float]]] = field(default_factory=dict)

    def now(self) -> float:
        clock = self.stack.emulator.clock
        now = clock.now()
        return now.timestamp() if isinstance(now, datetime) else float(now)

    def poll(self) -> None:
        cw = self.stack.client("cloudwatch")
        alarms = cw.describe_alarms(AlarmNames=list(self.names.values()))["MetricAlarms"]
        by_name = {a["AlarmName"]: a for a in alarms}
        for concern, name in self.names.items():
            alarm = by_name[name]
            seen = self.changes.setdefault(concern, [])
            if not seen or seen[-1][0] != alarm["StateValue"]:
                seen.append((alarm["StateValue"], alarm["StateUpdatedTimestamp"].timestamp()))

    def state(self, concern: str) -> str:
        return self.changes[concern][-1][0]

    def until(self, done: Callable[[], bool], *, real_seconds: float, what: str) -> None:
        end = time.monotonic() + real_seconds
        while time.monotonic() < end:
            self.poll()
            if done():
                return
            time.sleep(0.05)
        raise AssertionError(f"{what}: not within {real_seconds} real s; seen {self.changes}")

    def entered(self, concern: str, state: str, since: float) -> float:
        """When (logical) ``concern`` went to ``state`` at or after ``since``."""
        times = [t for s, t in self.changes.get(concern, []) if s == state and t >= since - 60]
        assert times, (concern, state, self.changes.get(concern))
        return times[-1]


def _promise(alarm: dict[str, Any]) -> float:
    periods = [q["MetricStat"]["Period"] for q in alarm.get("Metrics", []) if "MetricStat" in q]
    period = max(periods) if periods else alarm["Period"]
    return float(period * alarm["EvaluationPeriods"] + 120)


@contextmanager
def _runtime(stack: Applied, work_dir: Path) -> Iterator[Runtime]:
    runtime = Runtime(stack.emulator.url, region=stack.emulator.region, work_dir=work_dir)
    runtime.start()
    try:
        yield runtime
    finally:
        runtime.stop()


def _empty(sqs: Any, url: str) -> None:
    for _ in range(100):
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)],
        )


def _depth(sqs: Any, url: str) -> int:
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attrs["Attributes"]["ApproximateNumberOfMessages"])


def test_scheduled_retry_alarms_fire_in_time_and_recover(
    scheduled_retry_stack: Applied, tmp_path: Path
) -> None:
    stack = scheduled_retry_stack
    out = stack.outputs
    names = {concern: arn.rsplit(":", 1)[1] for concern, arn in out["alarm_arns"].items()}
    sqs, lam, cw = stack.client("sqs"), stack.client("lambda"), stack.client("cloudwatch")
    promises = {
        a["AlarmName"]: _promise(a)
        for a in cw.describe_alarms(AlarmNames=list(names.values()))["MetricAlarms"]
    }
    watch = Watch(stack, names)
    for url in (out["exhausted_queue_url"], out["dlq_url"]):
        _empty(sqs, url)
    watch.until(lambda: all(watch.state(c) == "OK" for c in names), real_seconds=20, what="all OK at first")

    with _runtime(stack, tmp_path):
        # Failures: ten orders that time out on every attempt (exhausted after their budget: the
        # exhausted queue fills and the Exhausted share is 100 % of >= 10 finished), a whole
        # invocation that fails (an event that is not SQS's: Errors, with Lambda's async retries),
        # and a message in the DLQ (what SQS's redrive puts there).
        start = watch.now()
        for i in range(10):
            body = json.dumps({"order_id": f"alarm-{i}", "behaviour": "always-timeout"})
            sqs.send_message(QueueUrl=out["queue_url"], MessageBody=body)
        lam.invoke(
            FunctionName=out["function_name"], InvocationType="Event", Payload=b'{"detail": "not sqs"}'
        )
        sqs.send_message(QueueUrl=out["dlq_url"], MessageBody=json.dumps({"order_id": "in-the-dlq"}))
        dlq_since = watch.now()
        exhausted_since: list[float] = []

        def fired() -> bool:
            if not exhausted_since and _depth(sqs, out["exhausted_queue_url"]) > 0:
                exhausted_since.append(watch.now())
            wanted = ("exhausted_depth", "exhausted_rate", "function_errors", "dlq_depth")
            return all(watch.state(c) == "ALARM" for c in wanted)

        watch.until(fired, real_seconds=30, what="the alarms fire")
        assert exhausted_since
        fired_at = {
            c: watch.entered(c, "ALARM", start)
            for c in ("exhausted_depth", "exhausted_rate", "function_errors", "dlq_depth")
        }
        assert fired_at["exhausted_depth"] - exhausted_since[0] <= promises[names["exhausted_depth"]] + SLACK
        assert fired_at["exhausted_rate"] - exhausted_since[0] <= promises[names["exhausted_rate"]] + SLACK
        assert fired_at["dlq_depth"] - dlq_since <= promises[names["dlq_depth"]] + SLACK
        assert fired_at["function_errors"] - start <= promises[names["function_errors"]] + SLACK
        assert watch.state("oldest_message_age") == "OK"  # retries wait at most 30 s here

        # The fix: the exhausted orders and the DLQ message are dealt with (inspected, removed).
        fixed = watch.now()
        for url in (out["exhausted_queue_url"], out["dlq_url"]):
            _empty(sqs, url)
        watch.until(
            lambda: all(watch.state(c) == "OK" for c in names), real_seconds=30, what="the alarms recover"
        )
        for concern in ("exhausted_depth", "dlq_depth"):
            assert watch.entered(concern, "OK", fixed) - fixed <= promises[names[concern]] + SLACK

    # Not consuming: with the mapping disabled an order waits; past 1800 s the age alarm fires.
    (mapping,) = lam.list_event_source_mappings(EventSourceArn=out["queue_arn"])["EventSourceMappings"]
    lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    try:
        sqs.send_message(
            QueueUrl=out["queue_url"], MessageBody=json.dumps({"order_id": "waits", "behaviour": "ok"})
        )
        sent = watch.now()
        watch.until(lambda: watch.state("oldest_message_age") == "ALARM", real_seconds=40, what="age fires")
        fired_age = watch.entered("oldest_message_age", "ALARM", sent)
        alarm = cw.describe_alarms(AlarmNames=[names["oldest_message_age"]])["MetricAlarms"][0]
        # The state change is stamped at the start of the minute whose datapoint crossed the
        # threshold (the age is that minute's maximum), so it may read up to one period early.
        assert (
            alarm["Threshold"] - alarm["Period"]
            < fired_age - sent
            <= alarm["Threshold"] + promises[names["oldest_message_age"]] + SLACK
        )
    finally:
        lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=True)
    with _runtime(stack, tmp_path / "again"):
        consumed = watch.now()
        watch.until(lambda: watch.state("oldest_message_age") == "OK", real_seconds=30, what="age recovers")
        assert (
            watch.entered("oldest_message_age", "OK", consumed) - consumed
            <= promises[names["oldest_message_age"]] + SLACK
        )


# What CreateQueue takes back of a queue's attributes (the rest are read-only).
_SETTABLE = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled",
    "Policy",
    "RedrivePolicy",
    "RedriveAllowPolicy",
)


def test_delivery_failed_fires_while_the_exhausted_queue_refuses_and_recovers(
    scheduled_retry_stack: Applied, tmp_path: Path
) -> None:
    """The sixth alarm: the consumer cannot send an exhausted copy (its queue is gone, as a deleted
    or mis-permissioned queue looks to SendMessageBatch), so the record goes back as a batch item
    failure and the consumer counts DeliveryFailed. The alarm fires within its promise, and is OK
    again once the queue is back and the copy got through. The queue is recreated as it was."""
    stack = scheduled_retry_stack
    out = stack.outputs
    names = {concern: arn.rsplit(":", 1)[1] for concern, arn in out["alarm_arns"].items()}
    sqs, cw = stack.client("sqs"), stack.client("cloudwatch")
    (alarm,) = cw.describe_alarms(AlarmNames=[names["delivery_failed"]])["MetricAlarms"]
    promise = _promise(alarm)
    watch = Watch(stack, names)
    exhausted = out["exhausted_queue_url"]
    for url in (exhausted, out["dlq_url"]):
        _empty(sqs, url)
    watch.until(lambda: all(watch.state(c) == "OK" for c in names), real_seconds=30, what="all OK at first")
    attributes = sqs.get_queue_attributes(QueueUrl=exhausted, AttributeNames=["All"])["Attributes"]
    tags = sqs.list_queue_tags(QueueUrl=exhausted).get("Tags", {})
    queue_name = exhausted.rsplit("/", 1)[1]
    sqs.delete_queue(QueueUrl=exhausted)
    restored = False

    def restore() -> None:
        kept = {k: v for k, v in attributes.items() if k in _SETTABLE}
        url = sqs.create_queue(QueueName=queue_name, Attributes=kept, tags=tags)["QueueUrl"]
        assert url == exhausted

    try:
        with _runtime(stack, tmp_path):
            sent = watch.now()
            body = json.dumps({"order_id": "undeliverable", "behaviour": "invalid"})  # never retried
            sqs.send_message(QueueUrl=out["queue_url"], MessageBody=body)
            watch.until(lambda: watch.state("delivery_failed") == "ALARM", real_seconds=40, what="fires")
            assert watch.entered("delivery_failed", "ALARM", sent) - sent <= promise + SLACK
            restore()
            restored = True
            fixed = watch.now()
            # The record comes back after its visibility timeout and its copy now gets through.
            watch.until(lambda: _depth(sqs, exhausted) == 1, real_seconds=40, what="the copy arrives")
            watch.until(lambda: watch.state("delivery_failed") == "OK", real_seconds=40, what="recovers")
            assert watch.entered("delivery_failed", "OK", fixed) - fixed <= promise + SLACK
            assert _depth(sqs, out["dlq_url"]) == 0  # it went back, it was not dead-lettered
    finally:
        if not restored:
            restore()
        for url in (exhausted, out["dlq_url"]):
            _empty(sqs, url)
    watch.until(lambda: all(watch.state(c) == "OK" for c in names), real_seconds=40, what="all OK again")


def test_inspect_shows_the_oldest_age_from_the_emulators_cloudwatch(scheduled_retry_stack: Applied) -> None:
    """The DLQ's backlog line carries ApproximateAgeOfOldestMessage as the emulator publishes it."""
    stack = scheduled_retry_stack
    sqs = stack.client("sqs")
    url = stack.outputs["dlq_url"]
    _empty(sqs, url)
    clock = stack.emulator.clock
    sent = clock.now().timestamp()
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"order_id": "aged"}))
    time.sleep(3.0)  # 300 logical seconds at the stack's x100: a few published minutes
    asked = clock.now().timestamp()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "serverless_retry_tools.cli", "inspect", "--queue-url", url, "--backlog"],
            env={**os.environ, **stack.emulator.env()},
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        _empty(sqs, url)
    assert "no CloudWatch datapoint" not in result.stdout, result.stdout + result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("backlog:"))
    assert "(CloudWatch)" in line
    answered = clock.now().timestamp()
    # The age of the latest published minute: at most the time up to the answer, at least the time
    # up to the question less the minute a datapoint waits to be published (and 10 s of evaluation
    # lag); bounded by the emulator's clock, so a slow machine cannot make it read wrong.
    minutes = re.search(r"oldest (\d+(?:\.\d+)?)m", line)
    assert minutes is not None, line
    age = float(minutes.group(1)) * 60
    assert max(60.0, asked - sent - 80) <= age <= answered - sent + 3, (line, asked - sent, answered - sent)


def test_native_records_failing_fires_inside_the_redrive_window_and_recovers(
    native_retry_stack: Applied, tmp_path: Path
) -> None:
    """The buggy release fails an order on every receive: records_failing fires within the P + 120 s
    its description promises (here before the DLQ move at 5 x 180 s), and is OK again two quiet
    periods after the failing record is gone (purged here, instead of a second apply)."""
    stack = native_retry_stack
    out = stack.outputs
    names = {concern: arn.rsplit(":", 1)[1] for concern, arn in out["alarm_arns"].items()}
    sqs, cw = stack.client("sqs"), stack.client("cloudwatch")
    (alarm,) = cw.describe_alarms(AlarmNames=[names["records_failing"]])["MetricAlarms"]
    period = max(q["MetricStat"]["Period"] for q in alarm["Metrics"] if "MetricStat" in q)
    promise = float(period + 120)
    assert f"within about {int(promise)} s" in alarm["AlarmDescription"]
    watch = Watch(stack, {"records_failing": names["records_failing"], "dlq_depth": names["dlq_depth"]})
    watch.until(lambda: watch.state("records_failing") == "OK", real_seconds=60, what="OK at first")
    with _runtime(stack, tmp_path):
        sent = watch.now()  # the first failed receive comes after this
        body = {"order_id": "alarm-native", "amount": "12.50", "currency": "EUR"}
        sqs.send_message(QueueUrl=out["queue_url"], MessageBody=json.dumps(body))
        watch.until(lambda: watch.state("records_failing") == "ALARM", real_seconds=45, what="fires")
        fired = watch.entered("records_failing", "ALARM", sent)
        assert fired - sent <= promise + SLACK
        assert fired - sent < out["max_receive_count"] * 6 * stack.variables["function_timeout"]
        sqs.purge_queue(QueueUrl=out["queue_url"])
        fixed = watch.now()
        watch.until(lambda: watch.state("records_failing") == "OK", real_seconds=70, what="recovers")
        assert watch.entered("records_failing", "OK", fixed) - fixed <= 2 * period + 120 + SLACK
    assert watch.state("dlq_depth") == "OK"

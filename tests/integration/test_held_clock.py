"""A starved runtime makes logical time wait rather than deliver late: with the poller (or the
schedule loop) stalled for 3 real seconds at x100 (300 logical seconds on the clock's line), a
delayed message is still received, and a schedule still fired, within the 2 logical second bound."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from serverless_retry_tools.local.clock.held_clock import SharedClock
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.runtime.runtime import Runtime

from tests.integration.test_runtime import Aws

SCALE = 100.0
STALL_SECONDS = 3.0  # real: 300 logical seconds
BOUND = 2.0  # logical seconds: the SQS-delay bound of issue 10
DELAY = 5  # logical seconds

RECORDER = """
import json
def handler(event, context):
    for record in event["Records"]:
        attributes = record["attributes"]
        print(json.dumps({"held": True, "sent": int(attributes["SentTimestamp"]) / 1000,
                          "received": int(attributes["ApproximateFirstReceiveTimestamp"]) / 1000}))
    return {"batchItemFailures": []}
"""


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    with Emulator(clock_scale=SCALE) as emulator:
        yield Aws(emulator)


def _clock(aws: Aws) -> SharedClock:
    clock = aws.emulator.clock
    assert isinstance(clock, SharedClock)
    return clock


def test_a_stalled_poller_makes_logical_time_wait_for_a_due_message(aws: Aws, tmp_path: Path) -> None:
    url, arn = aws.queue("held", VisibilityTimeout="180")
    function = aws.function({"app.py": RECORDER})
    aws.mapping(function, arn, BatchSize=10)
    lines: list[dict[str, Any]] = []
    runtime = Runtime(
        aws.emulator.url,
        work_dir=tmp_path,
        log_tap=lambda _fn, line: lines.append(json.loads(line)) if line.startswith('{"held"') else None,
    )
    sqs = aws.client("sqs")
    clock = _clock(aws)
    stalled: dict[str, float] = {}
    original = runtime._receive

    def starved_receive(client: Any, mapping: dict[str, Any]) -> Any:
        # The poller is ready (it holds a warm worker and a free slot), then starves: the message
        # falls due during the stall, 3 real seconds before the poller asks for it.
        if not stalled and runtime.stats["batches"] == 0 and calls.is_set():
            sqs.send_message(QueueUrl=url, MessageBody="{}", DelaySeconds=DELAY)
            time.sleep(STALL_SECONDS)
            stalled["after"] = clock.seconds()
        calls.set()  # the first receive (an empty long poll) only says the poller runs
        return original(client, mapping)

    calls = threading.Event()
    runtime._receive = starved_receive  # type: ignore[method-assign]
    assert runtime.run(until=lambda: len(lines) == 1, deadline_seconds=60)
    (line,) = lines
    lateness = line["received"] - (line["sent"] + DELAY)
    assert 0 <= lateness <= BOUND, (line, stalled)
    # Logical time waited at the message's due instant for the stalled poller: 3 real seconds
    # were not 300 logical ones.
    assert stalled["after"] - line["sent"] <= DELAY + BOUND, (line, stalled)
    assert not runtime.errors


def test_a_stalled_schedule_loop_makes_logical_time_wait_for_a_due_schedule(aws: Aws, tmp_path: Path) -> None:
    url, arn = aws.queue("scheduled")
    scheduler = aws.client("scheduler")
    clock = _clock(aws)
    events: list[Any] = []
    runtime = Runtime(aws.emulator.url, work_dir=tmp_path, on_event=events.append)
    original = runtime._schedule_tick
    stalls: list[float] = []

    def starved_tick(client: Any, *, refresh: bool = True) -> None:
        if not stalls and any(s.due_at and not s.settled for s in runtime._schedules.values()):
            stalls.append(clock.seconds())
            time.sleep(STALL_SECONDS)  # the schedule falls due meanwhile
        original(client, refresh=refresh)

    runtime._schedule_tick = starved_tick  # type: ignore[method-assign]
    runtime.start()
    try:
        due = (clock.now() + timedelta(seconds=100)).replace(microsecond=0) + timedelta(seconds=1)
        scheduler.create_schedule(
            Name="held-schedule",
            ScheduleExpression=f"at({due:%Y-%m-%dT%H:%M:%S})",
            FlexibleTimeWindow={"Mode": "OFF"},
            ActionAfterCompletion="DELETE",
            Target={"Arn": arn, "RoleArn": aws.role, "Input": "{}"},
        )
        messages = aws.receive_all(url, wait=30)
    finally:
        runtime.stop()
    assert stalls, "the schedule loop never stalled"
    (message,) = messages
    lateness = int(message["Attributes"]["SentTimestamp"]) / 1000 - due.timestamp()
    assert 0 <= lateness <= BOUND, (lateness, events)
    assert not runtime.errors

"""The held logical clock: it never passes a due event a ready poller has not taken, goes on from
where it stood once the event is dispatched, and cannot be held for ever; and Lambda's SQS poller
scaling (five batches, then up to 300 more a minute, within MaximumConcurrency and 1,000)."""

from __future__ import annotations

from pathlib import Path

import pytest
from serverless_retry_tools.local.aws_rules.poller_scaling import PollerScaling
from serverless_retry_tools.local.clock.clock_holds import ClockHolds
from serverless_retry_tools.local.clock.held_clock import HeldClock, SharedClock

EPOCH = 1_800_000_000.0
QUEUE = "arn:aws:sqs:us-east-1:123456789012:q"
SCHEDULE = "arn:aws:scheduler:us-east-1:123456789012:schedule/g/s"


class Real:
    """Real time that moves only when told to."""

    def __init__(self) -> None:
        self.t = EPOCH

    def __call__(self) -> float:
        return self.t


def test_the_clock_stops_at_a_due_event_and_goes_on_from_there_once_it_is_dispatched() -> None:
    real = Real()
    clock = HeldClock(EPOCH, 100.0, real=real)
    clock.hold(EPOCH + 10)  # a message due 10 logical seconds in
    real.t += 0.05
    assert clock.now() == pytest.approx(EPOCH + 5)
    real.t += 3.0  # the poller is starved for 3 real seconds: 300 logical seconds on the line
    assert clock.now() == EPOCH + 10
    assert clock.held()
    clock.hold(None)  # received
    assert clock.now() == EPOCH + 10  # no jump
    real.t += 0.01
    assert clock.now() == pytest.approx(EPOCH + 11)


def test_a_due_event_already_past_holds_the_clock_where_it_stands() -> None:
    real = Real()
    clock = HeldClock(EPOCH, 10.0, real=real)
    real.t += 1.0
    clock.hold(EPOCH + 2)  # overdue when its poller became ready: never back in time
    assert clock.now() == EPOCH + 10
    real.t += 1.0
    assert clock.now() == EPOCH + 10


def test_readers_in_other_processes_see_the_same_held_clock(tmp_path: Path) -> None:
    real = Real()
    clock = HeldClock(EPOCH, 30.0, path=tmp_path / "clock", real=real)
    reader = SharedClock(tmp_path / "clock", epoch=EPOCH, scale=30.0, real=real)
    clock.hold(EPOCH + 3)
    real.t += 1.0
    assert reader.seconds() == clock.now() == EPOCH + 3
    clock.hold(None)
    real.t += 0.5
    assert reader.seconds() == clock.now() == pytest.approx(EPOCH + 18)


def _holds(real: Real, clock: HeldClock, monotonic: list[float], **kw: object) -> ClockHolds:
    return ClockHolds(clock, monotonic=lambda: monotonic[0], **kw)  # type: ignore[arg-type]


def test_only_a_ready_poller_holds_the_clock() -> None:
    real, now = Real(), [0.0]
    clock = HeldClock(EPOCH, 100.0, real=real)
    holds = _holds(real, clock, now)
    holds.declare("rt", queues={QUEUE: True})
    holds.queue_due(QUEUE, EPOCH + 10)
    real.t += 1.0
    assert clock.now() == EPOCH + 10
    holds.declare("rt", queues={QUEUE: False})  # its poller is at its concurrency: AWS waits too
    real.t += 0.1
    assert clock.now() == pytest.approx(EPOCH + 20)


def test_a_running_invocation_holds_the_clock_at_its_deadline_until_it_ends() -> None:
    # Lambda stops a function at its timeout, long before its batch's visibility ends: a slow
    # machine must not let logical time reach the batch's redelivery while the invocation runs.
    real, now = Real(), [0.0]
    clock = HeldClock(EPOCH, 100.0, real=real)
    holds = _holds(real, clock, now)
    holds.declare("rt", running={"batch-1": EPOCH + 30})  # started at EPOCH, a 30 s timeout
    real.t += 5.0  # the handler is starved for 5 real seconds: 500 logical seconds at x100
    assert clock.now() == EPOCH + 30
    holds.declare("rt", running={"batch-1": None})  # it ended
    real.t += 0.1
    assert clock.now() == pytest.approx(EPOCH + 40)


def test_a_holder_that_stops_renewing_or_a_hold_that_lasts_too_long_lets_the_clock_go() -> None:
    real, now = Real(), [0.0]
    clock = HeldClock(EPOCH, 100.0, real=real)
    warnings: list[str] = []
    holds = _holds(real, clock, now, max_hold=30.0, on_give_up=warnings.append)
    holds.declare("rt", ttl=15.0, queues={QUEUE: True})
    holds.queue_due(QUEUE, EPOCH + 1)
    real.t += 1.0
    now[0] += 16.0
    holds.check()  # not renewed within its ttl: a runtime gone
    assert not clock.held()
    holds.declare("rt", ttl=100.0, queues={QUEUE: True})
    for _ in range(5):
        real.t += 10.0
        now[0] += 10.0
        holds.check()
    assert not clock.held()  # given up after 30 real seconds ...
    assert warnings  # ... and said so


def test_a_schedule_holds_the_clock_until_the_runtime_settles_it() -> None:
    real, now = Real(), [0.0]
    clock = HeldClock(EPOCH, 100.0, real=real)
    dues = {SCHEDULE: ("v1", EPOCH + 5)}
    holds = _holds(real, clock, now, schedule_dues=lambda: dues)
    holds.declare("rt", schedules=True)
    real.t += 1.0
    assert clock.now() == EPOCH + 5
    holds.settled(SCHEDULE, "v1", EPOCH + 7)  # delivery failed: retried at +7
    real.t += 1.0
    assert clock.now() == EPOCH + 7
    holds.settled(SCHEDULE, "v1", None)
    assert not clock.held()
    dues[SCHEDULE] = ("v2", EPOCH + 50)  # updated since: its new at() is waited for
    holds.schedules_changed()
    real.t += 1.0
    assert clock.now() == EPOCH + 50


def test_sqs_pollers_start_at_five_batches_and_add_up_to_300_a_minute() -> None:
    scaling = PollerScaling()
    assert scaling.limit(0.0) == 5
    scaling.received(0.0, count=10, asked=10)  # a full batch: more messages are waiting
    assert scaling.limit(12.0) == 5 + 60
    assert scaling.limit(600.0) == 1000
    assert scaling.limit(600.0, maximum_concurrency=40) == 40
    assert scaling.limit(0.1, maximum_concurrency=2) == 2
    scaling.received(12.0, count=3, asked=10)  # a partial one: keep what was reached
    assert scaling.limit(100.0) == 65
    scaling.received(100.0, count=0, asked=10)  # traffic is low: back to five
    assert scaling.limit(100.0) == 5

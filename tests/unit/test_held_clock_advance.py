"""A jump of the held clock (a holiday, a queue's retention): the line moves at once, never past a due
event not dispatched yet, and goes on from where it landed; readers in other processes see it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from serverless_retry_tools.local.clock.held_clock import HeldClock, SharedClock
from serverless_retry_tools.local.emulator.clock_server import ClockServer

EPOCH = 1_800_000_000.0
FOURTEEN_DAYS = 1_209_600.0


class Real:
    """Real time that moves only when told to."""

    def __init__(self) -> None:
        self.t = EPOCH

    def __call__(self) -> float:
        return self.t


def test_a_jump_moves_logical_time_at_once_and_the_line_goes_on_from_there() -> None:
    real = Real()
    clock = HeldClock(EPOCH, 100.0, real=real)
    real.t += 0.5
    assert clock.advance(FOURTEEN_DAYS) == pytest.approx(EPOCH + 50 + FOURTEEN_DAYS)
    assert clock.now() == pytest.approx(EPOCH + 50 + FOURTEEN_DAYS)
    real.t += 0.01
    assert clock.now() == pytest.approx(EPOCH + 51 + FOURTEEN_DAYS)


def test_a_jump_stops_at_a_due_event_and_the_next_one_goes_on_once_it_is_dispatched() -> None:
    real = Real()
    clock = HeldClock(EPOCH, 10.0, real=real)
    clock.hold(EPOCH + 30)  # a message due 30 logical seconds in
    assert clock.advance(FOURTEEN_DAYS) == EPOCH + 30
    assert clock.held()
    assert clock.advance(60) == EPOCH + 30  # still not dispatched: no further
    clock.hold(None)  # received
    assert clock.advance(FOURTEEN_DAYS) == EPOCH + 30 + FOURTEEN_DAYS
    assert not clock.held()


def test_a_jump_of_nothing_changes_nothing_and_time_never_goes_back() -> None:
    real = Real()
    clock = HeldClock(EPOCH, 1.0, real=real)
    real.t += 2.0
    assert clock.advance(0) == EPOCH + 2
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="only moves forward"):
            clock.advance(bad)
    assert clock.now() == EPOCH + 2


def test_readers_in_other_processes_see_the_jump(tmp_path: Path) -> None:
    real = Real()
    clock = HeldClock(EPOCH, 30.0, path=tmp_path / "clock", real=real)
    reader = SharedClock(tmp_path / "clock", epoch=EPOCH, scale=30.0, real=real)
    clock.advance(3_600)
    assert reader.seconds() == clock.now() == EPOCH + 3_600
    real.t += 1.0
    assert reader.seconds() == clock.now() == EPOCH + 3_630


def test_the_route_answers_where_the_jump_landed_and_refuses_a_body_without_seconds() -> None:
    real = Real()
    server = ClockServer(HeldClock(EPOCH, 100.0, real=real))
    assert server.advance({"seconds": 86_400}) == {"now": EPOCH + 86_400, "cap": None}
    server.holds.declare("runtime", running={"invocation": EPOCH + 86_500})  # its deadline
    assert server.advance({"seconds": 86_400}) == {"now": EPOCH + 86_500, "cap": EPOCH + 86_500}
    with pytest.raises(KeyError):  # the emulator answers 400
        server.advance({})
    with pytest.raises(ValueError, match="could not convert"):
        server.advance({"seconds": "soon"})

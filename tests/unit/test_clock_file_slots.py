"""The emulator's clock file stays readable while its writer is stopped in the middle of a write.

The writer is a thread of the emulator: between its two sequence numbers it can wait for the GIL
behind the emulator's other threads, or its process can be descheduled, or killed. Readers (the
runtime, each function's worker, the operator's commands) used to spin on the odd number and give up
after 1,000 reads with "the clock file is being written without end": a long redrive under the
emulator crashed that way. Now the file holds the state twice and one copy is whole at any instant.
"""

from __future__ import annotations

import struct
import threading
from pathlib import Path
from typing import Any

from serverless_retry_tools.local.clock.held_clock import HeldClock, SharedClock

EPOCH = 1_800_000_000.0


class _StopsMidWrite:
    """The writer's mapping, stopping the write that marks slot 0 odd until told to go on."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.stopped = threading.Event()
        self.go_on = threading.Event()

    def __setitem__(self, key: slice, value: bytes) -> None:
        self.real[key] = value
        if key.start == 0 and len(value) == 8 and struct.unpack("<Q", value)[0] % 2 == 1:
            self.stopped.set()
            self.go_on.wait(10)

    def close(self) -> None:
        self.real.close()


def test_a_reader_gets_the_whole_state_while_the_writer_is_stopped_mid_write(tmp_path: Path) -> None:
    real = [EPOCH]
    clock = HeldClock(EPOCH, 10.0, path=tmp_path / "clock", real=lambda: real[0])
    reader = SharedClock(tmp_path / "clock", epoch=EPOCH, scale=10.0, real=lambda: real[0])
    clock.hold(EPOCH + 5)
    real[0] += 1.0  # the line is at +10 logical seconds: the hold at +5 shows
    stopping = _StopsMidWrite(clock._map)
    clock._map = stopping  # type: ignore[assignment]
    writer = threading.Thread(target=clock.hold, args=(EPOCH + 7,))  # the next hold, stopped halfway
    writer.start()
    try:
        assert stopping.stopped.wait(10)
        real[0] += 1.0  # the clock goes on from +5 (where it stood) to the new hold at +7
        assert reader.seconds() == EPOCH + 7  # the new state, whole in the other copy
        assert reader.held()
    finally:
        stopping.go_on.set()
        writer.join(10)
    assert reader.seconds() == clock.now() == EPOCH + 7


def test_a_writer_killed_mid_write_leaves_the_last_whole_state(tmp_path: Path) -> None:
    real = [EPOCH]
    clock = HeldClock(EPOCH, 10.0, path=tmp_path / "clock", real=lambda: real[0])
    clock.hold(EPOCH + 3)
    with (tmp_path / "clock").open("r+b") as handle:  # slot 0 marked odd, and never finished
        handle.write(struct.pack("<Q", 2**40 + 1))
    reader = SharedClock(tmp_path / "clock", epoch=EPOCH, scale=10.0, real=lambda: real[0] + 1.0)
    assert reader.seconds() == EPOCH + 3

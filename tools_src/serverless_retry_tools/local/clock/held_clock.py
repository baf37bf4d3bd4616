"""A logical clock that waits for the runtime: it never passes a due event not dispatched yet.

The line. Logical time runs ``scale`` times faster than real time: logical = anchor_logical +
(real - anchor_real) x scale, starting at (epoch, epoch).

The hold. The emulator knows every due event the local runtime has still to dispatch (an SQS
message that became receivable, or will, in a queue whose poller is ready to receive; a one-time
schedule not fired yet) and holds the clock at the earliest: logical now = min(line, cap). A machine
too slow to dispatch in time (a starved poller, a worker starting under load) therefore stretches
real time, not logical time: the event is dispatched at its logical due time, however late in real
time. When the cap moves on (the event was dispatched), the line is anchored again where the clock
stood, so logical time is continuous and never goes back. At scale 1 the clock is real time less the
time spent held.

The clock is shared by processes: the emulator writes (anchor_real, anchor_logical, cap) to a small
file that every reader maps: the runtime (:class:`SharedClock`), the operator's commands under the
emulator, and each function's worker (which shows Lambda code the clock through ``time.time``: see
``worker.py``). A sequence number around each write (odd while it is under way) lets a reader tell
half of a write from a whole one.

Two slots. The file holds the state twice: slot 1 is written first, then slot 0 (where ``worker.py``
reads). A reader takes slot 0 when it is whole, else slot 1, which is then whole: a writer stops in
the middle of one slot at most. With one slot, a writer stopped between its two sequence numbers (its
thread waiting for the GIL behind the emulator's other threads, its process descheduled on a loaded
machine, or killed) left every reader spinning on an odd number; a reader gave up after 1,000 reads
(about a millisecond) with "the clock file is being written without end", and a long redrive under the
emulator, which makes the runtime publish a hold for every message it moves, met that sooner or later.
"""

from __future__ import annotations

import math
import mmap
import struct
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["CLOCK_FILE_SIZE", "HeldClock", "SharedClock", "read_clock_file"]

# One slot: sequence number (odd while a write is under way), anchor_real, anchor_logical, cap (inf:
# none). The file holds two (see the module docstring); worker.py reads the first.
_LAYOUT = struct.Struct("<Qddd")
_SEQ, _STATE = struct.Struct("<Q"), struct.Struct("<ddd")
_SLOTS = (0, _LAYOUT.size)  # offsets; slot 1 is written before slot 0
CLOCK_FILE_SIZE = _LAYOUT.size * len(_SLOTS)
# A reader that finds both slots mid-write (the writer published again while it looked) tries again,
# yielding the CPU between tries, for this long before it calls the file abandoned.
_READ_PATIENCE_SECONDS = 5.0


class HeldClock:
    """The writer's side (the emulator): the clock, its hold, and the file other processes read."""

    def __init__(
        self, epoch: float, scale: float, *, path: Path | None = None, real: Callable[[], float] = time.time
    ) -> None:
        if not scale > 0:
            raise ValueError(f"clock scale must be > 0, got {scale!r}")
        self.epoch = epoch
        self.scale = scale
        self.path = path
        self._real = real
        self._lock = threading.Lock()
        # Replaced whole (one assignment), so a reader in this process never sees half of a change.
        self._state: tuple[float, float, float] = (epoch, epoch, math.inf)
        self._seq = 0
        self._map: mmap.mmap | None = None
        if path is not None:
            with path.open("wb") as out:
                out.write(b"\0" * CLOCK_FILE_SIZE)
            with path.open("r+b") as handle:
                self._map = mmap.mmap(handle.fileno(), CLOCK_FILE_SIZE)
            self._publish()

    def now(self) -> float:
        """Logical now, Unix seconds."""
        anchor_real, anchor_logical, cap = self._state
        return min(anchor_logical + (self._real() - anchor_real) * self.scale, cap)

    def real_seconds(self, logical_seconds: float) -> float:
        """Real seconds ``logical_seconds`` take at least (more while the clock is held)."""
        return max(0.0, logical_seconds / self.scale)

    @property
    def cap(self) -> float:
        return self._state[2]

    def held(self) -> bool:
        """Whether the clock stands at its cap now."""
        anchor_real, anchor_logical, cap = self._state
        return anchor_logical + (self._real() - anchor_real) * self.scale >= cap

    def hold(self, due: float | None) -> None:
        """Do not pass ``due`` (logical Unix seconds; None: nothing to wait for). A ``due`` already
        past holds the clock where it stands."""
        with self._lock:
            real = self._real()
            anchor_real, anchor_logical, cap = self._state
            line = anchor_logical + (real - anchor_real) * self.scale
            value = min(line, cap)
            new_cap = math.inf if due is None else max(value, due)
            if new_cap == cap:
                return
            if line > cap:  # it was held: go on from where it stood, not from the line
                self._state = (real, value, new_cap)
            else:
                self._state = (anchor_real, anchor_logical, new_cap)
            self._publish()

    def advance(self, logical_seconds: float) -> float:
        """Jump the line ``logical_seconds`` forward at once (a holiday, a retention period) and answer
        the logical now it reached. Never past the cap: a due event not dispatched yet stops the jump
        at its instant, so nothing the runtime has still to do is skipped; jump again once it was
        dispatched. moto's SQS reads this clock for retention too, but lazily: a receive no longer
        returns an expired message, yet moto keeps it and GetQueueAttributes still counts it (as in
        flight once a receive passed over it), where AWS would have deleted it."""
        if not (logical_seconds >= 0 and math.isfinite(logical_seconds)):
            raise ValueError(
                f"the clock only moves forward: advance by a finite >= 0, got {logical_seconds!r}"
            )
        with self._lock:
            real = self._real()
            anchor_real, anchor_logical, cap = self._state
            line = anchor_logical + (real - anchor_real) * self.scale
            value = min(line, cap)
            reached = min(value + logical_seconds, cap)
            if reached > value:  # re-anchored where it now stands: continuous from there
                self._state = (real, reached, cap)
                self._publish()
            return reached

    def _publish(self) -> None:
        if self._map is None:
            return
        payload = _STATE.pack(*self._state)
        self._seq += 2
        writing, written = _SEQ.pack(self._seq - 1), _SEQ.pack(self._seq)
        for offset in reversed(_SLOTS):  # slot 1, then slot 0: one of them is whole at any instant
            self._map[offset : offset + 8] = writing
            self._map[offset + 8 : offset + _LAYOUT.size] = payload
            self._map[offset : offset + 8] = written

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


def _whole_slot(view: mmap.mmap | bytes, offset: int) -> tuple[float, float, float] | None:
    # The sequence number, then the state, then the number again: the same even number twice means
    # no write touched the state in between.
    (before,) = _SEQ.unpack(view[offset : offset + 8])
    state = _STATE.unpack(view[offset + 8 : offset + _LAYOUT.size])
    (after,) = _SEQ.unpack(view[offset : offset + 8])
    return state if before % 2 == 0 and after == before else None


def read_clock_file(
    view: mmap.mmap | bytes, *, monotonic: Callable[[], float] = time.monotonic
) -> tuple[float, float, float]:
    """(anchor_real, anchor_logical, cap) from a clock file, never half of a write: slot 0 when it
    is whole, else slot 1. Both mid-write means the writer published again while this looked: try
    again, yielding the CPU so the writer can finish, for ``_READ_PATIENCE_SECONDS`` at most."""
    deadline: float | None = None
    tries = 0
    while True:
        for offset in _SLOTS:
            state = _whole_slot(view, offset)
            if state is not None:
                return state
        tries += 1
        if deadline is None:
            deadline = monotonic() + _READ_PATIENCE_SECONDS
        elif monotonic() > deadline:
            raise RuntimeError(
                f"the emulator's clock file was not whole once in {_READ_PATIENCE_SECONDS:g} s ({tries} "
                "reads): its writer stopped in the middle of a write (is the emulator still running?)"
            )
        time.sleep(0 if tries < 100 else 0.001)


class SharedClock:
    """A reader's side (the runtime, tests): the emulator's clock from its file, with the interface
    of :class:`serverless_retry.clock.ScaledClock` (``now()`` as a datetime, ``real_duration``)."""

    def __init__(
        self, path: Path, *, epoch: float, scale: float, real: Callable[[], float] = time.time
    ) -> None:
        self.path = path
        self.epoch = epoch
        self.scale = scale
        self._real = real
        with path.open("rb") as handle:
            self._map = mmap.mmap(handle.fileno(), CLOCK_FILE_SIZE, access=mmap.ACCESS_READ)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SharedClock):
            return NotImplemented
        return (self.path, self.epoch, self.scale) == (other.path, other.epoch, other.scale)

    def __hash__(self) -> int:
        return hash((self.path, self.epoch, self.scale))

    def __repr__(self) -> str:
        return f"SharedClock(path={str(self.path)!r}, epoch={self.epoch!r}, scale={self.scale!r})"

    def seconds(self) -> float:
        anchor_real, anchor_logical, cap = read_clock_file(self._map)
        return min(anchor_logical + (self._real() - anchor_real) * self.scale, cap)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.seconds(), UTC)

    def real_duration(self, logical_seconds: float) -> float:
        """Real seconds ``logical_seconds`` take at least (more while the clock is held)."""
        return max(0.0, logical_seconds / self.scale)

    def held(self) -> bool:
        anchor_real, anchor_logical, cap = read_clock_file(self._map)
        return anchor_logical + (self._real() - anchor_real) * self.scale >= cap

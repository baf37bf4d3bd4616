"""Clocks are injected everywhere time matters, so tests are exact and the local runtime can scale time."""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import ClassVar, Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass
class FrozenClock:
    """A clock that only moves when told to.

    The latest one made is what ``serverless_retry.testing``'s helpers stamp records with when they
    are given no ``clock=`` (``FrozenClock.latest()``): a test that freezes one clock for its consumer
    gets records on that clock without saying so twice."""

    current: datetime = field(default_factory=lambda: datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC))
    _latest: ClassVar[weakref.ref[FrozenClock] | None] = None

    def __post_init__(self) -> None:
        FrozenClock._latest = weakref.ref(self)  # weak: a finished test's clock goes with it

    @classmethod
    def latest(cls) -> FrozenClock | None:
        """The most recently made FrozenClock still in use, if any."""
        return cls._latest() if cls._latest is not None else None

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> datetime:
        self.current = self.current + timedelta(seconds=seconds)
        return self.current

    def advance_to(self, moment: datetime) -> datetime:
        """Move on to ``moment``; never back (a moment already past leaves the clock as it is)."""
        self.current = max(self.current, moment)
        return self.current


@dataclass(frozen=True)
class ScaledClock:
    """Logical time runs ``scale`` times faster than the wall clock from ``epoch`` (a Unix time).

    The local runtime, the emulator and every handler the runtime invokes build this from the same
    two environment variables, so an ``at()`` written by a consumer and the runtime's idea of "due"
    agree. Durations the consumer sends to SQS (DelaySeconds, visibility timeouts) are logical seconds
    as they are: the emulator runs SQS on this same logical clock.
    """

    epoch: float
    scale: float

    def now(self) -> datetime:
        real = time.time()
        logical = self.epoch + (real - self.epoch) * self.scale
        return datetime.fromtimestamp(logical, UTC)

    def real_duration(self, logical_seconds: float) -> float:
        """Wall-clock seconds that ``logical_seconds`` take (for the local runtime's own waits)."""
        return max(0.0, logical_seconds / self.scale)

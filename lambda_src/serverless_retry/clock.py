"""Clocks are injected everywhere time matters, so tests are exact and the local runtime can scale time."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def real_seconds(self, logical_seconds: float) -> int:
        """How many wall-clock seconds a logical wait takes (what SQS DelaySeconds must be given)."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def real_seconds(self, logical_seconds: float) -> int:
        return max(0, math.ceil(logical_seconds))


@dataclass
class FrozenClock:
    """A clock that only moves when told to; ``real_seconds`` is the identity."""

    current: datetime = field(default_factory=lambda: datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC))

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> datetime:
        self.current = self.current + timedelta(seconds=seconds)
        return self.current

    def real_seconds(self, logical_seconds: float) -> int:
        return max(0, math.ceil(logical_seconds))


@dataclass(frozen=True)
class ScaledClock:
    """Logical time runs ``scale`` times faster than the wall clock from ``epoch`` (a Unix time).

    The local runtime and every handler it invokes build this from the same two environment
    variables, so an ``at()`` written by a consumer and the runtime's idea of "due" agree, and a
    300 s logical SQS delay becomes ceil(300 / scale) real seconds.
    """

    epoch: float
    scale: float

    def now(self) -> datetime:
        real = time.time()
        logical = self.epoch + (real - self.epoch) * self.scale
        return datetime.fromtimestamp(logical, UTC)

    def real_seconds(self, logical_seconds: float) -> int:
        if logical_seconds <= 0:
            return 0
        return max(1, math.ceil(logical_seconds / self.scale))

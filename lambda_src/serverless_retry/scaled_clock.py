"""``ScaledClock``: the local emulator's logical time (``serverless_retry.clock`` re-exports it)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["ScaledClock"]


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

"""How many batches of one SQS event source mapping Lambda runs at once, as its documentation
describes the scaling of SQS pollers (Lambda developer guide, "Configuring scaling behavior for SQS
event source mappings", standard mode):

- when messages are available, Lambda processes five batches at a time;
- while messages are still available, it adds up to 300 more concurrent batches per minute;
- at most 1,000 batches of one mapping run at once, and ScalingConfig.MaximumConcurrency (2-1000)
  lowers that;
- when traffic is low it scales back to five.

Pure: the caller passes the time (logical seconds, so the ramp runs on the emulator's clock).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["INITIAL_BATCHES", "MAX_BATCHES", "SCALE_UP_PER_MINUTE", "PollerScaling"]

INITIAL_BATCHES = 5
SCALE_UP_PER_MINUTE = 300
MAX_BATCHES = 1000


@dataclass
class PollerScaling:
    """One mapping's concurrency: ``limit(now)`` batches may run; ``received`` says what each
    receive brought back."""

    base: int = INITIAL_BATCHES
    ramp_since: float | None = None  # when the queue last started to show more than is taken

    @staticmethod
    def ceiling(maximum_concurrency: int | None) -> int:
        return min(MAX_BATCHES, maximum_concurrency) if maximum_concurrency else MAX_BATCHES

    def limit(self, now: float, maximum_concurrency: int | None = None) -> int:
        grown = self.base
        if self.ramp_since is not None:
            grown += int(max(0.0, now - self.ramp_since) * SCALE_UP_PER_MINUTE / 60.0)
        return max(1, min(self.ceiling(maximum_concurrency), grown))

    def received(self, now: float, *, count: int, asked: int, maximum_concurrency: int | None = None) -> None:
        """After one receive of up to ``asked`` messages that brought ``count``: a full one means
        messages are still available (scale up from now on), an empty one that traffic is low (back
        to five), a partial one keeps the concurrency reached."""
        if count >= asked:
            if self.ramp_since is None:
                self.ramp_since = now
        elif count == 0:
            self.base, self.ramp_since = INITIAL_BATCHES, None
        else:
            self.base, self.ramp_since = self.limit(now, maximum_concurrency), None

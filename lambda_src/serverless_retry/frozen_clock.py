"""``FrozenClock``: a clock for tests that moves only when told to (``serverless_retry.clock`` re-exports it)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import ClassVar

__all__ = ["FrozenClock"]


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

"""Clocks are injected everywhere time matters, so tests are exact and the local runtime can scale time.

``FrozenClock`` (tests) and ``ScaledClock`` (the local emulator's logical time) live in modules of
their own and are imported when first read (PEP 562): a Lambda cold start on AWS uses neither, and
each is a dataclass whose methods Python compiles when the class is made (~0.3-0.5 ms each).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from serverless_retry.frozen_clock import FrozenClock
    from serverless_retry.scaled_clock import ScaledClock

__all__ = ["Clock", "FrozenClock", "ScaledClock", "SystemClock"]


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


_HOMES = {"FrozenClock": "frozen_clock", "ScaledClock": "scaled_clock"}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"serverless_retry.{home}"), name)
    globals()[name] = value  # later reads find it directly
    return value

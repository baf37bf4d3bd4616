"""What the emulator's logical clock waits for (see :mod:`serverless_retry_tools.local.clock.held_clock`).

A runtime declares itself a *holder*: which queues it polls with a poller ready to receive (an
event source mapping below its concurrency, the async invocation queue with a free worker), and
whether it fires schedules. The clock then waits for

- in each such queue, the earliest message that is receivable or will be (a delay ending, a
  visibility timeout running out), until it is received: a queue whose poller is busy at its
  concurrency (MaximumConcurrency, Lambda's scaling) is not waited for, as AWS would not deliver
  from it either;
- each ENABLED one-time schedule, at its at() instant or, once the runtime acknowledged a failed
  delivery, at its next retry, until the runtime acknowledges it settled.

Bounds, so that a runtime gone or wedged cannot stop time: a holder that does not renew its
declaration within its ``ttl`` (real seconds) is dropped, and a hold that lasts longer than
``max_hold`` real seconds is given up (the events due by then are no longer waited for).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from serverless_retry_tools.local.clock.held_clock import HeldClock

__all__ = ["DEFAULT_MAX_HOLD_SECONDS", "DEFAULT_TTL_SECONDS", "ClockHolds"]

DEFAULT_TTL_SECONDS = 15.0
DEFAULT_MAX_HOLD_SECONDS = 30.0

# (schedule version, due): the version changes when the schedule is updated.
ScheduleDues = Callable[[], Mapping[str, tuple[object, float | None]]]


@dataclass
class _Holder:
    expires: float
    queues: dict[str, bool] = field(default_factory=dict)
    schedules: bool = False
    # Invocations running now: token -> their logical deadline (start + the function's timeout).
    running: dict[str, float] = field(default_factory=dict)


class ClockHolds:
    def __init__(
        self,
        clock: HeldClock,
        *,
        schedule_dues: ScheduleDues = dict,
        max_hold: float = DEFAULT_MAX_HOLD_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        on_give_up: Callable[[str], None] | None = None,
    ) -> None:
        self._clock = clock
        self._schedule_dues = schedule_dues
        self._max_hold = max_hold
        self._monotonic = monotonic
        self._on_give_up = on_give_up
        self._lock = threading.RLock()
        self._holders: dict[str, _Holder] = {}
        self._queue_dues: dict[str, float | None] = {}  # by queue ARN
        self._acks: dict[str, tuple[object, float | None]] = {}  # schedule ARN -> (version, next due)
        self._given_up_to = -float("inf")  # dues at or before this are no longer waited for
        self._held_since: tuple[float, float] | None = None  # (cap, real monotonic since)
        # The schedules' earliest due, read again only after a change (every SQS change recomputes).
        self._schedule_due: float | None = None
        self._schedules_dirty = True

    # -- what the runtime declares ------------------------------------------------------------------
    def declare(
        self,
        holder: str,
        *,
        ttl: float = DEFAULT_TTL_SECONDS,
        queues: Mapping[str, bool] | None = None,
        schedules: bool | None = None,
        running: Mapping[str, float | None] | None = None,
        release: bool = False,
    ) -> None:
        """Renew ``holder`` for ``ttl`` real seconds; ``queues`` (ARN -> poller ready) are merged
        into what it declared before, and ``running`` (invocation token -> logical deadline, None
        when it ended) too. ``release``: the holder is gone (a runtime that stopped)."""
        with self._lock:
            if release:
                self._holders.pop(holder, None)
            else:
                entry = self._holders.setdefault(holder, _Holder(expires=0.0))
                entry.expires = self._monotonic() + ttl
                entry.queues.update(queues or {})
                for token, deadline in (running or {}).items():
                    if deadline is None:
                        entry.running.pop(token, None)
                    else:
                        entry.running[token] = deadline
                if schedules is not None:
                    entry.schedules = schedules
            self.recompute()

    def settled(self, schedule_arn: str, version: object, next_due: float | None) -> None:
        """The runtime delivered (``next_due`` None) or will retry at ``next_due`` the schedule
        as it was at ``version``."""
        with self._lock:
            self._acks[schedule_arn] = (version, next_due)
            self.schedules_changed()

    def schedules_changed(self) -> None:
        """A schedule was created, updated or deleted."""
        with self._lock:
            self._schedules_dirty = True
            self.recompute()

    # -- what the emulator knows ----------------------------------------------------------------------
    def watched_queues(self) -> set[str]:
        """Queue ARNs some live holder polls (ready or not): their dues are kept up to date."""
        with self._lock:
            return {arn for h in self._holders.values() for arn in h.queues}

    def queue_due(self, queue_arn: str, due: float | None) -> None:
        """The earliest instant (logical s) a message of the queue is or becomes receivable."""
        with self._lock:
            if self._queue_dues.get(queue_arn, None) == due and queue_arn in self._queue_dues:
                return
            self._queue_dues[queue_arn] = due
            self.recompute()

    def recompute(self) -> None:
        with self._lock:
            now = self._monotonic()
            for name in [n for n, h in self._holders.items() if h.expires < now]:
                del self._holders[name]
            dues: list[float] = []
            ready = {arn for h in self._holders.values() for arn, ok in h.queues.items() if ok}
            for arn in ready:
                due = self._queue_dues.get(arn)
                if due is not None:
                    dues.append(due)
            # A running invocation holds logical time at its own deadline: on AWS it is stopped by
            # its timeout long before its messages' visibility ends (visibility >= 6 x timeout), so
            # no message may come back while its invocation still runs, however slow the machine.
            dues.extend(d for h in self._holders.values() for d in h.running.values())
            if any(h.schedules for h in self._holders.values()):
                if self._schedules_dirty:
                    self._schedules_dirty = False
                    pending = []
                    for arn, (version, at) in dict(self._schedule_dues()).items():
                        ack = self._acks.get(arn)
                        next_due = ack[1] if ack is not None and ack[0] == version else at
                        if next_due is not None:
                            pending.append(next_due)
                    self._schedule_due = min(pending, default=None)
                if self._schedule_due is not None:
                    dues.append(self._schedule_due)
            waiting = [d for d in dues if d > self._given_up_to]
            self._clock.hold(min(waiting) if waiting else None)

    def check(self) -> None:
        """Periodic: drop expired holders, and give up a hold that lasted too long."""
        with self._lock:
            self.recompute()
            if not self._clock.held():
                self._held_since = None
                return
            now = self._monotonic()
            cap = self._clock.cap
            if self._held_since is None or self._held_since[0] != cap:
                self._held_since = (cap, now)
            elif now - self._held_since[1] > self._max_hold:
                self._given_up_to = self._clock.cap
                self._held_since = None
                if self._on_give_up is not None:
                    self._on_give_up(
                        f"logical clock held over {self._max_hold:.0f} real seconds at {self._clock.cap:.3f}: "
                        "the events due by then are no longer waited for"
                    )
                self.recompute()

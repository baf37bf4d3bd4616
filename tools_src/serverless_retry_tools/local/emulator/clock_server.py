"""The emulator's side of the held clock: moto's SQS queues and Scheduler schedules as the due events
the clock waits for (:mod:`serverless_retry_tools.local.clock.clock_holds`), and the route a runtime
declares its holds on (``POST /_serverless_retry/clock/holds``).

A declaration (JSON): ``{"holder": id, "ttl": real seconds, "queues": {queue ARN: poller ready},
"schedules": bool, "settled": [{"arn": schedule ARN, "next_due": logical s | null}], "running":
{invocation token: logical deadline | null}, "release": bool}``; every key but ``holder`` is optional. ``POST /_serverless_retry/clock/advance``
``{"seconds": N}`` jumps logical time N seconds forward, never past what the clock is held for
(:meth:`HeldClock.advance`), and answers the clock as it then stands. Runs in the emulator child only
(it imports moto).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Mapping
from typing import Any

from serverless_retry_tools.local.aws_rules.schedules import parse_at
from serverless_retry_tools.local.clock.clock_holds import DEFAULT_TTL_SECONDS, ClockHolds
from serverless_retry_tools.local.clock.held_clock import HeldClock
from serverless_retry_tools.local.emulator.logical_time import receivable_due
from serverless_retry_tools.local.emulator.patching import Undo

__all__ = ["ClockServer"]

# How often (real seconds) every watched queue's due is read afresh and the holds checked: catches
# what no hook sees (a deleted queue, a holder gone).
_CHECK_SECONDS = 0.2


def _parts(arn: str) -> tuple[str, str, str]:
    """(account, region, resource) of an ARN."""
    _, _, _, region, account, resource = arn.split(":", 5)
    return account, region, resource


class ClockServer:
    def __init__(self, clock: HeldClock) -> None:
        self.clock = clock
        self._at_cache: dict[tuple[str, str], float | None] = {}
        self.holds = ClockHolds(clock, schedule_dues=self._schedule_dues, on_give_up=self._warn)
        self._stop = threading.Event()

    @staticmethod
    def _warn(message: str) -> None:
        print(f"serverless-retry emulator: {message}", file=sys.stderr, flush=True)

    # -- moto's state --------------------------------------------------------------------------------
    def queue_changed(self, queue: Any) -> None:
        """A change of a moto Queue (its lock held): its due, if a runtime polls it."""
        if queue.queue_arn in self.holds.watched_queues():
            self.holds.queue_due(queue.queue_arn, receivable_due(queue, self.clock.now()))

    def _refresh_queues(self) -> None:
        from moto.sqs.models import sqs_backends

        for arn in self.holds.watched_queues():
            account, region, name = _parts(arn)
            queue = sqs_backends[account][region].queues.get(name)
            if queue is None:
                self.holds.queue_due(arn, None)
                continue
            with queue._messages_lock:
                self.holds.queue_due(arn, receivable_due(queue, self.clock.now()))

    def _schedule_dues(self) -> Mapping[str, tuple[object, float | None]]:
        """Every ENABLED at() schedule: (its version, its at() instant)."""
        from moto.scheduler.models import scheduler_backends

        dues: dict[str, tuple[object, float | None]] = {}
        for _ in range(3):  # a dict changed by a request while we read it: read again
            try:
                for regions in list(scheduler_backends.values()):
                    for backend in list(regions.values()):
                        for group in list(backend.schedule_groups.values()):
                            for schedule in list(group.schedules.values()):
                                if schedule.state == "ENABLED":
                                    dues[schedule.arn] = (schedule.last_modified_date, self._at(schedule))
                return dues
            except RuntimeError:
                dues.clear()
        return dues

    def _at(self, schedule: Any) -> float | None:
        key = (schedule.schedule_expression, schedule.schedule_expression_timezone)
        if key not in self._at_cache:
            try:
                at = parse_at(*key)
            except ValueError:
                at = None
            self._at_cache[key] = None if at is None else at.timestamp()
        return self._at_cache[key]

    def _version(self, schedule_arn: str) -> object:
        from moto.scheduler.models import scheduler_backends

        account, region, resource = _parts(schedule_arn)
        _, group, name = resource.split("/", 2)
        with contextlib.suppress(Exception):
            return (
                scheduler_backends[account][region].schedule_groups[group].schedules[name].last_modified_date
            )
        return None

    # -- hooks and routes ------------------------------------------------------------------------------
    def install(self) -> Undo:
        """Recompute the holds after every Scheduler change; start the periodic check."""
        from moto.scheduler.models import EventBridgeSchedulerBackend as Backend

        saved = {
            name: Backend.__dict__[name] for name in ("create_schedule", "update_schedule", "delete_schedule")
        }

        def after(original: Any) -> Any:
            def call(self: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return original(self, *args, **kwargs)
                finally:
                    server.holds.schedules_changed()

            return call

        server = self
        for name, original in saved.items():
            setattr(Backend, name, after(original))
        thread = threading.Thread(target=self._check_loop, name="clock-holds", daemon=True)
        thread.start()

        def undo() -> None:
            self._stop.set()
            for name, original in saved.items():
                setattr(Backend, name, original)

        return undo

    def _check_loop(self) -> None:
        while not self._stop.wait(_CHECK_SECONDS):
            try:
                self._refresh_queues()
                self.holds.check()
            except Exception as exc:  # never let the clock's watchdog die
                self._warn(f"clock holds check failed: {exc!r}")

    def declare(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Apply one declaration (see the module's docstring); answers the clock as it stands."""
        holder = str(body["holder"])
        for settled in body.get("settled") or []:
            arn = str(settled["arn"])
            next_due = settled.get("next_due")
            self.holds.settled(arn, self._version(arn), None if next_due is None else float(next_due))
        queues = {str(arn): bool(ready) for arn, ready in (body.get("queues") or {}).items()}
        schedules = body.get("schedules")
        running = {
            str(token): None if deadline is None else float(deadline)
            for token, deadline in (body.get("running") or {}).items()
        }
        self.holds.declare(
            holder,
            ttl=float(body.get("ttl") or DEFAULT_TTL_SECONDS),
            queues=queues,
            schedules=None if schedules is None else bool(schedules),
            running=running,
            release=bool(body.get("release")),
        )
        if queues:
            self._refresh_queues()
        return self._standing()

    def advance(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``{"seconds": N}``: jump logical time forward (see the module's docstring). The holds are
        read afresh first, so a message that fell due in the meantime still stops the jump."""
        seconds = float(body["seconds"])
        self._refresh_queues()
        self.holds.recompute()
        return {**self._standing(), "now": self.clock.advance(seconds)}

    def _standing(self) -> dict[str, Any]:
        return {"now": self.clock.now(), "cap": None if self.clock.cap == float("inf") else self.clock.cap}

"""The runtime's side of the held clock: it tells the emulator which of its pollers are ready to
receive and which schedules it has settled (``POST /_serverless_retry/clock/holds``, see
:mod:`serverless_retry_tools.local.emulator.clock_server`), so that logical time waits for what the runtime
has still to dispatch rather than passing it while the machine is busy.

Readiness changes are sent when they happen; the whole declaration is renewed by :meth:`renew`
(the runtime's mapping loop, every half second), well within the emulator's ``ttl``, so a runtime
that dies without a word stops holding the clock after that ``ttl``.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable

from serverless_retry_tools.local.emulator_contract import HOLDS_ROUTE

__all__ = ["ClockHolder"]

# Real seconds the emulator keeps a declaration that is not renewed (renewed every 0.5 s; a starved
# runtime may miss a few renewals without letting the clock go).
TTL_SECONDS = 15.0
_TIMEOUT_SECONDS = 10.0


class ClockHolder:
    def __init__(self, endpoint_url: str, *, on_error: Callable[[str], None] | None = None) -> None:
        self._url = endpoint_url.rstrip("/") + HOLDS_ROUTE
        self.id = f"runtime-{uuid.uuid4()}"
        self._lock = threading.Lock()
        self._queues: dict[str, bool] = {}
        self._schedules = False
        self._on_error = on_error
        self.enabled = True  # False once the endpoint showed it has no held clock

    def _post(self, body: dict[str, object]) -> None:
        if not self.enabled:
            return
        request = urllib.request.Request(
            self._url,
            data=json.dumps({"holder": self.id, "ttl": TTL_SECONDS, **body}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 405):  # an endpoint without a held clock: nothing to hold
                self.enabled = False
            elif self._on_error is not None:
                self._on_error(f"clock hold declaration refused: {exc}")
        except OSError as exc:
            if self._on_error is not None:
                self._on_error(f"clock hold declaration failed: {exc!r}")

    def ready(self, queue_arn: str, ready: bool) -> None:
        """Whether the poller of ``queue_arn`` would receive now (sent only when it changes)."""
        with self._lock:
            if self._queues.get(queue_arn) == ready:
                return
            self._queues[queue_arn] = ready
        self._post({"queues": {queue_arn: ready}})

    def fires_schedules(self) -> None:
        with self._lock:
            self._schedules = True
        self._post({"schedules": True})

    def settled(self, schedule_arn: str, next_due: float | None) -> None:
        """The schedule was delivered or dead-lettered (None), or is retried at ``next_due``."""
        self._post({"settled": [{"arn": schedule_arn, "next_due": next_due}]})

    def running(self, token: str, deadline: float | None) -> None:
        """An invocation started (``deadline``: its logical start + the function's timeout) or
        ended (None): logical time does not pass a running invocation's deadline."""
        self._post({"running": {token: deadline}})

    def renew(self) -> None:
        with self._lock:
            body: dict[str, object] = {"queues": dict(self._queues), "schedules": self._schedules}
        self._post(body)

    def release(self) -> None:
        self._post({"release": True})

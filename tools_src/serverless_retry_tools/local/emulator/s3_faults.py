"""Failing S3 writes on the emulator, on purpose and deterministically: a chosen share of PutObject calls
on matching keys fails, so a test can show that a writer (the archiver) loses nothing and duplicates
nothing when S3 refuses it part of the time.

Off until configured (``POST /_serverless_retry/faults/s3-put``, JSON ``{"fraction": 0.3,
"key_contains": "/dead/", "written_fraction": 0.5}``; ``fraction`` 0 turns it off); every answer gives
the counts so far (``{"calls", "failed", "failed_after_write"}``). Exactly ``fraction`` of the matching
calls fail, evenly spread over them in the order they come (with 0.3: the 4th, 7th, 10th, 14th, ...),
so a run's count of failures is fixed by its count of calls, and a retried key meets a failure again
whenever its retry falls on one. A failed call answers 403 AccessDenied, which the SDK does not retry:
each one reaches the writer as a failed write. ``written_fraction`` of the failures (spread the same
way) happen after the object was stored, as when S3 wrote it but the answer was lost: the writer's
next try then meets the object it already wrote. Runs in the emulator child (it patches moto's S3 responses).
"""

from __future__ import annotations

import json
import math
import threading
import urllib.request
from collections.abc import Mapping
from typing import Any

from serverless_retry_tools.local.emulator.patching import Undo

__all__ = ["FAULTS_ROUTE", "S3PutFaults", "set_s3_put_faults"]

FAULTS_ROUTE = "/_serverless_retry/faults/s3-put"

_DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    b"<Message>Access Denied (a fault the emulator was told to inject)</Message></Error>"
)


def _falls(ordinal: int, fraction: float) -> bool:
    """Whether the ``ordinal``-th (0-based) of a series is one of the ``fraction`` picked, evenly spread."""
    return math.floor((ordinal + 1) * fraction) > math.floor(ordinal * fraction)


class S3PutFaults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.fraction = 0.0
        self.written_fraction = 0.0
        self.key_contains = ""
        self.counts = {"calls": 0, "failed": 0, "failed_after_write": 0}

    def configure(self, body: Mapping[str, Any]) -> dict[str, int]:
        """Apply a configuration (see the module's docstring); answers the counts so far."""
        fraction = float(body.get("fraction", 0.0))
        written = float(body.get("written_fraction", 0.0))
        if not (0.0 <= fraction <= 1.0 and 0.0 <= written <= 1.0):
            raise ValueError(f"fractions must be from 0 to 1, got {fraction!r} and {written!r}")
        with self._lock:
            self.fraction, self.written_fraction = fraction, written
            self.key_contains = str(body.get("key_contains", ""))
            return dict(self.counts)

    def decide(self, key: str) -> str | None:
        """For one PutObject on ``key``: None (let it through), "before" or "after" (the write)."""
        with self._lock:
            if self.fraction <= 0.0 or self.key_contains not in key:
                return None
            calls, failed = self.counts["calls"], self.counts["failed"]
            self.counts["calls"] += 1
            if not _falls(calls, self.fraction):
                return None
            self.counts["failed"] += 1
            if _falls(failed, self.written_fraction):
                self.counts["failed_after_write"] += 1
                return "after"
            return "before"

    def install(self) -> Undo:
        """Wrap moto's PutObject handler (copies, parts, ACLs and tags are other handlers: untouched)."""
        from moto.s3.responses import S3Response

        original = S3Response.__dict__["put_object"]
        faults = self

        def put_object(self: Any) -> Any:
            when = faults.decide(f"{self.bucket_name}/{self.parse_key_name()}")
            if when is None:
                return original(self)
            if when == "after":
                original(self)
            return 403, {"Content-Type": "application/xml"}, _DENIED

        S3Response.put_object = put_object

        def undo() -> None:
            S3Response.put_object = original

        return undo


def set_s3_put_faults(
    endpoint_url: str, *, fraction: float, key_contains: str = "", written_fraction: float = 0.0
) -> dict[str, int]:
    """Configure the emulator at ``endpoint_url`` (from any process); answers its counts so far."""
    request = urllib.request.Request(
        endpoint_url.rstrip("/") + FAULTS_ROUTE,
        data=json.dumps(
            {"fraction": fraction, "key_contains": key_contains, "written_fraction": written_fraction}
        ).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, int] = json.loads(response.read())
        return answer

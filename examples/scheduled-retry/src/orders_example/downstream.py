"""A fake order service that fails on demand, so every retry path can be shown without a network.

The order's ``behaviour`` field says how it fails (the demo sends each of these):

============== ===============================================================================
ok             accepted at once
throttle       HTTP 429 with Retry-After ``retry_after`` (default 30 s) while attempt <= ``fail_times`` (2)
timeout        TimeoutError while attempt <= ``fail_times`` (3)
always-timeout TimeoutError on every attempt (spends the timeout budget)
invalid        ValidationError: never retried
long-throttle  HTTP 503 with Retry-After ``retry_after`` (default 1800 s) while attempt <= ``fail_times``
               (1): longer than SQS's 15-minute delay, so the retry goes through the Scheduler
============== ===============================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serverless_retry import HttpError

BEHAVIOURS = ("ok", "throttle", "timeout", "always-timeout", "invalid", "long-throttle")


class ValidationError(Exception):
    """The order itself is wrong; the example's policy never retries it."""


def _int_field(order: Mapping[str, Any], name: str, default: int) -> int:
    value = order.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(f"{name} must be a whole number >= 0, got {value!r}")
    return value


def _retry_after(order: Mapping[str, Any], default: int) -> int | float | str:
    value = order.get("retry_after", default)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValidationError(f"retry_after must be seconds or an HTTP date, got {value!r}")
    return value


def submit(order: Mapping[str, Any], attempt: int) -> str:
    """Submit ``order`` on delivery ``attempt`` (1 = first); returns a confirmation id or raises."""
    behaviour = order.get("behaviour", "ok")
    if behaviour not in BEHAVIOURS:
        raise ValidationError(f"unknown behaviour {behaviour!r} (one of {', '.join(BEHAVIOURS)})")
    order_id = str(order.get("order_id", "?"))
    if behaviour == "invalid":
        raise ValidationError(f"order {order_id} is invalid")
    if behaviour == "always-timeout":
        raise TimeoutError(f"order service timed out on order {order_id} (attempt {attempt})")
    if behaviour == "timeout" and attempt <= _int_field(order, "fail_times", 3):
        raise TimeoutError(f"order service timed out on order {order_id} (attempt {attempt})")
    if behaviour == "throttle" and attempt <= _int_field(order, "fail_times", 2):
        raise HttpError(429, "429 Too Many Requests", retry_after=_retry_after(order, 30))
    if behaviour == "long-throttle" and attempt <= _int_field(order, "fail_times", 1):
        raise HttpError(503, "503 Service Unavailable", retry_after=_retry_after(order, 1800))
    return f"confirmation-{order_id}-{attempt}"

"""EventBridge Scheduler's one-time schedules, as pure functions: when one is due, and what happens
after a failed delivery (its RetryPolicy, then its DeadLetterConfig).

Only ``at(...)`` expressions fire: they are what serverless-retry creates. ``rate()`` and ``cron()``
schedules are reported as unsupported by the runtime and left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "DEFAULT_MAX_EVENT_AGE",
    "DEFAULT_MAX_RETRIES",
    "FailedDelivery",
    "after_failure",
    "dead_letter_attributes",
    "parse_at",
    "retry_delay",
]

_AT = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")
DEFAULT_MAX_RETRIES = 185
DEFAULT_MAX_EVENT_AGE = 86_400
_RETRY_CAP_SECONDS = 300


def parse_at(expression: str, timezone: str | None = "UTC") -> datetime | None:
    """The UTC instant of ``at(YYYY-MM-DDTHH:MM:SS)`` read in ``timezone``; None for other forms.

    Raises ValueError for a malformed at() or an unknown time zone (the runtime reports it)."""
    match = _AT.match(expression.strip())
    if match is None:
        if expression.strip().startswith("at("):
            raise ValueError(f"malformed at() expression: {expression!r}")
        return None
    try:
        zone = ZoneInfo(timezone or "UTC")
    except ZoneInfoNotFoundError:
        raise ValueError(f"unknown ScheduleExpressionTimezone {timezone!r}") from None
    try:
        local = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=zone)
    except ValueError as exc:
        raise ValueError(f"malformed at() expression {expression!r}: {exc}") from None
    return local.astimezone(UTC)


def retry_delay(retries_done: int) -> float:
    """Logical seconds before retry number ``retries_done + 1``: exponential, capped at five minutes
    (AWS documents exponential backoff without the exact curve)."""
    return float(min(_RETRY_CAP_SECONDS, 2 ** min(retries_done, 16)))


@dataclass(frozen=True)
class FailedDelivery:
    """What to do after delivery attempt ``retries_done + 1`` of a schedule failed."""

    action: str  # "retry" or "dead-letter"
    next_attempt_at: datetime | None
    condition: str  # why no more retries: "MaximumRetryAttemptsExhausted" / "MaximumEventAgeExhausted"


def after_failure(
    retry_policy: dict[str, Any] | None, *, retries_done: int, due_at: datetime, now: datetime
) -> FailedDelivery:
    """Apply a schedule's RetryPolicy to a failed delivery (times are logical)."""
    policy = retry_policy or {}
    max_retries = int(policy.get("MaximumRetryAttempts", DEFAULT_MAX_RETRIES))
    max_age = int(policy.get("MaximumEventAgeInSeconds", DEFAULT_MAX_EVENT_AGE))
    if retries_done >= max_retries:
        return FailedDelivery("dead-letter", None, "MaximumRetryAttemptsExhausted")
    next_at = now + timedelta(seconds=retry_delay(retries_done))
    if next_at - due_at > timedelta(seconds=max_age):
        return FailedDelivery("dead-letter", None, "MaximumEventAgeExhausted")
    return FailedDelivery("retry", next_at, "")


def dead_letter_attributes(
    *, schedule_arn: str, target_arn: str, error_code: str, error_message: str, retries: int, condition: str
) -> dict[str, dict[str, str]]:
    """Message attributes of the copy sent to the schedule's dead-letter queue (as Scheduler adds)."""
    values = {
        "ERROR_CODE": error_code,
        "ERROR_MESSAGE": error_message[:1000] or error_code,
        "EXHAUSTED_RETRY_CONDITION": condition,
        "RETRY_ATTEMPTS": str(retries),
        "SCHEDULE_ARN": schedule_arn,
        "TARGET_ARN": target_arn,
    }
    return {k: {"DataType": "String", "StringValue": v} for k, v in values.items() if v}

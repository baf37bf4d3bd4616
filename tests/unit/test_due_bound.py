"""An envelope's due_at beyond anything its policy could plan is invalid (issue 17, class 8): it would
otherwise be re-delayed every 900 s for ever (e.g. one due in 2099)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from serverless_retry.envelope import format_time, unwrap
from serverless_retry.planning import DUE_SKEW_MARGIN_SECONDS, latest_due
from serverless_retry.policy import RetryPolicy

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
POLICY = RetryPolicy.from_dict(
    {
        "backoff": {"max_seconds": 600},
        "rules": [
            {"http_status": [429], "backoff": {"strategy": "fixed", "base_seconds": 60, "max_seconds": 7200}},
            {"errors": ["KeyError"], "retry": False},
        ],
    }
)


def envelope(due_at: datetime) -> str:
    meta = {
        "v": 1,
        "id": "m-1",
        "attempt": 2,
        "first_failed_at": "2026-11-30T09:00:00Z",
        "source": "arn:aws:sqs:us-east-1:123456789012:orders",
        "history": [],
        "due_at": format_time(due_at),
    }
    return json.dumps({"serverless_retry": meta, "body": "order", "attributes": {}})


def test_the_largest_delay_is_the_largest_cap_of_any_backoff() -> None:
    assert POLICY.max_delay_seconds == 7200  # the 429 rule's, above the policy's own 600
    assert RetryPolicy().max_delay_seconds == 3600  # the default backoff's cap
    assert RetryPolicy.from_dict({"backoff": {"max_seconds": 90.5}}).max_delay_seconds == 91
    assert latest_due(POLICY, NOW) == NOW + timedelta(seconds=7200 + DUE_SKEW_MARGIN_SECONDS)


def test_a_copy_due_within_what_the_policy_plans_is_valid() -> None:
    limit = latest_due(POLICY, NOW)
    for due in (NOW - timedelta(days=3), NOW + timedelta(seconds=7200), limit):
        incoming = unwrap(envelope(due), {}, message_id="c", source="q", latest_due=limit)
        assert incoming.kind == "envelope", incoming.problem


def test_a_copy_due_beyond_it_is_invalid_with_the_reason() -> None:
    limit = latest_due(POLICY, NOW)
    for due in (limit + timedelta(seconds=1), datetime(2099, 1, 1, tzinfo=UTC)):
        incoming = unwrap(envelope(due), {}, message_id="c", source="q", latest_due=limit)
        assert incoming.kind == "invalid"
        assert incoming.problem is not None
        assert incoming.problem.startswith(
            f"serverless_retry.due_at: {format_time(due)} is later than any retry"
        )
        assert format_time(limit) in incoming.problem


def test_without_a_bound_unwrap_checks_only_the_format() -> None:
    incoming = unwrap(envelope(datetime(2099, 1, 1, tzinfo=UTC)), {}, message_id="c", source="q")
    assert incoming.kind == "envelope"

"""One-time schedule semantics the local runtime applies (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from serverless_retry_tools.local.aws_rules.schedules import (
    after_failure,
    dead_letter_attributes,
    parse_at,
    retry_delay,
)

DUE = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)


def test_at_in_utc() -> None:
    assert parse_at("at(2026-11-30T10:00:00)") == DUE
    assert parse_at(" at(2026-11-30T10:00:00) ", None) == DUE


def test_at_in_a_time_zone_is_converted_to_utc() -> None:
    assert parse_at("at(2026-11-30T11:00:00)", "Europe/Paris") == DUE
    assert parse_at("at(2026-07-01T12:00:00)", "America/New_York") == datetime(2026, 7, 1, 16, 0, tzinfo=UTC)


@pytest.mark.parametrize("expression", ["rate(5 minutes)", "cron(0 10 * * ? *)"])
def test_recurring_expressions_are_not_one_time(expression: str) -> None:
    assert parse_at(expression) is None


@pytest.mark.parametrize(
    ("expression", "zone"),
    [
        ("at(2026-11-30 10:00:00)", "UTC"),
        ("at(2026-13-01T00:00:00)", "UTC"),
        ("at(2026-11-30T10:00:00)", "Mars/Base"),
    ],
)
def test_bad_at_or_zone_is_an_error(expression: str, zone: str) -> None:
    with pytest.raises(ValueError, match=r"at\(|month|Timezone"):
        parse_at(expression, zone)


def test_retry_delay_is_exponential_and_capped() -> None:
    assert [retry_delay(n) for n in range(5)] == [1, 2, 4, 8, 16]
    assert retry_delay(9) == 300
    assert retry_delay(10_000) == 300


def test_retries_until_the_attempt_budget_then_dead_letter() -> None:
    policy = {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 86_400}
    first = after_failure(policy, retries_done=0, due_at=DUE, now=DUE)
    assert (first.action, first.next_attempt_at) == ("retry", DUE + timedelta(seconds=1))
    second = after_failure(policy, retries_done=1, due_at=DUE, now=DUE + timedelta(seconds=1))
    assert (second.action, second.next_attempt_at) == ("retry", DUE + timedelta(seconds=3))
    last = after_failure(policy, retries_done=2, due_at=DUE, now=DUE + timedelta(seconds=3))
    assert (last.action, last.condition) == ("dead-letter", "MaximumRetryAttemptsExhausted")


def test_zero_retries_dead_letters_at_once() -> None:
    decision = after_failure({"MaximumRetryAttempts": 0}, retries_done=0, due_at=DUE, now=DUE)
    assert decision.action == "dead-letter"


def test_event_age_stops_retries() -> None:
    policy = {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": 60}
    decision = after_failure(policy, retries_done=6, due_at=DUE, now=DUE + timedelta(seconds=30))
    assert (decision.action, decision.condition) == ("dead-letter", "MaximumEventAgeExhausted")


def test_missing_policy_uses_scheduler_defaults() -> None:
    assert after_failure(None, retries_done=184, due_at=DUE, now=DUE).action == "retry"
    assert after_failure(None, retries_done=185, due_at=DUE, now=DUE).action == "dead-letter"


def test_dead_letter_attributes_name_the_failure() -> None:
    attrs = dead_letter_attributes(
        schedule_arn="arn:s",
        target_arn="arn:t",
        error_code="AWS.SimpleQueueService.NonExistentQueue",
        error_message="",
        retries=3,
        condition="MaximumRetryAttemptsExhausted",
    )
    assert {k: v["StringValue"] for k, v in attrs.items()} == {
        "ERROR_CODE": "AWS.SimpleQueueService.NonExistentQueue",
        "ERROR_MESSAGE": "AWS.SimpleQueueService.NonExistentQueue",
        "EXHAUSTED_RETRY_CONDITION": "MaximumRetryAttemptsExhausted",
        "RETRY_ATTEMPTS": "3",
        "SCHEDULE_ARN": "arn:s",
        "TARGET_ARN": "arn:t",
    }
    assert all(v["DataType"] == "String" for v in attrs.values())

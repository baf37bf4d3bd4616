"""The example's policy, as Terraform renders it, is the documented one and classifies the example
processor's errors as examples/scheduled-retry/README.md says. (Every other policy: test_policy_parity.py.)"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from serverless_retry import HttpError
from serverless_retry.policy import RetryPolicy

from tests.terraform.conftest import Workspace

EXAMPLE = "examples/scheduled-retry"
# Relative to the directory console runs in: the package must exist, its content is unused.
PACKAGE = "../../tests/terraform/fixtures/empty.zip"
NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def example_policy(workspace: Workspace) -> RetryPolicy:
    text = workspace.terraform.console(
        workspace.dir(EXAMPLE), "module.orders.retry_policy_json", {"package": PACKAGE}
    )
    assert isinstance(text, str)
    return RetryPolicy.from_json(text)


def test_example_policy_is_the_documented_one(example_policy: RetryPolicy) -> None:
    assert example_policy.max_attempts == 5
    assert example_policy.backoff.to_dict() == {
        "strategy": "exponential", "base_seconds": 10, "multiplier": 2, "max_seconds": 3600, "jitter": "full",
    }  # fmt: skip
    throttle, timeout, validation = example_policy.rules
    assert (throttle.errors, throttle.http_status, throttle.honor_retry_after) == (
        ("ThrottlingError",),
        (429, 503),
        True,
    )
    assert throttle.backoff is not None
    assert (throttle.backoff.strategy, throttle.backoff.base_seconds, throttle.backoff.jitter) == (
        "fixed",
        60,
        "none",
    )
    assert (timeout.errors, timeout.max_attempts) == (("TimeoutError", "ConnectionError"), 6)
    assert timeout.backoff is not None
    assert (timeout.backoff.strategy, timeout.backoff.base_seconds) == ("fixed", 30)
    assert (validation.errors, validation.retry) == (("ValidationError",), False)


def _decide(policy: RetryPolicy, error: BaseException, attempt: int) -> tuple[str, int, str | None]:
    d = policy.decide(error, attempt=attempt, first_failed_at=NOW, now=NOW, rand=random.Random(7))
    return d.action, d.delay_seconds, d.transport


def test_example_processor_errors_meet_the_example_policy(example_policy: RetryPolicy) -> None:
    from orders_example.downstream import ValidationError, submit

    def failure(order: dict[str, Any], attempt: int) -> BaseException:
        with pytest.raises(Exception) as caught:  # noqa: PT011 (any failure: the policy classifies it)
            submit(order, attempt)
        return caught.value

    # A throttle waits as long as the server asks; a long one goes through the Scheduler.
    assert _decide(example_policy, failure({"behaviour": "throttle"}, 1), 1) == ("retry", 30, "sqs-delay")
    assert _decide(example_policy, failure({"behaviour": "long-throttle"}, 1), 1) == (
        "retry",
        1800,
        "scheduler",
    )
    # Timeouts: every 30 s, and given up after the rule's 6 attempts.
    assert _decide(example_policy, failure({"behaviour": "timeout"}, 1), 1) == ("retry", 30, "sqs-delay")
    always = failure({"behaviour": "always-timeout"}, 6)
    assert _decide(example_policy, always, 5)[0] == "retry"
    assert _decide(example_policy, always, 6)[0] == "exhausted"
    # Validation errors are never retried.
    invalid = failure({"behaviour": "invalid"}, 1)
    assert isinstance(invalid, ValidationError)
    assert _decide(example_policy, invalid, 1)[0] == "non-retryable"
    assert isinstance(failure({"behaviour": "throttle"}, 1), HttpError)

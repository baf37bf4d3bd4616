"""The policy Terraform renders is the policy Python runs: render with `terraform console`, parse with
RetryPolicy.from_json, and compare decisions and the scheduler choice with the Python side."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from serverless_retry import HttpError
from serverless_retry.config import needs_scheduler
from serverless_retry.policy import RetryPolicy

from tests.terraform.conftest import Runs, Workspace

MODULE = "modules/scheduled-retry"
EXAMPLE = "examples/scheduled-retry"
# Paths relative to the directory console runs in: the package must exist, its content is unused.
PACKAGE = "../../tests/terraform/fixtures/empty.zip"
REQUIRED = {"name": "orders", "package": PACKAGE, "processor": "orders.process:handle"}
NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)

# Policies exercising every field; the scheduler decision is compared on a standard queue for all of
# them and on a FIFO queue for those where FIFO changes it.
CASES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "every_field": {
        "max_attempts": 7,
        "max_age_seconds": 86400,
        "backoff": {
            "strategy": "linear",
            "base_seconds": 5,
            "multiplier": 3,
            "max_seconds": 600,
            "jitter": "equal",
        },
        "rules": [
            {"errors": ["mypkg.errors.Throttled"], "http_status": [429], "honor_retry_after": True},
            {
                "message_regex": r"^quota (exceeded|exhausted)\b",
                "max_attempts": 2,
                "backoff": {"jitter": "decorrelated"},
            },
            {"errors": ["KeyError"], "retry": False},
        ],
        "unmatched": "dead-letter",
        "transport": "visibility",
        "honor_retry_after": False,
    },
    "caps_fit_sqs": {"backoff": {"max_seconds": 900}},
    "rule_cap_needs_scheduler": {
        "backoff": {"max_seconds": 900},
        "rules": [{"http_status": [503], "backoff": {"max_seconds": 901}}],
    },
    "forced_sqs_delay": {"transport": "sqs-delay"},
    "forced_scheduler": {"transport": "scheduler", "backoff": {"max_seconds": 60}},
}


FIFO_CASES = ("caps_fit_sqs", "forced_sqs_delay", "every_field")


@pytest.fixture(scope="module")
def rendered(workspace: Workspace) -> Iterator[Runs[tuple[str, bool], dict[str, Any]]]:
    """For each case, on a standard and on a FIFO queue: the JSON and the module's scheduler decision."""

    def render(key: tuple[str, bool]) -> dict[str, Any]:
        name, fifo = key
        value = workspace.terraform.console(
            workspace.dir(MODULE),
            "{ policy = local.policy_json, needs_scheduler = local.needs_scheduler }",
            {**REQUIRED, "retry_policy": CASES[name], "fifo": fifo},
        )
        assert isinstance(value, dict)
        return value

    runs = Runs(render, [(name, False) for name in CASES] + [(name, True) for name in FIFO_CASES])
    yield runs
    runs.close()


@pytest.mark.parametrize("name", CASES)
def test_python_accepts_the_rendered_policy(
    rendered: Runs[tuple[str, bool], dict[str, Any]], name: str
) -> None:
    policy = RetryPolicy.from_json(rendered[name, False]["policy"])
    given = CASES[name]
    for field in ("max_attempts", "max_age_seconds", "unmatched", "transport", "honor_retry_after"):
        if field in given:
            assert getattr(policy, field) == given[field]
    for field, value in given.get("backoff", {}).items():
        assert getattr(policy.backoff, field) == value
    assert len(policy.rules) == len(given.get("rules", []))


def test_unset_fields_take_the_python_defaults(rendered: Runs[tuple[str, bool], dict[str, Any]]) -> None:
    assert RetryPolicy.from_json(rendered["defaults", False]["policy"]).to_dict() == RetryPolicy().to_dict()


def test_a_rule_backoff_inherits_what_it_leaves_unset(
    rendered: Runs[tuple[str, bool], dict[str, Any]],
) -> None:
    policy = RetryPolicy.from_json(rendered["every_field", False]["policy"])
    quota = policy.rules[1]
    assert quota.backoff is not None
    assert (quota.backoff.strategy, quota.backoff.base_seconds, quota.backoff.max_seconds) == (
        "linear",
        5,
        600,
    )
    assert quota.backoff.jitter == "decorrelated"
    assert policy.rules[0].backoff is None


@pytest.mark.parametrize(
    ("name", "fifo"), [(n, False) for n in CASES] + [(n, True) for n in FIFO_CASES], ids=str
)
def test_scheduler_created_exactly_when_python_needs_it(
    rendered: Runs[tuple[str, bool], dict[str, Any]], name: str, fifo: bool
) -> None:
    value = rendered[name, fifo]
    policy = RetryPolicy.from_json(value["policy"])
    assert value["needs_scheduler"] is needs_scheduler(policy, fifo=fifo)


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

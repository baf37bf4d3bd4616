"""What a user of modules/scheduled-retry sees when a plan refuses their configuration.

`terraform test` can only expect failures of the module under test's own objects, not of the modules
inside it, and says nothing about the message. These cases plan the composed module as a user would
(one `terraform test` process, each failing case in a file of its own) and check the error: that it
comes at plan time, even on a first apply when no queue URL or ARN is known yet (the mock provider
here leaves them unknown, as AWS does), that it names what to change, and that it is reported once.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.terraform.conftest import Workspace
from tests.terraform.tftest_runs import RunResult, plan_cases

MODULE = "modules/scheduled-retry"
# No override_during = plan: every computed attribute (ARNs, URLs) is unknown at plan time, as on a
# first apply. Data sources need well-formed values (policy JSON, region, partition).
FIRST_APPLY = """
mock_provider "aws" {
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\\"Version\\":\\"2012-10-17\\",\\"Statement\\":[]}"
    }
  }
  mock_data "aws_caller_identity" {
    defaults = {
      account_id = "123456789012"
    }
  }
  mock_data "aws_region" {
    defaults = {
      name = "us-east-1"
    }
  }
  mock_data "aws_partition" {
    defaults = {
      partition  = "aws"
      dns_suffix = "amazonaws.com"
    }
  }
}
"""
REQUIRED = {
    "name": "orders",
    "package": "../../tests/terraform/fixtures/empty.zip",
    "processor": "orders.process:handle",
}
LONG_RULES = [
    {
        "errors": [f"mypkg.integrations.partner_{i}.errors.UpstreamTemporarilyUnavailableError"],
        "max_attempts": 7,
    }
    for i in range(40)
]

# Each failing case costs a file of its own (`terraform test` skips the rest of a file after an
# error) and each file loads the provider again, so the guards are exercised together: a plan reports
# every failed precondition, each once.
CASES: dict[str, dict[str, Any]] = {
    "fits": {"retry_policy": {"rules": LONG_RULES[:10]}},
    "fifo-defaults": {"fifo": True},
    "fifo-unordered": {"fifo": True, "fifo_order": "unordered"},
    "typo-in-a-rule": {
        "retry_policy": {"rules": [{"errors": ["A"]}, {"errors": ["ValidationError"], "retyr": False}]}
    },
    "environment-over-4kb": {"retry_policy": {"rules": LONG_RULES}},
    # The queue's own guards stop the plan before the consumer's (its resources depend on the queue).
    "queue-guards": {
        "max_receive_count": 3,
        "max_message_size": 131072,
        "exhausted_max_message_size": 131072,
    },
    # A source queue that forgets a failing message before its last receive (no max_receive_count
    # passed by hand: the queue module checks its own three values).
    "retention-guard": {"message_retention_seconds": 600, "visibility_timeout_seconds": 150},
    # 262144 + the 2048-byte terminal frame does not fit the 262144 hashicorp/aws 5.x allows.
    "source-of-256-kib": {"max_message_size": 262144},
    # FIFO ordered with the default policy (max_attempts 5): 10 receives are one short of 2 x 5 + 1.
    "fifo-ordered-receives": {"fifo": True, "max_receive_count": 10},
    "consumer-guards": {
        # FIFO ordered retries in place; the policy asks for the Scheduler, waits up to 19 x 12 h (past
        # 4 days of retention), and 5 receives are fewer than its 20 attempts.
        "fifo": True,
        "retry_policy": {"transport": "scheduler", "max_attempts": 20, "backoff": {"max_seconds": 43200}},
        "max_receive_count": 5,
    },
}
PASSING = ("fits", "fifo-defaults", "fifo-unordered")


@pytest.fixture(scope="module")
def plans(workspace: Workspace) -> dict[str, RunResult]:
    return plan_cases(
        workspace,
        MODULE,
        {name: {**REQUIRED, **variables} for name, variables in CASES.items()},
        isolate=[name for name in CASES if name not in PASSING],
        preamble=FIRST_APPLY,
        directory="guard-tests",
    )


@pytest.mark.parametrize("name", PASSING)
def test_valid_configurations_plan_on_a_first_apply(plans: dict[str, RunResult], name: str) -> None:
    assert plans[name].passed, "\n".join(plans[name].errors)


def _only_error(plans: dict[str, RunResult], name: str) -> str:
    result = plans[name]
    assert not result.passed, f"{name} planned"
    assert len(result.errors) == 1, "expected one error, reported once:\n\n" + "\n\n".join(result.errors)
    return result.errors[0]


def test_a_typo_in_the_policy_is_named(plans: dict[str, RunResult]) -> None:
    error = _only_error(plans, "typo-in-a-rule")
    assert 'retry_policy.rules[1]: unknown field "retyr"' in error


def test_the_environment_size_is_checked_before_the_urls_are_known(plans: dict[str, RunResult]) -> None:
    error = _only_error(plans, "environment-over-4kb")
    assert "Lambda allows 4096" in error
    assert "Shorten the retry policy" in error


GUARDS = {
    "queue-guards": (
        "AWS Lambda's guidance for SQS event sources",
        "with max_message_size 131072 it needs 133120",
    ),
    "consumer-guards": (
        "not shorter than the source queue's retention",
        "must exceed the policy's largest max_attempts",
        "would take the retry out of its group",
        "a message held back behind a failing one",
    ),
}


def _by_guard(plans: dict[str, RunResult], case: str) -> dict[str, str]:
    """The errors of a many-faults plan, by the text that identifies each guard; each exactly once."""
    result = plans[case]
    assert not result.passed, f"{case} planned"
    found: dict[str, str] = {}
    for error in result.errors:
        keys = [key for key in GUARDS[case] if key in error]
        assert len(keys) == 1, f"an error of no (or several) expected guards:\n{error}"
        assert keys[0] not in found, f"reported twice: {keys[0]}"
        found[keys[0]] = error
    assert set(found) == set(GUARDS[case]), "\n\n".join(result.errors)
    return found


def test_the_queue_guards_say_what_to_change(plans: dict[str, RunResult]) -> None:
    receives, size = (_by_guard(plans, "queue-guards")[key] for key in GUARDS["queue-guards"])
    assert "max_receive_count is 3" in receives
    assert "allow_max_receive_count_below_5 = true" in receives
    assert "The retry-exhausted queue takes 131072 bytes" in size
    assert "Raise exhausted_max_message_size to at least 133120" in size  # + 2048
    assert "or lower max_message_size to at most 129024" in size


def test_the_retention_guard_holds_without_a_max_receive_count(plans: dict[str, RunResult]) -> None:
    error = _only_error(plans, "retention-guard")
    assert "received max_receive_count (5) times, a visibility timeout (150 s) apart" in error
    assert "750 s, which is not shorter than message_retention_seconds (600 s)" in error
    assert "Raise message_retention_seconds" in error


def test_a_source_of_256_kib_leaves_the_reason_no_room(plans: dict[str, RunResult]) -> None:
    error = _only_error(plans, "source-of-256-kib")
    assert "with max_message_size 262144 it needs 264192" in error
    assert "lower max_message_size to at most 260096" in error
    assert "set exhausted_max_message_size to at least 264192" in error


def test_fifo_ordered_needs_receives_for_the_messages_it_holds_back(plans: dict[str, RunResult]) -> None:
    error = _only_error(plans, "fifo-ordered-receives")
    assert "maxReceiveCount (10) must be at least 2 x 5 + 1 = 11" in error
    assert "Set max_receive_count to at least 11" in error


def test_the_consumer_guards_say_what_to_change(plans: dict[str, RunResult]) -> None:
    retention, receives, order, held_back = (
        _by_guard(plans, "consumer-guards")[key] for key in GUARDS["consumer-guards"]
    )
    assert "retention (345600 s)" in retention
    assert "Raise message_retention_seconds" in retention
    assert "maxReceiveCount (5)" in receives
    assert "Set max_receive_count to at least 21" in receives
    assert 'fifo_order = "unordered"' in order
    assert "must be at least 2 x 20 + 1 = 41" in held_back

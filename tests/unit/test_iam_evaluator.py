"""The IAM policy evaluator the least-privilege test judges with (tests/terraform/iam/policy.py): the
rules of IAM's policy evaluation logic it relies on, and loud failure on what it does not know."""

from __future__ import annotations

import pytest

from tests.terraform.iam.policy import Request, Statement, evaluate, statements

QUEUE = "arn:aws:sqs:us-east-1:123456789012:orders"
ROLE = "arn:aws:iam::123456789012:role/orders-scheduler"


def _policy(*raw: dict[str, object]) -> list[Statement]:
    return statements("test", {"Version": "2012-10-17", "Statement": list(raw)})


def _decision(policy: list[Statement], request: Request) -> str:
    return evaluate(policy, request).decision


def test_an_action_is_allowed_on_the_exact_resource_only() -> None:
    policy = _policy({"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": QUEUE})
    assert _decision(policy, Request("sqs:SendMessage", QUEUE)) == "allow"
    assert _decision(policy, Request("sqs:SendMessage", QUEUE + "-dlq")) == "implicit-deny"
    assert _decision(policy, Request("sqs:ReceiveMessage", QUEUE)) == "implicit-deny"


def test_actions_match_case_insensitively_and_resources_do_not() -> None:
    policy = _policy({"Effect": "Allow", "Action": ["SQS:sendmessage"], "Resource": [QUEUE]})
    assert _decision(policy, Request("sqs:SendMessage", QUEUE)) == "allow"
    assert _decision(policy, Request("sqs:SendMessage", QUEUE.upper())) == "implicit-deny"


def test_wildcards_cover_what_they_say_and_no_more() -> None:
    schedules = "arn:aws:scheduler:us-east-1:123456789012:schedule/orders-retries/*"
    policy = _policy({"Effect": "Allow", "Action": "scheduler:Create*", "Resource": schedules})
    mine = "arn:aws:scheduler:us-east-1:123456789012:schedule/orders-retries/sr-abc"
    other = "arn:aws:scheduler:us-east-1:123456789012:schedule/payments-retries/sr-abc"
    assert _decision(policy, Request("scheduler:CreateSchedule", mine)) == "allow"
    assert _decision(policy, Request("scheduler:CreateSchedule", other)) == "implicit-deny"
    assert _decision(policy, Request("scheduler:DeleteSchedule", mine)) == "implicit-deny"
    # [] is no character class in IAM: a literal.
    literal = _policy({"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": QUEUE + "[ab]"})
    assert _decision(literal, Request("sqs:SendMessage", QUEUE + "a")) == "implicit-deny"


def test_an_explicit_deny_wins_over_any_allow() -> None:
    policy = _policy(
        {"Effect": "Allow", "Action": "sqs:*", "Resource": QUEUE},
        {
            "Effect": "Deny",
            "Action": "sqs:*",
            "Resource": QUEUE,
            "Principal": "*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        },
    )
    assert (
        _decision(policy, Request("sqs:SendMessage", QUEUE, {"aws:SecureTransport": "true"}, {"AWS": ROLE}))
        == "allow"
    )
    assert (
        _decision(policy, Request("sqs:SendMessage", QUEUE, {"aws:SecureTransport": "false"}, {"AWS": ROLE}))
        == "deny"
    )


def test_conditions_need_their_keys_and_negated_operators_pass_without() -> None:
    pass_role = _policy(
        {
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": ROLE,
            "Condition": {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
        }
    )
    to_scheduler = {"iam:PassedToService": "scheduler.amazonaws.com"}
    assert _decision(pass_role, Request("iam:PassRole", ROLE, to_scheduler)) == "allow"
    assert (
        _decision(pass_role, Request("iam:PassRole", ROLE, {"iam:PassedToService": "ec2.amazonaws.com"}))
        == "implicit-deny"
    )
    assert _decision(pass_role, Request("iam:PassRole", ROLE)) == "implicit-deny"
    # Condition keys are case-insensitive.
    assert (
        _decision(
            pass_role, Request("iam:PassRole", ROLE, {"IAM:passedtoservice": "scheduler.amazonaws.com"})
        )
        == "allow"
    )
    negated = _policy(
        {
            "Effect": "Allow",
            "Action": "sqs:SendMessage",
            "Resource": QUEUE,
            "Condition": {"StringNotEquals": {"aws:SourceAccount": "999999999999"}},
        }
    )
    assert _decision(negated, Request("sqs:SendMessage", QUEUE)) == "allow"


def test_a_resource_policy_names_its_principal() -> None:
    policy = _policy(
        {
            "Effect": "Allow",
            "Action": "sqs:SendMessage",
            "Resource": QUEUE,
            "Principal": {"Service": "events.amazonaws.com"},
            "Condition": {
                "ArnEquals": {"aws:SourceArn": "arn:aws:events:us-east-1:123456789012:rule/heal/exhausted"}
            },
        }
    )
    rule = {"aws:SourceArn": "arn:aws:events:us-east-1:123456789012:rule/heal/exhausted"}
    assert (
        _decision(policy, Request("sqs:SendMessage", QUEUE, rule, {"Service": "events.amazonaws.com"}))
        == "allow"
    )
    assert (
        _decision(policy, Request("sqs:SendMessage", QUEUE, rule, {"Service": "sns.amazonaws.com"}))
        == "implicit-deny"
    )
    other = {"aws:SourceArn": "arn:aws:events:us-east-1:123456789012:rule/heal/other"}
    assert (
        _decision(policy, Request("sqs:SendMessage", QUEUE, other, {"Service": "events.amazonaws.com"}))
        == "implicit-deny"
    )


def test_not_action_allows_everything_else() -> None:
    policy = _policy({"Effect": "Allow", "NotAction": "sqs:DeleteMessage", "Resource": QUEUE})
    assert _decision(policy, Request("sqs:SendMessage", QUEUE)) == "allow"
    assert _decision(policy, Request("sqs:DeleteMessage", QUEUE)) == "implicit-deny"


def test_what_it_does_not_know_fails_loudly() -> None:
    unknown_operator = _policy(
        {
            "Effect": "Allow",
            "Action": "sqs:SendMessage",
            "Resource": QUEUE,
            "Condition": {"NumericLessThan": {"x": "1"}},
        }
    )
    with pytest.raises(ValueError, match="NumericLessThan"):
        evaluate(unknown_operator, Request("sqs:SendMessage", QUEUE))
    unknown_element = _policy(
        {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": QUEUE, "NotPrincipal": "x"}
    )
    with pytest.raises(ValueError, match="NotPrincipal"):
        evaluate(unknown_element, Request("sqs:SendMessage", QUEUE))

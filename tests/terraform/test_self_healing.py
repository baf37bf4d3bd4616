"""modules/self-healing renders what the Python side expects: its rules are the reference table of
serverless_retry.selfheal.rules.bus_rules() (patterns, outcomes, reasons), its retry limits are the
redrive's Source.max_retries, the environment it writes is accepted by the functions' settings
parsers, and an invalid per-source policy fails the plan naming the field.

Each case is planned on the mock provider (tests/terraform/mocked_plan.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverless_retry.selfheal.config import EnrichmentSettings, RedriveSettings
from serverless_retry.selfheal.rules import bus_rules

from tests.terraform.conftest import Workspace
from tests.terraform.mocked_plan import Run, plan_runs

MODULE = "modules/self-healing"
# What the module's test runs reference, copied beside it.
DEPENDENCIES = (
    "modules/retry-policy",
    "modules/queue",
    "modules/scheduler",
    "modules/function",
    "modules/private-bucket",
)
# Relative to the module: the package must exist, its content is unused.
PACKAGE = "../../tests/terraform/fixtures/empty.zip"

CASES: dict[str, dict[str, Any]] = {
    "one_source_default_policy": {
        "sources": {"orders": {"function_name": "orders-fn", "function_role_name": "orders-role"}},
    },
    "policies_of_their_own": {
        "sources": {
            "charge": {
                "function_name": "charge-fn",
                "function_role_name": "charge-role",
                "topic_arn": "arn:aws:sns:us-east-1:123456789012:orders",
                "retry_policy": {
                    "max_attempts": 4,
                    "backoff": {"strategy": "exponential", "base_seconds": 10, "max_seconds": 300},
                    "rules": [
                        {"http_status": [503], "max_attempts": 6, "honor_retry_after": True},
                        {"errors": ["ValueError"], "retry": False, "max_attempts": 9},
                        {"message_regex": "^quota (exceeded|exhausted)", "max_attempts": 2},
                    ],
                },
            },
            "invoice": {"function_name": "invoice-fn", "function_role_name": "invoice-role"},
            "reindex": {
                "function_name": "reindex-fn",
                "function_role_name": "reindex-role",
                "retry_policy": {"max_attempts": 2, "transport": "scheduler"},
            },
        },
        "retry_policy": {"max_attempts": 3, "max_age_seconds": 3600},
        "do_not_retry": ["ValidationError", "KeyError"],
        "redrive_to": "topic",
    },
}

INVALID: dict[str, Any] = {
    "sources": {
        "orders": {
            "function_name": "orders-fn",
            "function_role_name": "orders-role",
            "retry_policy": {"max_attempts": 3, "backof": {"base_seconds": 5}},
        }
    }
}


@pytest.fixture(scope="module")
def planned(workspace: Workspace, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every case (and the invalid policy) as one run of one `terraform test` invocation."""
    runs = {
        name: {"name": "heal", "package": PACKAGE, **variables}
        for name, variables in {**CASES, "invalid": INVALID}.items()
    }
    return plan_runs(workspace, tmp_path_factory.mktemp("self-healing-plans"), MODULE, runs, DEPENDENCIES)


@pytest.mark.parametrize("name", CASES)
def test_rules_are_the_reference_table(planned: dict[str, Run], name: str) -> None:
    run = planned[name].passed()
    functions = {k: s["function_name"] for k, s in CASES[name]["sources"].items()}
    limits = {functions[k]: limit for k, limit in run.outputs["retry_limits"].items()}
    reference = bus_rules(limits, CASES[name].get("do_not_retry", []))
    expected = {json.dumps(r.pattern, sort_keys=True): (r.outcome, r.reason) for r in reference}

    patterns = {rule: json.loads(p) for rule, p in run.outputs["event_patterns"].items()}
    ours: dict[str, tuple[str | None, str]] = {
        json.dumps(patterns[rule], sort_keys=True): (None, "")
        for rule in run.outputs["retry_rule_names"].values()
    }
    for address, target in run.resources.items():
        if address.startswith("aws_cloudwatch_event_target.exhausted["):
            transformer = target["input_transformer"][0]
            assert transformer["input_paths"] == {"detail": "$.detail"}
            record = json.loads(transformer["input_template"].replace("<detail>", "null"))
            assert list(record) == ["outcome", "reason", "detail"]
            ours[json.dumps(patterns[target["rule"]], sort_keys=True)] = (record["outcome"], record["reason"])
    assert ours == expected


@pytest.mark.parametrize("name", CASES)
def test_python_reads_the_environment_the_module_writes(planned: dict[str, Run], name: str) -> None:
    run = planned[name].passed()
    redrive = RedriveSettings.from_env(run.outputs["redrive_environment"])
    functions = {k: s["function_name"] for k, s in CASES[name]["sources"].items()}
    # The rules' limit of each source is the redrive's own budget for it.
    assert {n: s.max_retries for n, s in redrive.sources.items()} == {
        functions[k]: limit for k, limit in run.outputs["retry_limits"].items()
    }
    assert redrive.redrive_to == CASES[name].get("redrive_to", "function")
    assert redrive.schedule_group == "heal-redrive"
    topics = {s["function_name"]: s.get("topic_arn") for s in CASES[name]["sources"].values()}
    assert {n: s.topic_arn for n, s in redrive.sources.items()} == topics
    EnrichmentSettings.from_env(run.outputs["enrichment_environment"])


def test_an_invalid_source_policy_fails_the_plan_naming_the_field(planned: dict[str, Run]) -> None:
    run = planned["invalid"]
    assert run.status == "error"
    assert any('retry_policy: unknown field "backof"' in e for e in run.errors), run.errors

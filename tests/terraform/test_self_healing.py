"""modules/self-healing renders what the Python side expects: its rules are the reference table of
serverless_retry.selfheal.rules.bus_rules() (patterns, outcomes, reasons), its retry limits are the
redrive's Source.max_retries, the environment it writes is accepted by the functions' settings
parsers, and an invalid per-source policy fails the plan naming the field.

The module reads data sources (account, region), so `terraform console` cannot evaluate it; each case
is a plan-level `terraform test` run on the mock provider instead, whose planned outputs and resources
`terraform test -json -verbose` prints."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from typing import Any

import pytest
from serverless_retry.selfheal.config import EnrichmentSettings, RedriveSettings
from serverless_retry.selfheal.rules import bus_rules

from tests.terraform.conftest import Workspace

MODULE = "modules/self-healing"
# What the module's test runs reference, copied beside it.
DEPENDENCIES = (
    "modules/retry-policy",
    "modules/scheduler",
    "tests/terraform/mocks",
    "tests/terraform/fixtures",
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


@dataclass
class Run:
    status: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)  # address -> planned values
    errors: list[str] = field(default_factory=list)


def _hcl(value: Any) -> str:
    """A JSON value as an HCL expression (HCL accepts JSON's syntax for values; only template markers
    need escaping)."""
    return json.dumps(value).replace("${", "$${").replace("%{", "%%{")


@pytest.fixture(scope="module")
def planned(workspace: Workspace, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every case (and the invalid policy) as one run of one `terraform test` invocation."""
    root = tmp_path_factory.mktemp("self-healing-plans")
    module = root / MODULE
    shutil.copytree(workspace.dir(MODULE), module, symlinks=True, ignore=shutil.ignore_patterns("tests"))
    for relative in DEPENDENCIES:
        shutil.copytree(workspace.dir(relative), root / relative, symlinks=True)
    runs = {**CASES, "invalid": INVALID}
    blocks = ['mock_provider "aws" {\n  source = "../../tests/terraform/mocks"\n}\n']
    for name, variables in runs.items():
        assignments = "\n".join(
            f"    {k} = {_hcl(v)}" for k, v in {"name": "heal", "package": PACKAGE, **variables}.items()
        )
        blocks.append(f'run "{name}" {{\n  command = plan\n  variables {{\n{assignments}\n  }}\n}}\n')
    (module / "tests").mkdir()
    (module / "tests" / "cases.tftest.hcl").write_text("\n".join(blocks))
    result = workspace.terraform.run(["test", "-json", "-verbose"], module, timeout=600)

    out = {name: Run() for name in runs}
    for line in result.stdout.splitlines():
        message = json.loads(line)
        run = out.get(message.get("@testrun", ""))
        if run is None:
            continue
        kind = message.get("type")
        if kind == "test_run" and message["test_run"].get("progress") == "complete":
            run.status = message["test_run"]["status"]
        elif kind == "diagnostic" and message["diagnostic"]["severity"] == "error":
            run.errors.append(
                f"{message['diagnostic']['summary']}: {message['diagnostic'].get('detail', '')}"
            )
        elif kind == "test_plan":
            plan = message["test_plan"]
            run.outputs = {k: v.get("after") for k, v in plan["output_changes"].items()}
            run.resources = {r["address"]: r["change"].get("after") or {} for r in plan["resource_changes"]}
    assert all(run.status for run in out.values()), result.stdout[-3000:] + result.stderr
    return out


def _passed(run: Run) -> Run:
    assert run.status == "pass", "\n".join(run.errors)
    return run


@pytest.mark.parametrize("name", CASES)
def test_rules_are_the_reference_table(planned: dict[str, Run], name: str) -> None:
    run = _passed(planned[name])
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
    run = _passed(planned[name])
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

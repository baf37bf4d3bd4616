"""Plan a module with the ARNs AWS would give its resources, and read what it grants.

On the mock provider no policy is rendered (its ``aws_iam_policy_document`` is a mock), and on the
real provider a first plan renders none either: the documents name ARNs "known after apply", and a
data source that refers to a resource with pending changes is read only at apply. So each case runs
twice in `terraform test`:

1. ``plan`` on the mock provider, to list the resources the case creates and their names;
2. ``apply`` on the real AWS provider, offline (no credentials; every endpoint a closed local port;
   the account from an ``override_data``), with an ``override_resource`` for *every* resource: no
   resource is created (an overridden resource never reaches the provider), each gets the ARN (and
   URL) AWS derives from its name, and the provider's own ``aws_iam_policy_document`` renders every
   policy exactly as an apply would send it to IAM. ``-verbose`` prints the resulting state.

The ARN formats are AWS's (and moto's): the scenarios create the same names on moto, so a call the
code makes names the very ARN the policy was rendered for. Each case is a file of its own, so each
has its own state.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.terraform.conftest import Workspace

REGION = "us-east-1"
ACCOUNT = "123456789012"
PARTITION = "aws"
# Pass 1: names only. Resources' computed attributes stay unknown (as on a first apply, so that no mock
# ARN contradicts a name, e.g. a FIFO queue's); data sources get well-formed values.
FIRST_PASS = f"""
mock_provider "aws" {{
  mock_data "aws_iam_policy_document" {{
    defaults = {{ json = "{{\\"Version\\":\\"2012-10-17\\",\\"Statement\\":[]}}" }}
  }}
  mock_data "aws_caller_identity" {{
    defaults = {{ account_id = "{ACCOUNT}" }}
  }}
  mock_data "aws_region" {{
    defaults = {{ name = "{REGION}" }}
  }}
  mock_data "aws_partition" {{
    defaults = {{ partition = "{PARTITION}", dns_suffix = "amazonaws.com" }}
  }}
}}
"""

# A real provider that cannot reach anything: a call it tried would fail at once, locally.
_CLOSED = "http://127.0.0.1:9"
_SERVICES = (
    "cloudwatch", "cloudwatchlogs", "dynamodb", "events", "iam", "kms", "lambda", "pipes",
    "scheduler", "sns", "sqs", "sts",
)  # fmt: skip
REAL_PROVIDER = (
    'provider "aws" {\n'
    f'  region                      = "{REGION}"\n'
    '  access_key                  = "offline"\n'
    '  secret_key                  = "offline"\n'
    "  skip_credentials_validation = true\n"
    "  skip_requesting_account_id  = true\n"
    "  skip_metadata_api_check     = true\n"
    "  skip_region_validation      = true\n"
    "  max_retries                 = 1\n"
    "  endpoints {\n" + "".join(f'    {s} = "{_CLOSED}"\n' for s in _SERVICES) + "  }\n}\n"
)


def _hcl(value: Any) -> str:
    """A JSON value as an HCL expression (only template markers need escaping)."""
    return json.dumps(value).replace("${", "$${").replace("%{", "%%{")


def computed(rtype: str, values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The attributes AWS computes for a new resource of ``rtype`` from what the plan knows (its
    name), or None for a type no policy refers to."""
    r, a, p = REGION, ACCOUNT, PARTITION
    name = values.get("name")
    if rtype == "aws_sqs_queue":
        url = f"https://sqs.{r}.amazonaws.com/{a}/{name}"
        return {"arn": f"arn:{p}:sqs:{r}:{a}:{name}", "url": url, "id": url}
    if rtype == "aws_iam_role":
        return {"arn": f"arn:{p}:iam::{a}:role/{name}", "id": name, "unique_id": f"AROA{abs(hash(name))}"}
    if rtype == "aws_cloudwatch_log_group":
        return {"arn": f"arn:{p}:logs:{r}:{a}:log-group:{name}", "id": name}
    if rtype == "aws_lambda_function":
        fn = values["function_name"]
        arn = f"arn:{p}:lambda:{r}:{a}:function:{fn}"
        return {
            "arn": arn,
            "id": fn,
            "qualified_arn": f"{arn}:$LATEST",
            "invoke_arn": f"arn:{p}:apigateway:{r}:lambda:path/2015-03-31/functions/{arn}/invocations",
            "version": "$LATEST",
        }
    if rtype == "aws_scheduler_schedule_group":
        return {"arn": f"arn:{p}:scheduler:{r}:{a}:schedule-group/{name}", "id": name}
    if rtype == "aws_cloudwatch_event_bus":
        return {"arn": f"arn:{p}:events:{r}:{a}:event-bus/{name}", "id": name}
    if rtype == "aws_cloudwatch_event_rule":
        bus = values.get("event_bus_name") or "default"
        path = f"{name}" if bus == "default" else f"{bus}/{name}"
        return {"arn": f"arn:{p}:events:{r}:{a}:rule/{path}", "id": path.replace("/", "|")}
    if rtype == "aws_pipes_pipe":
        return {"arn": f"arn:{p}:pipes:{r}:{a}:pipe/{name}", "id": name}
    if rtype == "aws_sns_topic":
        return {"arn": f"arn:{p}:sns:{r}:{a}:{name}", "id": f"arn:{p}:sns:{r}:{a}:{name}"}
    return None


@dataclass
class Planned:
    """What one case would create: every resource (address -> planned values) and the outputs."""

    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)  # address -> resource type
    outputs: dict[str, Any] = field(default_factory=dict)

    def of(self, rtype: str) -> dict[str, dict[str, Any]]:
        return {a: v for a, v in self.resources.items() if self.types[a] == rtype}


@dataclass
class _Run:
    status: str = ""
    errors: list[str] = field(default_factory=list)
    planned: Planned = field(default_factory=Planned)


def _run_files(
    workspace: Workspace, module: str, directory: str, files: Mapping[str, str]
) -> dict[str, _Run]:
    """Run the test files ``files`` (name -> text) in one `terraform test` process. Each file has a
    state of its own: cases that apply must not see each other's resources."""
    tests = workspace.dir(module) / directory
    if tests.exists():
        shutil.rmtree(tests)
    tests.mkdir()
    for name, text in files.items():
        (tests / f"{name}.tftest.hcl").write_text(text, encoding="utf-8")
    result = workspace.terraform.run(
        ["test", "-json", "-verbose", "-no-color", f"-test-directory={directory}"],
        workspace.dir(module),
        timeout=600,
    )
    runs: dict[str, _Run] = {}
    for line in result.stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        name = message.get("@testrun")
        if not name:
            if message.get("@level") == "error" and "diagnostic" in message:
                raise AssertionError(f"terraform test failed: {message['diagnostic']}")
            continue
        run = runs.setdefault(name, _Run())
        kind = message.get("type")
        if kind == "test_run" and message["test_run"].get("progress") == "complete":
            run.status = message["test_run"]["status"]
        elif kind == "diagnostic" and message["diagnostic"].get("severity") == "error":
            d = message["diagnostic"]
            run.errors.append(f"{d.get('summary', '')}: {d.get('detail', '')}")
        elif kind == "test_plan":
            plan = message["test_plan"]
            run.planned.outputs = {k: v.get("after") for k, v in plan.get("output_changes", {}).items()}
            for change in plan.get("resource_changes", []):
                if change.get("mode") == "data":
                    continue
                run.planned.resources[change["address"]] = change["change"].get("after") or {}
                run.planned.types[change["address"]] = change["type"]
        elif kind == "test_state":
            state = message["test_state"]
            run.planned.outputs = {k: v.get("value") for k, v in state.get("outputs", {}).items()}
            modules = [state.get("root_module", {})]
            while modules:
                current = modules.pop()
                modules.extend(current.get("child_modules", []))
                for resource in current.get("resources", []):
                    if resource.get("mode") == "data":
                        continue
                    run.planned.resources[resource["address"]] = resource.get("values") or {}
                    run.planned.types[resource["address"]] = resource["type"]
    if not runs:
        raise AssertionError(f"terraform test printed no run:\n{result.stdout[-3000:]}\n{result.stderr}")
    return runs


def _target(address: str) -> str:
    """An address as an HCL traversal: instance keys stay (module.x[0].aws_y.z["k"])."""
    return address


_MODULE_PREFIX = re.compile(r"^((?:module\.[A-Za-z0-9_-]+(?:\[[^\]]+\])?\.)*)")


def plan_with_arns(
    workspace: Workspace, module: str, cases: Mapping[str, Mapping[str, Any]], directory: str
) -> dict[str, Planned]:
    """Plan ``module`` once per case (name -> variables) with the ARNs AWS would assign, on the real
    provider (offline), and return what each case would create, policies rendered."""

    def block(case: str, command: str, overrides: str = "") -> str:
        assignments = "\n".join(f"    {k} = {_hcl(v)}" for k, v in cases[case].items())
        return f'run "{case}" {{\n  command = {command}\n{overrides}  variables {{\n{assignments}\n  }}\n}}\n'

    first = _run_files(
        workspace, module, directory, {"names": "\n".join([FIRST_PASS, *(block(c, "plan") for c in cases)])}
    )
    for case, run in first.items():
        assert run.status == "pass", f"{module} {case} does not plan:\n" + "\n".join(run.errors)

    overrides: dict[str, str] = {}
    prefixes: set[str] = {""}
    for case, run in first.items():
        blocks = []
        for address, values in run.planned.resources.items():
            prefix = _MODULE_PREFIX.match(address)
            prefixes.add(prefix.group(1) if prefix else "")
            extra = computed(run.planned.types[address], values) or {}
            blocks.append(
                f"  override_resource {{\n    target          = {_target(address)}\n"
                f"    values = {_hcl(extra)}\n  }}\n"
            )
        overrides[case] = "".join(blocks)
    identity = "".join(
        f"override_data {{\n  target = {p}data.aws_caller_identity.current\n"
        f'  values = {{ account_id = "{ACCOUNT}" }}\n}}\n'
        for p in sorted(prefixes)
    )
    second = _run_files(
        workspace,
        module,
        directory,
        {case: REAL_PROVIDER + identity + block(case, "apply", overrides[case]) for case in cases},
    )
    out: dict[str, Planned] = {}
    for case in cases:
        run = second[case]
        assert run.status == "pass", f"{module} {case} does not plan with ARNs:\n" + "\n".join(run.errors)
        out[case] = run.planned
    return out

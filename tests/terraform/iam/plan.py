"""Plan modules with the ARNs AWS would give their resources, and read what they grant.

On the mock provider no policy is rendered (its ``aws_iam_policy_document`` is a mock), and on the
real provider a first plan renders none either: the documents name ARNs "known after apply", and a
data source that refers to a resource with pending changes is read only at apply. So the cases, each
an instance of its module in one generated root, run twice in `terraform test`:

1. ``plan`` on the mock provider, to list the resources and their names;
2. ``apply`` on the real AWS provider, offline (no credentials; AWS_ENDPOINT_URL a closed local port;
   the account from an ``override_data``), with an ``override_resource`` for *every* resource: none is
   created (an overridden resource never reaches the provider), each gets the ARN (and URL) AWS derives
   from its name, and the provider's own ``aws_iam_policy_document`` renders every policy exactly as
   an apply would send it to IAM. ``-verbose`` prints the resulting state.

The ARN formats are AWS's (and moto's): the scenarios create the same names on moto, so a call the
code makes names the very ARN the policy was rendered for.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.terraform.conftest import Workspace, attached_provider, init
from tests.terraform.tftest_runs import hcl_literal

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

# A real provider that cannot reach anything: a call it tried would fail at once, locally. Every
# service's endpoint is the closed port through AWS_ENDPOINT_URL in the provider's environment, not an
# endpoints block, which AWS provider 5.x checks at ~2 s of CPU each time it is configured.
_CLOSED = "http://127.0.0.1:9"
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
    "}\n"
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
    if rtype == "aws_dynamodb_table":
        return {"arn": f"arn:{p}:dynamodb:{r}:{a}:table/{name}", "id": name}
    if rtype == "aws_s3_bucket":
        bucket = values["bucket"]
        return {"arn": f"arn:{p}:s3:::{bucket}", "id": bucket, "bucket": bucket}
    if rtype == "aws_sns_topic":
        return {"arn": f"arn:{p}:sns:{r}:{a}:{name}", "id": f"arn:{p}:sns:{r}:{a}:{name}"}
    return None


@dataclass
class Planned:
    """What one case would create: every resource (address -> planned values)."""

    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)  # address -> resource type

    def of(self, rtype: str) -> dict[str, dict[str, Any]]:
        return {a: v for a, v in self.resources.items() if self.types[a] == rtype}


@dataclass
class _Run:
    status: str = ""
    errors: list[str] = field(default_factory=list)
    planned: Planned = field(default_factory=Planned)


def _terraform_test(
    root: Path, workspace: Workspace, text: str, extra_env: Mapping[str, str] | None = None
) -> _Run:
    """One run block (``text`` is the whole test file) in one `terraform test` process."""
    tests = root / "tests"
    if tests.exists():
        shutil.rmtree(tests)
    tests.mkdir()
    (tests / "case.tftest.hcl").write_text(text, encoding="utf-8")
    run = _Run()
    seen_state = False

    def done(line: str) -> bool:
        """Nothing was created (every resource is overridden, never sent to the provider), so the
        file's teardown, a destroy plan and apply of every instance (~13 s, a third of the process's
        CPU), would clean up nothing: once the run passed and its state is printed, stop."""
        nonlocal seen_state
        try:
            message = json.loads(line)
        except ValueError:
            return False
        kind = message.get("type")
        if kind == "test_run" and message["test_run"].get("progress") == "complete":
            run.status = message["test_run"]["status"]
        seen_state = seen_state or kind == "test_state"
        teardown = kind == "test_file" and message["test_file"].get("progress") == "teardown"
        return teardown and seen_state and run.status == "pass"

    stdout, _ = workspace.terraform.run_until(
        ["test", "-json", "-verbose", "-no-color"], root, done, timeout=900, extra_env=extra_env
    )
    for line in stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        kind = message.get("type")
        if kind == "test_run" and message["test_run"].get("progress") == "complete":
            run.status = message["test_run"]["status"]
        elif kind == "diagnostic" and message["diagnostic"].get("severity") == "error":
            d = message["diagnostic"]
            run.errors.append(f"{d.get('summary', '')}: {d.get('detail', '')}")
        elif kind == "test_plan":
            for change in message["test_plan"].get("resource_changes", []):
                if change.get("mode") != "data":
                    run.planned.resources[change["address"]] = change["change"].get("after") or {}
                    run.planned.types[change["address"]] = change["type"]
        elif kind == "test_state":
            modules = [message["test_state"].get("root_module", {})]
            while modules:
                current = modules.pop()
                modules.extend(current.get("child_modules", []))
                for resource in current.get("resources", []):
                    if resource.get("mode") != "data":
                        run.planned.resources[resource["address"]] = resource.get("values") or {}
                        run.planned.types[resource["address"]] = resource["type"]
    if not run.status:
        raise AssertionError(f"terraform test printed no run:\n{stdout[-3000:]}")
    assert run.status == "pass", "\n".join(run.errors) or stdout[-3000:]
    return run


def _as_module(workspace: Workspace, directory: str) -> str:
    """``directory`` as a module source: an example (a root with its own provider block, which a
    module call may not configure under the test's providers) is used from a copy without it, beside
    the original so its relative module sources still resolve."""
    source = workspace.root / directory
    if not (source / "providers.tf").exists():
        return directory
    copy = source.with_name(f"{source.name}-as-module")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(
        source, copy, ignore=shutil.ignore_patterns("providers.tf", ".terraform*", "terraform.tfstate*")
    )
    return str(copy.relative_to(workspace.root))


_MODULE_PREFIX = re.compile(r"^((?:module\.[A-Za-z0-9_-]+(?:\[[^\]]+\])?\.)*)")


def plan_with_arns(
    workspace: Workspace, cases: Mapping[str, tuple[str, Mapping[str, Any]]]
) -> dict[str, Planned]:
    """Plan every case (name -> (module directory, its variables)) with the ARNs AWS would assign, on
    the real provider (offline), and return what each case would create, policies rendered.

    The cases are instances of their modules in one generated root (``module "<case>"``), planned and
    "applied" together: `terraform test` starts the AWS provider for every step of every run, and that
    start, not the graph, is what an apply of a module costs here. Cases may share names: nothing is
    created, and each case's resources are read back by its module address."""
    root = workspace.root / "iam-root"
    root.mkdir(exist_ok=True)
    blocks = ['terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws" }\n  }\n}\n']
    for case, (directory, variables) in cases.items():
        assignments = "".join(f"  {k} = {hcl_literal(v)}\n" for k, v in variables.items())
        blocks.append(
            f'module "{case}" {{\n  source = "../{_as_module(workspace, directory)}"\n{assignments}}}\n'
        )
    (root / "main.tf").write_text("\n".join(blocks), encoding="utf-8")
    initialised = init(workspace.terraform, root, "-backend=false")
    assert initialised.returncode == 0, initialised.stdout + initialised.stderr

    names = _terraform_test(root, workspace, f'{FIRST_PASS}\nrun "names" {{\n  command = plan\n}}\n').planned
    overrides: list[str] = []
    prefixes: set[str] = set()
    for address, values in names.resources.items():
        prefix = _MODULE_PREFIX.match(address)
        prefixes.add(prefix.group(1) if prefix else "")
        extra = computed(names.types[address], values) or {}
        overrides.append(
            f"  override_resource {{\n    target = {address}\n    values = {_hcl(extra)}\n  }}\n"
        )
    identity = "".join(
        f'override_data {{\n  target = {p}data.aws_caller_identity.current\n  values = {{ account_id = "{ACCOUNT}" }}\n}}\n'
        for p in sorted(prefixes)
    )
    # The real provider, configured once (offline): one of its own rather than one per step.
    with attached_provider(root, {**workspace.terraform.env, "AWS_ENDPOINT_URL": _CLOSED}) as attached:
        applied = _terraform_test(
            root,
            workspace,
            f'{REAL_PROVIDER}{identity}run "arns" {{\n  command = apply\n{"".join(overrides)}}}\n',
            attached,
        ).planned
    out: dict[str, Planned] = {}
    for case in cases:
        mine = f"module.{case}."
        planned = Planned()
        for address, values in applied.resources.items():
            if address.startswith(mine):
                planned.resources[address] = values
                planned.types[address] = applied.types[address]
        out[case] = planned
    return out

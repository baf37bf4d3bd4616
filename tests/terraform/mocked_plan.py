"""Plan a Terraform directory on the mock provider and read what it would create.

`terraform console` cannot evaluate a configuration that reads data sources (account, region), so
each case becomes one plan-level run of a generated `terraform test` file, and `terraform test -json
-verbose` prints every run's planned outputs and resources. All cases of a directory run in one
terraform invocation.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.terraform.conftest import Workspace

MOCKS = "tests/terraform/mocks"


@dataclass
class Run:
    status: str = ""  # pass | fail | error
    outputs: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)  # address -> planned values
    errors: list[str] = field(default_factory=list)

    def passed(self) -> Run:
        assert self.status == "pass", "\n".join(self.errors) or self.status
        return self


def _hcl(value: Any) -> str:
    """A JSON value as an HCL expression (HCL reads JSON's value syntax; only template markers need
    escaping)."""
    return json.dumps(value).replace("${", "$${").replace("%{", "%%{")


def plan_runs(
    workspace: Workspace,
    root: Path,
    directory: str,
    runs: Mapping[str, Mapping[str, Any]],
    copies: Iterable[str],
) -> dict[str, Run]:
    """Copy ``directory`` and what it references (``copies``, workspace-relative) under ``root``, plan
    each of ``runs`` (name -> variables) and return what each run planned."""
    target = root / directory
    shutil.copytree(workspace.dir(directory), target, symlinks=True, ignore=shutil.ignore_patterns("tests"))
    for relative in {*copies, MOCKS, "tests/terraform/fixtures"}:
        if not (root / relative).exists():
            shutil.copytree(workspace.dir(relative), root / relative, symlinks=True)
    mocks = "/".join([".."] * len(Path(directory).parts) + [MOCKS])
    blocks = [f'mock_provider "aws" {{\n  source = "{mocks}"\n}}\n']
    for name, variables in runs.items():
        assignments = "\n".join(f"    {k} = {_hcl(v)}" for k, v in variables.items())
        blocks.append(f'run "{name}" {{\n  command = plan\n  variables {{\n{assignments}\n  }}\n}}\n')
    (target / "tests").mkdir()
    (target / "tests" / "cases.tftest.hcl").write_text("\n".join(blocks))
    result = workspace.terraform.run(["test", "-json", "-verbose"], target, timeout=600)

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
            diagnostic = message["diagnostic"]
            run.errors.append(f"{diagnostic['summary']}: {diagnostic.get('detail', '')}")
        elif kind == "test_plan":
            plan = message["test_plan"]
            run.outputs = {k: v.get("after") for k, v in plan["output_changes"].items()}
            run.resources = {r["address"]: r["change"].get("after") or {} for r in plan["resource_changes"]}
    assert all(run.status for run in out.values()), result.stdout[-3000:] + result.stderr
    return out

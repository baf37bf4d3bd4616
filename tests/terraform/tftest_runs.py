"""Many plans of one module in ONE `terraform test` process, with their outputs and error messages.

A `terraform console` or `plan` per case would start Terraform (and the provider) once per case; a
generated .tftest.hcl with one run block per case starts it once. Run with ``-json -verbose``, the
test command prints each run's planned outputs (``test_plan``) and each failed run's diagnostics, so
a case may be expected to pass (read its outputs) or to fail (read its messages): expect_failures
would only say *that* it failed, not which field the message blames.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.terraform.conftest import Workspace

_RUN_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass
class RunResult:
    status: str = "unknown"  # pass | fail | error | skip (an earlier run of its file failed)
    outputs: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # summary + detail of each error diagnostic

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def hcl_literal(value: object) -> str:
    """An HCL expression for a JSON value: ``jsondecode("<json>")``, so any shape (lists of mixed
    types, nulls, non-ASCII) arrives exactly as a user's ``jsondecode(file(...))`` would pass it."""
    text = json.dumps(json.dumps(value, ensure_ascii=True))  # a JSON string literal is an HCL one
    return "jsondecode(" + text.replace("${", "$${").replace("%{", "%%{") + ")"


def run_name(case: str) -> str:
    """A run block name for a case name (letters, digits and underscores)."""
    name = re.sub(r"[^a-z0-9_]", "_", case.lower())
    assert _RUN_NAME.match(name), case
    return name


def plan_cases(
    workspace: Workspace,
    module: str,
    cases: Mapping[str, Mapping[str, object]],
    *,
    expect_failures: Mapping[str, Sequence[str]] | None = None,
    isolate: Iterable[str] = (),
    preamble: str = "",
    directory: str = "generated-tests",
    timeout: float = 300,
) -> dict[str, RunResult]:
    """Plan ``module`` once per case (its variables) in one `terraform test` process.

    After a run fails with an error, `terraform test` skips the rest of its file. So the cases share
    files where that cannot happen: the ones whose failure is expected (``expect_failures``: the run
    passes, and its planned outputs are still printed), and the ones expected to pass. A case that
    is meant to fail with an error we read (``isolate``: e.g. a failure inside a nested module, which
    expect_failures cannot name) gets a file of its own. ``preamble`` starts every file (mock
    providers, overrides). The files live in their own test directory of the workspace copy, so the
    module's own `terraform test` (tests/) never sees them.
    """
    expect_failures = expect_failures or {}
    isolated = set(isolate)
    names = {run_name(case): case for case in cases}
    assert len(names) == len(cases), "case names must stay distinct as run names"
    files: dict[str, list[str]] = {}
    for name, case in names.items():
        variables = "\n".join(f"    {k} = {hcl_literal(v)}" for k, v in cases[case].items())
        expected = expect_failures.get(case, ())
        expect = f"\n  expect_failures = [{', '.join(expected)}]\n" if expected else ""
        run = f'run "{name}" {{\n  command = plan\n\n  variables {{\n{variables}\n  }}\n{expect}}}\n'
        group = name if case in isolated else ("expected-" + "-".join(expected) if expected else "plans")
        files.setdefault(re.sub(r"[^A-Za-z0-9_-]", "_", group), []).append(run)
    tests = workspace.dir(module) / directory
    if tests.exists():
        shutil.rmtree(tests)
    tests.mkdir()
    for group, runs in files.items():
        (tests / f"{group}.tftest.hcl").write_text("\n".join([preamble, *runs]), encoding="utf-8")

    result = workspace.terraform.run(
        ["test", "-json", "-verbose", "-no-color", f"-test-directory={directory}"],
        workspace.dir(module),
        timeout=timeout,
    )
    results: dict[str, RunResult] = {case: RunResult() for case in cases}
    for line in result.stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        run = message.get("@testrun")
        if run not in names:
            if message.get("@level") == "error" and "diagnostic" in message:
                raise AssertionError(f"terraform test failed outside any run: {_text(message)}")
            continue
        target = results[names[run]]
        kind = message.get("type")
        if kind == "test_run" and message["test_run"].get("progress") == "complete":
            target.status = message["test_run"]["status"]
        elif kind == "test_plan":
            changes = message["test_plan"].get("output_changes", {})
            target.outputs = {k: v.get("after") for k, v in changes.items()}
        elif kind == "diagnostic" and message["diagnostic"].get("severity") == "error":
            target.errors.append(_text(message))
    missing = [case for case, r in results.items() if r.status == "unknown"]
    assert not missing, f"no result for {missing}:\n{result.stdout[-4000:]}\n{result.stderr}"
    return results


def _text(message: Mapping[str, Any]) -> str:
    diagnostic = message["diagnostic"]
    return f"{diagnostic.get('summary', '')}\n{diagnostic.get('detail', '')}"

"""fmt, validate, checkov and README drift: the checks that need no plan."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.terraform.checkov import checkov_executable, run_checkov
from tests.terraform.conftest import EXAMPLES, MODULES, ROOT, TF_DIRS, Runs, Terraform, Workspace

CHECKOV_SKIP = re.compile(r"#\s*checkov:skip=([A-Z0-9_]+)(?::(.*))?")


def test_fmt_check(terraform: Terraform) -> None:
    result = terraform.run(
        ["fmt", "-check", "-recursive", "-diff", "-no-color", "modules", "examples", "tests/terraform"], ROOT
    )
    assert result.returncode == 0, f"terraform fmt would change files:\n{result.stdout}{result.stderr}"


# The examples: each module is validated by its own `terraform test` (test_native.py), which
# validates the configuration before any run and is checked there for warnings too; a validate
# more would cost each module ~1 s of CPU for nothing new.
VALIDATED = EXAMPLES


# Session-scoped: under xdist its tests spread across workers (see tests/conftest.py).
@pytest.fixture(scope="session")
def validations(workspace: Workspace) -> Iterator[Runs[str, dict[str, Any]]]:
    def validate(relative: str) -> dict[str, Any]:
        result = workspace.terraform.run(["validate", "-json", "-no-color"], workspace.dir(relative))
        report: dict[str, Any] = json.loads(result.stdout)
        return report

    runs = Runs(validate, VALIDATED)
    yield runs
    runs.close()


@pytest.mark.parametrize("relative", VALIDATED)
def test_validate(validations: Runs[str, dict[str, Any]], relative: str) -> None:
    report = validations[relative]
    assert report["valid"] is True, json.dumps(report["diagnostics"], indent=2)
    warnings = [d for d in report["diagnostics"] if d["severity"] == "warning"]
    assert warnings == [], json.dumps(warnings, indent=2)


def test_checkov_reports_no_failed_checks() -> None:
    checkov = checkov_executable()
    if checkov is None:
        pytest.skip("checkov is not installed (./build.sh test installs it into .venv-checkov)")
    reports = run_checkov(
        checkov, ["--directory", "modules", "--framework", "terraform", "--skip-path", r"\.terraform"], ROOT
    )
    failed = [c for r in reports for c in r.get("results", {}).get("failed_checks", [])]
    summary = [r["summary"] for r in reports]
    assert not failed, "\n".join(
        f"{c['check_id']} {c['check_name']}: {c['resource']} ({c['file_path']})" for c in failed
    )
    assert all(s["parsing_errors"] == 0 for s in summary), summary
    assert sum(s["passed"] for s in summary) > 0, "checkov checked nothing"


def test_every_checkov_skip_is_justified() -> None:
    skips = [
        (path, m)
        for path in sorted((ROOT / "modules").rglob("*.tf"))
        if ".terraform" not in path.parts
        for m in CHECKOV_SKIP.finditer(path.read_text(encoding="utf-8"))
    ]
    assert skips, "expected the justified skips of the consumer module"
    unjustified = [
        f"{p.relative_to(ROOT)}: {m.group(0)}" for p, m in skips if len((m.group(2) or "").strip()) < 30
    ]
    assert not unjustified, "every #checkov:skip needs a reason after the check id:\n" + "\n".join(
        unjustified
    )


def test_readme_tables_match_the_tf_files() -> None:
    result = subprocess.run(
        [sys.executable, "scripts/tfdocs.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr + "\nrun: python scripts/tfdocs.py"


@pytest.mark.parametrize("relative", TF_DIRS)
def test_readme_has_generated_tables(relative: str) -> None:
    text = (ROOT / relative / "README.md").read_text(encoding="utf-8")
    for heading in ("<!-- BEGIN_TF_DOCS -->", "## Inputs", "## Outputs"):
        assert heading in text
    if relative in MODULES:
        assert "```hcl" in text, "a module README starts with a usage block"

"""fmt, validate and README drift: the checks that need no plan (checkov: test_modules_checkov.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.terraform.conftest import EXAMPLES, MODULES, ROOT, TF_DIRS, Runs, Terraform, Workspace


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

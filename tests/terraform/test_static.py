"""fmt and README drift: the checks that need no plan (validate: test_examples_validate.py; checkov:
test_modules_checkov.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.terraform.conftest import MODULES, ROOT, TF_DIRS, Terraform


def test_fmt_check(terraform: Terraform) -> None:
    result = terraform.run(
        ["fmt", "-check", "-recursive", "-diff", "-no-color", "modules", "examples", "tests/terraform"], ROOT
    )
    assert result.returncode == 0, f"terraform fmt would change files:\n{result.stdout}{result.stderr}"


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

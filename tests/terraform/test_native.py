"""Each module's native `terraform test` files (plan-level, mock provider)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.terraform.conftest import MODULES, Runs, Workspace


# Session-scoped: under xdist its tests spread across workers (see tests/conftest.py).
@pytest.fixture(scope="session")
def native_runs(workspace: Workspace) -> Iterator[Runs[str, subprocess.CompletedProcess[str]]]:
    runs = Runs(
        lambda m: workspace.terraform.run(["test", "-no-color"], workspace.dir(m), timeout=600), MODULES
    )
    yield runs
    runs.close()


@pytest.mark.parametrize("module", MODULES)
def test_terraform_test_passes(native_runs: Runs[str, subprocess.CompletedProcess[str]], module: str) -> None:
    result = native_runs[module]
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert ", 0 failed" in result.stdout, result.stdout

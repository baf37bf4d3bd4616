"""Each module's native `terraform test` files (plan-level, mock provider), run two at a time."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from tests.terraform.conftest import MODULES, PARALLEL, Workspace


@pytest.fixture(scope="module")
def native_runs(workspace: Workspace) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """Start every module's `terraform test` at once; each test below waits for its own."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        yield {
            m: pool.submit(workspace.terraform.run, ["test", "-no-color"], workspace.dir(m), timeout=600)
            for m in MODULES
        }


@pytest.mark.parametrize("module", MODULES)
def test_terraform_test_passes(
    native_runs: dict[str, Future[subprocess.CompletedProcess[str]]], module: str
) -> None:
    result = native_runs[module].result()
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert ", 0 failed" in result.stdout, result.stdout

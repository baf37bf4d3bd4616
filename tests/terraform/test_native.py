"""Each module's native `terraform test` files (plan-level, mock provider).

The slow modules' files run in parts (tests/terraform/tftest_split.py), one test per part, so that
the parts run side by side: across xdist workers, or in ``Runs``' pool in a single process.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator

import pytest

from tests.terraform.conftest import MODULES, ROOT, Runs, Workspace
from tests.terraform.tftest_split import split, top_level_blocks

# Parts per module, for the ones whose runs take long. With the shared provider a `terraform test`
# process costs ~1.2 s of CPU to start and a mocked run ~0.25 s (consumer) to ~0.8 s (scheduled-
# retry), measured on 2 cores: the 16 parts of before cost ~7 s of CPU more, and the suite is CPU-bound.
PARTS = {
    "modules/consumer": 2,
    "modules/self-healing": 2,
}
CASES = [
    (module, k)
    for module in MODULES
    for k in range(len(split(ROOT / module / "tests", PARTS.get(module, 1))))
]


# Session-scoped: under xdist its tests spread across workers (see tests/conftest.py).
@pytest.fixture(scope="session")
def native_runs(
    workspace: Workspace,
) -> Iterator[Runs[tuple[str, int], tuple[int, subprocess.CompletedProcess[str]]]]:
    def run(case: tuple[str, int]) -> tuple[int, subprocess.CompletedProcess[str]]:
        module, k = case
        parts = split(workspace.dir(module) / "tests", PARTS.get(module, 1))
        part = parts[k]
        # One part is the tests directory itself, where `terraform init` installed the modules that run
        # blocks call (`module { source = ... }`, stream-retry's): in a copy they are "not installed".
        directory = "tests"
        if len(parts) > 1:
            directory = f"tests-part-{k}"
            part.write(workspace.dir(module) / directory)
        result = workspace.terraform.run(
            ["test", "-no-color", f"-test-directory={directory}"], workspace.dir(module), timeout=600
        )
        return part.runs, result

    runs = Runs(run, CASES)
    yield runs
    runs.close()


@pytest.mark.parametrize(("module", "part"), CASES, ids=[f"{m}-part{k + 1}" for m, k in CASES])
def test_terraform_test_passes(
    native_runs: Runs[tuple[str, int], tuple[int, subprocess.CompletedProcess[str]]], module: str, part: int
) -> None:
    count, result = native_runs[(module, part)]
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    # Every run block of the part ran and passed: the parts of a module together run all of its.
    assert f"Success! {count} passed, 0 failed." in result.stdout, result.stdout
    # `terraform test` validates the module first: no warning from that either (no separate validate).
    assert "Warning:" not in result.stdout + result.stderr, result.stdout + result.stderr


def test_the_parts_hold_every_run_block_once_with_its_files_other_blocks() -> None:
    header = re.compile(r'^run\s+"([^"]+)"', re.MULTILINE)
    for module in MODULES:
        tests = ROOT / module / "tests"
        files = {path.name: path.read_text(encoding="utf-8") for path in tests.glob("*.tftest.hcl")}
        parts = split(tests, PARTS.get(module, 1))
        runs = sorted((name, run) for name, text in files.items() for run in header.findall(text))
        in_parts = sorted(
            (name, run) for p in parts for name, text in p.files.items() for run in header.findall(text)
        )
        assert in_parts == runs, module
        assert sum(p.runs for p in parts) == len(runs)
        for p in parts:
            for name, text in p.files.items():
                for block in top_level_blocks(files[name]):
                    if not header.search(block):
                        assert block in text, (module, name, block)

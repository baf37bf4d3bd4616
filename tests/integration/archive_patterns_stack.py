"""The archive-patterns stack (tests/integration/fixtures/archive-patterns): the three patterns' modules,
each with an archive on its terminal queues, applied once per test run in the background like the
example stacks (tests/terraform/stack.py, ``StackSpec.applier``), for
tests/integration/test_archive_past_retention.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.terraform.conftest import ROOT, Terraform
from tests.terraform.stack import SharedStack, StackSpec

FIXTURE = "tests/integration/fixtures/archive-patterns"
# The apply waits mostly on the provider's SQS and Lambda waiters, which sleep: more of them at once
# than Terraform's default 10. The plan SharedStack makes after it is not looked at (the terraform
# tier checks the modules' second plans): no refresh.
FASTER = {"TF_CLI_ARGS_apply": "-parallelism=30", "TF_CLI_ARGS_plan": "-parallelism=30 -refresh=false"}


class ArchivePatternsStack(SharedStack):
    """The fixture root, with one zip holding serverless_retry, its handlers and the native example's."""

    def __init__(self, spec: StackSpec, terraform: Terraform, tmp: Path, publish: Path | None = None) -> None:
        # Its own Terraform: the registry's is shared by every stack and must not get these arguments.
        faster = Terraform({**terraform.env, **FASTER}, niced=terraform.niced)
        super().__init__(spec, faster, tmp, publish)

    def _package(self) -> Path:
        out = self._tmp / "archive-patterns.zip"
        extras = [f"{FIXTURE}/src/archive_patterns", "examples/native-retry/src/native_orders"]
        subprocess.run(
            [sys.executable, "scripts/build_package.py", *(f"--extra={e}" for e in extras), "--out", str(out)],
            cwd=ROOT, check=True, timeout=600, capture_output=True,
        )  # fmt: skip
        return out

"""The example applied to a fresh local emulator, in a background thread.

Applying to moto takes ~90 s, nearly all of it the AWS provider's SQS attribute waiters sleeping, so
the tier starts it first and runs its CPU-bound tests meanwhile; the apply tests wait for it last.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from serverless_retry_tools.local.emulator import Emulator

from tests.terraform.conftest import ROOT, Terraform, ignore_state
from tests.terraform.conftest import init as terraform_init

EXAMPLE = "examples/scheduled-retry"
FUNCTION_TIMEOUT = 5  # the visibility timeout becomes 30 s


@dataclass(frozen=True)
class Applied:
    emulator: Emulator
    directory: Path
    outputs: dict[str, Any]
    second_plan: subprocess.CompletedProcess[str]

    def client(self, service: str) -> Any:
        return boto3.client(service, **self.emulator.client_kwargs())


class ExampleStack:
    def __init__(self, terraform: Terraform, tmp: Path) -> None:
        self._terraform = terraform
        self._tmp = tmp
        self._emulator = Emulator(log_path=tmp / "emulator.log")
        self._thread: threading.Thread | None = None
        self._applied: Applied | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="example-apply", daemon=True)
                self._thread.start()

    def result(self, timeout: float = 900) -> Applied:
        self.start()
        assert self._thread is not None
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"applying {EXAMPLE} took longer than {timeout:.0f} s")
        if self._error is not None:
            raise AssertionError(f"applying {EXAMPLE} failed: {self._error}") from self._error
        assert self._applied is not None
        return self._applied

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join(900)
        self._emulator.stop()

    def _package(self) -> Path:
        """The example's zip: the one ./build.sh package made, else a fresh build."""
        built = ROOT / "dist" / "examples" / "scheduled-retry.zip"
        if built.is_file():
            return built
        out = self._tmp / "scheduled-retry.zip"
        subprocess.run(
            [sys.executable, "scripts/build_package.py", "--extra", f"{EXAMPLE}/src/orders_example", "--out", str(out)],
            cwd=ROOT, check=True, timeout=600, capture_output=True,
        )  # fmt: skip
        return out

    def _run(self) -> None:
        try:
            self._applied = self._apply()
        except BaseException as exc:  # reported to every test that asks for the stack
            self._error = exc

    def _apply(self) -> Applied:
        for relative in ("modules", "examples"):
            shutil.copytree(ROOT / relative, self._tmp / relative, ignore=ignore_state)
        directory = self._tmp / EXAMPLE
        package = self._package()
        self._emulator.start()
        env = self._emulator.env()
        tf_vars = [
            f"-var=aws_endpoint_url={self._emulator.url}",
            f"-var=function_timeout={FUNCTION_TIMEOUT}",
            f"-var=package={package}",
        ]
        run = self._terraform.run
        init = terraform_init(self._terraform, directory)
        if init.returncode != 0:
            raise RuntimeError(f"terraform init:\n{init.stdout}\n{init.stderr}")
        apply = run(["apply", "-auto-approve", "-no-color", *tf_vars], directory, extra_env=env, timeout=600)
        if apply.returncode != 0:
            raise RuntimeError(
                f"terraform apply:\n{apply.stdout}\n{apply.stderr}\n(log: {self._tmp / 'emulator.log'})"
            )
        second_plan = run(
            ["plan", "-detailed-exitcode", "-no-color", *tf_vars], directory, extra_env=env, timeout=300
        )
        output = run(["output", "-json"], directory, extra_env=env)
        outputs = {k: v["value"] for k, v in json.loads(output.stdout).items()}
        return Applied(self._emulator, directory, outputs, second_plan)

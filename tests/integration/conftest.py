"""One emulator and one apply of examples/scheduled-retry for the whole session (the AWS provider
spends ~25 s on each SQS queue and policy, so applying per test would take many minutes)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from serverless_retry_tools.local.emulator import Emulator
from serverless_retry_tools.local.terraform import Terraform, cli_environment

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "scheduled-retry"
EXAMPLE_ZIP = REPO / "dist" / "examples" / "scheduled-retry.zip"
FUNCTION_TIMEOUT = 3  # the queue's visibility timeout is 6 x this: failed batches come back in 18 s


@dataclass
class Stack:
    emulator: Emulator
    terraform: Terraform
    variables: dict[str, Any]
    outputs: dict[str, Any]


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if shutil.which("terraform") is None:
        pytest.skip("terraform is not on PATH")
    if not EXAMPLE_ZIP.is_file():
        pytest.skip(f"{EXAMPLE_ZIP} is missing: run ./build.sh package (./build.sh test does)")
    work = tmp_path_factory.mktemp("example-stack")
    with Emulator(log_path=work / "emulator.log") as emulator:
        base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        terraform = Terraform(
            EXAMPLE, work / "terraform", cli_environment(work / "terraform", {**base, **emulator.env()})
        )
        # A private copy: a ./build.sh package elsewhere must not change the zip under an apply.
        package = work / "scheduled-retry.zip"
        shutil.copyfile(EXAMPLE_ZIP, package)
        variables: dict[str, Any] = {
            "aws_endpoint_url": emulator.url,
            "function_timeout": FUNCTION_TIMEOUT,
            "package": str(package),
        }
        terraform.init()
        terraform.apply(variables)
        # No destroy at the end: the emulator and everything in it go away with the session, and
        # the demo exercises destroy.
        yield Stack(emulator, terraform, variables, terraform.outputs())

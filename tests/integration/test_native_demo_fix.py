"""``./build.sh demo native-retry`` deploys its fix through the documented sandbox path: it writes the
ready file ``serverless-retry local`` writes and runs ``serverless-retry local apply`` against it, the
command docs/patterns/native-retry.md shows. Here on a root of built-ins (seconds, not minutes),
with the demo's own fix step (:func:`serverless_retry_tools.local.demos.native_demo.fix_through_sandbox`)."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest
from serverless_retry_tools.local.demos.demo_frame import ExampleRun, ProgressLines
from serverless_retry_tools.local.demos.native_demo import FIX, fix_command, fix_through_sandbox
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.sandbox.terraform import Terraform, emulator_environment

REPO = Path(__file__).resolve().parents[2]
ROOT = Path(__file__).resolve().parent / "fixtures" / "reapply-root"


def test_the_docs_show_the_fix_step_the_demo_runs() -> None:
    command = " ".join(fix_command(Path("build/ready.json")))
    assert command == "serverless-retry local apply --ready-file build/ready.json --var release=fixed"
    for page in ("docs/patterns/native-retry.md", "docs/local-emulator.md"):
        assert command in (REPO / page).read_text(), page


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_the_demo_fix_step_reapplies_through_local_apply(tmp_path: Path) -> None:
    stream = io.StringIO()
    with Emulator(log_path=tmp_path / "emulator.log") as emulator:
        tf = Terraform(
            ROOT, tmp_path / "terraform", emulator_environment(tmp_path / "terraform", emulator.env())
        )
        variables = {"aws_endpoint_url": emulator.url, "release": "buggy"}
        tf.init()
        tf.apply(variables)
        run = ExampleRun(emulator, tf, variables, tf.outputs(), tmp_path, ProgressLines(stream))
        ready = tmp_path / "ready.json"
        deploy_fix = fix_through_sandbox(run, ready)
        info = json.loads(ready.read_text())
        assert (info["pid"], info["state"], info["endpoint"]) == (os.getpid(), str(tf.state), emulator.url)
        deploy_fix()
        assert tf.outputs() == {"release": "fixed"}  # the demo's own state, changed by the command
        assert run.variables == {**variables, **FIX}  # what the destroy will be given
        assert json.loads(ready.read_text())["outputs"] == {"release": "fixed"}
        tf.destroy(run.variables, refresh=False)
    printed = stream.getvalue()
    assert f"$ serverless-retry local apply --ready-file {ready} --var release=fixed" in printed
    assert f"applied {ROOT} to the sandbox at " in printed

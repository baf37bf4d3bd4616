"""``serverless-retry local apply``: a changed root re-applied to a running ``serverless-retry local``
(the fix step of native retry), with nothing but the sandbox's ready file to go on."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.terraform.conftest import terraform_env

ROOT = Path(__file__).resolve().parent / "fixtures" / "reapply-root"
CLI = [sys.executable, "-m", "serverless_retry_tools.cli"]

pytestmark = pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")


def _state_resources(path: Path) -> list[dict[str, Any]]:
    resources: list[dict[str, Any]] = json.loads(path.read_text())["resources"]
    return resources


def _bare_env() -> dict[str, str]:
    """The caller's environment without any Terraform or AWS setting: whatever 'local apply' needs
    must come from the ready file."""
    return {k: v for k, v in terraform_env().items() if not k.startswith(("TF_", "AWS_"))}


def test_local_apply_reapplies_a_changed_root_to_the_running_sandbox(tmp_path: Path) -> None:
    ready, work = tmp_path / "ready.json", tmp_path / "work"
    sandbox = subprocess.Popen(
        [*CLI, "local", "--root", str(ROOT), "--var", "release=buggy", "--ready-file", str(ready),
         "--work-dir", str(work), "--quiet"],
        env=terraform_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not ready.exists() and sandbox.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ready.exists(), sandbox.stdout.read() if sandbox.poll() is not None and sandbox.stdout else ""
        info = json.loads(ready.read_text())
        assert info["endpoint"].startswith("http://127.0.0.1:")
        assert info["region"] == "us-east-1"
        assert info["outputs"] == {"release": "buggy"}
        state = Path(info["state"])
        assert state == Path(info["terraform"]["state"])
        assert state.is_file()
        assert info["terraform"]["root"] == str(ROOT)
        assert info["terraform"]["variables"] == {"release": "buggy", "aws_endpoint_url": info["endpoint"]}
        data_dir = Path(info["terraform"]["env"]["TF_DATA_DIR"])  # empty for a root of built-ins only
        assert f"AWS_DEFAULT_REGION={info['region']}" in info["talk"]

        fixed = subprocess.run(
            [*CLI, "local", "apply", "--ready-file", str(ready), "--var", "release=fixed"],
            env=_bare_env(), capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        assert "output release = fixed" in fixed.stdout
        # The sandbox's own state changed in place: one resource, now the fixed release.
        (resource,) = _state_resources(state)
        assert resource["instances"][0]["attributes"]["input"]["value"]["release"] == "fixed"
        after = json.loads(ready.read_text())
        assert after["outputs"] == {"release": "fixed"}
        assert after["terraform"]["variables"]["release"] == "fixed"
        assert after["pid"] == sandbox.pid
        # The sandbox's TF_DATA_DIR was used: no second one, and nothing written into the root.
        assert [p for p in work.rglob(".terraform") if p.is_dir()] in ([], [data_dir])
        assert not (ROOT / ".terraform").exists()
        assert not (ROOT / "terraform.tfstate").exists()
        assert sandbox.poll() is None  # it kept running meanwhile

        sandbox.send_signal(signal.SIGTERM)
        out, _ = sandbox.communicate(timeout=180)
    finally:
        if sandbox.poll() is None:
            sandbox.kill()
            sandbox.wait(30)
    assert sandbox.returncode == 0, out
    assert (
        f"talk to it with AWS_ENDPOINT_URL={info['endpoint']} AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1"
        in out
    )
    assert f"ready: endpoint {info['endpoint']}, region us-east-1, state {state}" in out
    assert "destroyed" in out
    assert _state_resources(state) == []
    # No sandbox any more: 'local apply' says so (exit 2) and applies nothing.
    ready.write_text(json.dumps(info))  # as if the file had been left behind
    gone = subprocess.run(
        [*CLI, "local", "apply", "--ready-file", str(ready)],
        env=_bare_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert gone.returncode == 2, gone.stdout + gone.stderr
    assert f"(pid {sandbox.pid}) is no longer running" in gone.stderr
    assert _state_resources(state) == []


def test_local_apply_without_a_sandbox_names_the_command_that_starts_one(tmp_path: Path) -> None:
    missing = tmp_path / "ready.json"
    result = subprocess.run(
        [*CLI, "local", "apply", "--ready-file", str(missing)],
        env={**os.environ}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"serverless-retry local --root DIR --ready-file {missing}" in result.stderr

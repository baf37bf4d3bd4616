"""``serverless-retry local`` as a script drives it: a ready file once it runs, a clean stop on SIGTERM."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest
from serverless_retry_tools.local.emulator_contract import FAKE_CREDENTIALS

from tests.terraform.conftest import terraform_env

ROOT = Path(__file__).resolve().parent / "fixtures" / "ready-root"


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_ready_file_then_sigterm_drains_and_destroys(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    command = [
        sys.executable, "-m", "serverless_retry_tools.cli", "local", "--root", str(ROOT),
        "--ready-file", str(ready), "--clock-scale", "10", "--work-dir", str(tmp_path / "work"), "--quiet",
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, env=terraform_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 300
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ready.exists(), (
            proc.stdout.read() if proc.poll() is not None and proc.stdout else "no ready file"
        )
        info = json.loads(ready.read_text())
        assert info["endpoint"].startswith("http://127.0.0.1:")
        assert info["region"] == "us-east-1"
        assert info["outputs"] == {"endpoint_seen_by_terraform": info["endpoint"]}
        assert info["clock"]["scale"] == 10
        assert info["pid"] == proc.pid
        sqs = boto3.client(
            "sqs",
            endpoint_url=info["endpoint"],
            region_name=info["region"],
            aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        assert sqs.create_queue(QueueName="ready")["QueueUrl"].startswith(info["endpoint"])
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 0, out
    assert "SIGTERM: draining" in out
    assert "destroyed" in out
    assert not ready.exists()  # removed at exit: a stale file never says "ready"

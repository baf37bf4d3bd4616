"""The emulator server started by hand as an operator's sandbox (docs/operations.md): it stays up in
a script whose stdin is closed and in a terminal whose input it must not read, answers with the
region it names, and stops on SIGTERM; only ``--watch-stdin`` (what ``Emulator`` passes) ends it at
EOF on stdin."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SERVER = [sys.executable, "-m", "serverless_retry_tools.local.emulator.emulator_server", "--port", "0"]


def _wait_ready(proc: subprocess.Popen[bytes], ready: Path, seconds: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ready.exists(), f"no ready file; exit code {proc.poll()}"
    info: dict[str, Any] = json.loads(ready.read_text())
    return info


def _stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _talk_line(log: Path) -> str:
    return next(line for line in log.read_text().splitlines() if "talk to it with" in line)


def _env_of(line: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in line.split("talk to it with ", 1)[1].split())


def test_in_a_script_with_stdin_closed_it_serves_until_sigterm(tmp_path: Path) -> None:
    ready, log = tmp_path / "ready.json", tmp_path / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*SERVER, "--ready-file", str(ready)], stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
    try:
        info = _wait_ready(proc, ready)
        assert info["endpoint"].startswith("http://127.0.0.1:")
        assert info["region"] == "us-east-1"
        assert info["pid"] == proc.pid
        time.sleep(1.5)  # the old server had read EOF on /dev/null and exited by now
        assert proc.poll() is None
        # The printed environment is enough for boto3: no NoRegionError.
        talk = _env_of(_talk_line(log))
        assert talk["AWS_ENDPOINT_URL"] == info["endpoint"]
        assert talk["AWS_DEFAULT_REGION"] == talk["AWS_REGION"] == "us-east-1"
        script = (
            "import boto3; sqs = boto3.client('sqs'); "
            "print(sqs.create_queue(QueueName='sandbox')['QueueUrl'])"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        made = subprocess.run(
            [sys.executable, "-c", script],
            check=False,
            env={**env, **talk, "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert made.returncode == 0, made.stderr
        assert made.stdout.strip() == f"{info['endpoint']}/123456789012/sandbox"
    finally:
        code = _stop(proc)
    assert code == 0
    assert not ready.exists()  # a stale file never says "ready"


def test_on_a_terminal_it_never_reads_the_input(tmp_path: Path) -> None:
    """Input and an end of file typed on its terminal are left alone (a shell's background job that
    reads its terminal is stopped with SIGTTIN: "tty input")."""
    ready = tmp_path / "ready.json"
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*SERVER, "--ready-file", str(ready)],
            stdin=slave,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_ready(proc, ready)
            os.write(master, b"typed\n\x04")  # a line, then Ctrl-D
            time.sleep(1.5)
            assert proc.poll() is None
            os.set_blocking(slave, False)
            assert os.read(slave, 100) == b"typed\n"  # still there: the server read none of it
        finally:
            code = _stop(proc)
    finally:
        os.close(master)
        os.close(slave)
    assert code == 0


def test_with_watch_stdin_it_stops_at_end_of_file(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen(
        [*SERVER, "--ready-file", str(ready), "--watch-stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_ready(proc, ready)
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        _stop(proc)
    assert not ready.exists()

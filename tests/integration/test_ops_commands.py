"""The operator's commands end to end: the installed ``serverless-retry`` executable against the local
emulator (moto in server mode), on queues the real consumer filled (serverless_retry_tools.ops_sandbox)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.ops_sandbox import Sandbox, seed

CLI = shutil.which("serverless-retry", path=str(Path(sys.executable).parent)) or "serverless-retry"


@dataclass
class Ops:
    emulator: Emulator
    sqs: Any
    sandbox: Sandbox

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | self.emulator.env()
        return subprocess.run(
            [CLI, *args],
            stdin=subprocess.DEVNULL,  # a script: no terminal to ask on, so a change needs --yes
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    def bodies(self, url: str) -> list[str]:
        out: dict[str, str] = {}
        for _ in range(20):
            got = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30).get(
                "Messages", []
            )
            if not got:
                break
            out.update({m["MessageId"]: m["Body"] for m in got})
        return sorted(out.values())


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ops]:
    with Emulator(log_path=tmp_path_factory.mktemp("ops") / "emulator.log") as emulator:
        sqs = boto3.client("sqs", **emulator.client_kwargs())
        yield Ops(emulator, sqs, seed(sqs))


def test_inspect_summarises_real_consumer_output(ops: Ops) -> None:
    result = ops.run("inspect", "--queue-url", ops.sandbox.exhausted_url, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["by_outcome"] == {"exhausted": 6, "non-retryable": 2}
    assert report["by_error_type"] == {"TimeoutError": 3, "HttpError": 2, "ValueError": 2, "KeyError": 1}
    assert report["released"] is True
    dlq = json.loads(ops.run("inspect", "--queue-url", ops.sandbox.dlq_url, "--json").stdout)
    assert dlq["by_outcome"] == {"unknown": 3}


def test_redrive_dry_run_then_real_then_native(ops: Ops) -> None:
    common = [
        "redrive",
        "--from-queue-url",
        ops.sandbox.exhausted_url,
        "--to-queue-url",
        ops.sandbox.queue_url,
    ]
    timeouts = ["--outcome", "exhausted", "--error-type", "TimeoutError"]
    dry = ops.run(*common, *timeouts, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run: would move 3, would skip 5" in dry.stdout
    assert ops.bodies(ops.sandbox.queue_url) == []

    real = ops.run(*common, *timeouts, "--rate", "20/s", "--reset-attempts", "--yes")
    assert real.returncode == 0, real.stderr
    assert "moved 3, skipped 5, failed 0" in real.stdout
    assert [json.loads(b)["id"] for b in ops.bodies(ops.sandbox.queue_url)] == ["o-1", "o-2", "o-3"]

    refused = ops.run("redrive", "--from-queue-url", ops.sandbox.exhausted_url, "--native")
    assert refused.returncode == 2
    assert "--native does not apply" in refused.stderr

    native = ops.run("redrive", "--from-queue-url", ops.sandbox.dlq_url, "--native", "--rate", "10", "--yes")
    assert native.returncode == 0, native.stderr
    assert "move task COMPLETED" in native.stdout
    assert json.loads(ops.run("inspect", "--queue-url", ops.sandbox.dlq_url, "--json").stdout)["scanned"] == 0


def test_nonsense_and_missing_queues(ops: Ops) -> None:
    bad = ops.run(
        "redrive",
        "--from-queue-url",
        ops.sandbox.exhausted_url,
        "--to-queue-url",
        ops.sandbox.queue_url,
        "--max",
        "-1",
    )
    assert bad.returncode == 2
    assert "--max" in bad.stderr
    missing = ops.run("inspect", "--queue-url", ops.sandbox.exhausted_url + "-nope")
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: AWS GetQueueAttributes")
    assert "Traceback" not in missing.stderr


def test_ages_are_measured_on_the_emulators_clock(tmp_path: Path) -> None:
    """At clock x1000, a message sent 0.2 real seconds ago is ~200 logical seconds old: inspect says
    so and redrive's --older-than selects by it (on the system clock it would look 0 s old, its
    SentTimestamp being logical)."""
    with Emulator(clock_scale=1000, log_path=tmp_path / "emulator.log") as emulator:
        sqs = boto3.client("sqs", **emulator.client_kwargs())
        source = sqs.create_queue(QueueName="aged")["QueueUrl"]
        target = sqs.create_queue(QueueName="aged-target")["QueueUrl"]
        sqs.send_message(QueueUrl=source, MessageBody="old enough")
        time.sleep(0.2)
        ops = Ops(emulator, sqs, Sandbox(target, source, source))
        report = json.loads(ops.run("inspect", "--queue-url", source, "--json").stdout)
        (oldest,) = report["oldest"]
        assert oldest["age_seconds"] >= 150, oldest
        dry = ops.run(
            "redrive", "--from-queue-url", source, "--to-queue-url", target, "--older-than", "2m", "--dry-run"
        )
        assert dry.returncode == 0, dry.stderr
        assert "dry run: would move 1, would skip 0" in dry.stdout

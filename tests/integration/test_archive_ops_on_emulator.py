"""``inspect``, ``redrive`` and ``discard --archive`` end to end: the installed ``serverless-retry``
executable against the local emulator (moto server: SQS and S3), on an archive holding what the real
consumer gave up on (serverless_retry_tools.ops_sandbox) and what SQS dead-lettered, drained into S3
as the archiver does (one object per message, by the shared spec)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.ops_sandbox import Sandbox, seed

from tests.functional.test_cli_archive import put_archived

CLI = shutil.which("serverless-retry", path=str(Path(sys.executable).parent)) or "serverless-retry"
BUCKET = "shop-archive"
PREFIX = "serverless-retry/"
LOCATION = f"s3://{BUCKET}/{PREFIX}"


@dataclass
class ArchiveOps:
    emulator: Emulator
    sqs: Any
    s3: Any
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

    def json(self, *args: str) -> Any:
        result = self.run(*args, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

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

    def archived_keys(self) -> list[str]:
        return sorted(o["Key"] for o in self.s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def _arn(sqs: Any, url: str) -> str:
    return str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


def _drain(sqs: Any, s3: Any, url: str, *, source_arn: str | None) -> int:
    """Archive every message of ``url`` and delete it there, as the archiver's event source mapping
    would (bounded: the sandbox holds a few messages)."""
    archived = 0
    for _ in range(20):
        got = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=60,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not got:
            return archived
        for message in got:
            put_archived(
                s3,
                message,
                bucket=BUCKET,
                prefix=PREFIX,
                archive_queue_arn=_arn(sqs, url),
                source_queue_arn=source_arn or message["Attributes"].get("DeadLetterQueueSourceArn"),
                place="dlq" if source_arn is None else "exhausted",
            )
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            archived += 1
    return archived


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArchiveOps]:
    with Emulator(log_path=tmp_path_factory.mktemp("archive-ops") / "emulator.log") as emulator:
        sqs = boto3.client("sqs", **emulator.client_kwargs())
        s3 = boto3.client("s3", **emulator.client_kwargs())
        s3.create_bucket(Bucket=BUCKET)
        sandbox = seed(sqs)
        assert _drain(sqs, s3, sandbox.exhausted_url, source_arn=_arn(sqs, sandbox.queue_url)) == 8
        assert _drain(sqs, s3, sandbox.dlq_url, source_arn=None) == 3
        yield ArchiveOps(emulator, sqs, s3, sandbox)


def test_inspect_the_archive(ops: ArchiveOps) -> None:
    report = ops.json("inspect", "--archive", LOCATION)
    assert report["looked_at"] == 11
    assert report["by_outcome"] == {"exhausted": 6, "dlq": 3, "non-retryable": 2}
    dead_lettered = ops.json("inspect", "--archive", LOCATION, "--outcome", "dlq")
    assert {r["origin"] for r in dead_lettered["oldest"]} == {"sqs-redrive"}
    assert report["by_error_type"]["TimeoutError"] == 3
    assert report["unreadable"] == []
    timeouts = ops.json(
        "inspect", "--archive", LOCATION, "--error-type", "TimeoutError", "--newer-than", "1d"
    )
    assert timeouts["scanned"] == 3


def test_redrive_from_the_archive_dry_run_real_then_once(ops: ArchiveOps) -> None:
    timeouts = ["--outcome", "exhausted", "--error-type", "TimeoutError"]
    dry = ops.run("redrive", "--archive", LOCATION, *timeouts, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run: would redrive 3 of 3 listed" in dry.stdout
    assert ops.bodies(ops.sandbox.queue_url) == []

    real = ops.run("redrive", "--archive", LOCATION, *timeouts, "--reset-attempts", "--rate", "20/s", "--yes")
    assert real.returncode == 0, real.stderr
    assert "redriven 3 of 3 listed" in real.stdout
    assert [json.loads(b)["id"] for b in ops.bodies(ops.sandbox.queue_url)] == ["o-1", "o-2", "o-3"]

    marked = ops.json("inspect", "--archive", LOCATION, *timeouts)
    assert [len(r["redriven"]) for r in marked["oldest"]] == [1, 1, 1]
    assert {r["redriven"][0]["to"] for r in marked["oldest"]} == {ops.sandbox.queue_url}

    again = ops.run("redrive", "--archive", LOCATION, *timeouts, "--yes")
    assert again.returncode == 0, again.stderr
    assert "redriven 0 of 3 listed" in again.stdout
    assert "already redriven 3" in again.stdout


def test_discard_from_the_archive(ops: ArchiveOps) -> None:
    before = ops.archived_keys()
    dry = ops.run("discard", "--archive", LOCATION, "--outcome", "non-retryable", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run: would discard 2 of 2 listed; nothing was changed" in dry.stdout
    assert ops.archived_keys() == before
    refused = ops.run("discard", "--archive", LOCATION, "--outcome", "non-retryable")
    assert refused.returncode == 2
    assert ops.archived_keys() == before
    real = ops.run("discard", "--archive", LOCATION, "--outcome", "non-retryable", "--yes")
    assert real.returncode == 0, real.stderr
    assert "discarded 2 of 2 listed" in real.stdout
    assert len(ops.archived_keys()) == len(before) - 2
    assert all("/non-retryable/" not in k for k in ops.archived_keys())


def test_what_sqs_dead_lettered_goes_back_verbatim(ops: ArchiveOps) -> None:
    target = ops.sqs.create_queue(QueueName="shop-replay")["QueueUrl"]
    dlq_bodies = sorted(
        r["body"]
        for r in ops.json("inspect", "--archive", LOCATION, "--outcome", "dlq", "--bodies")["oldest"]
    )
    result = ops.run("redrive", "--archive", LOCATION, "--outcome", "dlq", "--to-queue-url", target, "--yes")
    assert result.returncode == 0, result.stderr
    assert "redriven 3 of 3 listed" in result.stdout
    assert ops.bodies(target) == dlq_bodies

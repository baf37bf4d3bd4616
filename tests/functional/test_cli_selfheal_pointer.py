"""``serverless-retry redrive --to-function`` and ``inspect`` on self-healing records whose payload
stayed in S3 (``payload: null`` and a ``payload_ref``, as the redrive writes a record over the bus's
limit to the retry-exhausted queue): read back through the pointer, sha256-checked, re-invoked intact;
refused and kept when the object is gone or changed (in-process moto S3 and SQS)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from serverless_retry.clock import FrozenClock
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.state import read
from serverless_retry.selfheal.stored import S3Object, read_record
from serverless_retry_tools import cli
from serverless_retry_tools.commands import redrive as redrive_command

from tests.functional.redrive_world import World, make_world
from tests.functional.test_selfheal_queue_redrive import NOW, FakeLambda
from tests.selfheal_corpus import REINDEX_ARN, destination_record

BUCKET = "orders-self-healing-failure-records"
KEY = "aws/lambda/async/reindex-fn/2026/11/30/2026-11-30T10.00.04-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
LARGE = {"document": "d" * 400_000, "id": 7}  # over the 256 KiB a queue message and a bus entry take


class Pointers:
    def __init__(self, world: World, s3: Any) -> None:
        self.world, self.s3 = world, s3

    def exhausted(self, payload: Any = LARGE, key: str = KEY) -> dict[str, Any]:
        """Lambda's record in S3, and the ExhaustedRecord that points at it on the exhausted queue."""
        text = json.dumps(destination_record(payload, function="reindex-fn"))
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=text.encode())
        stored = read_record(self.s3, S3Object(BUCKET, key, len(text)))
        detail = failure_detail({"messageId": f"m-{key[-4:]}", "body": stored.text}, NOW)
        pointer_only = {**detail, "payload": None, "payload_ref": stored.ref}
        body = json.dumps({"outcome": "exhausted", "reason": "retry budget spent", "detail": pointer_only})
        self.world.sqs.send_message(QueueUrl=self.world.exhausted, MessageBody=body)
        self.world.later(60)
        return pointer_only

    def cli(self, *args: str) -> int:
        self.world.tick()
        return cli.main(["redrive", "--from-queue-url", self.world.exhausted, "--to-function", *args])


@pytest.fixture
def pointers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Pointers, FakeLambda]]:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        world = make_world(boto3.client("sqs", region_name="us-east-1"), FrozenClock())
        fake = FakeLambda()
        monkeypatch.setattr(redrive_command, "lambda_client", lambda args: fake)
        monkeypatch.setattr(redrive_command, "s3_client", lambda args: s3)
        yield Pointers(world, s3), fake


def test_a_record_over_256_kib_is_redriven_intact_from_its_pointer(
    pointers: tuple[Pointers, FakeLambda], capsys: pytest.CaptureFixture[str]
) -> None:
    world, fake = pointers
    detail = world.exhausted()
    assert detail["payload_ref"]["size"] > 262_144
    assert world.cli("--yes", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["moved"], report["failed"], report["complete"]) == (1, 0, True)
    [(function, payload)] = fake.invoked
    assert function == REINDEX_ARN
    delivered = read(payload)
    assert delivered.event == LARGE, "the payload as it first arrived, byte for byte"
    assert delivered.state is not None
    assert delivered.state["attempt"] == detail["meta"]["attempt"] + 1
    assert world.world.counts(world.world.exhausted) == (0, 0)


@pytest.mark.parametrize("damage", ["gone", "changed"])
def test_a_gone_or_changed_object_is_refused_and_the_record_stays(
    pointers: tuple[Pointers, FakeLambda], capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    world, fake = pointers
    world.exhausted()
    if damage == "gone":
        world.s3.delete_object(Bucket=BUCKET, Key=KEY)
    else:
        world.s3.put_object(Bucket=BUCKET, Key=KEY, Body=json.dumps(destination_record({"id": 8})).encode())
    assert world.cli("--yes") == 1  # a partial failure: nothing lost
    captured = capsys.readouterr()
    expected = "is gone" if damage == "gone" else "changed since it was read"
    assert "its payload could not be read back from S3" in captured.err
    assert expected in captured.err
    assert "(left in place)" in captured.err
    assert "moved 0, skipped 0, failed 1" in captured.out
    assert fake.calls == []
    assert world.world.counts(world.world.exhausted) == (1, 0)


def test_a_dry_run_reads_the_pointer_and_changes_nothing(
    pointers: tuple[Pointers, FakeLambda], capsys: pytest.CaptureFixture[str]
) -> None:
    world, fake = pointers
    world.exhausted()
    world.exhausted(key=KEY.replace("0b1c", "9f9f"))
    world.s3.delete_object(Bucket=BUCKET, Key=KEY.replace("0b1c", "9f9f"))
    assert world.cli("--dry-run") == 1
    captured = capsys.readouterr()
    assert "dry run: would move 1, would skip 0, would refuse 1" in captured.out
    assert "is gone" in captured.err
    assert fake.calls == []
    assert world.world.counts(world.world.exhausted) == (2, 0)


def test_one_run_reinvokes_each_chain_at_most_once(
    pointers: tuple[Pointers, FakeLambda], capsys: pytest.CaptureFixture[str]
) -> None:
    world, fake = pointers
    detail = world.exhausted()
    # The same record delivered twice (an at-least-once queue): one chain, one re-invoke.
    body = json.dumps({"outcome": "exhausted", "reason": "retry budget spent", "detail": detail})
    world.world.sqs.send_message(QueueUrl=world.world.exhausted, MessageBody=body)
    world.world.later(60)
    assert world.cli("--yes", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["moved"], report["repeated"]) == (1, 1)
    assert len(fake.invoked) == 1
    assert world.world.counts(world.world.exhausted) == (1, 0)


def test_inspect_shows_the_pointer_not_an_empty_payload(
    pointers: tuple[Pointers, FakeLambda], capsys: pytest.CaptureFixture[str]
) -> None:
    world, _fake = pointers
    detail = world.exhausted()
    world.world.tick()
    common = ["inspect", "--queue-url", world.world.exhausted, "--bodies"]
    assert cli.main([*common, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["oldest"]
    assert row["payload_ref"] == detail["payload_ref"]
    assert row["body"] == f"in S3: s3://{BUCKET}/{KEY} ({detail['payload_ref']['size']} bytes)"
    assert cli.main(common) == 0
    assert "in S3: s3://" in capsys.readouterr().out
    assert world.world.counts(world.world.exhausted) == (1, 0)


ARCHIVE = "s3://archive-bkt/serverless-retry/"


def _archived(world: Pointers, monkeypatch: pytest.MonkeyPatch, fake: FakeLambda) -> str:
    """The pointer-only record as the archiver keeps it (drained from the self-healing exhausted queue)."""
    from serverless_retry_tools.commands import archive_redrive

    from tests.functional.test_cli_archive import put_archived

    world.s3.create_bucket(Bucket="archive-bkt")
    monkeypatch.setattr(archive_redrive, "s3_client", lambda args: world.s3)
    monkeypatch.setattr(archive_redrive, "lambda_client", lambda args: fake)
    w = world.world
    w.tick()
    [received] = w.all_messages(w.exhausted)
    return put_archived(
        world.s3,
        received,
        bucket="archive-bkt",
        prefix="serverless-retry/",
        archive_queue_arn=w.arn(w.exhausted),
        source_queue_arn=None,
        place="selfheal-exhausted",
    )


def test_the_archive_redrives_a_pointer_record_to_its_function_once(
    pointers: tuple[Pointers, FakeLambda], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world, fake = pointers
    world.exhausted()
    key = _archived(world, monkeypatch, fake)
    common = ["redrive", "--archive", ARCHIVE, "--to-function"]
    assert cli.main([*common, "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["moved_keys"] == [key]
    assert fake.calls == []
    assert cli.main([*common, "--yes", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["moved_keys"], report["routes"]) == ([key], {key: REINDEX_ARN})
    [(function, payload)] = fake.invoked
    assert (function, read(payload).event) == (REINDEX_ARN, LARGE)
    assert cli.main([*common, "--yes", "--json"]) == 0  # marked: a later run leaves it
    assert json.loads(capsys.readouterr().out)["already_keys"] == [key]
    assert len(fake.invoked) == 1


def test_inspect_of_the_archive_shows_the_pointer(
    pointers: tuple[Pointers, FakeLambda], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from serverless_retry_tools.commands import archive_inspect

    world, fake = pointers
    detail = world.exhausted()
    _archived(world, monkeypatch, fake)
    monkeypatch.setattr(archive_inspect, "s3_client", lambda args: world.s3)
    assert cli.main(["inspect", "--archive", ARCHIVE, "--bodies", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["oldest"]
    assert row["payload_ref"] == detail["payload_ref"]
    assert row["body"].startswith(f"in S3: s3://{BUCKET}/{KEY} (")


def test_the_archive_refuses_a_pointer_record_whose_object_is_gone(
    pointers: tuple[Pointers, FakeLambda], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world, fake = pointers
    world.exhausted()
    key = _archived(world, monkeypatch, fake)
    world.s3.delete_object(Bucket=BUCKET, Key=KEY)
    assert cli.main(["redrive", "--archive", ARCHIVE, "--to-function", "--yes", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    [failure] = report["failures"]
    assert failure["key"] == key
    assert "is gone" in failure["error"]
    assert (report["moved"], fake.calls) == (0, [])
    assert json.loads(world.s3.get_object(Bucket="archive-bkt", Key=key)["Body"].read())["redriven"] == []

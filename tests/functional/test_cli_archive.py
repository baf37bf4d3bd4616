"""``inspect``, ``redrive`` and ``discard`` on an S3 archive (``--archive s3://bucket/prefix/``) through
the CLI on in-process moto (S3 + SQS): filters, listing by day, dry runs that change nothing, at most
once per run, a corrupt object reported without ending the run, exit codes, JSON output.

The archive is filled as the archiver fills it (the shared spec): the terminal messages of a
retry-exhausted queue the real consumer's envelopes filled, each one object under
``<prefix>dead/<yyyy>/<mm>/<dd>/<outcome>/<error_type>/<chain>.<attempt>.<digest12>.json``."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from serverless_retry.archive.record import (
    ArchiveSource,
    Place,
    archive_record,
    encode_record,
    object_key,
    object_metadata,
)
from serverless_retry.clock import FrozenClock
from serverless_retry.envelope import format_time
from serverless_retry_tools import cli
from serverless_retry_tools.commands import archive_inspect, archive_redrive
from serverless_retry_tools.commands.archive_objects import ArchiveObjects

from tests.functional.redrive_world import World, make_world

BUCKET = "archive-bkt"
PREFIX = "serverless-retry/"
LOCATION = f"s3://{BUCKET}/{PREFIX}"


def _event_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """boto3's message attributes as a Lambda SQS event carries them (what the archiver stores)."""
    out: dict[str, Any] = {}
    for name, value in attributes.items():
        if "BinaryValue" in value:
            out[name] = {
                "dataType": value["DataType"],
                "binaryValue": base64.b64encode(value["BinaryValue"]).decode(),
            }
        else:
            out[name] = {"dataType": value["DataType"], "stringValue": value["StringValue"]}
    return out


def put_archived(
    s3: Any,
    received: dict[str, Any],
    *,
    bucket: str,
    prefix: str,
    archive_queue_arn: str,
    source_queue_arn: str | None,
    terminal_at: datetime | None = None,
    place: Place = "exhausted",
    now: datetime | None = None,
) -> str:
    """Archive one received message (ReceiveMessage with every attribute) with the archive's own
    writer (record.archive_record, object_key, the object's metadata), as the archiver does with the
    same message in its SQS event; returns its key. ``terminal_at`` moves it to another moment (the
    record's own: the envelope's exhausted time, else its SentTimestamp)."""
    event_record = {  # the message as Lambda's SQS event carries it to the archiver
        "messageId": received["MessageId"],
        "body": received["Body"],
        "messageAttributes": _event_attributes(received.get("MessageAttributes", {})),
        "attributes": received.get("Attributes", {}),
        "eventSourceARN": archive_queue_arn,
    }
    source = ArchiveSource(place=place, source_queue_arn=source_queue_arn, deployment="orders")
    record = archive_record(event_record, source=source, now=now or datetime.now(UTC), prefix=prefix)
    if terminal_at is not None:
        record["terminal_at"] = format_time(terminal_at)
        record["key"] = object_key(record, prefix)
    s3.put_object(
        Bucket=bucket,
        Key=record["key"],
        Body=encode_record(record),
        ContentType="application/json",
        IfNoneMatch="*",
        Metadata=object_metadata(record),
    )
    return record["key"]


@dataclass
class Archive:
    world: World
    s3: Any
    source_arn: str

    def put(self, received: dict[str, Any], *, terminal_at: datetime) -> str:
        return put_archived(
            self.s3,
            received,
            bucket=BUCKET,
            prefix=PREFIX,
            archive_queue_arn=self.world.arn(self.world.exhausted),
            source_queue_arn=self.source_arn,
            terminal_at=terminal_at,
        )

    def drain(self, terminal_at: datetime | list[datetime]) -> list[str]:
        """Archive every message of the retry-exhausted queue and delete it there (drain on arrival)."""
        world = self.world
        received = sorted(world.all_messages(world.exhausted), key=lambda m: m["Body"])
        times = terminal_at if isinstance(terminal_at, list) else [terminal_at] * len(received)
        keys = [self.put(m, terminal_at=t) for m, t in zip(received, times, strict=True)]
        world.tick()
        for _ in range(10):  # what was archived leaves the queue (bounded: a few messages here)
            got = world.sqs.receive_message(QueueUrl=world.exhausted, MaxNumberOfMessages=10).get(
                "Messages", []
            )
            if not got:
                break
            for m in got:
                world.sqs.delete_message(QueueUrl=world.exhausted, ReceiptHandle=m["ReceiptHandle"])
        assert world.counts(world.exhausted) == (0, 0)
        return keys

    def record(self, key: str) -> dict[str, Any]:
        return dict(json.loads(self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()))

    def etags(self) -> dict[str, str]:
        listed = self.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
        return {o["Key"]: o["ETag"] for o in listed}


NOW = datetime.now(UTC)


@pytest.fixture
def archive() -> Iterator[Archive]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        world = make_world(sqs, FrozenClock())
        yield Archive(world, s3, world.arn(world.source))


def _seed(archive: Archive) -> list[str]:
    world = archive.world
    world.final("a", TimeoutError("read timed out"))
    world.final("b", TimeoutError("read timed out"))
    world.final("c", ValueError("bad order 42"), outcome="non-retryable")
    return archive.drain(NOW - timedelta(hours=2))


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


# --- inspect ------------------------------------------------------------------------------------------


def test_inspect_archive_json_counts_rows_and_marks(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = _seed(archive)
    assert cli.main(["inspect", "--archive", LOCATION, "--json", "--bodies"]) == 0
    report = _json(capsys)
    assert report["archive"] == LOCATION
    assert report["looked_at"] == 3
    assert report["by_outcome"] == {"exhausted": 2, "non-retryable": 1}
    assert report["by_error_type"] == {"TimeoutError": 2, "ValueError": 1}
    assert report["by_age"]["< 1 h"] == 0
    assert report["by_age"]["1 h - 1 d"] == 3
    assert {r["key"] for r in report["oldest"]} == set(keys)
    assert {r["id"] for r in report["oldest"]} == {"id-a", "id-b", "id-c"}
    assert {r["body"] for r in report["oldest"]} == {"a", "b", "c"}
    assert all(r["redriven"] == [] for r in report["oldest"])
    assert report["unreadable"] == []
    assert cli.main(["inspect", "--archive", LOCATION, "--outcome", "exhausted", "--json"]) == 0
    assert _json(capsys)["scanned"] == 2


def test_inspect_archive_plain_table(
    archive: Archive, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(archive)
    monkeypatch.setenv("SERVERLESS_RETRY_PLAIN", "1")
    assert cli.main(["inspect", "--archive", LOCATION, "--oldest", "2"]) == 0
    out = capsys.readouterr().out
    assert f"archive {LOCATION}" in out
    assert "3 match the filters, 0 of them redriven before" in out
    assert "by outcome:    exhausted 2, non-retryable 1" in out
    assert "oldest 2" in out
    assert "nothing changed" in out


def test_filters_list_only_the_days_of_the_range(
    archive: Archive, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world = archive.world
    for body in ("d1", "d10", "d40"):
        world.final(body, TimeoutError("slow"))
    archive.drain([NOW - timedelta(days=1), NOW - timedelta(days=10), NOW - timedelta(days=40)])
    listed: list[tuple[str, str | None]] = []

    def spy(params: dict[str, Any], **_: Any) -> None:  # every ListObjectsV2 the command makes
        listed.append((params["Prefix"], params.get("StartAfter")))

    s3 = boto3.client("s3", region_name="us-east-1")
    s3.meta.events.register("provide-client-params.s3.ListObjectsV2", spy)
    monkeypatch.setattr(archive_inspect, "s3_client", lambda _args: s3)
    assert cli.main(["inspect", "--archive", LOCATION, "--newer-than", "15d", "--json"]) == 0
    assert {r["id"] for r in _json(capsys)["oldest"]} == {"id-d1", "id-d10"}
    assert len(listed) in (16, 17)  # one listing a day of the range, no more
    assert all(p.startswith(f"{PREFIX}dead/") and p.count("/") == 5 for p, _ in listed)
    listed.clear()
    assert (
        cli.main(["inspect", "--archive", LOCATION, "--older-than", "5d", "--newer-than", "20d", "--json"])
        == 0
    )
    assert {r["id"] for r in _json(capsys)["oldest"]} == {"id-d10"}
    listed.clear()
    # One outcome and one error type narrow each day's prefix to them.
    argv = ["--newer-than", "2d", "--outcome", "exhausted", "--error-type", "TimeoutError", "--json"]
    assert cli.main(["inspect", "--archive", LOCATION, *argv]) == 0
    assert {r["id"] for r in _json(capsys)["oldest"]} == {"id-d1"}
    assert all(p.endswith("/exhausted/TimeoutError/") for p, _ in listed)
    listed.clear()
    # No lower bound: the whole dead/ prefix once, stopping at the last day.
    assert cli.main(["inspect", "--archive", LOCATION, "--older-than", "30d", "--json"]) == 0
    assert {r["id"] for r in _json(capsys)["oldest"]} == {"id-d40"}
    assert listed == [(f"{PREFIX}dead/", None)]


def test_match_and_source_read_the_records(archive: Archive, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(archive)
    assert cli.main(["inspect", "--archive", LOCATION, "--match", r"bad order \d+", "--json"]) == 0
    assert [r["id"] for r in _json(capsys)["oldest"]] == ["id-c"]
    assert cli.main(["inspect", "--archive", LOCATION, "--match", "^b$", "--json"]) == 0  # the body
    assert [r["id"] for r in _json(capsys)["oldest"]] == ["id-b"]
    assert cli.main(["inspect", "--archive", LOCATION, "--source", "orders", "--json"]) == 0
    assert _json(capsys)["scanned"] == 3
    assert cli.main(["inspect", "--archive", LOCATION, "--source", "payments", "--json"]) == 0
    assert _json(capsys)["scanned"] == 0


# --- redrive ------------------------------------------------------------------------------------------


def test_redrive_dry_run_changes_nothing(archive: Archive, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(archive)
    before = archive.etags()
    assert cli.main(["redrive", "--archive", LOCATION, "--outcome", "exhausted", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run: would redrive 2 of 2 listed" in out
    assert "nothing was changed" in out
    assert archive.etags() == before
    assert archive.world.counts(archive.world.source) == (0, 0)


def test_redrive_sends_what_the_queue_redrive_sends_then_marks(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = _seed(archive)
    stored = {k: archive.record(k) for k in keys}
    assert cli.main(["redrive", "--archive", LOCATION, "--rate", "50/s", "--yes", "--json"]) == 0
    report = _json(capsys)
    assert report["moved"] == 3
    assert report["complete"] is True
    world = archive.world
    sent = world.all_messages(world.source)
    # By default the final envelope as the consumer wrote it (its chain's next attempt, claims and all),
    # as `redrive --from-queue-url` sends it.
    assert sorted(m["Body"] for m in sent) == sorted(r["message"]["body"] for r in stored.values())
    for key in keys:
        marks = archive.record(key)["redriven"]
        assert len(marks) == 1
        assert marks[0]["run"] == report["archive_run_id"]
        assert marks[0]["to"] == world.source
        assert marks[0]["message_id"] in {m["MessageId"] for m in sent}
    # A second run: every record redriven already, nothing sent.
    assert cli.main(["redrive", "--archive", LOCATION, "--yes", "--json"]) == 0
    again = _json(capsys)
    assert (again["moved"], again["already_redriven"]) == (0, 3)
    assert world.counts(world.source) == (3, 0)
    # --again: sent once more, a second mark.
    assert cli.main(["redrive", "--archive", LOCATION, "--outcome", "non-retryable", "--again", "--yes"]) == 0
    assert "redriven 1 of 1 listed" in capsys.readouterr().out
    assert world.counts(world.source) == (4, 0)
    assert [len(archive.record(k)["redriven"]) for k in keys].count(2) == 1


def test_reset_attempts_sends_the_original(archive: Archive, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(archive)
    world = archive.world
    argv = ["redrive", "--archive", LOCATION, "--to-queue-url", world.dlq, "--reset-attempts", "--yes"]
    assert cli.main([*argv, "--outcome", "non-retryable"]) == 0
    [sent] = world.all_messages(world.dlq)
    assert sent["Body"] == "c"
    assert sent["MessageAttributes"]["tenant"]["StringValue"] == "acme"


def test_one_chain_once_per_run(archive: Archive, capsys: pytest.CaptureFixture[str]) -> None:
    world = archive.world
    world.final("x1", TimeoutError("t"), message_id="chain-x")
    archive.drain(NOW - timedelta(hours=3))
    world.final("x2", TimeoutError("t"), message_id="chain-x")  # the same chain, archived again later
    archive.drain(NOW - timedelta(hours=1))
    assert len(archive.etags()) == 2
    assert cli.main(["redrive", "--archive", LOCATION, "--yes", "--json"]) == 0
    report = _json(capsys)
    assert (report["moved"], report["repeated"]) == (1, 1)
    assert world.counts(world.source) == (1, 0)


def test_an_interrupted_run_started_again_skips_what_it_marked(
    archive: Archive, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = _seed(archive)
    sends = {"n": 0}
    real = archive.world.sqs

    class Flaky:  # the second send is throttled past the client's retries: the run stops there
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def send_message(self, **kwargs: Any) -> Any:
            sends["n"] += 1
            if sends["n"] == 2:
                raise ClientError(
                    {"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "SendMessage"
                )
            return real.send_message(**kwargs)

    monkeypatch.setattr(archive_redrive, "sqs_client", lambda _args: Flaky())
    assert cli.main(["redrive", "--archive", LOCATION, "--yes", "--json"]) == 1
    first = _json(capsys)
    assert first["moved"] == 1
    assert first["stopped"].startswith("send failed: ThrottlingException")
    monkeypatch.setattr(archive_redrive, "sqs_client", lambda _args: real)  # the throttling is over
    assert cli.main(["redrive", "--archive", LOCATION, "--yes", "--json"]) == 0
    second = _json(capsys)
    assert (second["moved"], second["already_redriven"]) == (2, 1)
    assert set(first["moved_keys"]) | set(second["moved_keys"]) == set(keys)
    assert archive.world.counts(archive.world.source) == (3, 0)


def test_a_mark_racing_another_writer_is_written_on_the_fresh_object(
    archive: Archive, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    [key] = [k for k in _seed(archive) if "/non-retryable/" in k]
    mark = ArchiveObjects.mark
    raced = {"done": False}

    def racing(self: ArchiveObjects, stored: Any, record: Any) -> bool:
        if not raced["done"]:  # someone else rewrites the object between our read and our write
            raced["done"] = True
            other = archive.record(stored.key) | {"deployment": "renamed"}
            archive.s3.put_object(Bucket=BUCKET, Key=stored.key, Body=json.dumps(other).encode())
        return mark(self, stored, record)

    monkeypatch.setattr(ArchiveObjects, "mark", racing)
    assert cli.main(["redrive", "--archive", LOCATION, "--outcome", "non-retryable", "--yes"]) == 0
    record = archive.record(key)
    assert record["deployment"] == "renamed"  # the other write kept
    assert len(record["redriven"]) == 1  # and marked once, on top of it
    assert archive.world.counts(archive.world.source) == (1, 0)


def test_a_corrupt_object_is_reported_and_the_run_goes_on(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(archive)
    day = f"{NOW - timedelta(hours=2):%Y/%m/%d}"
    bad = f"{PREFIX}dead/{day}/exhausted/TimeoutError/broken.1.000000000000.json"
    archive.s3.put_object(Bucket=BUCKET, Key=bad, Body=b"{not json")
    assert cli.main(["inspect", "--archive", LOCATION, "--json"]) == 1
    report = _json(capsys)
    assert report["scanned"] == 3
    assert [u["key"] for u in report["unreadable"]] == [bad]
    assert cli.main(["redrive", "--archive", LOCATION, "--yes"]) == 1
    captured = capsys.readouterr()
    assert f"unreadable {bad}: not JSON" in captured.err
    assert "redriven 3 of 4 listed" in captured.out
    assert archive.world.counts(archive.world.source) == (3, 0)
    # --match makes discard read each object: the corrupt one cannot be judged, so it stays, reported.
    assert cli.main(["discard", "--archive", LOCATION, "--match", "read timed", "--yes", "--json"]) == 1
    report = _json(capsys)
    assert report["deleted"] == 2
    assert [u["key"] for u in report["unreadable"]] == [bad]
    assert bad in archive.etags()


# --- discard ------------------------------------------------------------------------------------------


def test_discard_dry_run_then_for_real(archive: Archive, capsys: pytest.CaptureFixture[str]) -> None:
    keys = _seed(archive)
    before = archive.etags()
    assert cli.main(["discard", "--archive", LOCATION, "--outcome", "non-retryable", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run: would discard 1 of 1 listed; nothing was changed" in out
    assert archive.etags() == before
    assert cli.main(["discard", "--archive", LOCATION, "--outcome", "non-retryable", "--yes", "--json"]) == 0
    report = _json(capsys)
    assert report["deleted"] == 1
    assert report["ids"] == ["id-c"]
    assert set(archive.etags()) == {k for k in keys if "/non-retryable/" not in k}


def test_discard_without_yes_from_a_script_changes_nothing(
    archive: Archive, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(archive)
    before = archive.etags()
    monkeypatch.setattr("sys.stdin", open("/dev/null"))  # noqa: SIM115 - closed with the test's stdin
    assert cli.main(["discard", "--archive", LOCATION]) == 2
    assert "give --yes" in capsys.readouterr().err
    assert cli.main(["redrive", "--archive", LOCATION]) == 2
    assert archive.etags() == before


# --- usage --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "--archive", LOCATION, "--queue-url", "https://q"],
        ["inspect", "--archive", "s3://No_Such/"],
        ["inspect", "--archive", f"s3://{BUCKET}/serverless-retry"],
        ["inspect"],
        ["discard"],
        ["discard", "--archive", "copy.jsonl"],
        ["redrive", "--archive", LOCATION, "--from-queue-url", "https://q"],
    ],
)
def test_usage_errors_of_the_parser(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["redrive", "--archive", LOCATION, "--native"], "--native: not with --archive"),
        (["redrive", "--archive", LOCATION, "--to-function", "--to-queue-url", "https://q"], "not both"),
        (["discard", "--archive", LOCATION, "--queue-url", "https://q"], "not with --queue-url"),
        (["inspect", "--archive", LOCATION, "--match", "(a"], "not a valid RE2"),
        (["inspect", "--archive", LOCATION, "--backlog"], "not with --archive"),
        (["inspect", "--queue-url", "https://q", "--match", "x"], "with --archive only"),
        (["redrive", "--from-queue-url", "https://q", "--again"], "with --archive only"),
    ],
)
def test_usage_errors_after_parsing(
    archive: Archive, argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    assert says in capsys.readouterr().err


def test_a_run_takes_only_the_keys_listed_when_it_started(
    archive: Archive, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the consumer and the archiver running, a redriven copy that fails again is archived again
    during the run: that object is a later run's, as a queue redrive leaves what arrived after it."""
    _seed(archive)
    real = archive.world.sqs
    late: list[str] = []

    class Archiving:  # each send is followed by the archiver writing one new object
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def send_message(self, **kwargs: Any) -> Any:
            sent = real.send_message(**kwargs)
            received = {"MessageId": sent["MessageId"], "Body": f"again-{len(late)}", "Attributes": {}}
            late.append(archive.put(received, terminal_at=NOW - timedelta(minutes=1)))
            return sent

    monkeypatch.setattr(archive_redrive, "sqs_client", lambda _args: Archiving())
    assert cli.main(["redrive", "--archive", LOCATION, "--yes", "--json"]) == 0
    report = _json(capsys)
    assert (report["listed"], report["moved"]) == (3, 3)
    assert len(late) == 3
    assert not set(late) & set(report["moved_keys"])
    assert all(archive.record(k)["redriven"] == [] for k in late)
    monkeypatch.setattr(archive_redrive, "sqs_client", lambda _args: real)
    assert cli.main(["redrive", "--archive", LOCATION, "--yes", "--json"]) == 0
    later = _json(capsys)
    assert (later["moved"], later["already_redriven"]) == (3, 3)
    assert set(later["moved_keys"]) == set(late)


def test_max_and_the_exit_status_of_records_with_no_queue_to_go_back_to(
    archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    world = archive.world
    world.final("a", TimeoutError("t"))
    world.final("b", TimeoutError("t"))
    [first, second] = sorted(world.all_messages(world.exhausted), key=lambda m: m["Body"])
    when = NOW - timedelta(hours=1)
    put_archived(
        archive.s3,
        first,
        bucket=BUCKET,
        prefix=PREFIX,
        archive_queue_arn="-",
        source_queue_arn=None,
        terminal_at=when,
    )
    gone = "arn:aws:sqs:us-east-1:123456789012:deleted-long-ago"
    put_archived(
        archive.s3,
        second,
        bucket=BUCKET,
        prefix=PREFIX,
        archive_queue_arn="-",
        source_queue_arn=gone,
        terminal_at=when,
    )
    assert (
        cli.main(["redrive", "--archive", LOCATION, "--max", "1", "--to-queue-url", world.dlq, "--yes"]) == 0
    )
    assert "redriven 1 of 2 listed" in capsys.readouterr().out
    assert world.counts(world.dlq) == (1, 0)
    # Back to each record's source: the envelope's own (orders) for one, a queue that is gone for the other.
    assert cli.main(["redrive", "--archive", LOCATION, "--again", "--yes", "--json"]) == 1
    report = _json(capsys)
    assert report["moved"] == 1
    assert report["not_routed"] == 1
    assert "is not a queue that exists" in report["not_routed_keys"][0]["why"]


def test_an_unexpected_error_says_what_stays_in_the_archive(
    archive: Archive, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(archive)

    def broken(self: ArchiveObjects, key: str) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ArchiveObjects, "read", broken)
    assert cli.main(["redrive", "--archive", LOCATION, "--yes"]) == 1
    err = capsys.readouterr().err
    assert "redrive stopped on an unexpected error (a record is marked redriven only after its send" in err
    assert "RuntimeError: disk on fire" in err
    assert archive.world.counts(archive.world.source) == (0, 0)

"""The safe CLI (issue: unsafe or silent operator commands) on in-process moto: enumerated options
refused with the valid values, changes confirmed (a terminal's answer, or --yes), --version, --json on
every command, inspect's filters and backlog, discard with its archive, and the retries waiting in the
Scheduler listed, cancelled and run now."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from serverless_retry.clock import FrozenClock
from serverless_retry.envelope import ENVELOPE_KEY
from serverless_retry_tools import cli
from serverless_retry_tools.commands.filters import OUTCOMES

from tests.functional.redrive_world import ACCOUNT, REGION, World, make_world


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("SERVERLESS_RETRY_PLAIN", "1")
    with mock_aws():
        yield make_world(boto3.client("sqs", region_name=REGION), FrozenClock())


def _seed(world: World) -> None:
    world.final("a", TimeoutError("read timed out"))
    world.final("b", TimeoutError("read timed out"))
    world.final("c", ValueError("bad order"), outcome="non-retryable")


def _code(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exited:  # argparse refuses a value itself
        return int(exited.code or 0)


class _Answer(io.StringIO):
    """A terminal on stdin with one line typed."""

    def isatty(self) -> bool:
        return True


def test_a_misspelt_outcome_exits_2_naming_the_valid_ones(
    live: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """`redrive --outcome exhaustd` once printed "moved 0, skipped 8" and exited 0."""
    _seed(live)
    base = ["--from-queue-url", live.exhausted, "--to-queue-url", live.source, "--outcome", "exhaustd"]
    for argv in (
        ["redrive", *base, "--yes"],
        ["inspect", "--queue-url", live.exhausted, "--outcome", "exhaustd"],
    ):
        assert _code(argv) == 2
        err = capsys.readouterr().err
        assert "invalid choice: 'exhaustd'" in err
        assert all(outcome in err for outcome in OUTCOMES)
    assert live.counts(live.exhausted) == (3, 0)
    assert live.counts(live.source) == (0, 0)


def test_a_real_redrive_needs_yes_without_a_terminal_and_asks_on_one(
    live: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(live)
    argv = ["redrive", "--from-queue-url", live.exhausted, "--to-queue-url", live.source]
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # a script: no terminal
    assert _code(argv) == 2
    assert "give --yes" in capsys.readouterr().err
    assert live.counts(live.source) == (0, 0)
    monkeypatch.setattr(sys, "stdin", _Answer("n\n"))
    assert _code(argv) == 1
    assert "[y/N]" in capsys.readouterr().err
    assert live.counts(live.source) == (0, 0)
    monkeypatch.setattr(sys, "stdin", _Answer("y\n"))
    assert _code(argv) == 0
    assert "moved 3" in capsys.readouterr().out
    assert live.counts(live.source) == (3, 0)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert _code(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"serverless-retry {version('serverless-retry')}"


def test_native_hints_name_flags_not_event_keys(live: World, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["redrive", "--from-queue-url", live.dlq, "--native", "--outcome", "exhausted", "--reset-attempts"]
    assert _code(argv) == 2
    err = capsys.readouterr().err
    assert "--outcome/--error-type/--source/--older-than/--newer-than, --reset-attempts" in err
    assert "(leave out --native)" in err
    assert "reset_attempts" not in err
    assert "older_than" not in err


def test_a_dry_run_of_plain_dlq_messages_does_not_claim_history_is_kept(
    live: World, capsys: pytest.CaptureFixture[str]
) -> None:
    live.sqs.send_message(QueueUrl=live.dlq, MessageBody='{"order": 1}')
    live.final("a", TimeoutError("read timed out"))
    assert _code(["redrive", "--from-queue-url", live.dlq, "--to-queue-url", live.source, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "history kept" not in out
    assert "1 verbatim" in out
    argv = ["redrive", "--from-queue-url", live.exhausted, "--to-queue-url", live.source, "--dry-run"]
    assert _code(argv) == 0
    assert "1 history kept" in capsys.readouterr().out


def test_inspect_takes_the_same_filters_as_redrive(live: World, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(live)
    filters = ["--outcome", "exhausted", "--error-type", "TimeoutError"]
    assert _code(["inspect", "--queue-url", live.exhausted, *filters, "--json"]) == 0
    inspected = json.loads(capsys.readouterr().out)
    assert inspected["looked_at"] == 3
    assert inspected["scanned"] == 2
    assert inspected["by_outcome"] == {"exhausted": 2}
    argv = ["redrive", "--from-queue-url", live.exhausted, "--to-queue-url", live.source, *filters]
    assert _code([*argv, "--dry-run", "--json"]) == 0
    redriven = json.loads(capsys.readouterr().out)
    assert sorted(redriven["moved_ids"]) == sorted(m["id"] for m in inspected["oldest"])
    assert live.counts(live.exhausted) == (3, 0)


def test_inspect_reads_a_source_queues_backlog_without_receiving(
    live: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """A source queue on native retry: a receive would count towards maxReceiveCount (here 1, so one
    look would move the message to the DLQ). inspect reports the backlog from the queue's attributes."""
    live.sqs.send_message(QueueUrl=live.source, MessageBody="visible")
    live.sqs.send_message(QueueUrl=live.source, MessageBody="delayed", DelaySeconds=600)
    assert _code(["inspect", "--queue-url", live.source]) == 0
    out = capsys.readouterr().out
    assert "backlog: 1 visible, 0 in flight, 1 delayed" in out
    assert "redrive policy: maxReceiveCount 1, visibility timeout 30 s" in out
    assert "reaches the DLQ 30 s after its first receive" in out
    assert "not received" in out
    assert _code(["inspect", "--queue-url", live.source, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["received"] is False
    assert document["backlog"]["visible"] == 1
    assert document["backlog"]["dlq_after_seconds"] == 30
    assert live.counts(live.source) == (1, 0)
    assert live.counts(live.dlq) == (0, 0)  # nothing was received, so nothing moved


def test_dlq_messages_show_their_receive_count(live: World, capsys: pytest.CaptureFixture[str]) -> None:
    live.sqs.send_message(QueueUrl=live.dlq, MessageBody="plain")
    assert _code(["inspect", "--queue-url", live.dlq]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("age"))
    row = out.splitlines()[out.splitlines().index(header) + 1].split()
    assert header.split()[:5] == ["age", "id", "outcome", "attempt", "receives"]
    assert row[2:5] == ["unknown", "-", "1"]


def test_discard_archives_each_message_before_deleting_it(
    live: World, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _seed(live)
    archive = tmp_path / "discarded.jsonl"
    base = ["discard", "--queue-url", live.exhausted, "--outcome", "non-retryable"]
    assert _code([*base, "--dry-run"]) == 0
    assert "dry run: would discard 1 of 3 looked at; nothing was changed" in capsys.readouterr().out
    assert live.counts(live.exhausted) == (3, 0)
    assert _code([*base, "--yes"]) == 2  # no archive named
    assert "--archive FILE.jsonl: required" in capsys.readouterr().err
    assert _code([*base, "--archive", str(archive)]) == 2  # no --yes, no terminal
    assert not archive.exists()
    assert _code([*base, "--archive", str(archive), "--yes"]) == 0
    assert f"discarded 1 of 3 looked at, archived to {archive}" in capsys.readouterr().out
    (line,) = archive.read_text().splitlines()
    record = json.loads(line)
    assert (record["id"], record["outcome"], record["error_type"]) == ("id-c", "non-retryable", "ValueError")
    assert json.loads(record["body"])[ENVELOPE_KEY]["id"] == "id-c"  # the message as it was in the queue
    assert live.counts(live.exhausted) == (2, 0)
    remaining = {json.loads(m["Body"])[ENVELOPE_KEY]["id"] for m in live.all_messages(live.exhausted)}
    assert remaining == {"id-a", "id-b"}


def _scheduled_retry(scheduler: object, world: World, name: str, *, due: str, attempt: int) -> None:
    body = {
        ENVELOPE_KEY: {
            "v": 1,
            "id": f"order-{attempt}",
            "attempt": attempt,
            "first_failed_at": "2026-11-30T10:00:00Z",
            "source": world.arn(world.source),
            "history": [
                {"at": "2026-11-30T10:00:00Z", "error_type": "TimeoutError", "error": "read timed out"}
            ],
            "due_at": due + "Z",
        },
        "body": '{"order": 1}',
        "attributes": {},
    }
    scheduler.create_schedule(  # type: ignore[attr-defined]
        Name=name,
        GroupName="orders-retries",
        ScheduleExpression=f"at({due})",
        ScheduleExpressionTimezone="UTC",
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target={
            "Arn": world.arn(world.source),
            "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/scheduler",
            "Input": json.dumps(body),
        },
    )


def test_retries_lists_cancels_and_runs_now(live: World, capsys: pytest.CaptureFixture[str]) -> None:
    scheduler = boto3.client("scheduler", region_name=REGION)
    scheduler.create_schedule_group(Name="orders-retries")
    _scheduled_retry(scheduler, live, "sr-late", due="2099-01-01T00:00:00", attempt=3)
    _scheduled_retry(scheduler, live, "sr-soon", due="2098-01-01T00:00:00", attempt=2)
    assert _code(["retries", "--group", "orders-retries", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["retries"]
    assert [(r["name"], r["due_at"], r["id"], r["attempt"], r["error_type"]) for r in listed] == [
        ("sr-soon", "2098-01-01T00:00:00Z", "order-2", 2, "TimeoutError"),
        ("sr-late", "2099-01-01T00:00:00Z", "order-3", 3, "TimeoutError"),
    ]
    assert _code(["retries", "--group", "orders-retries"]) == 0
    assert "2098-01-01T00:00:00Z  sr-soon   order-2" in capsys.readouterr().out
    assert _code(["retries", "--group", "orders-retries", "--cancel", "sr-late"]) == 2  # no --yes
    assert _code(["retries", "--group", "orders-retries", "--cancel", "sr-late", "--yes"]) == 0
    assert _code(["retries", "--group", "orders-retries", "--run-now", "sr-soon", "--yes"]) == 0
    capsys.readouterr()
    assert scheduler.list_schedules(GroupName="orders-retries")["Schedules"] == []
    (sent,) = live.all_messages(live.source)
    meta = json.loads(sent["Body"])[ENVELOPE_KEY]
    assert (meta["id"], meta["attempt"]) == ("order-2", 2)
    assert "due_at" not in meta  # else the consumer would wait for it again, unprocessed


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--policy", '{"max_attempts": 2}', "--error", "TimeoutError", "--json"],
        ["simulate", "--native", "--json"],
        ["inspect", "--queue-url", "{exhausted}", "--json"],
        ["redrive", "--from-queue-url", "{exhausted}", "--to-queue-url", "{source}", "--dry-run", "--json"],
        ["discard", "--queue-url", "{exhausted}", "--dry-run", "--json"],
        ["retries", "--group", "default", "--json"],
    ],
)
def test_every_command_answers_json(live: World, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    _seed(live)
    boto3.client("scheduler", region_name=REGION)  # the default group exists in moto
    filled = [a.replace("{exhausted}", live.exhausted).replace("{source}", live.source) for a in argv]
    assert _code(filled) == 0, capsys.readouterr().err
    json.loads(capsys.readouterr().out)


def test_run_now_leaves_a_schedule_it_cannot_deliver(live: World, capsys: pytest.CaptureFixture[str]) -> None:
    """A universal target (the self-healing redrive publishing to SNS): not sent by hand, not deleted."""
    scheduler = boto3.client("scheduler", region_name=REGION)
    scheduler.create_schedule(
        Name="sh-publish",
        ScheduleExpression="at(2099-01-01T00:00:00)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={
            "Arn": "arn:aws:scheduler:::aws-sdk:sns:publish",
            "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/scheduler",
            "Input": "{}",
        },
    )
    assert _code(["retries", "--group", "default", "--run-now", "sh-publish", "--yes"]) == 1
    assert "neither an SQS queue nor a Lambda function" in capsys.readouterr().err
    assert [s["Name"] for s in scheduler.list_schedules(GroupName="default")["Schedules"]] == ["sh-publish"]

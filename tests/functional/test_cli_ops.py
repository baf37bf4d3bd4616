"""``serverless-retry inspect`` and ``redrive`` through the CLI on in-process moto: end to end with
filters, exit codes (0 ok, 1 partial failure, 2 usage), one-line errors, plain output without rich."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws
from serverless_retry.clock import FrozenClock
from serverless_retry_tools import cli

from tests.functional.redrive_world import World, make_world


@pytest.fixture
def live() -> Iterator[World]:
    with mock_aws():
        yield make_world(boto3.client("sqs", region_name="us-east-1"), FrozenClock())


def _seed(world: World) -> None:
    world.final("a", TimeoutError("read timed out"))
    world.final("b", TimeoutError("read timed out"))
    world.final("c", ValueError("bad order"), outcome="non-retryable")


def test_redrive_end_to_end_dry_run_then_real(live: World, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(live)
    common = ["redrive", "--from-queue-url", live.exhausted, "--to-queue-url", live.source]
    filters = ["--outcome", "exhausted", "--error-type", "TimeoutError", "--max", "5"]
    assert cli.main([*common, *filters, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "id-a" in out
    assert "id-b" in out
    assert "id-c" not in out
    assert "dry run: would move 2, would skip 1" in out
    assert "nothing was changed" in out
    assert live.counts(live.source) == (0, 0)
    assert cli.main([*common, *filters, "--rate", "50/s", "--yes"]) == 0
    assert "moved 2, skipped 1, failed 0" in capsys.readouterr().out
    assert live.counts(live.source) == (2, 0)
    assert live.counts(live.exhausted) == (1, 0)


def test_inspect_json_and_plain_table(
    live: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(live)
    assert cli.main(["inspect", "--queue-url", live.exhausted, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["by_outcome"] == {"exhausted": 2, "non-retryable": 1}
    assert report["released"] is True
    assert [m["error_type"] for m in report["oldest"]].count("TimeoutError") == 2
    monkeypatch.setenv("SERVERLESS_RETRY_PLAIN", "1")  # as without rich installed
    assert cli.main(["inspect", "--queue-url", live.exhausted, "--oldest", "3"]) == 0
    out = capsys.readouterr().out
    assert "by outcome" in out
    assert "exhausted" in out
    assert "3 message(s) looked at; none removed, every one visible again" in out
    assert not set(out) & set("─│┃━╇"), "plain output has no box drawing"
    assert "\x1b[" not in out, "no colours when not a terminal"
    assert live.counts(live.exhausted) == (3, 0)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_inspect_with_rich_draws_a_table_on_a_terminal_only(
    live: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a pipe (capsys) the table is plain even with rich installed: no box characters, no padding
    to a console width (it once padded every line to 240 columns)."""
    pytest.importorskip("rich")
    monkeypatch.delenv("SERVERLESS_RETRY_PLAIN", raising=False)
    _seed(live)
    assert cli.main(["inspect", "--queue-url", live.exhausted]) == 0
    out = capsys.readouterr().out
    assert not set(out) & set("─│┃━╇")
    assert "\x1b[" not in out
    assert all(line == line.rstrip() for line in out.splitlines()), "no trailing padding"
    assert max(len(line) for line in out.splitlines()) < 200
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert cli.main(["inspect", "--queue-url", live.exhausted]) == 0
    assert "│" in terminal.getvalue()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max", "-1"], "--max"),
        (["--max", "0"], "--max"),
        (["--rate", "0"], "--rate"),
        (["--rate", "fast"], "--rate"),
        (["--older-than", "2h", "--newer-than", "1h"], "--newer-than: selects nothing"),
        (["--older-than", "-5m"], "--older-than"),
        (["--native", "--outcome", "exhausted"], "--native"),
        (["--native", "--rate", "501"], "--rate"),
    ],
)
def test_nonsense_redrive_arguments_exit_2(
    live: World, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    base = ["redrive", "--from-queue-url", live.exhausted, "--to-queue-url", live.source]
    try:
        code = cli.main([*base, *args])
    except SystemExit as exited:  # argparse refuses the value itself
        code = int(exited.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_redrive_without_a_destination_goes_to_each_recorded_source(
    live: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --to-queue-url: each envelope goes back to the source queue it records (it was once a usage
    error); a message that records none stays, listed, and the exit status says so."""
    _seed(live)
    live.sqs.send_message(QueueUrl=live.exhausted, MessageBody="no envelope, no source")
    assert cli.main(["redrive", "--from-queue-url", live.exhausted, "--dry-run"]) == 1
    captured = capsys.readouterr()
    assert "would move 3, would skip 0, not routed 1 (to each message's recorded source queue" in captured.out
    assert live.source in captured.out  # the "to" column
    assert "not routed" in captured.err
    assert live.counts(live.source) == (0, 0)
    assert cli.main(["redrive", "--from-queue-url", live.exhausted, "--yes", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["moved"] == 3
    assert set(report["routes"].values()) == {live.source}
    assert live.counts(live.source) == (3, 0)
    assert live.counts(live.exhausted) == (1, 0)


def test_native_where_it_cannot_apply_says_why_and_exits_2(
    live: World, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(live)
    assert cli.main(["redrive", "--from-queue-url", live.exhausted, "--native"]) == 2
    err = capsys.readouterr().err
    assert "--native does not apply" in err
    assert "redrive policy" in err
    assert live.counts(live.exhausted) == (3, 0)


def test_an_aws_error_is_one_line(live: World, capsys: pytest.CaptureFixture[str]) -> None:
    missing = live.exhausted.replace("orders-exhausted", "no-such-queue")
    assert cli.main(["inspect", "--queue-url", missing]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: AWS GetQueueAttributes: ")
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["inspect", "redrive", "discard", "retries", "move-tasks"])
def test_help_has_examples_and_exit_codes(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    assert f"serverless-retry {command} --" in out
    assert "exit status: 0 ok" in " ".join(out.split())

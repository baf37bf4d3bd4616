"""An unexpected error ends a command with one line on stderr and exit status 1, not a traceback
(``SERVERLESS_RETRY_TRACEBACK=1`` shows it); the documented exit codes stay as they were."""

from __future__ import annotations

import argparse

import pytest
from serverless_retry_tools import cli
from serverless_retry_tools.commands import redrive as redrive_command

TRACEBACK = "SERVERLESS_RETRY_TRACEBACK"
ARGV = [
    "redrive",
    "--from-queue-url",
    "https://sqs.us-east-1.amazonaws.com/123456789012/orders-exhausted",
    "--to-queue-url",
    "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
    "--yes",
]


def _broken(args: argparse.Namespace) -> object:
    raise RuntimeError("the clock file is being written without end")


def test_an_unexpected_error_is_one_line_and_exit_status_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TRACEBACK, raising=False)
    monkeypatch.setattr(redrive_command, "sqs_client", _broken)

    assert cli.main(ARGV) == 1

    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    [line] = captured.err.splitlines()
    assert line == (
        "error: redrive stopped on an unexpected error (anything not moved is still in its queue): "
        "RuntimeError: the clock file is being written without end "
        f"(set {TRACEBACK}=1 to see where)"
    )


def test_the_traceback_is_there_when_asked_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TRACEBACK, "1")
    monkeypatch.setattr(redrive_command, "sqs_client", _broken)

    assert cli.main(ARGV) == 1

    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "in _broken" in err


def test_an_interrupt_still_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: argparse.Namespace) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(redrive_command, "sqs_client", interrupted)
    assert cli.main(ARGV) == 130
    assert "interrupted" in capsys.readouterr().err

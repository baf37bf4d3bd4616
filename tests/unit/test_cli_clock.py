"""The operator's commands take "now" from the emulator's clock when AWS_ENDPOINT_URL is the emulator
(``GET /_serverless_retry/clock``), else from the system."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from serverless_retry.clock import ScaledClock, SystemClock
from serverless_retry_tools import cli
from serverless_retry_tools.commands import retries
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.local.emulator_contract import CLOCK_ROUTE


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == CLOCK_ROUTE and self.server.serves_clock:  # type: ignore[attr-defined]
            body = json.dumps({"epoch": 1_796_040_000.5, "scale": 30.0}).encode()
            self.send_response(200)
        else:
            body = b"<html>not found</html>"
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def _server(serves_clock: bool) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.serves_clock = serves_clock  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def emulator_url() -> Iterator[str]:
    yield from _server(serves_clock=True)


@pytest.fixture
def other_url() -> Iterator[str]:
    yield from _server(serves_clock=False)


def test_the_emulators_clock_when_the_endpoint_serves_it(emulator_url: str) -> None:
    for variable in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"):
        assert command_clock({variable: emulator_url + "/"}) == ScaledClock(epoch=1_796_040_000.5, scale=30.0)


def test_the_system_clock_everywhere_else(other_url: str) -> None:
    assert isinstance(command_clock({}), SystemClock)  # real AWS
    assert isinstance(command_clock({"AWS_ENDPOINT_URL": other_url}), SystemClock)  # no clock served
    assert isinstance(command_clock({"AWS_ENDPOINT_URL": "http://127.0.0.1:9"}), SystemClock)  # nobody
    assert isinstance(command_clock({"AWS_ENDPOINT_URL": "not a url"}), SystemClock)


class _OneSchedule:
    """A Scheduler group holding one retry due at a logical time of the emulator's clock."""

    def list_schedules(self, **_: object) -> dict[str, object]:
        return {"Schedules": [{"Name": "sr-1"}]}

    def get_schedule(self, Name: str, GroupName: str) -> dict[str, object]:
        return {
            "Name": Name,
            "GroupName": GroupName,
            "ScheduleExpression": "at(2027-01-01T00:00:00)",
            "ScheduleExpressionTimezone": "UTC",
            "Target": {"Arn": "arn:aws:sqs:us-east-1:123456789012:orders", "Input": "{}"},
        }


def _shown_now(out: str) -> datetime:
    match = re.search(r"\(now (\S+)\)", out)
    assert match, out
    return datetime.strptime(match[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def test_retries_shows_now_on_the_clock_of_its_due_times(
    emulator_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The emulator's Scheduler fires on its logical clock, so "now" beside the due times must be
    # logical too: the host's clock there made a retry due in the past look days away (or the reverse).
    monkeypatch.setenv("AWS_ENDPOINT_URL", emulator_url)
    monkeypatch.setattr(retries, "scheduler_client", lambda _args: _OneSchedule())
    logical = ScaledClock(epoch=1_796_040_000.5, scale=30.0)
    before = logical.now().replace(microsecond=0)
    assert cli.main(["retries", "--group", "orders-retries", "--region", "us-east-1"]) == 0
    after = logical.now()
    shown = _shown_now(capsys.readouterr().out)
    assert before <= shown <= after
    assert abs(shown - datetime.now(UTC)) > timedelta(hours=1)  # not the host's clock

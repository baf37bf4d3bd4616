"""The operator's commands take "now" from the emulator's clock when AWS_ENDPOINT_URL is the emulator
(``GET /_serverless_retry/clock``), else from the system."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from serverless_retry.clock import ScaledClock, SystemClock
from serverless_retry_tools.commands.clock import command_clock
from serverless_retry_tools.local.logical_time import CLOCK_ROUTE


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

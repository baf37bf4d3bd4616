"""Start and stop the local AWS emulator (moto in server mode) on a free 127.0.0.1 port.

    with Emulator(clock_scale=100) as emu:
        boto3.client("sqs", **emu.client_kwargs()).list_queues()
        subprocess.run(["terraform", "apply", ...], env={**os.environ, **emu.env()})
        Runtime(emu.url, ...)  # reads emu.clock from the emulator itself

The emulator owns the logical clock (``clock_scale``, ``clock_epoch``): its SQS runs on it (see
:mod:`serverless_retry_tools.local.emulator.logical_time`), and the runtime and every function it invokes use
the same one, so the clock is chosen once, when the emulator starts.

Why a child process rather than moto's ``ThreadedMotoServer`` in this process: moto keeps its state
in module globals, so an in-process server would share it with every ``mock_aws`` test in the same
pytest process (which resets it) and with any second emulator; the compatibility patches
(:mod:`serverless_retry_tools.local.emulator.moto_patches`) would leak into the caller; and the server would
compete for this process's GIL with the runtime. A child gets its own state, its own patches and
its own interpreter, and ``stop()`` ends it for certain. The runtime then reads everything through
the AWS API, exactly as it would against a real endpoint: the things moto could not serve that way,
a function's deployed code and its layers' zips, are served by the ``lambda_code_location_unreachable``
and ``lambda_layer_content_unreachable`` patches at the URLs GetFunction and GetLayerVersion return,
as AWS does with its presigned S3 URLs.

This module imports nothing from moto; the child (:mod:`serverless_retry_tools.local.emulator.emulator_server`)
does.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from serverless_retry.clock import ScaledClock

from serverless_retry_tools.local.clock.held_clock import SharedClock
from serverless_retry_tools.local.emulator_contract import ACCOUNT_ID, ADVANCE_ROUTE, FAKE_CREDENTIALS

__all__ = ["Emulator", "EmulatorError"]

_START_TIMEOUT_SECONDS = 60.0
_STOP_TIMEOUT_SECONDS = 10.0


class EmulatorError(RuntimeError):
    """The emulator could not start or died."""


class Emulator:
    """moto server in a child process, bound to 127.0.0.1 on a free port.

    ``patches`` names the compatibility patches to apply (default: all of them); pass ``()`` to get
    raw moto, which the patch tests use to prove each gap still exists.
    """

    def __init__(
        self,
        *,
        region: str = "us-east-1",
        patches: tuple[str, ...] | None = None,
        log_path: Path | None = None,
        python: str = sys.executable,
        clock_scale: float = 1.0,
        clock_epoch: float | None = None,
    ) -> None:
        if not clock_scale > 0:
            raise ValueError(f"clock_scale must be > 0, got {clock_scale!r}")
        self.region = region
        self.account_id = ACCOUNT_ID
        self._patches = patches
        self._log_path = log_path
        self._python = python
        self._proc: subprocess.Popen[str] | None = None
        self._log_file: Any = None
        self._url: str | None = None
        self.applied_patches: list[str] = []
        self._clock_scale = float(clock_scale)
        self._clock_epoch = clock_epoch
        self._clock: ScaledClock | SharedClock | None = None
        self._clock_file: Path | None = None

    @classmethod
    def attach(
        cls,
        url: str,
        *,
        region: str,
        clock_epoch: float,
        clock_scale: float,
        patches: list[str],
        clock_file: str | None = None,
    ) -> Emulator:
        """An emulator another process started and will stop (e.g. a test stack shared by pytest-xdist
        workers): its address, region and clock, and no process of its own (``stop()`` leaves it)."""
        emulator = cls(region=region, clock_scale=clock_scale, clock_epoch=clock_epoch)
        emulator._url = url
        emulator._clock = _clock(clock_epoch, clock_scale, clock_file)
        emulator.applied_patches = list(patches)
        return emulator

    @property
    def url(self) -> str:
        if self._url is None:
            raise EmulatorError("the emulator is not running: call start() first")
        return self._url

    @property
    def clock(self) -> ScaledClock | SharedClock:
        """The logical clock the emulator's SQS runs on (chosen when it starts; held while the
        runtime has due events to dispatch: see held_clock.py)."""
        if self._clock is None:
            raise EmulatorError("the emulator is not running: call start() first")
        return self._clock

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> str:
        if self._proc is not None:
            raise EmulatorError("the emulator is already started")
        # --watch-stdin: stdin stays a pipe that only we hold, so the child exits when it reads EOF and
        # cannot outlive this process even when we are killed without a chance to call stop().
        cmd = [
            self._python,
            "-m",
            "serverless_retry_tools.local.emulator.emulator_server",
            "--host",
            "127.0.0.1",
            "--region",
            self.region,
            "--watch-stdin",
        ]
        if self._patches is not None:
            cmd += ["--patches", ",".join(self._patches) or "none"]
        epoch = time.time() if self._clock_epoch is None else self._clock_epoch
        cmd += ["--clock-scale", repr(self._clock_scale), "--clock-epoch", repr(epoch)]
        if self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = self._log_path.open("a+", encoding="utf-8")
        else:
            # Unnamed and deleted on close; read back only to explain a failed start.
            self._log_file = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(FAKE_CREDENTIALS)
        env["AWS_DEFAULT_REGION"] = self.region
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            env=env,
            text=True,
        )
        try:
            ready = self._read_ready_line()
        except BaseException:
            self.stop()
            raise
        self._url = str(ready["url"])
        self.applied_patches = [str(p) for p in ready.get("patches", [])]
        clock = ready["clock"]
        self._clock = _clock(float(clock["epoch"]), float(clock["scale"]), clock.get("file"))
        self._clock_file = Path(clock["file"]) if clock.get("file") else None
        return self._url

    def _read_ready_line(self) -> dict[str, Any]:
        assert self._proc is not None
        assert self._proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self._proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + _START_TIMEOUT_SECONDS
        try:
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    raise EmulatorError(
                        f"the emulator exited with code {self._proc.returncode} before it was ready"
                        + self._log_tail()
                    )
                if sel.select(timeout=0.2):
                    line = self._proc.stdout.readline()
                    if line.startswith("{"):
                        parsed: dict[str, Any] = json.loads(line)
                        return parsed
        finally:
            sel.close()
        raise EmulatorError(f"the emulator was not ready within {_START_TIMEOUT_SECONDS:.0f} s")

    def _log_tail(self) -> str:
        try:
            self._log_file.flush()
            self._log_file.seek(0)
            tail = self._log_file.read()[-2000:]
        except (OSError, ValueError):
            return ""
        return f":\n{tail}" if tail else ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        self._url = None
        self._clock = None
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=_STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=_STOP_TIMEOUT_SECONDS)
            if proc.stdout is not None:
                proc.stdout.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._clock_file is not None:  # the child removes it, unless it was killed
            self._clock_file.unlink(missing_ok=True)
            self._clock_file = None

    def advance_clock(self, logical_seconds: float) -> float:
        """Jump the emulator's logical clock ``logical_seconds`` forward at once (e.g. past a queue's
        retention) and answer the logical now it reached (Unix seconds). Never past a due event the
        runtime has not dispatched yet: the jump stops there (the answer is less than asked), and
        another jump goes on once it was dispatched. SQS then runs on the new time: a message past its
        queue's MessageRetentionPeriod is no longer received (moto's retention is lazy: it keeps and counts the message, but never hands it out)."""
        request = urllib.request.Request(
            self.url + ADVANCE_ROUTE,
            data=json.dumps({"seconds": float(logical_seconds)}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return float(json.loads(response.read())["now"])

    def env(self) -> dict[str, str]:
        """Environment for a process that should talk only to this emulator (terraform, handlers)."""
        return {
            **FAKE_CREDENTIALS,
            "AWS_ENDPOINT_URL": self.url,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
        }

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``boto3.client(service, **kwargs)`` aimed at this emulator."""
        return {
            "endpoint_url": self.url,
            "region_name": self.region,
            "aws_access_key_id": FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            "aws_session_token": FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
        }

    def __enter__(self) -> Emulator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _clock(epoch: float, scale: float, file: str | None) -> ScaledClock | SharedClock:
    """The emulator's clock as its file shows it (held: see held_clock.py), or its plain line."""
    if file:
        with contextlib.suppress(OSError):
            return SharedClock(Path(file), epoch=epoch, scale=scale)
    return ScaledClock(epoch=epoch, scale=scale)

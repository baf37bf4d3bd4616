""" "Now" for the operator's commands: the emulator's logical clock when they talk to it, else the system's.

Under the local emulator SQS runs on a logical clock (``--clock-scale k``): SentTimestamp, and so every
message age, is logical. Measured against the wall clock, a message an hour old at k = 100 would look
36 seconds old (or, before the clocks meet, not born yet). So when ``AWS_ENDPOINT_URL`` (or
``AWS_ENDPOINT_URL_SQS``) is set and the endpoint serves the emulator's clock
(``GET /_serverless_retry/clock``: ``{"epoch", "scale"}``), ages and ``--older-than`` are measured on
that clock (as the emulator holds it for the runtime, read from its clock file when it is on this
machine: see ``serverless_retry_tools.local.clock.held_clock``). Any other endpoint, or none, is AWS or a stand-in without a logical clock: the system
clock. This stays in the tools: the Lambda functions run on AWS time (``SystemClock``), and under the
emulator the runtime hands them its clock in their environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from serverless_retry.clock import Clock, ScaledClock, SystemClock

from serverless_retry_tools.local.clock.held_clock import SharedClock
from serverless_retry_tools.local.emulator_contract import CLOCK_ROUTE

__all__ = ["command_clock"]

_TIMEOUT_SECONDS = 2.0


def command_clock(env: Mapping[str, str] | None = None) -> Clock:
    """The clock the commands measure ages with (see the module docstring)."""
    env = os.environ if env is None else env
    endpoint = env.get("AWS_ENDPOINT_URL_SQS") or env.get("AWS_ENDPOINT_URL")
    if not endpoint or not endpoint.startswith(("http://", "https://")):
        return SystemClock()
    try:
        with urllib.request.urlopen(endpoint.rstrip("/") + CLOCK_ROUTE, timeout=_TIMEOUT_SECONDS) as response:
            served = json.loads(response.read())
        epoch, scale = float(served["epoch"]), float(served["scale"])
    except (OSError, ValueError, KeyError, TypeError):  # not the emulator: no clock to read
        return SystemClock()
    if not scale > 0:
        return SystemClock()
    if served.get("file"):  # the emulator on this machine: its clock as held for the runtime
        with contextlib.suppress(OSError, ValueError):
            return SharedClock(Path(str(served["file"])), epoch=epoch, scale=scale)
    return ScaledClock(epoch=epoch, scale=scale)

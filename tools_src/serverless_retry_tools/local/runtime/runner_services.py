"""What the pipe and async-invocation runners use of the runtime, handed to them as values and
callables: the runners (:mod:`serverless_retry_tools.local.runtime.pipes`,
:mod:`serverless_retry_tools.local.runtime.async_runner`) never import the runtime that builds them
(:mod:`serverless_retry_tools.local.runtime.runtime`), and a test gives them fakes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from serverless_retry.clock import ScaledClock

from serverless_retry_tools.local.clock.held_clock import SharedClock
from serverless_retry_tools.local.runtime.clock_holder import ClockHolder
from serverless_retry_tools.local.runtime.functions import FunctionPool

__all__ = ["Count", "Emit", "RunnerServices"]


class Emit(Protocol):
    def __call__(self, kind: str, **detail: Any) -> None: ...


class Count(Protocol):
    def __call__(self, **deltas: int) -> None: ...


@dataclass(frozen=True)
class RunnerServices:
    region: str
    clock: ScaledClock | SharedClock  # the emulator's logical clock
    functions: FunctionPool  # runs a function's deployed code in its workers
    clock_holder: ClockHolder  # tells the emulator which due events logical time waits for
    client: Callable[[str], Any]  # a boto3 client of the emulator, by service name
    emit: Emit  # a runtime event (progress output, tests; "error" is counted as an error)
    warn_once: Callable[[str, str], None]  # (key, message): a warning shown once per key
    count: Count  # adds to the runtime's stats
    queue_url: Callable[[Any, str], str]  # (sqs client, queue ARN) -> URL, cached
    invoke_async: Callable[[str, str], None]  # (function, JSON payload): an Event invocation

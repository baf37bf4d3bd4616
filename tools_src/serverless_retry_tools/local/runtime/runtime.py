"""The parts of AWS that moto stores but never runs: SQS event source mappings, EventBridge
Scheduler one-time schedules and (see :mod:`serverless_retry_tools.local.runtime.pipes`) Pipes with SQS sources. Everything the runtime does, it reads from the emulator's own state
through the AWS API (ListEventSourceMappings, GetFunction and its Code.Location, ListSchedules,
GetSchedule), never from a list of its own: apply a different root, or change a batch size with
UpdateEventSourceMapping, and the runtime follows.

Event source mappings. One poller thread per enabled mapping on an SQS queue receives up to its
BatchSize messages (waiting up to MaximumBatchingWindowInSeconds for a full batch), with the
queue's own visibility timeout, and hands the batch to the mapped function (see
:mod:`serverless_retry_tools.local.runtime.functions`: the deployed zip, the function's environment, worker
processes, the function's timeout). As Lambda's pollers do, it goes on receiving while batches run:
as many batches of one mapping are in flight as Lambda's scaling allows
(:mod:`serverless_retry_tools.local.aws_rules.poller_scaling`: five, then up to 300 more a logical minute while
full batches keep coming, within ScalingConfig.MaximumConcurrency and 1,000), and it receives no more
than that (a received message's visibility timeout is running), each receive with a warm worker in
hand (past the runtime's ``max_concurrency`` workers per function, it waits for one) (FunctionPool.lease: at x100 a 180 s visibility timeout is 1.8 real s, less
than starting Python and importing a handler under load). A FIFO queue's
batches run concurrently across message groups; SQS hands out no message of a group that has one in
flight, so a group stays in order. Each batch then gets Lambda's rules for the answer
(:func:`serverless_retry_tools.local.aws_rules.sqs_events.judge_batch`): successes are deleted; batch item failures,
and the whole batch when the handler raised, timed out or crashed, are left alone, so the visibility
timeout brings them back and the queue's redrive policy moves them to its DLQ after
maxReceiveCount receives. Reserved concurrency is not a poller limit, as on AWS: past it (and always
at 0) the poller still receives, and the invocation is throttled; the batch runs as soon as a slot of
the reserve frees up within its visibility timeout, and otherwise comes back, one receive nearer the
DLQ. ScalingConfig.MaximumConcurrency at most the reserve prevents this. Not emulated: FilterCriteria
(a mapping with one is skipped, with a warning).

Schedules. Every group is listed; an ENABLED schedule with an ``at()`` expression fires once the
logical time reaches it. Its Target.Input goes to Target.Arn: SQS SendMessage (with
SqsParameters.MessageGroupId), SNS Publish, a Lambda asynchronous invoke (Invoke with
InvocationType=Event, as the Scheduler's templated Lambda target does), or a universal target's API
call (``aws-sdk:<service>:<action>``, :mod:`serverless_retry_tools.local.runtime.scheduler_targets`). The target's RoleArn is not assumed (the emulator checks no permissions). A failed delivery
is retried per the target's RetryPolicy (MaximumRetryAttempts, MaximumEventAgeInSeconds) with
exponential backoff, then sent to DeadLetterConfig.Arn with Scheduler's error attributes. When the
delivery is settled the schedule is deleted if ActionAfterCompletion is DELETE, else never fired
again.

Recursive loop detection (:mod:`serverless_retry_tools.local.aws_rules.recursion`). Each SQS-mapped invocation
gets an X-Ray trace header continuing its records' chain of requests (the worker sets it as
_X_AMZN_TRACE_ID, botocore sends it with the function's calls, SQS keeps it as AWSTraceHeader); a
record whose chain already ran a function 16 times is not run unless GetFunctionRecursionConfig says
Allow, as Lambda stops it: the message comes back after its visibility timeout, until the redrive
policy moves it to the DLQ, and RecursiveInvocationsDropped (AWS/Lambda) goes to the emulator's
CloudWatch. Asynchronous invocations and pipes get no header here (not emulated: they start a chain).

Asynchronous invocations (Invoke Event, SNS -> Lambda, rule -> Lambda, Scheduler -> Lambda, Lambda
destinations) are queued by the emulator and run by :mod:`serverless_retry_tools.local.runtime.async_runner`
with Lambda's async retries, event age and destinations.

Logical time. The emulator owns one clock (:attr:`Emulator.clock
<serverless_retry_tools.local.emulator.emulator.Emulator.clock>`, served at ``/_serverless_retry/clock``):
logical now = epoch + (real now - epoch) x scale. Its SQS runs on it (delays, visibility
timeouts, retention, timestamps: see :mod:`serverless_retry_tools.local.emulator.logical_time`), the runtime
reads it from the emulator, and passes it to every function it invokes as
SERVERLESS_RETRY_CLOCK_EPOCH / SERVERLESS_RETRY_CLOCK_SCALE, so nothing is converted anywhere:
- a consumer's ``DelaySeconds=d`` or visibility timeout is d logical seconds in the queue;
- a schedule's ``at()`` is due when the logical now reaches it, and the schedule loop sleeps until
  the next due instant (so a schedule is late by the loop's refresh at most, well inside the
  Scheduler's documented one-minute window); Scheduler retry backoff is logical too;
- an event source mapping's MaximumBatchingWindowInSeconds is logical;
- envelope timestamps and max_age are logical on both sides, so budgets hold.
The clock waits for the runtime (:mod:`serverless_retry_tools.local.clock.held_clock`): the emulator holds
it at the earliest due message of a queue whose poller is ready to receive (below its concurrency)
and at each due schedule until the runtime settles it, so a starved runtime stretches real time and
delivers on logical time; every function's worker reads the same held clock.
Function execution is real time: a function's Timeout is enforced in real seconds, so a queue whose
visibility timeout is 6 x the function timeout (180 logical seconds for the module default of 30 s)
hands a failed batch back after 180 / scale real seconds, but a function still has its whole real
timeout to run.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
from serverless_retry.clock import ScaledClock

from serverless_retry_tools.local.aws_rules.lambda_async import MAX_ASYNC_PAYLOAD_BYTES
from serverless_retry_tools.local.aws_rules.poller_scaling import PollerScaling
from serverless_retry_tools.local.aws_rules.recursion import (
    DROPPED_METRIC,
    LAMBDA_NAMESPACE,
    STOPPED_MESSAGE,
    TRACE_DIR_VARIABLE,
    invocation_chain,
    split_stopped,
)
from serverless_retry_tools.local.aws_rules.schedules import after_failure, dead_letter_attributes, parse_at
from serverless_retry_tools.local.aws_rules.sqs_events import judge_batch, split_by_payload, sqs_event
from serverless_retry_tools.local.clock.held_clock import SharedClock
from serverless_retry_tools.local.emulator_contract import CLOCK_ROUTE, FAKE_CREDENTIALS
from serverless_retry_tools.local.runtime.async_runner import AsyncRunner
from serverless_retry_tools.local.runtime.clock_holder import ClockHolder
from serverless_retry_tools.local.runtime.functions import (
    CLOCK_FILE_VARIABLE,
    DEFAULT_MAX_CONCURRENCY,
    FunctionConfig,
    FunctionPool,
    Lease,
    Throttled,
    throttled,
)
from serverless_retry_tools.local.runtime.lambda_metrics import instrument as count_lambda_metrics
from serverless_retry_tools.local.runtime.logs import LogShipper
from serverless_retry_tools.local.runtime.pipes import PipeRunner
from serverless_retry_tools.local.runtime.polling import delete_messages, receive_batch
from serverless_retry_tools.local.runtime.runner_services import RunnerServices
from serverless_retry_tools.local.runtime.scheduler_targets import call_universal_target
from serverless_retry_tools.local.runtime.streams import StreamRunner

__all__ = ["ASYNC_PAYLOAD_LIMIT", "Runtime", "RuntimeEvent", "ServiceError"]

_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=30)
_MAPPING_REFRESH_SECONDS = 0.5
# How often a poller at its concurrency looks again (Lambda's scaling may have raised it).
_FLIGHT_RECHECK_SECONDS = 0.1
# How often (real seconds) the schedule list is read again; between reads the loop sleeps until the
# next known schedule is due, so a known schedule fires within milliseconds of its at().
_SCHEDULE_REFRESH_SECONDS = 0.2


# Lambda's limit on an asynchronous (Event) invocation's payload (checked by the emulator's Invoke).
ASYNC_PAYLOAD_LIMIT = MAX_ASYNC_PAYLOAD_BYTES


class ServiceError(Exception):
    """An error the real service would answer, shaped like botocore's ClientError where it counts
    (``response["Error"]["Code"]``), so a Scheduler dead-letter message carries the right code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.response = {"Error": {"Code": code, "Message": message}}


@dataclass(frozen=True)
class RuntimeEvent:
    """Something the runtime did, for progress output and tests."""

    kind: str  # batch | schedule-fired | schedule-retry | schedule-dead-lettered | async-invoke | warning | error
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Schedule:
    arn: str
    name: str
    group: str
    modified: Any
    description: dict[str, Any]
    due_at: datetime | None
    retries_done: int = 0
    next_attempt_at: datetime | None = None
    settled: bool = False


class _InFlight:
    """The batches of one event source mapping that are running, each in a thread of its own."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running: set[threading.Thread] = set()

    def count(self) -> int:
        with self._changed:
            return len(self._running)

    def wait_below(self, limit: Callable[[], int], stop: threading.Event) -> bool:
        """Wait until fewer than ``limit()`` batches run (True), or a stop (False)."""
        with self._changed:
            while len(self._running) >= limit():
                if stop.is_set():
                    return False
                self._changed.wait(_FLIGHT_RECHECK_SECONDS)
        return not stop.is_set()

    def start(self, target: Callable[[], None], *, name: str) -> None:
        def run() -> None:
            try:
                target()
            finally:
                with self._changed:
                    self._running.discard(thread)
                    self._changed.notify_all()

        thread = threading.Thread(target=run, name=name, daemon=True)
        with self._changed:
            self._running.add(thread)
        thread.start()

    def drain(self) -> None:
        with self._changed:
            running = list(self._running)
        for thread in running:
            thread.join()


class Runtime:
    """Runs event source mappings and schedules of the emulator at ``endpoint_url`` until stopped."""

    def __init__(
        self,
        endpoint_url: str,
        *,
        region: str = "us-east-1",
        work_dir: Path,
        clock: ScaledClock | None = None,
        on_event: Callable[[RuntimeEvent], None] | None = None,
        echo_logs: bool = False,
        log_tap: Callable[[str, str], None] | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    ) -> None:
        """``max_concurrency``: how many invocations of one function may run at once (each in its own
        worker process), below the function's reserved concurrency if that is lower."""
        self.endpoint_url = endpoint_url
        self.region = region
        self.work_dir = work_dir
        self._on_event = on_event
        self._warned: set[str] = set()
        self.errors: list[str] = []
        self.clock: ScaledClock | SharedClock = clock or self._emulator_clock()
        # Tells the emulator what logical time must wait for (see clock_holder.py).
        self.clock_holder = ClockHolder(endpoint_url, on_error=lambda m: self.warn_once("clock-holds", m))
        self._session = boto3.session.Session(
            aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
            region_name=region,
        )
        self._clients_lock = threading.Lock()
        # Each invocation's X-Ray trace header, by request id, for its worker to set as
        # _X_AMZN_TRACE_ID (worker.py): what carries a chain of requests (recursion.py).
        self._trace_dir = work_dir / "traces"
        self._trace_dir.mkdir(parents=True, exist_ok=True)
        self.logs = LogShipper(self.client("logs"), work_dir / "logs", echo=echo_logs, tap=log_tap)
        self.functions = FunctionPool(
            self.client("lambda"),
            work_dir,
            region=region,
            extra_env={
                **FAKE_CREDENTIALS,
                "AWS_ENDPOINT_URL": endpoint_url,
                "SERVERLESS_RETRY_CLOCK_SCALE": repr(float(self.clock.scale)),
                "SERVERLESS_RETRY_CLOCK_EPOCH": repr(self.clock.epoch),
                TRACE_DIR_VARIABLE: str(self._trace_dir),
                # Lambda code sees the held clock through time.time (worker.py).
                **(
                    {CLOCK_FILE_VARIABLE: str(self.clock.path)} if isinstance(self.clock, SharedClock) else {}
                ),
            },
            log_sink=self.logs,
            on_warning=lambda name, message: self.warn_once(f"python:{name}", f"function {name}: {message}"),
            max_concurrency=max_concurrency,
        )
        # AWS/Lambda Invocations, Errors, Throttles and Duration, put to the emulator's CloudWatch.
        count_lambda_metrics(self.functions, self.client("cloudwatch"), self.clock)
        self._stop = threading.Event()
        # The runners get what they use of the runtime, not the runtime (runner_services.py).
        services = RunnerServices(
            region=region,
            clock=self.clock,
            functions=self.functions,
            clock_holder=self.clock_holder,
            client=self.client,
            emit=self.emit,
            warn_once=self.warn_once,
            count=self.count,
            queue_url=self.queue_url,
            invoke_async=self.invoke_async,
        )
        self.pipes = PipeRunner(services, self._stop)
        self.streams = StreamRunner(services, self._stop)
        self.async_runner = AsyncRunner(services, self._stop)
        self._threads: list[threading.Thread] = []
        self._pollers: dict[str, threading.Thread] = {}
        self._mappings: dict[str, dict[str, Any]] = {}
        # Each mapped function as the mapping loop last described it: a poller reads it here rather
        # than calling GetFunction between two receives (at x100 its ~10 ms are a logical second in
        # which a message falling due waits). A new deployment is seen within one refresh.
        self._configs: dict[str, FunctionConfig] = {}
        # Each mapped function's recursion config (GetFunctionRecursionConfig), read with its config.
        self._recursion: dict[str, str] = {}
        self._mappings_lock = threading.Lock()
        self._queue_urls: dict[str, str] = {}
        self._schedules: dict[str, _Schedule] = {}
        self._started = False
        self.stats: dict[str, int] = {
            "batches": 0,
            "messages_received": 0,
            "messages_deleted": 0,
            "messages_left_for_retry": 0,
            "failed_batches": 0,
            "throttled_batches": 0,  # received for a function with reserved concurrency 0
            "throttled_batches_returned": 0,  # still throttled when their visibility timeout ran out
            "messages_throttled": 0,
            "schedules_fired": 0,
            "schedule_delivery_failures": 0,
            "schedules_dead_lettered": 0,
            "async_invocations": 0,
            "async_throttles": 0,
            "pipe_batches": 0,
            "pipe_messages": 0,
            # Lambda's RecursiveInvocationsDropped: SQS messages whose invocation was stopped.
            "recursive_invocations_dropped": 0,
        }
        self._stats_lock = threading.Lock()

    # -- plumbing -----------------------------------------------------------------------------------
    def _emulator_clock(self) -> ScaledClock | SharedClock:
        """The emulator's own clock (held, when it serves its file); real time (scale 1) for an
        endpoint that does not serve one."""
        try:
            with urllib.request.urlopen(self.endpoint_url.rstrip("/") + CLOCK_ROUTE, timeout=10) as response:
                clock = json.loads(response.read())
            epoch, scale = float(clock["epoch"]), float(clock["scale"])
            if clock.get("file"):
                with contextlib.suppress(OSError):
                    return SharedClock(Path(clock["file"]), epoch=epoch, scale=scale)
            return ScaledClock(epoch=epoch, scale=scale)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.warn_once("clock", f"{self.endpoint_url} serves no logical clock ({exc!r}): using real time")
            return ScaledClock(epoch=time.time(), scale=1.0)

    def client(self, service: str) -> Any:
        # boto3 sessions are not thread-safe to create clients from; clients themselves are.
        with self._clients_lock:
            return self._session.client(service, endpoint_url=self.endpoint_url, config=_CLIENT_CONFIG)  # type: ignore[call-overload]

    def emit(self, kind: str, **detail: Any) -> None:
        if kind == "error":
            self.errors.append(str(detail.get("error", detail)))
        if self._on_event is not None:
            with contextlib.suppress(Exception):
                self._on_event(RuntimeEvent(kind, detail))

    def warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.emit("warning", message=message)

    def count(self, **deltas: int) -> None:
        with self._stats_lock:
            for key, value in deltas.items():
                self.stats[key] += value

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self.logs.start()
        self.clock_holder.fires_schedules()
        self.async_runner.announce()
        loops = (
            (self._mapping_loop, "mappings"),
            (self._schedule_loop, "schedules"),
            (self.pipes.loop, "pipes"),
            (self.streams.loop, "streams"),
            (self.async_runner.loop, "lambda-async"),
        )
        for target, name in loops:
            thread = threading.Thread(target=target, name=f"runtime-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def run(
        self,
        *,
        until: Callable[[], bool] | None = None,
        deadline_seconds: float = 60.0,
        check_every: float = 0.5,
    ) -> bool:
        """Run until ``until()`` is true or the deadline (real seconds) passes; then stop.
        Returns whether ``until`` was satisfied (False on the deadline)."""
        self.start()
        end = time.monotonic() + deadline_seconds
        satisfied = False
        try:
            while time.monotonic() < end:
                if until is not None and until():
                    satisfied = True
                    break
                self._stop.wait(min(check_every, max(0.0, end - time.monotonic())))
        finally:
            self.stop()
        return satisfied

    def stop(self) -> None:
        self._stop.set()
        self.clock_holder.release()  # logical time no longer waits for this runtime
        for thread in [
            *self._threads,
            *self._pollers.values(),
            *self.pipes.threads.values(),
            *self.streams.threads.values(),
        ]:
            thread.join(timeout=15)
        self.async_runner.close()
        self.functions.close()
        self.logs.stop()

    def __enter__(self) -> Runtime:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- event source mappings ----------------------------------------------------------------------
    def _mapping_loop(self) -> None:
        lam = self.client("lambda")
        while not self._stop.is_set():
            try:
                found: dict[str, dict[str, Any]] = {}
                for page in lam.get_paginator("list_event_source_mappings").paginate():
                    for mapping in page.get("EventSourceMappings", []):
                        if str(mapping.get("EventSourceArn", "")).split(":")[2:3] == ["sqs"]:
                            found[mapping["UUID"]] = mapping
                configs: dict[str, FunctionConfig] = {}
                recursion: dict[str, str] = {}
                for arn in {str(m["FunctionArn"]) for m in found.values()}:
                    try:
                        configs[arn] = self.functions.describe(arn)
                        recursion[arn] = self._recursive_loop(lam, arn)
                    except Exception as exc:  # deleted meanwhile: its poller describes it itself
                        self.emit("error", where=f"get_function {arn}", error=repr(exc))
                with self._mappings_lock:
                    self._mappings = found
                    self._configs = configs
                    self._recursion = recursion
                for uuid in found:
                    if uuid not in self._pollers or not self._pollers[uuid].is_alive():
                        thread = threading.Thread(
                            target=self._poll_mapping, args=(uuid,), name=f"esm-{uuid[:8]}", daemon=True
                        )
                        self._pollers[uuid] = thread
                        thread.start()
            except Exception as exc:
                self.emit("error", where="list_event_source_mappings", error=repr(exc))
            if not self._stop.is_set():
                self.clock_holder.renew()
            self._stop.wait(_MAPPING_REFRESH_SECONDS)

    def _recursive_loop(self, lam: Any, arn: str) -> str:
        """The function's recursion config; Lambda's default (Terminate) where the emulator has
        none to give (its lambda_recursion_config_not_implemented patch is off)."""
        try:
            return str(
                lam.get_function_recursion_config(FunctionName=arn).get("RecursiveLoop") or "Terminate"
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                raise
            self.warn_once(
                "recursion-config", f"GetFunctionRecursionConfig failed ({exc!r}): Terminate assumed"
            )
            return "Terminate"

    def _mapping(self, uuid: str) -> dict[str, Any] | None:
        with self._mappings_lock:
            return self._mappings.get(uuid)

    def _function_of(self, mapping: dict[str, Any]) -> FunctionConfig:
        arn = str(mapping["FunctionArn"])
        with self._mappings_lock:
            config = self._configs.get(arn)
        return config if config is not None else self.functions.describe(arn)

    def queue_url(self, sqs: Any, arn: str) -> str:
        if arn not in self._queue_urls:
            _, _, _, _, account, name = arn.split(":", 5)
            self._queue_urls[arn] = sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)[
                "QueueUrl"
            ]
        return self._queue_urls[arn]

    def _poll_mapping(self, uuid: str) -> None:
        sqs = self.client("sqs")
        flight = _InFlight()
        scaling = PollerScaling()
        prepared: FunctionConfig | None = None
        queue_arn: str | None = None

        def ready(now_ready: bool) -> None:
            if queue_arn is not None:
                self.clock_holder.ready(queue_arn, now_ready)

        try:
            while not self._stop.is_set():
                mapping = self._mapping(uuid)
                if mapping is None:
                    return  # deleted
                if queue_arn not in (None, mapping["EventSourceArn"]):
                    ready(False)
                queue_arn = str(mapping["EventSourceArn"])
                if mapping.get("State") not in ("Enabled", "Enabling", "Updating", None):
                    ready(False)
                    self._stop.wait(_MAPPING_REFRESH_SECONDS)
                    continue
                if mapping.get("FilterCriteria"):
                    self.warn_once(
                        uuid, f"event source mapping {uuid} has FilterCriteria: not emulated, skipped"
                    )
                    ready(False)
                    self._stop.wait(_MAPPING_REFRESH_SECONDS)
                    continue
                try:
                    config = self._function_of(mapping)
                    # Before its first receive with this code: see FunctionPool.prepare.
                    if config != prepared:
                        self.functions.prepare(config)
                        prepared = config
                    # Receive only what Lambda's pollers would run now: a received message's
                    # visibility timeout is ticking. At that concurrency the queue is not waited for
                    # (AWS would leave its messages waiting too); below it, logical time waits for
                    # this poller to take what is due.
                    maximum = self._maximum_concurrency(mapping)

                    def limit(maximum: int | None = maximum) -> int:
                        return scaling.limit(self._now(), maximum)

                    if flight.count() >= limit():
                        ready(False)
                    if not flight.wait_below(limit, self._stop):
                        continue
                    ready(True)
                    if config.reserved_concurrency is not None:
                        got = self._poll_reserved(sqs, mapping, config, flight)
                    else:
                        # ... and only with a warm worker in hand, for the same reason.
                        lease = self.functions.lease(config)
                        got = 0
                        try:
                            got = self._poll_once(sqs, mapping, config, flight, lease)
                        finally:
                            if not got:  # the worker goes back to the pool
                                lease.release()
                    scaling.received(
                        self._now(),
                        count=got,
                        asked=int(mapping.get("BatchSize") or 10),
                        maximum_concurrency=maximum,
                    )
                except Exception as exc:
                    ready(False)
                    self.emit("error", where=f"event source mapping {uuid}", error=repr(exc))
                    self._stop.wait(1.0)
        finally:
            ready(False)
            flight.drain()  # a stop lets the running batches finish (each within its function's timeout)

    def _now(self) -> float:
        """Logical now, Unix seconds."""
        return self.clock.now().timestamp()

    @staticmethod
    def _maximum_concurrency(mapping: dict[str, Any]) -> int | None:
        """ScalingConfig.MaximumConcurrency (2-1000), if set. Not the function's reserved
        concurrency: Lambda's pollers ignore it, and the batches past it are throttled (the
        overpull MaximumConcurrency prevents). The runtime's own cap (``max_concurrency`` worker
        processes per function) is not a limit either: a batch past it waits for a worker, and
        logical time with it."""
        maximum = (mapping.get("ScalingConfig") or {}).get("MaximumConcurrency")
        return int(maximum) if maximum else None

    def _receive(self, sqs: Any, mapping: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """The mapping's queue URL and one batch from it (empty: none came), per its BatchSize and
        batching window (logical seconds)."""
        queue_url = self.queue_url(sqs, mapping["EventSourceArn"])
        batch_size = int(mapping.get("BatchSize") or 10)
        window = self.clock.real_duration(float(mapping.get("MaximumBatchingWindowInSeconds") or 0))
        return queue_url, receive_batch(sqs, queue_url, batch_size, window, self._stop)

    def _poll_once(
        self, sqs: Any, mapping: dict[str, Any], config: FunctionConfig, flight: _InFlight, lease: Lease
    ) -> int:
        """Receive one batch and start it with ``lease`` (which it then releases); how many
        messages it received."""
        queue_url, received = self._receive(sqs, mapping)
        if not received:
            return 0
        flight.start(
            lambda: self._run_batch(sqs, mapping, config, queue_url, received, lease=lease),
            name=f"esm-batch-{mapping['UUID'][:8]}",
        )
        return len(received)

    def _poll_reserved(
        self, sqs: Any, mapping: dict[str, Any], config: FunctionConfig, flight: _InFlight
    ) -> int:
        """A function with reserved concurrency. Lambda's pollers do not look at it: they receive a
        batch, then invoke, and past the reserve (always, at 0) the invoke is throttled. No slot is
        held while receiving: a poll waiting on an empty queue would keep a throttled batch out.
        Returns how many messages it received."""
        queue_url, received = self._receive(sqs, mapping)
        if not received:
            return 0
        try:
            lease = self.functions.lease(config, throttle=True)
        except Throttled:
            self.count(throttled_batches=1, messages_throttled=len(received))
            self.emit("throttled", mapping=mapping["UUID"], function=config.name, size=len(received))

            def retry() -> None:
                try:
                    self._retry_throttled(sqs, mapping, queue_url, received)
                except Exception as exc:  # the messages come back after their visibility timeout
                    self.emit("error", where=f"event source mapping {mapping['UUID']}", error=repr(exc))

            flight.start(retry, name=f"esm-throttled-{mapping['UUID'][:8]}")
            return len(received)
        flight.start(
            lambda: self._run_batch(sqs, mapping, config, queue_url, received, lease=lease),
            name=f"esm-batch-{mapping['UUID'][:8]}",
        )
        return len(received)

    def _retry_throttled(
        self, sqs: Any, mapping: dict[str, Any], queue_url: str, received: list[dict[str, Any]]
    ) -> None:
        """Retry a throttled batch until its visibility timeout runs out: it runs as soon as a slot
        of the function's reserve frees up (or the reserve is raised); otherwise the messages come
        back by themselves, their receive count raised by the next receive."""
        visibility = int(
            sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["VisibilityTimeout"])["Attributes"][
                "VisibilityTimeout"
            ]
        )
        deadline = time.monotonic() + self.clock.real_duration(visibility)
        while not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            current = self._mapping(mapping["UUID"])
            if current is None or current.get("State") not in ("Enabled", "Enabling", "Updating", None):
                break  # deleted or disabled meanwhile: Lambda stops retrying its batches too
            config = self._function_of(current)  # re-read: the reserve may have been raised
            wait = min(left, _MAPPING_REFRESH_SECONDS)
            try:
                lease = self.functions.lease(config, throttle=True, patience=wait)
            except Throttled:
                if throttled(config):  # refused without waiting: wait for a new configuration
                    self._stop.wait(wait)
                continue
            self._run_batch(sqs, current, config, queue_url, received, lease=lease)
            return
        self.count(throttled_batches_returned=1)
        self.emit("throttled-returned", mapping=mapping["UUID"], size=len(received))

    def _run_batch(
        self,
        sqs: Any,
        mapping: dict[str, Any],
        config: FunctionConfig,
        queue_url: str,
        received: list[dict[str, Any]],
        *,
        lease: Lease,
    ) -> None:
        try:
            # A synchronous invocation carries at most 6 MB: a larger batch goes in several invocations.
            for messages in split_by_payload(received, mapping["EventSourceArn"], self.region):
                self._invoke_batch(sqs, mapping, config, queue_url, messages, lease=lease)
        except Exception as exc:  # the messages not deleted come back after their visibility timeout
            self.emit("error", where=f"event source mapping {mapping['UUID']}", error=repr(exc))
        finally:
            lease.release()

    def _invoke_batch(
        self,
        sqs: Any,
        mapping: dict[str, Any],
        config: FunctionConfig,
        queue_url: str,
        messages: list[dict[str, Any]],
        *,
        lease: Lease,
    ) -> None:
        queue_arn = mapping["EventSourceArn"]
        with self._mappings_lock:
            allowed = self._recursion.get(config.arn, "Terminate") == "Allow"
        messages, stopped = split_stopped(messages, config.arn, allowed=allowed)
        if stopped:
            self._drop_recursive(mapping, config, stopped)
        if not messages:
            return
        event = sqs_event(messages, queue_arn, self.region)
        # Lambda stops a function at its timeout, long before its batch's visibility ends; here the
        # timeout runs in real seconds, so logical time is held at the invocation's logical deadline
        # until it ends, or a slow machine would redeliver the batch while it still runs.
        token = f"batch-{uuid.uuid4()}"
        # The invocation continues its records' chain of requests; its worker sets the header.
        request_id = str(uuid.uuid4())
        chain = invocation_chain(
            [(m.get("Attributes") or {}).get("AWSTraceHeader") for m in messages], config.arn, now=self._now()
        )
        trace_file = self._trace_dir / request_id
        trace_file.write_text(chain.header())
        self.clock_holder.running(token, self.clock.now().timestamp() + config.timeout)
        try:
            result = lease.invoke(config, event, request_id)
        finally:
            self.clock_holder.running(token, None)
            trace_file.unlink(missing_ok=True)
        verdict = judge_batch(
            [m["MessageId"] for m in messages],
            errored=not result.ok,
            response=result.result,
            report_batch_item_failures="ReportBatchItemFailures"
            in (mapping.get("FunctionResponseTypes") or []),
            error_text=result.error_text,
        )
        for failure in delete_messages(sqs, queue_url, messages, verdict.delete):
            self.emit("error", where="delete_message_batch", error=str(failure))
        self.count(
            batches=1,
            messages_received=len(messages),
            messages_deleted=len(verdict.delete),
            messages_left_for_retry=len(verdict.keep),
            failed_batches=1 if verdict.complete_failure else 0,
        )
        self.emit(
            "batch",
            mapping=mapping["UUID"],
            function=config.name,
            queue=queue_arn,
            size=len(messages),
            deleted=len(verdict.delete),
            kept=len(verdict.keep),
            why=verdict.why,
            request_id=result.request_id,
            duration_ms=round(result.duration_ms, 1),
        )

    def _drop_recursive(
        self, mapping: dict[str, Any], config: FunctionConfig, stopped: list[dict[str, Any]]
    ) -> None:
        """Lambda stops these records' invocation (recursion.py): the function does not run, the
        messages stay in the queue and come back after their visibility timeout, until the redrive
        policy moves them to the DLQ. Lambda emits RecursiveInvocationsDropped (AWS/Lambda); here it
        goes to the emulator's CloudWatch, and to the runtime's stats and events."""
        self.count(recursive_invocations_dropped=len(stopped))
        self.warn_once(
            f"recursion:{config.arn}",
            f"function {config.name}: RecursiveInvocationException: {STOPPED_MESSAGE}",
        )
        self.emit(
            "recursion-stopped",
            mapping=mapping["UUID"],
            function=config.name,
            queue=mapping["EventSourceArn"],
            message_ids=[m["MessageId"] for m in stopped],
            error=f"RecursiveInvocationException: {STOPPED_MESSAGE}",
        )
        try:
            self.client("cloudwatch").put_metric_data(
                Namespace=LAMBDA_NAMESPACE,
                MetricData=[
                    {
                        "MetricName": DROPPED_METRIC,
                        "Dimensions": [{"Name": "FunctionName", "Value": config.name}],
                        "Timestamp": self.clock.now(),
                        "Value": float(len(stopped)),
                        "Unit": "Count",
                    }
                ],
            )
        except Exception as exc:  # the stats and the event still say it
            self.warn_once("recursion-metric", f"PutMetricData {DROPPED_METRIC} failed: {exc!r}")

    # -- schedules ------------------------------------------------------------------------------------
    def _schedule_loop(self) -> None:
        scheduler = self.client("scheduler")
        next_refresh = 0.0
        while not self._stop.is_set():
            try:
                refresh = time.monotonic() >= next_refresh
                if refresh:
                    next_refresh = time.monotonic() + _SCHEDULE_REFRESH_SECONDS
                self._schedule_tick(scheduler, refresh=refresh)
            except Exception as exc:
                self.emit("error", where="schedules", error=repr(exc))
                self._stop.wait(1.0)
            self._stop.wait(min(max(0.0, next_refresh - time.monotonic()), self._until_next_due()))

    def _until_next_due(self) -> float:
        """Real seconds until the earliest pending schedule (or retry) is due."""
        pending = [
            s.next_attempt_at or s.due_at
            for s in self._schedules.values()
            if not s.settled and s.due_at is not None and s.description.get("State", "ENABLED") == "ENABLED"
        ]
        if not pending:
            return _SCHEDULE_REFRESH_SECONDS
        logical = (min(p for p in pending if p is not None) - self.clock.now()).total_seconds()
        return self.clock.real_duration(logical)

    def _schedule_tick(self, scheduler: Any, *, refresh: bool = True) -> None:
        if refresh:
            self._refresh_schedules(scheduler)
        now = self.clock.now()
        for schedule in list(self._schedules.values()):
            if self._stop.is_set():
                return
            if schedule.settled or schedule.due_at is None:
                continue
            if schedule.description.get("State", "ENABLED") != "ENABLED":
                continue
            when = schedule.next_attempt_at or schedule.due_at
            if now >= when:
                self._fire(scheduler, schedule)

    def _refresh_schedules(self, scheduler: Any) -> None:
        seen: set[str] = set()
        groups = [
            g["Name"]
            for page in scheduler.get_paginator("list_schedule_groups").paginate()
            for g in page.get("ScheduleGroups", [])
        ]
        for group in groups:
            for page in scheduler.get_paginator("list_schedules").paginate(GroupName=group):
                for summary in page.get("Schedules", []):
                    arn = summary["Arn"]
                    seen.add(arn)
                    known = self._schedules.get(arn)
                    if known is None or known.modified != summary.get("LastModificationDate"):
                        self._schedules[arn] = self._load_schedule(scheduler, summary)
        for arn in list(self._schedules):
            if arn not in seen:
                del self._schedules[arn]

    def _load_schedule(self, scheduler: Any, summary: dict[str, Any]) -> _Schedule:
        description = scheduler.get_schedule(Name=summary["Name"], GroupName=summary["GroupName"])
        due: datetime | None = None
        try:
            due = parse_at(description["ScheduleExpression"], description.get("ScheduleExpressionTimezone"))
        except ValueError as exc:
            self.warn_once(summary["Arn"], f"schedule {summary['Name']}: {exc}")
        if due is None:
            self.warn_once(
                summary["Arn"], f"schedule {summary['Name']}: only at() expressions fire locally, skipped"
            )
        return _Schedule(
            arn=summary["Arn"],
            name=summary["Name"],
            group=summary["GroupName"],
            modified=summary.get("LastModificationDate"),
            description=description,
            due_at=due,
        )

    def _fire(self, scheduler: Any, schedule: _Schedule) -> None:
        target = schedule.description["Target"]
        now = self.clock.now()
        try:
            self._deliver(schedule, target)
        except Exception as exc:
            self.count(schedule_delivery_failures=1)
            assert schedule.due_at is not None
            decision = after_failure(
                target.get("RetryPolicy"), retries_done=schedule.retries_done, due_at=schedule.due_at, now=now
            )
            if decision.action == "retry":
                schedule.retries_done += 1
                schedule.next_attempt_at = decision.next_attempt_at
                assert decision.next_attempt_at is not None
                self.clock_holder.settled(schedule.arn, decision.next_attempt_at.timestamp())
                self.emit("schedule-retry", schedule=schedule.name, group=schedule.group, error=repr(exc))
                return
            self._dead_letter(schedule, target, exc, decision.condition)
        else:
            self.count(schedules_fired=1)
            self.emit(
                "schedule-fired",
                schedule=schedule.name,
                group=schedule.group,
                target=target["Arn"],
                due_at=schedule.due_at.isoformat() if schedule.due_at else None,
                lateness_logical_s=round((now - schedule.due_at).total_seconds(), 3)
                if schedule.due_at
                else None,
            )
        schedule.settled = True
        self.clock_holder.settled(schedule.arn, None)
        if schedule.description.get("ActionAfterCompletion") == "DELETE":
            with contextlib.suppress(scheduler.exceptions.ResourceNotFoundException):
                scheduler.delete_schedule(Name=schedule.name, GroupName=schedule.group)

    def _deliver(self, schedule: _Schedule, target: dict[str, Any]) -> None:
        arn: str = target["Arn"]
        payload: str = target.get("Input") or "{}"
        service = arn.split(":")[2]
        if service == "sqs":
            # Exactly what the Scheduler's templated SQS target sends: the Input as the body and,
            # from SqsParameters, a MessageGroupId; never a deduplication id or attributes. A FIFO
            # queue without content-based deduplication therefore refuses it here, as on AWS.
            sqs = self.client("sqs")
            params: dict[str, Any] = {"QueueUrl": self.queue_url(sqs, arn), "MessageBody": payload}
            group_id = (target.get("SqsParameters") or {}).get("MessageGroupId")
            if group_id:
                params["MessageGroupId"] = group_id
            sqs.send_message(**params)
        elif service == "sns":
            self.client("sns").publish(TopicArn=arn, Message=payload)
        elif service == "lambda":
            self.invoke_async(arn, payload)
        elif service == "scheduler":
            call_universal_target(self.client, arn, target.get("Input"))
        else:
            raise NotImplementedError(f"schedule target service {service!r} is not emulated")

    def _dead_letter(
        self, schedule: _Schedule, target: dict[str, Any], exc: Exception, condition: str
    ) -> None:
        dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
        self.count(schedules_dead_lettered=1)
        self.emit(
            "schedule-dead-lettered", schedule=schedule.name, group=schedule.group, dlq=dlq, error=repr(exc)
        )
        if not dlq:
            return
        sqs = self.client("sqs")
        code = getattr(exc, "response", {}).get("Error", {}).get("Code") or type(exc).__name__
        sqs.send_message(
            QueueUrl=self.queue_url(sqs, dlq),
            MessageBody=target.get("Input") or "{}",
            MessageAttributes=dead_letter_attributes(
                schedule_arn=schedule.arn,
                target_arn=target["Arn"],
                error_code=str(code),
                error_message=str(exc),
                retries=schedule.retries_done,
                condition=condition,
            ),
        )

    # -- asynchronous Lambda invocation --------------------------------------------------------------
    def invoke_async(self, function: str, payload: str) -> None:
        """Invoke(InvocationType=Event) on the emulator, as the Scheduler and Pipes do: the emulator
        checks and queues it, :mod:`serverless_retry_tools.local.runtime.async_runner` runs it with Lambda's
        async retries and destinations. Raises when Invoke refuses it (the caller's retries apply)."""
        lam = self.client("lambda")
        try:
            lam.invoke(FunctionName=function, InvocationType="Event", Payload=payload.encode())
        except ClientError as exc:  # Lambda's answer, e.g. RequestEntityTooLargeException
            error = exc.response.get("Error", {})
            raise ServiceError(str(error.get("Code")), str(error.get("Message"))) from exc

"""Lambda event source mappings on Kinesis streams and DynamoDB streams, run locally: moto stores
the mappings (and, patched, no longer tries to run them itself), this runner polls the shards.

As Lambda does (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html, services-kinesis-parameters): every
enabled mapping whose EventSourceArn is a Kinesis stream or a DynamoDB table's stream gets one
poller per shard, which reads the shard in order from the mapping's StartingPosition and runs one
batch at a time: up to BatchSize records, waiting up to MaximumBatchingWindowInSeconds (logical
seconds) for a full batch, cut to the 6 MB synchronous payload, invoked synchronously with the
event as AWS shapes it (:mod:`~serverless_retry_tools.local.streams.events`). The checkpoint is the
runner's, per shard: a batch is done when the function succeeded with it, or when it was discarded.

The answer and the retries are :mod:`~serverless_retry_tools.local.streams.answers`: partial batch
responses with ReportBatchItemFailures (checkpoint before the lowest reported sequence number, retry
from it), MaximumRetryAttempts, MaximumRecordAgeInSeconds (on the logical clock: the emulator keeps
Kinesis and DynamoDB Streams arrival times logical), BisectBatchOnFunctionError. A throttled
invocation (reserved concurrency 0) is retried without counting, until the records expire
(kinesis-on-failure-destination.html). A discarded batch's invocation record goes to
DestinationConfig.OnFailure.Destination (:mod:`~serverless_retry_tools.local.streams.failure_records`),
and the shard goes on; without a destination the records are just skipped. Later records of the
shard wait while a batch is retried; the other shards do not.

Logical time waits for a running invocation (up to its logical deadline, as for SQS batches) but
not for a shard's poller: a record is read within a poll interval (real seconds) of its arrival.
LATEST starts where the shard ends when its poller first reads it (on AWS: when the mapping is
created), so records written before the runtime starts are not seen.

Not emulated (a warning says so): ParallelizationFactor above 1 (one batch per shard at a time),
FilterCriteria (such a mapping is skipped), TumblingWindowInSeconds; nor (silently) enhanced fan-out
consumers, or shard splits and merges (shards are polled as ListShards lists them, parents not
first).

Events: ``stream-batch`` (mapping, shard, first, last, size, outcome: ok / partial / failed /
throttled, why), ``stream-discarded`` (mapping, shard, first, last, size, condition); the progress
of every shard, checkpoint and per-record wait, is :meth:`StreamRunner.progress`.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from serverless_retry_tools.local.functions import FunctionConfig, InvocationResult, Throttled
from serverless_retry_tools.local.runner_services import RunnerServices
from serverless_retry_tools.local.streams.answers import (
    RECORD_AGE_EXCEEDED,
    Plan,
    RetryPolicy,
    expired_prefix,
    judge_stream_batch,
    plan_next,
)
from serverless_retry_tools.local.streams.checkpoints import Checkpoints, ShardProgress
from serverless_retry_tools.local.streams.events import StreamRecord, fits_payload, stream_event
from serverless_retry_tools.local.streams.failure_records import failure_record, send_failure_record
from serverless_retry_tools.local.streams.shards import ShardSource, shard_source, source_kind

__all__ = ["StreamRunner"]

_REFRESH_SECONDS = 0.5
# How often (real seconds) an idle shard is read again. Lambda reads a Kinesis shard once a second
# and a DynamoDB stream's four times a second (with-kinesis, with-ddb): Kinesis faster here, so a
# test at a high clock scale is not late by many logical seconds (each DynamoDB Streams read leaves
# a shard iterator behind in moto: those stay at AWS's rate).
_POLL_SECONDS = {"kinesis": 0.1, "dynamodb": 0.25}
# Pause (real seconds) before a failed batch is retried: enough not to spin, far below any limit.
_RETRY_PAUSE_SECONDS = 0.05
_DEFAULT_BATCH_SIZE = 100  # Kinesis and DynamoDB Streams (services-kinesis-parameters)
_ENABLED = ("Enabled", "Enabling", "Updating", None)


def _drop(plan: Plan, count: int) -> Plan:
    """``plan`` without its first ``count`` records."""
    out: list[tuple[int, int]] = []
    for size, retries in plan:
        taken = min(size, count)
        count -= taken
        if size - taken:
            out.append((size - taken, retries))
    return tuple(out)


class StreamRunner:
    def __init__(self, services: RunnerServices, stop: threading.Event) -> None:
        self._rt = services
        self._stop = stop
        self._mappings: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._roles: dict[str, str] = {}
        self._sources: dict[tuple[str, str], ShardSource] = {}  # (mapping, stream ARN): its reader
        self._threads: dict[str, threading.Thread] = {}
        self._checkpoints = Checkpoints()

    @property
    def threads(self) -> dict[str, threading.Thread]:
        """The shard pollers (a copy: the runtime joins them on stop while the loop may add one)."""
        with self._lock:
            return dict(self._threads)

    def progress(self) -> Mapping[str, Mapping[str, ShardProgress]]:
        """mapping UUID -> shard id -> checkpoint, per-record waits and discarded records."""
        return self._checkpoints.snapshot()

    # -- mappings -----------------------------------------------------------------------------------
    def loop(self) -> None:
        lam = self._rt.client("lambda")
        while not self._stop.is_set():
            try:
                self._refresh(lam)
            except Exception as exc:
                self._rt.emit("error", where="stream event source mappings", error=repr(exc))
            self._stop.wait(_REFRESH_SECONDS)

    def _refresh(self, lam: Any) -> None:
        found: dict[str, dict[str, Any]] = {}
        for page in lam.get_paginator("list_event_source_mappings").paginate():
            for mapping in page.get("EventSourceMappings", []):
                if source_kind(str(mapping.get("EventSourceArn", ""))):
                    found[mapping["UUID"]] = mapping
        with self._lock:
            self._mappings = found
        for mapping_uuid, mapping in found.items():
            if mapping.get("State") in _ENABLED:
                try:
                    self._start_pollers(mapping_uuid, mapping)
                except Exception as exc:  # e.g. its stream was deleted: the other mappings go on
                    self._rt.emit("error", where=f"stream mapping {mapping_uuid}", error=repr(exc))

    def _start_pollers(self, mapping_uuid: str, mapping: Mapping[str, Any]) -> None:
        """A poller for each of the mapping's shards that has none running."""
        arn = str(mapping["EventSourceArn"])
        key_of_source = (mapping_uuid, arn)
        if key_of_source not in self._sources:
            self._sources[key_of_source] = self._source(mapping)
        for shard_id in self._sources[key_of_source].shards():
            key = f"{mapping_uuid}/{shard_id}"
            with self._lock:
                running = self._threads.get(key)
            if self._stop.is_set() or (running is not None and running.is_alive()):
                continue
            thread = threading.Thread(
                target=self._poll_shard,
                args=(mapping_uuid, arn, shard_id),
                name=f"stream-{mapping_uuid[:8]}-{shard_id[-6:]}",
                daemon=True,
            )
            with self._lock:
                self._threads[key] = thread
            thread.start()

    def _mapping(self, mapping_uuid: str) -> dict[str, Any] | None:
        with self._lock:
            return self._mappings.get(mapping_uuid)

    def _source(self, mapping: Mapping[str, Any]) -> ShardSource:
        arn = str(mapping["EventSourceArn"])
        kind = source_kind(arn) or ""
        client = self._rt.client("kinesis" if kind == "kinesis" else "dynamodbstreams")
        function = str(mapping["FunctionArn"])
        return shard_source(kind, client, arn, region=self._rt.region, role=lambda: self._role(function))

    def _role(self, function_arn: str) -> str:
        if function_arn not in self._roles:
            configuration = self._rt.client("lambda").get_function_configuration(FunctionName=function_arn)
            self._roles[function_arn] = str(configuration.get("Role") or "")
        return self._roles[function_arn]

    def _supported(self, mapping_uuid: str, mapping: Mapping[str, Any]) -> bool:
        if mapping.get("FilterCriteria"):
            self._rt.warn_once(
                f"stream:{mapping_uuid}:filter",
                f"event source mapping {mapping_uuid} has FilterCriteria: not emulated, skipped",
            )
            return False
        if int(mapping.get("ParallelizationFactor") or 1) > 1:
            self._rt.warn_once(
                f"stream:{mapping_uuid}:parallel",
                f"event source mapping {mapping_uuid}: ParallelizationFactor "
                f"{mapping['ParallelizationFactor']} not emulated, one batch per shard at a time",
            )
        if mapping.get("TumblingWindowInSeconds"):
            self._rt.warn_once(
                f"stream:{mapping_uuid}:tumbling",
                f"event source mapping {mapping_uuid}: TumblingWindowInSeconds not emulated, ignored",
            )
        return True

    # -- one shard ----------------------------------------------------------------------------------
    def _poll_shard(self, mapping_uuid: str, arn: str, shard_id: str) -> None:
        shard = _Shard(self, mapping_uuid, arn, shard_id)
        while not self._stop.is_set():
            mapping = self._mapping(mapping_uuid)
            if mapping is None or str(mapping["EventSourceArn"]) != arn:
                return  # deleted (or pointed elsewhere: a new poller starts for that)
            if mapping.get("State") not in _ENABLED or not self._supported(mapping_uuid, mapping):
                self._stop.wait(_REFRESH_SECONDS)
                continue
            try:
                if not shard.step(mapping):
                    self._stop.wait(_POLL_SECONDS.get(shard.kind, 0.25))
            except Exception as exc:
                self._rt.emit("error", where=f"stream mapping {mapping_uuid} {shard_id}", error=repr(exc))
                shard.iterator = None  # read again from the checkpoint
                self._stop.wait(1.0)


class _Shard:
    """One shard's poller state: the records read past the checkpoint, and the plan of the next
    batches (what a failed batch left to retry)."""

    def __init__(self, runner: StreamRunner, mapping_uuid: str, arn: str, shard_id: str) -> None:
        self.runner = runner
        self.rt = runner._rt
        self.mapping_uuid = mapping_uuid
        self.arn = arn
        self.kind = source_kind(arn) or ""
        self.shard_id = shard_id
        self.source: ShardSource | None = None
        self.iterator: str | None = None
        self.closed = False
        self.buffer: list[StreamRecord] = []
        self.plan: Plan = ()
        self.since: float | None = None  # logical time the oldest buffered record was first read
        # Invocations the first pending record was in (approximateInvokeCount when it is discarded).
        self.invocations = 0

    def _now(self) -> float:
        return self.rt.clock.now().timestamp()

    def _read(self, mapping: Mapping[str, Any], batch_size: int) -> None:
        if self.source is None:
            self.source = self.runner._source(mapping)
        if self.iterator is None:
            self.buffer, self.plan, self.since, self.closed = [], (), None, False
            self.iterator = self.source.iterator(
                self.shard_id,
                str(mapping.get("StartingPosition") or "TRIM_HORIZON"),
                timestamp=mapping.get("StartingPositionTimestamp"),
                after=self.runner._checkpoints.get(self.mapping_uuid, self.shard_id),
            )
        if self.closed or len(self.buffer) >= batch_size:
            return
        records, following = self.source.read(self.shard_id, self.iterator, batch_size - len(self.buffer))
        if following is None:
            self.closed = True  # a closed shard (split or merged): nothing more comes
        else:
            self.iterator = following
        if records and not self.buffer:
            self.since = self._now()
        self.buffer.extend(records)

    def step(self, mapping: Mapping[str, Any]) -> bool:
        """Read, then run at most one batch; False when there was nothing to do."""
        batch_size = int(mapping.get("BatchSize") or _DEFAULT_BATCH_SIZE)
        self._read(mapping, batch_size)
        if not self.buffer:
            return False
        policy = RetryPolicy.of(mapping)
        now = self._now()
        expired = expired_prefix([r.arrival for r in self.buffer], now, policy.maximum_record_age)
        if expired:
            invokes = self.invocations
            self.invocations = 0
            self._discard(
                mapping,
                self.buffer[:expired],
                RECORD_AGE_EXCEEDED,
                invokes=invokes,
                request_id="",
                function_error=None,
            )
            self.plan = _drop(self.plan, expired)
            self.buffer = self.buffer[expired:]
            if not self.buffer:
                self.since = None
            return True
        if self.plan:
            (size, retries), rest = self.plan[0], self.plan[1:]
        else:
            window = float(mapping.get("MaximumBatchingWindowInSeconds") or 0)
            waited = now - (self.since if self.since is not None else now)
            if len(self.buffer) < batch_size and not self.closed and waited < window:
                return False  # gathering: the window is logical
            size, retries, rest = min(batch_size, len(self.buffer)), 0, ()
        fits = fits_payload(self.buffer[:size])
        if fits < size:  # the 6 MB payload cuts the batch; the rest is the next batch
            size, rest = fits, ((size - fits, retries), *rest)
        batch = self.buffer[:size]
        self._invoke(mapping, batch, retries, rest, policy)
        return True

    def _invoke(
        self,
        mapping: Mapping[str, Any],
        batch: list[StreamRecord],
        retries: int,
        rest: Plan,
        policy: RetryPolicy,
    ) -> None:
        function_arn = str(mapping["FunctionArn"])
        sequence_numbers = [r.sequence_number for r in batch]
        config = self.rt.functions.describe(function_arn)
        result = self._call(config, batch)
        detail = {
            "mapping": self.mapping_uuid,
            "function": config.name,
            "shard": self.shard_id,
            "first": sequence_numbers[0],
            "last": sequence_numbers[-1],
            "size": len(batch),
            "attempt": retries + 1,
        }
        if result is None:  # throttled: retried until the records expire, no retry counted
            self.plan = ((len(batch), retries), *rest)
            self.rt.emit("stream-batch", **detail, outcome="throttled", why="throttled")
            self.runner._stop.wait(_REFRESH_SECONDS)
            return
        verdict = judge_stream_batch(
            sequence_numbers,
            errored=not result.ok,
            response=result.result,
            report_batch_item_failures="ReportBatchItemFailures"
            in (mapping.get("FunctionResponseTypes") or []),
            error_text=result.error_text,
        )
        planned = plan_next(verdict, retries, policy, rest)
        finished = self._now()
        done = batch[: planned.done]
        if done:
            self.runner._checkpoints.processed(
                self.mapping_uuid,
                self.shard_id,
                {r.sequence_number: finished - r.arrival for r in done},
                done[-1].sequence_number,
            )
        given_up = batch[planned.done : planned.done + planned.discard]
        outcome = "ok" if verdict.success else "partial" if verdict.partial else "failed"
        self.rt.emit("stream-batch", **detail, outcome=outcome, why=verdict.why, request_id=result.request_id)
        self.buffer = self.buffer[planned.done + planned.discard :]
        self.plan = planned.plan
        # approximateInvokeCount: the invocations the shard's first pending record was in.
        invocations = self.invocations + 1
        if planned.done or planned.discard:
            left_in_batch = planned.done + planned.discard < len(batch)
            self.invocations = 1 if left_in_batch else 0
        else:
            self.invocations = invocations
        if given_up:
            self._discard(
                mapping,
                given_up,
                planned.condition,
                invokes=invocations,
                request_id=result.request_id,
                function_error="Unhandled" if not result.ok else None,
            )
        if not self.buffer:
            self.since = None
        if not verdict.success:
            self.runner._stop.wait(_RETRY_PAUSE_SECONDS)

    def _call(self, config: FunctionConfig, batch: list[StreamRecord]) -> InvocationResult | None:
        """Invoke synchronously; None when throttled. Logical time waits for the invocation, up to
        its logical deadline (a function's timeout runs in real seconds)."""
        token = f"stream-{uuid.uuid4()}"
        self.rt.clock_holder.running(token, self._now() + config.timeout)
        try:
            return self.rt.functions.invoke(config.arn, stream_event(batch), config=config, throttle=True)
        except Throttled:
            return None
        finally:
            self.rt.clock_holder.running(token, None)

    def _discard(
        self,
        mapping: Mapping[str, Any],
        records: list[StreamRecord],
        condition: str,
        *,
        invokes: int,
        request_id: str,
        function_error: str | None,
    ) -> None:
        sequence_numbers = [r.sequence_number for r in records]
        self.runner._checkpoints.discarded(self.mapping_uuid, self.shard_id, sequence_numbers)
        destination = ((mapping.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        self.rt.emit(
            "stream-discarded",
            mapping=self.mapping_uuid,
            shard=self.shard_id,
            first=sequence_numbers[0],
            last=sequence_numbers[-1],
            size=len(records),
            condition=condition,
            destination=destination or "",
        )
        if not destination:
            return
        now = self._now()
        document = failure_record(
            records,
            kind=self.kind,
            shard_id=self.shard_id,
            stream_arn=self.arn,
            function_arn=str(mapping["FunctionArn"]),
            condition=condition,
            invoke_count=invokes,
            request_id=request_id or str(uuid.uuid4()),
            function_error=function_error,
            now=now,
        )
        try:
            send_failure_record(
                self.rt.client,
                destination,
                document,
                records,
                queue_url=self.rt.queue_url,
                mapping_uuid=self.mapping_uuid,
                shard_id=self.shard_id,
                now=now,
            )
        except Exception as exc:  # Lambda does not hold the shard for its destination either
            self.rt.emit("error", where=f"on-failure destination {destination}", error=repr(exc))

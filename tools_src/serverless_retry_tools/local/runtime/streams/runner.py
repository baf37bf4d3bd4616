"""Lambda event source mappings on Kinesis streams and DynamoDB streams, run locally: moto stores
the mappings (and, patched, no longer tries to run them itself), this runner polls the shards.

As Lambda does (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html, services-kinesis-parameters): every
enabled mapping whose EventSourceArn is a Kinesis stream or a DynamoDB table's stream gets one
poller per shard (:mod:`~serverless_retry_tools.local.runtime.streams.shard_poller`), which reads the shard
in order from the mapping's StartingPosition and runs one batch at a time (ParallelizationFactor
above 1: that many, each partition key's records in order): up to BatchSize records, waiting up to
MaximumBatchingWindowInSeconds (logical seconds) for a full batch, cut to the 6 MB synchronous
payload, invoked synchronously with the event as AWS shapes it
(:mod:`~serverless_retry_tools.local.runtime.streams.events`). The checkpoint is the runner's, per shard:
a record is done when the function succeeded with it, or when it was discarded.

The answer and the retries are :mod:`~serverless_retry_tools.local.runtime.streams.answers`: partial batch
responses with ReportBatchItemFailures (checkpoint before the lowest reported sequence number, retry
from it), MaximumRetryAttempts, MaximumRecordAgeInSeconds (on the logical clock: the emulator keeps
Kinesis and DynamoDB Streams arrival times logical), BisectBatchOnFunctionError. A throttled
invocation (reserved concurrency 0) is retried without counting, until the records expire
(kinesis-on-failure-destination.html). A discarded batch's invocation record goes to
DestinationConfig.OnFailure.Destination (:mod:`~serverless_retry_tools.local.runtime.streams.failure_records`),
and the shard goes on; without a destination the records are just skipped. Later records of the
shard wait while a batch is retried; the other shards do not.

Logical time waits for a running invocation (up to its logical deadline, as for SQS batches) but
not for a shard's poller: a record is read within a poll interval (real seconds) of its arrival.
LATEST starts where the shard ends when its poller first reads it (on AWS: when the mapping is
created), so records written before the runtime starts are not seen.

Not emulated (a warning says so): FilterCriteria (such a mapping is skipped),
TumblingWindowInSeconds; nor (silently) enhanced fan-out consumers, or shard splits and merges
(shards are polled as ListShards lists them, parents not first).

Events: ``stream-batch`` (mapping, function, shard, first, last, size, attempt, outcome: ok /
partial / failed / throttled, why), ``stream-discarded`` (mapping, shard, first, last, size,
condition, destination); the progress of every shard (checkpoint, per-record wait, records given
up) is :meth:`StreamRunner.progress`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from serverless_retry_tools.local.runtime.runner_services import RunnerServices
from serverless_retry_tools.local.runtime.streams.checkpoints import Checkpoints, ShardProgress
from serverless_retry_tools.local.runtime.streams.shard_poller import ShardPoller
from serverless_retry_tools.local.runtime.streams.shards import ShardSource, shard_source, source_kind

__all__ = ["StreamRunner"]

_REFRESH_SECONDS = 0.5
# How often (real seconds) an idle shard is read again. Lambda reads a Kinesis shard once a second
# and a DynamoDB stream's four times a second (with-kinesis, with-ddb): Kinesis faster here, so a
# test at a high clock scale is not late by many logical seconds (each DynamoDB Streams read leaves
# a shard iterator behind in moto: those stay at AWS's rate).
_POLL_SECONDS = {"kinesis": 0.1, "dynamodb": 0.25}
_ENABLED = ("Enabled", "Enabling", "Updating", None)


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
        if mapping.get("TumblingWindowInSeconds"):
            self._rt.warn_once(
                f"stream:{mapping_uuid}:tumbling",
                f"event source mapping {mapping_uuid}: TumblingWindowInSeconds not emulated, ignored",
            )
        return True

    # -- one shard ----------------------------------------------------------------------------------
    def _poll_shard(self, mapping_uuid: str, arn: str, shard_id: str) -> None:
        shard = ShardPoller(
            self._rt,
            self._stop,
            self._checkpoints,
            self._source,
            mapping_uuid=mapping_uuid,
            arn=arn,
            shard_id=shard_id,
        )
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
                shard.reset()  # read again from the checkpoint
                self._stop.wait(1.0)

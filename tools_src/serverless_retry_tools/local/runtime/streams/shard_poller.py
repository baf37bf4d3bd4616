"""One shard of a stream mapping, polled as Lambda polls it: records read in order past the
checkpoint, split by partition key into ParallelizationFactor lanes (1 to 10; each key always in
the same lane, so its records stay in order), each lane running one batch at a time, the lanes'
batches concurrently. A lane's failed batch is retried in place (the lane's later records wait; the
other lanes go on), per :mod:`~serverless_retry_tools.local.runtime.streams.answers`. The shard's checkpoint
is the last sequence number up to which every record read is done.

With ParallelizationFactor above 1, the lanes' batches start together and the next ones start when
all of them have ended (Lambda starts each lane's next batch as soon as its own ends): the
concurrency and the per-key order are Lambda's, the timing is not.
"""

from __future__ import annotations

import threading
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from serverless_retry_tools.local.runtime.functions import FunctionConfig, InvocationResult, Throttled
from serverless_retry_tools.local.runtime.runner_services import RunnerServices
from serverless_retry_tools.local.runtime.streams.answers import (
    RECORD_AGE_EXCEEDED,
    Plan,
    RetryPolicy,
    expired_prefix,
    judge_stream_batch,
    plan_next,
)
from serverless_retry_tools.local.runtime.streams.checkpoints import Checkpoints
from serverless_retry_tools.local.runtime.streams.events import StreamRecord, fits_payload, stream_event
from serverless_retry_tools.local.runtime.streams.failure_records import failure_record, send_failure_record
from serverless_retry_tools.local.runtime.streams.shards import ShardSource, source_kind

__all__ = ["ShardPoller"]

_DEFAULT_BATCH_SIZE = 100  # Kinesis and DynamoDB Streams (services-kinesis-parameters)
# Pause (real seconds) before a failed batch is retried: enough not to spin, far below any limit.
_RETRY_PAUSE_SECONDS = 0.05
# Pause (real seconds) after a throttled invocation before it is tried again.
_THROTTLE_PAUSE_SECONDS = 0.5
# Records read ahead past the checkpoint (at least a batch per lane): a lane held by a failing
# batch must not keep the others from their records.
_READ_AHEAD = 1_000


def _drop(plan: Plan, count: int) -> Plan:
    """``plan`` without its first ``count`` records."""
    out: list[tuple[int, int]] = []
    for size, retries in plan:
        taken = min(size, count)
        count -= taken
        if size - taken:
            out.append((size - taken, retries))
    return tuple(out)


def lane_of(partition_key: str, lanes: int) -> int:
    """The lane of a partition key (stable across runs: not Python's salted hash)."""
    return zlib.crc32(partition_key.encode()) % lanes


@dataclass
class _Lane:
    """Records of one lane past the checkpoint, and the plan of its next batches (what a failed
    batch left to retry)."""

    buffer: list[StreamRecord] = field(default_factory=list)
    plan: Plan = ()
    since: float | None = None  # logical time its oldest buffered record was read
    # Invocations its first pending record was in (approximateInvokeCount when it is discarded).
    invocations: int = 0


@dataclass
class _Batch:
    lane: _Lane
    records: list[StreamRecord]
    retries: int
    rest: Plan
    result: InvocationResult | None = None  # None: throttled


class ShardPoller:
    def __init__(
        self,
        services: RunnerServices,
        stop: threading.Event,
        checkpoints: Checkpoints,
        source_of: Callable[[Mapping[str, Any]], ShardSource],
        *,
        mapping_uuid: str,
        arn: str,
        shard_id: str,
    ) -> None:
        self.rt = services
        self._stop = stop
        self._checkpoints = checkpoints
        self._source_of = source_of
        self.mapping_uuid = mapping_uuid
        self.arn = arn
        self.kind = source_kind(arn) or ""
        self.shard_id = shard_id
        self.source: ShardSource | None = None
        self.iterator: str | None = None
        self.closed = False
        self.lanes: list[_Lane] = [_Lane()]
        self.order: deque[str] = deque()  # sequence numbers read and not yet checkpointed, in order
        self.finished: set[str] = set()  # of those, the ones done

    def reset(self) -> None:
        """Read again from the checkpoint (after an error, or a new ParallelizationFactor)."""
        self.iterator = None

    def _now(self) -> float:
        return self.rt.clock.now().timestamp()

    # -- reading ------------------------------------------------------------------------------------
    def _read(self, mapping: Mapping[str, Any], batch_size: int, factor: int) -> None:
        if self.source is None:
            self.source = self._source_of(mapping)
        if self.iterator is None or len(self.lanes) != factor:
            self.lanes = [_Lane() for _ in range(factor)]
            self.order.clear()
            self.finished.clear()
            self.closed = False
            self.iterator = self.source.iterator(
                self.shard_id,
                str(mapping.get("StartingPosition") or "TRIM_HORIZON"),
                timestamp=mapping.get("StartingPositionTimestamp"),
                after=self._checkpoints.get(self.mapping_uuid, self.shard_id),
            )
        room = max(batch_size * factor, _READ_AHEAD) - len(self.order)
        if self.closed or room <= 0:
            return
        records, following = self.source.read(self.shard_id, self.iterator, room)
        if following is None:
            self.closed = True  # a closed shard (split or merged): nothing more comes
        else:
            self.iterator = following
        now = self._now()
        for record in records:
            lane = self.lanes[lane_of(record.partition_key, factor)]
            if not lane.buffer:
                lane.since = now
            lane.buffer.append(record)
            self.order.append(record.sequence_number)

    # -- one round ----------------------------------------------------------------------------------
    def step(self, mapping: Mapping[str, Any]) -> bool:
        """Read, then run at most one batch per lane; False when there was nothing to do."""
        batch_size = int(mapping.get("BatchSize") or _DEFAULT_BATCH_SIZE)
        factor = max(1, int(mapping.get("ParallelizationFactor") or 1))
        self._read(mapping, batch_size, factor)
        policy = RetryPolicy.of(mapping)
        now = self._now()
        progressed = any([self._expire(mapping, lane, policy, now) for lane in self.lanes])
        batches = [b for lane in self.lanes if (b := self._next_batch(mapping, lane, batch_size, now))]
        if batches:
            config = self.rt.functions.describe(str(mapping["FunctionArn"]))
            self._run(config, batches)
            for batch in batches:
                self._settle(mapping, config, batch, policy)
        self._advance()
        if any(b.result is None for b in batches):
            self._stop.wait(_THROTTLE_PAUSE_SECONDS)
        elif any(b.result is not None and b.lane.plan for b in batches):
            self._stop.wait(_RETRY_PAUSE_SECONDS)
        return progressed or bool(batches)

    def _expire(self, mapping: Mapping[str, Any], lane: _Lane, policy: RetryPolicy, now: float) -> bool:
        """Discard the lane's records past MaximumRecordAgeInSeconds; whether there were any."""
        expired = expired_prefix([r.arrival for r in lane.buffer], now, policy.maximum_record_age)
        if not expired:
            return False
        invokes, lane.invocations = lane.invocations, 0
        self._discard(mapping, lane.buffer[:expired], RECORD_AGE_EXCEEDED, invokes=invokes, result=None)
        lane.plan = _drop(lane.plan, expired)
        lane.buffer = lane.buffer[expired:]
        if not lane.buffer:
            lane.since = None
        return True

    def _next_batch(
        self, mapping: Mapping[str, Any], lane: _Lane, batch_size: int, now: float
    ) -> _Batch | None:
        if not lane.buffer:
            return None
        if lane.plan:
            (size, retries), rest = lane.plan[0], lane.plan[1:]
        else:
            window = float(mapping.get("MaximumBatchingWindowInSeconds") or 0)
            gathered = now - (lane.since if lane.since is not None else now)
            if len(lane.buffer) < batch_size and not self.closed and gathered < window:
                return None  # gathering: the window is logical
            size, retries, rest = min(batch_size, len(lane.buffer)), 0, ()
        fits = fits_payload(lane.buffer[:size])
        if fits < size:  # the 6 MB payload cuts the batch; the rest is the next batch
            size, rest = fits, ((size - fits, retries), *rest)
        return _Batch(lane, lane.buffer[:size], retries, rest)

    def _run(self, config: FunctionConfig, batches: list[_Batch]) -> None:
        """Invoke each batch, concurrently when there are several."""

        def call(batch: _Batch) -> None:
            batch.result = self._call(config, batch.records)

        threads = [
            threading.Thread(target=call, args=(b,), name=f"stream-lane-{self.shard_id[-6:]}", daemon=True)
            for b in batches[1:]
        ]
        for thread in threads:
            thread.start()
        call(batches[0])
        for thread in threads:
            thread.join()

    def _call(self, config: FunctionConfig, records: list[StreamRecord]) -> InvocationResult | None:
        """Invoke synchronously; None when throttled. Logical time waits for the invocation, up to
        its logical deadline (a function's timeout runs in real seconds)."""
        token = f"stream-{uuid.uuid4()}"
        self.rt.clock_holder.running(token, self._now() + config.timeout)
        try:
            return self.rt.functions.invoke(config.arn, stream_event(records), config=config, throttle=True)
        except Throttled:
            return None
        finally:
            self.rt.clock_holder.running(token, None)

    def _settle(
        self, mapping: Mapping[str, Any], config: FunctionConfig, batch: _Batch, policy: RetryPolicy
    ) -> None:
        lane, records, result = batch.lane, batch.records, batch.result
        sequence_numbers = [r.sequence_number for r in records]
        detail = {
            "mapping": self.mapping_uuid,
            "function": config.name,
            "shard": self.shard_id,
            "first": sequence_numbers[0],
            "last": sequence_numbers[-1],
            "size": len(records),
            "attempt": batch.retries + 1,
        }
        if result is None:  # throttled: retried until the records expire, no retry counted
            lane.plan = ((len(records), batch.retries), *batch.rest)
            self.rt.emit("stream-batch", **detail, outcome="throttled", why="throttled")
            return
        verdict = judge_stream_batch(
            sequence_numbers,
            errored=not result.ok,
            response=result.result,
            report_batch_item_failures="ReportBatchItemFailures"
            in (mapping.get("FunctionResponseTypes") or []),
            error_text=result.error_text,
        )
        planned = plan_next(verdict, batch.retries, policy, batch.rest)
        finished = self._now()
        done = records[: planned.done]
        if done:
            self._checkpoints.processed(
                self.mapping_uuid, self.shard_id, {r.sequence_number: finished - r.arrival for r in done}
            )
            self.finished.update(r.sequence_number for r in done)
        outcome = "ok" if verdict.success else "partial" if verdict.partial else "failed"
        self.rt.emit("stream-batch", **detail, outcome=outcome, why=verdict.why, request_id=result.request_id)
        given_up = records[planned.done : planned.done + planned.discard]
        lane.buffer = lane.buffer[planned.done + planned.discard :]
        lane.plan = planned.plan
        invocations = lane.invocations + 1
        if planned.done or planned.discard:
            lane.invocations = 1 if planned.done + planned.discard < len(records) else 0
        else:
            lane.invocations = invocations
        if given_up:
            self._discard(mapping, given_up, planned.condition, invokes=invocations, result=result)
        if not lane.buffer:
            lane.since = None

    def _advance(self) -> None:
        """Move the checkpoint past every record done in order."""
        last = None
        while self.order and self.order[0] in self.finished:
            last = self.order.popleft()
            self.finished.discard(last)
        if last is not None:
            self._checkpoints.advance(self.mapping_uuid, self.shard_id, last)

    # -- giving up ----------------------------------------------------------------------------------
    def _discard(
        self,
        mapping: Mapping[str, Any],
        records: list[StreamRecord],
        condition: str,
        *,
        invokes: int,
        result: InvocationResult | None,
    ) -> None:
        sequence_numbers = [r.sequence_number for r in records]
        self._checkpoints.discarded(self.mapping_uuid, self.shard_id, sequence_numbers)
        self.finished.update(sequence_numbers)
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
            request_id=result.request_id if result is not None else str(uuid.uuid4()),
            function_error="Unhandled" if result is not None and not result.ok else None,
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

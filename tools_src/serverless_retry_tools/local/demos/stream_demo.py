"""``serverless-retry demo stream``: the stream-retry example twice on one emulator, side by side.

``examples/stream-retry`` is applied with ``ordering = "unordered"`` (its default: a failed record
goes to the retry queue and its shard goes on) and again, under a second name, with ``ordering =
"blocking"`` (Lambda's own behaviour: the batch stops at the failed record and Lambda retries from
there, with the module's bisect, maximum_retry_attempts and maximum_record_age). The same records go
on both streams: ordinary orders, one poison record early on its shard (fails on every attempt) and
one invalid record. The local runtime polls both until every record is done and the retry queues are
empty; then the demo prints how far each shard got over logical time, the poison record's attempts
and the delays between them, why it was given up, and how long the records behind it waited, and
accounts for every record (:mod:`~serverless_retry_tools.local.demos.stream_demo_accounting`). Exit status
0 only when every record of both streams is in exactly one final place, as each mode says.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import boto3

from serverless_retry_tools.local.demos.accounting import parse_log_lines
from serverless_retry_tools.local.demos.demo_frame import (
    CLIENT_CONFIG,
    ExampleOptions,
    ExampleRun,
    ProgressLines,
    run_example,
    run_until_settled,
    write_accounting,
)
from serverless_retry_tools.local.demos.demo_queues import queue_depth, read_log_lines, receive_all
from serverless_retry_tools.local.demos.stream_demo_accounting import (
    ModeAccounting,
    PutRecord,
    WorkRecord,
    account_mode,
    build_records,
    median,
    percentile,
)
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent
from serverless_retry_tools.local.runtime.streams.shard_poller import lane_of

__all__ = ["StreamDemoOptions", "run_stream_demo", "stream_demo_main"]

EXAMPLE = "stream-retry"
_POLLER_WAIT_SECONDS = 60.0
_WAVE = 20  # records put at once on each stream
_WAVE_PAUSE_SECONDS = 0.25  # real seconds between two waves (5 logical s at x20)


@dataclass
class StreamDemoOptions(ExampleOptions):
    # x20: the poison record's backoff (up to 5 + 10 + 20 logical seconds) passes in under 2 real
    # seconds, while an invocation's real time (x20) stays a few logical seconds.
    clock_scale: float = 20.0
    deadline_seconds: float = 120.0
    orders: int = 200
    function_timeout: int = 30


@dataclass(frozen=True)
class Deployment:
    """One application of the example, from its outputs."""

    mode: str
    stream_name: str
    stream_arn: str
    function_name: str
    mapping_uuid: str
    retry_queue_url: str
    exhausted_queue_url: str
    failure_queue_url: str

    @classmethod
    def of(cls, mode: str, outputs: Mapping[str, Any], sqs: Any) -> Deployment:
        failure_arn = str(outputs["on_failure_destination_arn"])
        return cls(
            mode,
            str(outputs["stream_name"]),
            str(outputs["stream_arn"]),
            str(outputs["function_name"]),
            str(outputs["event_source_mapping_uuid"]),
            str(outputs["retry_queue_url"]),
            str(outputs["exhausted_queue_url"]),
            str(sqs.get_queue_url(QueueName=failure_arn.rsplit(":", 1)[-1])["QueueUrl"]),
        )


class _Events:
    """The runtime's stream events, each with its logical time (seconds since the records were put)."""

    def __init__(self, out: ProgressLines) -> None:
        self.lock = threading.Lock()
        self.clock: Any = None  # the runtime's (logical time as the functions see it)
        self.started = 0.0
        self.seen: list[tuple[float, float, RuntimeEvent]] = []  # (logical, real, event)
        self.out = out

    def __call__(self, event: RuntimeEvent) -> None:
        if event.kind in ("stream-batch", "stream-discarded") and self.clock is not None:
            with self.lock:
                self.seen.append((self.clock.now().timestamp(), time.monotonic(), event))
        elif event.kind in ("error", "warning"):
            self.out(f"runtime {event.kind}: {event.detail}")

    def failed_with(self, mapping: str, put: PutRecord) -> list[tuple[float, float]]:
        """When ``mapping``'s failed batches that held ``put`` ended (logical Unix seconds, real)."""
        position = int(put.sequence_number)
        with self.lock:
            return [
                (t, real)
                for t, real, e in self.seen
                if e.kind == "stream-batch"
                and e.detail.get("mapping") == mapping
                and e.detail.get("shard") == put.shard_id
                and e.detail.get("outcome") in ("partial", "failed")
                and int(e.detail.get("first", 0)) <= position <= int(e.detail.get("last", 0))
            ]


def run_stream_demo(options: StreamDemoOptions, stream: TextIO = sys.stdout) -> int:
    return run_example(
        EXAMPLE,
        options,
        ProgressLines(stream),
        lambda run: _exercise(run, options),
        # One apply for both: the example's blocking twin is the same stream and consumer with
        # ordering "blocking", so the two deploy side by side (the provider's waits overlap).
        variables={"function_timeout": options.function_timeout, "blocking_twin": True},
        about=" (ordering unordered, and its blocking twin: Lambda's native behaviour)",
        applying=" both streams",
    )


def _put(kinesis: Any, deployment: Deployment, records: Sequence[WorkRecord], now: float) -> list[PutRecord]:
    answer = kinesis.put_records(
        StreamName=deployment.stream_name,
        Records=[{"Data": r.data, "PartitionKey": r.partition_key} for r in records],
    )
    if answer.get("FailedRecordCount"):
        raise RuntimeError(f"PutRecords failed for {answer['FailedRecordCount']} records")
    return [
        PutRecord(r, str(a["ShardId"]), str(a["SequenceNumber"]), now, deployment.stream_arn)
        for r, a in zip(records, answer["Records"], strict=True)
    ]


def _exercise(run: ExampleRun, options: StreamDemoOptions) -> int:
    emulator, out = run.emulator, run.out
    kwargs = emulator.client_kwargs()
    sqs = boto3.client("sqs", config=CLIENT_CONFIG, **kwargs)
    kinesis = boto3.client("kinesis", config=CLIENT_CONFIG, **kwargs)
    logs = boto3.client("logs", config=CLIENT_CONFIG, **kwargs)
    deployments = [
        Deployment.of("unordered", run.outputs, sqs),
        Deployment.of("blocking", run.outputs["blocking_twin"], sqs),
    ]
    events = _Events(out)
    runtime = Runtime(
        emulator.url, region=emulator.region, work_dir=run.work_dir / "runtime", on_event=events
    )
    events.clock = runtime.clock
    runtime.start()
    # The shard pollers first: records put before them would wait for the runtime's start-up.
    wanted = {d.mapping_uuid for d in deployments}
    give_up = time.monotonic() + _POLLER_WAIT_SECONDS
    while time.monotonic() < give_up:
        running = {key.split("/", 1)[0] for key in runtime.streams.threads}
        if wanted <= running:
            break
        time.sleep(0.2)
    records = build_records(options.orders)
    out(
        f"putting {len(records)} records on each stream ({options.orders} ordinary, 1 poison at #"
        f"{next(r.index for r in records if r.kind == 'poison')}, 1 invalid at #"
        f"{next(r.index for r in records if r.kind == 'invalid')}); partition key = order id"
    )
    events.started = runtime.clock.now().timestamp()
    puts: dict[str, list[PutRecord]] = {d.mode: [] for d in deployments}
    # In waves, as a stream's records arrive: later ones come while a failed batch is retried.
    for start in range(0, len(records), _WAVE):
        if start:
            time.sleep(_WAVE_PAUSE_SECONDS)
        for d in deployments:
            wave = records[start : start + _WAVE]
            puts[d.mode].extend(_put(kinesis, d, wave, runtime.clock.now().timestamp()))

    def in_transit() -> dict[str, int]:
        progress = runtime.streams.progress()
        counts: dict[str, int] = {}
        for d in deployments:
            shards = progress.get(d.mapping_uuid, {})
            done = sum(len(p.waited) + len(p.discarded) for p in shards.values())
            counts[f"{d.mode} shard records"] = len(puts[d.mode]) - done
            counts[f"{d.mode} retry queue"] = queue_depth(sqs, d.retry_queue_url)
        return counts

    def progress(pending: Mapping[str, int]) -> list[str]:
        return [f"{name} {count}" for name, count in pending.items()]

    try:
        done = run_until_settled(
            runtime,
            out,
            in_transit=in_transit,
            progress=progress,
            quiet_checks=3,
            deadline_seconds=options.deadline_seconds,
            finals="record",
            summary=lambda: f"{runtime.stats['batches']} retry-queue batches",
        )
    finally:
        runtime.stop()
    results = [_collect(d, puts[d.mode], runtime, sqs, logs) for d in deployments]
    out(stamp=False)
    _print_shards(results, events, out)
    blocking_mapping = _mapping(runtime, deployments[1])
    _print_poison(results, deployments, events, blocking_mapping, out)
    lanes = max(1, int(blocking_mapping.get("ParallelizationFactor") or 1))
    _print_waits(results, deployments, events, lanes, out)
    ok = _print_totals(results, out)
    write_accounting(
        run.work_dir,
        [
            {
                "mode": result.mode,
                "order_id": f.put.record.order_id,
                "kind": f.put.record.kind,
                "shard": f.put.shard_id,
                "sequence_number": f.put.sequence_number,
                "outcome": f.outcome,
                "waited": f.waited,
                "reason": f.exhausted.reason if f.exhausted else f.failure.condition if f.failure else "",
            }
            for result in results
            for f in result.fates
        ],
    )
    return 0 if ok and done else 1


def _collect(
    deployment: Deployment, puts: list[PutRecord], runtime: Runtime, sqs: Any, logs: Any
) -> ModeAccounting:
    shards = runtime.streams.progress().get(deployment.mapping_uuid, {})
    limit = len(puts) + 20
    evidence = parse_log_lines(read_log_lines(logs, f"/aws/lambda/{deployment.function_name}"))
    return account_mode(
        deployment.mode,
        puts,
        waited={shard: p.waited for shard, p in shards.items()},
        exhausted=receive_all(sqs, deployment.exhausted_queue_url, limit),
        failures=[m["Body"] for m in receive_all(sqs, deployment.failure_queue_url, limit)],
        handed_off=set(evidence.retries),
    )


def _mapping(runtime: Runtime, deployment: Deployment) -> dict[str, Any]:
    return dict(runtime.client("lambda").get_event_source_mapping(UUID=deployment.mapping_uuid))


def _finish_times(result: ModeAccounting, shard: str) -> list[float]:
    """Logical seconds (since the records were put) at which each of the shard's records was done."""
    return [
        f.put.arrival + f.waited for f in result.fates if f.put.shard_id == shard and f.waited is not None
    ]


def _print_shards(results: Sequence[ModeAccounting], events: _Events, out: ProgressLines) -> None:
    shards = sorted({f.put.shard_id for f in results[0].fates})
    poison_shard = next(f.put.shard_id for f in results[0].fates if f.put.record.kind == "poison")
    ends = [t - events.started for r in results for s in shards for t in _finish_times(r, s)]
    marks = [float(m) for m in (5, 10, 20, 30, 45, 60, 90, 120, 300, 600) if m < max(ends, default=0)]
    marks.append(max(ends, default=0.0))
    out(
        "records done by the shard (processed or handed off) by logical time since they were put:",
        stamp=False,
    )
    header = f"  {'stream':<10} {'shard':<22} {'records':>7}  " + " ".join(
        f"{'+' + format(m, '.0f') + 's':>7}" for m in marks
    )
    out(header + "  given up", stamp=False)
    for result in results:
        for shard in shards:
            finished = [t - events.started for t in _finish_times(result, shard)]
            total = sum(1 for f in result.fates if f.put.shard_id == shard)
            given_up = sum(1 for f in result.fates if f.put.shard_id == shard and f.outcome == "on-failure")
            cells = " ".join(f"{sum(1 for t in finished if t <= m + 1e-9):>7}" for m in marks)
            flag = " (poison)" if shard == poison_shard else ""
            out(f"  {result.mode:<10} {shard + flag:<22} {total:>7}  {cells}  {given_up:>8}", stamp=False)
    out(stamp=False)


def _print_poison(
    results: Sequence[ModeAccounting],
    deployments: Sequence[Deployment],
    events: _Events,
    mapping: Mapping[str, Any],
    out: ProgressLines,
) -> None:
    out("the poison record:", stamp=False)
    for result, deployment in zip(results, deployments, strict=True):
        fate = next(f for f in result.fates if f.put.record.kind == "poison")
        if fate.exhausted is not None:
            view = fate.exhausted
            delays = [int(h.get("delay_seconds", 0)) for h in view.history]
            out(
                f"  {result.mode:<10} {view.attempt} attempts; retried through the retry queue after "
                f"{' > '.join(str(d) for d in delays) or '-'} logical s (the policy's backoff); "
                f"{view.outcome}: {view.reason[:140]}",
                stamp=False,
            )
        elif fate.failure is not None:
            tried = events.failed_with(deployment.mapping_uuid, fate.put)
            gaps = [f"{b[0] - a[0]:.1f} ({b[1] - a[1]:.2f} real)" for a, b in itertools.pairwise(tried)]
            failure = fate.failure
            lost = sum(1 for f in result.fates if f.failure == failure and f.put.record.kind == "ok")
            out(
                f"  {result.mode:<10} {failure.invoke_count} invocations with it (MaximumRetryAttempts "
                f"{mapping.get('MaximumRetryAttempts')}, retried at once: each next batch "
                f"{' > '.join(gaps) or '-'} logical s later); {failure.condition}: Lambda gave up on "
                f"{failure.size} records from it, {lost} of them ordinary orders (the on-failure "
                "destination keeps their position only, not the records)",
                stamp=False,
            )
        else:
            out(f"  {result.mode:<10} {fate.outcome}", stamp=False)
    out(stamp=False)


def _held(
    result: ModeAccounting, deployment: Deployment, events: _Events, lanes: int
) -> tuple[float, float, list[float]]:
    """How long the poison record held its lane (logical and real s, from its first failed batch to
    the last) and, for each later record of that lane that arrived before the hold ended and was
    processed after it, how long of the hold it waited."""
    poison = next(f for f in result.fates if f.put.record.kind == "poison")
    tried = events.failed_with(deployment.mapping_uuid, poison.put)
    if not tried:
        return 0.0, 0.0, []
    failed = [logical for logical, _ in tried]
    start, end = min(failed), max(failed)
    real = max(r for _, r in tried) - min(r for _, r in tried)
    lane = lane_of(poison.put.record.partition_key, lanes)
    waits = [
        end - max(f.put.arrival, start)
        for f in result.fates
        if f.put.shard_id == poison.put.shard_id
        and lane_of(f.put.record.partition_key, lanes) == lane
        and int(f.put.sequence_number) > int(poison.put.sequence_number)
        and f.waited is not None
        and f.put.arrival < end <= f.put.arrival + f.waited
    ]
    return end - start, real, waits


def _print_waits(
    results: Sequence[ModeAccounting],
    deployments: Sequence[Deployment],
    events: _Events,
    lanes: int,
    out: ProgressLines,
) -> None:
    out("how long records waited (logical s from arrival to the invocation that succeeded):", stamp=False)
    out(f"  {'stream':<10} {'which records':<44} {'count':>5} {'p50':>8} {'max':>8}", stamp=False)
    for result in results:
        poison = next(f for f in result.fates if f.put.record.kind == "poison")
        lane = lane_of(poison.put.record.partition_key, lanes)
        behind = [
            f.waited
            for f in result.fates
            if f.put.shard_id == poison.put.shard_id
            and lane_of(f.put.record.partition_key, lanes) == lane
            and int(f.put.sequence_number) > int(poison.put.sequence_number)
            and f.waited is not None
        ]
        every = [f.waited for f in result.fates if f.waited is not None]
        rows = (("after the poison record, in its shard's lane", behind), ("every record processed", every))
        for label, values in rows:
            out(
                f"  {result.mode:<10} {label:<44} {len(values):>5} {median(values):>8.1f} "
                f"{max(values, default=0.0):>8.1f}",
                stamp=False,
            )
    p99 = ", ".join(
        f"{r.mode} {percentile([f.waited for f in r.fates if f.waited is not None], 0.99):.1f}"
        for r in results
    )
    out(f"  p99 of every record processed: {p99}", stamp=False)
    for result, deployment in zip(results, deployments, strict=True):
        hold, real, waits = _held(result, deployment, events, lanes)
        out(
            f"  {result.mode:<10} the poison record held its lane {hold:.1f} logical s ({real:.2f} real); "
            f"{len(waits)} later records waited behind it (p50 {median(waits):.1f}, max "
            f"{max(waits, default=0.0):.1f} logical s)",
            stamp=False,
        )
    out(
        f"  (lanes: ParallelizationFactor {lanes}, a shard's records split by partition key. Waits on "
        "the emulator include its own real time x the clock scale: cold starts, the emulator's calls; "
        "benchmarks/stream_lag.py measures lag on a modelled clock.)",
        stamp=False,
    )
    out(stamp=False)


def _print_totals(results: Sequence[ModeAccounting], out: ProgressLines) -> bool:
    ok = True
    for result in results:
        totals = result.totals
        parts = ", ".join(f"{name} {totals[name]}" for name in ("processed", "exhausted", "on-failure"))
        rest = {k: v for k, v in totals.items() if k not in ("processed", "exhausted", "on-failure")}
        extra = "".join(f", {k.upper()} {v}" for k, v in sorted(rest.items()))
        verdict = "balanced" if result.balanced else "NOT balanced"
        out(f"accounting {result.mode}: {len(result.fates)} records = {parts}{extra}: {verdict}", stamp=False)
        for line in result.unknown[:5]:
            out(f"  UNKNOWN: {line}", stamp=False)
        for fate in result.unexpected[:5]:
            out(
                f"  UNEXPECTED: {fate.put.record.order_id} ({fate.put.record.kind}) ended {fate.outcome}",
                stamp=False,
            )
        ok = ok and result.balanced
    out("OK: every record of both streams is accounted for" if ok else "FAILED: see above", stamp=False)
    return ok


def stream_demo_main(args: Any, stream: TextIO = sys.stdout) -> int:
    options = StreamDemoOptions.from_args(args, orders=args.orders, function_timeout=args.function_timeout)
    return run_stream_demo(options, stream)

"""Shard lag and records delayed behind failures, on logical time: the stream consumer ``unordered``
(ours: a failed record goes to the retry queue, the shard goes on) against Lambda's native handling
of a failing record (bisect + retries), at 0.1 % / 1 % / 10 % poison records.

    .venv/bin/python benchmarks/stream_lag.py [--records 10000] [--rate 100] [--quick]

One shard, its records arriving at ``--rate`` a second (logical), a seeded fraction of them poison
(the processor raises ``RetryableError`` on every attempt). The mapping is ``modules/stream-retry``'s
default (batch size, bisect on function error, maximum retry attempts and record age, read from its
variables.tf; parallelization factor 1), with partial batch responses as the module sets them. Three
functions read the same shard:

- ``ours``: ``StreamRetryingConsumer`` (lambda_src/serverless_retry/streams), ordering
  ``unordered``, with the module's default retry policy and claims table, its AWS calls made on the
  test suite's in-memory AWS (tests/support/fakeaws.py);
- ``native bisect``: a plain handler that raises at the first failed record (the usual Lambda
  handler): Lambda bisects the batch, then retries the poison record alone, then discards it;
- ``native partial`` (information): the same consumer ordering ``blocking`` (the module's blocking
  mode: it reports the failed record and every later one, Lambda retries from there, then discards
  the rest of the batch).

The poller is the emulator's own rules (tools_src/serverless_retry_tools/local/runtime/streams/answers.py:
``judge_stream_batch``, ``plan_next``, ``expired_prefix``), run here on a logical clock with no
threads: read the records that have arrived past the checkpoint, invoke, apply the answer, go on.
What takes logical time is modelled (options): an invocation costs ``--invoke-ms`` plus
``--record-ms`` for each record the processor runs on plus ``--call-ms`` for each AWS call the
function makes (ours: the hand-offs to the retry queue and the claims table); an idle shard waits for
its next record. Lambda retries a failed stream batch at once (no backoff), as here.

Measured per function: shard lag (logical seconds from the last record's arrival until the shard is
past it), the maximum record age at processing (iterator age), the records delayed behind failures
(each record's completion minus its completion in the same function's run without poison; counted
when at least ``--delayed-s``), their total and p99 delay, the invocations, the ordinary records the
processor ran more than once and those given up (the on-failure destination). A poison record
itself is not a delayed record: ours retries it through the retry queue (off the shard), native
gives up on it after its retries. Ratios are ours / native bisect, measured in the same run.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aws_lambda_powertools import Logger
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.config import QueueTargets
from serverless_retry.consumer.claims import DynamoDBClaims
from serverless_retry.errors import RetryableError
from serverless_retry.observability import ConsumerMetrics
from serverless_retry.policy import RetryPolicy as ConsumerPolicy
from serverless_retry.streams.consumer import StreamRetryingConsumer
from serverless_retry.streams.stream_message import StreamMessage
from serverless_retry_tools.local.runtime.streams.answers import (
    RetryPolicy,
    expired_prefix,
    judge_stream_batch,
    plan_next,
)
from serverless_retry_tools.local.runtime.streams.shard_poller import _drop as drop_from_plan

from tests.support.fakeaws import World

ROOT = Path(__file__).resolve().parents[1]
STREAM_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
SHARD = "shardId-000000000000"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
RATES = (0.001, 0.01, 0.1)
MAX_INVOCATIONS = 2_000_000  # a bound on every run's loop


def module_defaults() -> tuple[int, RetryPolicy]:
    """batch_size and the retry settings of modules/stream-retry's `stream` variable defaults."""
    text = (ROOT / "modules" / "stream-retry" / "variables.tf").read_text()

    def default(name: str) -> str:
        match = re.search(rf"^\s*{name}\s*=\s*optional\(\w+,\s*([^)]+)\)", text, re.MULTILINE)
        if match is None:
            raise SystemExit(f"modules/stream-retry/variables.tf: no default for {name}")
        return match.group(1).strip()

    return int(default("batch_size")), RetryPolicy(
        maximum_retry_attempts=int(default("maximum_retry_attempts")),
        maximum_record_age=int(default("maximum_record_age_in_seconds")),
        bisect=default("bisect_batch_on_function_error") == "true",
    )


@dataclass(frozen=True)
class Cost:
    """What takes logical time in an invocation (seconds)."""

    invoke: float = 0.020
    record: float = 0.001
    call: float = 0.015
    # An idle shard is read once a second (Lambda developer guide, with-kinesis: "Lambda reads
    # records from each shard at a base rate of once per second"); a shard with records waiting is
    # read again as soon as its batch ends.
    poll: float = 1.0


@dataclass(frozen=True)
class Shard:
    arrivals: list[float]  # logical seconds since the first record
    poison: list[bool]
    events: list[dict[str, Any]]  # each record as Lambda's Kinesis event carries it

    @classmethod
    def make(cls, records: int, rate: float, fraction: float, seed: int) -> Shard:
        rng = random.Random(seed)
        poisoned = set(rng.sample(range(records), round(records * fraction))) if fraction else set()
        arrivals = [i / rate for i in range(records)]
        events = [
            {
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": f"o-{i}",
                    "sequenceNumber": f"{49_000_000_000 + i:056d}",
                    "data": base64.b64encode(json.dumps({"n": i, "poison": i in poisoned}).encode()).decode(),
                    "approximateArrivalTimestamp": (EPOCH + timedelta(seconds=arrivals[i])).timestamp(),
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": f"{SHARD}:{49_000_000_000 + i:056d}",
                "eventName": "aws:kinesis:record",
                "awsRegion": "us-east-1",
                "eventSourceARN": STREAM_ARN,
            }
            for i in range(records)
        ]
        return cls(arrivals, [i in poisoned for i in range(records)], events)


# A handler: the batch's records (indexes) -> (errored, response, records the processor ran on, calls).
Handler = Callable[[Sequence[int], float], tuple[bool, Any, list[int], int]]


class Counting:
    """Counts the calls a client makes (the function's AWS time)."""

    def __init__(self, real: Any, calls: Counter[str]) -> None:
        self._real = real
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)

        def call(**params: Any) -> Any:
            self._calls["calls"] += 1
            return method(**params)

        return call


def consumer_handler(shard: Shard, ordering: str) -> Handler:
    """The real stream consumer (``ordering`` unordered or blocking) on in-memory AWS."""
    clock = FrozenClock(EPOCH)
    world = World(clock, random.Random(1))
    queue, exhausted, dlq = world.queue("orders"), world.queue("orders-exhausted"), world.queue("orders-dlq")
    calls: Counter[str] = Counter()
    clients = AwsClients.of(
        sqs=Counting(world.sqs, calls),  # type: ignore[arg-type]
        scheduler=Counting(world.scheduler, calls),  # type: ignore[arg-type]
        dynamodb=Counting(world.dynamodb, calls),  # type: ignore[arg-type]
    )
    ran: list[int] = []

    def process(message: StreamMessage) -> None:
        n = json.loads(message.data)["n"]
        ran.append(n)
        if shard.poison[n]:
            raise RetryableError("the downstream refused it")

    metrics = ConsumerMetrics()
    metrics.disabled = True
    consumer = StreamRetryingConsumer.build(
        process,
        ConsumerPolicy.from_dict({}),  # the module's default retry_policy ({})
        QueueTargets(
            queue.url, queue.arn, exhausted.url, dlq.arn,
            schedule_group="orders-retries",
            scheduler_role_arn="arn:aws:iam::123456789012:role/orders-retries-scheduler",
            visibility_timeout_seconds=180,
        ),
        ordering=ordering,  # type: ignore[arg-type]
        clients=clients,
        clock=clock,
        rand=random.Random(2),
        logger=Logger(service="orders", level="CRITICAL", logger_handler=logging.NullHandler()),
        metrics=metrics,
        claims=DynamoDBClaims(lambda: clients.dynamodb, "orders-claims"),
    )  # fmt: skip

    def handle(batch: Sequence[int], now: float) -> tuple[bool, Any, list[int], int]:
        clock.current = EPOCH + timedelta(seconds=now)
        ran.clear()
        calls.clear()
        response = consumer({"Records": [shard.events[i] for i in batch]})
        return False, response, list(ran), calls["calls"]

    return handle


def plain_handler(shard: Shard) -> Handler:
    """The usual Lambda handler: processes the records in order and raises at the first failure."""

    def handle(batch: Sequence[int], now: float) -> tuple[bool, Any, list[int], int]:
        ran: list[int] = []
        for i in batch:
            ran.append(i)
            if shard.poison[i]:
                return True, None, ran, 0
        return False, None, ran, 0

    return handle


@dataclass
class Run:
    done_at: list[float]  # logical seconds each record was done (processed or given up)
    given_up: list[bool]
    runs: Counter[int] = field(default_factory=Counter)  # record -> times the processor ran on it
    invocations: int = 0


def simulate(shard: Shard, handler: Handler, batch_size: int, policy: RetryPolicy, cost: Cost) -> Run:
    """One shard through the emulator's stream-mapping rules, on a logical clock."""
    n = len(shard.arrivals)
    run = Run([0.0] * n, [False] * n)
    seqs = [e["kinesis"]["sequenceNumber"] for e in shard.events]
    now, start, plan = 0.0, 0, ()  # start: the first record past the checkpoint
    for _ in range(MAX_INVOCATIONS):
        if start >= n:
            return run
        if shard.arrivals[start] > now:  # idle: read again at the next poll after it arrives
            polls = -(-(shard.arrivals[start] - now) // cost.poll)
            now += polls * cost.poll
        arrived = start
        while arrived < n and shard.arrivals[arrived] <= now:
            arrived += 1
        expired = expired_prefix(shard.arrivals[start:arrived], now, policy.maximum_record_age)
        if expired:
            for i in range(start, start + expired):
                run.done_at[i], run.given_up[i] = now, True
            plan, start = drop_from_plan(plan, expired), start + expired
            continue
        if plan:
            (size, retries), rest = plan[0], plan[1:]
        else:
            size, retries, rest = min(batch_size, arrived - start), 0, ()
        batch = list(range(start, start + size))
        errored, response, ran, calls = handler(batch, now)
        run.invocations += 1
        run.runs.update(ran)
        now += cost.invoke + cost.record * len(ran) + cost.call * calls
        verdict = judge_stream_batch(
            [seqs[i] for i in batch], errored=errored, response=response, report_batch_item_failures=True
        )
        planned = plan_next(verdict, retries, policy, rest)
        for i in batch[: planned.done]:
            run.done_at[i] = now
        for i in batch[planned.done : planned.done + planned.discard]:
            run.done_at[i], run.given_up[i] = now, True
        start += planned.done + planned.discard
        plan = planned.plan
    raise RuntimeError(f"the shard did not finish within {MAX_INVOCATIONS} invocations")


@dataclass(frozen=True)
class Figures:
    lag: float
    max_age: float
    delayed: int
    total_delay: float
    p99_delay: float
    invocations: int
    duplicates: int
    lost: int


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def figures(shard: Shard, run: Run, clean: Run, threshold: float) -> Figures:
    ordinary = [i for i, poison in enumerate(shard.poison) if not poison]
    delays = [max(0.0, run.done_at[i] - clean.done_at[i]) for i in ordinary]
    return Figures(
        lag=run.done_at[-1] - shard.arrivals[-1],
        max_age=max(d - a for d, a in zip(run.done_at, shard.arrivals, strict=True)),
        delayed=sum(1 for d in delays if d >= threshold),
        total_delay=sum(delays),
        p99_delay=percentile(delays, 0.99),
        invocations=run.invocations,
        duplicates=sum(1 for i in ordinary if run.runs[i] > 1),
        lost=sum(1 for i in ordinary if run.given_up[i]),
    )


SIDES: dict[str, Callable[[Shard], Handler]] = {
    "ours": lambda shard: consumer_handler(shard, "unordered"),
    "native bisect": plain_handler,
    "native partial": lambda shard: consumer_handler(shard, "blocking"),
}


def measure(
    records: int, rate: float, fraction: float, *, seed: int, cost: Cost, threshold: float
) -> dict[str, Figures]:
    batch_size, policy = module_defaults()
    clean_shard = Shard.make(records, rate, 0.0, seed)
    shard = Shard.make(records, rate, fraction, seed)
    out: dict[str, Figures] = {}
    for side, make in SIDES.items():
        clean = simulate(clean_shard, make(clean_shard), batch_size, policy, cost)
        out[side] = figures(shard, simulate(shard, make(shard), batch_size, policy, cost), clean, threshold)
    return out


def ratio(ours: float, native: float) -> str:
    if native == 0:
        return "-" if ours == 0 else "inf"
    return f"{ours / native:.3g}x"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=10_000, help="records on the shard (default 10000)")
    parser.add_argument("--rate", type=float, default=100.0, help="records arriving a second (default 100)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--invoke-ms", type=float, default=20.0, help="logical ms an invocation costs")
    parser.add_argument("--record-ms", type=float, default=1.0, help="logical ms per record processed")
    parser.add_argument("--call-ms", type=float, default=15.0, help="logical ms per AWS call of the function")
    parser.add_argument(
        "--delayed-s", type=float, default=0.1, help="a record delayed by this much (logical s) counts (0.1)"
    )
    parser.add_argument("--quick", action="store_true", help="2000 records")
    args = parser.parse_args(argv)
    records = 2_000 if args.quick else args.records
    if records < 10:
        parser.error("--records must be at least 10")
    cost = Cost(args.invoke_ms / 1000, args.record_ms / 1000, args.call_ms / 1000)
    batch_size, policy = module_defaults()
    started = time.process_time()
    print(
        f"stream lag, logical time: {records} records on one shard at {args.rate:g}/s; modules/stream-retry "
        f"defaults: batch {batch_size}, bisect {str(policy.bisect).lower()}, maximum_retry_attempts "
        f"{policy.maximum_retry_attempts}, maximum_record_age {policy.maximum_record_age} s; invocation "
        f"{args.invoke_ms:g} ms + {args.record_ms:g} ms/record + {args.call_ms:g} ms/AWS call"
    )
    header = (
        f"{'poison':>7}  {'function':<15} {'shard lag s':>11} {'max age s':>10} {'delayed':>8} "
        f"{'total delay s':>13} {'p99 delay s':>11} {'invocations':>11} {'run twice':>9} {'given up':>8}"
    )
    ratios: list[str] = []
    print(header)
    print("-" * len(header))
    for fraction in RATES:
        result = measure(records, args.rate, fraction, seed=args.seed, cost=cost, threshold=args.delayed_s)
        for side, f in result.items():
            print(
                f"{fraction * 100:>6g}%  {side:<15} {f.lag:>11.2f} {f.max_age:>10.2f} {f.delayed:>8} "
                f"{f.total_delay:>13.1f} {f.p99_delay:>11.2f} {f.invocations:>11} {f.duplicates:>9} {f.lost:>8}"
            )
        ours, native = result["ours"], result["native bisect"]
        ratios.append(
            f"{fraction * 100:>6g}%  shard lag {ratio(ours.lag, native.lag)}, max age "
            f"{ratio(ours.max_age, native.max_age)}, records delayed {ratio(ours.delayed, native.delayed)}, "
            f"total delay {ratio(ours.total_delay, native.total_delay)}, p99 delay "
            f"{ratio(ours.p99_delay, native.p99_delay)}"
        )
    print()
    print("ours / native bisect (lower is better for ours):")
    for line in ratios:
        print(line)
    print(f"({time.process_time() - started:.1f} s of CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

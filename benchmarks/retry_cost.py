"""API calls and cost per retried message: the modules' default (the claims table: one retry chain per
message) beside the same consumer without the table, per transport.

    .venv/bin/python benchmarks/retry_cost.py [--messages 1000]

Each message fails its first attempt and succeeds on its second: one retry. The real consumer runs
against the in-memory AWS world of the test suite (tests/support/fakeaws.py: SQS with delays and
visibility, a Scheduler that fires, DynamoDB), driven as an event source mapping would drive it
(batches of 10: one ReceiveMessage and one DeleteMessageBatch per batch), with no faults. Counted: the
consumer's own calls by operation, the mapping's receives and deletes, DynamoDB write units, and
schedules fired. The cost is per million retried messages, in us-east-1, from these prices (public
AWS pricing as summarised on 2026-11-30; free tiers ignored): SQS standard $0.40 per million requests
(each 64 KB of payload is one request; our envelopes are far smaller), DynamoDB on-demand $0.625 per
million write request units, EventBridge Scheduler $1.00 per million invocations (API calls to create
schedules are not billed). Lambda time is left out: it is the same with and without the table.
The ratio column is with-table / without-table, measured in the same run.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aws_lambda_powertools import Logger
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.config import QueueTargets
from serverless_retry.consumer import RetryingConsumer
from serverless_retry.consumer.claims import DynamoDBClaims
from serverless_retry.errors import RetryableError
from serverless_retry.message import Message
from serverless_retry.observability import ConsumerMetrics
from serverless_retry.policy import RetryPolicy

from tests.support.fakeaws import ACCOUNT, World

SQS_PER_MILLION = 0.40
DYNAMODB_WRU_PER_MILLION = 0.625
SCHEDULER_PER_MILLION = 1.00
BATCH = 10


class Counting:
    """Counts the calls (and DynamoDB write units) a client makes."""

    def __init__(self, real: Any, calls: Counter[str]) -> None:
        self._real = real
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)

        def call(**params: Any) -> Any:
            self._calls[name] += 1
            if name in ("put_item", "update_item"):  # claim items are < 1 KB: one WRU each
                self._calls["dynamodb WRU"] += 1
            elif name == "batch_write_item":
                self._calls["dynamodb WRU"] += sum(len(v) for v in params["RequestItems"].values())
            return method(**params)

        return call


def fail_once(message: Message) -> None:
    if message.retry.attempt == 1:
        raise RetryableError("busy")


def measure(transport: str, delay: int, *, table: bool, messages: int) -> dict[str, float]:
    clock = FrozenClock()
    world = World(clock, random.Random(1))
    queue = world.queue("cost", visibility_timeout=180)
    exhausted = world.queue("cost-exhausted")
    dlq = world.queue("cost-dlq")
    calls: Counter[str] = Counter()
    clients = AwsClients.of(
        sqs=Counting(world.sqs, calls),  # type: ignore[arg-type]
        scheduler=Counting(world.scheduler, calls),  # type: ignore[arg-type]
        dynamodb=Counting(world.dynamodb, calls),  # type: ignore[arg-type]
    )
    policy = RetryPolicy.from_dict(
        {
            "max_attempts": 3,
            "transport": transport,
            "backoff": {"strategy": "fixed", "base_seconds": delay, "max_seconds": delay},
        }
    )
    metrics = ConsumerMetrics()
    metrics.disabled = True
    consumer = RetryingConsumer(
        fail_once,
        policy,
        QueueTargets(
            queue.url,
            queue.arn,
            exhausted.url,
            dlq.arn,
            schedule_group="cost",
            scheduler_role_arn=f"arn:aws:iam::{ACCOUNT}:role/cost",
            visibility_timeout_seconds=180,
        ),
        clients=clients,
        clock=clock,
        logger=Logger(service="cost", level="CRITICAL", logger_handler=logging.NullHandler()),
        metrics=metrics,
        claims=DynamoDBClaims(lambda: clients.dynamodb, "claims") if table else None,
    )
    for i in range(messages):
        queue.send(f'{{"n": {i}}}')
    receives = deletes = fired = 0
    for _ in range(1_000_000):
        fired += world.scheduler.fire_due()
        records = queue.receive(BATCH)
        if records:
            receives += 1
            failed = set(consumer.process_batch(records).failed_ids)
            done = [r for r in records if r["messageId"] not in failed]
            deletes += 1 if done else 0
            for record in done:
                queue.delete(record["receiptHandle"])
            continue
        moments = [t for t in (queue.next_event_ms(), world.scheduler.next_event_ms()) if t is not None]
        if not moments:
            break
        clock.current = max(
            datetime.fromtimestamp(min(moments) / 1000, UTC), clock.current + timedelta(seconds=1)
        )
    assert not queue.messages
    assert not exhausted.messages
    sqs_requests = receives + deletes + sum(calls[k] for k in calls if k.endswith("_batch"))
    cost = (
        sqs_requests * SQS_PER_MILLION
        + calls["dynamodb WRU"] * DYNAMODB_WRU_PER_MILLION
        + fired * SCHEDULER_PER_MILLION
    ) / messages
    consumer_calls = sum(n for k, n in calls.items() if k != "dynamodb WRU")
    return {
        "consumer calls": consumer_calls / messages,
        "mapping calls": (receives + deletes) / messages,
        "dynamodb WRU": calls["dynamodb WRU"] / messages,
        "schedules fired": fired / messages,
        "usd per million": cost,
        "detail": 0.0,
        **{f"op:{k}": v / messages for k, v in calls.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=1000)
    args = parser.parse_args(argv)
    cases = [
        ("sqs-delay", "auto", 60),
        ("scheduler", "auto", 3600),
        ("sqs-hops", "sqs-hops", 3600),
        ("visibility", "visibility", 60),
    ]
    print(
        f"API calls and cost per retried message (one failure, then success), {args.messages} messages, "
        f"batches of {BATCH}, no faults"
    )
    header = [
        "transport",
        "claims",
        "consumer calls",
        "mapping calls",
        "DynamoDB WRU",
        "$ / million",
        "ratio",
    ]
    rows = [header]
    for label, transport, delay in cases:
        without = measure(transport, delay, table=False, messages=args.messages)
        with_table = measure(transport, delay, table=True, messages=args.messages)
        for name, result in (("none", without), ("default", with_table)):
            ratio = result["usd per million"] / without["usd per million"]
            rows.append(
                [
                    label,
                    name,
                    f"{result['consumer calls']:.2f}",
                    f"{result['mapping calls']:.2f}",
                    f"{result['dynamodb WRU']:.2f}",
                    f"{result['usd per million']:.2f}",
                    f"{ratio:.2f}x",
                ]
            )
        ops = ", ".join(f"{k[3:]} {v:.2f}" for k, v in sorted(with_table.items()) if k.startswith("op:"))
        rows.append(["", "(calls/msg)", ops, "", "", "", ""])
    widths = [max(len(r[i]) for r in rows if r[1] != "(calls/msg)" or i < 2) for i in range(len(header))]
    for n, row in enumerate(rows):
        if row[1] == "(calls/msg)":
            print(f"  {'':<{widths[0]}}  with the table, per message: {row[2]}")
            continue
        print(
            "  ".join(
                c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            print("  ".join("-" * w for w in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())

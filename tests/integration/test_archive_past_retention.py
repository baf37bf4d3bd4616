"""The archive outlives SQS retention, for each pattern (issue 31): the three patterns' modules, with their
defaults and an archive (modules/archive, defaults) on their terminal queues, applied once to the
emulator (tests/integration/fixtures/archive-patterns); messages made terminal the natural way (a
NonRetryableError, a budget spent, receives past maxReceiveCount, a self-healing source failing on an
async invoke); logical time then jumped past the terminal queues' 14-day retention. Every terminal
message is in its archive exactly once, with its outcome, error type, reason, source and attempt
history, and no terminal queue holds anything. Then the same with a deterministic share of the
archive's S3 writes failing (some after S3 stored the object): nothing lost, nothing twice."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from serverless_retry.archive.record import ArchiveRecord
from serverless_retry.archive.store import ArchiveStore
from serverless_retry_tools.local.emulator.s3_faults import set_s3_put_faults
from serverless_retry_tools.local.runtime.runtime import Runtime

from tests.terraform.stack import Applied

pytestmark = pytest.mark.integration

# modules/queue's default retention of the retry-exhausted queue and the DLQ (SQS's ceiling).
RETENTION_SECONDS = 1_209_600
# Logical seconds the clock is pushed on at each check while messages are in flight: it never passes
# a due event the runtime has not dispatched (held_clock.py), so this only skips idle time.
STEP_SECONDS = 600.0
# How a message of each kind ends: (kind, outcome, error type).
ENDINGS = (("invalid", "non-retryable", "NonRetryableError"), ("flaky", "exhausted", "TimeoutError"))
CLI = shutil.which("serverless-retry", path=str(Path(sys.executable).parent)) or "serverless-retry"
CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})


@pytest.fixture(scope="module")
def stack(archive_patterns_stack: Applied) -> Applied:
    """The stack applied once per run (tests/terraform/stack.py STACKS, archive_patterns_stack.py)."""
    return archive_patterns_stack


@dataclass(frozen=True)
class Expected:
    """One message sent, and how its archive record must read."""

    pattern: str  # scheduled | native | heal
    id: str
    outcome: str
    error_type: str
    place: str


def _location(url: str) -> tuple[str, str]:
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    return bucket, prefix


class Drive:
    def __init__(self, stack: Applied, work_dir: Path) -> None:
        self.stack = stack
        self.out = stack.outputs
        kwargs = stack.emulator.client_kwargs()
        self.sqs = boto3.client("sqs", config=CONFIG, **kwargs)
        self.lam = boto3.client("lambda", config=CONFIG, **kwargs)
        self.s3 = boto3.client("s3", config=CONFIG, **kwargs)
        self.runtime = Runtime(stack.emulator.url, region=stack.emulator.region, work_dir=work_dir)
        self.archives = {p: ArchiveStore(self.s3, *_location(self.out[p]["archive"])) for p in self.out}

    def send(self, run: str) -> list[Expected]:
        """Two of each way to end for each pattern, ids prefixed with ``run``."""
        expected: list[Expected] = []
        sched, native, heal = self.out["scheduled"], self.out["native"], self.out["heal"]
        for n in range(2):
            for kind, outcome, error in ENDINGS:
                body = {"id": f"{run}-s-{kind}-{n}", "kind": kind}
                self.sqs.send_message(QueueUrl=sched["queue_url"], MessageBody=json.dumps(body))
                expected.append(Expected("scheduled", body["id"], outcome, error, "exhausted"))
                event = {"id": f"{run}-h-{kind}-{n}", "kind": kind}
                self.lam.invoke(
                    FunctionName=heal["function_name"], InvocationType="Event", Payload=json.dumps(event)
                )
                expected.append(Expected("heal", event["id"], outcome, error, "selfheal-exhausted"))
            order = {"order_id": f"{run}-n-{n}", "amount": "12.50", "currency": "EUR"}
            self.sqs.send_message(QueueUrl=native["queue_url"], MessageBody=json.dumps(order))
            expected.append(Expected("native", order["order_id"], "dlq", "", "dlq"))
        return expected

    def records(self) -> dict[str, list[tuple[str, ArchiveRecord]]]:
        """Every archived record of each pattern, with its key, as a reader lists them."""
        out: dict[str, list[tuple[str, ArchiveRecord]]] = {}
        for pattern, store in self.archives.items():
            out[pattern] = [(key, store.get(key)[0]) for key in store.list()]
        return out

    def inspect(self, pattern: str) -> dict[str, Any]:
        """What the operator's ``serverless-retry inspect --archive ... --json`` reports of an archive."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | self.stack.emulator.env()
        result = subprocess.run(
            [CLI, "inspect", "--archive", self.out[pattern]["archive"], "--json"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        report: dict[str, Any] = json.loads(result.stdout)
        return report

    def archived(self) -> int:
        return sum(len(list(store.list())) for store in self.archives.values())

    def terminal_queues(self) -> dict[str, int]:
        """Messages each terminal queue still holds (visible, in flight or delayed)."""
        urls = {
            "scheduled-exhausted": self.out["scheduled"]["exhausted_queue_url"],
            "scheduled-dlq": self.out["scheduled"]["dlq_url"],
            "native-dlq": self.out["native"]["dlq_url"],
            "heal-exhausted": self.out["heal"]["exhausted_queue_url"],
        }
        names = [f"ApproximateNumberOfMessages{s}" for s in ("", "NotVisible", "Delayed")]
        counts = {}
        for name, url in urls.items():
            attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
            counts[name] = sum(int(attributes[n]) for n in names)
        return counts

    def run_past_retention(self, want: int, *, deadline: float = 150.0) -> float:
        """Run the runtime, pushing logical time on, until ``want`` records are archived and the terminal
        queues are empty; then jump past their retention. Answers the logical seconds jumped."""
        emulator = self.stack.emulator
        start = emulator.clock.now().timestamp()
        target: list[float] = []

        def until() -> bool:
            if not target:
                now = emulator.advance_clock(STEP_SECONDS)
                if self.archived() >= want and not any(self.terminal_queues().values()):
                    target.append(now + RETENTION_SECONDS + 60)
                return False
            left = max(0.0, target[0] - emulator.clock.now().timestamp())
            return emulator.advance_clock(left) >= target[0]

        assert self.runtime.run(until=until, deadline_seconds=deadline, check_every=0.5), (
            f"{self.archived()} of {want} archived, terminal queues {self.terminal_queues()}, "
            f"{emulator.clock.now().timestamp() - start:.0f} logical s on"
        )
        return emulator.clock.now().timestamp() - start


def _id(record: ArchiveRecord) -> str:
    original = json.loads(record["original"]["body"])
    return str(original.get("id") or original.get("order_id"))


def check_archived(drive: Drive, expected: list[Expected]) -> None:
    """Each expected message archived exactly once (one key, one record), read as expected."""
    records = drive.records()
    mine = {e.id for e in expected}
    seen = Counter(_id(r) for recs in records.values() for _, r in recs if _id(r) in mine)
    assert seen == Counter(mine), f"archived {dict(seen)}"
    by_id = {_id(r): (p, k, r) for p, recs in records.items() for k, r in recs}
    out = drive.out
    source = {"scheduled": out["scheduled"]["queue_arn"], "native": out["native"]["queue_arn"], "heal": None}
    problems: list[str] = []
    for e in expected:
        pattern, key, record = by_id[e.id]
        # The default budget (5 attempts) unless the first error was non-retryable.
        attempts = 1 if e.outcome == "non-retryable" else 5
        if e.pattern == "native":  # a plain message SQS moved after 5 receives: no envelope, no history
            attempts = 1
        got = {
            "pattern": pattern,
            "outcome": record["outcome"],
            "error_type": record["error_type"],
            "place": record["place"],
            "source": record["source_queue_arn"],
            "attempt": record["attempt"],
            # The consumer's envelope keeps each failure that was retried (the last one is the error).
            "history": [h["error_type"] for h in record["history"]],
        }
        want = {
            "pattern": e.pattern,
            "outcome": e.outcome,
            "error_type": e.error_type,
            "place": e.place,
            "source": source[e.pattern],
            "attempt": attempts,
            "history": [e.error_type] * (attempts - 1) if e.pattern == "scheduled" else [],
        }
        if got != want:
            problems.append(f"{e.id}: {got} != {want}")
        # Redacted for a non-retryable error by design, but never empty.
        if not record["reason"] or not record["terminal_at"] or record["key"] != key:
            problems.append(f"{e.id}: reason {record['reason']!r}, terminal_at {record['terminal_at']!r}")
        if e.pattern == "heal" and not record["first_failed_at"]:
            problems.append(f"{e.id}: no first_failed_at")
    assert problems == [], "\n".join(problems)


def test_every_terminal_message_is_in_the_archive_past_the_queues_retention(
    stack: Applied, tmp_path: Path
) -> None:
    drive = Drive(stack, tmp_path)
    expected = drive.send("a")
    jumped = drive.run_past_retention(len(expected))
    assert jumped > RETENTION_SECONDS
    assert drive.terminal_queues() == dict.fromkeys(drive.terminal_queues(), 0)
    check_archived(drive, expected)


def test_archive_writes_failing_part_of_the_time_lose_and_duplicate_nothing(
    stack: Applied, tmp_path: Path
) -> None:
    drive = Drive(stack, tmp_path)
    before = drive.archived()
    start = set_s3_put_faults(stack.emulator.url, fraction=0.3, key_contains="/dead/", written_fraction=0.5)
    try:
        expected = drive.send("b")
        drive.run_past_retention(before + len(expected))
    finally:
        end = set_s3_put_faults(stack.emulator.url, fraction=0.0)
    calls, failed, after = (end[k] - start[k] for k in ("calls", "failed", "failed_after_write"))
    # Each record written at least once; 3 in 10 of the writes failed, half of those after S3 stored it.
    assert calls >= len(expected)
    assert failed == math.floor(calls * 0.3) >= 3, end
    assert after == failed // 2 >= 1, end
    assert drive.terminal_queues() == dict.fromkeys(drive.terminal_queues(), 0)
    assert drive.archived() == before + len(expected)  # no record under a second key
    check_archived(drive, expected)
    for pattern, records in drive.records().items():  # the operator's listing agrees, record for record
        report = drive.inspect(pattern)
        assert report["unreadable"] == []
        assert report["looked_at"] == len(records)
        assert report["by_outcome"] == Counter(r["outcome"] for _, r in records)

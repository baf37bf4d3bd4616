"""modules/stream-retry applied on the emulator with its defaults, a poison record driven through to
exhaustion while the rest of its shard is processed in order (issue 32).

The stack is tests/integration/fixtures/stream-retry, applied once per run (tests/terraform/stack.py)
at 10 logical seconds per real second: a Kinesis stream of two shards and the module with nothing
tuned (ordering ``unordered``, the retry policy's defaults: 5 attempts, retries after 10, 20, 40 and
80 s), its function running the fixture's processor (the example's ok / poison / invalid orders, and
a journal line for every run). The local runtime runs the stream's mapping (StreamRunner) and the
retry queue's; what ran is read from the journal lines the function wrote, each stamped with the
function's clock (the emulator's logical time), and where each record ended from the queues.

The mapping starts at LATEST (the module's default): a record is read only once the shard's poller
has its first iterator, so warm-up orders are put until one runs, and the test's records after that.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config
from serverless_retry.policy import RetryPolicy
from serverless_retry_tools.local.demos.demo_queues import receive_all
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent

from tests.terraform.stack import Applied

pytestmark = pytest.mark.integration

CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})
JOURNAL = "stream journal"  # the message of the fixture processor's line for each run
# The envelope's times are whole seconds: a delay between two of them may look this much shorter.
ROUNDING = timedelta(seconds=1)
WARM_UP_EVERY = 0.5  # real seconds between warm-up orders
WARM_UPS = 60  # at most: the shard's poller starts within a refresh (0.5 s) of the runtime
DEADLINE = 80.0  # real seconds for the whole run: the retries' budget is 15 at x10

# (order id, kind, partition key): "A" and "B" hash to the two shards' halves of the key space.
ORDERS = [
    ("a1", "ok", "A"),
    ("poison", "poison", "A"),
    ("b1", "ok", "B"),
    ("a2", "ok", "A"),
    ("a3", "ok", "A"),
    ("invalid", "invalid", "A"),
    ("b2", "ok", "B"),
    ("a4", "ok", "A"),
    ("b3", "ok", "B"),
    ("a5", "ok", "A"),
    ("a6", "ok", "A"),
    ("b4", "ok", "B"),
]


@dataclass(frozen=True)
class Put:
    order_id: str
    kind: str
    partition_key: str
    shard_id: str
    sequence_number: str


@dataclass(frozen=True)
class Ran:
    """One run of the processor, as its journal line says."""

    at: datetime  # the function's (logical) time when the processor ran
    order_id: str
    kind: str
    attempt: int
    shard_id: str
    sequence_number: str


class StreamStack:
    """The applied stack, a runtime on it, and what its function journaled."""

    def __init__(self, applied: Applied, work_dir: Path) -> None:
        self.orders: dict[str, Any] = applied.outputs["orders"]
        self.stream_name: str = applied.outputs["stream"]["name"]
        self.kinesis = applied.client("kinesis", config=CONFIG)
        self.sqs = applied.client("sqs", config=CONFIG)
        self.events: list[RuntimeEvent] = []
        self.runs: list[Ran] = []
        self._lock = threading.Lock()
        self.runtime = Runtime(
            applied.emulator.url,
            region=applied.emulator.region,
            work_dir=work_dir,
            on_event=self.events.append,
            log_tap=self._tap,
        )
        self.warm_ups: list[Put] = []
        self.puts: list[Put] = []
        self._last_warm_up = 0.0
        self._quiet = 0

    def _tap(self, function: str, line: str) -> None:
        if function != self.orders["function_name"] or not line.startswith("{"):
            return
        try:
            record = json.loads(line)
        except ValueError:
            return
        if not isinstance(record, dict) or record.get("message") != JOURNAL:
            return
        ran = Ran(
            datetime.fromisoformat(str(record["at"])),
            str(record["order_id"]),
            str(record["kind"]),
            int(record["attempt"]),
            str(record["shard_id"]),
            str(record["sequence_number"]),
        )
        with self._lock:
            self.runs.append(ran)

    def journal(self) -> list[Ran]:
        """Every run so far in the order the function ran them (lines from different invocations
        reach the runtime's log tap in no set order)."""
        with self._lock:
            return sorted(self.runs, key=lambda r: r.at)

    def put(self, orders: list[tuple[str, str, str]]) -> list[Put]:
        """One PutRecords call: the records are read together, in their sequence order per shard."""
        answer = self.kinesis.put_records(
            StreamName=self.stream_name,
            Records=[
                {"Data": json.dumps({"order_id": order, "kind": kind}).encode(), "PartitionKey": key}
                for order, kind, key in orders
            ],
        )
        assert answer.get("FailedRecordCount", 0) == 0, answer
        return [
            Put(order, kind, key, str(entry["ShardId"]), str(entry["SequenceNumber"]))
            for (order, kind, key), entry in zip(orders, answer["Records"], strict=True)
        ]

    def pending(self, url: str) -> int:
        attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        return sum(
            int(attributes[k])
            for k in (
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            )
        )

    def step(self) -> bool:
        """The runtime's ``until``: warm up, put the test's records, then wait for them to settle."""
        runs = self.journal()
        if not any(r.order_id.startswith("warm-up") for r in runs):
            if len(self.warm_ups) < WARM_UPS and time.monotonic() - self._last_warm_up >= WARM_UP_EVERY:
                self._last_warm_up = time.monotonic()
                self.warm_ups += self.put([(f"warm-up-{len(self.warm_ups)}", "ok", "A")])
            return False
        if not self.puts:
            self.puts = self.put(ORDERS)
            return False
        ran = {r.order_id for r in runs}
        finals = sum(1 for p in self.puts if p.kind != "ok")
        settled = (
            all(p.order_id in ran for p in self.puts)
            and self.pending(self.orders["retry_queue_url"]) == 0
            and self.pending(self.orders["exhausted_queue_url"]) >= finals
        )
        self._quiet = self._quiet + 1 if settled else 0
        return self._quiet >= 2

    def finals(self, url: str) -> list[dict[str, Any]]:
        return [json.loads(m["Body"]) for m in receive_all(self.sqs, url, limit=100)]


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _position(final: dict[str, Any]) -> tuple[str, str, str]:
    """(shard id, sequence number, partition key) of the stream record a final envelope carries."""
    record = json.loads(final["body"])
    shard, _, sequence = str(record["eventID"]).partition(":")
    assert sequence == record["kinesis"]["sequenceNumber"], record
    return shard, sequence, str(record["kinesis"]["partitionKey"])


def test_a_poison_record_is_retried_to_exhaustion_while_its_shard_goes_on_in_order(
    stream_retry_stack: Applied, tmp_path: Path
) -> None:
    stack = StreamStack(stream_retry_stack, tmp_path)
    orders = stack.orders
    # Nothing tuned: the policy the function runs is the defaults.
    policy = RetryPolicy.from_json(orders["retry_policy_json"])
    assert policy == RetryPolicy()

    satisfied = stack.runtime.run(until=stack.step, deadline_seconds=DEADLINE, check_every=0.2)
    runs = stack.journal()
    assert satisfied, f"not settled in {DEADLINE:.0f} s: {runs}; runtime errors: {stack.runtime.errors}"
    assert not stack.runtime.errors, stack.runtime.errors
    puts = stack.puts
    assert {p.shard_id for p in puts if p.partition_key == "A"} != {
        p.shard_id for p in puts if p.partition_key == "B"
    }
    by_order = {p.order_id: p for p in [*stack.warm_ups, *puts]}

    # LATEST: the warm-ups put before the shard's first read were never read, every one after was.
    seen_warm_ups = [w for w in stack.warm_ups if w.order_id in {r.order_id for r in runs}]
    assert seen_warm_ups
    assert seen_warm_ups == stack.warm_ups[-len(seen_warm_ups) :]

    # Every run saw its record's own position.
    for ran in runs:
        put = by_order[ran.order_id]
        assert (ran.shard_id, ran.sequence_number) == (put.shard_id, put.sequence_number), ran

    # Every ordinary record ran exactly once, on its first attempt, and each shard's first runs came
    # in its sequence order.
    ordinary = [p for p in [*seen_warm_ups, *puts] if p.kind == "ok"]
    assert Counter(r.order_id for r in runs if r.kind == "ok") == {p.order_id: 1 for p in ordinary}
    assert {r.attempt for r in runs if r.kind == "ok"} == {1}
    first_runs = [r for r in runs if r.attempt == 1]
    for shard in {p.shard_id for p in puts}:
        ran_order = [r.sequence_number for r in first_runs if r.shard_id == shard]
        assert ran_order == sorted(ran_order, key=int), shard
        expected = sorted(
            (p.sequence_number for p in [*seen_warm_ups, *puts] if p.shard_id == shard), key=int
        )
        assert ran_order == expected, shard

    # The poison record: one run per attempt of the default budget (how long each retry waited is
    # checked below, from its envelope: a delay counts from the receive the consumer decided at,
    # not from the processor's start, which a cold worker delays by a few logical seconds).
    poison = by_order["poison"]
    poison_runs = [r for r in runs if r.order_id == "poison"]
    assert [r.attempt for r in poison_runs] == list(range(1, policy.max_attempts + 1))
    # Every retry waited on the retry queue (its delays are within SQS's 15 minutes): no schedule.
    assert not [e for e in stack.events if e.kind.startswith("schedule")]
    # The shard did not wait for it: every later record of its shard ran before its first retry.
    later = [
        p
        for p in puts
        if p.shard_id == poison.shard_id and int(p.sequence_number) > int(poison.sequence_number)
    ]
    assert later
    first_retry = poison_runs[1].at
    assert all(r.at < first_retry for r in runs if r.order_id in {p.order_id for p in later})
    # The invalid record ran once: a NonRetryableError is never retried.
    assert [r.attempt for r in runs if r.order_id == "invalid"] == [1]

    # The stream's mapping saw only successes (every failure was handed off): nothing retried in
    # place, nothing discarded, and each shard's checkpoint is its last record.
    batches = [e.detail for e in stack.events if e.kind == "stream-batch"]
    assert batches
    assert {b["outcome"] for b in batches} == {"ok"}, batches
    assert not [e for e in stack.events if e.kind == "stream-discarded"]
    progress = stack.runtime.streams.progress()[orders["event_source_mapping_uuid"]]
    for shard in {p.shard_id for p in puts}:
        last = max((p.sequence_number for p in puts if p.shard_id == shard), key=int)
        assert progress[shard].checkpoint == last, (shard, progress[shard])
        assert progress[shard].discarded == ()

    # Of this run's records, the retry-exhausted queue holds exactly the poison and the invalid one
    # (each once), with its outcome, reason and error, and the stream position in the envelope's body.
    # (Another run's on the same stack, if any, are other positions.)
    ours = {(p.shard_id, p.sequence_number) for p in by_order.values()}
    finals_of = Counter[tuple[str, str]]()
    # Keyed by (shard, sequence number): a sequence number is unique within its shard only.
    finals: dict[tuple[str, str], dict[str, Any]] = {}
    for final in stack.finals(orders["exhausted_queue_url"]):
        shard, sequence, _ = _position(final)
        if (shard, sequence) in ours:
            finals_of[shard, sequence] += 1
            finals[shard, sequence] = final
    assert finals_of == {(p.shard_id, p.sequence_number): 1 for p in puts if p.kind != "ok"}, finals
    exhausted = finals[poison.shard_id, poison.sequence_number]
    envelope = exhausted["serverless_retry"]
    assert (envelope["outcome"], envelope["attempt"]) == ("exhausted", policy.max_attempts)
    assert envelope["reason"] == f"attempt {policy.max_attempts} >= max_attempts {policy.max_attempts}"
    assert envelope["final_error"]["type"] == "RetryableError"
    assert envelope["source"] == stream_retry_stack.outputs["stream"]["arn"]
    # Its history: each failure before the last, the delay the policy chose and how the retry waited
    # (the retry queue's SQS delay: no schedule), and each retry came no earlier than that.
    history = envelope["history"]
    retries = range(1, policy.max_attempts)
    assert [h["error_type"] for h in history] == ["RetryableError" for _ in retries]
    assert [h["delay_seconds"] for h in history] == [policy.backoff.base_delay(n) for n in retries]
    assert {h["transport"] for h in history} == {"sqs-delay"}
    failed_at = [_time(h["at"]) for h in history] + [_time(envelope["exhausted_at"])]
    for h, failed, next_failed in zip(history, failed_at, failed_at[1:], strict=False):
        assert next_failed - failed >= timedelta(seconds=h["delay_seconds"]) - ROUNDING, history
    assert _position(exhausted) == (poison.shard_id, poison.sequence_number, "A")
    invalid = by_order["invalid"]
    refused = finals[invalid.shard_id, invalid.sequence_number]["serverless_retry"]
    assert (refused["outcome"], refused["attempt"]) == ("non-retryable", 1)
    assert refused["history"] == []
    assert refused["final_error"]["type"] == "NonRetryableError"
    assert refused["reason"].startswith("NonRetryableError")
    assert _position(finals[invalid.shard_id, invalid.sequence_number]) == (
        invalid.shard_id,
        invalid.sequence_number,
        "A",
    )

    # Nothing anywhere else: the on-failure queue (Lambda never gave up on a batch), the retry
    # queue's DLQ, the retry queue itself.
    assert stack.finals(orders["on_failure_queue_url"]) == []
    assert stack.finals(orders["dlq_url"]) == []
    assert stack.pending(orders["retry_queue_url"]) == 0

    # Every record in exactly one final place: processed, or on the retry-exhausted queue.
    places = Counter[str]()
    for p in puts:
        processed = p.kind == "ok" and any(r.order_id == p.order_id for r in runs)
        places[p.order_id] += int(processed) + int((p.shard_id, p.sequence_number) in finals)
    assert places == {p.order_id: 1 for p in puts}

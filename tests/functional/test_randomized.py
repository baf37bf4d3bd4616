"""One seeded, bounded run of 520 messages through the consumer with AWS faults injected, driven the
way Lambda's event source mapping, SQS redrive and EventBridge Scheduler would drive it. Every
message must end in exactly one final place: processed once, in the retry-exhausted queue with a
reason, or in the DLQ after maxReceiveCount. 0 lost, 0 duplicated."""

from __future__ import annotations

import json
import random
import re
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto.scheduler.models import scheduler_backends
from moto.sqs.models import sqs_backends
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.errors import HttpError, NonRetryableError, RetryableError
from serverless_retry.message import Message
from serverless_retry.terminal import FRAME_OVERHEAD_BYTES, TerminalView, read_terminal

from .conftest import ACCOUNT, QUIET_LOGGER, REGION, Stack, event_from, failure_ids, make_consumer, make_stack
from .faults import FaultyScheduler, FaultySqs

SEED = 20261130
MESSAGES = 520
MAX_RECEIVE_COUNT = 3
MAX_BYTES = 4096
MAX_ITERATIONS = 3000
TIME_BUDGET_SECONDS = 45
POLICY = {
    "max_attempts": 4,
    "max_age_seconds": 6 * 3600,
    "backoff": {
        "strategy": "exponential",
        "base_seconds": 20,
        "multiplier": 3,
        "max_seconds": 3600,
        "jitter": "full",
    },
    "rules": [
        {
            "http_status": [503],
            "honor_retry_after": True,
            "backoff": {"strategy": "fixed", "max_seconds": 7200},
        },
        {"errors": ["KeyError"], "retry": False},
    ],
    "unmatched": "retry",
}
STEPS = ["retry", "retry", "boom", "slow", "fatal", "keyerror"]


def make_bodies(rng: random.Random) -> list[str]:
    bodies = []
    for i in range(MESSAGES):
        roll = rng.random()
        if roll < 0.03:  # claims to be an envelope but is not a valid one
            bodies.append(json.dumps({"serverless_retry": {"v": 7, "attempt": -1}, "i": i}))
            continue
        plan = [rng.choice(STEPS) for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 5]))]
        # Near the 4096-byte limit: too large to wrap once it fails, or its final envelope is; the
        # largest go to the exhausted queue framed (their header line, then the body verbatim).
        # Quotes, which JSON escaping doubles: the body holds 3600-3980 characters.
        pad = '"' * rng.randint(1800, 1990) if roll > 0.95 else ""
        bodies.append(json.dumps({"i": i, "plan": plan, "pad": pad}))
    return bodies


class Processor:
    """Fails attempt n the way the message's plan says; succeeds once the plan runs out."""

    def __init__(self) -> None:
        self.succeeded: Counter[int] = Counter()

    def __call__(self, message: Message) -> None:
        doc = message.json()
        plan = doc["plan"]
        step = plan[message.retry.attempt - 1] if message.retry.attempt <= len(plan) else "ok"
        if step == "ok":
            self.succeeded[doc["i"]] += 1
        elif step == "retry":
            raise RetryableError("downstream busy")
        elif step == "boom":
            raise ValueError("unexpected")
        elif step == "slow":
            raise HttpError(503, "unavailable", retry_after=1500)
        elif step == "fatal":
            raise NonRetryableError("cannot ever work")
        else:
            raise KeyError("customer")


def identify(body: str, attributes: dict[str, Any]) -> tuple[int, TerminalView]:
    """(message number, how it reads) of anything found in a final place, by the one reader that
    inspect and redrive use: its original body is the sent one (or the raw invalid claim)."""
    view = read_terminal(body, attributes)
    return int(json.loads(view.body)["i"]), view


class Driver:
    """Lambda's event source mapping (poll, invoke, delete the successes) and the Scheduler (fire due
    one-time schedules to their SQS target, then delete them), over moto, on a FrozenClock."""

    def __init__(self, stack: Stack, clock: FrozenClock, consumer: Any) -> None:
        self.stack = stack
        self.clock = clock
        self.consumer = consumer
        self.queue = sqs_backends[ACCOUNT][REGION].queues[stack.queue_url.rsplit("/", 1)[1]]
        self.group = scheduler_backends[ACCOUNT][REGION].schedule_groups[stack.group]
        self.invocations = 0
        self.fired = 0

    def poll(self) -> None:
        for _ in range(200):  # bounded: each round takes up to 10 visible messages
            messages = self.stack.sqs.receive_message(
                QueueUrl=self.stack.queue_url,
                MaxNumberOfMessages=10,
                VisibilityTimeout=30,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                return
            response = self.consumer(event_from(messages, self.stack.queue_arn))
            self.invocations += 1
            failed = set(failure_ids(response))
            for m in messages:
                if m["MessageId"] not in failed:
                    self.stack.sqs.delete_message(
                        QueueUrl=self.stack.queue_url, ReceiptHandle=m["ReceiptHandle"]
                    )
        raise AssertionError("poll did not drain the visible messages")

    def due(self, schedule: Any) -> datetime:
        match = re.fullmatch(r"at\((.+)\)", schedule.schedule_expression)
        assert match, schedule.schedule_expression
        return datetime.fromisoformat(match[1]).replace(tzinfo=UTC)

    def fire_due_schedules(self) -> None:
        now = self.clock.now()
        for schedule in list(self.group.schedules.values()):
            if self.due(schedule) <= now:
                target = schedule.target
                assert target["Arn"] == self.stack.queue_arn
                assert schedule.action_after_completion == "DELETE"
                self.stack.sqs.send_message(QueueUrl=self.stack.queue_url, MessageBody=target["Input"])
                self.stack.scheduler.delete_schedule(GroupName=self.stack.group, Name=schedule.name)
                self.fired += 1

    def next_event(self) -> datetime | None:
        times = [max(m.delayed_until, m.visible_at) / 1000 for m in self.queue._messages]
        moments = [datetime.fromtimestamp(t, UTC) for t in times]
        moments += [self.due(s) for s in self.group.schedules.values()]
        return min(moments) if moments else None

    def run(self) -> int:
        started = time.monotonic()
        for iteration in range(MAX_ITERATIONS):
            assert time.monotonic() - started < TIME_BUDGET_SECONDS, "randomized run over its time budget"
            self.fire_due_schedules()
            self.poll()
            upcoming = self.next_event()
            if upcoming is None:
                return iteration
            # Jump to the next event, at least a minute: delays that close together fire together.
            self.clock.current = max(
                upcoming + timedelta(seconds=1), self.clock.now() + timedelta(seconds=60)
            )
        raise AssertionError(f"not settled after {MAX_ITERATIONS} iterations")


def test_every_message_ends_in_exactly_one_place(aws: None, clock: FrozenClock) -> None:
    rng = random.Random(SEED)
    faults = random.Random(SEED + 1)
    stack = make_stack("random", max_receive_count=MAX_RECEIVE_COUNT)
    stack.calls.clear()
    sqs = FaultySqs(
        stack.sqs,
        fail_entry=lambda url, entry: faults.random() < 0.2,
        fail_call=lambda url: faults.random() < 0.04,
    )
    scheduler = FaultyScheduler(stack.scheduler, throttle=lambda params: faults.random() < 0.25)
    processor = Processor()
    consumer = make_consumer(
        stack,
        processor,
        POLICY,
        clock,
        clients=AwsClients.of(sqs=sqs, scheduler=scheduler),
        seed=SEED,
        logger=QUIET_LOGGER,
        max_message_bytes=MAX_BYTES,
        exhausted_max_message_bytes=MAX_BYTES + FRAME_OVERHEAD_BYTES,
    )
    bodies = make_bodies(rng)
    for start in range(0, len(bodies), 10):
        stack.sqs.send_message_batch(
            QueueUrl=stack.queue_url,
            Entries=[{"Id": str(n), "MessageBody": b} for n, b in enumerate(bodies[start : start + 10])],
        )

    driver = Driver(stack, clock, consumer)
    driver.run()

    exhausted = stack.drain(stack.exhausted_url)
    dead = stack.drain(stack.dlq_url)
    assert stack.receive(stack.queue_url) == []
    assert driver.group.schedules == {}

    places: dict[int, list[str]] = {i: [] for i in range(MESSAGES)}
    for i, count in processor.succeeded.items():
        places[i] += ["processed"] * count
    outcomes: Counter[str] = Counter()
    forms: Counter[str] = Counter()
    for m in exhausted:
        i, view = identify(m["Body"], m.get("MessageAttributes", {}))
        # Every terminal message carries its outcome and reason, however large its body.
        assert view.outcome != "unknown", m["Body"][:300]
        assert view.reason, m["Body"][:300]
        outcome = view.outcome
        forms[view.form] += 1
        outcomes[outcome] += 1
        places[i].append(f"exhausted:{outcome}")
    for m in dead:
        i, _ = identify(m["Body"], m.get("MessageAttributes", {}))
        places[i].append("dlq")

    lost = [i for i, p in places.items() if not p]
    duplicated = {i: p for i, p in places.items() if len(p) > 1}
    assert lost == []
    assert duplicated == {}

    # The run exercised what it claims to: faults fired, and every kind of final place was reached.
    assert sqs.injected_entries > 20
    assert sqs.injected_calls > 3
    assert scheduler.injected > 10
    assert driver.fired > 20
    assert set(outcomes) >= {
        "exhausted",
        "non-retryable",
        "invalid-envelope",
        "too-large-to-retry",
    }
    assert set(forms) == {"envelope", "framed"}
    assert len(dead) >= 1
    assert len(processor.succeeded) > MESSAGES // 2
    print(
        f"\nrandomized: {MESSAGES} messages, {driver.invocations} invocations, {driver.fired} schedules fired; "
        f"processed {len(processor.succeeded)}, exhausted {dict(outcomes)}, dlq {len(dead)}; injected "
        f"{sqs.injected_entries} entry + {sqs.injected_calls} call failures, {scheduler.injected} throttles"
    )


@pytest.fixture(autouse=True)
def _quiet_emf(monkeypatch: pytest.MonkeyPatch) -> None:
    # Hundreds of invocations: keep EMF lines out of the captured output of this one test.
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")

"""A large randomized fault run of the real consumer against the in-memory AWS world (fakeaws.py).

    .venv/bin/python -m tests.support.faultrun [--messages 10000] [--variant standard-table] [--seed N]

Lambda's event source mapping is played by :class:`Driver` (receive up to 10, invoke, delete the
records not reported as failures), EventBridge Scheduler fires due schedules, SQS redrives to the DLQ
and deletes expired messages. Injected, at random: API faults on every client the consumer holds
(refused calls, calls that took effect but answered with a timeout, single batch entries failing,
invocations dying right after a call took effect), invocations whose response is lost, deletes that
fail (the record comes back), duplicate deliveries, and a stretch in which the Scheduler refuses every
call. The report counts per message where it ended and how often:

- lost: in no final place (processed, retry-exhausted queue, DLQ); a message SQS expired is lost;
- two places: in more than one *kind* of final place (e.g. processed and in the DLQ);
- duplicate final copies: the same kind of place twice (e.g. two copies in the exhausted queue);
- second chain: some attempt ran in two different copies of it (a copy is an SQS message, or the
  messages one copy was carried on in while it waited out a claims-table outage);
- duplicates processed: processor runs beyond one per (message, attempt).

``run()`` returns a Report; ``Report.failures()`` lists what breaks the guarantees (exit 1 here).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ReadTimeoutError
from serverless_retry.aws import AwsClients
from serverless_retry.claims import DynamoDBClaims
from serverless_retry.clock import FrozenClock
from serverless_retry.config import QueueTargets
from serverless_retry.consumer import RetryingConsumer
from serverless_retry.errors import HttpError, NonRetryableError, RetryableError
from serverless_retry.message import Message
from serverless_retry.observability import ConsumerMetrics
from serverless_retry.policy import RetryPolicy
from serverless_retry.queue_redrive import decode, outgoing_message
from serverless_retry.terminal import read_terminal

from .fakeaws import ACCOUNT, FakeQueue, World, client_error, envelope_meta

ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/fault-run-scheduler"
MAX_BYTES = 4096
POLICY: dict[str, Any] = {
    "max_attempts": 5,
    "max_age_seconds": 12 * 3600,
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
}
STEPS = ["retry", "retry", "boom", "slow", "fatal", "keyerror", "cancel", "unprintable"]


_DYNAMODB_CALLS = frozenset({"update_item", "put_item", "batch_write_item"})


class Crash(BaseException):
    """The invocation dies here, after the call took effect (a Lambda timeout, an out-of-memory kill)."""


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() of this error fails")


@dataclass
class Rates:
    refuse: float = 0.16  # the call fails with no effect (throttling, 5xx)
    timeout_after: float = 0.12  # the call takes effect, the client sees a read timeout
    crash_after: float = 0.003  # the call takes effect, then the invocation dies
    entry_fail: float = 0.08  # batch calls: an entry fails on its own
    lost_response: float = 0.02  # the invocation finished but the event source mapping never got it
    delete_fail: float = 0.02  # the mapping's delete of a handled record fails: it comes back
    duplicate_delivery: float = 0.01  # SQS hands the same message out twice (standard queues)
    outage: tuple[float, float] | None = (600.0, 5400.0)  # seconds into the run: the Scheduler refuses all
    claims_outage: tuple[float, float] | None = None  # seconds into the run: the claims table refuses all
    # Seconds into the run in which every invocation dies before its sends (after its claims): the
    # records that fail then reach the DLQ, copies with their claims taken (a bad deploy, say).
    dying: tuple[float, float] | None = None

    @classmethod
    def none(
        cls, *, outage: tuple[float, float] | None = None, claims_outage: tuple[float, float] | None = None
    ) -> Rates:
        return cls(0, 0, 0, 0, 0, 0, 0, outage, claims_outage, None)


@dataclass
class Counts:
    calls: int = 0
    faulted: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)


class Faulty:
    """Wraps a fake client; every call may be refused, time out after its effect, or kill the invocation."""

    def __init__(
        self, real: Any, world: World, rates: Rates, rng: random.Random, counts: Counts, *, start: datetime
    ):
        self._real = real
        self._world = world
        self._rates = rates
        self._rng = rng
        self._counts = counts
        self._start = start

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._real, name)

        def call(**params: Any) -> Any:
            rates, rng, counts = self._rates, self._rng, self._counts
            counts.calls += 1
            if name == "create_schedule" and rates.outage is not None:
                elapsed = (self._world.clock.now() - self._start).total_seconds()
                if rates.outage[0] <= elapsed < rates.outage[1]:
                    counts.faulted += 1
                    counts.by_kind["scheduler-outage"] += 1
                    raise client_error("ThrottlingException", "CreateSchedule", "Rate exceeded")
            if name in ("send_message_batch", "create_schedule") and rates.dying is not None:
                elapsed = (self._world.clock.now() - self._start).total_seconds()
                if rates.dying[0] <= elapsed < rates.dying[1]:
                    counts.faulted += 1
                    counts.by_kind["dying"] += 1
                    raise Crash(name)
            if name in _DYNAMODB_CALLS and rates.claims_outage is not None:
                elapsed = (self._world.clock.now() - self._start).total_seconds()
                if rates.claims_outage[0] <= elapsed < rates.claims_outage[1]:
                    counts.faulted += 1
                    counts.by_kind["claims-outage"] += 1
                    raise client_error("InternalServerError", name, "injected outage", 500)
            roll = rng.random()
            if roll < rates.refuse:
                counts.faulted += 1
                counts.by_kind["refused"] += 1
                code, status = rng.choice([("ThrottlingException", 400), ("InternalServerError", 500)])
                raise client_error(code, name, "injected", status)
            if name in ("send_message_batch", "change_message_visibility_batch") and rates.entry_fail:
                entries = params["Entries"]
                failing = [e for e in entries if rng.random() < rates.entry_fail]
                if failing:
                    counts.faulted += 1
                    counts.by_kind["entries"] += len(failing)
                    keep = [e for e in entries if e not in failing]
                    response = method(**{**params, "Entries": keep}) if keep else {"Successful": []}
                    response["Failed"] = [
                        *response.get("Failed", []),
                        *({"Id": e["Id"], "SenderFault": False, "Code": "InternalError"} for e in failing),
                    ]
                    return response
            response = method(**params)
            roll -= rates.refuse
            if roll < rates.timeout_after:
                counts.faulted += 1
                counts.by_kind["timeout-after-effect"] += 1
                raise ReadTimeoutError(endpoint_url=f"https://{name}.invalid")
            if roll - rates.timeout_after < rates.crash_after:
                counts.faulted += 1
                counts.by_kind["crash-after-effect"] += 1
                raise Crash(name)
            return response

        return call


@dataclass
class Variant:
    name: str
    fifo: bool = False
    fifo_order: str = "ordered"
    table: bool = False  # the claims table: one chain per message (the module's default)
    idempotent: bool = False  # Powertools idempotency of the processor: a success is not run again
    transport: str = "auto"
    messages: int = 10_000
    groups: int = 0  # FIFO: message groups
    rates: Rates = field(default_factory=Rates)
    max_receive_count: int = 5
    batch_size: int = 10
    # Seconds into the run at which the DLQ is redriven to the source, verbatim under new message ids
    # (what `serverless-retry redrive` does by default); None: never.
    redrive_at: float | None = None


VARIANTS = {
    # What the modules deploy by default: the claims table, no processor idempotency; with a
    # claims-table outage inside the Scheduler's and a DLQ redrive after both.
    "default": Variant(
        "default",
        table=True,
        rates=Rates(claims_outage=(1800.0, 5400.0), dying=(6000.0, 7800.0)),
        redrive_at=4 * 3600.0,
    ),
    "standard": Variant("standard"),
    # Claims and processor idempotency; at the end an operator redrives what the DLQ holds (copies
    # there are provable duplicates then, acknowledged without running).
    "standard-table": Variant("standard-table", table=True, idempotent=True, redrive_at=12 * 3600.0),
    "hops-table": Variant("hops-table", table=True, idempotent=True, transport="sqs-hops", messages=2_000),
    # In place every receive is an attempt but those held back behind a failing message of the group
    # (counted in the claims table); a batch size of 1 keeps a group's later messages from being held
    # back repeatedly (tests/functional/test_fifo_holds.py has the held-back budgets), and the DLQ
    # leaves room above max_attempts (5) for the receives that faults spend: maxReceiveCount 10.
    "fifo-ordered-table": Variant(
        "fifo-ordered-table",
        fifo=True,
        table=True,
        idempotent=True,
        messages=2_000,
        groups=150,
        batch_size=1,
        max_receive_count=10,
    ),
    "fifo-unordered-table": Variant(
        "fifo-unordered-table",
        fifo=True,
        fifo_order="unordered",
        table=True,
        idempotent=True,
        messages=2_000,
        groups=150,
    ),
    "scheduler-outage": Variant(
        "scheduler-outage", messages=2_000, rates=Rates.none(outage=(0.0, 6 * 3600.0))
    ),
}


class Processor:
    """Fails attempt n the way the message's plan says; succeeds once the plan runs out.

    ``idempotent``: a message that succeeded once succeeds again without running, which is what the
    consumer's Powertools idempotency (``IdempotentProcessor``, on with the table) gives a processor.
    """

    def __init__(self, *, idempotent: bool = False) -> None:
        self.idempotent = idempotent
        self.runs: dict[tuple[int, int], list[str]] = defaultdict(list)  # (i, attempt) → SQS message ids
        self.successes: Counter[int] = Counter()
        self.order: list[tuple[str, int]] = []  # (group, i) of each success, in time order

    def __call__(self, message: Message) -> None:
        doc = message.json()
        i = doc["i"]
        if self.idempotent and self.successes[i]:
            return
        attempt = message.retry.attempt
        self.runs[(i, attempt)].append(copy_of(message))
        plan = doc["plan"]
        step = plan[attempt - 1] if attempt <= len(plan) else "ok"
        if step == "ok":
            if not self.successes[i]:
                self.order.append((doc.get("g", ""), i))  # first successes, in time order
            self.successes[i] += 1
        elif step == "retry":
            raise RetryableError("downstream busy")
        elif step == "boom":
            raise ValueError("unexpected")
        elif step == "slow":  # an HTTP-date Retry-After, the same on every delivery of this record
            sent = int(message.record["attributes"]["SentTimestamp"]) / 1000
            when = datetime.fromtimestamp(sent, UTC) + timedelta(seconds=1500)
            raise HttpError(503, "unavailable", retry_after=format_datetime(when, usegmt=True))
        elif step == "fatal":
            raise NonRetryableError("cannot ever work")
        elif step == "keyerror":
            raise KeyError("customer")
        elif step == "cancel":
            raise asyncio.CancelledError()  # a BaseException: must fail this record only
        else:
            raise Unprintable()


# A redriven message → the DLQ message it was (the redrive carries one copy on under a new id).
REDRIVEN: dict[str, str] = {}


def copy_of(message: Message) -> str:
    """Which copy a run is: its SQS message id, or for a copy carried on under other ids (it waited out
    a claims outage as a new message, or a DLQ redrive sent it again), the first id it had."""
    meta = envelope_meta(message.record.get("body", "")) or {}
    claimants = meta.get("claimants")
    mid = str(claimants[0]) if claimants else message.message_id
    for _ in range(100):  # redriven more than once: follow the ids back
        if mid not in REDRIVEN:
            break
        mid = REDRIVEN[mid]
    return mid


def make_bodies(variant: Variant, rng: random.Random) -> list[tuple[str, str | None]]:
    """(body, message group or None) per message, in send order."""
    out: list[tuple[str, str | None]] = []
    for i in range(variant.messages):
        group = f"g{rng.randrange(variant.groups)}" if variant.fifo else None
        roll = rng.random()
        if roll < 0.02:  # claims to be an envelope but is not a valid one
            out.append((json.dumps({"serverless_retry": {"v": 7, "attempt": -1}, "i": i, "g": group}), group))
            continue
        plan = [rng.choice(STEPS) for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 5]))]
        pad = "p" * rng.randint(3600, 3950) if roll > 0.97 else ""  # too large to wrap, near the limit
        out.append((json.dumps({"i": i, "g": group, "plan": plan, "pad": pad}), group))
    return out


def identify(body: str, attributes: dict[str, Any]) -> tuple[int, str]:
    """(message number, outcome) of a message found in a final place, read as inspect and redrive read
    it (every terminal form, and retry envelopes SQS moved to a DLQ)."""
    view = read_terminal(body, attributes)
    outcome = (
        view.outcome if view.outcome != "unknown" else ("copy" if view.form == "envelope" else "verbatim")
    )
    inner: Any = None
    try:
        inner = json.loads(view.body)
    except ValueError:
        inner = None
    if not isinstance(inner, dict) or "i" not in inner:  # the raw body of an invalid envelope
        inner = json.loads(body.split("\n", 1)[-1]) if view.form == "framed" else json.loads(body)
    return int(inner["i"]), outcome


@dataclass
class Report:
    variant: str
    messages: int
    invocations: int
    seconds: float
    api_calls: int
    api_faults: int
    fault_kinds: dict[str, int]
    places: dict[str, int]
    outcomes: dict[str, int]
    lost: list[int]
    two_places: dict[int, list[str]]
    duplicate_final_copies: int
    second_chains: int
    max_chains: int
    duplicates_processed: int
    expired: int
    dlq: int
    duplicates_dropped: int
    scheduler_fallbacks: int
    redelayed: int
    redriven: int
    order_violations: int
    table: bool
    two_places_one_chain: list[int]  # in two kinds of final place without a second chain to explain it

    def failures(self) -> list[str]:
        """What breaks the guarantees: any loss, always; with the table (one chain per message, a
        success remembered), any message in two final places or with a second chain. Without the table
        at-least-once delivery can place a message twice (a second chain, or a success whose deletion
        failed until the DLQ took it): counted and reported, within the bound docs/concepts.md states."""
        out = []
        if self.lost:
            out.append(f"{len(self.lost)} lost (e.g. {self.lost[:5]})")
        if self.table and self.two_places:
            sample = dict(list(self.two_places.items())[:3])
            out.append(f"{len(self.two_places)} in two final places (e.g. {sample})")
        if self.table and self.second_chains:
            out.append(f"{self.second_chains} messages with a second chain despite the idempotency table")
        if self.order_violations:
            out.append(f"{self.order_violations} FIFO order violations")
        return out

    def text(self) -> str:
        fault_share = self.api_faults / max(1, self.api_calls)
        return (
            f"fault run {self.variant}: {self.messages} messages, {self.invocations} invocations, "
            f"{self.seconds:.1f} s\n"
            f"  API calls {self.api_calls}, faulted {self.api_faults} ({fault_share:.0%}): {self.fault_kinds}\n"
            f"  final places {self.places}; exhausted by outcome {self.outcomes}\n"
            f"  lost {len(self.lost)} (expired {self.expired}), in two final places {len(self.two_places)} "
            f"({len(self.two_places_one_chain)} without a second chain), "
            f"duplicate final copies {self.duplicate_final_copies}\n"
            f"  messages with a second chain {self.second_chains} (most chains {self.max_chains}), "
            f"duplicates processed {self.duplicates_processed}, duplicate copies dropped {self.duplicates_dropped}\n"
            f"  Scheduler refusals sent as delay hops {self.scheduler_fallbacks}, early copies re-delayed "
            f"{self.redelayed}, DLQ {self.dlq} (after {self.redriven} redriven from it), "
            f"FIFO order violations {self.order_violations}"
        )


class Driver:
    """The event source mapping and the Scheduler, on the world's clock."""

    def __init__(
        self, world: World, queue: FakeQueue, consumer: RetryingConsumer, rates: Rates, rng: random.Random
    ):
        self.world = world
        self.queue = queue
        self.consumer = consumer
        self.rates = rates
        self.rng = rng
        self.invocations = 0
        self.batch_size = 10
        self.counters: Counter[str] = Counter()

    def invoke(self, records: list[dict[str, Any]]) -> None:
        self.invocations += 1
        try:
            result = self.consumer.process_batch(records)
        except Crash:
            return  # nothing deleted: every record comes back after its visibility timeout
        counts = result.counts
        self.counters["duplicates"] += counts.duplicates
        self.counters["fallback"] += counts.scheduler_fallback
        self.counters["redelayed"] += counts.redelayed
        if self.rng.random() < self.rates.lost_response:
            return
        failed = set(result.failed_ids)
        for record in records:
            if record["messageId"] not in failed and self.rng.random() >= self.rates.delete_fail:
                self.queue.delete(record["receiptHandle"])

    def redrive(self) -> None:
        """The DLQ back to the source under new message ids, as `serverless-retry redrive` sends it by
        default (queue_redrive.outgoing_message: verbatim, a retry copy naming the message it was)."""
        assert self.queue.dlq is not None
        now = self.world.clock.now()
        for msg in self.queue.dlq.take_all():
            self.counters["redriven"] += 1
            dedup = hashlib.sha256(msg.mid.encode()).hexdigest() if self.queue.fifo else None
            found = decode({"MessageId": msg.mid, "Body": msg.body, "MessageAttributes": msg.attributes})
            out = outgoing_message(found, reset_attempts=False, now=now, max_bytes=MAX_BYTES)
            sent = self.queue.send(out.body, attributes=out.attributes, group=msg.group, dedup=dedup)
            REDRIVEN[sent] = msg.mid

    def run(self, *, max_iterations: int, budget_seconds: float, redrive_at: float | None = None) -> None:
        started = time.monotonic()
        clock = self.world.clock
        start = clock.now()
        for _ in range(max_iterations):
            if time.monotonic() - started > budget_seconds:
                raise AssertionError(f"fault run over its {budget_seconds} s budget")
            if redrive_at is not None and (clock.now() - start).total_seconds() >= redrive_at:
                self.redrive()
                redrive_at = None
            self.world.scheduler.fire_due()
            records = self.queue.receive(self.batch_size)
            if records:
                self.invoke(records)
                continue
            redrive_ms = None if redrive_at is None else int((start.timestamp() + redrive_at) * 1000)
            moments = [
                t
                for t in (self.queue.next_event_ms(), self.world.scheduler.next_event_ms(), redrive_ms)
                if t is not None
            ]
            if not moments:
                return
            clock.current = max(
                datetime.fromtimestamp(min(moments) / 1000, UTC), clock.current + timedelta(seconds=1)
            )
        raise AssertionError(f"not settled after {max_iterations} iterations")


def run(variant: Variant, *, seed: int = 20261130, budget_seconds: float = 120.0) -> Report:
    started = time.monotonic()
    REDRIVEN.clear()
    rng = random.Random(seed)
    clock = FrozenClock()
    world = World(clock, random.Random(seed + 1))
    suffix = ".fifo" if variant.fifo else ""
    visibility_timeout = 180
    dlq = world.queue(f"fr-dlq{suffix}", content_based_dedup=variant.fifo)
    queue = world.queue(
        f"fr{suffix}",
        visibility_timeout=visibility_timeout,
        dlq=dlq,
        max_receive_count=variant.max_receive_count,
        content_based_dedup=variant.fifo,
    )
    queue.duplicate_rate = variant.rates.duplicate_delivery
    exhausted = world.queue(f"fr-exhausted{suffix}", content_based_dedup=variant.fifo)
    schedule_dlq = world.queue("fr-schedule-dlq")
    counts = Counts()
    fault_rng = random.Random(seed + 2)

    def faulty(client: Any) -> Any:
        return Faulty(client, world, variant.rates, fault_rng, counts, start=clock.now())

    clients = AwsClients.of(
        sqs=faulty(world.sqs), scheduler=faulty(world.scheduler), dynamodb=faulty(world.dynamodb)
    )
    targets = QueueTargets(
        queue_url=queue.url,
        queue_arn=queue.arn,
        exhausted_queue_url=exhausted.url,
        dlq_arn=schedule_dlq.arn,
        schedule_group="fr-retries",
        scheduler_role_arn=ROLE_ARN,
        max_message_bytes=MAX_BYTES,
        fifo_order=variant.fifo_order,  # type: ignore[arg-type]
        visibility_timeout_seconds=visibility_timeout,
    )
    processor = Processor(idempotent=variant.idempotent)
    logger = Logger(service="fault-run", level="CRITICAL", logger_handler=logging.NullHandler())
    metrics = ConsumerMetrics()
    metrics.disabled = True
    claims = DynamoDBClaims(lambda: clients.dynamodb, "claims") if variant.table else None
    consumer = RetryingConsumer(
        processor,
        RetryPolicy.from_dict({**POLICY, "transport": variant.transport}),
        targets,
        clients=clients,
        clock=clock,
        rand=random.Random(seed),
        logger=logger,
        metrics=metrics,
        claims=claims,
    )
    for body, group in make_bodies(variant, rng):
        queue.send(body, group=group)  # producers' sends are not under test: no faults
    driver = Driver(world, queue, consumer, variant.rates, random.Random(seed + 3))
    driver.batch_size = variant.batch_size
    driver.run(max_iterations=2_000_000, budget_seconds=budget_seconds, redrive_at=variant.redrive_at)
    assert not queue.messages, "the run did not settle: messages left in the queue"
    assert not world.scheduler.schedules, "the run did not settle: schedules left"

    places: dict[int, list[str]] = defaultdict(list)
    for i, n in processor.successes.items():
        places[i] += ["processed"] * n
    outcomes: Counter[str] = Counter()
    for msg in exhausted.bodies():
        i, outcome = identify(msg.body, msg.attributes)
        outcomes[outcome] += 1
        places[i].append("exhausted")
    for msg in dlq.bodies():
        places[i := identify(msg.body, msg.attributes)[0]].append("dlq")
    expired = [identify(m.body, m.attributes)[0] for m in queue.expired]
    lost = sorted(i for i in range(variant.messages) if not places.get(i))
    two = {i: p for i, p in places.items() if len(set(p)) > 1}
    copies = sum(len(p) - len(set(p)) for p in places.values())
    chains: dict[int, int] = defaultdict(int)
    duplicates = 0
    for (i, _attempt), mids in processor.runs.items():
        chains[i] = max(chains[i], len(set(mids)))
        duplicates += len(mids) - 1
    violations = 0
    if variant.fifo and variant.fifo_order == "ordered":
        last: dict[str, int] = {}
        for group, i in processor.order:
            violations += i < last.get(group, -1)
            last[group] = max(i, last.get(group, -1))
    place_counts = Counter(p for ps in places.values() for p in ps)
    return Report(
        variant=variant.name,
        messages=variant.messages,
        invocations=driver.invocations,
        seconds=time.monotonic() - started,
        api_calls=counts.calls,
        api_faults=counts.faulted,
        fault_kinds=dict(counts.by_kind),
        places=dict(place_counts),
        outcomes=dict(outcomes),
        lost=lost,
        two_places=two,
        duplicate_final_copies=copies,
        second_chains=sum(1 for n in chains.values() if n > 1),
        max_chains=max(chains.values(), default=0),
        duplicates_processed=duplicates,
        expired=len(expired),
        dlq=place_counts.get("dlq", 0),
        duplicates_dropped=driver.counters["duplicates"],
        scheduler_fallbacks=driver.counters["fallback"],
        redelayed=driver.counters["redelayed"],
        redriven=driver.counters["redriven"],
        order_violations=violations,
        table=variant.table,
        two_places_one_chain=sorted(i for i in two if chains.get(i, 0) <= 1),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variant", choices=sorted(VARIANTS), action="append")
    parser.add_argument("--messages", type=int)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args(argv)
    failed = False
    for name in args.variant or sorted(VARIANTS):
        variant = VARIANTS[name]
        if args.messages:
            variant = Variant(**{**variant.__dict__, "messages": args.messages})
        report = run(variant, seed=args.seed)
        print(report.text())
        for problem in report.failures():
            print(f"  FAIL: {problem}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

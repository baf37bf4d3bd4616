"""An exhaustive (stateless) model check of the claims protocol: the REAL consumer
(``RetryingConsumer`` with ``DynamoDBClaims``) against the in-memory AWS world of ``fakeaws``,
driven through every interleaving of the events of docs/claims-protocol.md for small configurations.

    .venv/bin/python -m tests.support.protocol_check [--messages 2 --attempts 3 --faults 2]
        [--scenario NAME ...] [--budget SECONDS]

Configuration. The module defaults: a standard source queue with visibility timeout 180 s, retention
4 days and maxReceiveCount 5 into a DLQ that keeps 14 days (as does the retry-exhausted queue), the
claims table on, batch size up to 10, and the policy's defaults (exponential backoff from 10 s, no
jitter, transport ``auto``, Retry-After honoured) - but ``max_attempts`` is 3 (the default 5 makes
every chain two attempts longer, which multiplies the interleavings without a new kind of event; the
hypothesis test in tests/functional/test_claims_protocol_stateful.py runs the default 5). Message 0
fails every attempt (plain ``RetryableError``: SQS-delayed copies of 10 and 20 s, exhausted at attempt
3, processed at attempt 4 after a redrive of the retry-exhausted queue); message 1 fails its first
attempt with Retry-After 1200 s, which the default policy sends through the Scheduler, and then
succeeds. More messages alternate the two plans.

Events (choice points of the search). Between invocations: delivery of any visible message, alone or
in one batch with others (the event source mapping); redelivery after a visibility timeout and delays
ending (time moves to the next event when nothing is visible, or - once per path, ``defer`` - while
something is, as a throttled mapping polls late); a schedule firing when due. Faults (at most
``faults`` per path): an invocation crashing before or after any AWS call the consumer makes
(SendMessageBatch, CreateSchedule / GetSchedule, ChangeMessageVisibilityBatch, the claim's and the
marks' UpdateItem) or the mapping's delete of a record failing (``crash``); a call that took effect
while the client sees a read timeout (``ambiguous``); a duplicate delivery of a message in flight,
between invocations or concurrently with an invocation at any of its calls, by a second Lambda
instance (``duplicate``); a schedule firing twice (``fire-twice``); every further receive of a message
dying until SQS moves it to the DLQ (``poison``); an invocation on an instance whose clock is 300 s
ahead or behind (``skew``); a forged message (``forge``): a producer allowed to send but not to
receive sends a valid, unsigned envelope naming a real chain's id at attempt 2 or ``max_attempts``,
with no claimants or naming the chain's current claim owner (the worst case: it knows every id).
Operator events (at most ``operations`` per path): SQS's redrive of the DLQ back to the source
(message ids kept, enqueued afresh) and the project's redrive of the retry-exhausted queue
(``queue_redrive.decode`` + ``outgoing_message``, no reset), each now or late (``late``: just before
the queue's 14-day retention ends, when the source is idle; DynamoDB's TTL first deletes every claim
item past its ``expiration``).

Search. Depth-first over choice sequences with replay from scratch: an oracle replays a prefix of
choices, records each choice point it meets (its number of options), and the next path increments the
last choice that has options left. Message ids and receipt handles follow from the message's body
(not from a global counter), so equivalent histories reach equal worlds; the world is hashed between
invocations (every queue's messages with their timers and receive counts, the claims items, the
schedules, every processor run and final judgment, the fault budgets, the clock) and a state reached
again at the same or a greater depth is pruned. Deliveries of messages of different chains commute
(disjoint claims, messages and schedules), so of those only one order is explored, besides the batch
that holds them all - unless a deferral is left, as time passing in between does not commute. Every
complete path ends with logical time run out (option 0 everywhere: deliver everything, then
advance), then with what operators do with what is left, without faults: the DLQ redriven by SQS,
and any final copy left behind in the retry-exhausted queue by a redrive of its twin (the final copy
of the same attempt, sent twice: see (a)) redriven too. Then it is checked:

(a) every input message (each real one, each forged one) ends in exactly one kind of final place:
    processed, the retry-exhausted queue, the DLQ; none lost, none in two. Allowed: two final copies
    of the same attempt in the retry-exhausted queue (a send whose answer was lost is made again, as
    is a final step run again by its own unacknowledged redelivery: at least once); and when an
    operator redrove one of such twins, the other left behind - provided its own redrive at the end
    is dropped as a duplicate (it is checked: a run of it fails the path). A DLQ copy whose attempt
    finished elsewhere (its receives died after its work was done) is likewise dropped when the DLQ
    is redriven at the end, and one whose attempt never finished runs then;
(b) no attempt of a real message runs in two copies, except the at-least-once cases: two runs of the
    same attempt are allowed only when the later one is the same SQS message received again (a crash
    or lost answer after the processor ran, a failed delete, a duplicate delivery, SQS's DLQ redrive,
    which keeps the id) or carries it on (it names that message in ``claimants``: a copy that came
    back early by a skewed clock and hopped, taking its own unfinished claim). Any other pair - two
    SQS messages of one attempt both running - is a second chain;
(c) a forged message never suppresses (the real message is then in no final place by its own runs),
    takes over (a run of the forged copy under the real chain's id) or exhausts early (a real message
    sent to the retry-exhausted queue other than at its plan's last attempt) a real chain;
(d) no copy the consumer made of a real message is judged invalid-envelope;
(e) each real message ends where its plan says (message 0 exhausted at ``max_attempts``, or processed
    after a redrive of the retry-exhausted queue; message 1 processed), is sent to the retry-exhausted
    queue only at its plan's last attempt, and the world settles (nothing left in the source or the
    Scheduler within 400 steps).

Scenarios restrict the events to one class of interaction (the defect classes of issue #28), so that
each is searched completely within the suite's time; ``all`` allows everything (use a budget).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import import_module
from types import ModuleType
from typing import Any

# An older package (run by hand, to show what the check finds there) keeps its claims module at the
# top: serverless_retry.claims until the consumer became a sub-package.
try:
    claims_module: ModuleType = import_module("serverless_retry.consumer.claims")
except ImportError:
    claims_module = import_module("serverless_retry.claims")
DynamoDBClaims = claims_module.DynamoDBClaims

# The consumer's whole condition in Python (``claims.claim_holds``) is what fakeaws evaluates; an
# older package (e.g. 45e79c8, to show what the check finds there) has none: its condition here.
_STALE = 7_200


def _legacy_claim_holds(
    held: Mapping[str, Any] | None,
    *,
    attempt: int,
    owner: str,
    generation: int,
    now: int,
    predecessors: Sequence[str] = (),
) -> bool:
    def s(name: str) -> str | None:
        return held[name]["S"] if held is not None and name in held else None

    def n(name: str) -> int | None:
        return int(held[name]["N"]) if held is not None and name in held else None

    held_attempt, state = n("attempt"), s("state")
    if state is None:
        return True
    if held_attempt is None:
        return False
    if held_attempt < attempt:
        return state != "ended"
    if held_attempt != attempt or state != "taken":
        return False
    if s("owner") == owner or s("owner") in predecessors:
        return True
    lease, receives = n("lease"), n("receives")
    return lease is not None and lease < now - _STALE and receives is not None and receives > 1


if not hasattr(claims_module, "claim_holds"):
    setattr(claims_module, "claim_holds", _legacy_claim_holds)  # noqa: B010 (a module without it)

from aws_lambda_powertools import Logger  # noqa: E402
from botocore.exceptions import ReadTimeoutError  # noqa: E402
from serverless_retry.aws import AwsClients  # noqa: E402
from serverless_retry.clock import FrozenClock  # noqa: E402
from serverless_retry.config import QueueTargets  # noqa: E402
from serverless_retry.consumer import RetryingConsumer  # noqa: E402
from serverless_retry.envelope import format_time  # noqa: E402
from serverless_retry.errors import RetryableError  # noqa: E402
from serverless_retry.message import Message  # noqa: E402
from serverless_retry.observability import ConsumerMetrics  # noqa: E402
from serverless_retry.policy import RetryPolicy  # noqa: E402
from serverless_retry.queue_redrive import decode, outgoing_message  # noqa: E402 (0.2's path: older packages have it too)
from serverless_retry.terminal import read_terminal  # noqa: E402

from .fakeaws import FakeQueue, Msg, World, envelope_meta  # noqa: E402
from .faultrun import ROLE_ARN, Crash, identify  # noqa: E402

VISIBILITY = 180  # modules/queue visibility_timeout_seconds (6 x the 30 s function timeout)
RETENTION = 345_600  # message_retention_seconds
DLQ_RETENTION = 1_209_600  # the DLQ's and the retry-exhausted queue's (14 days)
MAX_RECEIVES = 5  # max_receive_count
MAX_BYTES = 262_144
SKEW_SECONDS = 300
RETRY_AFTER_SECONDS = 1_200  # > 900: the default policy's transport "auto" takes the Scheduler
FORGED_BASE = 100  # forged messages are numbered from here
KEY = b"protocol-check-signing-key-32byt"
MAX_STEPS = 400

FAULTS = ("crash", "ambiguous", "duplicate", "fire-twice", "poison", "skew", "forge")
OPERATIONS = ("dlq-redrive", "exhausted-redrive", "late")
EVENTS = frozenset((*FAULTS, *OPERATIONS, "defer"))

# The defect classes of issue #28, each the events that make it. ``all``: everything.
SCENARIOS: dict[str, frozenset[str]] = {
    "exhausted-redrive": frozenset({"crash", "ambiguous", "exhausted-redrive"}),
    "waiting-copy-due": frozenset({"fire-twice", "crash", "defer"}),
    "forged-envelope": frozenset({"forge", "crash"}),
    "claims-ttl": frozenset({"crash", "poison", "dlq-redrive", "exhausted-redrive", "late"}),
    "early-rehop": frozenset({"crash", "skew"}),
    "dlq-redrive": frozenset({"crash", "poison", "dlq-redrive"}),
    "crash-after-send": frozenset({"crash"}),
    "ambiguous-call": frozenset({"ambiguous", "crash"}),
    "duplicate-delivery": frozenset({"duplicate", "crash"}),
    "schedule-fired-twice": frozenset({"fire-twice", "duplicate", "defer"}),
    "all": EVENTS,
}


@dataclass(frozen=True)
class Config:
    messages: int = 2
    attempts: int = 3  # the policy's max_attempts (default 5; see the module docstring)
    faults: int = 2
    operations: int = 1
    deferrals: int = 1
    max_depth: int = 40  # choice points per path; beyond it every choice is option 0
    events: frozenset[str] = EVENTS


class Pruned(Exception):
    """This path reached a state already explored at the same or a smaller depth."""


# -- the world ----------------------------------------------------------------------------------------
class Queue(FakeQueue):
    """A standard FakeQueue whose message ids and receipt handles follow from the message (its body,
    the how-many-th send of that body, its receives), so that equivalent histories give equal worlds;
    no random duplicates (duplicate deliveries are the search's choice); delivery of chosen messages."""

    def __init__(self, world: World, name: str, **kwargs: Any) -> None:
        super().__init__(world, name, **kwargs)
        self._sends: Counter[str] = Counter()
        self._moves: Counter[str] = Counter()
        world.by_url[self.url] = self
        world.by_arn[self.arn] = self

    def send(
        self,
        body: str,
        *,
        delay: int = 0,
        attributes: dict[str, Any] | None = None,
        group: str | None = None,
        dedup: str | None = None,
        message_id: str | None = None,
    ) -> str:
        # Ids from the body, so that equivalent histories reach equal worlds; the rest is SQS's send.
        digest = hashlib.blake2b(f"{delay}\0{body}".encode(), digest_size=4).hexdigest()
        self._sends[digest] += 1
        mid = message_id or f"{self.name[:2]}-{digest}-{self._sends[digest]}"
        return super().send(
            body, delay=delay, attributes=attributes, group=group, dedup=dedup, message_id=mid
        )

    def _deliver(self, msg: Msg, now: int, out: list[dict[str, Any]]) -> None:
        if self.dlq is not None and msg.receive_count >= self.max_receive_count:
            self._drop(msg)  # SQS moves it instead of returning it
            self.dlq.adopt(msg)
            return
        msg.receive_count += 1
        if msg.first_receive_ms is None:
            msg.first_receive_ms = now
        receipt = f"{msg.mid}#{self._moves[msg.mid]}.{msg.receive_count}"
        msg.receipts.add(receipt)
        self._receipts[receipt] = msg.mid
        msg.available_ms = now + self.visibility_timeout * 1000
        msg.in_flight = True
        out.append(self.record(msg, receipt))

    def deliver(self, mids: Iterable[str]) -> list[dict[str, Any]]:
        """The records of one ReceiveMessage that returned these messages (visible or not: a duplicate
        delivery returns one in flight)."""
        now = self.world.now_ms()
        out: list[dict[str, Any]] = []
        for mid in mids:
            msg = self.messages.get(mid)
            if msg is not None and not self._expire(msg, now):
                self._deliver(msg, now, out)
        return out

    def enqueue_again(self, msg: Msg) -> None:
        """SQS's redrive of a DLQ message back here: the same message id, enqueued afresh."""
        now = self.world.now_ms()
        self._moves[msg.mid] += 1
        self.messages[msg.mid] = Msg(
            msg.mid, msg.body, msg.attributes, next(self.world.seq), now, now, msg.group
        )

    def visible(self) -> list[str]:
        now = self.world.now_ms()
        return sorted(m.mid for m in self.messages.values() if m.available_ms <= now)

    def in_flight(self) -> list[str]:
        now = self.world.now_ms()
        return sorted(m.mid for m in self.messages.values() if m.available_ms > now and m.receive_count)

    def next_ms(self) -> int | None:
        now = self.world.now_ms()
        later = [m.available_ms for m in self.messages.values() if m.available_ms > now]
        return min(later) if later else None

    def snapshot(self, now: int) -> list[tuple[Any, ...]]:
        return sorted(
            (
                m.mid,
                m.body,
                json.dumps(m.attributes, sort_keys=True),
                m.sent_ms - now,
                max(0, m.available_ms - now),
                m.receive_count,
                None if m.first_receive_ms is None else m.first_receive_ms - now,
            )
            for m in self.messages.values()
        )


class InstanceClock:
    """One Lambda instance's clock: the world's, off by ``offset`` seconds (skew)."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.offset = 0

    def now(self) -> datetime:
        return self.rig.path.world.clock.now() + timedelta(seconds=self.offset)


class Client:
    """A fake AWS client as the consumer holds it: every call goes through the path's choice point."""

    def __init__(self, rig: Rig, service: str) -> None:
        self._rig = rig
        self._service = service

    def __getattr__(self, method: str) -> Callable[..., Any]:
        def call(**params: Any) -> Any:
            return self._rig.path.call(self._service, method, params)

        return call


class Rig:
    """The consumers (one per Lambda instance: a top-level one and one for a concurrent invocation)
    and their clients, made once per search; each path rebinds ``path``."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.path: Path = None  # type: ignore[assignment]  # set by each Path
        fake: Any = Client  # duck-typed like boto3's clients
        clients = AwsClients.of(
            sqs=fake(self, "sqs"), scheduler=fake(self, "scheduler"), dynamodb=fake(self, "dynamodb")
        )
        names = World(FrozenClock(), random.Random(0))
        source = Queue(names, "pc-source")
        targets = QueueTargets(
            queue_url=source.url,
            queue_arn=source.arn,
            exhausted_queue_url=Queue(names, "pc-exhausted").url,
            dlq_arn=Queue(names, "pc-schedule-dlq").arn,
            schedule_group="pc-retries",
            scheduler_role_arn=ROLE_ARN,
            max_message_bytes=MAX_BYTES,
            visibility_timeout_seconds=VISIBILITY,
            retention_seconds=RETENTION,
        )
        self.source_arn = source.arn
        policy = RetryPolicy.from_dict({"max_attempts": config.attempts})
        self.clocks = [InstanceClock(self), InstanceClock(self)]
        self.consumers = []
        for clock in self.clocks:
            logger = Logger(service="protocol-check", level="CRITICAL", logger_handler=logging.NullHandler())
            metrics = ConsumerMetrics()
            metrics.disabled = True
            store = DynamoDBClaims(lambda: clients.dynamodb, "claims", retention_seconds=RETENTION)
            self.consumers.append(
                RetryingConsumer(
                    self.process,
                    policy,
                    targets,
                    clients=clients,
                    clock=clock,
                    logger=logger,
                    metrics=metrics,
                    claims=store,
                )
            )

    def process(self, message: Message) -> None:
        self.path.process(message)


# -- one path -------------------------------------------------------------------------------------------
@dataclass
class Run:
    """One processor run: which input (``i``), which attempt of which chain, in which SQS message, and
    the SQS messages that message carries on (its claimants)."""

    i: int
    attempt: int
    generation: int
    retry_id: str
    mid: str
    lineage: tuple[str, ...]


Oracle = Callable[[Sequence[str]], int]


class Path:
    """One interleaving: a fresh world, the events chosen by ``oracle`` (labels in, index out)."""

    def __init__(self, rig: Rig, oracle: Oracle, *, seen: dict[bytes, int] | None = None, fresh: int = 0):
        self.rig = rig
        self.config = config = rig.config
        self.oracle = oracle
        self.seen = seen  # the DFS's state cache (None: no pruning)
        self.fresh = fresh  # choice points of the replayed prefix: states before them are not new
        self.depth = 0
        self.log: list[str] = []
        self.faults = config.faults
        self.operations = config.operations
        self.deferrals = config.deferrals
        self.nesting = 0
        self.steps = 0
        self.runs: list[Run] = []
        self.successes: Counter[int] = Counter()
        self.judged: list[tuple[int, str, int]] = []  # (i, outcome, attempt) of every final copy sent
        self.poisoned = False
        self.redriven_exhausted = False
        self.forged = 0
        self.doomed: set[str] = set()
        self.redriven_finals: list[tuple[int, int]] = []  # (i, attempt) of each final copy redriven
        self.leftover_runs = 0  # runs of final copies left behind, redriven at the end (must be none)
        self.settling = False
        self.invocation: list[dict[str, Any]] = []  # the records of the invocation in progress
        rig.path = self
        self.world = world = World(FrozenClock(), random.Random(0))
        self.dlq = Queue(world, "pc-dlq", retention_seconds=DLQ_RETENTION)
        self.source = Queue(
            world,
            "pc-source",
            visibility_timeout=VISIBILITY,
            retention_seconds=RETENTION,
            dlq=self.dlq,
            max_receive_count=MAX_RECEIVES,
        )
        self.exhausted = Queue(world, "pc-exhausted", retention_seconds=DLQ_RETENTION)
        self.schedule_dlq = Queue(world, "pc-schedule-dlq")
        key_item = getattr(claims_module, "KEY_ITEM", None)
        if key_item is not None:  # the signing key, as the first consumer would have made it
            world.dynamodb.items[key_item] = {"id": {"S": key_item}, "key": {"B": KEY}}
        self.real: list[str] = []
        for i in range(config.messages):
            plan = ["retry"] * config.attempts if i % 2 == 0 else ["slow"]
            self.real.append(self.source.send(json.dumps({"i": i, "plan": plan})))
        self.start_ms = world.now_ms()

    # -- choices --------------------------------------------------------------------------------------
    def choose(self, labels: Sequence[str]) -> int:
        if len(labels) == 1:
            return 0
        if self.settling or self.depth >= self.config.max_depth:
            return 0
        self.depth += 1
        return self.oracle(labels)

    def note(self, text: str) -> None:
        seconds = (self.world.now_ms() - self.start_ms) / 1000
        self.log.append(f"t+{seconds:g}s {text}")

    def call(self, service: str, method: str, params: dict[str, Any]) -> Any:
        real = getattr(getattr(self.world, service), method)
        key = params.get("Key", {}).get("id", {}).get("S", "")
        labels = ["ok"]
        if self.faults and not key.startswith("serverless-retry-key"):  # (the key is read once)
            events = self.config.events
            if "crash" in events:
                labels += ["crash-before", "crash-after"]
            if "ambiguous" in events:
                labels += ["timeout-after"]
            if "duplicate" in events and self.nesting == 0:
                mids = {r["messageId"] for r in self.invocation} | set(self.source.visible())
                labels += [f"concurrent:{m}" for m in sorted(mids) if m in self.source.messages]
        choice = labels[self.choose([f"{method} {c}" for c in labels])]
        if choice != "ok":
            self.faults -= 1
            self.note(f"{method}: {choice}")
        if choice == "crash-before":
            raise Crash(method)
        if choice.startswith("concurrent:"):
            self.concurrent(choice.split(":", 1)[1])
        response = real(**params)
        if service == "sqs" and method == "send_message_batch" and params["QueueUrl"] == self.exhausted.url:
            for entry in params["Entries"]:
                self.judge(entry)
        if choice == "crash-after":
            raise Crash(method)
        if choice == "timeout-after":
            raise ReadTimeoutError(endpoint_url=f"https://{service}.invalid")
        return response

    def judge(self, entry: Mapping[str, Any]) -> None:
        attributes = entry.get("MessageAttributes") or {}
        i, outcome = identify(entry["MessageBody"], attributes)
        view = read_terminal(entry["MessageBody"], attributes)
        self.judged.append((i, outcome, view.attempt))

    def concurrent(self, mid: str) -> None:
        """Another instance receives ``mid`` now, while this invocation is at one of its calls."""
        self.note(f"  another instance receives {mid}")
        records = self.source.deliver([mid])
        held, self.invocation = self.invocation, []
        self.nesting += 1
        try:
            self.invoke(records, instance=1)
        finally:
            self.nesting -= 1
            self.invocation = held

    def process(self, message: Message) -> None:
        doc = message.json()
        i = int(doc["i"])
        attempt = message.retry.attempt
        meta = envelope_meta(message.record.get("body", "")) or {}
        claimants = meta.get("claimants") or []
        self.runs.append(
            Run(
                i,
                attempt,
                int(getattr(message.retry, "generation", 0)),
                message.retry.id,
                message.message_id,
                (*(str(c) for c in claimants), message.message_id),
            )
        )
        plan = doc.get("plan", [])
        step = plan[attempt - 1] if attempt <= len(plan) else "ok"
        if step == "ok":
            self.successes[i] += 1
        elif step == "slow":
            raise RetryableError("throttled", retry_after=RETRY_AFTER_SECONDS)
        else:
            raise RetryableError("downstream busy")

    # -- invocations ------------------------------------------------------------------------------------
    def invoke(self, records: list[dict[str, Any]], *, instance: int = 0, skew: int = 0) -> None:
        if not records:
            return
        clock = self.rig.clocks[instance]
        clock.offset = skew
        self.invocation = records
        try:
            result = self.rig.consumers[instance].process_batch(records)
        except Crash:
            return  # nothing deleted: every record comes back after its visibility timeout
        finally:
            clock.offset = 0
        failed = set(result.failed_ids)
        for record in records:
            if record["messageId"] in failed:
                continue
            labels = ["ok"]
            if self.faults and "crash" in self.config.events:
                labels.append("lost")
            if labels[self.choose([f"delete {x}" for x in labels])] == "lost":
                self.faults -= 1
                self.note(f"delete of {record['messageId']} lost")
                continue
            self.source.delete(record["receiptHandle"])

    # -- between invocations --------------------------------------------------------------------------
    def fire_due(self) -> None:
        now = self.world.now_ms()
        schedules = self.world.scheduler.schedules
        for name in sorted(n for n, s in schedules.items() if s.due_ms <= now):
            schedule = schedules.pop(name)
            times = 1
            twice = bool(self.faults) and "fire-twice" in self.config.events
            if twice and self.choose([f"fire {name}", f"fire {name} twice"]) == 1:
                self.faults -= 1
                times = 2
                self.note(f"schedule {name} fires twice")
            for _ in range(times):
                self.world.by_arn[schedule.target["Arn"]].send(schedule.target["Input"])

    def run_doomed(self) -> None:
        """A poisoned message's receives die at once, until SQS moves it to the DLQ."""
        for mid in [m for m in self.source.visible() if m in self.doomed]:
            self.source.deliver([mid])
            if mid not in self.source.messages:
                self.doomed.discard(mid)

    def next_event_ms(self) -> int | None:
        moments = [self.source.next_ms()]
        moments += [s.due_ms for s in self.world.scheduler.schedules.values()]
        present = [m for m in moments if m is not None]
        return min(present) if present else None

    def advance(self) -> None:
        moment = self.next_event_ms()
        assert moment is not None
        self.world.clock.current = datetime.fromtimestamp(moment / 1000, UTC)

    def idle(self) -> bool:
        return not self.source.messages and not self.world.scheduler.schedules

    def options(self) -> list[tuple[str, ...]]:
        events = self.config.events
        visible = [m for m in self.source.visible() if m not in self.doomed]
        out: list[tuple[str, ...]] = []
        if visible:
            out.append(("deliver", *visible[:10]))
            defer = bool(self.deferrals and "defer" in events and self.next_event_ms() is not None)
            if len(visible) > 1:
                # Messages of different chains commute (disjoint claims, messages and schedules): one
                # order of them is enough - unless time may pass in between (a deferral), which does not.
                chains = Counter(self.chain_of(m) for m in visible)
                out += [
                    ("deliver", m)
                    for k, m in enumerate(visible)
                    if k == 0 or defer or chains[self.chain_of(m)] > 1
                ]
            if len(visible) > 2:
                out += [("deliver", a, b) for k, a in enumerate(visible) for b in visible[k + 1 :]]
            if defer:
                out.append(("defer",))
        elif self.next_event_ms() is not None:
            out.append(("advance",))
        else:
            out.append(("end",))
        if self.faults and self.nesting == 0:
            if "duplicate" in events:
                out += [("duplicate", m) for m in self.source.in_flight() if m not in self.doomed]
            if "poison" in events:
                out += [("poison", m) for m in sorted(self.source.messages) if m not in self.doomed]
            if "skew" in events:
                out += [("skew", m, str(s)) for m in visible for s in (SKEW_SECONDS, -SKEW_SECONDS)]
            if "forge" in events and not self.forged:
                out += self.forgeries()
        if self.operations:
            late = "late" in events and self.idle()
            for kind, queue in (("dlq-redrive", self.dlq), ("exhausted-redrive", self.exhausted)):
                if kind in events and queue.messages:
                    out.append((kind, "now"))
                    if late:
                        out.append((kind, "late"))
        return out

    def chain_of(self, mid: str) -> str:
        """The chain a message names: its envelope's id (a forged one names a real chain), or itself."""
        meta = envelope_meta(self.source.messages[mid].body) or {}
        named = meta.get("id")
        return named if isinstance(named, str) else mid

    def forgeries(self) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        items = self.world.dynamodb.items
        for chain in self.real:
            owner = items.get(f"{claims_module.CLAIM_PREFIX}{chain}", {}).get("owner", {}).get("S")
            for attempt in sorted({2, self.config.attempts}):
                out.append(("forge", chain, str(attempt), ""))
                if owner:
                    out.append(("forge", chain, str(attempt), owner))
        return out

    def step(self) -> bool:
        """One event between invocations; False once the path has ended."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise AssertionError("the world did not settle")
        self.fire_due()
        self.run_doomed()
        if self.seen is not None and self.depth >= self.fresh:
            key = self.state_key()
            known = self.seen.get(key)
            if known is not None and known <= self.depth:
                raise Pruned
            self.seen[key] = self.depth
        options = self.options()
        action = options[self.choose([" ".join(o) for o in options])]
        kind = action[0]
        if kind == "end":
            return False
        if kind in ("deliver", "skew"):
            skew = int(action[2]) if kind == "skew" else 0
            mids = action[1:2] if kind == "skew" else action[1:]
            if kind == "skew":
                self.faults -= 1
            self.note(f"deliver {', '.join(mids)}" + (f" on an instance {skew:+d} s off" if skew else ""))
            self.invoke(self.source.deliver(mids), skew=skew)
        elif kind == "advance":
            self.advance()
        elif kind == "defer":
            self.deferrals -= 1
            self.note("the mapping polls late")
            self.advance()
        elif kind == "duplicate":
            self.faults -= 1
            self.note(f"duplicate delivery of {action[1]}")
            self.invoke(self.source.deliver(action[1:]))
        elif kind == "poison":
            self.faults -= 1
            self.poisoned = True
            self.doomed.add(action[1])
            self.note(f"every receive of {action[1]} dies from now on")
        elif kind == "forge":
            self.faults -= 1
            self.forge(action[1], int(action[2]), action[3])
        else:
            self.operations -= 1
            self.redrive(kind, late=action[1] == "late")
        return True

    def forge(self, chain: str, attempt: int, claimant: str) -> None:
        now = format_time(self.world.clock.now())
        meta: dict[str, Any] = {
            "v": 1,
            "id": chain,
            "attempt": attempt,
            "first_failed_at": now,
            "source": self.source.arn,
            "history": [],
            "due_at": now,
        }
        if claimant:
            meta["claimants"] = [claimant]
        i = FORGED_BASE + self.forged
        self.forged += 1
        body = json.dumps(
            {"serverless_retry": meta, "body": json.dumps({"i": i, "plan": []}), "attributes": {}}
        )
        mid = self.source.send(body)
        self.note(
            f"forged {mid}: chain {chain}, attempt {attempt}, claimants {[claimant] if claimant else []}"
        )

    def redrive(self, kind: str, *, late: bool, only: Sequence[Msg] | None = None) -> None:
        queue = self.dlq if kind == "dlq-redrive" else self.exhausted
        if late:  # just before the oldest message's retention ends; DynamoDB's TTL has run
            oldest = min(m.sent_ms for m in queue.messages.values())
            moment = oldest + (DLQ_RETENTION - 3600) * 1000
            self.world.clock.current = datetime.fromtimestamp(moment / 1000, UTC)
            items = self.world.dynamodb.items
            for key in [
                k
                for k, v in items.items()
                if "expiration" in v and int(v["expiration"]["N"]) * 1000 <= moment
            ]:
                del items[key]
                self.note(f"TTL deletes {key}")
        self.note(f"{kind}{' (late)' if late else ''} of {len(queue.messages)} message(s)")
        if kind == "dlq-redrive":
            for msg in queue.take_all():
                self.source.enqueue_again(msg)
            return
        self.redriven_exhausted = True
        now = self.world.clock.now()
        taken = queue.take_all() if only is None else [queue.messages.pop(m.mid) for m in only]
        for msg in taken:
            self.redriven_finals.append(
                (identify(msg.body, msg.attributes)[0], read_terminal(msg.body, msg.attributes).attempt)
            )
            found = decode({"MessageId": msg.mid, "Body": msg.body, "MessageAttributes": msg.attributes})
            out = outgoing_message(found, reset_attempts=False, now=now, max_bytes=MAX_BYTES)
            self.source.send(out.body, attributes=out.attributes)

    def state_key(self) -> bytes:
        now = self.world.now_ms()
        world = self.world
        parts = (
            now,
            self.faults,
            self.operations,
            self.deferrals,
            self.forged,
            self.poisoned,
            self.redriven_exhausted,
            sorted(self.doomed),
            sorted(self.redriven_finals),
            [q.snapshot(now) for q in (self.source, self.dlq, self.exhausted, self.schedule_dlq)],
            sorted(json.dumps(v, sort_keys=True, default=repr) for v in world.dynamodb.items.values()),
            sorted((s.name, s.due_ms, s.target["Input"]) for s in world.scheduler.schedules.values()),
            sorted((r.i, r.attempt, r.generation, r.retry_id, r.mid, r.lineage) for r in self.runs),
            sorted(self.successes.items()),
            sorted(self.judged),
            len(self.source.expired),
        )
        return hashlib.blake2b(repr(parts).encode(), digest_size=16).digest()

    def run(self) -> None:
        while self.step():
            pass
        self.finish()

    def finish(self) -> None:
        """Logical time run out, then what operators do with what is left, without faults: the DLQ
        redriven by SQS (a copy there whose attempt finished elsewhere must be dropped as a duplicate,
        one that never finished must run), and the final copies left behind in the retry-exhausted
        queue by a redrive of their duplicates (a copy of an attempt whose twin was redriven already:
        a redrive of it must be dropped too)."""
        self.faults = self.operations = self.deferrals = 0
        self.settling = True
        self.doomed.clear()
        if self.dlq.messages:
            self.redrive("dlq-redrive", late=False)
            while self.step():
                pass
        twins = {(i, attempt) for i, attempt in self.redriven_finals}
        leftovers = [
            m
            for m in self.exhausted.messages.values()
            if (identify(m.body, m.attributes)[0], read_terminal(m.body, m.attributes).attempt) in twins
        ]
        if leftovers:
            runs = len(self.runs)
            self.redrive("exhausted-redrive", late=False, only=leftovers)
            while self.step():
                pass
            if len(self.runs) > runs:
                self.leftover_runs += len(self.runs) - runs

    # -- the invariants -------------------------------------------------------------------------------
    def violations(self) -> list[str]:
        out: list[str] = []
        attempts = self.config.attempts
        if not self.idle():
            out.append("(e) not settled: messages left in the source queue or schedules left")
        places: dict[int, list[tuple[str, int]]] = {}
        for i in self.successes:
            places.setdefault(i, []).append(("processed", 0))
        for msg in self.exhausted.messages.values():
            i, _ = identify(msg.body, msg.attributes)
            places.setdefault(i, []).append(("exhausted", read_terminal(msg.body, msg.attributes).attempt))
        for msg in self.dlq.messages.values():
            places.setdefault(identify(msg.body, msg.attributes)[0], []).append(("dlq", 0))
        if self.leftover_runs:
            out.append(
                f"(a) {self.leftover_runs} run(s) of final copies left behind by a redrive of their twins"
            )
        inputs = [*range(self.config.messages), *range(FORGED_BASE, FORGED_BASE + self.forged)]
        for i in inputs:
            kinds = sorted({p for p, _ in places.get(i, [])})
            if not kinds:
                out.append(f"(a) message {i} lost: in no final place")
            elif len(kinds) > 1:
                out.append(f"(a) message {i} in two final places: {sorted(places[i])}")
            elif kinds == ["exhausted"] and len({a for _, a in places[i]}) > 1:
                out.append(f"(a) message {i} in the exhausted queue at two attempts: {sorted(places[i])}")
        by_attempt: dict[tuple[int, int, int], list[Run]] = {}
        for run in self.runs:
            if run.i < FORGED_BASE:
                by_attempt.setdefault((run.i, run.generation, run.attempt), []).append(run)
        for (i, generation, attempt), runs in sorted(by_attempt.items()):
            for k, a in enumerate(runs):
                for b in runs[k + 1 :]:
                    if a.mid not in b.lineage and b.mid not in a.lineage:
                        out.append(
                            f"(b) message {i} attempt {attempt} (generation {generation}) ran in two "
                            f"copies: {a.mid} and {b.mid}"
                        )
        real = set(self.real)
        for run in self.runs:
            if run.i >= FORGED_BASE and run.retry_id in real:
                out.append(
                    f"(c) forged message {run.i} ran attempt {run.attempt} of real chain {run.retry_id}"
                )
        for i, outcome, attempt in self.judged:
            if i < FORGED_BASE and outcome == "invalid-envelope":
                out.append(f"(d) a copy of message {i} (attempt {attempt}) was judged invalid-envelope")
        label = "(c)" if self.forged else "(e)"
        for i in range(self.config.messages):
            for place, attempt in places.get(i, []):
                allowed = place == "processed" and (i % 2 == 1 or self.redriven_exhausted)
                allowed |= place == "exhausted" and i % 2 == 0 and attempt == attempts
                if not allowed:
                    where = f"{place} at attempt {attempt}" if attempt else place
                    out.append(f"{label} message {i} ended {where}, not where its plan leads")
        for i, outcome, attempt in self.judged:
            if i < FORGED_BASE and (i % 2 == 1 or outcome != "exhausted" or attempt != attempts):
                out.append(
                    f"{label} message {i} sent to the retry-exhausted queue at attempt {attempt} ({outcome})"
                )
        return list(dict.fromkeys(out))


# -- the search ---------------------------------------------------------------------------------------------
@dataclass
class Report:
    scenario: str
    config: Config
    states: int = 0
    interleavings: int = 0
    pruned: int = 0
    max_depth: int = 0
    seconds: float = 0.0
    complete: bool = True
    counterexamples: dict[str, list[str]] = field(default_factory=dict)  # violation → event log

    def text(self) -> str:
        c = self.config
        head = (
            f"{self.scenario}: {c.messages} messages, {c.attempts} attempts, {c.faults} faults, "
            f"{c.operations} operations: {self.states} states, {self.interleavings} interleavings "
            f"({self.pruned} pruned), max depth {self.max_depth}, {self.seconds:.1f} s"
            + ("" if self.complete else " (budget ran out: incomplete)")
        )
        lines = [head]
        for problem, *events in self.counterexamples.values():
            lines.append(f"  FAIL {problem}")
            lines += [f"      {event}" for event in events]
        return "\n".join(lines)


class Replay:
    """The DFS's oracle: the choices of ``prefix``, then option 0; records (choice, options) of each."""

    def __init__(self, prefix: Sequence[int]) -> None:
        self.prefix = prefix
        self.trail: list[tuple[int, int]] = []

    def __call__(self, labels: Sequence[str]) -> int:
        k = len(self.trail)
        choice = self.prefix[k] if k < len(self.prefix) else 0
        self.trail.append((choice, len(labels)))
        return choice


# The wall-time bound of a search, as a multiple of its CPU budget (the suite runs 4 workers on 2 cores).
WALL_FACTOR = 4.0


def explore(config: Config, *, scenario: str = "custom", budget_seconds: float = 60.0) -> Report:
    """Every interleaving of ``config``'s events, depth first, replaying each path from scratch.

    ``budget_seconds`` is CPU time of the searching thread, so a loaded machine (the suite's other
    workers on the same cores) does not cut a search short that would finish; wall time is bounded
    too, at ``WALL_FACTOR`` times the budget."""
    started = time.monotonic()
    cpu_started = time.thread_time()
    report = Report(scenario, config)
    rig = Rig(config)
    seen: dict[bytes, int] = {}
    prefix: list[int] = []
    while True:
        replay = Replay(prefix)
        trail = replay.trail
        path = Path(rig, replay, seen=seen, fresh=len(prefix))
        try:
            path.run()
        except Pruned:
            report.pruned += 1
        except AssertionError as exc:  # the world did not settle
            report.interleavings += 1
            report.counterexamples.setdefault(str(exc), [str(exc), *path.log])
        else:
            report.interleavings += 1
            for problem in path.violations():
                report.counterexamples.setdefault(_kind(problem), [problem, *path.log])
        report.max_depth = max(report.max_depth, len(trail))
        while trail and trail[-1][0] == trail[-1][1] - 1:
            trail.pop()
        if not trail:
            break
        prefix = [c for c, _ in trail[:-1]] + [trail[-1][0] + 1]
        if (
            time.thread_time() - cpu_started > budget_seconds
            or time.monotonic() - started > WALL_FACTOR * budget_seconds
        ):
            report.complete = False
            break
    report.states = len(seen)
    report.seconds = time.monotonic() - started
    return report


def _kind(problem: str) -> str:
    """A violation's kind (its text without numbers and ids), so that one counterexample is kept per kind."""
    return re.sub(r"\[.*\]|[\w-]*\d[\w-]*", "#", problem)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=2)
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--faults", type=int, default=2)
    parser.add_argument("--operations", type=int, default=1)
    parser.add_argument("--max-depth", type=int, default=40)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), action="append")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per scenario")
    args = parser.parse_args(argv)
    failed = False
    for name in args.scenario or [s for s in SCENARIOS if s != "all"]:
        config = Config(
            messages=args.messages,
            attempts=args.attempts,
            faults=args.faults,
            operations=args.operations,
            max_depth=args.max_depth,
            events=SCENARIOS[name],
        )
        report = explore(config, scenario=name, budget_seconds=args.budget)
        print(report.text(), flush=True)
        failed |= bool(report.counterexamples)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

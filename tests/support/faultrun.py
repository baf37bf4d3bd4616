"""A large randomized fault run of the real consumer against the in-memory AWS world (fakeaws.py).

    .venv/bin/python -m tests.support.faultrun [--messages 10000] [--variant default] [--seed N]

The deployment is what the modules give a user by default (:class:`Deployment`, read from
modules/*/variables.tf): the retry policy ``{}`` (the package's defaults), the queue's visibility
timeout, maximum message size, retention, the DLQ's and retry-exhausted queue's retention, the DLQ's
maxReceiveCount and the batch size; the consumer is built from the environment the consumer module
wires (``ConsumerSettings.from_env``, ``RetryingConsumer.from_settings``), as its handler builds it.

Lambda's event source mapping is played by :class:`Driver` (receive up to a batch, invoke, delete the
records not reported as failures), EventBridge Scheduler fires due schedules, SQS redrives to the DLQ
and deletes expired messages, DynamoDB's TTL deletes expired claims at a random moment after their
``expiration``. Injected, at random: API faults on every client the consumer holds (refused calls,
calls that took effect but answered with a timeout, single batch entries failing, invocations dying
right after a call took effect), invocations whose response is lost, deletes that fail (the record
comes back), duplicate deliveries, and stretches in which the Scheduler or the claims table refuse
every call or every invocation dies after its claims. At set moments (:attr:`Variant.redrives`), while
the consumer keeps running, an operator redrives both the DLQ (SQS's own move back to the source,
StartMessageMoveTask) and the retry-exhausted queue (``serverless_retry.redrive.queue.redrive`` to the
source, with its own API faults); the last of them two weeks in, when claims written at the start have
expired. The report counts per message where it ended and how often:

- lost: in no final place (processed, retry-exhausted queue, DLQ); a message SQS expired is lost;
- two places: in more than one *kind* of final place (e.g. processed and in the DLQ);
- duplicate final copies: the same kind of place twice (e.g. two copies in the exhausted queue);
- second chain: some attempt of a chain ran in two different copies of it (a copy is an SQS message,
  or the messages one copy was carried on in while it waited, or SQS moved it out of the DLQ under);
- own copies judged invalid: an invalid-envelope outcome for a message whose producer sent a valid
  body (so the envelope judged invalid was one our consumer wrote);
- duplicates processed: processor runs beyond one per (message, attempt);
- redriven (DLQ) and redriven (exhausted): what the operator moved back.

``run()`` returns a Report; ``Report.failures()`` lists what breaks the guarantees (exit 1 here).
One seed gives the same run in processes with the same PYTHONHASHSEED (string-hash order reaches the
consumer's batches); the figures asserted on hold for any.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError, ReadTimeoutError
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.config import ConsumerSettings
from serverless_retry.consumer import RetryingConsumer
from serverless_retry.errors import HttpError, NonRetryableError, RetryableError
from serverless_retry.message import Message
from serverless_retry.observability import ConsumerMetrics
from serverless_retry.policy import RetryPolicy
from serverless_retry.redrive.options import RedriveOptions
from serverless_retry.redrive.queue import ExhaustedMessage, OutgoingMessage, redrive, sqs_sender
from serverless_retry.terminal import read_terminal

from .fakeaws import ACCOUNT, FakeQueue, World, client_error, envelope_meta

ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/fault-run-scheduler"
MODULES = Path(__file__).resolve().parents[2] / "modules"
DAY = 86_400.0


# --- the deployment a user gets by default ---------------------------------------------------------


def _literal(raw: str) -> Any:
    """An HCL default written as a JSON literal (null, a number, a string, {}, [], ["a"])."""
    return None if raw == "null" else json.loads(raw)


@cache
def tf_default(module: str, variable: str) -> Any:
    """The ``default`` of ``variable`` in modules/<module>/variables.tf (LookupError when it has none)."""
    text = (MODULES / module / "variables.tf").read_text()
    block = re.search(rf'^variable "{re.escape(variable)}" \{{\n(.*?)^\}}', text, re.M | re.S)
    default = re.search(r"^  default\s*=\s*(.+?)\s*$", block[1], re.M) if block else None
    if default is None:
        raise LookupError(f"modules/{module}/variables.tf: no default for variable {variable!r}")
    return _literal(default[1])


@cache
def tf_local(module: str, name: str) -> Any:
    """A local of modules/<module>/main.tf set to a literal (``name = 262144``)."""
    text = (MODULES / module / "main.tf").read_text()
    match = re.search(rf"^\s*{re.escape(name)}\s*=\s*(\S+)\s*$", text, re.M)
    if match is None:
        raise LookupError(f"modules/{module}/main.tf: no literal local {name!r}")
    return _literal(match[1])


def _claims_enabled_by_default() -> bool:
    text = (MODULES / "consumer" / "variables.tf").read_text()
    match = re.search(r"enabled\s*=\s*optional\(bool,\s*(true|false)\)", text)
    if match is None:
        raise LookupError("modules/consumer/variables.tf: claims.enabled has no default")
    return bool(tf_default("scheduled-retry", "claims") == {} and match[1] == "true")


# What modules/scheduled-retry computes from its variables, written here in Python (the test checks
# its main.tf still says so: tests/functional/test_fault_run.py).
VISIBILITY_FORMULA = "coalesce(var.visibility_timeout_seconds, 6 * var.timeout)"
MAX_RECEIVE_COUNT_FORMULA = (
    "coalesce(var.max_receive_count, local.fifo_ordered ? max(5, 2 * module.policy.max_attempts + 1) : "
    'module.policy.transport == "visibility" ? max(5, module.policy.max_attempts + 1) : 5)'
)
EXHAUSTED_SIZE_FORMULA = (
    "max(var.max_message_size, coalesce(var.exhausted_max_message_size, 0)) > local.provider_5x_max_size"
    " ? local.sqs_max_message_size : local.provider_5x_max_size"
)


def policy_max_attempts(policy: RetryPolicy) -> int:
    """modules/retry-policy's ``max_attempts``: the largest over the policy and its retrying rules."""
    return max([policy.max_attempts, *(r.max_attempts for r in policy.rules if r.retry and r.max_attempts)])


@dataclass(frozen=True)
class Deployment:
    """modules/scheduled-retry with every variable left at its default (but the choices a variant
    makes: FIFO and its order, the transport, the claims table)."""

    policy: dict[str, Any]  # the retry_policy variable ({}: the package's defaults)
    timeout: int
    visibility_timeout: int
    max_message_size: int
    exhausted_max_message_size: int
    retention_seconds: int
    dlq_retention_seconds: int
    exhausted_retention_seconds: int
    max_receive_count: int
    batch_size: int
    claims: bool
    fifo: bool = False
    fifo_order: str = "ordered"

    @classmethod
    def defaults(
        cls, *, fifo: bool = False, fifo_order: str | None = None, transport: str | None = None
    ) -> Deployment:
        module = "scheduled-retry"
        policy = dict(tf_default(module, "retry_policy"))
        if transport is not None:  # a variant's choice of transport, not a tuned budget or cap
            policy["transport"] = transport
        parsed = RetryPolicy.from_dict(policy)
        order = fifo_order or tf_default(module, "fifo_order")
        timeout = tf_default(module, "timeout")
        visibility = tf_default(module, "visibility_timeout_seconds")
        size = tf_default(module, "max_message_size")
        exhausted_size = tf_default(module, "exhausted_max_message_size")
        if exhausted_size is None:
            ceiling = tf_local("queue", "provider_5x_max_size")
            exhausted_size = tf_local("queue", "sqs_max_message_size") if size > ceiling else ceiling
        receives = tf_default(module, "max_receive_count")
        if receives is None:
            attempts = policy_max_attempts(parsed)
            if fifo and order == "ordered":
                receives = max(5, 2 * attempts + 1)
            elif parsed.transport == "visibility":
                receives = max(5, attempts + 1)
            else:
                receives = 5
        return cls(
            policy=policy,
            timeout=timeout,
            visibility_timeout=6 * timeout if visibility is None else visibility,
            max_message_size=size,
            exhausted_max_message_size=exhausted_size,
            retention_seconds=tf_default(module, "message_retention_seconds"),
            dlq_retention_seconds=tf_default("queue", "dlq_message_retention_seconds"),
            exhausted_retention_seconds=tf_default("queue", "exhausted_message_retention_seconds"),
            max_receive_count=receives,
            batch_size=tf_default(module, "batch_size"),
            claims=_claims_enabled_by_default(),
            fifo=fifo,
            fifo_order=order,
        )

    def environment(self, queue: FakeQueue, exhausted: FakeQueue, schedule_dlq: FakeQueue) -> dict[str, str]:
        """The consumer's environment as modules/consumer wires it."""
        env = {
            "SERVERLESS_RETRY_POLICY": json.dumps(RetryPolicy.from_dict(self.policy).to_dict()),
            "SERVERLESS_RETRY_QUEUE_URL": queue.url,
            "SERVERLESS_RETRY_QUEUE_ARN": queue.arn,
            "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": exhausted.url,
            "SERVERLESS_RETRY_DLQ_ARN": schedule_dlq.arn,
            "SERVERLESS_RETRY_MAX_MESSAGE_BYTES": str(self.max_message_size),
            "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES": str(self.exhausted_max_message_size),
            "SERVERLESS_RETRY_QUEUE_RETENTION_SECONDS": str(self.retention_seconds),
            "SERVERLESS_RETRY_SCHEDULE_GROUP": "fr-retries",
            "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN": ROLE_ARN,
            "SERVERLESS_RETRY_VISIBILITY_TIMEOUT_SECONDS": str(self.visibility_timeout),
        }
        if self.fifo:
            env["SERVERLESS_RETRY_FIFO_ORDER"] = self.fifo_order
        if self.claims:
            env["SERVERLESS_RETRY_CLAIMS_TABLE"] = "fr-claims"
        return env


DEFAULTS = Deployment.defaults()
# Kept for importers: the default policy as the module takes it, and the source's maximum size.
POLICY: dict[str, Any] = DEFAULTS.policy
MAX_BYTES = DEFAULTS.max_message_size
STEPS = ["retry", "retry", "boom", "slow", "fatal", "keyerror", "cancel", "unprintable"]
# A 503's Retry-After, by message: short, long, and longer than the default policy's cap (3,600 s).
RETRY_AFTER_SECONDS = (60, 1500, 7200)


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
    # records that fail then reach the DLQ, copies with their claims taken (a bad deploy, say). One
    # stretch (start, end), or several.
    dying: tuple[float, float] | tuple[tuple[float, float], ...] | None = None

    @classmethod
    def none(
        cls, *, outage: tuple[float, float] | None = None, claims_outage: tuple[float, float] | None = None
    ) -> Rates:
        return cls(0, 0, 0, 0, 0, 0, 0, outage, claims_outage, None)


def windows(
    value: tuple[float, float] | tuple[tuple[float, float], ...] | None,
) -> tuple[tuple[float, float], ...]:
    """One stretch or several, as several."""
    if not value:
        return ()
    first = value[0]
    if isinstance(first, tuple):
        return tuple((float(a), float(b)) for a, b in value)  # type: ignore[misc]
    return ((float(first), float(value[1])),)  # type: ignore[arg-type]


# What the operator's redrive meets: a share of refused calls, timeouts after the effect and crashes
# (the command killed) low enough that a run moves about a hundred messages before one ends it.
OPERATOR_RATES = Rates(
    refuse=0.003,
    timeout_after=0.003,
    crash_after=0.001,
    entry_fail=0.003,
    lost_response=0,
    delete_fail=0,
    outage=None,
)


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
            if name in ("send_message_batch", "create_schedule") and rates.dying:
                elapsed = (self._world.clock.now() - self._start).total_seconds()
                if any(a <= elapsed < b for a, b in windows(rates.dying)):
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
    table: bool = True  # the claims table: one chain per message (the module's default)
    idempotent: bool = False  # Powertools idempotency of the processor: a success is not run again
    transport: str | None = None  # None: the default policy's ("auto")
    messages: int = 10_000
    groups: int = 0  # FIFO: message groups
    rates: Rates = field(default_factory=Rates)
    max_receive_count: int | None = None  # None: the module's default for this deployment
    batch_size: int | None = None  # None: the module's default
    # Seconds into the run at which an operator redrives, while the consumer runs, both the DLQ (SQS's
    # own move back to the source) and the retry-exhausted queue (queue_redrive.redrive to the source).
    redrives: tuple[float, ...] = ()
    redrive_at: float | None = None  # one more such moment (kept for callers of the single one)
    dlq_move_keeps_ids: bool = False  # AWS documents new message ids for a move; True: keep them

    def deployment(self) -> Deployment:
        base = Deployment.defaults(fifo=self.fifo, fifo_order=self.fifo_order, transport=self.transport)
        changes: dict[str, Any] = {"claims": base.claims and self.table}
        if self.max_receive_count is not None:
            changes["max_receive_count"] = self.max_receive_count
        if self.batch_size is not None:
            changes["batch_size"] = self.batch_size
        return dataclasses.replace(base, **changes)

    def moments(self) -> list[float]:
        return sorted({*self.redrives, *(() if self.redrive_at is None else (self.redrive_at,))})


# The default deployment's operator moments: inside the two-hour takeover grace after the first dying
# stretch (its copies' claims still live), a day in (the copies moved then die again and wait in the
# DLQ, duplicates among them), and 13 days in: claims last written on day 1 are past a TTL of source
# retention + 1 day (5 days), not past one of retention + 14 + 1 days, and the DLQ still holds what
# it got (14 days).
DEFAULT_REDRIVES = (8_400.0, DAY, 13 * DAY)

VARIANTS = {
    # What the modules deploy by default (the claims table, no processor idempotency, the default
    # policy and sizes), with a Scheduler outage, a claims-table outage inside it, two stretches in
    # which invocations die after their claims, and three redrives of both the DLQ and the
    # retry-exhausted queue over two weeks.
    "default": Variant(
        "default",
        rates=Rates(claims_outage=(1800.0, 5400.0), dying=((6000.0, 7800.0), (DAY, DAY + 1800.0))),
        redrives=DEFAULT_REDRIVES,
    ),
    "standard": Variant("standard", table=False),
    # Claims and processor idempotency; the operator redrives half a day in and two weeks in.
    "standard-table": Variant("standard-table", idempotent=True, redrives=(12 * 3600.0, 13 * DAY)),
    "hops-table": Variant("hops-table", idempotent=True, transport="sqs-hops", messages=2_000),
    # In place every receive is an attempt but those held back behind a failing message of the group
    # (counted in the claims table); the module's maxReceiveCount for it is 2 x max_attempts + 1, and
    # the batch size of 1 docs/concepts.md asks of ordered FIFO sources (later messages of a group are
    # not received while an earlier one waits).
    "fifo-ordered-table": Variant(
        "fifo-ordered-table", fifo=True, idempotent=True, messages=2_000, groups=150, batch_size=1
    ),
    "fifo-unordered-table": Variant(
        "fifo-unordered-table", fifo=True, fifo_order="unordered", idempotent=True, messages=2_000, groups=150
    ),
    "scheduler-outage": Variant(
        "scheduler-outage", table=False, messages=2_000, rates=Rates.none(outage=(0.0, 6 * 3600.0))
    ),
}


class Processor:
    """Fails attempt n the way the message's plan says; succeeds once the plan runs out.

    ``idempotent``: a message that succeeded once succeeds again without running, which is what the
    consumer's Powertools idempotency (``IdempotentProcessor``, on with the table) gives a processor.
    """

    def __init__(self, *, idempotent: bool = False) -> None:
        self.idempotent = idempotent
        # (i, chain, attempt) → the copies that ran it; a chain is the retry id, followed back through
        # SQS's DLQ moves (a plain message moved under a new id is the same message)
        self.runs: dict[tuple[int, str, int], list[str]] = defaultdict(list)
        self.successes: Counter[int] = Counter()
        self.success_generation: dict[int, int] = {}  # the latest chain generation a success ran in
        # Runs whose outcome was never recorded: the invocation died before its next step (a crash, a
        # dying stretch), or the consumer handed the record back as a batch item failure (the next
        # copy or the final place could not be written). The attempt did not finish, and at least once
        # says it runs again: in the same copy on redelivery, or in a sibling that takes the claim over
        # once the owner's lease has passed (claims rule 6).
        self.unfinished: dict[tuple[int, str, int], list[str]] = defaultdict(list)
        self._current: list[tuple[tuple[int, str, int], str, str]] = []  # (key, copy, message id)
        self.order: list[tuple[str, int]] = []  # (group, i) of each first success, in time order
        self.renamed_reruns: set[int] = set()  # messages a DLQ move's new id made run again (see call)
        self.renamed: set[str] = set()  # their new ids: chains of their own

    def begin(self) -> None:
        self._current = []

    def invocation_died(self) -> None:
        self.invocation_returned(None)

    def invocation_returned(self, failed: set[str] | None) -> None:
        """The invocation's runs are over: ``failed`` the message ids handed back (None: it died)."""
        for key, copy, message_id in self._current:
            if failed is None or message_id in failed:
                self.unfinished[key].append(copy)
        self._current = []

    def __call__(self, message: Message) -> None:
        doc = message.json()
        i = doc["i"]
        if self.idempotent and self.successes[i]:
            return
        attempt = message.retry.attempt
        chain = message.retry.id if message.retry.id in self.renamed else origin(message.retry.id)
        # A plain copy SQS moved out of the DLQ: the move gave it a new message id, and a plain body
        # carries no other, so nothing can tell it from a new message. If its chain had moved on (the
        # invocation that wrote attempt 2 died before the deletion, on the last receive before the
        # DLQ), it runs again as a chain of its own: the stated exception (docs/claims-protocol.md),
        # counted apart from second chains.
        if (
            message.retry.id != chain
            and envelope_meta(message.record.get("body", "")) is None
            and any(k[0] == i and k[1] == chain and k[2] > 1 for k in self.runs)
        ):
            self.renamed_reruns.add(i)
            self.renamed.add(message.retry.id)  # its retry copies carry this id on
            chain = message.retry.id
        key, copy = (i, chain, attempt), copy_of(message)
        self.runs[key].append(copy)
        self._current.append((key, copy, message.message_id))
        plan = doc.get("plan", [])  # none: a producer's envelope-like body, run as a message of its own
        step = plan[attempt - 1] if attempt <= len(plan) else "ok"
        if step == "ok":
            if not self.successes[i]:
                self.order.append((doc.get("g", ""), i))  # first successes, in time order
            self.successes[i] += 1
            generation = message.retry.generation
            self.success_generation[i] = max(generation, self.success_generation.get(i, 0))
        elif step == "retry":
            raise RetryableError("downstream busy")
        elif step == "boom":
            raise ValueError("unexpected")
        elif step == "slow":  # an HTTP-date Retry-After, the same on every delivery of this record
            sent = int(message.record["attributes"]["SentTimestamp"]) / 1000
            wait = RETRY_AFTER_SECONDS[i % len(RETRY_AFTER_SECONDS)]
            when = datetime.fromtimestamp(sent, UTC) + timedelta(seconds=wait)
            raise HttpError(503, "unavailable", retry_after=format_datetime(when, usegmt=True))
        elif step == "fatal":
            raise NonRetryableError("cannot ever work")
        elif step == "keyerror":
            raise KeyError("customer")  # retried: the default policy has no rule for it
        elif step == "cancel":
            raise asyncio.CancelledError()  # a BaseException: must fail this record only
        else:
            raise Unprintable()


# A message SQS moved out of the DLQ under a new id → the id it had there.
REDRIVEN: dict[str, str] = {}


def origin(mid: str) -> str:
    """``mid`` followed back through SQS's DLQ moves to the message id it first had."""
    for _ in range(100):  # moved more than once: follow the ids back
        if mid not in REDRIVEN:
            break
        mid = REDRIVEN[mid]
    return mid


def copy_of(message: Message) -> str:
    """Which copy a run is: its SQS message id, or for a copy carried on under other ids (it waited
    as a new message, or SQS moved it out of the DLQ), the first id it had."""
    meta = envelope_meta(message.record.get("body", "")) or {}
    claimants = meta.get("claimants")
    return origin(str(claimants[0]) if claimants else message.message_id)


def make_bodies(
    variant: Variant, rng: random.Random, *, max_bytes: int | None = None
) -> list[tuple[str, str | None]]:
    """(body, message group or None) per message, in send order. About 2 % claim to be an envelope but
    are not a valid one (a producer's); 1 % are near the queue's maximum size (too large to wrap
    once their history grows)."""
    limit = max_bytes or DEFAULTS.max_message_size
    out: list[tuple[str, str | None]] = []
    for i in range(variant.messages):
        group = f"g{rng.randrange(variant.groups)}" if variant.fifo else None
        roll = rng.random()
        if roll < 0.02:  # claims to be an envelope but is not a valid one
            out.append((json.dumps({"serverless_retry": {"v": 7, "attempt": -1}, "i": i, "g": group}), group))
            continue
        plan = [rng.choice(STEPS) for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 5]))]
        pad = "p" * (limit - rng.randint(200, 1800)) if roll > 0.99 else ""
        out.append((json.dumps({"i": i, "g": group, "plan": plan, "pad": pad}), group))
    return out


def producer_invalid(body: str) -> bool:
    """Whether the producer sent ``body`` as an invalid envelope (make_bodies' 2 %)."""
    return '"plan"' not in body[:200] and '"serverless_retry"' in body[:200]


def number_of(text: str) -> int | None:
    """The message number in ``text``: a producer's body, or one wrapped in envelopes (``body``)."""
    for _ in range(8):
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(document, dict):
            return None
        if isinstance(document.get("i"), int):
            return int(document["i"])
        inner = document.get("body")
        if not isinstance(inner, str) or not isinstance(document.get("serverless_retry"), dict):
            return None
        text = inner
    return None


def _generation_of(body: str) -> int:
    """The chain generation of a final envelope (0 for every other form)."""
    meta = envelope_meta(body)
    value = meta.get("generation", 0) if meta is not None else 0
    return value if isinstance(value, int) else 0


def identify(body: str, attributes: dict[str, Any]) -> tuple[int, str]:
    """(message number, outcome) of a message found in a final place, read as inspect and redrive read
    it (every terminal form, retry envelopes SQS moved to a DLQ, and an own envelope judged invalid,
    whose raw body is the envelope). AssertionError for a message that is none of the run's."""
    view = read_terminal(body, attributes)
    outcome = (
        view.outcome if view.outcome != "unknown" else ("copy" if view.form == "envelope" else "verbatim")
    )
    for text in (view.body, body.split("\n", 1)[-1], body):
        i = number_of(text)
        if i is not None:
            return i, outcome
    raise AssertionError(f"a {view.form} message of no known number: {body[:300]!r}")


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
    redriven: int  # = redriven_dlq (the name callers had)
    order_violations: int
    table: bool
    two_places_one_chain: list[int]  # in two kinds of final place without a second chain to explain it
    seed: int = 0
    own_invalid: list[int] = field(default_factory=list)  # own envelopes judged invalid (exhausted so)
    redriven_dlq: int = 0
    redriven_exhausted: int = 0
    redrive_runs: int = 0
    # final copies of a generation their chain left (processed after a redrive): see run()
    stale_final_copies: int = 0
    claims_expired: int = 0  # claims items TTL deleted during the run
    days: float = 0.0  # logical time the run covered
    deployment: Deployment | None = None
    second_chain_ids: list[int] = field(default_factory=list)  # the messages with a second chain
    # plain copies whose chain had moved on, run again after SQS's DLQ move renamed them (stated)
    renamed_reruns: list[int] = field(default_factory=list)

    def failures(self) -> list[str]:
        """What breaks the guarantees: any loss and any own envelope judged invalid, always; with the
        table (one chain per message, a success remembered), any message in two final places or with a
        second chain. Without the table at-least-once delivery can place a message twice (a second
        chain, or a success whose deletion failed until the DLQ took it): counted and reported, within
        the bound docs/concepts.md states."""
        out = []
        if self.lost:
            out.append(f"{len(self.lost)} lost (e.g. {self.lost[:5]})")
        if self.own_invalid:
            out.append(f"{len(self.own_invalid)} own copies judged invalid (e.g. {self.own_invalid[:5]})")
        if self.table and self.two_places:
            sample = dict(list(self.two_places.items())[:3])
            out.append(f"{len(self.two_places)} in two final places (e.g. {sample})")
        if self.table and self.second_chains:
            out.append(
                f"{self.second_chains} messages with a second chain despite the claims table "
                f"(e.g. {self.second_chain_ids[:5]})"
            )
        if self.order_violations:
            out.append(f"{self.order_violations} FIFO order violations")
        return out

    def figures(self) -> dict[str, int]:
        """The figures the guarantees are stated in."""
        return {
            "lost": len(self.lost),
            "in two final places": len(self.two_places),
            "second chains": self.second_chains,
            "own copies judged invalid": len(self.own_invalid),
            "duplicate final copies": self.duplicate_final_copies,
            "redriven (DLQ)": self.redriven_dlq,
            "redriven (exhausted)": self.redriven_exhausted,
        }

    def text(self) -> str:
        fault_share = self.api_faults / max(1, self.api_calls)
        return (
            f"fault run {self.variant} seed {self.seed}: {self.messages} messages, {self.invocations} "
            f"invocations, {self.days:.1f} logical days, {self.seconds:.1f} s\n"
            f"  API calls {self.api_calls}, faulted {self.api_faults} ({fault_share:.0%}): {self.fault_kinds}\n"
            f"  final places {self.places}; exhausted by outcome {self.outcomes}\n"
            f"  lost {len(self.lost)} (expired {self.expired}), in two final places {len(self.two_places)} "
            f"({len(self.two_places_one_chain)} without a second chain), "
            f"duplicate final copies {self.duplicate_final_copies} (stale {self.stale_final_copies}), "
            f"own copies judged invalid {len(self.own_invalid)}\n"
            f"  messages with a second chain {self.second_chains} (most chains {self.max_chains}), "
            f"duplicates processed {self.duplicates_processed}, duplicate copies dropped {self.duplicates_dropped}, "
            f"plain copies renamed by a DLQ move and run again {len(self.renamed_reruns)}\n"
            f"  redriven (DLQ) {self.redriven_dlq}, redriven (exhausted) {self.redriven_exhausted} in "
            f"{self.redrive_runs} redrive runs, claims items TTL-deleted {self.claims_expired}\n"
            f"  Scheduler refusals sent as delay hops {self.scheduler_fallbacks}, early copies re-delayed "
            f"{self.redelayed}, DLQ at the end {self.dlq}, FIFO order violations {self.order_violations}"
        )


class Driver:
    """The event source mapping, the Scheduler and the operator, on the world's clock."""

    TICK = timedelta(milliseconds=50)  # what one step of a redrive takes, while the consumer runs
    SESSION_RUNS = 100  # an operator runs a redrive again while the last run left something it found

    def __init__(
        self,
        world: World,
        queue: FakeQueue,
        consumer: RetryingConsumer,
        rates: Rates,
        rng: random.Random,
        *,
        exhausted: FakeQueue | None = None,
        operator_sqs: Any = None,
        keep_ids: bool = False,
    ):
        self.world = world
        self.queue = queue
        self.consumer = consumer
        self.rates = rates
        self.rng = rng
        self.exhausted = exhausted
        self.operator_sqs: Any = operator_sqs if operator_sqs is not None else world.sqs  # duck-typed SQS
        self.keep_ids = keep_ids
        self.invocations = 0
        self.batch_size = 10
        self.counters: Counter[str] = Counter()
        self.processor: Processor | None = None  # told when an invocation dies (second-chain count)

    def invoke(self, records: list[dict[str, Any]]) -> None:
        self.invocations += 1
        if self.processor is not None:
            self.processor.begin()
        try:
            result = self.consumer.process_batch(records)
        except Crash:
            if self.processor is not None:
                self.processor.invocation_died()
            return  # nothing deleted: every record comes back after its visibility timeout
        counts = result.counts
        self.counters["duplicates"] += counts.duplicates
        self.counters["fallback"] += counts.scheduler_fallback
        self.counters["redelayed"] += counts.redelayed
        failed = set(result.failed_ids)
        deleted: set[str] = set()
        if self.rng.random() >= self.rates.lost_response:
            for record in records:
                if record["messageId"] not in failed and self.rng.random() >= self.rates.delete_fail:
                    self.queue.delete(record["receiptHandle"])
                    deleted.add(record["messageId"])
        if self.processor is not None:
            # A run's outcome is recorded when the consumer acknowledged it and, on a first receive
            # (which leaves its claim as taken, claims rule 4), SQS deleted it: else it comes back.
            unrecorded = failed | {
                r["messageId"]
                for r in records
                if r["messageId"] not in deleted and int(r["attributes"]["ApproximateReceiveCount"]) <= 1
            }
            self.processor.invocation_returned(unrecorded)

    def step(self) -> bool:
        """One poll of the mapping (the Scheduler fires first); whether it brought records."""
        self.world.scheduler.fire_due()
        records = self.queue.receive(self.batch_size)
        if records:
            self.invoke(records)
        return bool(records)

    def _tick(self) -> None:
        """The consumer goes on while the operator works: one poll, and a moment passes."""
        self.step()
        self.world.clock.current = self.world.clock.current + self.TICK

    def move_dlq(self) -> int:
        """SQS's own redrive of the DLQ to its source (StartMessageMoveTask): the messages it holds at
        the start, oldest first, ten at a time with the consumer polling between; each under a new
        message id and enqueue time (``keep_ids``: its own id)."""
        dlq = self.queue.dlq
        if dlq is None:
            return 0
        dlq.sweep()
        budget = len(dlq.messages)
        moved = 0
        while moved < budget:
            taken = dlq.take_oldest(min(10, budget - moved))
            if not taken:
                break
            for msg in taken:
                sent = dlq.move(msg, self.queue, keep_id=self.keep_ids)
                if sent != msg.mid:
                    REDRIVEN[sent] = msg.mid
                moved += 1
            self._tick()
        self.counters["redriven"] += moved
        return moved

    def redrive_exhausted(self) -> int:
        """The operator's ``serverless-retry redrive --from-queue-url EXHAUSTED --to-queue-url SOURCE
        --yes`` (queue_redrive.redrive, on a client with faults of its own), the consumer polling after
        each message moved. While a run ends early (a fault, the command killed) or leaves copies of
        chains it moved, the operator runs it again, 130 s later (a killed run's messages are hidden
        for 120 s), for what the queue held when the first run started and no run has moved yet: at
        most SESSION_RUNS runs. What the consumer exhausts again meanwhile waits for the next time."""
        if self.exhausted is None:
            return 0
        clock = self.world.clock
        started = clock.now()
        moved_ids: set[str] = set()
        base = sqs_sender(self.operator_sqs, self.queue.url)

        def sender(message: ExhaustedMessage, outgoing: OutgoingMessage) -> str | None:
            sent = base(message, outgoing)
            moved_ids.add(message.message_id)
            self.counters["redriven-exhausted"] += 1
            return sent

        def select(message: ExhaustedMessage) -> bool:
            sent = message.sent_at
            return message.message_id not in moved_ids and (sent is None or sent < started)

        steps = Counter[str]()

        def on_progress(_report: Any) -> None:
            steps["run"] += 1
            self._tick()

        def should_stop() -> str | None:  # a bound for a redrive that would not end by itself
            return "fault run bound" if steps["run"] > 20_000 else None

        options = RedriveOptions(from_queue_url=self.exhausted.url, to_queue_url=self.queue.url)
        for _ in range(self.SESSION_RUNS):
            self.counters["redrive-runs"] += 1
            steps["run"] = 0
            before = len(moved_ids)
            try:
                report = redrive(
                    self.operator_sqs,
                    options,
                    clock=clock,
                    monotonic=lambda: clock.now().timestamp(),
                    sleep=lambda seconds: None,
                    sender=sender,
                    select=select,
                    on_progress=on_progress,
                    should_stop=should_stop,
                    wait_seconds=0,
                )
            except (Crash, ClientError, BotoCoreError):
                again = True  # the command died or a receive failed: what it held comes back
            else:
                # (getattr: a package before the once-per-run rule has no "repeated")
                again = not report.complete or bool(getattr(report, "repeated", ()))
                if report.complete and len(moved_ids) == before:
                    again = False  # nothing left that it found
            if not again:
                break
            until = clock.now() + timedelta(seconds=130)
            while clock.now() < until:
                if not self.step():
                    self._idle(until)
        return len(moved_ids)

    def _idle(self, until: datetime) -> None:
        """Nothing to receive: the clock jumps to the next event, or to ``until``."""
        clock = self.world.clock
        moments = [t for t in (self.queue.next_event_ms(), self.world.scheduler.next_event_ms()) if t]
        target = min([*moments, int(until.timestamp() * 1000)])
        clock.current = max(datetime.fromtimestamp(target / 1000, UTC), clock.current + timedelta(seconds=1))

    def redrive(self) -> None:
        """The operator's redrive of both queues (the DLQ first, as SQS moves it)."""
        self.move_dlq()
        self.redrive_exhausted()
        self.counters["claims-expired"] += self.world.dynamodb.expire()

    def run(
        self,
        *,
        max_iterations: int,
        budget_seconds: float,
        redrive_at: float | None = None,
        redrives: tuple[float, ...] | list[float] = (),
    ) -> None:
        started = time.monotonic()
        clock = self.world.clock
        start = clock.now()
        pending = sorted({*redrives, *(() if redrive_at is None else (redrive_at,))})
        for _ in range(max_iterations):
            if time.monotonic() - started > budget_seconds:
                raise AssertionError(f"fault run over its {budget_seconds} s budget")
            if pending and (clock.now() - start).total_seconds() >= pending[0]:
                pending.pop(0)
                self.redrive()
                continue
            if self.step():
                continue
            next_redrive = int((start.timestamp() + pending[0]) * 1000) if pending else None
            moments = [
                t
                for t in (self.queue.next_event_ms(), self.world.scheduler.next_event_ms(), next_redrive)
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
    deployment = variant.deployment()
    rng = random.Random(seed)
    clock = FrozenClock()
    world = World(clock, random.Random(seed + 1), ttl_rng=random.Random(seed + 4))
    suffix = ".fifo" if variant.fifo else ""
    dlq = world.queue(
        f"fr-dlq{suffix}",
        content_based_dedup=variant.fifo,
        retention_seconds=deployment.dlq_retention_seconds,
        max_message_size=deployment.max_message_size,
    )
    queue = world.queue(
        f"fr{suffix}",
        visibility_timeout=deployment.visibility_timeout,
        retention_seconds=deployment.retention_seconds,
        dlq=dlq,
        max_receive_count=deployment.max_receive_count,
        content_based_dedup=variant.fifo,
        max_message_size=deployment.max_message_size,
    )
    queue.duplicate_rate = variant.rates.duplicate_delivery
    exhausted = world.queue(
        f"fr-exhausted{suffix}",
        content_based_dedup=variant.fifo,
        retention_seconds=deployment.exhausted_retention_seconds,
        max_message_size=deployment.exhausted_max_message_size,
    )
    schedule_dlq = world.queue(
        "fr-schedule-dlq",
        retention_seconds=deployment.exhausted_retention_seconds,
        max_message_size=deployment.exhausted_max_message_size,
    )
    counts = Counts()
    fault_rng = random.Random(seed + 2)

    def faulty(client: Any, rates: Rates = variant.rates) -> Any:
        return Faulty(client, world, rates, fault_rng, counts, start=clock.now())

    clients = AwsClients.of(
        sqs=faulty(world.sqs), scheduler=faulty(world.scheduler), dynamodb=faulty(world.dynamodb)
    )
    settings = ConsumerSettings.from_env(
        deployment.environment(queue, exhausted, schedule_dlq), processor_required=False
    )
    processor = Processor(idempotent=variant.idempotent)
    logger = Logger(service="fault-run", level="CRITICAL", logger_handler=logging.NullHandler())
    metrics = ConsumerMetrics()
    metrics.disabled = True
    consumer = RetryingConsumer.from_settings(
        dataclasses.replace(settings, clock=clock),
        processor,
        clients=clients,
        rand=random.Random(seed),
        logger=logger,
        metrics=metrics,
    )
    bodies = make_bodies(variant, rng, max_bytes=deployment.max_message_size)
    invalid_sent = {i for i, (body, _) in enumerate(bodies) if producer_invalid(body)}
    for body, group in bodies:
        queue.send(body, group=group)  # producers' sends are not under test: no faults
    # The operator's client: a few API faults of every kind (each ends a run, and the operator runs
    # it again), none of the consumer's outages or dying stretches.
    operator_rates = dataclasses.replace(OPERATOR_RATES, duplicate_delivery=variant.rates.duplicate_delivery)
    driver = Driver(
        world,
        queue,
        consumer,
        variant.rates,
        random.Random(seed + 3),
        exhausted=exhausted,
        operator_sqs=faulty(world.sqs, operator_rates),
        keep_ids=variant.dlq_move_keeps_ids,
    )
    driver.batch_size = deployment.batch_size
    driver.processor = processor
    start = clock.now()
    driver.run(max_iterations=5_000_000, budget_seconds=budget_seconds, redrives=variant.moments())
    assert not queue.messages, "the run did not settle: messages left in the queue"
    assert not world.scheduler.schedules, "the run did not settle: schedules left"

    places: dict[int, list[str]] = defaultdict(list)
    for i, n in processor.successes.items():
        places[i] += ["processed"] * n
    outcomes: Counter[str] = Counter()
    own_invalid: list[int] = []
    stale = 0
    for msg in exhausted.bodies():
        i, outcome = identify(msg.body, msg.attributes)
        outcomes[outcome] += 1
        if _generation_of(msg.body) < processor.success_generation.get(i, -1):
            # A final copy of a generation its chain has left: a redrive processed the message in a
            # later one. Its own redrive is a provable duplicate (claims rule 2's complement), so it
            # is no final place but a stale duplicate, as the operator's next redrive run drops it.
            stale += 1
            continue
        places[i].append("exhausted")
        if outcome == "invalid-envelope" and i not in invalid_sent:
            own_invalid.append(i)
    for msg in dlq.bodies():
        places[identify(msg.body, msg.attributes)[0]].append("dlq")
    expired = [identify(m.body, m.attributes)[0] for q in (queue, dlq, exhausted) for m in q.expired]
    lost = sorted(i for i in range(variant.messages) if not places.get(i))
    two = {i: p for i, p in places.items() if len(set(p)) > 1}
    copies = sum(len(p) - len(set(p)) for p in places.values())
    chains: dict[int, int] = defaultdict(int)
    duplicates = 0
    for key, mids in processor.runs.items():
        # An attempt is in two chains when it ran to its end (its outcome recorded) in two copies; a
        # run whose outcome was never recorded did not (at least once: it runs again, see Processor).
        finished = list(mids)
        for copy in processor.unfinished.get(key, []):
            finished.remove(copy)
        chains[key[0]] = max(chains[key[0]], len(set(finished)))
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
        table=deployment.claims,
        two_places_one_chain=sorted(i for i in two if chains.get(i, 0) <= 1),
        stale_final_copies=stale,
        seed=seed,
        own_invalid=sorted(set(own_invalid)),
        redriven_dlq=driver.counters["redriven"],
        redriven_exhausted=driver.counters["redriven-exhausted"],
        redrive_runs=driver.counters["redrive-runs"],
        claims_expired=world.dynamodb.ttl_deleted,
        days=(clock.now() - start).total_seconds() / DAY,
        deployment=deployment,
        second_chain_ids=sorted(i for i, n in chains.items() if n > 1),
        renamed_reruns=sorted(processor.renamed_reruns),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variant", choices=sorted(VARIANTS), action="append")
    parser.add_argument("--messages", type=int)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--budget", type=float, default=600.0, help="wall-clock seconds per run")
    args = parser.parse_args(argv)
    failed = False
    for name in args.variant or sorted(VARIANTS):
        variant = VARIANTS[name]
        if args.messages:
            variant = dataclasses.replace(variant, messages=args.messages)
        report = run(variant, seed=args.seed, budget_seconds=args.budget)
        print(report.text())
        for problem in report.failures():
            print(f"  FAIL: {problem}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Where a failed or early record goes next: the consumer's decisions as pure functions of the record,
the policy and the queue. ``serverless-retry simulate`` calls these same functions.

Time. A decision reads no clock of its own: ``now`` is an argument, and the consumer passes the
record's own time for every transport that makes a copy (an SQS-delayed copy, a schedule, delay hops):
its ApproximateFirstReceiveTimestamp, else its SentTimestamp. Both stay the same when SQS delivers
that message again, so a redelivered record decides as its first delivery did: the same delay (jitter
is seeded per id and attempt), the same HTTP-date Retry-After, the same max_age verdict, the same due
time, a byte-identical copy. In-place retries (the visibility transport, FIFO ``ordered``) count
attempts by SQS receives, so every receive is a new attempt and they take the invocation's time.

Expiry. SQS deletes a message ``retention`` seconds after it was sent, wherever it is. A retry that
waits inside the same message (in place, or a FIFO copy hidden until due) must be visible again well
before that; when it would not be, the message goes to the retry-exhausted queue with the reason
instead of silently expiring. A copy is a new message with a fresh retention, so a copy's single wait
is what must fit: an SQS delay longer than the retention becomes delay hops.
"""

# (No ``from __future__ import annotations``: class annotations stay real types, which a NamedTuple,
# TypedDict or dataclass reads at import far cheaper than strings typing compiles into ForwardRefs.)
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from serverless_retry.backoff import KeyedUniform
from serverless_retry.envelope import Incoming, Outcome, encode_next_envelope, parse_time, sqs_message_size
from serverless_retry.policy import SQS_MAX_DELAY_SECONDS, VISIBILITY_MAX_SECONDS, Decision, RetryPolicy

if TYPE_CHECKING:
    from serverless_retry.signing import EnvelopeSigner

__all__ = [
    "DEFAULT_RETENTION_SECONDS",
    "DUE_SKEW_MARGIN_SECONDS",
    "DUE_TOLERANCE_SECONDS",
    "EXPIRY_MARGIN_SECONDS",
    "VISIBILITY_TIMEOUT_CAP",
    "Copy",
    "CopyTransport",
    "Final",
    "InPlace",
    "QueueFacts",
    "RecordFacts",
    "Step",
    "Wait",
    "arrival",
    "decision_time",
    "expiry_problem",
    "hop_limit",
    "latest_due",
    "plan_failure",
]

DEFAULT_RETENTION_SECONDS = 345_600  # SQS's default MessageRetentionPeriod (4 days)
# A retry must be visible this long before its message expires: time for the event source mapping to
# receive it and the function to run (AWS allows a function 900 s; most retry in far less).
EXPIRY_MARGIN_SECONDS = 60
# ChangeMessageVisibility may make a message's total invisibility at most 12 h *from its receipt*. The
# call comes after the batching window (<= 300 s) and within the invocation (<= 900 s), so stay 20 min
# under the limit: a larger value would be refused and the record would come back far too early.
VISIBILITY_TIMEOUT_CAP = VISIBILITY_MAX_SECONDS - 1_200
# A copy that arrives at most this early is due (SQS delays and at() have second precision).
DUE_TOLERANCE_SECONDS = 1
# latest_due: room for the clocks of the Lambda instance that decided a retry and of the one that
# receives its copy to disagree, and for due times rounded up to the second. Five minutes: far more
# than NTP-synchronised hosts drift, far less than a copy due in 2099.
DUE_SKEW_MARGIN_SECONDS = 300

CopyTransport = Literal["sqs-delay", "sqs-hops", "scheduler"]

# The facts and steps below are NamedTuples, not frozen dataclasses: as immutable, but a frozen
# dataclass costs about 0.6 ms to define (at every cold start) and sets each field through
# object.__setattr__ on every instance, on the path of every failed record.


class QueueFacts(NamedTuple):
    """What the decisions need to know about the source queue and the consumer's set-up."""

    fifo: bool = False
    in_place: bool = False  # retries keep the message (visibility timeout); attempts = SQS receives
    retention_seconds: int = DEFAULT_RETENTION_SECONDS
    max_message_bytes: int = 262_144
    scheduler: bool = True  # a schedule group and role are configured


def _millis(value: object) -> datetime | None:
    if type(value) is str:  # as SQS writes it; a batch's records were mostly received together
        moment = _MOMENTS.get(value)
        if moment is None:
            if len(_MOMENTS) >= 256:
                _MOMENTS.clear()
            moment = _MOMENTS[value] = _parse_millis(value)
        return moment
    return None if value is None else _parse_millis(value)


def _parse_millis(value: object) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(str(value)) / 1000, UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


_MOMENTS: dict[str, datetime | None] = {}


class RecordFacts(NamedTuple):
    """The parts of an SQS record that decisions read (system attributes, not the body)."""

    message_id: str
    receive_count: int = 1
    sent_at: datetime | None = None
    first_received_at: datetime | None = None
    group_id: str | None = None

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> "RecordFacts":
        attributes = record.get("attributes")
        if type(attributes) is not dict and not isinstance(attributes, Mapping):
            attributes = {}
        try:
            receive_count = int(attributes.get("ApproximateReceiveCount", 1))
        except (TypeError, ValueError):
            receive_count = 1
        # (not max(1, ...): the builtin costs more than the record's other reads)
        if receive_count < 1:  # noqa: PLR1730
            receive_count = 1
        group = attributes.get("MessageGroupId")
        message_id = record.get("messageId", "")
        sent, first = attributes.get("SentTimestamp"), attributes.get("ApproximateFirstReceiveTimestamp")
        # (_millis's cache read first, here: a batch's records mostly share their times)
        sent_at = _MOMENTS.get(sent) if type(sent) is str else None
        first_at = _MOMENTS.get(first) if type(first) is str else None
        # Positional: one is made per failed record, and keywords cost a NamedTuple a third more.
        return tuple.__new__(
            cls,
            (
                message_id if type(message_id) is str else str(message_id),
                receive_count,
                _millis(sent) if sent_at is None else sent_at,
                _millis(first) if first_at is None else first_at,
                str(group) if group else None,
            ),
        )

    def expires_at(self, retention_seconds: int) -> datetime | None:
        return None if self.sent_at is None else self.sent_at + timedelta(seconds=retention_seconds)


def decision_time(
    record: RecordFacts,
    clock_now: datetime | Callable[[], datetime],
    *,
    in_place: bool,
    incoming: Incoming | None = None,
) -> datetime:
    """The "now" of every decision about this record (see the module docstring). A copy is never
    decided before it was due: one that waited hidden in the queue was first received early.
    ``clock_now`` is the invocation's time, or a clock's ``now`` to read it only when the decision
    takes it (a failed record that carries its own time does not pay for reading the clock)."""
    if in_place:
        return clock_now if isinstance(clock_now, datetime) else clock_now()
    now = record.first_received_at or record.sent_at
    if now is None:
        now = clock_now if isinstance(clock_now, datetime) else clock_now()
    due_text = incoming.meta.get("due_at") if incoming is not None and incoming.meta is not None else None
    return max(now, parse_time(due_text)) if due_text else now


def latest_due(policy: RetryPolicy, now: datetime) -> datetime:
    """The latest due time a copy arriving at ``now`` can carry when this policy planned it.

    A retry is due at most the policy's largest delay after its decision, which came before the copy
    arrived: ``now`` + that delay + DUE_SKEW_MARGIN_SECONDS. A copy due later (say in 2099: a
    hand-made or corrupted envelope) is invalid: otherwise it would be re-delayed every 900 s until it
    expires, and every copy of it after that, for ever.

    Not bounded by the queue's retention: a wait longer than the retention is legitimate (a schedule,
    or hops that each start a fresh message), and the early copy of an in-place or FIFO wait that
    would expire is sent again as a fresh message (see ``arrival``). Lowering a backoff's max_seconds
    (by more than the margin) while copies are in flight makes those due beyond the new cap invalid:
    they go to the retry-exhausted queue with the reason.
    """
    return now + timedelta(seconds=policy.max_delay_seconds + DUE_SKEW_MARGIN_SECONDS)


@lru_cache(maxsize=64)  # asked for every copy; a consumer has one queue
def hop_limit(retention_seconds: int) -> int:
    """The longest single SQS delay a copy may take: 900 s, and well inside the queue's retention."""
    margin = min(EXPIRY_MARGIN_SECONDS, retention_seconds // 2)
    return max(1, min(SQS_MAX_DELAY_SECONDS, retention_seconds - margin))


def expiry_problem(record: RecordFacts, retention_seconds: int, visible_again: datetime) -> str | None:
    """Why waiting until ``visible_again`` inside this very message would lose it, or None."""
    expires = record.expires_at(retention_seconds)
    if expires is None or visible_again + timedelta(seconds=EXPIRY_MARGIN_SECONDS) <= expires:
        return None
    return (
        f"the next attempt would come at {visible_again:%Y-%m-%dT%H:%M:%SZ}, after the message expires from "
        f"the queue at {expires:%Y-%m-%dT%H:%M:%SZ} (retention {retention_seconds} s from SentTimestamp)"
    )


class Final(NamedTuple):
    """To the retry-exhausted queue."""

    outcome: Outcome
    reason: str
    decision: Decision | None = None


class InPlace(NamedTuple):
    """Keep the message: hide it for ``timeout_seconds`` and hand it back (batchItemFailures)."""

    timeout_seconds: int
    decision: Decision


class Copy(NamedTuple):
    """A copy of the next attempt (the envelope ``body``), due at ``due_at``."""

    transport: CopyTransport
    delay_seconds: int
    due_at: datetime
    body: str
    decision: Decision


Step = Final | InPlace | Copy
_tuple_new = tuple.__new__


class Wait(NamedTuple):
    """A copy that arrived before it is due: it waits again without reaching the processor.

    ``hide_seconds`` set: hide this very message that long and hand it back (a FIFO queue has no
    per-message delay). None: send the copy again with an SQS delay (<= hop_limit) and let this one go.
    """

    due_at: datetime
    remaining_seconds: int
    hide_seconds: int | None = None


def _ceil_second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0) + timedelta(seconds=1) if moment.microsecond else moment


def _due(now: datetime, delay: int) -> datetime:
    """``now`` + ``delay`` seconds, rounded up to the second (SQS delays and at() count whole seconds)."""
    # A batch's records share their decision time (the same datetime, from _millis), so its ceiling is
    # remembered: looking it up costs less than the timedelta that rounding it builds.
    ceiling = _CEILINGS.get(now)
    if ceiling is None or ceiling.tzinfo is not now.tzinfo:  # (one moment in two zones: one key)
        if len(_CEILINGS) >= 256:
            _CEILINGS.clear()
        ceiling = _CEILINGS[now] = _ceil_second(now)
    return ceiling + _seconds(delay)


_CEILINGS: dict[datetime, datetime] = {}


def _seconds(n: int) -> timedelta:
    # A retry's delays are a few distinct values (per rule and attempt): their timedeltas, remembered.
    span = _SPANS.get(n)
    if span is None:
        if len(_SPANS) >= 1024:
            _SPANS.clear()
        span = _SPANS[n] = timedelta(seconds=n)
    return span


_SPANS: dict[int, timedelta] = {}


def _retransport(decision: Decision, transport: str, seconds: int) -> Decision:
    """The decision with the transport the queue really uses (its reason says so too)."""
    if decision.transport == transport and decision.delay_seconds == seconds:
        return decision
    tail = decision.reason.split(" (", 1)[1] if " (" in decision.reason else ""
    reason = f"retry {decision.attempt + 1} in {seconds} s via {transport}" + (f" ({tail}" if tail else "")
    return decision._replace(transport=transport, delay_seconds=seconds, reason=reason)  # type: ignore[arg-type]


def _outcome(decision: Decision) -> Outcome:
    return "exhausted" if decision.action == "exhausted" else "non-retryable"


def plan_failure(
    policy: RetryPolicy,
    queue: QueueFacts,
    record: RecordFacts,
    incoming: Incoming,
    error: BaseException,
    *,
    now: datetime,
    seed: int = 0,
    signer: "EnvelopeSigner | None" = None,
) -> Step:
    """What to do with a record whose processing failed, decided at ``now`` (see decision_time); the
    next copy signed by ``signer`` (with the claims table: see the signing module)."""
    context = incoming.context
    attempt = context.attempt
    first_failed_at = context.first_failed_at
    if first_failed_at is None:
        # In place, attempt n > 1 of an original: its first attempt was its first receive.
        first = record.first_received_at if queue.in_place and attempt > 1 else None
        first_failed_at = min(first, now) if first is not None else now
    decision = policy.decide(
        error,
        attempt=attempt,
        first_failed_at=first_failed_at,
        now=now,
        rand=KeyedUniform(f"{seed}:{context.id}:{attempt}"),
        previous_delay=context.previous_delay if context.history else None,  # (a property call saved)
    )
    if decision.action != "retry":
        return Final(_outcome(decision), decision.reason, decision)

    if queue.in_place:
        timeout = min(decision.delay_seconds, VISIBILITY_TIMEOUT_CAP)
        decision = _retransport(decision, "visibility", timeout)
        problem = expiry_problem(record, queue.retention_seconds, now + timedelta(seconds=timeout))
        if problem is not None:
            return Final("exhausted", problem, decision)
        return InPlace(timeout, decision)

    delay = decision.delay_seconds
    transport: CopyTransport
    if decision.transport in {"sqs-hops", "visibility"}:
        transport = "sqs-hops"  # (visibility is always in place; kept total for the type checker)
    elif queue.fifo:
        # A FIFO queue has no per-message delay: the Scheduler carries the group id, or hops if none.
        transport = "scheduler" if queue.scheduler else "sqs-hops"
    elif decision.transport == "scheduler":
        transport = "scheduler" if queue.scheduler else "sqs-hops"
    else:
        transport = "sqs-delay" if delay <= hop_limit(queue.retention_seconds) else "sqs-hops"
    if decision.transport != transport:  # (else the decision stands as it is)
        decision = _retransport(decision, transport, delay)
    due_at = _due(now, delay)
    body = encode_next_envelope(incoming, decision, error, now=now, due_at=due_at, signer=signer)
    if sqs_message_size(body) > queue.max_message_bytes:
        reason = (
            f"the retry envelope does not fit the queue's maximum message size of "
            f"{queue.max_message_bytes} bytes"
        )
        return Final("too-large-to-retry", reason, decision)
    return _tuple_new(Copy, (transport, delay, due_at, body, decision))  # (positional: as RecordFacts)


def arrival(incoming: Incoming, record: RecordFacts, queue: QueueFacts, *, now: datetime) -> Wait | None:
    """None when the record is due (process it); a Wait when it is a copy that arrived early. ``now``
    is the invocation's time: whether a copy is due is a question about the present."""
    meta = incoming.meta
    if meta is None or "due_at" not in meta:
        return None
    due_at = parse_time(meta["due_at"])
    remaining = (due_at - now).total_seconds()
    if remaining <= DUE_TOLERANCE_SECONDS:
        return None
    seconds = math.ceil(remaining)
    if not queue.fifo:
        return Wait(due_at, seconds)
    hide = min(seconds, VISIBILITY_TIMEOUT_CAP)
    if expiry_problem(record, queue.retention_seconds, now + timedelta(seconds=hide)) is None:
        return Wait(due_at, seconds, hide)
    return Wait(due_at, seconds)  # this message would expire first: a fresh copy waits instead

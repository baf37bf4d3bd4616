"""Redrive out of a retry-exhausted queue or a DLQ, and a look into one that leaves everything in place.

Order of operations of a redrive, for every message:
1. receive it, hidden (visibility timeout) so one pass never sees it twice;
2. decide by the filters; a skipped message stays hidden until the pass ends, then every message the
   pass did not move is released at once (visibility 0): it is where it was, visible again;
3. wait for the rate (``rate`` messages per second at most, measured from the previous send);
4. send it to the destination, *then* delete it here. A crash between the two leaves a duplicate at
   worst (FIFO destinations drop it: the deduplication id is derived from this message's id), never
   a loss;
5. a send refused for this message alone (bad contents, too large) fails that message and the pass
   goes on; any other failure (throttling, outage, permissions) ends the pass: what is left stays.

One run moves each message at most once, and only what the queue held when it started
(:class:`RunMemory`, :func:`arrived_during_run`). With the consumer running, a redriven copy that
fails again comes back to the queue being redriven as a new message; the same pass must not take it:

- a message is *new to the run* when, at its first receive (this pass's: ``ApproximateReceiveCount``
  1), it had been in the queue (``ApproximateFirstReceiveTimestamp - SentTimestamp``, both stamped by
  SQS) for more than ``ARRIVAL_MARGIN_SECONDS`` less than the pass had been running when it asked for
  it (on the redrive's clock: the emulator's logical one under it). Durations on one clock each, so no
  skew between the redrive's host and SQS enters; the margin covers the milliseconds SQS rounds to and
  its hosts' own skew. A new message stays where it is (``arrived``), for a later run, and a poll that
  brings only such messages counts as an empty one, so the pass ends even while the queue fills;
- whatever the clocks say, a message is not moved when this run already moved its chain (the same
  retry id: one copy per chain per run, so a redrive never starts two copies of one message) or when
  its retry id is the message id a destination gave a copy this run sent (a copy with a fresh budget,
  or a plain message, failed again under its new id): ``repeated``, left in place.

What is sent back: by default the message keeps its id (the idempotency key), its attempt count and
its history, and comes back as a retry envelope of the next attempt, so a message that fails again
is exhausted at once instead of starting a second retry storm; ``reset_attempts`` sends the original
body and attributes as the producer sent them (a fresh budget, a new id). Messages that never were
serverless-retry envelopes (a plain DLQ) go back verbatim either way.

The other destination is a function (``to_function``): a record of a failed invocation (the
self-healing pattern's ``ExhaustedRecord``, or a Lambda on-failure destination record) is re-invoked
asynchronously in the function that failed, with the event as it first arrived and the retry state
continued (or fresh with ``reset_attempts``): :mod:`serverless_retry.selfheal.reinvoke`. Such a record
is refused for a queue (it is no message any queue's consumer takes), and any other message for a
function: it stays in place, counted as failed, with the reason.

``StartMessageMoveTask`` (``native``) is SQS's own redrive: see :mod:`serverless_retry.redrive.native`.
Decoding is :func:`decode`; every summary and filter is built on what it returns.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from serverless_retry.clock import Clock, SystemClock
from serverless_retry.envelope import (
    ENVELOPE_KEY,
    ERROR_TEXT_LIMIT,
    MAX_ATTEMPT,
    api_attributes,
    fits,
    waiting_copy,
)
from serverless_retry.redrive.options import RedriveOptions
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.reinvoke import NotReinvocable, reinvocation
from serverless_retry.terminal import TerminalView, read_terminal

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from serverless_retry.selfheal.types import FailureDetail

__all__ = [
    "AGE_BUCKETS",
    "ARRIVAL_MARGIN_SECONDS",
    "ExhaustedMessage",
    "Inspection",
    "OutgoingMessage",
    "RedriveReport",
    "Resolver",
    "RunMemory",
    "Scan",
    "arrived_during_run",
    "attribute_int",
    "decode",
    "describe_error",
    "inspect",
    "lambda_sender",
    "matches",
    "outgoing_message",
    "redrive",
    "refusal",
    "summarize",
]

# Attributes EventBridge Scheduler puts on a dead-letter event: they describe the failed delivery,
# not the message, and do not go back with it.
SCHEDULER_DLQ_ATTRIBUTES = frozenset(
    {
        "ERROR_CODE",
        "ERROR_MESSAGE",
        "EXHAUSTED_RETRY_CONDITION",
        "RETRY_ATTEMPTS",
        "SCHEDULE_ARN",
        "TARGET_ARN",
    }
)
# SendMessage (and, to a function, Invoke) errors that concern this message only; anything else ends
# the pass. A function that no longer exists concerns the records of that function alone.
MESSAGE_ERRORS = frozenset(
    {
        "InvalidMessageContents",
        "InvalidParameterValue",
        "InvalidAttributeName",
        "InvalidAttributeValue",
        "MessageTooLong",
        "RequestTooLargeException",
        "InvalidRequestContentException",
        "ResourceNotFoundException",
    }
)
DEFAULT_MAX_MESSAGE_BYTES = 262_144
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # dates only records too broken to be used
# Age buckets of inspect, by time in the queue; SQS keeps a message 14 days at most.
AGE_BUCKETS: tuple[tuple[float, str], ...] = (
    (3600, "< 1 h"),
    (86_400, "1 h - 1 d"),
    (3 * 86_400, "1 - 3 d"),
    (7 * 86_400, "3 - 7 d"),
    (math.inf, ">= 7 d"),
)


# --- decoding ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExhaustedMessage:
    """One message of a retry-exhausted queue or a DLQ, decoded.

    ``kind``: ``envelope`` (a final envelope: outcome, reason, history), ``compact`` (the original body
    verbatim with the outcome in a ``serverless_retry`` attribute), ``retry-envelope`` (a retry copy
    that SQS or the Scheduler dead-lettered on its way), ``self-healing`` (the self-healing pattern's
    record of an event given up on), ``plain`` (anything else). ``origin`` says how it got here:
    ``serverless-retry``, ``self-healing``, ``sqs-redrive`` (SQS's redrive policy moved it),
    ``scheduler-dlq`` (a schedule could not deliver it), ``lambda-destination`` (an on-failure
    destination record), or ``unknown``. ``failure`` is the failed invocation a ``self-healing``
    record or a destination record describes (``{payload, meta}``): what ``to_function`` re-invokes.
    """

    message_id: str
    receipt_handle: str
    outcome: str  # a serverless-retry outcome, or "unknown" (read_terminal's word for any other message)
    reason: str
    envelope_id: str
    attempt: int
    error_type: str
    error: str
    first_failed_at: str
    source: str
    origin: str
    kind: str
    sent_at: datetime | None
    body: str  # the original body (unwrapped)
    attributes: dict[str, Any]  # the original attributes
    raw_body: str  # the body as it is in this queue
    raw_attributes: dict[str, Any] = field(default_factory=dict)
    history: tuple[dict[str, Any], ...] = ()
    exhausted_at: str = ""
    group_id: str | None = None
    receive_count: int = 0
    failure: FailureDetail | None = None
    # A claim-check pointer read without its payload (kind "pointer"): why; "" otherwise.
    payload_problem: str = ""

    def age_seconds(self, now: datetime) -> float | None:
        """Seconds since SQS first accepted this message (SentTimestamp; SQS keeps it when its redrive
        policy moves a message to a DLQ)."""
        return None if self.sent_at is None else max(0.0, (now - self.sent_at).total_seconds())


def _sent_at(system: Mapping[str, str]) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(system["SentTimestamp"]) / 1000, UTC)
    except (KeyError, ValueError, OverflowError):
        return None


def _string_attribute(attrs: Mapping[str, Any], name: str) -> str:
    value = attrs.get(name)
    return str(value.get("StringValue", "")) if isinstance(value, Mapping) else ""


def _destination_record(data: object) -> dict[str, str] | None:
    """A Lambda on-failure destination record: what failed, why, and the function."""
    if not isinstance(data, dict):
        return None
    context = data.get("requestContext")
    if not isinstance(context, dict) or "functionArn" not in context or "condition" not in context:
        return None
    payload = data.get("responsePayload")
    payload = payload if isinstance(payload, dict) else {}
    return {
        "source": str(context.get("functionArn", "")),
        "reason": str(context.get("condition", "")),
        "error_type": str(payload.get("errorType", "")),
        "error": str(payload.get("errorMessage", ""))[:ERROR_TEXT_LIMIT],
    }


# A pointer's view -> (the whole message's view, the payload text): payload_store.read_through, bound.
Resolver = Callable[[TerminalView], tuple[TerminalView, str | None]]


def decode(message: MessageTypeDef, resolve: Resolver | None = None) -> ExhaustedMessage:
    """Decode a received message (``MessageSystemAttributeNames=["All"]`` gives the timestamps).

    Terminal forms are read by :func:`serverless_retry.terminal.read_terminal`, the one reader of every
    form the consumer ever wrote; what it calls ``bare`` is then looked at as a plain DLQ message. A
    claim-check pointer is read through ``resolve`` (``payload_store.resolve_pointer`` bound to the
    deployment's archive); without one, or when its payload cannot be read, it is kind ``pointer``:
    outcome and reason known, the original not, so it is never redriven (:func:`refusal`)."""
    raw_body = message.get("Body", "")
    raw_attrs: dict[str, Any] = dict(message.get("MessageAttributes", {}))
    system: Mapping[str, str] = message.get("Attributes", {})  # type: ignore[assignment]
    message_id = message.get("MessageId", "")
    view = read_terminal(raw_body, raw_attrs, message_id=message_id)
    payload_problem = ""
    if view.form == "pointer":
        payload_problem = "its payload is in the archive: read it with the archive's bucket given"
        if resolve is not None:
            try:
                view, text = resolve(view)
            except Exception as exc:  # PayloadError, or S3 itself: the message stays where it is
                payload_problem = f"its payload could not be read: {exc}"
            else:
                # From here on the message is the final envelope as the consumer wrote it (what a
                # redrive sends back when it fits), not the pointer this queue holds.
                payload_problem, raw_body, raw_attrs = "", text or raw_body, {}
    final = view.outcome != "unknown"
    failure = view.detail if view.form == "self-healing" else _failed_invocation(raw_body, message_id)
    if payload_problem:
        kind = "pointer"
    elif view.form == "envelope":
        kind = "envelope" if final else "retry-envelope"  # a retry copy SQS or the Scheduler dead-lettered
    elif final and failure is not None:
        # An ExhaustedRecord, or the enrichment's last resort (a destination record with its outcome).
        kind = "self-healing"
    elif final:
        kind = "compact"  # framed, or original+meta: the original verbatim, no history
    else:
        kind = "plain"
    fields: dict[str, Any] = {
        "outcome": view.outcome,
        "reason": view.reason,
        "envelope_id": view.id,
        "attempt": view.attempt,
        "error_type": view.error_type,
        "error": view.error,
        "first_failed_at": view.first_failed_at,
        "source": view.source,
        "origin": ("self-healing" if kind == "self-healing" else "serverless-retry") if final else "unknown",
        "exhausted_at": view.exhausted_at,
    }
    history: tuple[dict[str, Any], ...] = tuple(dict(h) for h in view.history)
    if kind == "retry-envelope" and view.history and not view.error_type:
        fields["error_type"], fields["error"] = view.history[-1]["error_type"], view.history[-1]["error"]
    if kind in ("plain", "retry-envelope"):
        _plain_fields(fields, raw_body, raw_attrs, system)
    if kind == "self-healing" and failure is not None and not fields["source"].startswith("arn:"):
        fields["source"] = str(failure["meta"].get("function_arn", fields["source"]))
    receive_count = system.get("ApproximateReceiveCount", "0")
    return ExhaustedMessage(
        message_id=message_id,
        receipt_handle=message.get("ReceiptHandle", ""),
        kind=kind,
        sent_at=_sent_at(system),
        body=view.body if kind != "plain" else raw_body,
        attributes=dict(view.attributes) if kind != "plain" else raw_attrs,
        raw_body=raw_body,
        raw_attributes=raw_attrs,
        history=history if kind in ("envelope", "retry-envelope") else (),
        group_id=system.get("MessageGroupId"),
        receive_count=int(receive_count) if receive_count.isdigit() else 0,
        failure=failure,
        payload_problem=payload_problem,
        **fields,
    )


def _failed_invocation(raw_body: str, message_id: str) -> FailureDetail | None:
    """The failed invocation a Lambda on-failure destination record describes; None for anything else
    (or a record too broken to say which function failed with which event)."""
    if '"requestContext"' not in raw_body:
        return None
    detail = failure_detail({"messageId": message_id, "body": raw_body}, _EPOCH)
    return None if detail["meta"]["problem"] else detail


def _plain_fields(
    fields: dict[str, Any], raw_body: str, raw_attrs: Mapping[str, Any], system: Mapping[str, str]
) -> None:
    """Where a message serverless-retry did not finish came from and, when it says so, what failed."""
    if system.get("DeadLetterQueueSourceArn"):
        fields["origin"], fields["source"] = "sqs-redrive", system["DeadLetterQueueSourceArn"]
    if "SCHEDULE_ARN" in raw_attrs or ("ERROR_CODE" in raw_attrs and "TARGET_ARN" in raw_attrs):
        fields["origin"] = "scheduler-dlq"
        fields["source"] = _string_attribute(raw_attrs, "SCHEDULE_ARN") or _string_attribute(
            raw_attrs, "TARGET_ARN"
        )
        fields["error_type"] = _string_attribute(raw_attrs, "ERROR_CODE")
        fields["error"] = _string_attribute(raw_attrs, "ERROR_MESSAGE")[:ERROR_TEXT_LIMIT]
        fields["reason"] = _string_attribute(raw_attrs, "EXHAUSTED_RETRY_CONDITION")
    try:
        data = json.loads(raw_body)
    except (ValueError, RecursionError):
        return
    record = _destination_record(data)
    if record is not None:
        fields["origin"] = "lambda-destination"
        fields.update(record)


# --- one pass over a queue --------------------------------------------------------------------------


def describe_error(exc: BaseException) -> str:
    """``Code: message`` for an AWS error, ``Type: message`` otherwise: one line, no traceback."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', type(exc).__name__)}: {error.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


ARRIVAL_MARGIN_SECONDS = 1.0  # see the module docstring: one run, what it found


def arrived_during_run(raw: MessageTypeDef, running_seconds: float) -> bool:
    """Whether ``raw``, just received, was sent to its queue after the pass that received it started,
    the pass having run ``running_seconds`` when it asked for it (see the module docstring). False
    when SQS gave no timestamps to tell by: the run's memory still keeps it from being moved twice."""
    system: Mapping[str, str] = raw.get("Attributes", {})  # type: ignore[assignment]
    if system.get("ApproximateReceiveCount") != "1":
        return False  # received before this pass asked: it was there before the pass started
    try:
        waited = (int(system["ApproximateFirstReceiveTimestamp"]) - int(system["SentTimestamp"])) / 1000
    except (KeyError, ValueError):
        return False
    return waited + ARRIVAL_MARGIN_SECONDS < running_seconds


class Scan:
    """One pass over a queue: each message is received once and stays hidden until :meth:`forget`
    (it was deleted) or :meth:`release_all`, which makes every other one visible again at once.

    A message whose visibility ran out during a long pass comes back with a new receipt handle; the
    newest handle is kept (a delete or release with an old one would not apply) and the message is
    not yielded twice. The pass ends after ``empty_polls`` receives in a row bring nothing new.

    With a ``clock``, the pass notes when it started and tells the messages sent to the queue after
    that (:meth:`arrived`, :func:`arrived_during_run`); a receive that brings only those is an empty
    one, so a queue that keeps filling does not keep the pass going.
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        *,
        visibility: int = 60,
        wait_seconds: int = 1,
        empty_polls: int = 2,
        batch_size: int = 10,
        clock: Clock | None = None,
        resolve: Resolver | None = None,
    ) -> None:
        self.sqs = sqs
        self.resolve = resolve
        self.queue_url = queue_url
        self.visibility = visibility
        self.wait_seconds = wait_seconds
        self.empty_polls = empty_polls
        self.batch_size = max(1, min(10, batch_size))
        self._held: dict[str, str] = {}  # message id -> newest receipt handle
        self.seen = 0
        self.clock = clock
        self.started = clock.now() if clock is not None else None
        self._arrived: set[str] = set()  # message ids sent to the queue after the pass started

    def arrived(self, message: ExhaustedMessage) -> bool:
        """Whether ``message`` was sent to the queue after this pass started (needs a ``clock``)."""
        return message.message_id in self._arrived

    def _running_seconds(self) -> float | None:
        if self.clock is None or self.started is None:
            return None
        return (self.clock.now() - self.started).total_seconds()

    def messages(self, limit: int | None = None) -> Iterator[ExhaustedMessage]:
        seen: set[str] = set()
        empties = 0
        while (limit is None or len(seen) < limit) and empties < self.empty_polls:
            wanted = self.batch_size if limit is None else min(self.batch_size, limit - len(seen))
            running = self._running_seconds()  # read before the receive: SQS stamps the receive after
            batch = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=wanted,
                VisibilityTimeout=self.visibility,
                WaitTimeSeconds=self.wait_seconds,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
            ).get("Messages", [])
            fresh = []
            found = False  # a message the queue held when the pass started
            for raw in batch:
                message_id = raw.get("MessageId", "")
                self._held[message_id] = raw.get("ReceiptHandle", "")
                if message_id not in seen:
                    seen.add(message_id)
                    fresh.append(raw)
                    if running is not None and arrived_during_run(raw, running):
                        self._arrived.add(message_id)
                    else:
                        found = True
            empties = 0 if found else empties + 1
            for raw in fresh:
                self.seen += 1
                yield decode(raw, self.resolve)

    def handle(self, message: ExhaustedMessage) -> str:
        return self._held.get(message.message_id, message.receipt_handle)

    def forget(self, message: ExhaustedMessage) -> None:
        self._held.pop(message.message_id, None)

    @property
    def held(self) -> int:
        return len(self._held)

    def release_all(self) -> list[str]:
        """Make every held message visible again now; returns the ids that could not be released
        (they come back by themselves when their visibility timeout ends)."""
        failed: list[str] = []
        items = list(self._held.items())
        for start in range(0, len(items), 10):
            chunk = items[start : start + 10]
            entries = [
                {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                for i, (_mid, handle) in enumerate(chunk)
            ]
            try:
                response = self.sqs.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)  # type: ignore[arg-type]
            except (ClientError, BotoCoreError):
                failed.extend(mid for mid, _ in chunk)
                continue
            failed.extend(chunk[int(f["Id"])][0] for f in response.get("Failed", []))
        self._held.clear()
        return failed


# --- inspect ----------------------------------------------------------------------------------------


def _age_bucket(age: float | None) -> str:
    if age is None:
        return "unknown"
    return next(label for limit, label in AGE_BUCKETS if age < limit)


@dataclass
class Inspection:
    queue_url: str
    scanned: int
    approximate_visible: int | None
    approximate_in_flight: int | None
    by_outcome: Counter[str]
    by_error_type: Counter[str]
    by_source: Counter[str]
    by_origin: Counter[str]
    by_age: dict[str, int]
    oldest: list[ExhaustedMessage]
    now: datetime
    limit_reached: bool = False
    not_released: list[str] = field(default_factory=list)
    max_receive_count: int | None = None  # this queue's own redrive policy: a receive counts


def summarize(messages: Sequence[ExhaustedMessage], now: datetime, *, oldest: int) -> dict[str, Any]:
    """Counts by outcome, error type, source, origin and age bucket, and the ``oldest`` oldest. Pure."""
    ages = [m.age_seconds(now) for m in messages]
    by_age = {label: 0 for _limit, label in AGE_BUCKETS}
    for age in ages:
        bucket = _age_bucket(age)
        by_age[bucket] = by_age.get(bucket, 0) + 1
    ordered = sorted(messages, key=lambda m: (m.sent_at is None, m.sent_at or now, m.message_id))
    return {
        "by_outcome": Counter(m.outcome for m in messages),
        "by_error_type": Counter(m.error_type or "-" for m in messages),
        "by_source": Counter(m.source or "-" for m in messages),
        "by_origin": Counter(m.origin for m in messages),
        "by_age": by_age,
        "oldest": ordered[:oldest],
    }


def attribute_int(attributes: Mapping[Any, str], name: str) -> int | None:
    value = attributes.get(name)
    return int(value) if value is not None and value.isdigit() else None


def inspect(
    sqs: SQSClient,
    queue_url: str,
    *,
    limit: int = 1000,
    oldest: int = 10,
    clock: Clock | None = None,
    wait_seconds: int = 1,
    visibility: int = 60,
    resolve: Resolver | None = None,
) -> Inspection:
    """Look at up to ``limit`` messages and put every one back at once (visibility 0)."""
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "RedrivePolicy",
        ],
    ).get("Attributes", {})
    max_receive: int | None = None
    if attributes.get("RedrivePolicy"):
        try:
            max_receive = int(json.loads(attributes["RedrivePolicy"]).get("maxReceiveCount"))
        except (ValueError, TypeError, AttributeError):
            max_receive = None
    scan = Scan(sqs, queue_url, visibility=visibility, wait_seconds=wait_seconds, resolve=resolve)
    messages: list[ExhaustedMessage] = []
    try:
        messages.extend(scan.messages(limit))
    finally:
        not_released = scan.release_all()
    now = (clock or SystemClock()).now()
    summary = summarize(messages, now, oldest=oldest)
    return Inspection(
        queue_url=queue_url,
        scanned=len(messages),
        approximate_visible=attribute_int(attributes, "ApproximateNumberOfMessages"),
        approximate_in_flight=attribute_int(attributes, "ApproximateNumberOfMessagesNotVisible"),
        now=now,
        limit_reached=len(messages) >= limit,
        not_released=not_released,
        max_receive_count=max_receive,
        **summary,
    )


# --- redrive ----------------------------------------------------------------------------------------


def _source_matches(wanted: str, source: str) -> bool:
    # An ARN, or its last part (a queue or function name) for convenience.
    return bool(source) and (wanted == source or source.rsplit(":", 1)[-1] == wanted)


def matches(message: ExhaustedMessage, options: RedriveOptions, now: datetime) -> bool:
    """Whether the filters of ``options`` select ``message`` (all given filters must hold)."""
    if options.outcomes and message.outcome not in options.outcomes:
        return False
    if options.error_types and message.error_type not in options.error_types:
        return False
    if options.sources and not any(_source_matches(s, message.source) for s in options.sources):
        return False
    if options.older_than is not None or options.newer_than is not None:
        age = message.age_seconds(now)
        if age is None:
            return False
        if options.older_than is not None and age <= options.older_than:
            return False
        if options.newer_than is not None and age >= options.newer_than:
            return False
    return True


@dataclass(frozen=True)
class OutgoingMessage:
    """What goes back for one message: body, attributes (envelope form) and how; for a function, the
    Invoke payload as the body and the FunctionName."""

    body: str
    attributes: dict[str, Any]
    form: str  # "next-attempt" (history kept), "original" (fresh budget), "verbatim" (as it was here)
    note: str = ""
    function: str | None = None  # to_function: the function to invoke asynchronously


def refusal(message: ExhaustedMessage, options: RedriveOptions) -> str | None:
    """Why ``message`` cannot go where ``options`` send it (it then stays in place); None when it can."""
    if message.kind == "pointer":
        return f"a claim-check pointer ({message.outcome}: {message.reason}): {message.payload_problem}"
    if options.to_function:
        if message.failure is None:
            return (
                f"not a record of a failed invocation ({message.kind} message): --to-function re-invokes "
                "the function a self-healing record or a Lambda destination record names; send it to a "
                "queue with --to-queue-url"
            )
        try:
            reinvocation(message.failure, fresh=options.reset_attempts, function=options.function)
        except NotReinvocable as exc:
            return str(exc)
        return None
    if message.kind == "self-healing":
        return (
            "a self-healing record: no queue's consumer takes it; re-invoke the function that failed "
            "with serverless-retry redrive --to-function"
        )
    return None


def outgoing_message(
    message: ExhaustedMessage,
    *,
    reset_attempts: bool,
    now: datetime,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    to_function: bool = False,
    function: str | None = None,
) -> OutgoingMessage:
    """The message to send back for ``message`` (see the module docstring); ``to_function``: the Invoke
    of the function that failed (or of ``function``). Raises NotReinvocable when it cannot be."""
    if to_function:
        if message.failure is None:
            raise NotReinvocable(f"not a record of a failed invocation ({message.kind} message)")
        again = reinvocation(message.failure, fresh=reset_attempts, function=function)
        return OutgoingMessage(again.payload, {}, again.form, again.note, function=again.function)
    original = OutgoingMessage(message.body, dict(message.attributes), "original")
    if message.kind == "plain":
        attributes = dict(message.raw_attributes)
        if message.origin == "scheduler-dlq":
            attributes = {k: v for k, v in attributes.items() if k not in SCHEDULER_DLQ_ATTRIBUTES}
        return OutgoingMessage(message.raw_body, attributes, "verbatim")
    if message.kind == "retry-envelope":
        if reset_attempts:
            return original
        # The same copy, carried on: naming the DLQ message it was lets it take that message's claim
        # of its attempt at once, instead of waiting out the claims' takeover grace.
        try:
            carried = waiting_copy(message.raw_body, claimant=message.message_id)
        except (ValueError, KeyError, TypeError):
            carried = message.raw_body
        if not message.message_id or not fits(carried, max_bytes):
            carried = message.raw_body
        return OutgoingMessage(carried, {}, "verbatim")
    if reset_attempts:
        return original
    if message.kind == "compact":
        return OutgoingMessage(
            message.body,
            dict(message.attributes),
            "original",
            "history not kept: the message was too large for an envelope",
        )
    if message.attempt + 1 > MAX_ATTEMPT:
        return OutgoingMessage(
            message.body,
            dict(message.attributes),
            "original",
            f"attempt {message.attempt} is the last one an envelope can carry",
        )
    # The final envelope as the consumer wrote it, signature and all: the consumer reads it as its
    # chain's next attempt in the next generation (envelope.unwrap), so the redriven copy takes its
    # chain's claim over the ended one, and duplicates of one redrive still meet each other's claims.
    # Rebuilding it here would need the deployment's signing key.
    if not fits(message.raw_body, max_bytes):
        return OutgoingMessage(
            message.body,
            dict(message.attributes),
            "original",
            f"history not kept: the envelope would exceed the destination's {max_bytes} bytes",
        )
    return OutgoingMessage(message.raw_body, {}, "next-attempt")


class Pacer:
    """At most ``rate`` calls per second: each call waits until one interval after the previous one
    (no bursts to catch up after a slow call)."""

    def __init__(
        self, rate: float | None, monotonic: Callable[[], float], sleep: Callable[[float], None]
    ) -> None:
        self.interval = 0.0 if rate is None else 1.0 / rate
        self.monotonic = monotonic
        self.sleep = sleep
        self._next: float | None = None

    def wait(self) -> None:
        if not self.interval:
            return
        now = self.monotonic()
        if self._next is not None and self._next > now:
            self.sleep(self._next - now)
            now = self._next
        self._next = now + self.interval


class RunMemory:
    """What one run has moved (or, in a dry run, would move): each chain's retry id, and the message
    ids the destination gave the copies sent. A message of a chain already moved, or whose retry id is
    one of those ids (a copy sent with a fresh budget, or a plain message, failed again under its new
    id), is not moved again by the same run."""

    def __init__(self) -> None:
        self._chains: dict[str, str] = {}  # retry id -> the message id of the copy moved
        self._states: dict[str, tuple[int, int, str]] = {}  # retry id -> (generation, attempt, body) moved
        self._sent: set[str] = set()

    def duplicate_of(self, message: ExhaustedMessage) -> str | None:
        """The message id of the copy this run moved of which ``message`` is a duplicate: a final copy of
        the same chain, at the same generation and attempt, with the same body (its last receive ran
        twice, so it was given up on twice). Moving it too would run the chain twice; leaving it would
        leave a message processed by the redrive in the retry-exhausted queue as well."""
        chain = message.envelope_id
        state = self._states.get(chain) if chain and message.kind == "envelope" else None
        if state is None or state != (_generation(message), message.attempt, message.body):
            return None
        return self._chains.get(chain)

    def repeat(self, message: ExhaustedMessage) -> str | None:
        """Why this run must not move ``message``; None when it may."""
        chain = message.envelope_id
        if chain and chain in self._chains:
            return (
                f"another copy of its chain (message {self._chains[chain]}) was moved by this run: one "
                "copy per chain, so no message runs as two chains"
            )
        if chain and chain in self._sent:
            return (
                "this run's own copy, failed again under the id it was sent with: not moved twice in one run"
            )
        return None

    def took(self, message: ExhaustedMessage, sent_id: str | None = None) -> None:
        if message.envelope_id:
            self._chains.setdefault(message.envelope_id, message.message_id)
            if message.kind == "envelope":
                self._states.setdefault(
                    message.envelope_id, (_generation(message), message.attempt, message.body)
                )
        if sent_id:
            self._sent.add(sent_id)


def _generation(message: ExhaustedMessage) -> int:
    """The chain generation a final envelope carries (0 when none)."""
    try:
        value = json.loads(message.raw_body)[ENVELOPE_KEY].get("generation", 0)
    except (ValueError, TypeError, KeyError, AttributeError):
        return 0
    return value if isinstance(value, int) else 0


@dataclass
class RedriveReport:
    dry_run: bool = False
    moved: list[ExhaustedMessage] = field(default_factory=list)  # or "would move" in a dry run
    skipped: list[ExhaustedMessage] = field(default_factory=list)
    failed: list[tuple[ExhaustedMessage, str]] = field(default_factory=list)
    duplicated: list[tuple[ExhaustedMessage, str]] = field(default_factory=list)  # sent, not deleted
    notes: list[tuple[ExhaustedMessage, str]] = field(default_factory=list)
    stopped: str | None = None  # why the pass ended early; the rest stayed in place
    not_released: list[str] = field(default_factory=list)
    send_times: list[float] = field(default_factory=list)  # monotonic, after each send
    # Selected, but sent to the queue after the run started (this run's own copies failing again among
    # them): left in place for a later run.
    arrived: list[ExhaustedMessage] = field(default_factory=list)
    # Selected, but of a chain this run already moved (RunMemory.repeat says how): left in place.
    repeated: list[tuple[ExhaustedMessage, str]] = field(default_factory=list)
    # Duplicates of a final copy this run moved (same chain, generation, attempt and body), deleted:
    # (message, the id of the copy moved).
    dropped: list[tuple[ExhaustedMessage, str]] = field(default_factory=list)
    started_at: datetime | None = None  # on the redrive's clock
    found_at_start: int | None = None  # the queue's approximate count (visible + in flight) then

    @property
    def redriven(self) -> list[ExhaustedMessage]:
        return self.moved

    @property
    def complete(self) -> bool:
        return not self.failed and not self.duplicated and self.stopped is None

    def measured_rate(self) -> float | None:
        """Sends per second between the first and the last send."""
        if len(self.send_times) < 2:
            return None
        span = self.send_times[-1] - self.send_times[0]
        return (len(self.send_times) - 1) / span if span > 0 else None

    def counts(self) -> dict[str, int]:
        return {
            "moved": len(self.moved),
            "skipped": len(self.skipped),
            "failed": len(self.failed),
            "duplicated": len(self.duplicated),
            "dropped": len(self.dropped),
            "arrived": len(self.arrived),
            "repeated": len(self.repeated),
        }


# Sends one message; returns the message id the destination gave it when there is one (RunMemory).
Sender = Callable[[ExhaustedMessage, OutgoingMessage], str | None]


def sqs_sender(sqs: SQSClient, queue_url: str, *, message_group_id: str | None = None) -> Sender:
    """Send to an SQS queue; a FIFO queue gets a group id (given, the message's own, or its id) and a
    deduplication id derived from the redriven message's id, so a resend after a crash is dropped."""
    fifo = queue_url.endswith(".fifo")

    def send(message: ExhaustedMessage, outgoing: OutgoingMessage) -> str | None:
        params: dict[str, Any] = {"QueueUrl": queue_url, "MessageBody": outgoing.body}
        attributes = api_attributes(outgoing.attributes)
        if attributes:
            params["MessageAttributes"] = attributes
        if fifo:
            params["MessageGroupId"] = message_group_id or message.group_id or message.envelope_id[:128]
            params["MessageDeduplicationId"] = hashlib.sha256(
                f"redrive:{message.message_id}".encode()
            ).hexdigest()
        return sqs.send_message(**params).get("MessageId")

    return send


def lambda_sender(lambda_client: Any) -> Sender:
    """Invoke the function asynchronously (InvocationType Event), as the self-healing redrive does: its
    event invoke config and on-failure destination take over from there."""

    def send(message: ExhaustedMessage, outgoing: OutgoingMessage) -> str | None:
        if outgoing.function is None:
            raise NotReinvocable(f"{message.message_id}: no function to invoke")
        response = lambda_client.invoke(
            FunctionName=outgoing.function, InvocationType="Event", Payload=outgoing.body.encode("utf-8")
        )
        if response.get("StatusCode") != 202:
            raise RuntimeError(f"asynchronous Invoke answered {response.get('StatusCode')}, not 202")
        return None  # the re-invoked event keeps its retry id (selfheal.reinvoke): RunMemory knows it

    return send


def _message_level(exc: BaseException) -> bool:
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code", "") in MESSAGE_ERRORS
    # Our own conversion of a corrupt attribute, or boto3 refusing the parameters before sending.
    return isinstance(exc, ValueError | KeyError | TypeError | ParamValidationError)


def _destination_max_bytes(sqs: SQSClient, queue_url: str) -> int:
    try:
        value = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["MaximumMessageSize"])[
            "Attributes"
        ]
        return int(value.get("MaximumMessageSize", DEFAULT_MAX_MESSAGE_BYTES))
    except (ClientError, BotoCoreError, ValueError, KeyError):
        return DEFAULT_MAX_MESSAGE_BYTES  # the smallest SQS maximum: an envelope that fits it fits any queue


def _found_at_start(sqs: SQSClient, queue_url: str) -> int | None:
    try:
        attributes = sqs.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        ).get("Attributes", {})
    except (ClientError, BotoCoreError):
        return None  # a count for the report only: the receives say what is there
    visible = attribute_int(attributes, "ApproximateNumberOfMessages")
    hidden = attribute_int(attributes, "ApproximateNumberOfMessagesNotVisible")
    return None if visible is None else visible + (hidden or 0)


def redrive(
    sqs: SQSClient,
    options: RedriveOptions,
    *,
    clock: Clock | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    sender: Sender | None = None,
    lambda_client: Any = None,
    select: Callable[[ExhaustedMessage], bool] | None = None,
    on_progress: Callable[[RedriveReport], None] | None = None,
    should_stop: Callable[[], str | None] | None = None,
    wait_seconds: int = 1,
    visibility: int = 120,
    resolve: Resolver | None = None,
) -> RedriveReport:
    """Move the messages of ``options.from_queue_url`` that the filters (and ``select``) pick.

    ``sender`` replaces the destination (a test's fake); with ``options.to_function`` the messages are
    re-invoked through ``lambda_client``. ``should_stop`` returns a reason to end the pass early (a
    Lambda's time budget). A message the destination cannot take (:func:`refusal`) fails and stays.

    One run moves each message at most once and only what the queue held when it started (see the
    module docstring): a selected message sent after the start is left (``report.arrived``), and so is
    one of a chain the run already moved (``report.repeated``)."""
    if options.native:
        raise ValueError("a native redrive is check_native() + start_native(), not redrive()")
    clock = clock or SystemClock()
    report = RedriveReport(dry_run=options.dry_run, started_at=clock.now())
    report.found_at_start = _found_at_start(sqs, options.from_queue_url)
    memory = RunMemory()
    if sender is None and options.to_function:
        if lambda_client is None:
            raise ValueError("a redrive to a function needs a lambda_client")
        sender = lambda_sender(lambda_client)
    if sender is None:
        if options.to_queue_url is None:
            raise ValueError("a redrive needs to_queue_url or a sender")
        sender = sqs_sender(sqs, options.to_queue_url, message_group_id=options.message_group_id)
    max_bytes = DEFAULT_MAX_MESSAGE_BYTES
    if not options.reset_attempts and not options.dry_run and options.to_queue_url is not None:
        max_bytes = _destination_max_bytes(sqs, options.to_queue_url)
    pacer = Pacer(options.rate, monotonic, sleep)
    # Receive no more than can be sent while they are hidden, so a slow rate never lets one reappear.
    batch = 10 if options.rate is None else max(1, min(10, int(options.rate * visibility / 2)))
    scan = Scan(
        sqs,
        options.from_queue_url,
        visibility=visibility,
        wait_seconds=wait_seconds,
        batch_size=batch,
        clock=clock,
        resolve=resolve,
    )
    try:
        for message in scan.messages():
            reason = should_stop() if should_stop is not None else None
            if reason:
                report.stopped = reason
                break
            if not matches(message, options, clock.now()) or (select is not None and not select(message)):
                report.skipped.append(message)
                continue
            if scan.arrived(message):  # after the run started: not what it found (a later run's)
                report.arrived.append(message)
                continue
            repeat = memory.repeat(message)
            if repeat is not None:
                duplicate = memory.duplicate_of(message)
                if duplicate is not None and not options.dry_run:
                    try:  # the copy moved carries this one's chain on: deleting it loses nothing
                        sqs.delete_message(
                            QueueUrl=options.from_queue_url, ReceiptHandle=scan.handle(message)
                        )
                    except Exception as exc:  # it stays, for a later run (which drops it the same way)
                        report.failed.append((message, describe_error(exc)))
                    else:
                        scan.forget(message)
                        report.dropped.append((message, duplicate))
                    continue
                report.repeated.append((message, repeat))
                continue
            refused = refusal(message, options)
            if refused is not None:  # dry run or not: it would not move, and says why
                report.failed.append((message, refused))
            elif options.dry_run:
                report.moved.append(message)
                memory.took(message)
            elif not _move(
                sqs,
                options=options,
                message=message,
                scan=scan,
                sender=sender,
                pacer=pacer,
                clock=clock,
                max_bytes=max_bytes,
                monotonic=monotonic,
                report=report,
                memory=memory,
            ):
                break
            if on_progress is not None:
                on_progress(report)
            if (
                options.max_messages is not None
                and len(report.moved) + len(report.failed) >= options.max_messages
            ):
                break
    finally:
        report.not_released = scan.release_all()
    return report


def _move(
    sqs: SQSClient,
    *,
    options: RedriveOptions,
    message: ExhaustedMessage,
    scan: Scan,
    sender: Sender,
    pacer: Pacer,
    clock: Clock,
    max_bytes: int,
    monotonic: Callable[[], float],
    report: RedriveReport,
    memory: RunMemory,
) -> bool:
    """Send, then delete, one message; False ends the pass (the rest stays in place)."""
    try:
        outgoing = outgoing_message(
            message,
            reset_attempts=options.reset_attempts,
            now=clock.now(),
            max_bytes=max_bytes,
            to_function=options.to_function,
            function=options.function,
        )
        pacer.wait()
        sent_id = sender(message, outgoing)
    except Exception as exc:  # nothing was sent: the message stays where it is
        report.failed.append((message, describe_error(exc)))
        if _message_level(exc):
            return True
        report.stopped = f"send failed: {describe_error(exc)}"
        return False
    memory.took(message, sent_id if isinstance(sent_id, str) else None)  # sent: moved, or duplicated
    report.send_times.append(monotonic())
    if outgoing.note:
        report.notes.append((message, outgoing.note))
    try:
        sqs.delete_message(QueueUrl=options.from_queue_url, ReceiptHandle=scan.handle(message))
    except Exception as exc:  # sent but not deleted: a duplicate, never a loss
        report.moved.append(message)
        report.duplicated.append((message, describe_error(exc)))
        report.stopped = f"delete failed after a successful send: {describe_error(exc)}"
        return False
    scan.forget(message)
    report.moved.append(message)
    return True

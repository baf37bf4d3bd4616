"""The retrying SQS consumer (library form): call it with an SQS event, get the partial batch response.

Order of operations (docs/architecture.md, "Order of operations and guarantees"):
  0. the event must be an SQS event, else ``EventShapeError`` (nothing is acknowledged); a record from
     a queue other than the configured one is handed back unprocessed, never retried into ours;
  1. unwrap and validate the envelope (an invalid one goes to the retry-exhausted queue, never the
     loop). FIFO ``ordered``: once a record of a message group failed in this batch, the later records
     of that group are handed back unprocessed (made visible again at once: the failed one, still
     hidden, holds the group, so the group resumes with it, in order); other groups go on;
  2. a copy that arrives before its due time waits again, unprocessed: a new SQS-delayed copy (a hop
     of <= 900 s) or, on a FIFO queue, this very message hidden until due;
  3. with the claims table, a due copy (and a redelivered first message) claims its chain's attempt for
     its SQS message id: a provable duplicate is acknowledged unprocessed, a copy whose attempt another
     live copy holds waits (see ``claims``); a first delivery writes nothing;
  4. call the processor: any exception, BaseException included, fails only its own record;
  5. success: nothing to do, the event source mapping deletes the message;
  6. failure: ``planning.plan_failure`` decides, as a pure function of the record and the policy (its
     "now" is the record's own first-receive time), among a delayed copy, delay hops, a one-time
     schedule, an in-place retry (visibility timeout), or a final copy to the retry-exhausted queue;
  7. the calls run batched once every record was processed: CreateSchedule (its at() fixed at call
     time; a refusal - throttling, quota, 5xx - turns the retry into delay hops; a call that got no
     answer is resolved by the schedule's deterministic name before anything falls back), then
     SendMessageBatch for delayed copies and hops, ChangeMessageVisibilityBatch, and SendMessageBatch
     to the retry-exhausted queue. A record counts as handled only when its call succeeded; otherwise
     it is in ``batchItemFailures`` and the queue's visibility timeout (then its DLQ) takes over.
     Nothing is acknowledged before the copy that replaces it exists.

Why not Powertools' ``BatchProcessor`` (nor its ``SqsFifoPartialProcessor``): it settles each record's
success or failure when the record handler returns, but here a failed record's fate is known only
after the batched SendMessageBatch / CreateSchedule calls that follow the loop, so we would have to
undo its bookkeeping; and its per-record wrapping is the overhead we are benchmarked against. We use
Powertools for logging, metrics and (optionally) the processor's idempotency.
"""

from __future__ import annotations

import logging
import math
import random
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from aws_lambda_powertools import Logger

from serverless_retry.aws import AwsClients
from serverless_retry.backoff import json_kind
from serverless_retry.clock import Clock, SystemClock
from serverless_retry.config import ENV_CLAIMS_TABLE, ConsumerSettings, QueueTargets
from serverless_retry.delivery import (
    Delivery,
    Outgoing,
    ScheduledRetry,
    VisibilityChange,
    dedup_id,
    final_message,
)
from serverless_retry.envelope import (
    ENVELOPE_KEY,
    MAX_ATTEMPT,
    Incoming,
    Outcome,
    RetryContext,
    attributes_from_record,
    fits,
    schedule_name,
    unwrap,
    waiting_copy,
)
from serverless_retry.errors import ConfigError, EventShapeError, KeyUnavailable, UnhandledRecordError
from serverless_retry.message import (
    Exhausted,
    ExhaustedHook,
    Message,
    Processor,
    first_delivery,
    original_incoming,
)
from serverless_retry.observability import BatchCounts, ConsumerMetrics, make_logger
from serverless_retry.planning import (
    DUE_SKEW_MARGIN_SECONDS,
    Final,
    InPlace,
    QueueFacts,
    RecordFacts,
    Step,
    decision_time,
    expiry_problem,
    hop_limit,
    latest_due,
    plan_failure,
)
from serverless_retry.planning import arrival as copy_arrival
from serverless_retry.policy import Decision, RetryPolicy
from serverless_retry.records import raw_text, record_id, record_problem, unidentified_id

if TYPE_CHECKING:
    from serverless_retry.claims import ClaimStore
    from serverless_retry.retry_log import RetryLogGroup
    from serverless_retry.signing import EnvelopeSigner

# serverless_retry.claims is imported where a claims table is in use (from_settings, or the store
# passed in): a consumer without one never runs it.

__all__ = [
    "RETRIES_PLANNED",
    "BatchItemFailure",
    "BatchResponse",
    "BatchResult",
    "IdempotentProcessor",
    "RetryingConsumer",
    "consumer_from_env",
    "idempotent_processor",
    "short_traceback",
    "sqs_records",
]

TRACEBACK_FRAMES = 8
# While the claims table does not answer, a copy waits this long between tries, unprocessed, as a new
# SQS message (hidden in place, doubling on each receive, only when it cannot grow by the claimant).
CLAIM_WAIT_SECONDS = 120
CLAIM_WAIT_MAX_SECONDS = 900
_MAX_VISIBILITY_SECONDS = 43_200
TRACEBACK_CHARS = 2_000
LOG_ERROR_CHARS = 256
# The message of the one INFO line per batch that lists every retry the batch decided: "count" retried
# messages, and "retries", a RetryLogGroup per distinct decision (error, attempt, transport) with each
# of its messages' delays. It is the batch's EMF metrics line (a Powertools Logger line when metrics
# are disabled). The final copies keep a line each.
RETRIES_PLANNED = "processing failed; retries planned"
_NO_ATTRIBUTES = Outgoing._field_defaults["attributes"]  # an Outgoing's attributes when it has none
# The Powertools Logger's own format keys: not copied onto the metrics line that carries the retries.
_LOGGER_FORMAT_KEYS = frozenset({"level", "location", "message", "timestamp", "service", "sampling_rate"})


class BatchItemFailure(TypedDict):
    itemIdentifier: str


class BatchResponse(TypedDict):
    batchItemFailures: list[BatchItemFailure]


@dataclass
class BatchResult:
    failed_ids: list[str]  # record message ids for batchItemFailures, in record order
    counts: BatchCounts
    retries: list[RetryLogGroup] = field(default_factory=list)  # the RETRIES_PLANNED groups
    retried: int = 0  # messages in them

    def response(self) -> BatchResponse:
        return {"batchItemFailures": [{"itemIdentifier": i} for i in self.failed_ids]}


class _Plan:
    """The AWS calls a batch needs, gathered while records are processed and made together after.
    (A plain class: made only for a batch that needs a call, and a dataclass costs ~0.5 ms to define
    at cold start.)"""

    __slots__ = (
        "claimed",
        "delayed",
        "exhausted",
        "failed",
        "holds",
        "labels",
        "outcomes",
        "repeat",
        "retried",
        "retries",
        "retry_groups",
        "scheduled",
        "unidentified",
        "visibility",
    )

    def __init__(self) -> None:
        self.delayed: list[Outgoing] = []
        self.scheduled: list[ScheduledRetry] = []
        self.visibility: list[VisibilityChange] = []
        self.exhausted: list[Outgoing] = []
        self.outcomes: dict[str, Outcome] = {}  # exhausted-queue key → outcome
        self.labels: dict[str, str] = {}  # key → what its call does, for the metrics
        self.failed: set[str] = set()  # records the queue must redeliver
        self.claimed: dict[str, tuple[str, int, int]] = {}  # key → (id, attempt, receives)
        self.repeat: dict[str, int] = {}  # in place: key → the attempt to repeat
        self.holds: dict[str, int] = {}  # in place: key → receives spent held back
        self.unidentified: list[str] = []  # keys of records without a messageId
        self.retries: list[RetryLogGroup] = []  # every retry decided, for the batch's log line
        self.retry_groups: dict[tuple[str, str, int, str | None], RetryLogGroup] = {}
        self.retried = 0

    def log_retry(
        self, message_id: str, retry_id: str, attempt: int, error: BaseException, decision: Decision
    ) -> None:
        error_type = type(error).__name__
        text = _error_text(error)
        key = (error_type, text, attempt, decision.transport)
        group = self.retry_groups.get(key)
        if group is None:
            group = self.retry_groups[key] = {
                "error_type": error_type,
                "error": text,
                "attempt": attempt,
                "transport": decision.transport,
                "delays": {},
            }
            self.retries.append(group)
        group["delays"][message_id] = decision.delay_seconds
        if retry_id != message_id:
            group.setdefault("retry_ids", {})[message_id] = retry_id
        self.retried += 1


class _InProgressElsewhere(Exception):
    """Another invocation is processing this very message right now (Powertools idempotency said so):
    hand the record back, unprocessed; it returns after the visibility timeout."""


def short_traceback(error: BaseException) -> str:
    """The last frames of the error's traceback, bounded in size (the tail is the informative part)."""
    try:
        text = "".join(
            traceback.format_exception(type(error), error, error.__traceback__, limit=-TRACEBACK_FRAMES)
        )
    except Exception:  # an exception object hostile enough to break formatting
        text = f"{_type_name(error)}: <traceback unavailable>"
    return text[-TRACEBACK_CHARS:]


def _type_name(error: BaseException) -> str:
    return type(error).__name__


def _error_text(error: BaseException) -> str:
    try:
        return str(error)[:LOG_ERROR_CHARS]
    except Exception:  # a __str__ that raises must not stop the record from being retried
        return f"<unprintable {_type_name(error)}>"


def _describe_event(event: Mapping[str, Any]) -> str:
    records = event.get("Records")
    if isinstance(records, list) and records and isinstance(records[0], Mapping):
        first = records[0]
        source = first.get("EventSource") or first.get("eventSource") or "unknown"
        return f"its records come from {source!r}, not 'aws:sqs'"
    if "detail-type" in event and "detail" in event:
        return "it is an EventBridge event"
    if "requestContext" in event or "httpMethod" in event or "routeKey" in event:
        return "it is an API Gateway request"
    keys = ", ".join(sorted(str(k) for k in event)[:8])
    return f"it has no SQS Records (top-level keys: {keys or 'none'})"


def sqs_records(event: object) -> Sequence[Mapping[str, Any]]:
    """The records of an SQS event; ``EventShapeError`` for anything else, so an SNS notification, an
    API Gateway request or an EventBridge event routed here fails loudly instead of being dropped.
    (Every record of one event comes from one event source: the first tells.)"""
    if type(event) is not dict and not isinstance(event, Mapping):  # (type() first: ABC checks are slow)
        raise EventShapeError(
            f"the consumer takes an SQS event (an object with Records), got {json_kind(event)}"
        )
    records = event.get("Records")
    if type(records) is not list:
        raise EventShapeError(f"not an SQS event: {_describe_event(event)}")
    if records:
        first = records[0]
        if (type(first) is not dict and not isinstance(first, Mapping)) or first.get(
            "eventSource"
        ) != "aws:sqs":
            raise EventShapeError(f"not an SQS event: {_describe_event(event)}")
    return records


class RetryingConsumer:
    """Calls ``processor(Message)`` for each record of an SQS event and retries failures per ``policy``.

    ``consumer(event, context)`` returns ``{"batchItemFailures": [...]}`` for an event source mapping
    with ``ReportBatchItemFailures``. ``clients``, ``clock`` and ``rand`` are injectable for tests
    (``rand`` only seeds the per-message jitter; the same message and attempt always get the same delay).
    ``claims`` (built from the idempotency table by ``from_settings``) ends duplicate copies' chains.
    ``on_exhausted(message, error, Exhausted)`` is called for each message whose final copy is planned
    for the retry-exhausted queue, before it is sent; if it raises, the error is logged and the copy
    is sent anyway.
    """

    def __init__(
        self,
        processor: Processor,
        policy: RetryPolicy,
        targets: QueueTargets,
        *,
        clients: AwsClients | None = None,
        clock: Clock | None = None,
        rand: random.Random | None = None,
        logger: Logger | None = None,
        metrics: ConsumerMetrics | None = None,
        claims: ClaimStore | None = None,
        on_exhausted: ExhaustedHook | None = None,
    ) -> None:
        from serverless_retry.async_processor import synchronous  # async handlers run to completion

        self.processor = processor if isinstance(processor, IdempotentProcessor) else synchronous(processor)
        self.on_exhausted = on_exhausted
        self.policy = policy
        self.targets = targets
        self.clients = clients or AwsClients()
        self.clock: Clock = clock or SystemClock()
        # Jitter is drawn from a Random seeded per (id, attempt): a redelivered record (say, its
        # invocation timed out after CreateSchedule succeeded) takes the same decision again, so it
        # lands on the same schedule name instead of adding an SQS copy. Not per instance either:
        # the default seed is a constant, so another Lambda instance decides the same way.
        self._seed = rand.getrandbits(64) if rand is not None else 0
        self.logger = logger or make_logger()
        self.metrics = metrics or ConsumerMetrics()
        self.delivery = Delivery(self.clients, targets, self.logger, self.clock)
        if targets.in_place and claims is None:
            # SQS counts every receive, and a record held back behind its group's failed message is
            # received once per failure: only a store can tell those receives from its own attempts
            # (without one, an innocent record is charged them, exhausted or dead-lettered unrun).
            raise ConfigError(
                ENV_CLAIMS_TABLE,
                "a FIFO source with fifo_order 'ordered' retries in place and needs a claims table to "
                "count the receives a record spends held back behind its group (else they count as its "
                "attempts): give it one (ConsumerSettings.claims_table, SERVERLESS_RETRY_CLAIMS_TABLE, "
                "or claims=; the modules make one by default), or set fifo_order to 'unordered'",
            )
        self.claims = claims
        self.delivery.resend_after_timeout = claims is not None
        self._signing: tuple[ClaimStore, EnvelopeSigner] | None = None  # see _signer
        self._lease: int | None = None  # claims.lease_seconds of the source's visibility timeout
        self._in_place = targets.in_place or policy.transport == "visibility"
        self._ordered = targets.in_place  # FIFO ordered: a failure holds back the rest of its group
        self._fifo = targets.source_is_fifo
        self._source = targets.queue_arn
        self.queue = QueueFacts(
            fifo=self._fifo,
            in_place=self._in_place,
            retention_seconds=targets.retention_seconds,
            max_message_bytes=targets.max_message_bytes,
            scheduler=targets.schedule_group is not None and targets.scheduler_role_arn is not None,
        )

    @classmethod
    def from_settings(
        cls,
        settings: ConsumerSettings,
        processor: Processor | None = None,
        *,
        clients: AwsClients | None = None,
        rand: random.Random | None = None,
        logger: Logger | None = None,
        metrics: ConsumerMetrics | None = None,
        on_exhausted: ExhaustedHook | None = None,
    ) -> RetryingConsumer:
        clients = clients or AwsClients()
        claims = None
        if settings.claims_table:
            from serverless_retry.claims import DynamoDBClaims

            claims = DynamoDBClaims(
                lambda: clients.dynamodb,
                settings.claims_table,
                retention_seconds=settings.targets.retention_seconds,
            )
        return cls(
            processor if processor is not None else settings.load_processor(),
            settings.policy,
            settings.targets,
            clients=clients,
            clock=settings.clock,
            rand=rand,
            logger=logger,
            metrics=metrics,
            claims=claims,
            on_exhausted=on_exhausted,
        )

    def __call__(self, event: Mapping[str, Any], context: object = None) -> BatchResponse:
        records = sqs_records(event)
        if context is not None and isinstance(self.processor, IdempotentProcessor):
            self.processor.register_lambda_context(context)
        result = self.process_batch(records)
        try:
            # The retries' decisions ride on the batch's metrics line (EMF keeps properties that are
            # not metrics as log fields, searchable like any log line): a Powertools line of their own
            # cost more than all the rest of a batch of retries. Without metrics they get that line.
            decisions = None if self.metrics.disabled else self._decisions(result.retries, result.retried)
            self.metrics.publish(result.counts, decisions)
        except Exception:  # metrics must never turn a settled batch into a failed invocation
            self.logger.exception("publishing metrics failed")
            self._log_retries(result.retries, result.retried)
        else:
            if self.metrics.disabled:
                self._log_retries(result.retries, result.retried)
        return result.response()

    def _decisions(self, retries: list[RetryLogGroup], retried: int) -> dict[str, object] | None:
        """The RETRIES_PLANNED fields for the batch's metrics line, with the logger's own keys (the
        request id, cold start, keys a processor appended); None without retries or below INFO."""
        if not retries or self.logger.log_level > logging.INFO:  # e.g. POWERTOOLS_LOG_LEVEL=WARNING
            return None
        # (Logger.get_current_keys is not in every Powertools 3 release: without it, no logger keys)
        current = getattr(self.logger, "get_current_keys", None)
        keys: dict[str, object] = current() if callable(current) else {}
        fields: dict[str, object] = {
            key: value
            for key, value in keys.items()
            if value is not None
            and key not in _LOGGER_FORMAT_KEYS
            and not (isinstance(value, str) and "%(" in value)
        }
        fields.update(level="INFO", message=RETRIES_PLANNED, count=retried, retries=retries)
        return fields

    def _log_retries(self, retries: list[RetryLogGroup], retried: int) -> None:
        if retries:
            self.logger.info(RETRIES_PLANNED, extra={"retries": retries, "count": retried})

    # -- the batch --------------------------------------------------------------------------------------
    def process_batch(self, records: Iterable[Mapping[str, Any]]) -> BatchResult:
        if type(records) is not list and not isinstance(records, Sequence):
            records = list(records)
        plan: _Plan | None = None  # made on the first record that needs a call: most batches need none
        counts = BatchCounts()
        processed = 0
        processor = self.processor
        in_place = self._in_place
        ordered = self._ordered
        source = self._source
        plain = not ordered and self.claims is None  # then only the source and the body decide
        blocked: dict[str, datetime | None] = {}  # FIFO ordered: group → when its failed record returns
        # The hot path (an original message from our queue that succeeds) builds the Message directly
        # and never parses the body: only a body that could spell the envelope key, literally or via a
        # \u escape, can be an envelope. Everything else takes the full path, _record().
        for record in records:
            try:
                message_id: str = record["messageId"]
                body: str = record["body"]
                fast = (
                    type(body) is str
                    and type(message_id) is str
                    and message_id != ""
                    and record.get("eventSourceARN") == source
                    and ENVELOPE_KEY not in body
                    and "\\u" not in body
                    and (plain or (not ordered and _receive_count(record) == 1))
                )
            except Exception:
                fast = False
            if not fast:
                plan = plan or _Plan()
                processed += self._record(plan, counts, record, blocked)
                continue
            message = first_delivery(
                message_id, body, record, source, _receive_count(record) if in_place else 1
            )
            try:
                processor(message)
            except BaseException as error:  # e.g. CancelledError, SystemExit: this record only
                plan = plan or _Plan()
                self._failed(
                    plan, counts, record, message, facts=None, incoming=None, error=error, blocked=blocked
                )
            else:
                processed += 1
        counts.processed = processed
        if plan is None:
            return BatchResult([], counts)
        self._deliver(plan, counts)
        if plan.unidentified:
            try:
                self._unidentified_unsent(plan, records)
            except BaseException:  # the invocation fails: the batch's metrics line never comes
                self._log_retries(plan.retries, plan.retried)
                raise
        if plan.claimed:
            self._finish_claims(plan)
        return BatchResult(_in_record_order(records, plan.failed), counts, plan.retries, plan.retried)

    def _record(
        self, plan: _Plan, counts: BatchCounts, record: Mapping[str, Any], blocked: dict[str, datetime | None]
    ) -> bool:
        """One record the whole way: refusal, FIFO hold-back, envelopes, early copies, claims, the
        processor, and the plan of its failure. True when the processor succeeded."""
        in_place = self._in_place
        ordered = self._ordered
        source = self._source
        group: str | None = None
        facts: RecordFacts | None = None
        incoming: Incoming | None = None
        problem = record_problem(record)
        if problem is not None:
            self._unhandled(plan, record, problem, error=None, blocked=blocked)
            return False
        try:
            message_id: str = record["messageId"]
            body: str = record["body"]
            if record.get("eventSourceARN") != source:
                self._refuse(plan, counts, record)
                return False
            if ordered:
                group = _group_of(record)
                if group in blocked:
                    self._hold_back(plan, record, blocked[group])
                    return False
            if ENVELOPE_KEY in body or "\\u" in body:
                facts = RecordFacts.of(record)
                incoming = self._unwrap(plan, counts, record, facts)
                if incoming is None:  # its signature cannot be checked yet (the table does not answer)
                    if group is not None:
                        blocked[group] = None
                    return False
                if incoming.kind == "invalid":
                    self._plan_final(
                        plan,
                        record,
                        incoming,
                        "invalid-envelope",
                        error=None,
                        reason=incoming.problem or "invalid",
                        now=decision_time(facts, self.clock.now(), in_place=in_place),
                    )
                    if group is not None:
                        blocked[group] = None
                    return False
                if incoming.kind == "envelope" and not self._due(plan, counts, record, facts, incoming):
                    if group is not None:
                        blocked[group] = None
                    return False
                if incoming.kind == "envelope" and in_place and facts.receive_count > 1:
                    # In place, every receive that ran the processor is an attempt: a copy's attempt
                    # counts on from its own (receives spent held back are not attempts).
                    spent = facts.receive_count - 1 - plan.holds.get(message_id, 0)
                    attempt = min(MAX_ATTEMPT, incoming.context.attempt + max(0, spent))
                    incoming = incoming._replace(context=replace(incoming.context, attempt=attempt))
                if message_id in plan.repeat:
                    repeat = plan.repeat[message_id]
                    incoming = incoming._replace(context=replace(incoming.context, attempt=repeat))
                message = Message(message_id, incoming.body, incoming.attributes, incoming.context, record)
            else:
                receive_count = _receive_count(record)
                if (
                    self.claims is not None
                    and receive_count > 1
                    and not self._take(plan, counts, record, message_id, 0 if in_place else 1)
                ):
                    if group is not None and message_id in plan.failed:
                        blocked[group] = None  # it goes back unclaimed: the rest of its group waits
                    return False  # a redelivery whose handling already finished, or goes back
                if in_place:  # receives spent held back behind its group are not attempts
                    ran = max(1, receive_count - plan.holds.get(message_id, 0))
                    attempt = plan.repeat.get(message_id, ran)
                else:
                    attempt = 1
                message = first_delivery(message_id, body, record, source, attempt)
        except Exception as exc:  # a record we cannot read, or a bug of ours: kept with the reason
            self.logger.exception("could not prepare record", extra={"message_id": record.get("messageId")})
            reason = (
                f"unhandled record: the consumer could not prepare it ({_type_name(exc)}: {_error_text(exc)})"
            )
            self._unhandled(plan, record, reason, error=exc, blocked=blocked)
            return False
        try:
            self.processor(message)
        except BaseException as error:  # e.g. CancelledError, SystemExit: this record only
            self._failed(
                plan, counts, record, message, facts=facts, incoming=incoming, error=error, blocked=blocked
            )
            return False
        return True

    @property
    def _signer(self) -> EnvelopeSigner | None:
        """With the claims table every envelope we write is signed, and one we did not write is a chain
        apart (signing module): a producer cannot name another message's chain. The key is read
        from the table on first use, and kept (per store: tests may set ``claims`` later)."""
        claims = self.claims
        if claims is None:
            return None
        if self._signing is None or self._signing[0] is not claims:
            from serverless_retry.signing import EnvelopeSigner

            self._signing = (claims, EnvelopeSigner(claims.signing_key))
        return self._signing[1]

    def _unwrap(
        self, plan: _Plan, counts: BatchCounts, record: Mapping[str, Any], facts: RecordFacts
    ) -> Incoming | None:
        """The record's body classified (``envelope.unwrap``), its signature checked with the claims
        table; None when the key cannot be read: the copy then waits as for a claims-table outage."""
        message_id: str = record["messageId"]
        now = self.clock.now()
        arguments: dict[str, Any] = {
            "message_id": message_id,
            "source": self._source,
            "receive_count": facts.receive_count if self._in_place else 1,
            "latest_due": self._latest_due(now),
        }
        attributes = attributes_from_record(record.get("messageAttributes") or {})
        try:
            incoming = unwrap(record["body"], attributes, signer=self._signer, **arguments)
        except KeyUnavailable:
            incoming = unwrap(record["body"], attributes, **arguments)
            if incoming.kind != "envelope":
                return incoming  # an invalid envelope needs no key: it goes to the exhausted queue
            counts.claims_unavailable += 1
            log = {"message_id": message_id, "retry_id": incoming.context.id}
            if self._in_place:
                self.logger.exception("could not read the signing key; the message waits hidden", extra=log)
                self._hide(plan, record, CLAIM_WAIT_SECONDS, facts.receive_count)
            else:
                self.logger.exception(
                    "could not read the signing key; the copy waits and tries again", extra=log
                )
                context = incoming.context
                self._wait_for_claims(
                    plan, record, facts=facts, incoming=incoming, retry_id=context.id, now=now
                )
            return None
        if incoming.kind == "envelope" and incoming.problem is not None:
            self.logger.warning(incoming.problem, extra={"message_id": message_id})
        return incoming

    def _latest_due(self, now: datetime) -> datetime:
        """The latest due time a copy arriving at ``now`` can carry: what the policy could have planned
        (``planning.latest_due``), and with the claims table the protocol's own longest wait: a copy that
        met a live claim waits until that claim's lease ends plus the takeover grace."""
        due = latest_due(self.policy, now)
        if self.claims is None:
            return due
        from serverless_retry.claims import TAKEOVER_GRACE_SECONDS

        waits = self._lease_seconds() + TAKEOVER_GRACE_SECONDS + 1 + DUE_SKEW_MARGIN_SECONDS
        return max(due, now + timedelta(seconds=waits))

    def _unhandled(
        self,
        plan: _Plan,
        record: object,
        reason: str,
        *,
        error: BaseException | None,
        blocked: dict[str, datetime | None],
    ) -> None:
        """A record the consumer cannot handle: to the retry-exhausted queue with the reason (outcome
        invalid-envelope), its body (or the record itself) kept. If that send fails it is handed back
        alone, by its messageId; one without a usable messageId cannot be (see ``records``)."""
        message_id = record_id(record)
        raw = raw_text(record)
        key = message_id
        if key is None:
            key = f"<record without messageId #{len(plan.unidentified) + 1}>"
            plan.unidentified.append(key)
        attributes = record.get("messageAttributes") if isinstance(record, Mapping) else None
        incoming = Incoming(
            kind="invalid",
            body=raw,
            attributes=attributes_from_record(attributes) if isinstance(attributes, Mapping) else {},
            context=RetryContext(message_id or unidentified_id(raw), 1, None, (), self._source),
            meta=None,
            problem=reason,
        )
        try:
            self._plan_final(
                plan,
                record if isinstance(record, Mapping) else {},
                incoming,
                "invalid-envelope",
                error=error,
                reason=reason,
                now=self.clock.now(),
                key=key,
            )
        except Exception:  # not even that: hand it back (by its id, when it has one)
            self.logger.exception("could not plan the record's final copy", extra={"message_id": message_id})
            plan.failed.add(key)
        if self._ordered and message_id is not None:
            blocked[_group_of(record)] = None  # the rest of its group waits behind it, as for any failure

    def _unidentified_unsent(self, plan: _Plan, records: Sequence[Mapping[str, Any]]) -> None:
        """A record without a messageId whose exhausted copy could not be sent. batchItemFailures cannot
        name it: an empty or unknown itemIdentifier fails the whole batch, acknowledged neighbours and
        all. So fail the invocation only when that takes nothing else back - every other record goes
        back anyway - and otherwise say so loudly: it is a record no SQS event source mapping makes."""
        unsent = [key for key in plan.unidentified if key in plan.failed]
        if not unsent:
            return
        others = [i for i in (record_id(r) for r in records) if i is not None]
        if all(i in plan.failed for i in others):
            raise UnhandledRecordError(
                f"{len(unsent)} record(s) without a messageId could not be sent to the retry-exhausted queue; "
                "failing the invocation returns only them and records already handed back"
            )
        self.logger.error(
            "records without a messageId could not be sent to the retry-exhausted queue; they cannot be "
            "handed back alone (an empty itemIdentifier fails the whole batch) and are dropped",
            extra={"records": len(unsent)},
        )

    def _failed(
        self,
        plan: _Plan,
        counts: BatchCounts,
        record: Mapping[str, Any],
        message: Message,
        *,
        facts: RecordFacts | None,
        incoming: Incoming | None,
        error: BaseException,
        blocked: dict[str, datetime | None],
    ) -> None:
        """The processor failed on this record: plan what replaces it (or hand it back)."""
        message_id = message.message_id
        resumes: datetime | None = None
        try:
            if isinstance(error, _InProgressElsewhere):
                plan.failed.add(message_id)
            else:
                if facts is None:
                    facts = RecordFacts.of(record)
                if incoming is None:  # its body holds neither the envelope key nor a \u escape
                    incoming = original_incoming(message)
                # A first delivery claims nothing: its copy's claim (or its own redelivery's) dedups.
                step = self._plan_failure(plan, record, facts, incoming, error)
                if isinstance(step, InPlace):
                    resumes = self.clock.now() + timedelta(seconds=step.timeout_seconds)
        except Exception:
            problem = record_problem(record)
            if problem is not None:  # (the fast path reads no more than it needs: a bad record shows here)
                self._unhandled(plan, record, problem, error=error, blocked=blocked)
                return
            self.logger.exception("could not plan the retry", extra={"message_id": message_id})
            plan.failed.add(message_id)
        if self._ordered:
            blocked[_group_of(record)] = resumes

    def _finish_claims(self, plan: _Plan) -> None:
        """Mark the claims of owners on a later receive whose next step happened (or that succeeded):
        done when a copy carries the chain on, else ended. A claim made on a first receive stays as it
        is: past its lease, an unredelivered first receive proves itself finished (``claims``)."""
        assert self.claims is not None
        from serverless_retry.claims import Finish

        continued = {m.key for m in plan.delayed} | {r.key for r in plan.scheduled}
        done = [
            Finish(rid, attempt, key, ended=key not in continued)
            for key, (rid, attempt, receives) in plan.claimed.items()
            if receives > 1 and key not in plan.failed
        ]
        if not done:
            return
        try:
            unmarked = self.claims.finish(done, now=self.clock.now())
        except Exception:
            self.logger.exception("could not mark claims done")
            unmarked = {f.owner for f in done}
        if unmarked:
            # An owner on a later receive is acknowledged only once its claim says it finished: else,
            # past its lease, it would look dead and another copy would take its attempt over. It
            # comes back and runs once more (at least once); its copies' claims end any duplicate.
            self.logger.error(
                "could not mark claims done; their records go back to the queue",
                extra={"message_ids": sorted(unmarked)},
            )
            plan.failed |= unmarked

    # -- before processing --------------------------------------------------------------------------------
    def _refuse(self, plan: _Plan, counts: BatchCounts, record: Mapping[str, Any]) -> None:
        message_id = str(record.get("messageId", ""))
        self.logger.error(
            "record refused: it comes from another queue than this consumer's; handed back unprocessed",
            extra={
                "message_id": message_id,
                "event_source_arn": record.get("eventSourceARN"),
                "configured_queue_arn": self._source,
            },
        )
        counts.refused += 1
        plan.failed.add(message_id)

    def _hold_back(self, plan: _Plan, record: Mapping[str, Any], resumes: datetime | None) -> None:
        """FIFO ordered: a later record of a group whose earlier record failed in this batch."""
        message_id: str = record["messageId"]
        if resumes is not None:
            facts = RecordFacts.of(record)
            problem = expiry_problem(facts, self.targets.retention_seconds, resumes)
            if problem is not None:
                incoming = unwrap(
                    record["body"],
                    attributes_from_record(record.get("messageAttributes") or {}),
                    message_id=message_id,
                    source=self._source,
                    receive_count=facts.receive_count,
                )
                reason = f"held back behind an earlier message of its group: {problem}"
                self._plan_final(
                    plan, record, incoming, "exhausted", error=None, reason=reason, now=self.clock.now()
                )
                return
        if self.claims is not None:
            # This receive is not an attempt: counted, so that the record's own budget stays whole.
            try:
                self.claims.add_hold(message_id, now=self.clock.now())
            except Exception:
                self.logger.exception(
                    "could not count a held-back receive; it will count as an attempt",
                    extra={"message_id": message_id},
                )
        # Visible again at once: the failed record, still hidden, holds the group, which then resumes
        # with it. Left in flight, this record would hold the group for a whole visibility timeout.
        plan.visibility.append(VisibilityChange(message_id, record["receiptHandle"], 0))
        plan.labels[message_id] = "held-back"
        plan.failed.add(message_id)

    def _due(
        self,
        plan: _Plan,
        counts: BatchCounts,
        record: Mapping[str, Any],
        facts: RecordFacts,
        incoming: Incoming,
    ) -> bool:
        """Whether an envelope copy is to be processed now: due, and (with claims) not a duplicate."""
        wait = copy_arrival(incoming, facts, self.queue, now=self.clock.now())
        message_id: str = record["messageId"]
        context = incoming.context
        if wait is not None:
            plan.labels[message_id] = "wait"
            if wait.hide_seconds is not None:
                plan.visibility.append(
                    VisibilityChange(message_id, record["receiptHandle"], wait.hide_seconds)
                )
                plan.failed.add(message_id)  # this very message is the copy: it must not be deleted
            else:
                # Carried on as the same copy, naming this message: a claim it may hold (it claimed on an
                # earlier receive, then came back early by another instance's clock) stays its own.
                body = record["body"]
                if self.claims is not None:
                    carried = waiting_copy(body, claimant=message_id, due_at=wait.due_at)
                    body = carried if fits(carried, self.targets.max_message_bytes) else body
                plan.delayed.append(
                    self._hop(message_id, body, wait.due_at, facts, retry_id=context.id, tag="wait")
                )
            self.logger.info(
                "copy arrived before it is due; it waits again, unprocessed",
                extra={
                    "message_id": message_id,
                    "retry_id": context.id,
                    "attempt": context.attempt,
                    "due_at": wait.due_at.isoformat(),
                    "remaining_seconds": wait.remaining_seconds,
                },
            )
            return False
        if self.claims is None or (self._in_place and facts.receive_count == 1):
            return True
        return self._take(
            plan, counts, record, *self._claim_key(message_id, incoming), facts=facts, incoming=incoming
        )

    def _claim_key(self, message_id: str, incoming: Incoming) -> tuple[str, int]:
        """A copy claims (id, attempt); in place, where the message itself is the chain and every
        receive an attempt, the message claims (its SQS message id, 0)."""
        if self._in_place:
            return message_id, 0
        return incoming.context.id, incoming.context.attempt

    def _take(
        self,
        plan: _Plan,
        counts: BatchCounts,
        record: Mapping[str, Any],
        retry_id: str,
        attempt: int,
        *,
        facts: RecordFacts | None = None,
        incoming: Incoming | None = None,
    ) -> bool:
        """Claim the chain's attempt for this record's SQS message: True to go on with it. ``facts``
        and ``incoming`` given: the record is a copy, which may wait (unprocessed) while it cannot be
        judged yet."""
        assert self.claims is not None
        message_id: str = record["messageId"]
        receives = _receive_count(record)
        log = {"message_id": message_id, "retry_id": retry_id, "attempt": attempt, "receives": receives}
        now = self.clock.now()
        meta = incoming.meta if incoming is not None else None
        predecessors: list[str] = meta.get("claimants", []) if meta is not None else []
        generation = incoming.context.generation if incoming is not None and not self._in_place else 0
        try:
            claim = self.claims.claim(
                retry_id,
                attempt,
                message_id,
                receives=receives,
                now=now,
                lease_seconds=self._lease_seconds(),
                predecessors=predecessors,
                generation=generation,
            )
        except Exception:
            counts.claims_unavailable += 1
            if facts is not None and incoming is not None and not self._in_place:
                # A duplicate copy could run beside it: the copy waits, unprocessed, until the table
                # answers, as a new message that names this one, whose claim may have been written.
                self.logger.exception(
                    "could not claim the attempt; the copy waits and tries again", extra=log
                )
                self._wait_for_claims(
                    plan, record, facts=facts, incoming=incoming, retry_id=retry_id, now=now
                )
                return False
            if self._in_place:
                # The claim holds what the message decided last (a final decision to repeat), so it
                # does not run without it: hidden, unprocessed, its group waiting behind it, a little
                # longer on each receive (each counts as an attempt: the stated bound).
                self.logger.exception("could not claim the attempt; the message waits hidden", extra=log)
                self._hide(plan, record, CLAIM_WAIT_SECONDS, receives)
                return False
            # A redelivered first message runs unclaimed, as it would without the table: at least once.
            # Its copies still claim when the table is back.
            self.logger.exception("could not claim the attempt; the record runs unclaimed", extra=log)
            return True
        if claim.result == "owned":
            plan.claimed[message_id] = (retry_id, attempt, receives)
            if claim.final_attempt is not None:
                plan.repeat[message_id] = claim.final_attempt
            if claim.holds:
                plan.holds[message_id] = claim.holds
            return True
        if claim.result == "busy":
            until = datetime.fromtimestamp((claim.lease_until or 0) + 1, now.tzinfo)
            self.logger.info(
                "another copy holds this attempt and may still be running; this one waits, unprocessed",
                extra={**log, "until": until.isoformat()},
            )
            if facts is not None and not self._in_place:
                self._wait(plan, record, facts, retry_id, until)
            else:
                plan.failed.add(message_id)
            return False
        counts.duplicates += 1
        if claim.result == "done":
            self.logger.info(
                "redelivered record already handled (its next step exists); acknowledged", extra=log
            )
        else:
            self.logger.warning(
                "duplicate copy: this attempt finished in another copy; its chain ends here", extra=log
            )
        return False

    def _wait(
        self, plan: _Plan, record: Mapping[str, Any], facts: RecordFacts, retry_id: str, until: datetime
    ) -> None:
        """A copy that another live copy's claim holds waits until ``until``, unprocessed: a new delayed
        copy (this record is then acknowledged; it owns nothing), or on a FIFO queue this very message
        hidden (its receives grow, so the hide doubles on each receive)."""
        message_id: str = record["messageId"]
        if self._fifo:
            seconds = max(1, math.ceil((until - self.clock.now()).total_seconds()))
            self._hide(plan, record, seconds, facts.receive_count)
            return
        plan.labels[message_id] = "wait"
        # Carried on as the same copy: its ids so far name it (it owns no claim, so none is taken).
        body = waiting_copy(record["body"], claimant=message_id, due_at=until)
        if not fits(body, self.targets.max_message_bytes):
            body = record["body"]
        plan.delayed.append(self._hop(message_id, body, until, facts, retry_id=retry_id, tag="wait"))

    def _wait_for_claims(
        self,
        plan: _Plan,
        record: Mapping[str, Any],
        *,
        facts: RecordFacts,
        incoming: Incoming,
        retry_id: str,
        now: datetime,
    ) -> None:
        """The claims table did not answer: this copy goes on as a new SQS message that names this
        record's message id among its claimants (a claim written for it, answer lost, is then the new
        message's own), and this record is acknowledged. So a long outage spends no receives: nothing
        goes to the DLQ for it. The wait doubles with each carrier, from CLAIM_WAIT_SECONDS to an SQS
        delay's 900 s (well inside the takeover grace). Hidden in place only when the longer body would
        not fit the queue."""
        message_id: str = record["messageId"]
        plan.labels[message_id] = "wait"
        carriers = len(incoming.meta.get("claimants", [])) if incoming.meta is not None else 0
        wait = min(CLAIM_WAIT_MAX_SECONDS, CLAIM_WAIT_SECONDS * 2 ** min(8, carriers))
        due = now + timedelta(seconds=wait)
        body = waiting_copy(record["body"], claimant=message_id, due_at=due)
        if fits(body, self.targets.max_message_bytes):
            plan.delayed.append(self._hop(message_id, body, due, facts, retry_id=retry_id, tag="claims"))
            return
        self._hide(plan, record, CLAIM_WAIT_SECONDS, facts.receive_count)

    @staticmethod
    def _hide(plan: _Plan, record: Mapping[str, Any], seconds: int, receives: int) -> None:
        """This very message waits, hidden and unprocessed, handed back: ``seconds`` on its first
        receive, twice as long on each later one (each receive it spends brings the DLQ nearer)."""
        message_id: str = record["messageId"]
        plan.labels[message_id] = "wait"
        wait = min(_MAX_VISIBILITY_SECONDS, seconds * 2 ** min(8, max(0, receives - 1)))
        plan.visibility.append(VisibilityChange(message_id, record["receiptHandle"], wait))
        plan.failed.add(message_id)

    def _lease_seconds(self) -> int:
        from serverless_retry.claims import lease_seconds

        if self._lease is None:
            visibility = self.targets.visibility_timeout_seconds
            if visibility is None:
                try:
                    attributes = self.clients.sqs.get_queue_attributes(
                        QueueUrl=self.targets.queue_url, AttributeNames=["VisibilityTimeout"]
                    )["Attributes"]
                    visibility = int(attributes["VisibilityTimeout"])
                except Exception:  # the longest timeout SQS allows: slow to take over, never wrong
                    self.logger.exception("could not read the queue's visibility timeout")
                    return lease_seconds(_MAX_VISIBILITY_SECONDS)
            self._lease = lease_seconds(visibility)
        return self._lease

    # -- planning -----------------------------------------------------------------------------------------
    def _plan_failure(
        self,
        plan: _Plan,
        record: Mapping[str, Any],
        facts: RecordFacts,
        incoming: Incoming,
        error: BaseException,
    ) -> Step:
        now = decision_time(facts, self.clock.now, in_place=self._in_place, incoming=incoming)
        step = plan_failure(
            self.policy, self.queue, facts, incoming, error, now=now, seed=self._seed, signer=self._signer
        )
        message_id: str = record["messageId"]
        context = incoming.context
        if isinstance(step, Final):
            if self._in_place and self.claims is not None:
                # In place a redelivery is a new attempt: if this final copy's answer gets lost, the
                # redelivery must repeat this attempt (and decide alike), not try a new one.
                try:
                    self.claims.mark_final(
                        message_id, 0, message_id, final_attempt=context.attempt, now=self.clock.now()
                    )
                except Exception:
                    self.logger.exception("could not record the final decision; the record goes back")
                    plan.failed.add(message_id)
                    return step
            self._plan_final(plan, record, incoming, step.outcome, error=error, reason=step.reason, now=now)
            return step
        decision = step.decision
        plan.log_retry(message_id, context.id, context.attempt, error, decision)
        if isinstance(step, InPlace):
            due = now + timedelta(seconds=step.timeout_seconds)  # counted from the decision, not the call
            plan.visibility.append(
                VisibilityChange(message_id, record["receiptHandle"], step.timeout_seconds, due)
            )
            plan.labels[message_id] = "visibility"
            return step
        next_attempt = context.attempt + 1
        # (unpacked once: each NamedTuple field read by name costs an attribute lookup)
        transport, delay_seconds, due_at, body, _ = step
        if transport == "sqs-delay":
            # DelaySeconds is taken at send time from the due time, so the copy is visible at decision
            # time + delay however long the rest of the batch runs; the decided delay caps it (a copy
            # then comes less than a second early at most, which counts as due).
            # (Positional, through tuple.__new__: keywords cost a NamedTuple a third more per record.)
            copy = (message_id, body, _NO_ATTRIBUTES, delay_seconds, facts.group_id, None, due_at)
            plan.delayed.append(tuple.__new__(Outgoing, copy))
            plan.labels[message_id] = "sqs-delay"
        elif transport == "sqs-hops":
            plan.delayed.append(
                self._hop(message_id, body, due_at, facts, retry_id=context.id, tag=next_attempt)
            )
            plan.labels[message_id] = "sqs-hops"
        else:
            plan.scheduled.append(
                ScheduledRetry(
                    key=message_id,
                    name=schedule_name(context.id, next_attempt),
                    due_at=due_at,
                    body=body,
                    group_id=(facts.group_id or context.id) if self._fifo else None,
                    description=f"serverless-retry attempt {next_attempt} of {context.id}",
                    hops=self._hop(message_id, body, due_at, facts, retry_id=context.id, tag=next_attempt),
                )
            )
        return step

    def _hop(
        self, key: str, body: str, due_at: datetime, facts: RecordFacts, *, retry_id: str, tag: object
    ) -> Outgoing:
        """A copy that waits in the source queue until ``due_at``: SQS delays of at most the hop limit
        (re-delayed on arrival while early); on a FIFO queue (no per-message delay) it arrives at once
        and is hidden there, with its group id and a deduplication id a redelivered record repeats.
        On a standard queue it keeps the producer's MessageGroupId (a fair queue's tenant), if any."""
        if self._fifo:
            group = facts.group_id or retry_id
            return Outgoing(key, body, group_id=group, dedup_id=dedup_id(retry_id, tag, facts.message_id))
        limit = hop_limit(self.targets.retention_seconds)
        return Outgoing(key, body, delay_seconds=limit, due_at=due_at, group_id=facts.group_id)

    def _plan_final(
        self,
        plan: _Plan,
        record: Mapping[str, Any],
        incoming: Incoming,
        outcome: Outcome,
        *,
        error: BaseException | None,
        reason: str,
        now: datetime,
        key: str | None = None,
    ) -> None:
        body, attributes, form = final_message(
            incoming,
            outcome,
            now=now,
            error=error,
            reason=reason,
            traceback_text=short_traceback(error) if error is not None else "",
            max_bytes=self.targets.exhausted_max_message_bytes,
            signer=self._signer,
        )
        message_id: str = key if key is not None else record["messageId"]
        context = incoming.context
        group = _group_of(record) or None  # a standard queue keeps the producer's (fair queue) group
        dedup = None
        if self.targets.exhausted_is_fifo:
            group = group or context.id
            dedup = dedup_id(context.id, context.attempt, outcome)
        plan.exhausted.append(Outgoing(message_id, body, attributes, group_id=group, dedup_id=dedup))
        plan.outcomes[message_id] = outcome
        self.logger.warning(
            "message goes to the retry-exhausted queue",
            extra={
                "message_id": message_id,
                "retry_id": context.id,
                "attempt": context.attempt,
                "outcome": outcome,
                "reason": reason,
                "form": form,
                "error_type": _type_name(error) if error is not None else None,
            },
        )
        if self.on_exhausted is not None and message_id not in plan.repeat:
            # Not on the repeat path: this record's final decision was recorded (and the hook called)
            # on an earlier receive whose answer was lost; the copy is sent again, the hook is not.
            self._call_exhausted_hook(record, incoming, message_id, error, Exhausted(outcome, reason))

    def _call_exhausted_hook(
        self,
        record: Mapping[str, Any],
        incoming: Incoming,
        message_id: str,
        error: BaseException | None,
        exhausted: Exhausted,
    ) -> None:
        assert self.on_exhausted is not None
        try:
            message = Message(message_id, incoming.body, incoming.attributes, incoming.context, record)
            self.on_exhausted(message, error, exhausted)
        except BaseException:  # the user's hook: whatever it raises, the final copy is still sent
            self.logger.exception(
                "the on_exhausted hook failed; the message still goes to the retry-exhausted queue",
                extra={"message_id": message_id, "retry_id": incoming.context.id},
            )

    # -- delivery -----------------------------------------------------------------------------------------
    def _deliver(self, plan: _Plan, counts: BatchCounts) -> None:
        delivery = self.delivery
        failed = plan.failed
        labels = plan.labels
        if plan.scheduled:
            not_scheduled, refused = delivery.schedule_all(plan.scheduled)
            failed |= not_scheduled
            counts.delivery_failed += len(not_scheduled)
            refused_keys = {r.key for r in refused}
            counts.retry_scheduled["scheduler"] += sum(
                1 for r in plan.scheduled if r.key not in not_scheduled and r.key not in refused_keys
            )
            for retry in refused:
                if retry.hops is None:
                    failed.add(retry.key)
                    counts.delivery_failed += 1
                else:
                    plan.delayed.append(retry.hops)
                    labels[retry.key] = "fallback"
        if plan.delayed:
            not_sent = delivery.send_delayed(plan.delayed)
            failed |= not_sent
            counts.delivery_failed += len(not_sent)
            for m in plan.delayed:
                key = m.key
                if key in not_sent:
                    continue
                label = labels.get(key, "sqs-delay")
                if label == "wait":
                    counts.redelayed += 1
                elif label == "fallback":
                    counts.scheduler_fallback += 1
                    counts.retry_scheduled["sqs-hops"] += 1
                else:
                    counts.retry_scheduled[label] += 1
        if plan.visibility:
            not_changed = delivery.change_visibility(plan.visibility)
            # Always batch item failures: these messages are themselves the retry (or wait), so they
            # must not be deleted. A failed change only means the queue's own timeout applies.
            for c in plan.visibility:
                failed.add(c.key)
                kind = labels.get(c.key)
                if kind == "visibility":
                    if c.key in not_changed:
                        counts.delivery_failed += 1
                    else:
                        counts.retry_scheduled["visibility"] += 1
                elif kind == "wait" and c.key not in not_changed:
                    counts.redelayed += 1
        if plan.exhausted:
            not_sent = delivery.send_exhausted(plan.exhausted)
            failed |= not_sent
            counts.delivery_failed += len(not_sent)
            for m in plan.exhausted:
                if m.key in not_sent:
                    continue
                outcome = plan.outcomes[m.key]
                if outcome == "non-retryable":
                    counts.non_retryable += 1
                elif outcome == "invalid-envelope":
                    counts.invalid_envelope += 1
                else:
                    counts.exhausted += 1


def consumer_from_env(environ: Mapping[str, str] | None = None) -> RetryingConsumer:
    """The consumer the Lambda handler runs, built from the environment (``os.environ`` by default):
    settings validated, processor imported, idempotency wrapped in when a table is configured.
    Raises ``ConfigError`` naming the variable at fault. The local runtime calls this with each
    function's own environment."""
    settings = ConsumerSettings.from_env(environ)
    processor = settings.load_processor()
    if settings.idempotency_table:
        processor = idempotent_processor(processor, settings.idempotency_table)
    return RetryingConsumer.from_settings(settings, processor)


def _group_of(record: object) -> str:
    if not isinstance(record, Mapping):
        return ""
    attributes = record.get("attributes")
    group = attributes.get("MessageGroupId") if isinstance(attributes, Mapping) else None
    return str(group or "")


def _receive_count(record: Mapping[str, Any]) -> int:
    try:
        return max(1, int(record["attributes"]["ApproximateReceiveCount"]))
    except (KeyError, TypeError, ValueError):
        return 1


def _in_record_order(records: Sequence[Mapping[str, Any]], failed: set[str]) -> list[str]:
    if not failed:
        return []
    out: list[str] = []
    seen: set[str] = set()
    for record in records:
        message_id = record_id(record)  # never an empty itemIdentifier: it would fail the whole batch
        if message_id is not None and message_id in failed and message_id not in seen:
            seen.add(message_id)
            out.append(message_id)
    return out


class IdempotentProcessor:
    """Wraps a processor with Powertools idempotency keyed on ``RetryContext.id`` (the first delivery's
    message id, the same across attempts): a message that already succeeded is not processed again
    when SQS delivers it twice. A failed attempt leaves no record, so retries still run."""

    def __init__(
        self, processor: Processor, persistence_store: Any, *, expires_after_seconds: int = 86_400
    ) -> None:
        from aws_lambda_powertools.utilities.idempotency import (  # optional feature: imported on use
            IdempotencyConfig,
            idempotent_function,
        )

        from serverless_retry.async_processor import synchronous  # an async processor runs to completion

        self._inner = synchronous(processor)
        self.config = IdempotencyConfig(
            event_key_jmespath="id",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=expires_after_seconds,
        )
        self._guarded = idempotent_function(
            self._run, data_keyword_argument="key", persistence_store=persistence_store, config=self.config
        )

    def _run(self, *, key: dict[str, str], message: Message) -> None:
        self._inner(message)

    def register_lambda_context(self, context: Any) -> None:
        # Lets Powertools expire an in-progress record when this invocation times out.
        self.config.register_lambda_context(context)

    def __call__(self, message: Message) -> None:
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyAlreadyInProgressError,
        )

        try:
            self._guarded(key={"id": message.retry.id}, message=message)
        except IdempotencyAlreadyInProgressError as exc:
            # Not a failure of the processor: retrying it would start a second chain.
            raise _InProgressElsewhere(str(exc)) from exc


def idempotent_processor(processor: Processor, table_name: str, **kwargs: Any) -> IdempotentProcessor:
    """``processor`` made idempotent with a DynamoDB table (partition key ``id``)."""
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    return IdempotentProcessor(processor, DynamoDBPersistenceLayer(table_name=table_name), **kwargs)

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
  3. with the idempotency table, a due copy claims its (id, attempt) for its SQS message id: a copy
     of an attempt that another copy claimed ends its chain, unprocessed (see ``claims``);
  4. call the processor: any exception, BaseException included, fails only its own record;
  5. success: nothing to do, the event source mapping deletes the message;
  6. failure: ``planning.plan_failure`` decides, as a pure function of the record and the policy (its
     "now" is the record's own first-receive time), among a delayed copy, delay hops, a one-time
     schedule, an in-place retry (visibility timeout), or a final copy to the retry-exhausted queue;
  7. the calls run batched once every record was processed: CreateSchedule (its at() fixed at call
     time; a refusal - throttling, quota, 5xx, timeout - turns the retry into delay hops), then
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

import random
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, TypedDict

from aws_lambda_powertools import Logger

from serverless_retry.aws import AwsClients
from serverless_retry.backoff import json_kind
from serverless_retry.claims import ClaimStore, DynamoDBClaims
from serverless_retry.clock import Clock, SystemClock
from serverless_retry.config import ConsumerSettings, QueueTargets
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
    attributes_from_record,
    schedule_name,
    unwrap,
)
from serverless_retry.errors import EventShapeError
from serverless_retry.message import Message, Processor, first_delivery
from serverless_retry.observability import BatchCounts, ConsumerMetrics, make_logger
from serverless_retry.planning import (
    Final,
    InPlace,
    QueueFacts,
    RecordFacts,
    Step,
    decision_time,
    expiry_problem,
    hop_limit,
    plan_failure,
)
from serverless_retry.planning import arrival as copy_arrival
from serverless_retry.policy import RetryPolicy

__all__ = [
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
TRACEBACK_CHARS = 2_000
LOG_ERROR_CHARS = 256


class BatchItemFailure(TypedDict):
    itemIdentifier: str


class BatchResponse(TypedDict):
    batchItemFailures: list[BatchItemFailure]


@dataclass
class BatchResult:
    failed_ids: list[str]  # record message ids for batchItemFailures, in record order
    counts: BatchCounts

    def response(self) -> BatchResponse:
        return {"batchItemFailures": [{"itemIdentifier": i} for i in self.failed_ids]}


@dataclass
class _Plan:
    """The AWS calls a batch needs, gathered while records are processed and made together after."""

    delayed: list[Outgoing] = field(default_factory=list)
    scheduled: list[ScheduledRetry] = field(default_factory=list)
    visibility: list[VisibilityChange] = field(default_factory=list)
    exhausted: list[Outgoing] = field(default_factory=list)
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # exhausted-queue key → outcome
    labels: dict[str, str] = field(default_factory=dict)  # key → what its call does, for the metrics
    failed: set[str] = field(default_factory=set)  # records the queue must redeliver
    claimed: dict[str, tuple[str, int]] = field(default_factory=dict)  # key → (retry id, attempt)
    repeat: dict[str, int] = field(default_factory=dict)  # in place: key → the attempt to repeat


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
    ) -> None:
        self.processor = processor
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
        self.claims = claims
        self.delivery.resend_after_timeout = claims is not None
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
    ) -> RetryingConsumer:
        clients = clients or AwsClients()
        claims = None
        if settings.idempotency_table:
            claims = DynamoDBClaims(
                lambda: clients.dynamodb,
                settings.idempotency_table,
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
        )

    def __call__(self, event: Mapping[str, Any], context: object = None) -> BatchResponse:
        records = sqs_records(event)
        if context is not None and isinstance(self.processor, IdempotentProcessor):
            self.processor.register_lambda_context(context)
        result = self.process_batch(records)
        try:
            self.metrics.publish(result.counts)
        except Exception:  # metrics must never turn a settled batch into a failed invocation
            self.logger.exception("publishing metrics failed")
        return result.response()

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
                    record.get("eventSourceARN") == source
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
        if plan.claimed:
            self._finish_claims(plan)
        return BatchResult(_in_record_order(records, plan.failed), counts)

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
                incoming = unwrap(
                    body,
                    attributes_from_record(record.get("messageAttributes") or {}),
                    message_id=message_id,
                    source=source,
                    receive_count=facts.receive_count if in_place else 1,
                )
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
                if incoming.kind == "envelope" and in_place and facts.receive_count > 1:
                    # In place, every receive is an attempt: a copy's attempt counts on from its own.
                    attempt = min(MAX_ATTEMPT, incoming.context.attempt + facts.receive_count - 1)
                    incoming = replace(incoming, context=replace(incoming.context, attempt=attempt))
                if incoming.kind == "envelope" and not self._due(plan, counts, record, facts, incoming):
                    if group is not None:
                        blocked[group] = None
                    return False
                if message_id in plan.repeat:
                    repeat = plan.repeat[message_id]
                    incoming = replace(incoming, context=replace(incoming.context, attempt=repeat))
                message = Message(message_id, incoming.body, incoming.attributes, incoming.context, record)
            else:
                receive_count = _receive_count(record)
                if (
                    self.claims is not None
                    and receive_count > 1
                    and not self._take(plan, counts, message_id, message_id, 0 if in_place else 1)
                ):
                    if group is not None and message_id in plan.failed:
                        blocked[group] = None  # it goes back unclaimed: the rest of its group waits
                    return False  # a redelivery whose handling already finished, or goes back
                attempt = plan.repeat.get(message_id, receive_count) if in_place else 1
                message = first_delivery(message_id, body, record, source, attempt)
        except Exception:  # a malformed record or a bug of ours: the queue redelivers, then its DLQ
            self.logger.exception("could not prepare record", extra={"message_id": record.get("messageId")})
            plan.failed.add(str(record.get("messageId", "")))
            if ordered:
                blocked[group or _group_of(record)] = None
            return False
        try:
            self.processor(message)
        except BaseException as error:  # e.g. CancelledError, SystemExit: this record only
            self._failed(
                plan, counts, record, message, facts=facts, incoming=incoming, error=error, blocked=blocked
            )
            return False
        return True

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
                if incoming is None:
                    incoming = unwrap(
                        message.body,
                        message.attributes,
                        message_id=message_id,
                        source=self._source,
                        receive_count=message.retry.attempt,
                    )
                # With claims, nothing is sent for a record before it holds its claim.
                if (
                    self.claims is None
                    or message_id in plan.claimed
                    or self._take(plan, counts, message_id, *self._claim_key(message_id, incoming))
                ):
                    step = self._plan_failure(plan, record, facts, incoming, error)
                    if isinstance(step, InPlace):
                        resumes = self.clock.now() + timedelta(seconds=step.timeout_seconds)
        except Exception:
            self.logger.exception("could not plan the retry", extra={"message_id": message_id})
            plan.failed.add(message_id)
        if self._ordered:
            blocked[_group_of(record)] = resumes

    def _finish_claims(self, plan: _Plan) -> None:
        """Mark done the claims of records whose next step happened (or that succeeded)."""
        assert self.claims is not None
        done = [(rid, attempt, key) for key, (rid, attempt) in plan.claimed.items() if key not in plan.failed]
        if not done:
            return
        try:
            self.claims.finish(done, now=self.clock.now())
        except Exception:  # a redelivery then runs once more; its duplicate copy is ended by the claim
            self.logger.exception("could not mark claims done", extra={"claims": len(done)})

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
                plan.delayed.append(
                    self._hop(message_id, record["body"], wait.due_at, facts, retry_id=context.id, tag="wait")
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
        return self._take(plan, counts, message_id, *self._claim_key(message_id, incoming))

    def _claim_key(self, message_id: str, incoming: Incoming) -> tuple[str, int]:
        """A copy claims (id, attempt); in place, where the message itself is the chain and every
        receive an attempt, the message claims (its SQS message id, 0)."""
        if self._in_place:
            return message_id, 0
        return incoming.context.id, incoming.context.attempt

    def _take(self, plan: _Plan, counts: BatchCounts, message_id: str, retry_id: str, attempt: int) -> bool:
        """Claim (retry id, attempt) for this record's SQS message: True to go on with it."""
        assert self.claims is not None
        log = {"message_id": message_id, "retry_id": retry_id, "attempt": attempt}
        try:
            result, final_attempt = self.claims.claim(retry_id, attempt, message_id, now=self.clock.now())
        except Exception:
            self.logger.exception("could not claim the attempt; the record goes back to the queue", extra=log)
            plan.failed.add(message_id)
            return False
        if result == "owned":
            plan.claimed[message_id] = (retry_id, attempt)
            if final_attempt is not None:
                plan.repeat[message_id] = final_attempt
            return True
        counts.duplicates += 1
        if result == "done":
            self.logger.info(
                "redelivered record already handled (its next step exists); acknowledged", extra=log
            )
        else:
            self.logger.warning(
                "duplicate copy: another copy of this attempt was claimed first; its chain ends here",
                extra=log,
            )
        return False

    # -- planning -----------------------------------------------------------------------------------------
    def _plan_failure(
        self,
        plan: _Plan,
        record: Mapping[str, Any],
        facts: RecordFacts,
        incoming: Incoming,
        error: BaseException,
    ) -> Step:
        now = decision_time(facts, self.clock.now(), in_place=self._in_place, incoming=incoming)
        step = plan_failure(self.policy, self.queue, facts, incoming, error, now=now, seed=self._seed)
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
        log = {
            "message_id": message_id,
            "retry_id": context.id,
            "attempt": context.attempt,
            "error_type": _type_name(error),
            "error": _error_text(error),
            "delay_seconds": decision.delay_seconds,
            "transport": decision.transport,
        }
        if isinstance(step, InPlace):
            plan.visibility.append(
                VisibilityChange(message_id, record["receiptHandle"], step.timeout_seconds)
            )
            plan.labels[message_id] = "visibility"
            self.logger.info("processing failed; retry via visibility timeout", extra=log)
            return step
        next_attempt = context.attempt + 1
        if step.transport == "sqs-delay":
            plan.delayed.append(Outgoing(message_id, step.body, delay_seconds=step.delay_seconds))
            plan.labels[message_id] = "sqs-delay"
        elif step.transport == "sqs-hops":
            plan.delayed.append(
                self._hop(message_id, step.body, step.due_at, facts, retry_id=context.id, tag=next_attempt)
            )
            plan.labels[message_id] = "sqs-hops"
        else:
            plan.scheduled.append(
                ScheduledRetry(
                    key=message_id,
                    name=schedule_name(context.id, next_attempt),
                    due_at=step.due_at,
                    body=step.body,
                    group_id=(facts.group_id or context.id) if self._fifo else None,
                    description=f"serverless-retry attempt {next_attempt} of {context.id}",
                    hops=self._hop(
                        message_id, step.body, step.due_at, facts, retry_id=context.id, tag=next_attempt
                    ),
                )
            )
        self.logger.info("processing failed; retry planned", extra=log)
        return step

    def _hop(
        self, key: str, body: str, due_at: datetime, facts: RecordFacts, *, retry_id: str, tag: object
    ) -> Outgoing:
        """A copy that waits in the source queue until ``due_at``: SQS delays of at most the hop limit
        (re-delayed on arrival while early); on a FIFO queue (no per-message delay) it arrives at once
        and is hidden there, with its group id and a deduplication id a redelivered record repeats."""
        if self._fifo:
            group = facts.group_id or retry_id
            return Outgoing(key, body, group_id=group, dedup_id=dedup_id(retry_id, tag, facts.message_id))
        return Outgoing(key, body, delay_seconds=hop_limit(self.targets.retention_seconds), due_at=due_at)

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
    ) -> None:
        body, attributes, form = final_message(
            incoming,
            outcome,
            now=now,
            error=error,
            reason=reason,
            traceback_text=short_traceback(error) if error is not None else "",
            max_bytes=self.targets.exhausted_max_message_bytes,
        )
        message_id: str = record["messageId"]
        context = incoming.context
        group = dedup = None
        if self.targets.exhausted_is_fifo:
            group = _group_of(record) or context.id
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
                if m.key in not_sent:
                    continue
                label = labels.get(m.key, "sqs-delay")
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


def _group_of(record: Mapping[str, Any]) -> str:
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
        message_id = str(record.get("messageId", ""))
        if message_id in failed and message_id not in seen:
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

        self._inner = processor
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

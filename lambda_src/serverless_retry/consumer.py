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
import random
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from aws_lambda_powertools import Logger

from serverless_retry.aws import AwsClients
from serverless_retry.backoff import json_kind
from serverless_retry.batch_state import BatchState, short_error
from serverless_retry.clock import Clock, SystemClock
from serverless_retry.config import ENV_CLAIMS_TABLE, ConsumerSettings, QueueTargets
from serverless_retry.delivery import (
    CallKind,
    Delivery,
    Outgoing,
    ScheduledRetry,
    VisibilityChange,
    dedup_id,
    final_message,
)
from serverless_retry.envelope import (
    MAX_ATTEMPT,
    Incoming,
    Outcome,
    RetryContext,
    attributes_from_record,
    fits,
    schedule_name,
    waiting_copy,
)
from serverless_retry.errors import ConfigError, EventShapeError, KeyUnavailable, UnhandledRecordError
from serverless_retry.idempotent_processor import (
    IdempotentProcessor,
    InProgressElsewhere,
    idempotent_processor,
)
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
    Copy,
    Final,
    InPlace,
    QueueFacts,
    RecordFacts,
    Step,
    expiry_problem,
    hop_limit,
    latest_due,
    plan_failure,
)
from serverless_retry.planning import arrival as copy_arrival
from serverless_retry.policy import RetryPolicy
from serverless_retry.record_reader import ReadRecord, first_delivery_of, group_of, read, read_message
from serverless_retry.records import raw_text, record_id, record_problem, unidentified_id
from serverless_retry.verdicts import GO, HAND_BACK, Hide, Verdict, WaitUntil

if TYPE_CHECKING:
    from serverless_retry.admission import Admission
    from serverless_retry.claims import ClaimStore
    from serverless_retry.retry_log import RetryLogGroup
    from serverless_retry.signing import EnvelopeSigner

# serverless_retry.admission (and claims) is imported where a claims table is in use (_admission):
# a consumer without one never runs it.

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
TRACEBACK_CHARS = 2_000
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


def short_traceback(error: BaseException) -> str:
    """The last frames of the error's traceback, bounded in size (the tail is the informative part)."""
    try:
        text = "".join(
            traceback.format_exception(type(error), error, error.__traceback__, limit=-TRACEBACK_FRAMES)
        )
    except Exception:  # an exception object hostile enough to break formatting
        text = f"{type(error).__name__}: <traceback unavailable>"
    return text[-TRACEBACK_CHARS:]


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


def _require_claims_in_place(targets: QueueTargets, claims: ClaimStore | None) -> None:
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


def _queue_facts(targets: QueueTargets, *, in_place: bool) -> QueueFacts:
    return QueueFacts(
        fifo=targets.source_is_fifo,
        in_place=in_place,
        retention_seconds=targets.retention_seconds,
        max_message_bytes=targets.max_message_bytes,
        scheduler=targets.schedule_group is not None and targets.scheduler_role_arn is not None,
    )


class RetryingConsumer:
    """Calls ``processor(Message)`` for each record of an SQS event and retries failures per ``policy``.

    ``consumer(event, context)`` returns ``{"batchItemFailures": [...]}`` for an event source mapping
    with ``ReportBatchItemFailures``. ``clients``, ``clock`` and ``rand`` are injectable for tests
    (``rand`` only seeds the per-message jitter; the same message and attempt always get the same delay).
    ``claims`` (built from the idempotency table by ``from_settings``) ends duplicate copies' chains.
    ``on_exhausted(message, error, Exhausted)`` is called for each message whose final copy is planned
    for the retry-exhausted queue, before it is sent; if it raises, the error is logged and the copy
    is sent anyway.

    One batch: each record is read (``record_reader``), admitted (``admission``: the claims' verdict),
    run, and its failure decided (``planning``) into the batch's state (``batch_state``), whose calls
    are delivered after the loop; the response names the records handed back.
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
        _require_claims_in_place(targets, claims)
        self.claims = claims  # (tests may set it later: the admission follows it)
        self.delivery.resend_after_timeout = claims is not None
        self._admitting: Admission | None = None  # see _admission
        self._in_place = targets.in_place or policy.transport == "visibility"
        self._ordered = targets.in_place  # FIFO ordered: a failure holds back the rest of its group
        self._fifo = targets.source_is_fifo
        self._source = targets.queue_arn
        self.queue = _queue_facts(targets, in_place=self._in_place)

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

    @property
    def _admission(self) -> Admission | None:
        """The claims' side, for the store in use (one per store; the lease read once carries over)."""
        claims = self.claims
        if claims is None:
            return None
        current = self._admitting
        if current is None or current.claims is not claims:
            from serverless_retry.admission import Admission

            lease = current.lease if current is not None else None
            current = self._admitting = Admission(
                claims,
                self.targets,
                self.clients,
                self.logger,
                self.clock,
                in_place=self._in_place,
                lease=lease,
            )
        return current

    @property
    def _signer(self) -> EnvelopeSigner | None:
        admission = self._admission
        return admission.signer if admission is not None else None

    # -- the batch: read → admit → run → decide, then deliver → respond ------------------------------------
    def process_batch(self, records: Iterable[Mapping[str, Any]]) -> BatchResult:
        if type(records) is not list and not isinstance(records, Sequence):
            records = list(records)
        state: BatchState | None = None  # made on the first record that needs a call: most need none
        processed = 0
        processor, source, in_place = self.processor, self._source, self._in_place
        plain = not self._ordered and self.claims is None  # then only the source and the body decide
        first_only = not self._ordered
        fast = first_delivery_of  # (a local: read once per record on the hot path)
        for record in records:
            # The hot path: an original message from our queue, its Message built without parsing.
            message = fast(record, source, plain, first_only, in_place)
            if message is None:
                state = state or self._prepare()
                processed += self._process_record(record, state)
                continue
            try:
                processor(message)
            except BaseException as error:  # e.g. CancelledError, SystemExit: this record only
                state = state or self._prepare()
                self._failed(state, message, None, error)
            else:
                processed += 1
        if state is None:
            return BatchResult([], BatchCounts(processed=processed))
        state.counts.processed = processed
        return self._respond(records, state)

    def _prepare(self) -> BatchState:
        return BatchState(BatchCounts(), ordered=self._ordered)

    def _respond(self, records: Sequence[Mapping[str, Any]], state: BatchState) -> BatchResult:
        state.deliver(self.delivery)
        if state.unidentified:
            try:
                self._unidentified_unsent(state, records)
            except BaseException:  # the invocation fails: the batch's metrics line never comes
                self._log_retries(state.retries, state.retried)
                raise
        admission = self._admission
        if state.claimed and admission is not None:
            admission.finish(state)
        return BatchResult(state.failed_in_order(records), state.counts, state.retries, state.retried)

    def _process_record(self, record: Mapping[str, Any], state: BatchState) -> bool:
        """One record the whole way: read, admitted, run, its failure decided. True on success."""
        problem = record_problem(record)
        if problem is not None:
            self._unhandled(state, record, problem, error=None)
            return False
        try:
            admitted = self._admit(read(record), state)
        except Exception as exc:  # a record we cannot read, or a bug of ours: kept with the reason
            self.logger.exception("could not prepare record", extra={"message_id": record.get("messageId")})
            reason = f"unhandled record: the consumer could not prepare it ({type(exc).__name__}: {short_error(exc)})"
            self._unhandled(state, record, reason, error=exc)
            return False
        if admitted is None:
            return False
        message, current = admitted
        try:
            self.processor(message)
        except BaseException as error:  # e.g. CancelledError, SystemExit: this record only
            self._failed(state, message, current, error)
            return False
        return True

    # -- admit ----------------------------------------------------------------------------------------------
    def _admit(self, current: ReadRecord, state: BatchState) -> tuple[Message, ReadRecord] | None:
        """The record's Message when it is to run now; None when it was dealt with unrun."""
        if current.source_arn != self._source:
            self._refuse(state, current)
            return None
        if state.blocks(current.group):  # FIFO ordered: its group's earlier record failed
            self._hold_back(state, current)
            return None
        if current.could_be_envelope:
            return self._admit_copy(current, state)
        return self._admit_first(current, state)

    def _admit_copy(self, current: ReadRecord, state: BatchState) -> tuple[Message, ReadRecord] | None:
        current, verdict = self._unwrap(current, state)
        incoming = current.incoming
        assert incoming is not None
        if verdict is None and incoming.kind == "invalid":
            now = current.decided_at(self.clock.now(), in_place=self._in_place)
            self._plan_final(
                state, current, "invalid-envelope", error=None, reason=incoming.problem or "invalid", now=now
            )
            state.block(current.group)
            return None
        if verdict is None and incoming.kind == "envelope":
            admission = self._admission
            verdict = self._early(current) or (admission.admit_copy(current, state) if admission else None)
        if verdict is not None and verdict is not GO:
            self._act(current, state, verdict)
            state.block(current.group)  # the rest of its group waits behind it
            return None
        message_id, context = current.message_id, incoming.context
        if incoming.kind == "envelope" and self._in_place and current.receive_count > 1:
            # In place, every receive that ran the processor is an attempt: a copy's attempt counts
            # on from its own (receives spent held back are not attempts).
            spent = current.receive_count - 1 - state.holds.get(message_id, 0)
            context = replace(context, attempt=min(MAX_ATTEMPT, context.attempt + max(0, spent)))
        if message_id in state.repeat:
            context = replace(context, attempt=state.repeat[message_id])
        incoming = incoming._replace(context=context)
        message = Message(message_id, incoming.body, incoming.attributes, context, current.record)
        return message, current._replace(incoming=incoming)

    def _admit_first(self, current: ReadRecord, state: BatchState) -> tuple[Message, ReadRecord] | None:
        message_id, receives = current.message_id, current.receive_count
        admission = self._admission
        if admission is not None and receives > 1:
            verdict = admission.admit_first(current, state)
            if verdict is not GO:
                self._act(current, state, verdict)
                if message_id in state.failed:
                    state.block(current.group)  # it goes back unclaimed: the rest of its group waits
                return None  # a redelivery whose handling already finished, or goes back
        if self._in_place:  # receives spent held back behind its group are not attempts
            attempt = state.repeat.get(message_id, max(1, receives - state.holds.get(message_id, 0)))
        else:
            attempt = 1
        return first_delivery(message_id, current.body, current.record, self._source, attempt), current

    def _unwrap(self, current: ReadRecord, state: BatchState) -> tuple[ReadRecord, Verdict | None]:
        """The record's body classified (``envelope.unwrap``), its signature checked with the claims
        table; with a verdict when the key cannot be read: the copy then waits as for an outage."""
        now = self.clock.now()
        receive_count = current.receive_count if self._in_place else 1
        latest = self._latest_due(now)
        admission = self._admission
        signer = admission.signer if admission is not None else None
        try:
            incoming = current.unwrapped(
                source=self._source, receive_count=receive_count, latest_due=latest, signer=signer
            )
        except KeyUnavailable:
            incoming = current.unwrapped(source=self._source, receive_count=receive_count, latest_due=latest)
            current = current._replace(incoming=incoming)
            if incoming.kind != "envelope" or admission is None:
                return current, None  # an invalid envelope needs no key: it goes to the exhausted queue
            state.counts.claims_unavailable += 1
            return current, admission.key_unavailable(current, now)
        if incoming.kind == "envelope" and incoming.problem is not None:
            self.logger.warning(incoming.problem, extra={"message_id": current.message_id})
        return current._replace(incoming=incoming), None

    def _latest_due(self, now: datetime) -> datetime:
        """The latest due time a copy arriving at ``now`` can carry: what the policy could have planned
        (``planning.latest_due``), and with the claims table the protocol's own longest wait: a copy that
        met a live claim waits until that claim's lease ends plus the takeover grace."""
        due = latest_due(self.policy, now)
        admission = self._admission
        if admission is None:
            return due
        return max(due, now + timedelta(seconds=admission.longest_wait()))

    def _early(self, current: ReadRecord) -> Verdict | None:
        """A copy that arrived before it is due waits again, unprocessed; None when it is due."""
        incoming = current.incoming
        assert incoming is not None
        wait = copy_arrival(incoming, current.facts, self.queue, now=self.clock.now())
        if wait is None:
            return None
        context = incoming.context
        self.logger.info(
            "copy arrived before it is due; it waits again, unprocessed",
            extra={
                "message_id": current.message_id,
                "retry_id": context.id,
                "attempt": context.attempt,
                "due_at": wait.due_at.isoformat(),
                "remaining_seconds": wait.remaining_seconds,
            },
        )
        if wait.hide_seconds is not None:
            return Hide(wait.hide_seconds)  # this very message is the copy: it must not be deleted
        # Carried on as the same copy, naming this message: a claim it may hold (it claimed on an
        # earlier receive, then came back early by another instance's clock) stays its own.
        return WaitUntil(wait.due_at, "wait", named=self.claims is not None)

    def _act(self, current: ReadRecord, state: BatchState, verdict: Verdict) -> None:
        """What a verdict other than GO does with the record (ACKNOWLEDGE: nothing, it is deleted)."""
        message_id = current.message_id
        if isinstance(verdict, WaitUntil):
            assert current.incoming is not None
            body = current.body
            if verdict.named:
                carried = waiting_copy(body, claimant=message_id, due_at=verdict.until)
                if fits(carried, self.targets.max_message_bytes):
                    body = carried
                elif verdict.hide_instead is not None:
                    verdict = Hide(verdict.hide_instead)
            if isinstance(verdict, WaitUntil):
                retry_id = current.incoming.context.id
                copy = self._hop(
                    message_id,
                    body,
                    verdict.until,
                    current.facts,
                    retry_id=retry_id,
                    tag=verdict.tag,
                    kind=CallKind.WAIT,
                )
                state.delayed.append(copy)
                return
        if isinstance(verdict, Hide):
            state.hide(
                VisibilityChange(message_id, current.receipt_handle, verdict.seconds, kind=CallKind.WAIT)
            )
        elif verdict is HAND_BACK:
            state.hand_back(message_id)

    def _refuse(self, state: BatchState, current: ReadRecord) -> None:
        self.logger.error(
            "record refused: it comes from another queue than this consumer's; handed back unprocessed",
            extra={
                "message_id": current.message_id,
                "event_source_arn": current.source_arn,
                "configured_queue_arn": self._source,
            },
        )
        state.counts.refused += 1
        state.hand_back(current.message_id)

    def _hold_back(self, state: BatchState, current: ReadRecord) -> None:
        """FIFO ordered: a later record of a group whose earlier record failed in this batch."""
        resumes = state.resumes(current.group)
        if resumes is not None:
            problem = expiry_problem(current.facts, self.targets.retention_seconds, resumes)
            if problem is not None:
                incoming = current.unwrapped(source=self._source, receive_count=current.receive_count)
                reason = f"held back behind an earlier message of its group: {problem}"
                now = self.clock.now()
                self._plan_final(
                    state,
                    current._replace(incoming=incoming),
                    "exhausted",
                    error=None,
                    reason=reason,
                    now=now,
                )
                return
        admission = self._admission
        if admission is not None:
            admission.count_hold(current.message_id)
        # Visible again at once: the failed record, still hidden, holds the group, which then resumes
        # with it. Left in flight, this record would hold the group for a whole visibility timeout.
        state.hide(VisibilityChange(current.message_id, current.receipt_handle, 0, kind=CallKind.HELD_BACK))

    # -- decide ---------------------------------------------------------------------------------------------
    def _failed(
        self, state: BatchState, message: Message, current: ReadRecord | None, error: BaseException
    ) -> None:
        """The processor failed on this record: plan what replaces it (or hand it back)."""
        message_id = message.message_id
        resumes: datetime | None = None
        try:
            if isinstance(error, InProgressElsewhere):
                state.hand_back(message_id)
            else:
                if current is None:  # the hot path's: read now
                    current = read_message(message)
                elif current.incoming is None:  # its body holds neither the envelope key nor a \u escape
                    current = current._replace(incoming=original_incoming(message))
                # A first delivery claims nothing: its copy's claim (or its own redelivery's) dedups.
                step = self._plan_failure(state, current, error)
                if isinstance(step, InPlace):
                    resumes = self.clock.now() + timedelta(seconds=step.timeout_seconds)
        except Exception:
            problem = record_problem(message.record)
            if problem is not None:  # (the fast path reads no more than it needs: a bad record shows here)
                self._unhandled(state, message.record, problem, error=error)
                return
            self.logger.exception("could not plan the retry", extra={"message_id": message_id})
            state.hand_back(message_id)
        if state.ordered:  # only FIFO ordered holds a group back (and reads the record's group)
            state.block(group_of(message.record), resumes)

    def _plan_failure(self, state: BatchState, current: ReadRecord, error: BaseException) -> Step:
        incoming = current.incoming
        assert incoming is not None
        now = current.decided_at(self.clock.now, in_place=self._in_place)
        step = plan_failure(
            self.policy,
            self.queue,
            current.facts,
            incoming,
            error,
            now=now,
            seed=self._seed,
            signer=self._signer,
        )
        message_id, context = current.message_id, incoming.context
        if isinstance(step, Final):
            admission = self._admission
            if (
                self._in_place
                and admission is not None
                and not admission.mark_final(message_id, context.attempt)
            ):
                state.hand_back(message_id)
                return step
            self._plan_final(state, current, step.outcome, error=error, reason=step.reason, now=now)
            return step
        state.log_retry(message_id, context.id, context.attempt, error, step.decision)
        if isinstance(step, InPlace):
            due = now + timedelta(seconds=step.timeout_seconds)  # counted from the decision, not the call
            state.visibility.append(
                VisibilityChange(message_id, current.receipt_handle, step.timeout_seconds, due)
            )
            return step
        self._queue_copy(state, current, step)
        return step

    def _queue_copy(self, state: BatchState, current: ReadRecord, step: Copy) -> None:
        """A retry's copy: SQS-delayed, in delay hops, or through a one-time schedule."""
        assert current.incoming is not None
        message_id, facts, context = current.message_id, current.facts, current.incoming.context
        next_attempt = context.attempt + 1
        # (unpacked once: each NamedTuple field read by name costs an attribute lookup)
        transport, delay_seconds, due_at, body, _ = step
        if transport == "sqs-delay":
            # DelaySeconds is taken at send time from the due time, so the copy is visible at decision
            # time + delay however long the rest of the batch runs; the decided delay caps it (a copy
            # then comes less than a second early at most, which counts as due).
            # (Positional, through tuple.__new__: keywords cost a NamedTuple a third more per record.)
            copy = (
                message_id,
                body,
                _NO_ATTRIBUTES,
                delay_seconds,
                facts.group_id,
                None,
                due_at,
                CallKind.DELAYED,
            )
            state.delayed.append(tuple.__new__(Outgoing, copy))
            return
        hops = self._hop(
            message_id, body, due_at, facts, retry_id=context.id, tag=next_attempt, kind=CallKind.HOPS
        )
        if transport == "sqs-hops":
            state.delayed.append(hops)
            return
        group = (facts.group_id or context.id) if self._fifo else None
        description = f"serverless-retry attempt {next_attempt} of {context.id}"
        name = schedule_name(context.id, next_attempt)
        state.scheduled.append(ScheduledRetry(message_id, name, due_at, body, group, description, hops))

    def _hop(
        self,
        key: str,
        body: str,
        due_at: datetime,
        facts: RecordFacts,
        *,
        retry_id: str,
        tag: object,
        kind: CallKind,
    ) -> Outgoing:
        """A copy that waits in the source queue until ``due_at``: SQS delays of at most the hop limit
        (re-delayed on arrival while early); on a FIFO queue (no per-message delay) it arrives at once
        and is hidden there, with its group id and a deduplication id a redelivered record repeats.
        On a standard queue it keeps the producer's MessageGroupId (a fair queue's tenant), if any."""
        if self._fifo:
            group = facts.group_id or retry_id
            return Outgoing(
                key, body, group_id=group, dedup_id=dedup_id(retry_id, tag, facts.message_id), kind=kind
            )
        limit = hop_limit(self.targets.retention_seconds)
        return Outgoing(key, body, delay_seconds=limit, due_at=due_at, group_id=facts.group_id, kind=kind)

    # -- final copies ---------------------------------------------------------------------------------------
    def _unhandled(
        self, state: BatchState, record: object, reason: str, *, error: BaseException | None
    ) -> None:
        """A record the consumer cannot handle: to the retry-exhausted queue with the reason (outcome
        invalid-envelope), its body (or the record itself) kept. If that send fails it is handed back
        alone, by its messageId; one without a usable messageId cannot be (see ``records``)."""
        message_id = record_id(record)
        raw = raw_text(record)
        key = message_id
        if key is None:
            key = f"<record without messageId #{len(state.unidentified) + 1}>"
            state.unidentified.append(key)
        attributes = record.get("messageAttributes") if isinstance(record, Mapping) else None
        incoming = Incoming(
            kind="invalid",
            body=raw,
            attributes=attributes_from_record(attributes) if isinstance(attributes, Mapping) else {},
            context=RetryContext(message_id or unidentified_id(raw), 1, None, (), self._source),
            meta=None,
            problem=reason,
        )
        kept = ReadRecord(key, raw, RecordFacts(key), record if isinstance(record, Mapping) else {}, incoming)
        try:
            self._plan_final(
                state, kept, "invalid-envelope", error=error, reason=reason, now=self.clock.now()
            )
        except Exception:  # not even that: hand it back (by its id, when it has one)
            self.logger.exception("could not plan the record's final copy", extra={"message_id": message_id})
            state.hand_back(key)
        if message_id is not None:
            state.block(group_of(record))  # the rest of its group waits behind it, as for any failure

    def _unidentified_unsent(self, state: BatchState, records: Sequence[Mapping[str, Any]]) -> None:
        """A record without a messageId whose exhausted copy could not be sent. batchItemFailures cannot
        name it: an empty or unknown itemIdentifier fails the whole batch, acknowledged neighbours and
        all. So fail the invocation only when that takes nothing else back - every other record goes
        back anyway - and otherwise say so loudly: it is a record no SQS event source mapping makes."""
        unsent = [key for key in state.unidentified if key in state.failed]
        if not unsent:
            return
        others = [i for i in (record_id(r) for r in records) if i is not None]
        if all(i in state.failed for i in others):
            raise UnhandledRecordError(
                f"{len(unsent)} record(s) without a messageId could not be sent to the retry-exhausted queue; "
                "failing the invocation returns only them and records already handed back"
            )
        self.logger.error(
            "records without a messageId could not be sent to the retry-exhausted queue; they cannot be "
            "handed back alone (an empty itemIdentifier fails the whole batch) and are dropped",
            extra={"records": len(unsent)},
        )

    def _plan_final(
        self,
        state: BatchState,
        current: ReadRecord,
        outcome: Outcome,
        *,
        error: BaseException | None,
        reason: str,
        now: datetime,
    ) -> None:
        incoming = current.incoming
        assert incoming is not None
        traceback_text = short_traceback(error) if error is not None else ""
        body, attributes, form = final_message(
            incoming, outcome, now=now, error=error, reason=reason, traceback_text=traceback_text,
            max_bytes=self.targets.exhausted_max_message_bytes, signer=self._signer,
        )  # fmt: skip
        message_id, context = current.message_id, incoming.context
        group = group_of(current.record) or None  # a standard queue keeps the producer's (fair queue) group
        dedup = None
        if self.targets.exhausted_is_fifo:
            group = group or context.id
            dedup = dedup_id(context.id, context.attempt, outcome)
        state.final(Outgoing(message_id, body, attributes, group_id=group, dedup_id=dedup), outcome)
        self.logger.warning(
            "message goes to the retry-exhausted queue",
            extra={
                "message_id": message_id, "retry_id": context.id, "attempt": context.attempt,
                "outcome": outcome, "reason": reason, "form": form,
                "error_type": type(error).__name__ if error is not None else None,
            },
        )  # fmt: skip
        if self.on_exhausted is not None and message_id not in state.repeat:
            # Not on the repeat path: this record's final decision was recorded (and the hook called)
            # on an earlier receive whose answer was lost; the copy is sent again, the hook is not.
            self._call_exhausted_hook(current, error, Exhausted(outcome, reason))

    def _call_exhausted_hook(
        self, current: ReadRecord, error: BaseException | None, exhausted: Exhausted
    ) -> None:
        assert self.on_exhausted is not None
        assert current.incoming is not None
        incoming = current.incoming
        try:
            message = Message(
                current.message_id, incoming.body, incoming.attributes, incoming.context, current.record
            )
            self.on_exhausted(message, error, exhausted)
        except BaseException:  # the user's hook: whatever it raises, the final copy is still sent
            self.logger.exception(
                "the on_exhausted hook failed; the message still goes to the retry-exhausted queue",
                extra={"message_id": current.message_id, "retry_id": incoming.context.id},
            )


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

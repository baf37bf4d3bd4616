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

import random
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from serverless_retry.aws import AwsClients
from serverless_retry.backoff import json_kind
from serverless_retry.clock import Clock, SystemClock
from serverless_retry.config import ENV_CLAIMS_TABLE, ConsumerSettings, QueueTargets
from serverless_retry.consumer.batch_response import (
    RETRIES_PLANNED,
    BatchItemFailure,
    BatchResponse,
    BatchResult,
    batch_result,
    check_unidentified,
    publish,
)
from serverless_retry.consumer.batch_state import BatchState, short_error
from serverless_retry.consumer.delivery import Delivery, VisibilityChange
from serverless_retry.consumer.final_copies import FinalCopies, short_traceback
from serverless_retry.consumer.idempotency import (
    IdempotentProcessor,
    InProgressElsewhere,
    idempotent_processor,
)
from serverless_retry.consumer.record_gate import RecordGate
from serverless_retry.consumer.record_reader import (
    ReadRecord,
    first_delivery_of,
    group_of,
    read,
    read_message,
)
from serverless_retry.consumer.retry_copies import queue_copy
from serverless_retry.consumer.unhandled_records import record_problem
from serverless_retry.errors import ConfigError, EventShapeError
from serverless_retry.message import ExhaustedHook, Message, Processor, original_incoming
from serverless_retry.observability import BatchCounts, ConsumerMetrics, make_logger
from serverless_retry.planning import Final, InPlace, QueueFacts, Step, decision_time, plan_failure
from serverless_retry.policy import RetryPolicy

if TYPE_CHECKING:
    from serverless_retry.consumer.admission import Admission
    from serverless_retry.consumer.claims import ClaimStore

# serverless_retry.consumer.admission (and claims) is imported where a claims table is in use
# (RecordGate.admission): a consumer without one never runs it.

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

    One batch: each record is read (``record_reader``), admitted (``record_gate``, with the claims'
    verdict), run, and its failure decided (``planning``; ``retry_copies``, ``final_copies``) into the
    batch's state (``batch_state``), whose calls are delivered after the loop; the response
    (``batch_response``) names the records handed back.
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
        self.delivery.resend_after_timeout = claims is not None
        self._in_place = targets.in_place or policy.transport == "visibility"
        self._ordered = targets.in_place  # FIFO ordered: a failure holds back the rest of its group
        self._source = targets.queue_arn
        self.queue = _queue_facts(targets, in_place=self._in_place)
        self.final = FinalCopies(targets, self.logger, self.clock, on_exhausted)
        self.gate = RecordGate(
            policy, self.queue, targets, clients=self.clients, logger=self.logger, clock=self.clock,
            final=self.final, claims=claims, in_place=self._in_place,
        )  # fmt: skip

    # The claims store and the exhausted hook live where they are used (set here, they follow).
    @property
    def claims(self) -> ClaimStore | None:
        return self.gate.claims

    @claims.setter
    def claims(self, claims: ClaimStore | None) -> None:
        self.gate.claims = claims

    @property
    def on_exhausted(self) -> ExhaustedHook | None:
        return self.final.on_exhausted

    @on_exhausted.setter
    def on_exhausted(self, hook: ExhaustedHook | None) -> None:
        self.final.on_exhausted = hook

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
            from serverless_retry.consumer.claims import DynamoDBClaims

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
        return publish(result, self.metrics, self.logger)

    @property
    def _admission(self) -> Admission | None:
        return self.gate.admission

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
        admission = self.gate.admission
        signer = admission.signer if admission is not None else None
        return BatchState(BatchCounts(), ordered=self._ordered, signer=signer)

    def _respond(self, records: Sequence[Mapping[str, Any]], state: BatchState) -> BatchResult:
        state.deliver(self.delivery)
        if state.unidentified:
            check_unidentified(state, records, self.logger)
        admission = self._admission
        if state.claimed and admission is not None:
            admission.finish(state)
        return batch_result(state, records)

    def _process_record(self, record: Mapping[str, Any], state: BatchState) -> bool:
        """One record the whole way: read, admitted, run, its failure decided. True on success."""
        problem = record_problem(record)
        if problem is not None:
            self.final.unhandled(state, record, problem, error=None)
            return False
        try:
            admitted = self.gate.admit(read(record), state)
        except Exception as exc:  # a record we cannot read, or a bug of ours: kept with the reason
            self.logger.exception("could not prepare record", extra={"message_id": record.get("messageId")})
            reason = f"unhandled record: the consumer could not prepare it ({type(exc).__name__}: {short_error(exc)})"
            self.final.unhandled(state, record, reason, error=exc)
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
                self.final.unhandled(state, message.record, problem, error=error)
                return
            self.logger.exception("could not plan the retry", extra={"message_id": message_id})
            state.hand_back(message_id)
        if state.ordered:  # only FIFO ordered holds a group back (and reads the record's group)
            state.block(group_of(message.record), resumes)

    def _plan_failure(self, state: BatchState, current: ReadRecord, error: BaseException) -> Step:
        incoming = current.incoming
        assert incoming is not None
        now = decision_time(current.facts, self.clock.now, in_place=self._in_place, incoming=incoming)
        step = plan_failure(
            self.policy,
            self.queue,
            current.facts,
            incoming,
            error,
            now=now,
            seed=self._seed,
            signer=state.signer,
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
            self.final.plan(state, current, step.outcome, error=error, reason=step.reason, now=now)
            return step
        state.log_retry(message_id, context.id, context.attempt, error, step.decision)
        if isinstance(step, InPlace):
            due = now + timedelta(seconds=step.timeout_seconds)  # counted from the decision, not the call
            state.visibility.append(
                VisibilityChange(message_id, current.receipt_handle, step.timeout_seconds, due)
            )
            return step
        queue_copy(state, current, step, self.queue.fifo, self.targets.retention_seconds)
        return step


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

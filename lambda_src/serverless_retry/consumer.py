"""The retrying SQS consumer (library form): call it with an SQS event, get the partial batch response.

Order of operations (DESIGN §5), per record:
  1. unwrap and validate the envelope (an invalid one goes to the retry-exhausted queue, never the loop);
  2. call the processor;
  3. success: nothing to do, the event source mapping deletes the message;
  4. failure: classify with the policy and plan the next step: a delayed copy (SendMessageBatch with
     DelaySeconds), a one-time schedule, a visibility change, or a final copy to the retry-exhausted
     queue. Those calls run batched once every record has been processed;
  5. a record counts as handled only when its call succeeded; otherwise it is in ``batchItemFailures``
     and the queue's visibility timeout (then its DLQ) takes over. Nothing is acknowledged before the
     copy that replaces it exists.

Why not Powertools' ``BatchProcessor``: it settles each record's success or failure when the record
handler returns, but here a failed record's fate is known only after the batched SendMessageBatch /
CreateSchedule calls that follow the loop, so we would have to undo its bookkeeping; and its per-record
wrapping is the overhead we are benchmarked against. We use Powertools for logging, metrics and
(optionally) idempotency.
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

from aws_lambda_powertools import Logger

from serverless_retry.aws import AwsClients
from serverless_retry.clock import Clock, ScaledClock, SystemClock
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
    Incoming,
    Outcome,
    attributes_from_record,
    encode,
    fits,
    next_envelope,
    schedule_name,
    unwrap,
)
from serverless_retry.message import Message, Processor, first_delivery
from serverless_retry.observability import BatchCounts, ConsumerMetrics, make_logger
from serverless_retry.policy import SQS_MAX_DELAY_SECONDS, VISIBILITY_MAX_SECONDS, RetryPolicy

__all__ = [
    "BatchItemFailure",
    "BatchResponse",
    "BatchResult",
    "IdempotentProcessor",
    "RetryingConsumer",
    "consumer_from_env",
    "idempotent_processor",
    "short_traceback",
]

# A one-time schedule's at() must still be in the future when Scheduler receives the call (a FIFO
# queue sends even a 0-second retry through the Scheduler); Scheduler fires with 60 s precision anyway.
SCHEDULE_MIN_LEAD_SECONDS = 5
TRACEBACK_FRAMES = 8
TRACEBACK_CHARS = 2_000


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
    failed: set[str] = field(default_factory=set)  # records the queue must redeliver


def short_traceback(error: BaseException) -> str:
    """The last frames of the error's traceback, bounded in size (the tail is the informative part)."""
    text = "".join(
        traceback.format_exception(type(error), error, error.__traceback__, limit=-TRACEBACK_FRAMES)
    )
    return text[-TRACEBACK_CHARS:]


class RetryingConsumer:
    """Calls ``processor(Message)`` for each record of an SQS event and retries failures per ``policy``.

    ``consumer(event, context)`` returns ``{"batchItemFailures": [...]}`` for an event source mapping
    with ``ReportBatchItemFailures``. ``clients``, ``clock`` and ``rand`` are injectable for tests
    (``rand`` only seeds the per-message jitter; the same message and attempt always get the same delay).
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
        self.delivery = Delivery(self.clients, targets, self.logger)
        self._visibility = policy.transport == "visibility"
        self._fifo = targets.source_is_fifo
        self._source = targets.queue_arn

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
        return cls(
            processor if processor is not None else settings.load_processor(),
            settings.policy,
            settings.targets,
            clients=clients,
            clock=settings.clock,
            rand=rand,
            logger=logger,
            metrics=metrics,
        )

    def __call__(self, event: Mapping[str, Any], context: object = None) -> BatchResponse:
        if context is not None and isinstance(self.processor, IdempotentProcessor):
            self.processor.register_lambda_context(context)
        result = self.process_batch(event.get("Records") or ())
        try:
            self.metrics.publish(result.counts)
        except Exception:  # metrics must never turn a settled batch into a failed invocation
            self.logger.exception("publishing metrics failed")
        return result.response()

    # -- the batch --------------------------------------------------------------------------------------
    def process_batch(self, records: Iterable[Mapping[str, Any]]) -> BatchResult:
        records = records if isinstance(records, Sequence) else list(records)
        plan = _Plan()
        counts = BatchCounts()
        processed = 0
        processor = self.processor
        visibility = self._visibility
        source = self._source
        # The hot path (an original message that succeeds) builds the Message directly and never
        # parses the body: only a body that could spell the envelope key, literally or via a \u
        # escape, can be an envelope, so only those go through unwrap().
        for record in records:
            try:
                message_id: str = record["messageId"]
                body: str = record["body"]
                receive_count = _receive_count(record) if visibility else 1
                incoming: Incoming | None = None
                if ENVELOPE_KEY in body or "\\u" in body:
                    incoming = unwrap(
                        body,
                        attributes_from_record(record.get("messageAttributes") or {}),
                        message_id=message_id,
                        source=source,
                        receive_count=receive_count,
                    )
                    if incoming.kind == "invalid":
                        self._plan_final(
                            plan,
                            record,
                            incoming,
                            "invalid-envelope",
                            error=None,
                            reason=incoming.problem or "invalid",
                        )
                        continue
                    message = Message(
                        message_id, incoming.body, incoming.attributes, incoming.context, record
                    )
                else:
                    message = first_delivery(message_id, body, record, source, receive_count)
            except Exception:  # a malformed record or a bug of ours: the queue redelivers, then its DLQ
                self.logger.exception(
                    "could not prepare record", extra={"message_id": record.get("messageId")}
                )
                plan.failed.add(str(record.get("messageId", "")))
                continue
            try:
                processor(message)
            except Exception as error:
                try:
                    if incoming is None:
                        incoming = unwrap(
                            body,
                            message.attributes,
                            message_id=message_id,
                            source=source,
                            receive_count=receive_count,
                        )
                    self._plan_retry(plan, record, incoming, error)
                except Exception:
                    self.logger.exception("could not plan the retry", extra={"message_id": message_id})
                    plan.failed.add(message_id)
            else:
                processed += 1
        counts.processed = processed
        self._deliver(plan, counts)
        return BatchResult(_in_record_order(records, plan.failed), counts)

    # -- planning -----------------------------------------------------------------------------------------
    def _plan_retry(
        self, plan: _Plan, record: Mapping[str, Any], incoming: Incoming, error: Exception
    ) -> None:
        now = self.clock.now()
        context = incoming.context
        first_failed_at = context.first_failed_at or self._first_receive(record, context.attempt, now)
        previous_delay = float(context.history[-1]["delay_seconds"]) if context.history else None
        decision = self.policy.decide(
            error,
            attempt=context.attempt,
            first_failed_at=first_failed_at,
            now=now,
            rand=random.Random(f"{self._seed}:{context.id}:{context.attempt}"),
            previous_delay=previous_delay,
        )
        message_id: str = record["messageId"]
        log = {
            "message_id": message_id,
            "retry_id": context.id,
            "attempt": context.attempt,
            "error_type": decision.error_type,
            "error": str(error)[:256],
        }
        if decision.action != "retry":
            outcome: Outcome = "exhausted" if decision.action == "exhausted" else "non-retryable"
            self._plan_final(plan, record, incoming, outcome, error=error, reason=decision.reason)
            return
        transport = decision.transport
        if transport == "sqs-delay" and self._fifo:
            # A FIFO queue has no per-message delay: the Scheduler carries the message group id.
            transport = "scheduler"
            decision = replace(decision, transport=transport)
        if transport == "visibility":
            timeout = min(VISIBILITY_MAX_SECONDS, decision.delay_seconds)
            plan.visibility.append(VisibilityChange(message_id, record["receiptHandle"], timeout))
            self.logger.info(
                "processing failed; retry via visibility timeout",
                extra={**log, "delay_seconds": decision.delay_seconds, "transport": transport},
            )
            return
        envelope = next_envelope(incoming, decision, error, now=now)
        body = encode(envelope)
        if not fits(body, self.targets.max_message_bytes):
            reason = (
                f"the retry envelope does not fit the queue's maximum message size of "
                f"{self.targets.max_message_bytes} bytes"
            )
            self._plan_final(plan, record, incoming, "too-large-to-retry", error=error, reason=reason)
            return
        meta = envelope["serverless_retry"]
        if transport == "sqs-delay":
            delay = min(SQS_MAX_DELAY_SECONDS, decision.delay_seconds)
            plan.delayed.append(Outgoing(message_id, body, delay_seconds=delay))
        else:
            plan.scheduled.append(
                ScheduledRetry(
                    key=message_id,
                    name=schedule_name(meta["id"], meta["attempt"]),
                    at=now + timedelta(seconds=max(decision.delay_seconds, SCHEDULE_MIN_LEAD_SECONDS)),
                    body=body,
                    group_id=self._group_id(record, meta["id"]) if self._fifo else None,
                    description=f"serverless-retry attempt {meta['attempt']} of {meta['id']}",
                )
            )
        self.logger.info(
            "processing failed; retry planned",
            extra={**log, "delay_seconds": decision.delay_seconds, "transport": transport},
        )

    def _plan_final(
        self,
        plan: _Plan,
        record: Mapping[str, Any],
        incoming: Incoming,
        outcome: Outcome,
        *,
        error: BaseException | None,
        reason: str,
    ) -> None:
        now = self.clock.now()
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
            group = self._group_id(record, context.id)
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
                "error_type": type(error).__name__ if error is not None else None,
            },
        )

    def _first_receive(self, record: Mapping[str, Any], attempt: int, now: datetime) -> datetime:
        """When the first attempt happened. An envelope carries it; for the visibility transport (no
        envelope) it is the message's ApproximateFirstReceiveTimestamp, a wall-clock time that a
        ScaledClock maps onto its logical time line."""
        if attempt <= 1 or not self._visibility:
            return now
        try:
            first = int(record["attributes"]["ApproximateFirstReceiveTimestamp"]) / 1000
        except (KeyError, TypeError, ValueError):
            return now
        clock = self.clock
        if isinstance(clock, ScaledClock):
            first = clock.epoch + (first - clock.epoch) * clock.scale
        return min(now, datetime.fromtimestamp(first, UTC))

    @staticmethod
    def _group_id(record: Mapping[str, Any], fallback: str) -> str:
        attributes = record.get("attributes") or {}
        return str(attributes.get("MessageGroupId") or fallback)

    # -- delivery -----------------------------------------------------------------------------------------
    def _deliver(self, plan: _Plan, counts: BatchCounts) -> None:
        delivery = self.delivery
        failed = plan.failed
        if plan.delayed:
            not_sent = delivery.send_delayed(plan.delayed)
            failed |= not_sent
            counts.retry_scheduled["sqs-delay"] += sum(1 for m in plan.delayed if m.key not in not_sent)
            counts.delivery_failed += len(not_sent)
        if plan.scheduled:
            not_scheduled = delivery.schedule_all(plan.scheduled)
            failed |= not_scheduled
            counts.retry_scheduled["scheduler"] += sum(
                1 for r in plan.scheduled if r.key not in not_scheduled
            )
            counts.delivery_failed += len(not_scheduled)
        if plan.visibility:
            not_changed = delivery.change_visibility(plan.visibility)
            # Always a batch item failure: the message itself is the retry, so it must not be deleted.
            failed.update(c.key for c in plan.visibility)
            counts.retry_scheduled["visibility"] += sum(
                1 for c in plan.visibility if c.key not in not_changed
            )
            counts.delivery_failed += len(not_changed)
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
        self._guarded(key={"id": message.retry.id}, message=message)


def idempotent_processor(processor: Processor, table_name: str, **kwargs: Any) -> IdempotentProcessor:
    """``processor`` made idempotent with a DynamoDB table (partition key ``id``)."""
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    return IdempotentProcessor(processor, DynamoDBPersistenceLayer(table_name=table_name), **kwargs)

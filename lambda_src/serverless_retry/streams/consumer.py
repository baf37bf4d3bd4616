"""The stream consumer (library form): call it with a Kinesis or DynamoDB Streams event (or an SQS
event from the retry queue), get the partial batch response.

A stream event, ``unordered`` (the default):
  1. each record is read into a ``StreamMessage`` (an unreadable one goes to the retry-exhausted queue
     with the reason) and the processor runs; any exception, BaseException included, fails only its
     own record and is classified by the retry policy;
  2. a failed record is handed off (``handoff``): pattern 1's retry copy on the retry queue, with the
     policy's delay (SQS delay, hops, or a one-time schedule), or a final copy on the retry-exhausted
     queue with its reason; the copies are sent batched after the loop (``BatchState.deliver``);
  3. the response names the FIRST record whose hand-off was not sent. For streams, Lambda takes the
     lowest reported sequence number as its checkpoint and retries every record from there ("If the
     batchItemFailures array contains multiple items, Lambda uses the record with the lowest sequence
     number as the checkpoint. Lambda then retries all records starting from that checkpoint.":
     Lambda developer guide, "Configuring partial batch response with Kinesis Data Streams and
     Lambda", and the same for DynamoDB). So a record is let past the checkpoint only when it
     succeeded or its copy was sent, and the records after a failed hand-off come again: their copies,
     if sent, are second hand-offs the retry queue's claims end as duplicates (the chain id is the
     record's position, ``reader.chain_id``).

``blocking``: Lambda's own behaviour, nothing handed off: the first failed record and every later one
are reported, so the shard retries from that record (then the mapping's MaximumRetryAttempts,
MaximumRecordAgeInSeconds, BisectBatchOnFunctionError and on-failure destination apply).

An SQS event is the retry queue's: its copies run in pattern 1's ``RetryingConsumer`` whose processor
is ``adapter.stream_processor`` around the same user processor.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, cast

from aws_lambda_powertools import Logger

from serverless_retry.async_processor import synchronous
from serverless_retry.aws import AwsClients
from serverless_retry.clock import Clock
from serverless_retry.config import ConsumerSettings, QueueTargets
from serverless_retry.consumer.batch_response import BatchResponse, BatchResult, publish
from serverless_retry.consumer.batch_state import BatchState
from serverless_retry.consumer.retrying_consumer import RetryingConsumer
from serverless_retry.errors import EventShapeError, UnhandledRecordError
from serverless_retry.message import ExhaustedHook, Processor
from serverless_retry.observability import BatchCounts, ConsumerMetrics
from serverless_retry.planning import QueueFacts
from serverless_retry.policy import RetryPolicy
from serverless_retry.streams.adapter import StreamProcessor, stream_processor
from serverless_retry.streams.handoff import Handoff
from serverless_retry.streams.reader import (
    StreamRecordError,
    event_kind,
    read_stream_record,
    sequence_number,
)
from serverless_retry.streams.settings import STREAM_ORDERINGS, StreamOrdering, stream_settings

__all__ = ["StreamRetryingConsumer", "stream_consumer_from_env"]


class StreamRetryingConsumer:
    """Calls ``processor(StreamMessage)`` for each stream record and retries failures per the retry
    consumer's policy through its retry queue (see the module docstring). ``retry_consumer`` is the
    pattern 1 consumer of the retry queue, built around ``stream_processor(processor)``: its policy,
    targets, clients, clock, claims (signing), delivery and final copies serve the stream side too."""

    def __init__(
        self,
        processor: StreamProcessor,
        retry_consumer: RetryingConsumer,
        *,
        ordering: StreamOrdering = "unordered",
        seed: int = 0,
    ) -> None:
        if ordering not in STREAM_ORDERINGS:
            raise ValueError(f"ordering must be one of {', '.join(STREAM_ORDERINGS)}, got {ordering!r}")
        targets = retry_consumer.targets
        if targets.source_is_fifo:
            raise ValueError(f"the retry queue must be a standard queue, got {targets.queue_arn}")
        # async handlers run to completion, as on the retry queue's side
        self.processor = cast(StreamProcessor, synchronous(cast(Processor, processor)))
        self.retry_consumer = retry_consumer
        self.ordering = ordering
        # Not the retry consumer's facts: those say "in place" for the visibility transport, which
        # would keep the message; a stream record has no message to keep, so it always gets a copy.
        queue = QueueFacts(
            fifo=False,
            in_place=False,
            retention_seconds=targets.retention_seconds,
            max_message_bytes=targets.max_message_bytes,
            scheduler=retry_consumer.queue.scheduler,
        )
        self.handoff = Handoff(retry_consumer.policy, queue, retry_consumer.final, seed=seed)

    @classmethod
    def build(
        cls,
        processor: StreamProcessor,
        policy: RetryPolicy,
        targets: QueueTargets,
        *,
        ordering: StreamOrdering = "unordered",
        clients: AwsClients | None = None,
        clock: Clock | None = None,
        rand: random.Random | None = None,
        logger: Logger | None = None,
        metrics: ConsumerMetrics | None = None,
        claims: Any = None,
        on_exhausted: ExhaustedHook | None = None,
    ) -> StreamRetryingConsumer:
        """The stream consumer and its retry queue's consumer from parts (tests inject them here)."""
        seed = rand.getrandbits(64) if rand is not None else 0
        retry_consumer = RetryingConsumer(
            stream_processor(processor), policy, targets, clients=clients, clock=clock, rand=rand,
            logger=logger, metrics=metrics, claims=claims, on_exhausted=on_exhausted,
        )  # fmt: skip
        return cls(processor, retry_consumer, ordering=ordering, seed=seed)

    @classmethod
    def from_settings(
        cls,
        settings: ConsumerSettings,
        ordering: StreamOrdering = "unordered",
        processor: StreamProcessor | None = None,
        *,
        clients: AwsClients | None = None,
        logger: Logger | None = None,
        metrics: ConsumerMetrics | None = None,
        on_exhausted: ExhaustedHook | None = None,
    ) -> StreamRetryingConsumer:
        """With the claims table of the settings (the module's default), as ``RetryingConsumer``'s."""
        user = processor if processor is not None else cast(StreamProcessor, settings.load_processor())
        retry_consumer = RetryingConsumer.from_settings(
            settings, stream_processor(user), clients=clients, logger=logger, metrics=metrics,
            on_exhausted=on_exhausted,
        )  # fmt: skip
        return cls(user, retry_consumer, ordering=ordering)

    @property
    def logger(self) -> Logger:
        return self.retry_consumer.logger

    def __call__(self, event: Mapping[str, Any], context: object = None) -> BatchResponse:
        if event_kind(event) is None:  # the retry queue's SQS event (or an empty one)
            return self.retry_consumer(event, context)
        records = event["Records"]
        result = (
            self.process_blocking(records) if self.ordering == "blocking" else self.process_stream(records)
        )
        return publish(result, self.retry_consumer.metrics, self.logger)

    # -- blocking: the shard waits at the first failure -------------------------------------------------
    def process_blocking(self, records: Sequence[Any]) -> BatchResult:
        counts = BatchCounts()
        for index, raw in enumerate(records):
            try:
                self.processor(read_stream_record(raw))
            except BaseException:  # this record (whatever it raised) and every later one go back
                self.logger.exception("stream record failed; the shard retries from it", extra=_where(raw))
                return BatchResult(_positions(records[index:]), counts)
            counts.processed += 1
        return BatchResult([], counts)

    # -- unordered: a failed record is handed off, the shard goes on ------------------------------------
    def process_stream(self, records: Sequence[Any]) -> BatchResult:
        state: BatchState | None = None  # made on the first failure: most batches need no call
        processed = 0
        clock = self.retry_consumer.clock
        keys = _keys(records)
        for key, raw in zip(keys, records, strict=True):
            try:
                message = read_stream_record(raw if isinstance(raw, Mapping) else {})
            except StreamRecordError as exc:
                state = state or self._prepare()
                self._unreadable(state, key, raw, str(exc))
                continue
            try:
                self.processor(message)
            except BaseException as error:  # e.g. CancelledError, SystemExit: this record only
                state = state or self._prepare()
                try:
                    self.handoff.failed(state, key, message, error, clock.now())
                except Exception:  # e.g. the signing key unavailable: not handed off, reported
                    self.logger.exception("could not plan the stream record's retry", extra=_where(raw))
                    state.hand_back(key)
            else:
                processed += 1
        if state is None:
            return BatchResult([], BatchCounts(processed=processed))
        state.counts.processed = processed
        state.deliver(self.retry_consumer.delivery)
        return BatchResult(
            self._first_unsent(records, keys, state), state.counts, state.retries, state.retried
        )

    def _prepare(self) -> BatchState:
        admission = self.retry_consumer.gate.admission  # with the claims table: copies are signed
        return BatchState(BatchCounts(), ordered=False, signer=admission.signer if admission else None)

    def _unreadable(self, state: BatchState, key: str, raw: object, problem: str) -> None:
        record = raw if isinstance(raw, Mapping) else {"record": raw}
        try:
            self.handoff.unreadable(state, key, record, problem, self.retry_consumer.clock.now())
        except Exception:
            self.logger.exception("could not plan the unreadable stream record's final copy")
            state.hand_back(key)

    def _first_unsent(self, records: Sequence[Any], keys: list[str], state: BatchState) -> list[str]:
        """The first record whose hand-off was not sent, by its sequence number (one is enough: Lambda
        retries from the lowest reported one). A record without a sequence number cannot be named (an
        empty or unknown itemIdentifier fails the whole batch): the invocation fails, so Lambda retries
        the whole batch and nothing unsent is let past the checkpoint."""
        for index, (key, raw) in enumerate(zip(keys, records, strict=True)):
            if key in state.failed:
                position = sequence_number(raw)
                if position is None:
                    raise UnhandledRecordError(
                        f"stream record #{index} has no sequence number and its hand-off was not sent; "
                        "failing the invocation so that Lambda retries the batch"
                    )
                return [position]
        return []


def _keys(records: Sequence[Any]) -> list[str]:
    """Each record's key in the batch's state (and its log lines): its sequence number, or "#<index>"
    for a record without one (or a repeat of one already in the batch)."""
    keys: list[str] = []
    seen: set[str] = set()
    for index, raw in enumerate(records):
        position = sequence_number(raw)
        key = position if position is not None and position not in seen else f"#{index}"
        seen.add(key)
        keys.append(key)
    return keys


def _positions(records: Sequence[Any]) -> list[str]:
    positions = [sequence_number(raw) for raw in records]
    if positions and positions[0] is None:
        raise EventShapeError("the failed stream record has no sequence number: the batch is retried whole")
    return [p for p in positions if p is not None]


def _where(raw: object) -> dict[str, object]:
    return {"sequence_number": sequence_number(raw)}


def stream_consumer_from_env(environ: Mapping[str, str] | None = None) -> StreamRetryingConsumer:
    """The consumer the stream handler runs, from the environment (``os.environ`` by default): the
    same settings as the SQS consumer's (the retry queue is SERVERLESS_RETRY_QUEUE_URL/_ARN) plus
    SERVERLESS_RETRY_STREAM_ORDERING. Raises ``ConfigError`` naming the variable at fault."""
    settings, ordering = stream_settings(environ)
    return StreamRetryingConsumer.from_settings(settings, ordering)

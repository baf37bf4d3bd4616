"""The consumer's final copies: what goes to the retry-exhausted queue, and how.

A record whose retries are over (exhausted, non-retryable, too large to retry, an invalid envelope,
one that would expire held back behind its group) gets one final copy, planned into the batch's
state with its reason; the ``on_exhausted`` hook hears of it before it is sent. A record the consumer
cannot handle at all (``unhandled``) is kept the same way, its body or the record itself.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from serverless_retry.consumer.delivery import Outgoing, dedup_id
from serverless_retry.consumer.record_reader import ReadRecord, group_of
from serverless_retry.consumer.unhandled_records import raw_text, record_id, unidentified_id
from serverless_retry.envelope import Incoming, Outcome, RetryContext, attributes_from_record
from serverless_retry.message import ExhaustedHook, Message
from serverless_retry.planning import RecordFacts

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

    from serverless_retry.clock import Clock
    from serverless_retry.config import QueueTargets
    from serverless_retry.consumer.batch_state import BatchState

__all__ = ["TRACEBACK_CHARS", "TRACEBACK_FRAMES", "FinalCopies", "short_traceback"]

TRACEBACK_FRAMES = 8
TRACEBACK_CHARS = 2_000


def short_traceback(error: BaseException) -> str:
    """The last frames of the error's traceback, bounded in size (the tail is the informative part)."""
    try:
        text = "".join(
            traceback.format_exception(type(error), error, error.__traceback__, limit=-TRACEBACK_FRAMES)
        )
    except Exception:  # an exception object hostile enough to break formatting
        text = f"{type(error).__name__}: <traceback unavailable>"
    return text[-TRACEBACK_CHARS:]


class FinalCopies:
    """Plans final copies into a batch's state (signed with the batch's signer, when it has one)."""

    def __init__(
        self,
        targets: QueueTargets,
        logger: Logger,
        clock: Clock,
        on_exhausted: ExhaustedHook | None,
    ) -> None:
        self.targets = targets
        self.logger = logger
        self.clock = clock
        self.on_exhausted = on_exhausted
        self._source = targets.queue_arn

    def unhandled(
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
        facts = RecordFacts(key, group_id=group_of(record) or None)
        kept = ReadRecord(key, raw, facts, record if isinstance(record, Mapping) else {}, incoming)
        try:
            self.plan(state, kept, "invalid-envelope", error=error, reason=reason, now=self.clock.now())
        except Exception:  # not even that: hand it back (by its id, when it has one)
            self.logger.exception("could not plan the record's final copy", extra={"message_id": message_id})
            state.hand_back(key)
        if message_id is not None:
            state.block(kept.group)  # the rest of its group waits behind it, as for any failure

    def plan(
        self,
        state: BatchState,
        current: ReadRecord,
        outcome: Outcome,
        *,
        error: BaseException | None,
        reason: str,
        now: datetime,
    ) -> None:
        """The record's final copy, queued in the batch's state; the hook told (once per decision)."""
        incoming = current.incoming
        assert incoming is not None
        # Imported here: only a record that ends needs the final message's code (~1 ms at cold start).
        from serverless_retry.terminal import final_copy

        traceback_text = short_traceback(error) if error is not None else ""
        body, attributes, form, payload = final_copy(
            incoming, outcome, now=now, error=error, reason=reason, traceback_text=traceback_text,
            max_bytes=self.targets.exhausted_max_message_bytes, signer=state.signer,
            store=self.targets.payload_target,
        )  # fmt: skip
        message_id, context = current.message_id, incoming.context
        group, dedup = self._exhausted_ids(current, outcome)
        state.final(
            Outgoing(message_id, body, attributes, group_id=group, dedup_id=dedup, payload=payload), outcome
        )
        self.logger.warning(
            "message goes to the retry-exhausted queue",
            extra={
                "message_id": message_id, "retry_id": context.id, "attempt": context.attempt,
                "outcome": outcome, "reason": reason, "form": form,
                "error_type": type(error).__name__ if error is not None else None,
            },
        )  # fmt: skip
        # Not on the repeat path: this record's final decision was recorded (and the hook called)
        # on an earlier receive whose answer was lost; the copy is sent again, the hook is not.
        if self.on_exhausted is not None and message_id not in state.repeat:
            self._call_exhausted_hook(current, error, outcome, reason)

    def _exhausted_ids(self, current: ReadRecord, outcome: Outcome) -> tuple[str | None, str | None]:
        """The final copy's MessageGroupId and MessageDeduplicationId: a standard queue keeps the
        producer's (fair queue) group; a FIFO one groups by chain and dedups by (id, attempt, outcome)."""
        if not self.targets.exhausted_is_fifo:
            return current.group, None
        assert current.incoming is not None
        context = current.incoming.context
        return current.group or context.id, dedup_id(context.id, context.attempt, outcome)

    def _call_exhausted_hook(
        self, current: ReadRecord, error: BaseException | None, outcome: Outcome, reason: str
    ) -> None:
        from serverless_retry.exhausted import Exhausted  # (defined by the first message that ends)

        assert self.on_exhausted is not None
        assert current.incoming is not None
        incoming = current.incoming
        exhausted = Exhausted(outcome, reason)
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

"""A failed stream record handed to pattern 1's retry path: planned (``planning.plan_failure``) into a
retry copy on the retry queue (``retry_copies.queue_copy``: SQS delay, hops or a schedule) or a final
copy on the retry-exhausted queue (``final_copies``), queued in the batch's state and sent after the
loop by ``delivery``, exactly as the SQS consumer does it; nothing of that logic is repeated here.

The copy's original body is the stream record as Lambda sent it (JSON: its stream, shard, sequence
number and data), its retry id the record's chain id (``reader.chain_id``), its source the stream ARN.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from serverless_retry.consumer.record_reader import ReadRecord
from serverless_retry.consumer.retry_copies import queue_copy
from serverless_retry.envelope import original
from serverless_retry.planning import Copy, Final, QueueFacts, RecordFacts, plan_failure

if TYPE_CHECKING:
    from serverless_retry.consumer.batch_state import BatchState
    from serverless_retry.consumer.final_copies import FinalCopies
    from serverless_retry.policy import RetryPolicy
    from serverless_retry.streams.stream_message import StreamMessage

__all__ = ["Handoff", "carried_body"]

# The copy carries no message attributes: a stream record has none, its position is in the body.
_NO_ATTRIBUTES: Mapping[str, Any] = {}


def carried_body(record: Mapping[str, Any]) -> str:
    """The stream record as the copy's original body (compact, keys sorted: a re-poll writes the same)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _carried(key: str, record: Mapping[str, Any], chain: str, source: str) -> ReadRecord:
    """The failed record as pattern 1's retry path reads an SQS record: an original, attempt 1, no
    SQS timestamps (so its decision's "now" is the invocation's clock: a record read late from a
    lagging shard still waits its full delay), no group."""
    body = carried_body(record)
    incoming = original(body, _NO_ATTRIBUTES, message_id=chain, source=source)
    return ReadRecord(key, body, RecordFacts(key), {}, incoming)


class Handoff:
    """Plans one batch's failed stream records into its state (see the module docstring)."""

    def __init__(self, policy: RetryPolicy, queue: QueueFacts, final: FinalCopies, *, seed: int) -> None:
        if queue.fifo or queue.in_place:
            raise ValueError("a stream's retry queue is a standard queue (copies wait by delay or schedule)")
        self.policy = policy
        self.queue = queue
        self.final = final
        self.seed = seed

    def failed(
        self, state: BatchState, key: str, message: StreamMessage, error: BaseException, now: datetime
    ) -> None:
        """The record's processor raised ``error``: its retry copy or final copy, queued under ``key``."""
        current = _carried(key, message.record, message.retry.id, message.event_source_arn)
        incoming = current.incoming
        assert incoming is not None
        step = plan_failure(
            self.policy, self.queue, current.facts, incoming, error,
            now=now, seed=self.seed, signer=state.signer,
        )  # fmt: skip
        if isinstance(step, Final):
            self.final.plan(state, current, step.outcome, error=error, reason=step.reason, now=now)
            return
        assert isinstance(step, Copy)  # (never InPlace: the queue facts say it is not in place)
        state.log_retry(key, incoming.context.id, 1, error, step.decision)
        queue_copy(state, current, step, False, self.queue.retention_seconds)

    def unreadable(
        self, state: BatchState, key: str, record: Mapping[str, Any], problem: str, now: datetime
    ) -> None:
        """A record without its kind's fields: kept on the retry-exhausted queue with the reason."""
        from serverless_retry.streams.reader import chain_id, sequence_number

        source = str(record.get("eventSourceARN") or "unknown")
        body = carried_body(record)
        chain = chain_id(source, None, sequence_number(record) or "", body)  # its content: a re-poll's too
        current = _carried(key, record, chain, source)
        assert current.body == body
        reason = f"unreadable stream record: {problem}"
        self.final.plan(state, current, "invalid-envelope", error=None, reason=reason, now=now)

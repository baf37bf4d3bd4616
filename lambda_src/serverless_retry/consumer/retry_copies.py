"""The copies a retry (or a wait) sends: an SQS-delayed copy, delay hops, or a one-time schedule whose
hops stand by in case the scheduler refuses; queued in the batch's state, sent after the loop."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from serverless_retry.consumer.delivery import CallKind, Outgoing, ScheduledRetry, dedup_id
from serverless_retry.envelope import schedule_name
from serverless_retry.planning import Copy, RecordFacts, hop_limit

if TYPE_CHECKING:
    from serverless_retry.consumer.batch_state import BatchState
    from serverless_retry.consumer.record_reader import ReadRecord

__all__ = ["hop", "queue_copy"]

_NO_ATTRIBUTES = Outgoing._field_defaults["attributes"]  # an Outgoing's attributes when it has none
_DELAYED, _HOPS = CallKind.DELAYED, CallKind.HOPS


def hop(
    key: str,
    body: str,
    due_at: datetime,
    facts: RecordFacts,
    *,
    retry_id: str,
    tag: object,
    kind: CallKind,
    fifo: bool,
    retention_seconds: int,
) -> Outgoing:
    """A copy that waits in the source queue until ``due_at``: SQS delays of at most the hop limit
    (re-delayed on arrival while early); on a FIFO queue (no per-message delay) it arrives at once
    and is hidden there, with its group id and a deduplication id a redelivered record repeats.
    On a standard queue it keeps the producer's MessageGroupId (a fair queue's tenant), if any."""
    if fifo:
        group = facts.group_id or retry_id
        return Outgoing(
            key, body, group_id=group, dedup_id=dedup_id(retry_id, tag, facts.message_id), kind=kind
        )
    limit = hop_limit(retention_seconds)
    return Outgoing(key, body, delay_seconds=limit, due_at=due_at, group_id=facts.group_id, kind=kind)


def queue_copy(
    state: BatchState, current: ReadRecord, step: Copy, fifo: bool, retention_seconds: int
) -> None:
    """A retry's copy: SQS-delayed, in delay hops, or through a one-time schedule. (Positional:
    called per failed record.)"""
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
        copy = (message_id, body, _NO_ATTRIBUTES, delay_seconds, facts.group_id, None, due_at, _DELAYED, None)
        state.delayed.append(tuple.__new__(Outgoing, copy))
        return
    hops = hop(
        message_id,
        body,
        due_at,
        facts,
        retry_id=context.id,
        tag=next_attempt,
        kind=_HOPS,
        fifo=fifo,
        retention_seconds=retention_seconds,
    )
    if transport == "sqs-hops":
        state.delayed.append(hops)
        return
    group = (facts.group_id or context.id) if fifo else None
    description = f"serverless-retry attempt {next_attempt} of {context.id}"
    name = schedule_name(context.id, next_attempt)
    state.scheduled.append(ScheduledRetry(message_id, name, due_at, body, group, description, hops))

"""An SQS record read once: what every step of the consumer reads of it, in one typed value.

``first_delivery_of`` is the hot path (an original message from our queue, on its first receive or
without claims): the Message straight from the record, the body never parsed. Every other record is
``read`` into a ``ReadRecord`` (its id, body, system attributes, and once unwrapped its envelope or
original), which a failure of the hot path's Message gets too (``read_message``). Pure.
"""

# (No ``from __future__ import annotations``: class annotations stay real types, which a NamedTuple,
# TypedDict or dataclass reads at import far cheaper than strings typing compiles into ForwardRefs.)
from collections.abc import Mapping
from typing import Any, NamedTuple

from serverless_retry.envelope import ENVELOPE_KEY, Incoming
from serverless_retry.message import Message, first_delivery, original_incoming
from serverless_retry.planning import RecordFacts

__all__ = ["ReadRecord", "could_be_envelope", "first_delivery_of", "group_of", "read", "read_message"]


def could_be_envelope(body: str) -> bool:
    """Only a body that spells the envelope key, literally or through a \\u escape, can be one."""
    return ENVELOPE_KEY in body or "\\u" in body


def receive_count(record: Mapping[str, Any]) -> int:
    try:
        return max(1, int(record["attributes"]["ApproximateReceiveCount"]))
    except (KeyError, TypeError, ValueError):
        return 1


def group_of(record: object) -> str:
    """The record's MessageGroupId, "" without one (also for what is not a record)."""
    if not isinstance(record, Mapping):
        return ""
    attributes = record.get("attributes")
    group = attributes.get("MessageGroupId") if isinstance(attributes, Mapping) else None
    return str(group or "")


def first_delivery_of(
    record: Mapping[str, Any], source: str, plain: bool, first_only: bool, in_place: bool
) -> Message | None:
    """The Message of a record the hot path takes, else None (the record is ``read``): an original
    from ``source``, and ``plain`` (nothing but the source and the body decide) or, when
    ``first_only``, on its first receive (a redelivery claims first). (Positional: called per record.)"""
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
            and (plain or (first_only and receive_count(record) == 1))
        )
    except Exception:
        return None
    if not fast:
        return None
    return first_delivery(message_id, body, record, source, receive_count(record) if in_place else 1)


class ReadRecord(NamedTuple):
    """A record the consumer can handle (``records.record_problem`` found nothing), as read."""

    message_id: str
    body: str
    facts: RecordFacts  # receive count, group, the send and first-receive times
    record: Mapping[str, Any]  # the raw record, handed to the processor's Message
    incoming: Incoming | None = None  # the envelope (or original, or invalid) once unwrapped

    @property
    def group(self) -> str | None:
        return self.facts.group_id

    @property
    def receive_count(self) -> int:
        return self.facts.receive_count

    @property
    def receipt_handle(self) -> str:
        handle: str = self.record["receiptHandle"]
        return handle

    @property
    def source_arn(self) -> object:
        return self.record.get("eventSourceARN")

    @property
    def could_be_envelope(self) -> bool:
        return could_be_envelope(self.body)


# (Positional, through tuple.__new__, as RecordFacts.of makes its facts: one is made per failed record.)
_new = tuple.__new__


def read(record: Mapping[str, Any]) -> ReadRecord:
    return _new(ReadRecord, (record["messageId"], record["body"], RecordFacts.of(record), record, None))


def read_message(message: Message) -> ReadRecord:
    """The ReadRecord of a hot-path Message (its record an original): read when it failed."""
    fields = message.__dict__  # (not through Message's __getattr__ hook: see message.original_incoming)
    record = fields["record"]
    parts = (fields["message_id"], fields["body"], RecordFacts.of(record), record, original_incoming(message))
    return _new(ReadRecord, parts)

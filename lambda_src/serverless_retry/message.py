"""What the user's processor receives: the original message, unwrapped, plus its retry context."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from serverless_retry.envelope import (
    Incoming,
    MessageAttribute,
    RetryContext,
    attributes_from_record,
)

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from serverless_retry.exhausted import Exhausted

__all__ = [
    "Exhausted",
    "ExhaustedHook",
    "Message",
    "Processor",
    "first_delivery",
    "message_attributes",
    "original_incoming",
]


@dataclass(frozen=True)
class Message:
    """One message as the processor sees it; the retry envelope is already taken off.

    ``message_id`` is this delivery's SQS message id; ``retry.id`` is the id of the first delivery and
    stays the same across attempts, so it is the key to use for idempotency.
    """

    message_id: str
    body: str  # the original body, verbatim
    attributes: dict[str, MessageAttribute]  # the original message attributes, SQS API form
    retry: RetryContext
    record: Mapping[str, Any]  # the raw SQS event record, for anything else the processor needs

    def json(self) -> Any:
        """The body parsed as JSON (raises ``json.JSONDecodeError`` for a non-JSON body)."""
        return json.loads(self.body)

    @property
    def attempt(self) -> int:
        """1 for the first delivery, 2 for the first retry, ..."""
        return self.retry.attempt

    @cached_property
    def sqs_record(self) -> SQSRecord:
        """This message as Powertools' ``SQSRecord``, of the *unwrapped* record: ``body``,
        ``json_body`` and ``message_attributes`` are the original message's, as on its first
        delivery, never the retry envelope a retry travels in (``md5OfBody`` is the original body's;
        ``md5OfMessageAttributes``, which SQS computed over the envelope's, is None). The rest (message
        id, receipt handle, ``attributes`` such as ApproximateReceiveCount) is this delivery's. Built
        on first read: Powertools' data classes are imported only by processors that use them."""
        from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

        record = dict(self.record)
        if record.get("body") != self.body:  # a retry copy: the record holds the envelope
            record["body"] = self.body
            record["md5OfBody"] = hashlib.md5(self.body.encode(), usedforsecurity=False).hexdigest()
            record["messageAttributes"] = {
                name: _event_attribute(attribute) for name, attribute in self.attributes.items()
            }
            record["md5OfMessageAttributes"] = None
        return SQSRecord(record)

    if not TYPE_CHECKING:  # hidden from type checkers, so a typo in message.atributes still fails mypy

        def __getattr__(self, name: str) -> Any:
            # Only reached for a field missing from the instance: the consumer's hot path leaves
            # ``attributes`` of an original message out and lets the first read convert them from
            # the record (Lambda's event form -> API form), as most processors never read them.
            if name == "attributes":
                return message_attributes(self)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def original_incoming(message: Message) -> Incoming:
    """What ``envelope.original()`` would make of an original message's record, from the message
    that already holds each part. Read from the instance dict: every attribute read on a Message
    passes its ``__getattr__`` hook first, and the consumer makes one of these per failed record."""
    fields = message.__dict__
    parts = ("original", fields["body"], message_attributes(message), fields["retry"], None, None)
    return tuple.__new__(Incoming, parts)  # (positional, as RecordFacts.of makes its facts)


def message_attributes(message: Message) -> dict[str, MessageAttribute]:
    """``message.attributes``, converted from the record on first read. The consumer reads them this
    way: a read through ``__getattr__`` first raises and discards an AttributeError, some thousands
    of instructions on every failed record."""
    fields = message.__dict__
    value: dict[str, MessageAttribute] | None = fields.get("attributes")
    if value is None:
        raw = fields["record"].get("messageAttributes") if "record" in fields else None
        value = fields["attributes"] = attributes_from_record(raw) if raw else {}
    return value


def _event_attribute(attribute: MessageAttribute) -> dict[str, Any]:
    """A message attribute from the SQS API form back to the Lambda event form."""
    out: dict[str, Any] = {
        "dataType": attribute["DataType"],
        "stringListValues": [],
        "binaryListValues": [],
    }
    if "StringValue" in attribute:
        out["stringValue"] = attribute["StringValue"]
    if "BinaryValue" in attribute:
        out["binaryValue"] = attribute["BinaryValue"]  # base64 text in both forms
    return out


# The processor contract: called once per message; returning means success, raising means failure
# (RetryableError, NonRetryableError, HttpError or any exception: the retry policy classifies it).
Processor = Callable[[Message], object]


# The exhausted hook (Sidekiq's sidekiq_retries_exhausted, Celery's on_failure): called with the
# message, the processor's last error (None when no processor ran, e.g. an invalid envelope) and why,
# once per message that goes to the retry-exhausted queue, before its copy is sent.
ExhaustedHook = Callable[[Message, BaseException | None, "Exhausted"], object]


# The consumer's hot path: one Message (and RetryContext) per record. A frozen dataclass's __init__
# sets each field through object.__setattr__, which costs more than everything else the consumer does
# for a successful record; filling a fresh instance's __dict__ gives an equal (==) object. Kept here,
# next to the classes it depends on, and guarded so that adding __slots__ fails loudly at import.
if "__slots__" in RetryContext.__dict__ or "__slots__" in Message.__dict__:  # pragma: no cover
    raise ImportError("serverless_retry.message builds RetryContext/Message through __dict__")
_new = object.__new__


def first_delivery(
    message_id: str, body: str, record: Mapping[str, Any], source: str, attempt: int = 1
) -> Message:
    """The Message of an original (non-envelope) record; its attributes convert on first read."""
    context = _new(RetryContext)
    fields = context.__dict__
    fields["id"] = message_id
    fields["attempt"] = attempt
    fields["first_failed_at"] = None
    fields["history"] = ()
    fields["source"] = source
    message = _new(Message)
    fields = message.__dict__
    fields["message_id"] = message_id
    fields["body"] = body
    fields["retry"] = context
    fields["record"] = record
    return message


def __getattr__(name: str) -> object:
    """``Exhausted``, defined in ``serverless_retry.exhausted`` and read here on first use: only a
    message that ends makes one, so a batch that only succeeds does not define it at cold start."""
    if name == "Exhausted":
        from serverless_retry.exhausted import Exhausted

        globals()[name] = Exhausted
        return Exhausted
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

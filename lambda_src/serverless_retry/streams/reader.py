"""A stream event's records read into ``StreamMessage``s, and each record's chain id. Pure.

A stream record's identity is its position: the stream (event source ARN), the shard and the
sequence number (Kinesis sequence numbers are unique per partition key within a shard, so the key is
part of it too). A re-polled batch carries the same records again, so the chain id derived from the
position is the same, and the retry queue's claims meet a second hand-off of a record as a duplicate.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from serverless_retry.backoff import json_kind
from serverless_retry.envelope import RetryContext
from serverless_retry.errors import EventShapeError
from serverless_retry.streams.dynamodb_json import DynamoDBJsonError, deserialise_item
from serverless_retry.streams.records import DYNAMODB_SOURCE, KINESIS_SOURCE, StreamKind
from serverless_retry.streams.stream_message import StreamMessage

__all__ = [
    "CHAIN_NAMESPACE",
    "StreamRecordError",
    "chain_id",
    "event_kind",
    "read_stream_record",
    "record_kind",
    "sequence_number",
]

# uuid5 namespace of stream chain ids: a chain id looks like an SQS message id (the ids pattern 1's
# chains carry) and is a pure function of the record's position.
CHAIN_NAMESPACE = uuid.UUID("6b1c1f43-5a0e-4d5e-9a8b-3f2d7c9e0a11")
_SOURCES: dict[str, StreamKind] = {KINESIS_SOURCE: "kinesis", DYNAMODB_SOURCE: "dynamodb"}


class StreamRecordError(ValueError):
    """A stream record that lacks what every record of its kind carries."""


def record_kind(record: object) -> StreamKind | None:
    if not isinstance(record, Mapping):
        return None
    return _SOURCES.get(str(record.get("eventSource")))


def event_kind(event: object) -> StreamKind | None:
    """ "kinesis" or "dynamodb" for a stream event, None for an SQS event (or an empty one, which needs
    no consumer); ``EventShapeError`` for anything else. (Every record of one event comes from one
    event source mapping: the first tells.)"""
    if not isinstance(event, Mapping):
        raise EventShapeError(f"the stream consumer takes a Lambda event object, got {json_kind(event)}")
    records = event.get("Records")
    if not isinstance(records, list):
        raise EventShapeError("not a stream or SQS event: it has no Records list")
    if not records:
        return None
    first = records[0]
    kind = record_kind(first)
    if kind is not None:
        return kind
    if isinstance(first, Mapping) and first.get("eventSource") == "aws:sqs":
        return None
    source = first.get("eventSource") or first.get("EventSource") if isinstance(first, Mapping) else None
    raise EventShapeError(
        f"not a Kinesis, DynamoDB Streams or SQS event: its records come from {source or 'unknown'!r}"
    )


def _text(parent: Mapping[str, Any], key: str, where: str) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise StreamRecordError(f"{where}{key} is missing or not a non-empty string")
    return value


def _section(record: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = record.get(key)
    if not isinstance(value, Mapping):
        raise StreamRecordError(f"{key} is missing or not an object")
    return value


def _moment(value: object) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None


def sequence_number(record: object) -> str | None:
    """The record's sequence number (what a stream's batchItemFailures names), None if it has none."""
    kind = record_kind(record)
    if kind is None:
        return None
    assert isinstance(record, Mapping)
    section = record.get("kinesis" if kind == "kinesis" else "dynamodb")
    value = (
        section.get("sequenceNumber" if kind == "kinesis" else "SequenceNumber")
        if isinstance(section, Mapping)
        else None
    )
    return value if isinstance(value, str) and value else None


def chain_id(arn: str, shard_id: str | None, sequence: str, within: str | None) -> str:
    """The record's retry id: the same for every re-poll of the same record, different for any other.
    ``within``: what else tells the record apart (Kinesis: its partition key; DynamoDB: its eventID)."""
    position = json.dumps([arn, shard_id, within, sequence], separators=(",", ":"))
    return str(uuid.uuid5(CHAIN_NAMESPACE, position))


def first_attempt(chain: str, source: str) -> RetryContext:
    return RetryContext(chain, 1, None, (), source)


def read_stream_record(record: Mapping[str, Any], retry: RetryContext | None = None) -> StreamMessage:
    """The StreamMessage of one raw record; ``retry`` None: its first attempt (chain id from its
    position). Raises ``StreamRecordError`` for a record without its kind's fields."""
    kind = record_kind(record)
    if kind is None:
        raise StreamRecordError(
            f"eventSource {record.get('eventSource')!r} is not a Kinesis or DynamoDB stream"
        )
    arn = _text(record, "eventSourceARN", "")
    event_id = _text(record, "eventID", "")
    if kind == "kinesis":
        return _kinesis(record, arn, event_id, retry)
    return _dynamodb(record, arn, event_id, retry)


def _kinesis(record: Mapping[str, Any], arn: str, event_id: str, retry: RetryContext | None) -> StreamMessage:
    section = _section(record, "kinesis")
    sequence = _text(section, "sequenceNumber", "kinesis.")
    partition_key = _text(section, "partitionKey", "kinesis.")
    raw = section.get("data")
    if not isinstance(raw, str):
        raise StreamRecordError("kinesis.data is missing or not base64 text")
    try:
        data = base64.b64decode(raw, validate=True)
    except binascii.Error:
        raise StreamRecordError("kinesis.data is not valid base64") from None
    # eventID is "<shard id>:<sequence number>" (Lambda's Kinesis event).
    shard, sep, _ = event_id.partition(":")
    shard_id = shard if sep else None
    context = retry or first_attempt(chain_id(arn, shard_id, sequence, partition_key), arn)
    return StreamMessage(
        kind="kinesis",
        data=data,
        partition_key=partition_key,
        sequence_number=sequence,
        shard_id=shard_id,
        event_source_arn=arn,
        event_id=event_id,
        approximate_arrival=_moment(section.get("approximateArrivalTimestamp")),
        retry=context,
        record=record,
    )


def _image(section: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = section.get(key)
    if value is None:
        return None
    try:
        return deserialise_item(value)
    except DynamoDBJsonError as exc:
        raise StreamRecordError(f"dynamodb.{key}: {exc}") from None


def _dynamodb(
    record: Mapping[str, Any], arn: str, event_id: str, retry: RetryContext | None
) -> StreamMessage:
    section = _section(record, "dynamodb")
    sequence = _text(section, "SequenceNumber", "dynamodb.")
    event_name = _text(record, "eventName", "")
    if event_name not in ("INSERT", "MODIFY", "REMOVE"):
        raise StreamRecordError(f"eventName {event_name[:20]!r} is not INSERT, MODIFY or REMOVE")
    keys = _image(section, "Keys")
    if keys is None:
        raise StreamRecordError("dynamodb.Keys is missing")
    # The Lambda record names no shard; its eventID is "a globally unique identifier for the event that
    # was recorded in this stream record" (DynamoDB Streams API, Record), the same on every re-read.
    context = retry or first_attempt(chain_id(arn, None, sequence, event_id), arn)
    data = json.dumps(section, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return StreamMessage(
        kind="dynamodb",
        data=data,
        partition_key=None,
        sequence_number=sequence,
        shard_id=None,
        event_source_arn=arn,
        event_id=event_id,
        approximate_arrival=_moment(section.get("ApproximateCreationDateTime")),
        retry=context,
        record=record,
        event_name=event_name,
        keys=keys,
        new_image=_image(section, "NewImage"),
        old_image=_image(section, "OldImage"),
    )


def records_of(event: Mapping[str, Any]) -> Sequence[Any]:
    records = event.get("Records")
    return records if isinstance(records, list) else []

"""The Lambda events of stream event source mappings, as AWS shapes them, built from what
GetRecords returns (boto3's kinesis and dynamodbstreams clients).

Kinesis (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html, "Example event"): each
record is ``kinesis{kinesisSchemaVersion, partitionKey, sequenceNumber, data (base64),
approximateArrivalTimestamp (Unix seconds)}`` with eventSource ``aws:kinesis``, eventVersion,
eventID ``<shardId>:<sequenceNumber>``, eventName ``aws:kinesis:record``, invokeIdentityArn (the
function's role), awsRegion and eventSourceARN. DynamoDB
(https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html): the stream record as GetRecords gives
it (eventID, eventName INSERT/MODIFY/REMOVE, eventVersion, ``dynamodb{Keys, NewImage, OldImage,
SequenceNumber, SizeBytes, StreamViewType, ApproximateCreationDateTime}``, the images in DynamoDB
JSON), with eventSource ``aws:dynamodb``, awsRegion and eventSourceARN. A synchronous invocation
carries at most 6 MB: a batch is cut before the record that would pass it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

__all__ = [
    "SYNC_PAYLOAD_LIMIT",
    "StreamRecord",
    "dynamodb_record",
    "fits_payload",
    "kinesis_record",
    "stream_event",
]

SYNC_PAYLOAD_LIMIT = 6 * 1024 * 1024
_EVENT_OVERHEAD = len(b'{"Records": []}')


class KinesisData(TypedDict):
    kinesisSchemaVersion: str
    partitionKey: str
    sequenceNumber: str
    data: str
    approximateArrivalTimestamp: float


class KinesisEventRecord(TypedDict):
    kinesis: KinesisData
    eventSource: str
    eventVersion: str
    eventID: str
    eventName: str
    invokeIdentityArn: str
    awsRegion: str
    eventSourceARN: str


@dataclass(frozen=True)
class StreamRecord:
    """One record of a shard: its sequence number, arrival (logical Unix seconds), partition key
    (DynamoDB: the item's keys) and its record in the Lambda event."""

    sequence_number: str
    arrival: float
    partition_key: str
    event_record: Mapping[str, Any]

    @property
    def size(self) -> int:
        return len(json.dumps(self.event_record, default=str).encode()) + 2


def _seconds(value: Any) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value)


def kinesis_record(
    raw: Mapping[str, Any], *, shard_id: str, stream_arn: str, region: str, role: str
) -> StreamRecord:
    """A Kinesis GetRecords record (boto3: Data bytes, ApproximateArrivalTimestamp datetime)."""
    data = raw["Data"]
    arrival = _seconds(raw["ApproximateArrivalTimestamp"])
    sequence = str(raw["SequenceNumber"])
    record: KinesisEventRecord = {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": str(raw["PartitionKey"]),
            "sequenceNumber": sequence,
            "data": base64.b64encode(data if isinstance(data, bytes) else str(data).encode()).decode(),
            "approximateArrivalTimestamp": round(arrival, 3),
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{shard_id}:{sequence}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": role,
        "awsRegion": region,
        "eventSourceARN": stream_arn,
    }
    return StreamRecord(sequence, arrival, str(raw["PartitionKey"]), dict(record))


def _as_json(value: Any) -> Any:
    """An attribute value (or image) as the Lambda event carries it: boto3 gives B and BS as bytes,
    the event as base64 strings."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, Mapping):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_as_json(v) for v in value]
    return value


def dynamodb_record(raw: Mapping[str, Any], *, stream_arn: str, region: str) -> StreamRecord:
    """A DynamoDB Streams GetRecords record (boto3: ApproximateCreationDateTime a datetime)."""
    stream = {
        k: _as_json(v) if k in ("Keys", "NewImage", "OldImage") else v for k, v in raw["dynamodb"].items()
    }
    arrival = _seconds(stream["ApproximateCreationDateTime"])
    # Lambda's event carries it as Unix seconds (with-ddb.html's example), not a date string.
    stream["ApproximateCreationDateTime"] = int(arrival)
    record = {
        "eventID": raw.get("eventID"),
        "eventName": raw.get("eventName"),
        "eventVersion": raw.get("eventVersion", "1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": stream,
        "eventSourceARN": stream_arn,
    }
    keys = json.dumps(stream.get("Keys") or {}, sort_keys=True)
    return StreamRecord(str(stream["SequenceNumber"]), arrival, keys, record)


def stream_event(records: Sequence[StreamRecord]) -> dict[str, Any]:
    return {"Records": [dict(r.event_record) for r in records]}


def fits_payload(records: Sequence[StreamRecord], limit: int = SYNC_PAYLOAD_LIMIT) -> int:
    """How many records from the start of ``records`` one invocation carries (at least one: a
    single record larger than the limit is the function's failure to report, not the poller's)."""
    size = _EVENT_OVERHEAD
    for count, record in enumerate(records):
        size += record.size
        if size > limit and count:
            return count
    return len(records)

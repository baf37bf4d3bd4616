"""The wire formats of the stream events Lambda's event source mappings send (Kinesis Data Streams and
DynamoDB Streams), as TypedDicts. Shapes from AWS's Lambda developer guide ("Using Lambda with Kinesis
Data Streams", "Using Lambda with DynamoDB", the sample events there); samples in tests/events/.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "DYNAMODB_SOURCE",
    "KINESIS_SOURCE",
    "AttributeValue",
    "DynamoDBEvent",
    "DynamoDBRecord",
    "DynamoDBStreamRecord",
    "KinesisData",
    "KinesisEvent",
    "KinesisRecord",
    "StreamKind",
]

KINESIS_SOURCE = "aws:kinesis"
DYNAMODB_SOURCE = "aws:dynamodb"
StreamKind = Literal["kinesis", "dynamodb"]

# DynamoDB JSON: one key naming the type (S, N, B, BOOL, NULL, M, L, SS, NS, BS) -> its value.
AttributeValue = dict[str, Any]


class KinesisData(TypedDict):
    kinesisSchemaVersion: str
    partitionKey: str
    sequenceNumber: str
    data: str  # base64 of the record's bytes
    approximateArrivalTimestamp: float  # epoch seconds, with milliseconds


class KinesisRecord(TypedDict):
    kinesis: KinesisData
    eventSource: Literal["aws:kinesis"]
    eventVersion: str
    eventID: str  # "<shard id>:<sequence number>"
    eventName: str  # "aws:kinesis:record"
    invokeIdentityArn: str
    awsRegion: str
    eventSourceARN: str  # the stream (or its consumer) ARN


class KinesisEvent(TypedDict):
    Records: list[KinesisRecord]


class DynamoDBStreamRecord(TypedDict):
    ApproximateCreationDateTime: NotRequired[float]  # epoch seconds
    Keys: dict[str, AttributeValue]
    NewImage: NotRequired[dict[str, AttributeValue]]  # per StreamViewType
    OldImage: NotRequired[dict[str, AttributeValue]]
    SequenceNumber: str
    SizeBytes: int
    StreamViewType: Literal["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"]


class DynamoDBRecord(TypedDict):
    eventID: str
    eventName: Literal["INSERT", "MODIFY", "REMOVE"]
    eventVersion: str
    eventSource: Literal["aws:dynamodb"]
    awsRegion: str
    dynamodb: DynamoDBStreamRecord
    eventSourceARN: str  # arn:aws:dynamodb:<region>:<account>:table/<table>/stream/<label>
    userIdentity: NotRequired[dict[str, str]]  # TTL deletions: {"type": "Service", "principalId": ...}


class DynamoDBEvent(TypedDict):
    Records: list[DynamoDBRecord]

"""Reading a stream's shards from the emulator: Kinesis (ListShards, GetShardIterator, GetRecords
by StreamARN) and DynamoDB Streams (DescribeStream, GetShardIterator, GetRecords), one interface.

A mapping's StartingPosition picks the first iterator: TRIM_HORIZON (the oldest record), LATEST
(records put from now on) or, Kinesis only, AT_TIMESTAMP (StartingPositionTimestamp); afterwards
the shard is read on with each answer's NextShardIterator, and a reopened shard resumes
AFTER_SEQUENCE_NUMBER of its checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from serverless_retry_tools.local.runtime.streams.events import StreamRecord, dynamodb_record, kinesis_record

__all__ = ["DynamoDBShards", "KinesisShards", "ShardSource", "shard_source", "source_kind"]

# GetRecords' own limits: Kinesis 10,000 records, DynamoDB Streams 1,000.
_KINESIS_READ_LIMIT = 10_000
_DYNAMODB_READ_LIMIT = 1_000


def source_kind(arn: str) -> str | None:
    """``kinesis`` or ``dynamodb`` for a stream ARN (a DynamoDB table's stream), else None."""
    parts = arn.split(":")
    if len(parts) < 6:
        return None
    if parts[2] == "kinesis" and parts[5].startswith("stream/"):
        return "kinesis"
    if parts[2] == "dynamodb" and "/stream/" in parts[5]:
        return "dynamodb"
    return None


class ShardSource(Protocol):
    def shards(self) -> list[str]: ...

    def iterator(
        self, shard_id: str, position: str, *, timestamp: Any = None, after: str | None = None
    ) -> str: ...

    def read(self, shard_id: str, iterator: str, limit: int) -> tuple[list[StreamRecord], str | None]: ...


class KinesisShards:
    def __init__(self, client: Any, stream_arn: str, *, region: str, role: Callable[[], str]) -> None:
        self._client = client
        self._arn = stream_arn
        self._region = region
        self._role = role

    def shards(self) -> list[str]:
        found: list[str] = []
        kwargs: dict[str, Any] = {"StreamARN": self._arn}
        for _ in range(100):  # bounded pagination
            page = self._client.list_shards(**kwargs)
            found.extend(s["ShardId"] for s in page.get("Shards", []))
            token = page.get("NextToken")
            if not token:
                break
            kwargs = {"NextToken": token}
        return found

    def iterator(
        self, shard_id: str, position: str, *, timestamp: Any = None, after: str | None = None
    ) -> str:
        kwargs: dict[str, Any] = {"StreamARN": self._arn, "ShardId": shard_id}
        if after is not None:
            kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", StartingSequenceNumber=after)
        elif position == "AT_TIMESTAMP":
            kwargs.update(
                ShardIteratorType="AT_TIMESTAMP",
                Timestamp=timestamp if isinstance(timestamp, datetime) else float(timestamp or 0),
            )
        else:
            kwargs.update(ShardIteratorType=position)
        return str(self._client.get_shard_iterator(**kwargs)["ShardIterator"])

    def read(self, shard_id: str, iterator: str, limit: int) -> tuple[list[StreamRecord], str | None]:
        page = self._client.get_records(
            ShardIterator=iterator, Limit=min(limit, _KINESIS_READ_LIMIT), StreamARN=self._arn
        )
        role = self._role()
        records = [
            kinesis_record(r, shard_id=shard_id, stream_arn=self._arn, region=self._region, role=role)
            for r in page.get("Records", [])
        ]
        return records, page.get("NextShardIterator")


class DynamoDBShards:
    def __init__(self, client: Any, stream_arn: str, *, region: str) -> None:
        self._client = client
        self._arn = stream_arn
        self._region = region

    def shards(self) -> list[str]:
        stream = self._client.describe_stream(StreamArn=self._arn)["StreamDescription"]
        return [s["ShardId"] for s in stream.get("Shards", [])]

    def iterator(
        self, shard_id: str, position: str, *, timestamp: Any = None, after: str | None = None
    ) -> str:
        kwargs: dict[str, Any] = {"StreamArn": self._arn, "ShardId": shard_id}
        if after is not None:
            kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=after)
        else:
            kwargs.update(ShardIteratorType=position)
        return str(self._client.get_shard_iterator(**kwargs)["ShardIterator"])

    def read(self, shard_id: str, iterator: str, limit: int) -> tuple[list[StreamRecord], str | None]:
        page = self._client.get_records(ShardIterator=iterator, Limit=min(limit, _DYNAMODB_READ_LIMIT))
        records = [
            dynamodb_record(r, stream_arn=self._arn, region=self._region) for r in page.get("Records", [])
        ]
        return records, page.get("NextShardIterator")


def shard_source(kind: str, client: Any, arn: str, *, region: str, role: Callable[[], str]) -> ShardSource:
    if kind == "kinesis":
        return KinesisShards(client, arn, region=region, role=role)
    return DynamoDBShards(client, arn, region=region)

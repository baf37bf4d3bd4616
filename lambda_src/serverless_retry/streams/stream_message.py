"""What the user's processor receives for a stream record: the record decoded, plus its retry context.

The same value on the record's first run (from the stream) and on every retry (from the retry queue,
rebuilt by ``adapter``): only ``retry`` differs. Frozen; ``record`` is the raw Lambda event record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from serverless_retry.envelope import RetryContext
from serverless_retry.streams.records import StreamKind

__all__ = ["StreamMessage"]


@dataclass(frozen=True)
class StreamMessage:
    """One Kinesis or DynamoDB Streams record as the processor sees it.

    ``retry.id`` is derived from the record's position (stream ARN, shard, sequence number): the same
    on every attempt and every re-poll of the record, so it is the key to use for idempotency.
    """

    kind: StreamKind
    data: bytes  # Kinesis: the record's bytes; DynamoDB: the record's "dynamodb" object as JSON
    partition_key: str | None  # Kinesis only
    sequence_number: str
    shard_id: str | None  # Kinesis: from eventID; a DynamoDB Streams Lambda record does not carry it
    event_source_arn: str
    event_id: str
    approximate_arrival: datetime | None  # Kinesis approximateArrivalTimestamp / DynamoDB creation time
    retry: RetryContext
    record: Mapping[str, Any] = field(repr=False)  # the raw stream record, as Lambda sent it
    event_name: str | None = None  # DynamoDB: INSERT, MODIFY or REMOVE
    keys: dict[str, Any] | None = None  # DynamoDB: the item's keys, plain Python (N -> Decimal)
    new_image: dict[str, Any] | None = None  # DynamoDB, per StreamViewType
    old_image: dict[str, Any] | None = None

    @property
    def body(self) -> str:
        """``data`` as text (UTF-8; an undecodable byte becomes U+FFFD)."""
        return self.data.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """``data`` parsed as JSON (raises ``json.JSONDecodeError`` / ``UnicodeDecodeError``)."""
        return json.loads(self.data)

    @property
    def attempt(self) -> int:
        """1 for the record's first run, 2 for its first retry, ..."""
        return self.retry.attempt

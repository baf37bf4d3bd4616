"""The retry queue's side: a copy's original body turned back into the StreamMessage of the first run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from serverless_retry.envelope import RetryContext
from serverless_retry.errors import NonRetryableError
from serverless_retry.message import Message
from serverless_retry.streams.adapter import stream_message_of, stream_processor
from serverless_retry.streams.handoff import carried_body
from serverless_retry.streams.reader import read_stream_record
from serverless_retry.streams.stream_message import StreamMessage

EVENTS = Path(__file__).resolve().parents[1] / "events"


def records(name: str) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((EVENTS / name).read_text())["Records"]
    return loaded


@pytest.mark.parametrize("name", ["kinesis-batch.json", "dynamodb-stream-batch.json"])
def test_the_carried_record_comes_back_as_the_same_stream_message(name: str) -> None:
    for record in records(name):
        first = read_stream_record(record)
        retry = RetryContext(first.retry.id, 2, None, (), first.event_source_arn)
        copy = Message("sqs-message-id", carried_body(record), {}, retry, {})
        again = stream_message_of(copy)
        assert again.attempt == 2
        assert again.retry is retry
        for field in (
            "kind", "data", "partition_key", "sequence_number", "shard_id", "event_source_arn",
            "event_id", "approximate_arrival", "event_name", "keys", "new_image", "old_image",
        ):  # fmt: skip
            assert getattr(again, field) == getattr(first, field), field
        assert again.record == first.record


def test_the_processor_is_called_with_the_stream_message() -> None:
    seen: list[StreamMessage] = []
    record = records("kinesis-batch.json")[1]
    retry = RetryContext("chain", 2, None, (), "arn")
    stream_processor(seen.append)(Message("m", carried_body(record), {}, retry, {}))
    assert [m.partition_key for m in seen] == ["o-2"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("not json", "not JSON"),
        ('{"order_id": "o-1"}', "not a Kinesis or DynamoDB Streams record"),
        ('{"eventSource": "aws:kinesis", "eventSourceARN": "a", "eventID": "e"}', "malformed"),
    ],
)
def test_a_body_that_is_not_a_stream_record_is_not_retryable(body: str, problem: str) -> None:
    with pytest.raises(NonRetryableError, match=problem):
        stream_message_of(Message("m", body, {}, RetryContext("c", 2, None, (), "arn"), {}))

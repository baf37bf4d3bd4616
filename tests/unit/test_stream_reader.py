"""Stream records read into StreamMessages: the samples' fields, chain ids, and what is refused."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from serverless_retry.envelope import RetryContext
from serverless_retry.errors import EventShapeError
from serverless_retry.streams.reader import (
    StreamRecordError,
    chain_id,
    event_kind,
    read_stream_record,
    sequence_number,
)

EVENTS = Path(__file__).resolve().parents[1] / "events"


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return loaded


def test_a_kinesis_record_is_decoded_with_its_position() -> None:
    event = sample("kinesis-batch.json")
    assert event_kind(event) == "kinesis"
    record = event["Records"][0]
    message = read_stream_record(record)
    assert message.kind == "kinesis"
    assert message.json() == {"order_id": "o-1", "behaviour": "ok"}
    assert message.body == '{"order_id": "o-1", "behaviour": "ok"}'
    assert message.partition_key == "o-1"
    assert message.sequence_number == record["kinesis"]["sequenceNumber"]
    assert message.shard_id == "shardId-000000000006"
    assert message.event_source_arn == "arn:aws:kinesis:us-east-1:123456789012:stream/orders-stream"
    assert message.approximate_arrival == datetime.fromtimestamp(1764842400.123, UTC)
    assert message.attempt == 1
    assert message.retry.source == message.event_source_arn
    assert message.event_name is None
    assert message.keys is None
    assert sequence_number(record) == message.sequence_number


def test_a_dynamodb_record_has_its_keys_and_images_as_plain_python() -> None:
    event = sample("dynamodb-stream-batch.json")
    assert event_kind(event) == "dynamodb"
    modify = read_stream_record(event["Records"][1])
    assert modify.kind == "dynamodb"
    assert modify.event_name == "MODIFY"
    assert modify.keys == {"order_id": "o-2"}
    assert modify.new_image is not None
    assert modify.old_image is not None
    assert modify.new_image["total"] == Decimal(20)
    assert modify.old_image["total"] == Decimal(19)
    assert modify.new_image["lines"] == [{"sku": "A-1", "qty": Decimal(2)}]
    assert modify.new_image["blob"] == b"\x00\x01"
    assert modify.sequence_number == "111200000000000136158523"
    assert modify.shard_id is None
    assert modify.partition_key is None
    assert modify.json()["Keys"] == {"order_id": {"S": "o-2"}}  # data: the "dynamodb" object
    remove = read_stream_record(event["Records"][3])
    assert remove.event_name == "REMOVE"
    assert remove.new_image is None
    assert remove.old_image is not None
    assert remove.old_image["behaviour"] == "crash"


def test_the_chain_id_is_a_pure_function_of_the_position() -> None:
    for name in ("kinesis-batch.json", "dynamodb-stream-batch.json"):
        records = sample(name)["Records"]
        ids = [read_stream_record(r).retry.id for r in records]
        assert ids == [read_stream_record(copy.deepcopy(r)).retry.id for r in records]  # a re-poll
        assert len(set(ids)) == len(ids)
    assert chain_id("arn:a", "s-1", "1", "k") != chain_id("arn:b", "s-1", "1", "k")
    assert chain_id("arn:a", "s-1", "1", "k") != chain_id("arn:a", "s-2", "1", "k")
    assert chain_id("arn:a", "s-1", "1", "k") != chain_id("arn:a", "s-1", "1", "j")


def test_a_retry_context_given_is_kept() -> None:
    record = sample("kinesis-batch.json")["Records"][1]
    context = RetryContext("chain-1", 3, None, (), "arn")
    assert read_stream_record(record, context).retry is context


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (("kinesis", "data"), "not base64!", "not valid base64"),
        (("kinesis", "sequenceNumber"), "", "sequenceNumber"),
        (("eventSourceARN",), None, "eventSourceARN"),
        (("kinesis",), "x", "kinesis is missing"),
    ],
)
def test_a_kinesis_record_without_its_fields_is_refused(
    path: tuple[str, ...], value: object, problem: str
) -> None:
    record = copy.deepcopy(sample("kinesis-batch.json")["Records"][0])
    parent = record
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    with pytest.raises(StreamRecordError, match=problem):
        read_stream_record(record)


def test_a_dynamodb_record_without_its_fields_is_refused() -> None:
    record = copy.deepcopy(sample("dynamodb-stream-batch.json")["Records"][0])
    record["eventName"] = "UPSERT"
    with pytest.raises(StreamRecordError, match="eventName"):
        read_stream_record(record)
    record = copy.deepcopy(sample("dynamodb-stream-batch.json")["Records"][0])
    record["dynamodb"]["NewImage"]["total"] = {"N": "ten"}
    with pytest.raises(StreamRecordError, match="NewImage"):
        read_stream_record(record)
    del record["dynamodb"]["Keys"]
    with pytest.raises(StreamRecordError, match="Keys"):
        read_stream_record(record)


def test_event_kinds() -> None:
    assert event_kind({"Records": []}) is None
    assert event_kind({"Records": [{"eventSource": "aws:sqs"}]}) is None
    with pytest.raises(EventShapeError, match="aws:sns"):
        event_kind({"Records": [{"EventSource": "aws:sns"}]})
    with pytest.raises(EventShapeError, match="no Records"):
        event_kind({"detail-type": "x"})
    with pytest.raises(EventShapeError):
        event_kind([1])
    assert sequence_number({"eventSource": "aws:sqs"}) is None
    assert sequence_number({"eventSource": "aws:kinesis", "kinesis": {}}) is None

"""The archiver on in-process moto: terminal messages sent to real (moto) SQS queues, received with
every attribute, handed to the archiver as the Lambda SQS event the event source mapping builds, and
written to a moto S3 bucket. Nothing is acknowledged before its object exists; writing twice is
harmless; listing, reading and marking go through the same store the CLI's format reads."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from serverless_retry.archive.archiver import Archiver, UnnamedFailure
from serverless_retry.archive.metrics import ArchiveMetrics
from serverless_retry.archive.record import ArchiveFormatError, object_key, parse_archive_record
from serverless_retry.archive.settings import ENV_BUCKET, ENV_PREFIX, ENV_SOURCES, ArchiverSettings
from serverless_retry.archive.store import ArchiveStore
from serverless_retry.clock import FrozenClock
from serverless_retry.errors import EventShapeError
from serverless_retry.testing import lambda_context

EVENTS = Path(__file__).resolve().parent.parent / "events"
REGION = "us-east-1"
ACCOUNT = "123456789012"
BUCKET = "orders-archive"
PREFIX = "serverless-retry/"
ORDERS = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders"
NOW = datetime(2026, 12, 4, 5, 0, tzinfo=UTC)


@dataclass
class World:
    s3: Any
    sqs: Any
    queues: dict[str, str]  # place -> queue URL
    settings: ArchiverSettings
    clock: FrozenClock

    def arn(self, place: str) -> str:
        return f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-{place}"

    def store(self, client: Any = None) -> ArchiveStore:
        return ArchiveStore(client or self.s3, BUCKET, PREFIX)

    def archiver(self, client: Any = None) -> Archiver:
        return Archiver(self.store(client), self.settings, clock=self.clock, metrics=ArchiveMetrics())

    def send(self, place: str, body: str, attributes: dict[str, Any] | None = None) -> None:
        self.sqs.send_message(
            QueueUrl=self.queues[place], MessageBody=body, MessageAttributes=attributes or {}
        )

    def event(self, place: str, limit: int = 10) -> dict[str, Any]:
        """What the event source mapping hands the function: received messages as Lambda records."""
        got = self.sqs.receive_message(
            QueueUrl=self.queues[place],
            MaxNumberOfMessages=limit,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        )
        return {"Records": [lambda_record(m, self.arn(place)) for m in got.get("Messages", [])]}

    def object_keys(self) -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


def lambda_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for name, value in message.get("MessageAttributes", {}).items():
        attr: dict[str, Any] = {"dataType": value["DataType"], "stringListValues": [], "binaryListValues": []}
        if "BinaryValue" in value:
            import base64

            attr["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
        else:
            attr["stringValue"] = value["StringValue"]
        attributes[name] = attr
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": attributes,
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        sqs = boto3.client("sqs", region_name=REGION)
        places = ("exhausted", "dlq", "selfheal-exhausted")
        queues = {p: sqs.create_queue(QueueName=f"orders-{p}")["QueueUrl"] for p in places}
        sources = {
            f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-{p}": {
                "place": p,
                "source_queue_arn": None if p == "selfheal-exhausted" else ORDERS,
                "deployment": "orders",
            }
            for p in places
        }
        settings = ArchiverSettings.from_env(
            {ENV_BUCKET: BUCKET, ENV_PREFIX: PREFIX, ENV_SOURCES: json.dumps(sources)}
        )
        yield World(s3, sqs, queues, settings, FrozenClock(NOW))


def samples() -> list[dict[str, Any]]:
    return [s["message"] for s in json.loads((EVENTS / "exhausted-messages.json").read_text())]


def fill(world: World) -> int:
    """The exhausted queue's samples (every form) and two plain messages in the DLQ."""
    for message in samples():
        world.send("exhausted", message["Body"], message["MessageAttributes"])
    world.send("dlq", '{"order_id": "o-9"}')
    world.send("dlq", '{"order_id": "o-10"}', {"tenant": {"DataType": "String", "StringValue": "acme"}})
    return len(samples()) + 2


def metric_lines(out: str) -> list[dict[str, Any]]:
    """The EMF lines printed, each metric's values summed (Powertools writes them as lists)."""
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [
        {k: sum(v) if isinstance(v, list) else v for k, v in line.items()} for line in lines if "_aws" in line
    ]


class FlakyS3:
    """The S3 client, with every ``every``-th PutObject failing before it reaches S3 (after what would
    be the client's own retries: the archiver sees the final error)."""

    def __init__(self, client: Any, every: int = 3) -> None:
        self.client = client
        self.every = every
        self.puts = 0
        self.failed_keys: list[str] = []

    def put_object(self, **kwargs: Any) -> Any:
        self.puts += 1
        if self.puts % self.every == 0:
            self.failed_keys.append(kwargs["Key"])
            raise ClientError(
                {"Error": {"Code": "SlowDown", "Message": "reduce your request rate"}}, "PutObject"
            )
        return self.client.put_object(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


# --- archiving --------------------------------------------------------------------------------------


def test_a_batch_is_archived(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    total = fill(world)
    events = [world.event("exhausted"), world.event("dlq")]
    assert sum(len(e["Records"]) for e in events) == total
    for event in events:
        assert world.archiver()(event) == {"batchItemFailures": []}
    keys = world.object_keys()
    assert len(keys) == total
    by_message = {world.store().get(k)[0]["message"]["message_id"]: k for k in keys}
    for event in events:
        for message in event["Records"]:
            key = by_message[message["messageId"]]
            got = world.s3.get_object(Bucket=BUCKET, Key=key)
            record = parse_archive_record(got["Body"].read())
            assert got["ContentType"] == "application/json"
            assert record["key"] == key == object_key(record, PREFIX)
            assert record["message"]["body"] == message["body"]
            assert record["message"]["system_attributes"] == message["attributes"]
            assert record["archive_queue_arn"] == message["eventSourceARN"]
            assert got["Metadata"] == {
                "outcome": key.split("/")[5],
                "error-type": key.split("/")[6],
                "retry-id": record["retry_id"],
                "attempt": str(record["attempt"]),
            }
    outcomes = sorted(k.split("/")[5] for k in keys)
    from_exhausted = ["exhausted", "too-large-to-retry", "too-large-to-retry", "unknown", "exhausted"]
    assert outcomes == sorted([*from_exhausted, "too-large-for-bus", "dlq", "dlq"])
    lines = metric_lines(capsys.readouterr().out)
    assert [(line["Archived"], line["AlreadyArchived"], line["ArchiveFailed"]) for line in lines] == [
        (len(samples()), 0, 0),
        (2, 0, 0),
    ]


def test_the_same_batch_twice_is_already_archived(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    fill(world)
    event = world.event("exhausted")
    world.archiver()(event)
    before = {k: world.s3.head_object(Bucket=BUCKET, Key=k)["ETag"] for k in world.object_keys()}
    capsys.readouterr()
    assert world.archiver()(event) == {"batchItemFailures": []}
    assert {k: world.s3.head_object(Bucket=BUCKET, Key=k)["ETag"] for k in world.object_keys()} == before
    [line] = metric_lines(capsys.readouterr().out)
    assert (line["Archived"], line["AlreadyArchived"], line["ArchiveFailed"]) == (0, len(event["Records"]), 0)
    # Archived later (another day, another receive count): still the same keys.
    world.clock.advance(86_400 * 3)
    again = {
        **event,
        "Records": [
            {**r, "attributes": {**r["attributes"], "ApproximateReceiveCount": "5"}} for r in event["Records"]
        ],
    }
    assert world.archiver()(again) == {"batchItemFailures": []}
    assert set(world.object_keys()) == set(before)


def test_s3_failing_part_of_the_time(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    for n in range(9):
        world.send("dlq", json.dumps({"order_id": f"o-{n}"}))
    event = world.event("dlq")
    assert len(event["Records"]) == 9
    flaky = FlakyS3(world.s3, every=3)
    response = world.archiver(flaky)(event)
    failed_ids = [f["itemIdentifier"] for f in response["batchItemFailures"]]
    # Exactly the messages whose write failed: the 3rd, 6th and 9th, none acknowledged without its object.
    assert failed_ids == [event["Records"][i]["messageId"] for i in (2, 5, 8)]
    assert len(flaky.failed_keys) == 3
    assert not set(flaky.failed_keys) & set(world.object_keys())
    assert len(world.object_keys()) == 6
    [line] = metric_lines(capsys.readouterr().out)
    assert (line["Archived"], line["AlreadyArchived"], line["ArchiveFailed"]) == (6, 0, 3)
    # The queue delivers the failed ones again (bounded: each round fails a third at most).
    pending = [r for r in event["Records"] if r["messageId"] in failed_ids]
    for _ in range(5):
        if not pending:
            break
        response = world.archiver(flaky)({"Records": pending})
        again = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        pending = [r for r in pending if r["messageId"] in again]
    assert pending == []
    keys = world.object_keys()
    assert len(keys) == 9  # every message archived, each once
    ids = sorted(parse_archive_record(world.s3.get_object(Bucket=BUCKET, Key=k)["Body"].read())
                 ["message"]["message_id"] for k in keys)  # fmt: skip
    assert ids == sorted(r["messageId"] for r in event["Records"])


def test_a_corrupt_message_is_archived_as_unknown(world: World) -> None:
    world.send("exhausted", '{"serverless_retry": {"outcome": 5}, "body": 3')
    event = world.event("exhausted")
    broken = {**event["Records"][0], "messageId": "no-body-id"}
    del broken["body"]
    event["Records"].append(broken)
    assert world.archiver()(event) == {"batchItemFailures": []}
    records = [
        parse_archive_record(world.s3.get_object(Bucket=BUCKET, Key=k)["Body"].read())
        for k in world.object_keys()
    ]
    assert sorted(r["outcome"] for r in records) == ["unknown", "unknown"]
    by_id = {r["message"]["message_id"]: r for r in records}
    assert (
        by_id[event["Records"][0]["messageId"]]["message"]["body"]
        == '{"serverless_retry": {"outcome": 5}, "body": 3'
    )
    assert by_id["no-body-id"]["message"]["body"] == ""
    assert all("/unknown/none/" in r["key"] for r in records)


def test_a_queue_not_configured_stays_in_its_queue(world: World) -> None:
    world.send("dlq", "x")
    event = world.event("dlq")
    event["Records"][0]["eventSourceARN"] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:someone-else"
    response = world.archiver()(event)
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert world.object_keys() == []


def test_a_failure_without_a_message_id_fails_the_whole_batch(world: World) -> None:
    world.send("dlq", "x")
    event = world.event("dlq")
    del event["Records"][0]["messageId"]
    with pytest.raises(UnnamedFailure):
        world.archiver(FlakyS3(world.s3, every=1))(event)


@pytest.mark.parametrize("event", [{}, {"Records": "x"}, {"Records": [{"eventSource": "aws:sns"}]}, []])
def test_not_an_sqs_event_is_refused(world: World, event: Any) -> None:
    with pytest.raises(EventShapeError):
        world.archiver()(event)


def test_the_handler_end_to_end(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_BUCKET, BUCKET)
    monkeypatch.setenv(ENV_PREFIX, PREFIX)
    sources = {world.arn("dlq"): {"place": "dlq", "source_queue_arn": ORDERS, "deployment": "orders"}}
    monkeypatch.setenv(ENV_SOURCES, json.dumps(sources))
    sys.modules.pop("serverless_retry.handlers.archive", None)
    handler_module = importlib.import_module("serverless_retry.handlers.archive")
    world.send("dlq", '{"order_id": "o-1"}')
    event = world.event("dlq")
    context: Any = lambda_context("orders-archiver")
    assert handler_module.handler(event, context) == {"batchItemFailures": []}
    [key] = world.object_keys()
    assert key.startswith(f"{PREFIX}dead/")
    assert "/dlq/none/" in key
    sys.modules.pop("serverless_retry.handlers.archive", None)


def test_the_handler_refuses_a_bad_environment_at_cold_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from serverless_retry.errors import ConfigError

    monkeypatch.setenv(ENV_BUCKET, BUCKET)
    monkeypatch.delenv(ENV_SOURCES, raising=False)
    sys.modules.pop("serverless_retry.handlers.archive", None)
    with pytest.raises(ConfigError) as raised:
        importlib.import_module("serverless_retry.handlers.archive")
    assert raised.value.variable == ENV_SOURCES
    sys.modules.pop("serverless_retry.handlers.archive", None)


# --- listing, reading, marking ------------------------------------------------------------------------


class CountingS3:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.prefixes: list[tuple[str, str | None]] = []

    def list_objects_v2(self, **kwargs: Any) -> Any:
        self.prefixes.append((kwargs["Prefix"], kwargs.get("StartAfter")))
        return self.client.list_objects_v2(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def archive_days(world: World) -> dict[str, str]:
    """Plain DLQ messages that became terminal on three days, with other outcomes/errors alongside."""
    keys: dict[str, str] = {}
    for n, (day, error) in enumerate(
        [(28, None), (29, None), (29, "TimeoutError"), (30, "TimeoutError"), (30, "KeyError"), (30, None)]
    ):
        at = datetime(2026, 11, day, 12, tzinfo=UTC)
        body = f'{{"n": {n}}}'
        record: dict[str, Any] = {
            "messageId": f"m-{n}",
            "body": body,
            "attributes": {"SentTimestamp": str(int(at.timestamp() * 1000))},
            "messageAttributes": {},
            "eventSource": "aws:sqs",
            "eventSourceARN": world.arn("dlq"),
        }
        if error is not None:  # a retry envelope SQS dead-lettered: its last error is in its history
            record["body"] = json.dumps({
                "serverless_retry": {"v": 1, "id": f"chain-{n}", "attempt": 2, "first_failed_at": "2026-11-27T00:00:00Z",
                                     "source": ORDERS, "history": [{"at": "2026-11-27T00:00:00Z", "error_type": error,
                                     "error": "e", "delay_seconds": 1, "transport": "sqs-delay"}]},
                "body": body, "attributes": {},
            })  # fmt: skip
        assert world.archiver()({"Records": [record]}) == {"batchItemFailures": []}
        [keys[f"m-{n}"]] = [k for k in world.object_keys() if k not in keys.values()]
    world.s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}dead/2026/11/29/README.txt", Body=b"not ours")
    world.s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}payloads/x.json", Body=b"{}")
    return keys


def test_listing_by_day_range_outcome_and_error_type(world: World) -> None:
    keys = archive_days(world)
    counting = CountingS3(world.s3)
    store = world.store(counting)
    day = date(2026, 11, 29)
    assert list(store.list(first_day=day, last_day=date(2026, 11, 30))) == sorted(
        keys[m] for m in ("m-1", "m-2", "m-3", "m-4", "m-5")
    )
    # Only those two days' prefixes were listed.
    assert counting.prefixes == [(f"{PREFIX}dead/2026/11/29/", None), (f"{PREFIX}dead/2026/11/30/", None)]
    counting.prefixes.clear()
    assert list(store.list(first_day=day, last_day=day, outcome="dlq", error_type="TimeoutError")) == [
        keys["m-2"]
    ]
    assert counting.prefixes == [(f"{PREFIX}dead/2026/11/29/dlq/TimeoutError/", None)]
    assert list(store.list(first_day=day, last_day=day, outcome="dlq", error_type="none")) == [keys["m-1"]]
    assert list(store.list(error_type="TimeoutError")) == sorted([keys["m-2"], keys["m-3"]])
    assert list(store.list(outcome="exhausted")) == []
    # From a day on, without an end: one listing of dead/ starting after the day before's keys.
    counting.prefixes.clear()
    assert list(store.list(first_day=date(2026, 11, 30))) == sorted(keys[m] for m in ("m-3", "m-4", "m-5"))
    assert counting.prefixes == [(f"{PREFIX}dead/", f"{PREFIX}dead/2026/11/30")]
    # Up to a day: stops at the first key past it.
    assert list(store.list(last_day=date(2026, 11, 28))) == [keys["m-0"]]
    assert list(store.list()) == sorted(keys.values())  # never the README nor the payloads


def test_listing_pages(world: World) -> None:
    for n in range(5):
        world.s3.put_object(
            Bucket=BUCKET, Key=f"{PREFIX}dead/2026/11/30/dlq/none/m{n}.1.abcdefabcdef.json", Body=b"{}"
        )

    class SmallPages(CountingS3):
        def list_objects_v2(self, **kwargs: Any) -> Any:
            return super().list_objects_v2(**kwargs, MaxKeys=2)

    small = SmallPages(world.s3)
    assert len(list(world.store(small).list(first_day=date(2026, 11, 30), last_day=date(2026, 11, 30)))) == 5
    assert len(small.prefixes) == 3


def test_get_and_mark_redriven(world: World) -> None:
    keys = archive_days(world)
    store = world.store()
    record, etag = store.get(keys["m-1"])
    assert record["redriven"] == []
    mark = {"at": "2026-12-04T06:00:00Z", "to": "https://sqs/orders", "message_id": "sent-1", "run": "run-1"}
    assert store.mark_redriven(keys["m-1"], etag, mark, record) is True  # type: ignore[arg-type]
    marked, new_etag = store.get(keys["m-1"])
    assert marked["redriven"] == [mark]
    assert new_etag != etag
    assert world.s3.head_object(Bucket=BUCKET, Key=keys["m-1"])["Metadata"]["outcome"] == "dlq"
    # The stale ETag: S3 refuses (412), nothing changes.
    assert store.mark_redriven(keys["m-1"], etag, {**mark, "run": "run-2"}, record) is False  # type: ignore[arg-type]
    assert store.mark_redriven(keys["m-1"], etag, {**mark, "run": "run-2"}) is False  # type: ignore[arg-type]
    assert store.get(keys["m-1"])[0]["redriven"] == [mark]
    # Read again at the current ETag: marked.
    assert store.mark_redriven(keys["m-1"], new_etag, {**mark, "run": "run-2"}) is True  # type: ignore[arg-type]
    assert [m.get("run") for m in store.get(keys["m-1"])[0]["redriven"]] == ["run-1", "run-2"]
    # Gone: no mark, and no object made by it.
    store.delete(keys["m-2"])
    assert store.mark_redriven(keys["m-2"], etag, mark) is False  # type: ignore[arg-type]
    assert store.mark_redriven(keys["m-2"], etag, mark, record) is False  # type: ignore[arg-type]
    assert keys["m-2"] not in world.object_keys()


def test_get_refuses_an_object_that_is_no_record(world: World) -> None:
    key = f"{PREFIX}dead/2026/11/30/dlq/none/m.1.abcdefabcdef.json"
    world.s3.put_object(Bucket=BUCKET, Key=key, Body=b'{"format": "something-else/1"}')
    with pytest.raises(ArchiveFormatError, match="not an archive record of ours"):
        world.store().get(key)


def test_put_new_refuses_a_record_whose_key_is_not_its_own(world: World) -> None:
    fill(world)
    [message] = world.event("dlq", limit=1)["Records"]
    from serverless_retry.archive.record import archive_record

    record = archive_record(
        message, source=world.settings.sources[world.arn("dlq")], now=NOW, prefix="other/"
    )
    with pytest.raises(ValueError, match="is not its key"):
        world.store().put_new(record)


class RefusingS3:
    """Every PutObject answered with one S3 error code (and its HTTP status)."""

    def __init__(self, client: Any, code: str, status: int) -> None:
        self.client = client
        self.error = ClientError(
            {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
            "PutObject",
        )

    def put_object(self, **kwargs: Any) -> Any:
        raise self.error

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def test_a_concurrent_conditional_write_is_no_success(world: World) -> None:
    """409 ConditionalRequestConflict (two writes of one key racing): the message is not acknowledged;
    redelivered, it finds the other write's object (412: already)."""
    world.send("dlq", "x")
    event = world.event("dlq")
    racing = RefusingS3(world.s3, "ConditionalRequestConflict", 409)
    response = world.archiver(racing)(event)
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert world.archiver(RefusingS3(world.s3, "PreconditionFailed", 412))(event) == {"batchItemFailures": []}
    assert world.object_keys() == []  # (the stub wrote nothing: 412 here only says another write did)


def test_a_mark_racing_another_write_is_not_made(world: World) -> None:
    keys = archive_days(world)
    record, etag = world.store().get(keys["m-0"])
    mark: Any = {"at": "2026-12-04T06:00:00Z", "to": "q", "message_id": "s", "run": "r"}
    assert (
        world.store(RefusingS3(world.s3, "ConditionalRequestConflict", 409)).mark_redriven(
            keys["m-0"], etag, mark, record
        )
        is False
    )
    assert world.store().get(keys["m-0"])[0]["redriven"] == []
    with pytest.raises(ClientError):
        world.store(RefusingS3(world.s3, "AccessDenied", 403)).mark_redriven(keys["m-0"], etag, mark, record)


# --- a final envelope behind a pointer (claim check) ----------------------------------------------------


def pointer_message(world: World, body: str, *, bucket: str = BUCKET, write: bool = True) -> tuple[str, str]:
    """A pointer as the consumer sends it to the retry-exhausted queue (its payload written to S3 first,
    unless ``write`` is False), sent there; (the pointer body, the original body)."""
    from serverless_retry.envelope import original
    from serverless_retry.payload_pointer import PayloadTarget
    from serverless_retry.payload_store import put_payload
    from serverless_retry.terminal import final_copy

    incoming = original(
        body, {"tenant": {"DataType": "String", "StringValue": "acme"}}, message_id="m-big", source=ORDERS
    )
    copy = final_copy(
        incoming, "non-retryable", now=datetime(2026, 11, 30, 10, tzinfo=UTC), error=KeyError("customer"),
        reason="no customer", traceback_text="", max_bytes=4096, store=PayloadTarget(bucket, PREFIX),
    )  # fmt: skip
    assert copy.form == "pointer"
    assert copy.payload is not None
    if write:
        if bucket != BUCKET:
            world.s3.create_bucket(Bucket=bucket)
        put_payload(world.s3, copy.payload)
    world.send("exhausted", copy.body)
    return copy.body, body


def pointer_archiver(world: World) -> Archiver:
    from serverless_retry.archive.archiver import pointer_resolver

    return Archiver(
        world.store(), world.settings, clock=world.clock, resolve=pointer_resolver(world.s3, BUCKET, PREFIX)
    )


def test_a_pointer_is_archived_with_the_whole_original(world: World) -> None:
    pointer, body = pointer_message(world, json.dumps({"order": "o-1", "blob": "x" * 8000}))
    event = world.event("exhausted")
    assert pointer_archiver(world)(event) == {"batchItemFailures": []}
    [key] = [k for k in world.object_keys() if "/dead/" in k]
    record, _ = world.store().get(key)
    assert record["message"]["body"] == pointer  # the message verbatim
    assert record["original"] == {
        "body": body,
        "attributes": {"tenant": {"DataType": "String", "StringValue": "acme"}},
    }
    assert (record["outcome"], record["reason"], record["error_type"]) == (
        "non-retryable",
        "no customer",
        "KeyError",
    )
    assert (record["retry_id"], record["terminal_at"]) == ("m-big", "2026-11-30T10:00:00Z")
    assert key.startswith(f"{PREFIX}dead/2026/11/30/non-retryable/KeyError/m-big.1.")
    # Archived again through the pointer: the same key, already there.
    assert pointer_archiver(world)(event) == {"batchItemFailures": []}
    assert len([k for k in world.object_keys() if "/dead/" in k]) == 1


def test_a_pointer_whose_payload_cannot_be_read_stays_in_its_queue(world: World) -> None:
    pointer_message(world, "y" * 5000, write=False)
    event = world.event("exhausted")
    response = pointer_archiver(world)(event)
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert [k for k in world.object_keys() if "/dead/" in k] == []


def test_a_pointer_to_another_bucket_is_archived_as_it_came(world: World) -> None:
    """A producer's body shaped like a pointer to someone else's object (dead-lettered by SQS): never
    followed, kept as the message it is."""
    pointer, _ = pointer_message(world, "y" * 5000, bucket="someone-elses")
    event = world.event("exhausted")
    assert pointer_archiver(world)(event) == {"batchItemFailures": []}
    [key] = [k for k in world.object_keys() if "/dead/" in k]
    record, _ = world.store().get(key)
    assert (record["outcome"], record["retry_id"]) == ("unknown", event["Records"][0]["messageId"])
    assert record["original"] == {"body": pointer, "attributes": {}}

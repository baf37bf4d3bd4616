"""Kinesis and DynamoDB stream event source mappings on the emulator, run by the runtime's
StreamRunner (local/runtime/streams/): Lambda's partial batch answers, retries, bisection, record age and
on-failure destinations, shard by shard. One emulator at 20 logical seconds per real second; each
test deletes its mappings, so the next runtime polls only its own."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.runtime.streams.shard_poller import lane_of

from tests.integration.test_runtime import Aws, Run

SCALE = 20.0

# Journals every event it gets; fails on a "poison" record (raising, or reporting it), and once on a
# "flaky" record (reporting it, or, in "stranger" mode, a sequence number not in the batch).
HANDLER = """
import base64, json, os
JOURNAL = os.environ["JOURNAL"]
MODE = os.environ["MODE"]

def payload(record):
    if record["eventSource"] == "aws:kinesis":
        return record["kinesis"]["sequenceNumber"], base64.b64decode(record["kinesis"]["data"]).decode()
    stream = record["dynamodb"]
    image = stream.get("NewImage") or stream.get("OldImage")
    return stream["SequenceNumber"], image["body"]["S"]

def handler(event, context):
    with open(JOURNAL, "a") as out:
        out.write(json.dumps(event) + "\\n")
    for record in event["Records"]:
        seq, body = payload(record)
        if body.startswith("poison"):
            if MODE == "raise":
                raise RuntimeError("poison " + seq)
            return {"batchItemFailures": [{"itemIdentifier": seq}]}
        if body.startswith("flaky") and not os.path.exists(JOURNAL + ".flaked"):
            open(JOURNAL + ".flaked", "w").close()
            wrong = "49999999999999999999" if MODE == "stranger" else seq
            return {"batchItemFailures": [{"itemIdentifier": wrong}]}
    return {"batchItemFailures": []}
"""


class Streams(Aws):
    def __init__(self, emulator: Emulator) -> None:
        super().__init__(emulator)
        self.mappings: list[str] = []

    def kinesis(self, shards: int = 1) -> str:
        name = self.name("stream")
        kinesis = self.client("kinesis")
        kinesis.create_stream(StreamName=name, ShardCount=shards)
        arn: str = kinesis.describe_stream(StreamName=name)["StreamDescription"]["StreamARN"]
        return arn

    def table(self) -> tuple[str, str]:
        """(table name, stream ARN) of a table streaming NEW_AND_OLD_IMAGES."""
        name = self.name("table")
        ddb = self.client("dynamodb")
        ddb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        arn: str = ddb.describe_table(TableName=name)["Table"]["LatestStreamArn"]
        return name, arn

    def map(self, function: str, source: str, **extra: Any) -> str:
        params: dict[str, Any] = {"StartingPosition": "TRIM_HORIZON", **extra}
        uuid: str = self.client("lambda").create_event_source_mapping(
            EventSourceArn=source, FunctionName=function, **params
        )["UUID"]
        self.mappings.append(uuid)
        return uuid

    def forget_mappings(self) -> None:
        lam = self.client("lambda")
        for uuid in self.mappings:
            lam.delete_event_source_mapping(UUID=uuid)
        self.mappings.clear()


@pytest.fixture(scope="module")
def account() -> Iterator[Streams]:
    with Emulator(clock_scale=SCALE) as running:
        yield Streams(running)


@pytest.fixture
def aws(account: Streams) -> Iterator[Streams]:
    yield account
    account.forget_mappings()  # the next test's runtime polls only its own


class Source:
    """A stream of either kind, written to in order: ``put(bodies)`` gives the sequence numbers."""

    def __init__(self, aws: Streams, kind: str) -> None:
        self.aws = aws
        self.kind = kind
        if kind == "kinesis":
            self.arn = aws.kinesis()
            self.table = ""
        else:
            self.table, self.arn = aws.table()

    def put(self, bodies: list[str]) -> list[str]:
        sequence_numbers = []
        for i, body in enumerate(bodies):
            if self.kind == "kinesis":
                answer = self.aws.client("kinesis").put_record(
                    StreamARN=self.arn, Data=body.encode(), PartitionKey="p"
                )
                sequence_numbers.append(str(answer["SequenceNumber"]))
            else:
                self.aws.client("dynamodb").put_item(
                    TableName=self.table, Item={"id": {"S": f"item-{i}"}, "body": {"S": body}}
                )
        if self.kind == "dynamodb":
            sequence_numbers = [str(r["dynamodb"]["SequenceNumber"]) for r in self.records()][-len(bodies) :]
        return sequence_numbers

    def records(self) -> list[dict[str, Any]]:
        streams = self.aws.client("dynamodbstreams")
        (shard,) = streams.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]
        iterator = streams.get_shard_iterator(
            StreamArn=self.arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records: list[dict[str, Any]] = streams.get_records(ShardIterator=iterator)["Records"]
        return records


def _function(aws: Streams, journal: Path, mode: str) -> str:
    return aws.function({"app.py": HANDLER}, env={"JOURNAL": str(journal), "MODE": mode}, Timeout=5)


def _events(journal: Path) -> list[dict[str, Any]]:
    if not journal.exists():
        return []
    return [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]


def _sequence(record: dict[str, Any]) -> str:
    if record["eventSource"] == "aws:kinesis":
        return str(record["kinesis"]["sequenceNumber"])
    return str(record["dynamodb"]["SequenceNumber"])


def _batches(journal: Path) -> list[list[str]]:
    """The sequence numbers of each invocation, in invocation order."""
    return [[_sequence(r) for r in e["Records"]] for e in _events(journal)]


def _shard_of(run: Run, uuid: str) -> Callable[[], Any]:
    def progress() -> Any:
        shards = run.runtime.streams.progress().get(uuid, {})
        return next(iter(shards.values()), None)

    return progress


def _on_failure(aws: Streams, url: str, count: int) -> list[dict[str, Any]]:
    return [json.loads(m["Body"]) for m in aws.receive_all(url, wait=5.0)][:count]


KINDS = ["kinesis", "dynamodb"]
INFO = {"kinesis": "KinesisBatchInfo", "dynamodb": "DDBStreamBatchInfo"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_reported_poison_record_is_retried_in_place_then_sent_to_the_on_failure_queue(
    aws: Streams, tmp_path: Path, kind: str
) -> None:
    source = Source(aws, kind)
    seq = source.put(["a", "b", "poison", "c", "d"])
    journal = tmp_path / "journal"
    function = _function(aws, journal, "report")
    dlq_url, dlq_arn = aws.queue("on-failure")
    uuid = aws.map(
        function,
        source.arn,
        BatchSize=3,
        FunctionResponseTypes=["ReportBatchItemFailures"],
        MaximumRetryAttempts=2,
        DestinationConfig={"OnFailure": {"Destination": dlq_arn}},
    )
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    assert run.until(lambda: shard() is not None and shard().checkpoint == seq[-1], deadline=30)
    # The first batch stops at the poison; it alone is retried (later records wait), twice, then
    # given up after its third invocation; the shard goes on with the records after it.
    assert _batches(journal) == [seq[0:3], [seq[2]], [seq[2]], seq[3:5]]
    progress = shard()
    assert progress.discarded == (seq[2],)
    assert set(progress.waited) == {seq[0], seq[1], seq[3], seq[4]}
    assert min(progress.waited[seq[3]], progress.waited[seq[4]]) > max(
        progress.waited[seq[0]], progress.waited[seq[1]]
    )
    (record,) = _on_failure(aws, dlq_url, 1)
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 3
    assert record["requestContext"]["functionArn"].endswith(f":function:{function}")
    info = record[INFO[kind]]
    assert (info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == (seq[2], seq[2], 1)
    assert info["streamArn"] == source.arn
    assert info["shardId"] == next(iter(run.runtime.streams.progress()[uuid]))
    assert info["approximateArrivalOfFirstRecord"].endswith("Z")
    assert "Records" not in json.dumps(record)  # the invocation record, not the records
    outcomes = [e["outcome"] for e in run.of("stream-batch")]
    assert outcomes == ["partial", "partial", "partial", "ok"]


@pytest.mark.parametrize("kind", KINDS)
def test_bisect_splits_a_failing_batch_until_the_poison_is_alone(
    aws: Streams, tmp_path: Path, kind: str
) -> None:
    source = Source(aws, kind)
    seq = source.put(["a", "poison", "b", "c"])
    journal = tmp_path / "journal"
    function = _function(aws, journal, "raise")
    uuid = aws.map(function, source.arn, BatchSize=4, BisectBatchOnFunctionError=True, MaximumRetryAttempts=1)
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    assert run.until(lambda: shard() is not None and shard().checkpoint == seq[-1], deadline=30)
    # Split in two, and again; the single poison record spends its one retry, then is skipped.
    assert _batches(journal) == [seq, seq[0:2], seq[0:1], seq[1:2], seq[1:2], seq[2:4]]
    (discarded,) = run.of("stream-discarded")
    assert (discarded["first"], discarded["size"], discarded["condition"]) == (
        seq[1],
        1,
        "RetryAttemptsExhausted",
    )
    assert set(shard().waited) == {seq[0], seq[2], seq[3]}


@pytest.mark.parametrize("kind", KINDS)
def test_a_record_older_than_the_maximum_age_is_discarded_on_the_logical_clock(
    aws: Streams, tmp_path: Path, kind: str
) -> None:
    source = Source(aws, kind)
    (seq,) = source.put(["poison"])
    journal = tmp_path / "journal"
    function = _function(aws, journal, "raise")
    dlq_url, dlq_arn = aws.queue("on-failure")
    uuid = aws.map(
        function,
        source.arn,
        MaximumRecordAgeInSeconds=60,
        DestinationConfig={"OnFailure": {"Destination": dlq_arn}},
    )
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    started = time.monotonic()
    assert run.until(lambda: shard() is not None and shard().discarded == (seq,), deadline=30)
    # Retried without a limit until 60 logical seconds after it arrived (3 real seconds here).
    assert time.monotonic() - started < 25
    assert len(_batches(journal)) >= 2
    (record,) = _on_failure(aws, dlq_url, 1)
    assert record["requestContext"]["condition"] == "RecordAgeExceeded"
    assert record[INFO[kind]]["startSequenceNumber"] == seq
    arrival = record[INFO[kind]]["approximateArrivalOfFirstRecord"]
    discarded_at = record["timestamp"]
    assert discarded_at > arrival
    assert shard().waited == {}


@pytest.mark.parametrize("kind", KINDS)
def test_processing_resumes_exactly_at_the_first_failed_record(
    aws: Streams, tmp_path: Path, kind: str
) -> None:
    source = Source(aws, kind)
    seq = source.put(["a", "b", "flaky", "c"])
    journal = tmp_path / "journal"
    function = _function(aws, journal, "report")
    uuid = aws.map(function, source.arn, BatchSize=10, FunctionResponseTypes=["ReportBatchItemFailures"])
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    assert run.until(lambda: shard() is not None and shard().checkpoint == seq[-1], deadline=30)
    assert _batches(journal) == [seq, seq[2:]]
    assert shard().discarded == ()


@pytest.mark.parametrize("kind", KINDS)
def test_an_item_identifier_not_in_the_batch_fails_the_whole_batch(
    aws: Streams, tmp_path: Path, kind: str
) -> None:
    source = Source(aws, kind)
    seq = source.put(["a", "flaky", "b"])
    journal = tmp_path / "journal"
    function = _function(aws, journal, "stranger")
    uuid = aws.map(function, source.arn, BatchSize=10, FunctionResponseTypes=["ReportBatchItemFailures"])
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    assert run.until(lambda: shard() is not None and shard().checkpoint == seq[-1], deadline=30)
    assert _batches(journal) == [seq, seq]
    failed = run.of("stream-batch")[0]
    assert failed["outcome"] == "failed"
    assert "is not in the batch" in failed["why"]


def test_dynamodb_events_are_shaped_as_aws_sends_them(aws: Streams, tmp_path: Path) -> None:
    table, arn = aws.table()
    ddb = aws.client("dynamodb")
    ddb.put_item(TableName=table, Item={"id": {"S": "k"}, "body": {"S": "one"}})
    ddb.update_item(
        TableName=table,
        Key={"id": {"S": "k"}},
        UpdateExpression="SET body = :b",
        ExpressionAttributeValues={":b": {"S": "two"}},
    )
    ddb.delete_item(TableName=table, Key={"id": {"S": "k"}})
    journal = tmp_path / "journal"
    function = _function(aws, journal, "report")
    uuid = aws.map(function, arn, BatchSize=10)
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    assert run.until(lambda: shard() is not None and len(shard().waited) == 3, deadline=30)
    (event,) = _events(journal)
    records = event["Records"]
    assert [r["eventName"] for r in records] == ["INSERT", "MODIFY", "REMOVE"]
    for r in records:
        assert (r["eventSource"], r["eventSourceARN"], r["awsRegion"]) == ("aws:dynamodb", arn, "us-east-1")
        assert r["dynamodb"]["Keys"] == {"id": {"S": "k"}}
        assert r["dynamodb"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
        assert isinstance(r["dynamodb"]["ApproximateCreationDateTime"], int)
        assert r["dynamodb"]["SizeBytes"] > 0
    insert, modify, remove = (r["dynamodb"] for r in records)
    assert "OldImage" not in insert
    assert insert["NewImage"] == {"id": {"S": "k"}, "body": {"S": "one"}}
    assert (modify["OldImage"]["body"], modify["NewImage"]["body"]) == ({"S": "one"}, {"S": "two"})
    assert "NewImage" not in remove
    assert remove["OldImage"]["body"] == {"S": "two"}
    assert int(insert["SequenceNumber"]) < int(modify["SequenceNumber"]) < int(remove["SequenceNumber"])


def test_kinesis_events_are_shaped_as_aws_sends_them(aws: Streams, tmp_path: Path) -> None:
    source = Source(aws, "kinesis")
    (seq,) = source.put(["hello"])
    journal = tmp_path / "journal"
    function = _function(aws, journal, "report")
    uuid = aws.map(function, source.arn)
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    assert run.until(lambda: shard() is not None and shard().checkpoint == seq, deadline=30)
    ((record,),) = [e["Records"] for e in _events(journal)]
    (shard_id,) = run.runtime.streams.progress()[uuid]
    assert record["eventID"] == f"{shard_id}:{seq}"
    assert (record["eventSource"], record["eventName"], record["eventSourceARN"]) == (
        "aws:kinesis",
        "aws:kinesis:record",
        source.arn,
    )
    assert record["kinesis"]["data"] == "aGVsbG8="
    assert record["kinesis"]["partitionKey"] == "p"
    assert record["invokeIdentityArn"] == aws.role
    # Arrival on the emulator's logical clock (20x here), not the machine's.
    assert abs(record["kinesis"]["approximateArrivalTimestamp"] - aws.emulator.clock.now().timestamp()) < 120


def test_two_shards_progress_independently(aws: Streams, tmp_path: Path) -> None:
    arn = aws.kinesis(shards=2)
    kinesis = aws.client("kinesis")
    shards = kinesis.list_shards(StreamARN=arn)["Shards"]
    low, high = (s["HashKeyRange"]["StartingHashKey"] for s in shards)

    def put(body: str, hash_key: str) -> str:
        answer = kinesis.put_record(
            StreamARN=arn, Data=body.encode(), PartitionKey="p", ExplicitHashKey=hash_key
        )
        return str(answer["SequenceNumber"])

    put("poison", low)
    put("after-poison", low)
    good = [put(f"good-{i}", high) for i in range(3)]
    journal = tmp_path / "journal"
    function = _function(aws, journal, "raise")
    uuid = aws.map(function, arn, BatchSize=1)  # retried until the records expire: a week
    run = Run(aws, tmp_path)

    def progress() -> dict[str, Any]:
        return dict(run.runtime.streams.progress().get(uuid, {}))

    poisoned, healthy = (s["ShardId"] for s in shards)
    assert run.until(
        lambda: progress().get(healthy) is not None and progress()[healthy].checkpoint == good[-1]
    )
    assert set(progress()[healthy].waited) == set(good)
    stuck = progress().get(poisoned)
    assert stuck is None or stuck.checkpoint is None  # still retrying its poison
    retries = [e for e in run.of("stream-batch") if e["shard"] == poisoned]
    assert retries
    assert {e["outcome"] for e in retries} == {"failed"}


def test_lambdas_stream_mapping_limits_are_refused(aws: Streams) -> None:
    arn = aws.kinesis()
    function = aws.function({"app.py": HANDLER}, env={"JOURNAL": "/dev/null", "MODE": "report"})
    # botocore checks the API's ranges itself: send what it would refuse, as another client could.
    lam = boto3.client(
        "lambda",
        config=Config(parameter_validation=False, retries={"max_attempts": 1}),
        **aws.emulator.client_kwargs(),
    )
    refused = {
        "BatchSize": {"BatchSize": 0},
        "window": {"MaximumBatchingWindowInSeconds": 301},
        "ParallelizationFactor": {"ParallelizationFactor": 11},
        "MaximumRetryAttempts": {"MaximumRetryAttempts": 10_001},
        "MaximumRecordAgeInSeconds": {"MaximumRecordAgeInSeconds": 30},
    }
    for params in refused.values():
        with pytest.raises(lam.exceptions.InvalidParameterValueException):
            lam.create_event_source_mapping(
                EventSourceArn=arn, FunctionName=function, StartingPosition="LATEST", **params
            )
    with pytest.raises(lam.exceptions.InvalidParameterValueException, match="StartingPosition"):
        lam.create_event_source_mapping(EventSourceArn=arn, FunctionName=function)
    uuid = aws.map(function, arn, StartingPosition="LATEST")
    with pytest.raises(lam.exceptions.InvalidParameterValueException):
        lam.update_event_source_mapping(UUID=uuid, MaximumRetryAttempts=-2)


def test_a_throttled_batch_is_retried_without_counting_until_its_records_expire(
    aws: Streams, tmp_path: Path
) -> None:
    source = Source(aws, "kinesis")
    (seq,) = source.put(["a"])
    journal = tmp_path / "journal"
    function = _function(aws, journal, "report")
    aws.client("lambda").put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=0)
    dlq_url, dlq_arn = aws.queue("on-failure")
    uuid = aws.map(
        function,
        source.arn,
        MaximumRetryAttempts=0,  # a throttle is no retry: the record still waits for its age
        MaximumRecordAgeInSeconds=60,
        DestinationConfig={"OnFailure": {"Destination": dlq_arn}},
    )
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    assert run.until(lambda: shard() is not None and shard().discarded == (seq,), deadline=30)
    assert not journal.exists()  # never ran
    throttled = [e for e in run.of("stream-batch") if e["outcome"] == "throttled"]
    assert len(throttled) >= 2
    (record,) = _on_failure(aws, dlq_url, 1)
    assert record["requestContext"]["condition"] == "RecordAgeExceeded"
    assert record["requestContext"]["approximateInvokeCount"] == 0
    assert "responseContext" not in record  # no invocation answered


def test_parallelization_factor_runs_keys_concurrently_each_in_order(aws: Streams, tmp_path: Path) -> None:
    arn = aws.kinesis()
    kinesis = aws.client("kinesis")
    first = "key-a"
    second = next(k for k in (f"key-{i}" for i in range(100)) if lane_of(k, 2) != lane_of(first, 2))

    def put(body: str, key: str) -> str:
        return str(kinesis.put_record(StreamARN=arn, Data=body.encode(), PartitionKey=key)["SequenceNumber"])

    poison, after = put("poison", first), put("after", first)
    others = [put(f"other-{i}", second) for i in range(3)]
    journal = tmp_path / "journal"
    function = _function(aws, journal, "raise")
    uuid = aws.map(function, arn, BatchSize=1, ParallelizationFactor=2, MaximumRetryAttempts=2)
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    assert run.until(lambda: shard() is not None and shard().checkpoint == others[-1], deadline=30)
    batches = [b for (b,) in _batches(journal)]
    # The other key's records go on, in order, while the first key's poison is retried; the first
    # key's next record waits for it.
    assert [b for b in batches if b in others] == others
    assert batches.index(others[-1]) < batches.index(after)
    assert batches.count(poison) == 3
    assert batches.index(after) > max(i for i, b in enumerate(batches) if b == poison)
    assert shard().discarded == (poison,)
    assert not [e for e in run.of("warning") if "ParallelizationFactor" in e["message"]]


def test_the_batching_window_gathers_records_for_its_logical_seconds(aws: Streams, tmp_path: Path) -> None:
    source = Source(aws, "kinesis")
    (early,) = source.put(["early"])
    journal = tmp_path / "journal"
    function = _function(aws, journal, "report")
    uuid = aws.map(function, source.arn, BatchSize=10, MaximumBatchingWindowInSeconds=60)
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    late: list[str] = []

    def done() -> bool:
        if not late and time.monotonic() - started > 0.5:  # 10 logical seconds into the window
            late.extend(source.put(["late"]))
        return bool(late) and shard() is not None and shard().checkpoint == late[0]

    started = time.monotonic()
    assert run.until(done, deadline=30)
    assert _batches(journal) == [[early, late[0]]]  # one batch: the window waited for the second
    assert shard().waited[early] >= 60


def test_at_timestamp_starts_at_the_first_record_at_or_after_it_on_the_logical_clock(
    aws: Streams, tmp_path: Path
) -> None:
    source = Source(aws, "kinesis")
    source.put(["before"])
    time.sleep(0.3)  # 6 logical seconds
    start = aws.emulator.clock.now()
    time.sleep(0.3)
    seq = source.put(["after", "later"])
    journal = tmp_path / "journal"
    function = _function(aws, journal, "report")
    uuid = aws.map(function, source.arn, StartingPosition="AT_TIMESTAMP", StartingPositionTimestamp=start)
    run = Run(aws, tmp_path)
    shard = _shard_of(run, uuid)
    assert run.until(lambda: shard() is not None and shard().checkpoint == seq[-1], deadline=30)
    assert [s for batch in _batches(journal) for s in batch] == seq

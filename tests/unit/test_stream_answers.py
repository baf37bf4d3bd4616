"""Lambda's rules for a stream batch's answer and what follows it (local/runtime/streams/answers.py), and
the shapes the stream runner builds (events, on-failure records, mapping limits)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from serverless_retry_tools.local.emulator.moto_fidelity import stream_mapping_errors
from serverless_retry_tools.local.runtime.streams.answers import (
    RETRY_ATTEMPTS_EXHAUSTED,
    RetryPolicy,
    expired_prefix,
    judge_stream_batch,
    plan_next,
)
from serverless_retry_tools.local.runtime.streams.events import (
    dynamodb_record,
    fits_payload,
    kinesis_record,
    stream_event,
)
from serverless_retry_tools.local.runtime.streams.failure_records import failure_record, send_failure_record
from serverless_retry_tools.local.runtime.streams.shards import source_kind

SEQ = ["101", "102", "103", "104"]


def judge(response: Any, *, errored: bool = False, report: bool = True) -> tuple[int, bool, str]:
    v = judge_stream_batch(SEQ, errored=errored, response=response, report_batch_item_failures=report)
    return v.done, v.partial, v.why


@pytest.mark.parametrize("response", [None, {}, "", {"batchItemFailures": []}, {"batchItemFailures": None}])
def test_null_or_empty_answers_are_a_complete_success(response: Any) -> None:
    assert judge(response) == (4, False, "")


def test_without_report_batch_item_failures_any_return_succeeds() -> None:
    assert judge({"batchItemFailures": [{"itemIdentifier": "103"}]}, report=False)[0] == 4


def test_the_lowest_reported_sequence_number_is_where_the_retry_starts() -> None:
    done, partial, why = judge({"batchItemFailures": [{"itemIdentifier": "104"}, {"itemIdentifier": "102"}]})
    assert (done, partial) == (1, True)
    assert "102" in why


def test_the_first_record_reported_retries_the_whole_batch_as_a_partial_answer() -> None:
    assert judge({"batchItemFailures": [{"itemIdentifier": "101"}]})[:2] == (0, True)


@pytest.mark.parametrize(
    "response",
    [
        {"batchItemFailures": [{"itemIdentifier": ""}]},
        {"batchItemFailures": [{"itemIdentifier": None}]},
        {"batchItemFailures": [{"itemIdentifer": "102"}]},  # a bad key name
        {"batchItemFailures": [{"itemIdentifier": "999"}]},  # not in the batch
        {"batchItemFailures": "102"},
        ["102"],
    ],
)
def test_an_unusable_answer_fails_the_whole_batch(response: Any) -> None:
    done, partial, why = judge(response)
    assert (done, partial) == (0, False)
    assert why.startswith("invalid partial batch response")


def test_an_error_fails_the_whole_batch() -> None:
    v = judge_stream_batch(
        SEQ, errored=True, response=None, report_batch_item_failures=True, error_text="boom"
    )
    assert (v.done, v.complete_failure, v.why) == (0, True, "boom")


def test_retries_count_until_the_limit_then_the_batch_is_discarded() -> None:
    policy = RetryPolicy(maximum_retry_attempts=2)
    failed = judge_stream_batch(SEQ, errored=True, response=None, report_batch_item_failures=False)
    assert plan_next(failed, 0, policy, ()).plan == ((4, 1),)
    assert plan_next(failed, 1, policy, ()).plan == ((4, 2),)
    last = plan_next(failed, 2, policy, ((3, 0),))
    assert (last.done, last.discard, last.condition, last.plan) == (0, 4, RETRY_ATTEMPTS_EXHAUSTED, ((3, 0),))


def test_infinite_retries_never_discard() -> None:
    failed = judge_stream_batch(SEQ, errored=True, response=None, report_batch_item_failures=False)
    assert plan_next(failed, 10_000, RetryPolicy(), ()).discard == 0


def test_bisect_splits_without_spending_a_retry_and_a_single_record_spends_one() -> None:
    policy = RetryPolicy(maximum_retry_attempts=1, bisect=True)
    failed = judge_stream_batch(SEQ, errored=True, response=None, report_batch_item_failures=False)
    assert plan_next(failed, 0, policy, ()).plan == ((2, 0), (2, 0))
    one = judge_stream_batch(["103"], errored=True, response=None, report_batch_item_failures=False)
    assert plan_next(one, 0, policy, ((1, 0),)).plan == ((1, 1), (1, 0))
    assert plan_next(one, 1, policy, ()).discard == 1


def test_a_partial_answer_with_bisect_retries_only_the_rest() -> None:
    policy = RetryPolicy(maximum_retry_attempts=3, bisect=True)
    partial = judge_stream_batch(
        SEQ,
        errored=False,
        response={"batchItemFailures": [{"itemIdentifier": "103"}]},
        report_batch_item_failures=True,
    )
    planned = plan_next(partial, 0, policy, ())
    assert (planned.done, planned.plan) == (2, ((2, 1),))


def test_records_older_than_the_maximum_age_are_the_expired_prefix() -> None:
    assert expired_prefix([0.0, 10.0, 50.0], 100.0, 60) == 2
    assert expired_prefix([0.0], 1e9, -1) == 0


def test_the_kinesis_event_is_shaped_as_aws_sends_it() -> None:
    raw = {
        "Data": b"hello",
        "PartitionKey": "k",
        "SequenceNumber": "7",
        "ApproximateArrivalTimestamp": datetime(2026, 1, 1, tzinfo=UTC),
    }
    record = kinesis_record(
        raw, shard_id="shardId-000000000001", stream_arn="arn:s", region="eu-west-1", role="r"
    )
    (event,) = stream_event([record])["Records"]
    assert event == {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": "k",
            "sequenceNumber": "7",
            "data": base64.b64encode(b"hello").decode(),
            "approximateArrivalTimestamp": 1767225600.0,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": "shardId-000000000001:7",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "r",
        "awsRegion": "eu-west-1",
        "eventSourceARN": "arn:s",
    }


def test_the_dynamodb_event_carries_the_stream_record_and_the_creation_time_in_seconds() -> None:
    raw = {
        "eventID": "e1",
        "eventName": "MODIFY",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": datetime(2026, 1, 1, tzinfo=UTC),
            "Keys": {"id": {"S": "1"}},
            "NewImage": {"id": {"S": "1"}, "v": {"N": "2"}},
            "OldImage": {"id": {"S": "1"}, "v": {"N": "1"}},
            "SequenceNumber": "900",
            "SizeBytes": 40,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }
    record = dynamodb_record(raw, stream_arn="arn:t/stream/x", region="eu-west-1")
    event = stream_event([record])["Records"][0]
    assert (event["eventName"], event["eventSource"], event["awsRegion"]) == (
        "MODIFY",
        "aws:dynamodb",
        "eu-west-1",
    )
    assert event["eventSourceARN"] == "arn:t/stream/x"
    assert event["dynamodb"]["ApproximateCreationDateTime"] == 1767225600
    assert event["dynamodb"]["OldImage"]["v"] == {"N": "1"}
    assert record.sequence_number == "900"
    json.dumps(event)  # the event is JSON as it is


def test_dynamodb_binary_attributes_arrive_base64_encoded() -> None:
    raw = {
        "eventName": "INSERT",
        "dynamodb": {
            "ApproximateCreationDateTime": 0,
            "Keys": {"id": {"B": b"\x00\x01"}},
            "NewImage": {"id": {"B": b"\x00\x01"}, "set": {"BS": [b"a"]}, "m": {"M": {"b": {"B": b"b"}}}},
            "SequenceNumber": "1",
        },
    }
    stream = stream_event([dynamodb_record(raw, stream_arn="a", region="r")])["Records"][0]["dynamodb"]
    assert stream["Keys"] == {"id": {"B": "AAE="}}
    assert stream["NewImage"]["set"] == {"BS": ["YQ=="]}
    assert stream["NewImage"]["m"] == {"M": {"b": {"B": "Yg=="}}}
    json.dumps(stream)


def test_a_batch_is_cut_at_the_six_megabyte_payload() -> None:
    big = {
        "Data": b"x" * 2_000_000,
        "PartitionKey": "k",
        "ApproximateArrivalTimestamp": 0.0,
    }
    records = [
        kinesis_record({**big, "SequenceNumber": str(i)}, shard_id="s", stream_arn="a", region="r", role="")
        for i in range(4)
    ]
    assert fits_payload(records) == 2  # 4/3 of 2 MB each in base64


def test_the_on_failure_record_describes_the_batch_not_its_records() -> None:
    raw = {"Data": b"x", "PartitionKey": "k", "ApproximateArrivalTimestamp": 1767225600.5}
    records = [
        kinesis_record(
            {**raw, "SequenceNumber": s}, shard_id="shardId-1", stream_arn="arn:s", region="r", role=""
        )
        for s in ("5", "6")
    ]
    document = failure_record(
        records,
        kind="kinesis",
        shard_id="shardId-1",
        stream_arn="arn:s",
        function_arn="arn:f",
        condition=RETRY_ATTEMPTS_EXHAUSTED,
        invoke_count=3,
        request_id="req",
        function_error="Unhandled",
        now=1767225601.0,
    )
    assert document["requestContext"] == {
        "requestId": "req",
        "functionArn": "arn:f",
        "condition": "RetryAttemptsExhausted",
        "approximateInvokeCount": 3,
    }
    assert document["KinesisBatchInfo"] == {
        "shardId": "shardId-1",
        "startSequenceNumber": "5",
        "endSequenceNumber": "6",
        "approximateArrivalOfFirstRecord": "2026-01-01T00:00:00.500Z",
        "approximateArrivalOfLastRecord": "2026-01-01T00:00:00.500Z",
        "batchSize": 2,
        "streamArn": "arn:s",
    }
    assert "payload" not in document
    assert "Records" not in json.dumps(document)


def test_stream_sources_are_recognised_by_their_arn() -> None:
    assert source_kind("arn:aws:kinesis:us-east-1:123456789012:stream/s") == "kinesis"
    assert (
        source_kind("arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026-01-01T00:00:00.000")
        == "dynamodb"
    )
    assert source_kind("arn:aws:dynamodb:us-east-1:123456789012:table/t") is None
    assert source_kind("arn:aws:sqs:us-east-1:123456789012:q") is None


def test_stream_mapping_limits_lambda_documents() -> None:
    ok = {"StartingPosition": "TRIM_HORIZON", "BatchSize": 10_000, "MaximumRecordAgeInSeconds": -1}
    assert stream_mapping_errors("kinesis", ok, creating=True) == []
    bad = {
        "BatchSize": 0,
        "MaximumBatchingWindowInSeconds": 301,
        "ParallelizationFactor": 11,
        "MaximumRetryAttempts": 10_001,
        "MaximumRecordAgeInSeconds": 59,
    }
    errors = stream_mapping_errors("kinesis", bad, creating=True)
    assert len(errors) == 6, errors  # five ranges and the missing StartingPosition
    assert stream_mapping_errors("dynamodb", {"StartingPosition": "AT_TIMESTAMP"}, creating=True)
    assert stream_mapping_errors("dynamodb", {"BatchSize": 5}, creating=False) == []


class _Recorder:
    """A boto3 client for any service: remembers each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, service: str) -> Any:
        recorder = self

        class Client:
            def __getattr__(self, operation: str) -> Any:
                def call(**kwargs: Any) -> dict[str, Any]:
                    recorder.calls.append((service, operation, kwargs))
                    return {}

                return call

        return Client()


@pytest.mark.parametrize(
    ("destination", "operation"),
    [
        ("arn:aws:sqs:us-east-1:123456789012:dlq", ("sqs", "send_message")),
        ("arn:aws:sns:us-east-1:123456789012:topic", ("sns", "publish")),
        ("arn:aws:s3:::bucket", ("s3", "put_object")),
    ],
)
def test_the_on_failure_record_goes_to_each_kind_of_destination(
    destination: str, operation: tuple[str, str]
) -> None:
    raw = {
        "Data": b"x",
        "PartitionKey": "k",
        "ApproximateArrivalTimestamp": 1767225600.0,
        "SequenceNumber": "5",
    }
    records = [kinesis_record(raw, shard_id="shardId-1", stream_arn="arn:s", region="r", role="")]
    client = _Recorder()
    document = {"requestContext": {"condition": RETRY_ATTEMPTS_EXHAUSTED}}
    send_failure_record(
        client,
        destination,
        document,
        records,
        queue_url=lambda _sqs, arn: f"url-of-{arn}",
        mapping_uuid="m-1",
        shard_id="shardId-1",
        now=1767225600.0,
    )
    ((service, name, kwargs),) = client.calls
    assert (service, name) == operation
    if service == "s3":
        # Only S3 gets the records too (the invocation's payload), under Lambda's key layout.
        assert kwargs["Bucket"] == "bucket"
        assert kwargs["Key"].startswith("aws/lambda/m-1/shardId-1/2026/01/01/2026-01-01T00.00.00-")
        body = json.loads(kwargs["Body"])
        assert json.loads(body["payload"])["Records"][0]["kinesis"]["sequenceNumber"] == "5"
    else:
        body = json.loads(kwargs.get("MessageBody") or kwargs["Message"])
        assert body == document


# --- the shard poller, with a fake shard, function and clock -------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.t, tz=UTC)


class _Functions:
    """Runs ``answer(records' bodies)`` as the function: returns an answer, or raises for an error."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[list[str]] = []

    def describe(self, arn: str) -> Any:
        return type("Config", (), {"arn": arn, "name": "fn", "timeout": 3})()

    def invoke(self, arn: str, event: Any, *, config: Any, throttle: bool) -> Any:
        from serverless_retry_tools.local.runtime.functions import InvocationResult

        bodies = [base64.b64decode(r["kinesis"]["data"]).decode() for r in event["Records"]]
        self.calls.append(bodies)
        try:
            return InvocationResult(request_id="r", ok=True, result=self.answer(event["Records"]))
        except RuntimeError as exc:
            return InvocationResult(
                request_id="r", ok=False, error={"errorType": "RuntimeError", "errorMessage": str(exc)}
            )


class _Shard:
    def __init__(self, records: list[tuple[str, str]], arrival: float) -> None:
        self.records = [
            kinesis_record(
                {
                    "Data": body.encode(),
                    "PartitionKey": key,
                    "SequenceNumber": str(i + 1),
                    "ApproximateArrivalTimestamp": arrival,
                },
                shard_id="shardId-0",
                stream_arn=ARN,
                region="r",
                role="",
            )
            for i, (key, body) in enumerate(records)
        ]

    def shards(self) -> list[str]:
        return ["shardId-0"]

    def iterator(
        self, shard_id: str, position: str, *, timestamp: Any = None, after: str | None = None
    ) -> str:
        return str(int(after) if after else 0)

    def read(self, shard_id: str, iterator: str, limit: int) -> tuple[list[Any], str | None]:
        start = int(iterator)
        got = self.records[start : start + limit]
        return got, str(start + len(got))


ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/s"


def _poller(
    shard: _Shard, functions: _Functions, clock: _Clock
) -> tuple[Any, Any, list[tuple[str, dict[str, Any]]]]:
    import threading

    from serverless_retry_tools.local.runtime.runner_services import RunnerServices
    from serverless_retry_tools.local.runtime.streams.checkpoints import Checkpoints
    from serverless_retry_tools.local.runtime.streams.shard_poller import ShardPoller

    events: list[tuple[str, dict[str, Any]]] = []
    services = RunnerServices(
        region="r",
        clock=clock,  # type: ignore[arg-type]
        functions=functions,  # type: ignore[arg-type]
        clock_holder=type("Holder", (), {"running": lambda self, token, deadline: None})(),  # type: ignore[arg-type]
        client=lambda service: None,
        emit=lambda kind, **detail: events.append((kind, detail)),
        warn_once=lambda key, message: None,
        count=lambda **deltas: None,
        queue_url=lambda sqs, arn: "",
        invoke_async=lambda function, payload: None,
    )
    checkpoints = Checkpoints()
    poller = ShardPoller(
        services,
        threading.Event(),
        checkpoints,
        lambda mapping: shard,
        mapping_uuid="m",
        arn=ARN,
        shard_id="shardId-0",
    )
    return poller, checkpoints, events


def _raise_on_poison(records: list[dict[str, Any]]) -> Any:
    if any(base64.b64decode(r["kinesis"]["data"]) == b"poison" for r in records):
        raise RuntimeError("poison")
    return None


def test_lanes_go_on_past_a_failing_key_and_the_checkpoint_waits_for_it() -> None:
    from serverless_retry_tools.local.runtime.streams.shard_poller import lane_of

    other = next(k for k in (f"k{i}" for i in range(100)) if lane_of(k, 2) != lane_of("a", 2))
    shard = _Shard([("a", "poison"), (other, "x1"), (other, "x2"), ("a", "after")], arrival=990.0)
    functions = _Functions(_raise_on_poison)
    poller, checkpoints, _ = _poller(shard, functions, _Clock())
    mapping = {"FunctionArn": "arn:f", "BatchSize": 1, "ParallelizationFactor": 2, "MaximumRetryAttempts": 1}
    poller.step(mapping)
    assert sorted(map(tuple, functions.calls)) == [("poison",), ("x1",)]  # one batch per lane, together
    assert checkpoints.get("m", "shardId-0") is None  # record 1 (the poison) is not done
    poller.step(mapping)
    assert checkpoints.snapshot()["m"]["shardId-0"].discarded == ("1",)
    assert checkpoints.get("m", "shardId-0") == "3"  # 1 discarded, 2 and 3 processed; 4 waits
    for _ in range(5):  # bounded
        if checkpoints.get("m", "shardId-0") == "4":
            break
        poller.step(mapping)
    assert checkpoints.get("m", "shardId-0") == "4"
    assert [c for c in functions.calls if c not in (["x1"], ["x2"])] == [["poison"], ["poison"], ["after"]]


def test_records_past_the_maximum_age_are_discarded_without_an_invocation() -> None:
    clock = _Clock()
    shard = _Shard([("a", "old"), ("a", "new")], arrival=900.0)
    shard.records[1] = kinesis_record(
        {"Data": b"new", "PartitionKey": "a", "SequenceNumber": "2", "ApproximateArrivalTimestamp": 990.0},
        shard_id="shardId-0",
        stream_arn=ARN,
        region="r",
        role="",
    )
    functions = _Functions(lambda records: None)
    poller, checkpoints, events = _poller(shard, functions, clock)
    mapping = {"FunctionArn": "arn:f", "MaximumRecordAgeInSeconds": 60}
    poller.step(mapping)  # 100 s old: discarded; 10 s old: runs
    poller.step(mapping)
    assert functions.calls == [["new"]]
    assert [d["condition"] for kind, d in events if kind == "stream-discarded"] == ["RecordAgeExceeded"]
    assert checkpoints.get("m", "shardId-0") == "2"
    assert checkpoints.snapshot()["m"]["shardId-0"].waited == {"2": 10.0}

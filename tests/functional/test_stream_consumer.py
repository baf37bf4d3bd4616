"""The stream consumer on moto: every record of a Kinesis or DynamoDB Streams batch ends in exactly one
known place, a failed hand-off is reported by its sequence number, a re-polled batch starts no second
chain, and blocking mode is Lambda's own behaviour."""

from __future__ import annotations

import base64
import copy
import json
import random
from pathlib import Path
from typing import Any

import boto3
import pytest
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.consumer.claims import DynamoDBClaims
from serverless_retry.envelope import unwrap
from serverless_retry.errors import NonRetryableError
from serverless_retry.policy import RetryPolicy
from serverless_retry.streams.consumer import StreamRetryingConsumer
from serverless_retry.streams.reader import read_stream_record
from serverless_retry.streams.stream_message import StreamMessage
from serverless_retry.terminal import read_terminal

from tests.functional.conftest import QUIET_LOGGER, REGION, Stack, event_from, failure_ids

EVENTS = Path(__file__).resolve().parents[1] / "events"
POLICY = {"max_attempts": 3, "backoff": {"strategy": "fixed", "base_seconds": 20, "max_seconds": 600}}


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return loaded


def behaviour(message: StreamMessage) -> str:
    if message.kind == "kinesis":
        return str(message.json()["behaviour"])
    image = message.new_image if message.new_image is not None else message.old_image
    assert image is not None
    return str(image["behaviour"])


class Recorder:
    """The user's processor: ok succeeds, retryable raises TimeoutError on attempt 1 only,
    non-retryable raises NonRetryableError, crash is a bug (KeyError), always-fails always raises."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, int, str]] = []  # (sequence number, attempt, retry id)

    def __call__(self, message: StreamMessage) -> None:
        self.runs.append((message.sequence_number, message.attempt, message.retry.id))
        kind = behaviour(message)
        if kind == "retryable" and message.attempt == 1:
            raise TimeoutError("downstream timed out")
        if kind == "non-retryable":
            raise NonRetryableError("order o-3 is invalid")
        if kind == "crash" and message.attempt == 1:
            _ = {}["customer"]  # the user's bug
        if kind == "always-fails":
            raise TimeoutError("still down")
        if kind == "exit" and message.attempt == 1:
            raise SystemExit(2)  # not even an Exception: still this record's failure only


def make(
    stack: Stack, clock: FrozenClock, processor: Any, *, sqs: Any = None, claims: Any = None, **kw: Any
) -> StreamRetryingConsumer:
    return StreamRetryingConsumer.build(
        processor,
        RetryPolicy.from_dict(kw.pop("policy", POLICY)),
        stack.targets(),
        clients=AwsClients.of(sqs=sqs or stack.sqs, scheduler=stack.scheduler),
        clock=clock,
        rand=random.Random(7),
        logger=QUIET_LOGGER,
        claims=claims,
        **kw,
    )


def kinesis_event(behaviours: list[str]) -> dict[str, Any]:
    """A Kinesis batch of one shard, its sequence numbers increasing, one record per behaviour."""
    template = sample("kinesis-batch.json")["Records"][0]
    records = []
    for i, kind in enumerate(behaviours):
        record = copy.deepcopy(template)
        sequence = f"4959033827149025660855969253836157109592157598913{6588898 + i * 1000:07d}"
        record["kinesis"]["sequenceNumber"] = sequence
        record["kinesis"]["partitionKey"] = f"o-{i}"
        record["kinesis"]["data"] = base64.b64encode(
            json.dumps({"order_id": f"o-{i}", "behaviour": kind}).encode()
        ).decode()
        record["eventID"] = f"shardId-000000000006:{sequence}"
        records.append(record)
    return {"Records": records}


def copies(stack: Stack, url: str) -> list[dict[str, Any]]:
    return stack.drain(url)


@pytest.mark.parametrize("name", ["kinesis-batch.json", "dynamodb-stream-batch.json"])
def test_every_record_ends_in_exactly_one_known_place(stack: Stack, clock: FrozenClock, name: str) -> None:
    event = sample(name)
    messages = [read_stream_record(r) for r in event["Records"]]
    by_kind = {behaviour(m): m for m in messages}
    processor = Recorder()

    response = make(stack, clock, processor)(event)

    assert response == {"batchItemFailures": []}  # the shard goes on past every record
    assert [(s, a) for s, a, _ in processor.runs] == [(m.sequence_number, 1) for m in messages]
    assert stack.receive(stack.queue_url) == []  # the retries wait their 20 s
    clock.advance(21)
    retried = {}
    for m in copies(stack, stack.queue_url):
        incoming = unwrap(m["Body"], {}, message_id=m["MessageId"], source=stack.queue_arn)
        assert incoming.kind == "envelope"
        assert incoming.context.attempt == 2
        assert incoming.context.source == messages[0].event_source_arn
        assert incoming.meta is not None
        assert incoming.meta["history"][0]["delay_seconds"] == 20
        retried[incoming.context.id] = json.loads(incoming.body)  # the stream record, as Lambda sent it
    exhausted = [
        read_terminal(m["Body"], m.get("MessageAttributes")) for m in copies(stack, stack.exhausted_url)
    ]

    assert set(retried) == {by_kind["retryable"].retry.id, by_kind["crash"].retry.id}
    assert retried[by_kind["crash"].retry.id] == by_kind["crash"].record
    assert [(v.outcome, v.id, v.error_type) for v in exhausted] == [
        ("non-retryable", by_kind["non-retryable"].retry.id, "NonRetryableError")
    ]
    assert "NonRetryableError" in exhausted[0].reason
    assert json.loads(exhausted[0].body) == by_kind["non-retryable"].record
    # ok: processed, nowhere else; the others: one copy each, in one queue.
    assert by_kind["ok"].retry.id not in retried
    assert stack.receive(stack.dlq_url) == []


class FailingSends:
    """The SQS client, but SendMessageBatch fails every entry whose body names ``marker``."""

    def __init__(self, real: Any, marker: str | None) -> None:
        self.real = real
        self.marker = marker

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def send_message_batch(self, **params: Any) -> Any:
        entries = params["Entries"]
        bad = [e for e in entries if self.marker is None or self.marker in e["MessageBody"]]
        good = [e for e in entries if e not in bad]
        answer: dict[str, Any] = {"Successful": [], "Failed": []}
        if good:
            answer = dict(self.real.send_message_batch(**{**params, "Entries": good}))
            answer.setdefault("Failed", [])
        for e in bad:
            answer["Failed"].append(
                {"Id": e["Id"], "SenderFault": False, "Code": "InternalError", "Message": "injected"}
            )
        return answer


def test_a_failed_hand_off_reports_its_sequence_number_and_only_it(stack: Stack, clock: FrozenClock) -> None:
    event = kinesis_event(["ok", "retryable", "retryable", "retryable", "ok"])
    sequences = [r["kinesis"]["sequenceNumber"] for r in event["Records"]]
    processor = Recorder()
    consumer = make(stack, clock, processor, sqs=FailingSends(stack.sqs, sequences[2]))

    response = consumer(event)

    # Lambda checkpoints before the lowest reported sequence number and retries from it: the records
    # before it are not reported (their copies were sent, or they succeeded), and records 3 and 4 come
    # again with record 2: nothing after the failed hand-off is let past the checkpoint.
    assert failure_ids(response) == [sequences[2]]
    clock.advance(21)
    sent = [
        json.loads(unwrap(m["Body"], {}, message_id="x", source="s").body)
        for m in copies(stack, stack.queue_url)
    ]
    assert sorted(r["kinesis"]["sequenceNumber"] for r in sent) == [sequences[1], sequences[3]]


def test_when_every_send_fails_the_first_failed_record_is_reported(stack: Stack, clock: FrozenClock) -> None:
    event = kinesis_event(["ok", "ok", "non-retryable", "retryable", "ok"])
    sequences = [r["kinesis"]["sequenceNumber"] for r in event["Records"]]
    consumer = make(stack, clock, Recorder(), sqs=FailingSends(stack.sqs, None))
    assert failure_ids(consumer(event)) == [sequences[2]]
    assert copies(stack, stack.queue_url) == []
    assert copies(stack, stack.exhausted_url) == []


def test_an_unreadable_record_goes_to_the_exhausted_queue_with_the_reason(
    stack: Stack, clock: FrozenClock
) -> None:
    event = kinesis_event(["ok", "ok"])
    event["Records"][1]["kinesis"]["data"] = "%%% not base64"
    processor = Recorder()
    assert make(stack, clock, processor)(event) == {"batchItemFailures": []}
    assert len(processor.runs) == 1
    (kept,) = [
        read_terminal(m["Body"], m.get("MessageAttributes")) for m in copies(stack, stack.exhausted_url)
    ]
    assert kept.outcome == "invalid-envelope"
    assert "kinesis.data is not valid base64" in kept.reason
    assert json.loads(kept.body) == event["Records"][1]


def claims_table(clock: FrozenClock) -> DynamoDBClaims:
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName="stream-claims",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return DynamoDBClaims(lambda: client, "stream-claims")


def drive_retry_queue(stack: Stack, clock: FrozenClock, consumer: StreamRetryingConsumer) -> None:
    """The retry queue's event source mapping, until the queue stays empty (bounded rounds): each
    receive goes through the same consumer; what it does not report is deleted."""
    quiet = 0
    for _ in range(20):
        clock.advance(60)
        messages = stack.receive(stack.queue_url)
        if not messages:
            quiet += 1
            if quiet == 3:
                return
            continue
        quiet = 0
        failed = set(failure_ids(consumer(event_from(messages, stack.queue_arn))))
        for m in messages:
            if m["MessageId"] not in failed:
                stack.sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=m["ReceiptHandle"])
    raise AssertionError("the retry queue did not settle in 20 rounds")


@pytest.mark.parametrize("name", ["kinesis-batch.json", "dynamodb-stream-batch.json"])
def test_a_re_polled_batch_starts_no_second_chain(stack: Stack, clock: FrozenClock, name: str) -> None:
    event = sample(name)
    processor = Recorder()
    consumer = make(stack, clock, processor, claims=claims_table(clock))

    assert consumer(event) == {"batchItemFailures": []}
    assert consumer(copy.deepcopy(event)) == {"batchItemFailures": []}  # Lambda sends the batch again
    clock.advance(21)
    handed_off = stack.receive(stack.queue_url, visibility=1)
    assert len(handed_off) == 4  # two records, each handed off on both polls
    for m in handed_off:  # signed with the deployment's key, as every copy pattern 1 writes
        assert isinstance(json.loads(m["Body"])["serverless_retry"]["sig"], str)
    drive_retry_queue(stack, clock, consumer)

    by_chain: dict[str, list[int]] = {}
    for _, attempt, chain in processor.runs:
        by_chain.setdefault(chain, []).append(attempt)
    messages = {behaviour(m): m.retry.id for m in (read_stream_record(r) for r in event["Records"])}
    # Each record ran twice on the stream (the re-poll: at least once), its retry once: the second
    # hand-off copy of attempt 2 met the first one's claim and was acknowledged as a duplicate.
    assert by_chain[messages["retryable"]] == [1, 1, 2]
    assert by_chain[messages["crash"]] == [1, 1, 2]
    assert by_chain[messages["ok"]] == [1, 1]
    # The non-retryable record went final on each poll (as a redelivered SQS first message does,
    # the exhausted queue can hold the same final twice; its redrive drops the twin).
    finals = [read_terminal(m["Body"]) for m in copies(stack, stack.exhausted_url)]
    assert {v.id for v in finals} == {messages["non-retryable"]}
    assert copies(stack, stack.queue_url) == []
    assert stack.receive(stack.dlq_url) == []


def test_blocking_reports_the_first_failure_and_every_later_record(stack: Stack, clock: FrozenClock) -> None:
    event = kinesis_event(["ok", "retryable", "ok", "non-retryable"])
    sequences = [r["kinesis"]["sequenceNumber"] for r in event["Records"]]
    processor = Recorder()
    response = make(stack, clock, processor, ordering="blocking")(event)
    assert failure_ids(response) == sequences[1:]
    assert [s for s, _, _ in processor.runs] == sequences[:2]  # nothing after the failure ran
    assert copies(stack, stack.queue_url) == []  # no hand-off
    assert copies(stack, stack.exhausted_url) == []


def test_a_re_polled_hand_off_through_the_scheduler_makes_one_schedule(
    stack: Stack, clock: FrozenClock
) -> None:
    policy = {"max_attempts": 3, "backoff": {"strategy": "fixed", "base_seconds": 1200, "max_seconds": 3600}}
    event = kinesis_event(["ok", "retryable"])
    consumer = make(stack, clock, Recorder(), policy=policy, claims=claims_table(clock))
    assert consumer(event) == {"batchItemFailures": []}
    clock.advance(5)
    assert consumer(copy.deepcopy(event)) == {"batchItemFailures": []}
    (schedule,) = stack.schedules()  # the name is the chain id's and attempt's: the second one conflicts
    envelope = json.loads(schedule["Target"]["Input"])
    assert envelope["serverless_retry"]["attempt"] == 2
    assert (
        json.loads(envelope["body"])["kinesis"]["sequenceNumber"]
        == event["Records"][1]["kinesis"]["sequenceNumber"]
    )
    assert stack.receive(stack.queue_url) == []


def test_a_base_exception_fails_only_its_record_and_is_retried(stack: Stack, clock: FrozenClock) -> None:
    event = kinesis_event(["exit", "ok"])
    processor = Recorder()
    assert make(stack, clock, processor)(event) == {"batchItemFailures": []}
    assert len(processor.runs) == 2
    clock.advance(21)
    (retry,) = copies(stack, stack.queue_url)
    envelope = json.loads(retry["Body"])["serverless_retry"]
    assert envelope["history"][0]["error_type"] == "SystemExit"


def test_a_claims_table_that_does_not_answer_reports_the_first_failed_record(
    stack: Stack, clock: FrozenClock
) -> None:
    """No signing key, no signed copy: nothing is sent for the failed records, and the first is named."""
    client = boto3.client("dynamodb", region_name=REGION)  # no table: every call fails
    consumer = make(stack, clock, Recorder(), claims=DynamoDBClaims(lambda: client, "missing-table"))
    event = kinesis_event(["ok", "retryable", "ok", "retryable"])
    assert failure_ids(consumer(event)) == [event["Records"][1]["kinesis"]["sequenceNumber"]]
    clock.advance(21)
    assert copies(stack, stack.queue_url) == []

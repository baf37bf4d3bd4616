"""Claim checks: a final envelope too large for the retry-exhausted queue goes to S3 whole, behind a
pointer that keeps its reason; the pointer is sent only once the payload is written, and read back
through it the message is the one the producer sent, byte for byte."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.errors import NonRetryableError, RetryableError
from serverless_retry.message import Message
from serverless_retry.payload_pointer import PayloadTarget
from serverless_retry.payload_store import PayloadError, resolve_pointer
from serverless_retry.terminal import read_terminal

from .conftest import REGION, Stack, event_from, failure_ids, make_consumer

ONE_MIB = 1_048_576
BUCKET = "orders-archive"
TARGET = PayloadTarget(BUCKET, "serverless-retry/")
DEFAULTS = {"max_attempts": 5, "backoff": {"strategy": "exponential", "base_seconds": 30}}


@pytest.fixture
def big(stack: Stack) -> Stack:
    """The stack's queues at SQS's largest message size, and the archive bucket."""
    for url in (stack.queue_url, stack.exhausted_url):
        stack.sqs.set_queue_attributes(QueueUrl=url, Attributes={"MaximumMessageSize": str(ONE_MIB)})
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
    return stack


class FailingPuts:
    """An S3 client whose PutObject fails while ``failing`` is set (after nothing was written)."""

    def __init__(self, real: Any) -> None:
        self.real, self.failing, self.puts = real, True, 0

    def put_object(self, **kwargs: Any) -> Any:
        self.puts += 1
        if self.failing:
            raise ConnectionError("S3 unreachable")
        return self.real.put_object(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _largest_body() -> str:
    # As large as the source takes (1 MiB) with room for one attribute: its final envelope cannot fit.
    return json.dumps({"order": "o-1", "blob": "x" * (ONE_MIB - 200)})


def _send_and_run(stack: Stack, clock: FrozenClock, processor: Any, s3: Any, body: str) -> dict[str, Any]:
    stack.sqs.send_message(
        QueueUrl=stack.queue_url,
        MessageBody=body,
        MessageAttributes={"tenant": {"DataType": "String", "StringValue": "acme"}},
    )
    consumer = make_consumer(
        stack, processor, DEFAULTS, clock,
        clients=AwsClients.of(sqs=stack.sqs, scheduler=stack.scheduler, s3=s3),
        max_message_bytes=ONE_MIB, exhausted_max_message_bytes=ONE_MIB, payload_target=TARGET,
    )  # fmt: skip
    messages = stack.receive(stack.queue_url)
    assert len(messages) == 1
    return consumer(event_from(messages, stack.queue_arn), None)


def _no_customer(message: Message) -> None:
    raise NonRetryableError(f"order {message.json()['order']} has no customer")


def test_a_final_envelope_too_large_for_its_queue_goes_to_s3_behind_a_pointer_with_its_reason(
    big: Stack, clock: FrozenClock
) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    body = _largest_body()
    response = _send_and_run(big, clock, _no_customer, s3, body)
    assert failure_ids(response) == []
    [pointer] = big.receive(big.exhausted_url)
    assert len(pointer["Body"].encode()) < 4096  # the pointer, not the payload
    view = read_terminal(pointer["Body"], pointer.get("MessageAttributes"), message_id=pointer["MessageId"])
    assert view.form == "pointer"
    assert view.outcome == "non-retryable"
    assert "NonRetryableError" in view.reason
    assert view.error == "order o-1 has no customer"
    assert view.attempt == 1
    assert view.payload is not None
    assert view.payload["bucket"] == BUCKET
    assert view.payload["key"].startswith("serverless-retry/payloads/")
    # Read through the pointer: the whole final envelope, the original intact.
    whole = resolve_pointer(view, s3, TARGET)
    assert whole.form == "envelope"
    assert whole.body == body
    assert whole.attributes["tenant"]["StringValue"] == "acme"
    assert whole.reason == view.reason
    assert whole.id == view.id
    assert "NonRetryableError" in whole.traceback


def test_without_a_payload_store_the_same_message_is_framed_and_keeps_its_reason(
    big: Stack, clock: FrozenClock
) -> None:
    big.sqs.send_message(QueueUrl=big.queue_url, MessageBody=_largest_body())
    consumer = make_consumer(
        big,
        _no_customer,
        DEFAULTS,
        clock,
        max_message_bytes=ONE_MIB - 4096,
        exhausted_max_message_bytes=ONE_MIB,
    )
    messages = big.receive(big.queue_url)
    assert failure_ids(consumer(event_from(messages, big.queue_arn), None)) == []
    [framed] = big.receive(big.exhausted_url)
    view = read_terminal(framed["Body"], framed.get("MessageAttributes"))
    assert (view.form, view.outcome) == ("framed", "non-retryable")


def test_a_payload_not_written_sends_no_pointer_and_hands_the_record_back(
    big: Stack, clock: FrozenClock
) -> None:
    real = boto3.client("s3", region_name=REGION)
    s3 = FailingPuts(real)
    response = _send_and_run(big, clock, _no_customer, s3, _largest_body())
    assert len(failure_ids(response)) == 1  # back to the queue: nothing acknowledged
    assert big.receive(big.exhausted_url) == []  # and no pointer to a payload that is not there
    assert real.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


def test_a_final_copy_made_again_writes_the_same_payload_once(big: Stack, clock: FrozenClock) -> None:
    """The answer of the first invocation is lost (the record comes back): the second writes the same
    key, finds it there (IfNoneMatch) and sends the pointer again; one object in S3."""
    s3 = boto3.client("s3", region_name=REGION)
    body = _largest_body()
    big.sqs.send_message(QueueUrl=big.queue_url, MessageBody=body)
    consumer = make_consumer(
        big, _no_customer, DEFAULTS, clock,
        clients=AwsClients.of(sqs=big.sqs, scheduler=big.scheduler, s3=s3),
        max_message_bytes=ONE_MIB, exhausted_max_message_bytes=ONE_MIB, payload_target=TARGET,
    )  # fmt: skip
    messages = big.receive(big.queue_url, visibility=0)
    event = event_from(messages, big.queue_arn)
    assert failure_ids(consumer(event, None)) == []
    assert failure_ids(consumer(event, None)) == []  # the same delivery again
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    assert len(keys) == 1
    pointers = big.receive(big.exhausted_url)
    assert {json.loads(p["Body"])["serverless_retry"]["payload"]["key"] for p in pointers} == set(keys)


def test_a_retry_too_large_to_retry_ends_behind_a_pointer_too(big: Stack, clock: FrozenClock) -> None:
    """A retryable failure whose copy cannot fit the source queue: too-large-to-retry, with its reason."""
    s3 = boto3.client("s3", region_name=REGION)

    def busy(message: Message) -> None:
        raise RetryableError("downstream busy")

    body = _largest_body()
    assert failure_ids(_send_and_run(big, clock, busy, s3, body)) == []
    [pointer] = big.receive(big.exhausted_url)
    view = read_terminal(pointer["Body"])
    assert view.outcome == "too-large-to-retry"
    assert view.reason
    assert resolve_pointer(view, s3, TARGET).body == body


def test_a_payload_changed_since_is_refused(big: Stack, clock: FrozenClock) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    _send_and_run(big, clock, _no_customer, s3, _largest_body())
    [pointer] = big.receive(big.exhausted_url)
    view = read_terminal(pointer["Body"])
    assert view.payload is not None
    s3.put_object(Bucket=BUCKET, Key=view.payload["key"], Body=b'{"replaced": true}')
    with pytest.raises(PayloadError, match="size or SHA-256"):
        resolve_pointer(view, s3, TARGET)


def test_a_forged_pointer_to_another_bucket_is_not_read(big: Stack) -> None:
    """A producer may send a body shaped like a pointer; redrive and inspect read only this archive."""
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="someone-elses")
    s3.put_object(Bucket="someone-elses", Key="serverless-retry/payloads/secret.json", Body=b"{}")
    forged = json.dumps(
        {
            "serverless_retry": {
                "outcome": "exhausted",
                "reason": "forged",
                "payload": {
                    "bucket": "someone-elses",
                    "key": "serverless-retry/payloads/secret.json",
                    "bytes": 2,
                    "sha256": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
                },
            }
        }
    )
    view = read_terminal(forged)
    assert view.form == "pointer"
    with pytest.raises(PayloadError, match="not a payload of this deployment"):
        resolve_pointer(view, s3, TARGET)
    outside = view._replace(payload={**view.payload, "bucket": BUCKET, "key": "elsewhere/x.json"})  # type: ignore[typeddict-item]
    with pytest.raises(PayloadError, match="not a payload of this deployment"):
        resolve_pointer(outside, s3, TARGET)


# --- redrive through the pointer ----------------------------------------------------------------------


def _exhausted_pointer(big: Stack, clock: FrozenClock, s3: Any) -> str:
    body = _largest_body()
    assert failure_ids(_send_and_run(big, clock, _no_customer, s3, body)) == []
    # The source message was acknowledged by the consumer: gone from the source once deleted.
    for m in big.receive(big.queue_url, visibility=0):
        big.sqs.delete_message(QueueUrl=big.queue_url, ReceiptHandle=m["ReceiptHandle"])
    return body


def _redrive_env(big: Stack, **extra: str) -> dict[str, str]:
    from serverless_retry.handlers.redrive_queue import ENV_FROM_QUEUE_URLS, ENV_TO_QUEUE_URL

    return {ENV_FROM_QUEUE_URLS: big.exhausted_url, ENV_TO_QUEUE_URL: big.queue_url, **extra}


def _redrive(big: Stack, clock: FrozenClock, env: dict[str, str], s3: Any = None) -> Any:
    """What the redrive function runs with ``env`` (its options and its resolver), without long polls:
    moto's time stands still under the frozen clock, and a wait would never end."""
    from serverless_retry.handlers.redrive_queue import _resolver, options_for
    from serverless_retry.redrive.queue import redrive

    return redrive(big.sqs, options_for({}, env), clock=clock, wait_seconds=0, resolve=_resolver(env, s3))


def test_the_redrive_function_reads_through_the_pointer_and_sends_the_original_back(
    big: Stack, clock: FrozenClock
) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    body = _exhausted_pointer(big, clock, s3)
    env = _redrive_env(
        big, SERVERLESS_RETRY_ARCHIVE_BUCKET=BUCKET, SERVERLESS_RETRY_ARCHIVE_PREFIX="serverless-retry/"
    )
    report = _redrive(big, clock, env, s3)
    assert len(report.moved) == 1, report.failed
    [back] = big.receive(big.queue_url)
    # Too large for an envelope of its next attempt: the original as the producer sent it.
    assert back["Body"] == body
    assert back["MessageAttributes"]["tenant"]["StringValue"] == "acme"
    assert big.receive(big.exhausted_url) == []  # moved once: the pointer is gone


def test_without_the_archive_a_pointer_is_never_redriven_and_says_why(big: Stack, clock: FrozenClock) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    _exhausted_pointer(big, clock, s3)
    report = _redrive(big, clock, _redrive_env(big))
    assert report.moved == []
    [(_, why)] = report.failed
    assert "claim-check pointer (non-retryable" in why
    assert "archive" in why
    assert big.receive(big.queue_url) == []  # nothing sent: not the pointer, not half a message
    clock.advance(121)  # past the pass's visibility timeout, whether or not it released it
    [still] = big.receive(big.exhausted_url)
    assert read_terminal(still["Body"]).form == "pointer"


def test_a_native_move_of_a_queue_of_pointers_is_refused(big: Stack, clock: FrozenClock) -> None:
    from serverless_retry.redrive.native import check_native

    s3 = boto3.client("s3", region_name=REGION)
    _exhausted_pointer(big, clock, s3)
    check = check_native(big.sqs, big.exhausted_url, big.queue_url)
    assert not check.applies
    assert any("final messages" in p for p in check.problems)


# --- the whole way: consumer → pointer → archiver → archive → redrive ------------------------------


def test_a_claim_checked_message_archived_then_redriven_from_the_archive_is_the_original(
    big: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1 MiB-class message given up on is kept behind a pointer, drained by the archiver (which reads
    the payload, so the record holds the whole original), then redriven from the archive by the CLI:
    the source gets the producer's body and attributes back, byte for byte, and the record is marked."""
    from serverless_retry.archive.archiver import Archiver, pointer_resolver
    from serverless_retry.archive.record import ArchiveSource
    from serverless_retry.archive.settings import ArchiverSettings
    from serverless_retry.archive.store import ArchiveStore
    from serverless_retry_tools import cli

    s3 = boto3.client("s3", region_name=REGION)
    body = _exhausted_pointer(big, clock, s3)
    exhausted_arn = big.sqs.get_queue_attributes(QueueUrl=big.exhausted_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    settings = ArchiverSettings(
        bucket=BUCKET,
        prefix=TARGET.prefix,
        sources={
            exhausted_arn: ArchiveSource(
                place="exhausted", source_queue_arn=big.queue_arn, deployment="orders"
            )
        },
    )
    archiver = Archiver(
        ArchiveStore(s3, BUCKET, TARGET.prefix),
        settings,
        clock=clock,
        resolve=pointer_resolver(s3, BUCKET, TARGET.prefix),
    )
    pointers = big.receive(big.exhausted_url)
    assert [read_terminal(m["Body"]).form for m in pointers] == ["pointer"]
    assert archiver(event_from(pointers, exhausted_arn)) == {"batchItemFailures": []}
    big.sqs.delete_message(QueueUrl=big.exhausted_url, ReceiptHandle=pointers[0]["ReceiptHandle"])

    [key] = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{TARGET.prefix}dead/")["Contents"]]
    record = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert record["original"]["body"] == body  # the archive holds the whole message, not the pointer
    assert (record["outcome"], record["error_type"]) == ("non-retryable", "NonRetryableError")

    location = f"s3://{BUCKET}/{TARGET.prefix}"
    capsys.readouterr()  # the functions' log lines so far: the CLI's report is what follows
    assert cli.main(["redrive", "--archive", location, "--yes", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["moved"] == 1, report
    [back] = big.receive(big.queue_url)
    assert back["Body"] == body
    assert back["MessageAttributes"]["tenant"]["StringValue"] == "acme"
    marks = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())["redriven"]
    assert [m["to"] for m in marks] == [big.queue_url]

"""One chain per message on moto's DynamoDB: the claim classes of the fault runs, one case each.

- a retry copy that died holding its claim, went to the DLQ and was redriven is processed (it used to
  be acknowledged as a duplicate: lost);
- a first delivery writes nothing; a message that fails once and then succeeds costs one write;
- while the table does not answer, copies wait as new messages: nothing is handed back toward the DLQ,
  and when it answers again the waiting copy takes its own claim over;
- a copy whose attempt another live copy holds waits and is then a provable duplicate;
- FIFO ordered: receives spent held back behind a failing message are not attempts;
- the fake table of the fault run answers every claim sequence exactly as moto's does.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.consumer import RetryingConsumer
from serverless_retry.consumer.claims import (
    KEY_ITEM,
    TAKEOVER_GRACE_SECONDS,
    DynamoDBClaims,
    Finish,
    claim_key,
)
from serverless_retry.errors import RetryableError
from serverless_retry.message import Message
from serverless_retry.redrive.queue import decode, outgoing_message
from serverless_retry.testing import sqs_record

from tests.support.fakeaws import FakeDynamoDBClient

from .conftest import REGION, Stack, event_from, failure_ids, make_consumer, make_stack

FIXED_30 = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 30}}


class Writes:
    """A DynamoDB client that counts the write calls (each claim item is < 1 KB: one WRU each)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.writes = 0
        self.key_reads = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.real, name)

        def call(**params: Any) -> Any:
            if params.get("Key", {}).get("id", {}).get("S") == KEY_ITEM:
                self.key_reads += 1  # the signing key: once per Lambda instance, not per message
            elif name in ("put_item", "update_item"):
                self.writes += 1
            elif name == "batch_write_item":
                self.writes += sum(len(v) for v in params["RequestItems"].values())
            return method(**params)

        return call


class Outage:
    """A DynamoDB client that refuses every call while ``down``."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.down = False

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.real, name)

        def call(**params: Any) -> Any:
            if self.down:
                raise ClientError({"Error": {"Code": "InternalServerError", "Message": "outage"}}, name)
            return method(**params)

        return call


def table(name: str = "claims") -> Any:
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


def consumer_with(
    stack: Stack, process: Any, clock: FrozenClock, dynamodb: Any, *, sqs: Any = None
) -> RetryingConsumer:
    clients = AwsClients.of(sqs=sqs or stack.sqs, scheduler=stack.scheduler)
    consumer = make_consumer(stack, process, FIXED_30, clock, clients=clients, visibility_timeout_seconds=30)
    consumer.claims = DynamoDBClaims(lambda: dynamodb, "claims")
    consumer.delivery.resend_after_timeout = True
    return consumer


def received(stack: Stack) -> list[dict[str, Any]]:
    return stack.drain(stack.queue_url)


def redelivered(event: dict[str, Any], receives: int) -> dict[str, Any]:
    again = json.loads(json.dumps(event))
    for record in again["Records"]:
        record["attributes"]["ApproximateReceiveCount"] = str(receives)
    return again


# -- 1. the DLQ redrive of a copy that died holding its claim --------------------------------------------
@pytest.mark.parametrize("tool", [True, False], ids=["serverless-retry-redrive", "verbatim-redrive"])
def test_a_redriven_copy_whose_owner_died_holding_the_claim_is_processed(
    stack: Stack, clock: FrozenClock, tool: bool
) -> None:
    dynamodb = table()
    runs: list[tuple[int, str]] = []
    dying = False

    class Died(BaseException):
        """The invocation dies (a timeout, an OOM kill) after claiming: nothing is acknowledged."""

    class DyingSqs:
        def __getattr__(self, name: str) -> Any:
            method = getattr(stack.sqs, name)

            def call(**params: Any) -> Any:
                if dying and name == "send_message_batch":
                    raise Died()
                return method(**params)

            return call

    def process(message: Message) -> None:
        runs.append((message.retry.attempt, message.message_id))
        if message.retry.attempt == 1 or dying:
            raise RetryableError("busy")

    consumer = consumer_with(stack, process, clock, dynamodb, sqs=DyingSqs())
    consumer(event_from(_send(stack, "order-1"), stack.queue_arn))
    clock.advance(31)
    [copy] = received(stack)
    copy_event = event_from([copy], stack.queue_arn)
    dying = True
    for receives in range(1, 6):  # maxReceiveCount 5: it dies every time, then SQS moves it to the DLQ
        with pytest.raises(Died):
            consumer(redelivered(copy_event, receives))
        clock.advance(31)
    assert [a for a, _ in runs] == [1, 2, 2, 2, 2, 2]

    # An operator redrives the DLQ: the same copy under a new SQS message id.
    dying = False
    if tool:
        # A claimant's claim is taken once its lease has passed (a live lease never is): SQS moves the
        # copy to the DLQ a visibility timeout after its fifth receive, the redrive comes later.
        clock.advance(31)
        found = decode({"MessageId": copy["MessageId"], "Body": copy["Body"], "MessageAttributes": {}})
        body = outgoing_message(found, reset_attempts=False, now=clock.now()).body
    else:  # a plain SQS move (StartMessageMoveTask) keeps the body as it is
        body = copy["Body"]
        clock.advance(TAKEOVER_GRACE_SECONDS + 60)  # past the grace: its owner is gone for good
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body)
    [again] = received(stack)

    assert failure_ids(consumer(event_from([again], stack.queue_arn))) == []

    assert runs[-1] == (2, again["MessageId"])  # processed, not acknowledged as a duplicate


def test_within_the_grace_a_verbatim_redrive_waits_then_takes_over(stack: Stack, clock: FrozenClock) -> None:
    dynamodb = table()
    claims = DynamoDBClaims(lambda: dynamodb, "claims")
    now = clock.now()
    # The owner claimed on its fifth receive and died (SQS then moved it to the DLQ).
    assert claims.claim("chain", 2, "dead", receives=5, now=now, lease_seconds=45).result == "owned"
    redriven = claims.claim(
        "chain", 2, "redriven", receives=1, now=now + timedelta(seconds=60), lease_seconds=45
    )
    assert redriven.result == "busy"
    assert redriven.lease_until == int(now.timestamp()) + 45 + TAKEOVER_GRACE_SECONDS
    later = now + timedelta(seconds=45 + TAKEOVER_GRACE_SECONDS + 1)
    assert claims.claim("chain", 2, "redriven", receives=1, now=later, lease_seconds=45).result == "owned"


def _send(stack: Stack, body: str) -> list[dict[str, Any]]:
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body)
    return received(stack)


# -- 2. one write per retried message; none for a first delivery --------------------------------------------
def test_a_first_delivery_writes_nothing_and_a_retried_message_writes_once(
    stack: Stack, clock: FrozenClock
) -> None:
    dynamodb = Writes(table())

    def process(message: Message) -> None:
        if message.body.startswith("fail") and message.retry.attempt == 1:
            raise RetryableError("busy")

    consumer = consumer_with(stack, process, clock, dynamodb)
    for body in ("ok-1", "ok-2", "fail-1", "fail-2"):
        stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body)
    assert failure_ids(consumer(event_from(received(stack), stack.queue_arn))) == []
    assert dynamodb.writes == 0  # two successes and two failures' copies: no claim written yet
    clock.advance(31)
    copies = received(stack)
    assert len(copies) == 2
    assert failure_ids(consumer(event_from(copies, stack.queue_arn))) == []
    assert dynamodb.writes == 2  # one claim per retried message, no mark: both copies on a first receive
    assert dynamodb.key_reads == 1  # the copies were signed with the key read once, and verified with it


# -- 6. a claims-table outage: nothing toward the DLQ, nothing lost --------------------------------------------
def test_during_an_outage_a_copy_waits_as_a_new_message_and_then_runs_once(
    stack: Stack, clock: FrozenClock
) -> None:
    dynamodb = Outage(table())
    runs: list[int] = []

    def process(message: Message) -> None:
        runs.append(message.retry.attempt)
        if message.retry.attempt == 1:
            raise RetryableError("busy")

    consumer = consumer_with(stack, process, clock, dynamodb)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody="order")
    consumer(event_from(received(stack), stack.queue_arn))  # a first delivery needs no table
    dynamodb.down = True
    waited = 0
    for _ in range(10):  # an hour and a half of outage: the copy keeps waiting, unprocessed
        clock.advance(900)
        pending = received(stack)
        assert len(pending) == 1
        assert failure_ids(consumer(event_from(pending, stack.queue_arn))) == []  # never handed back
        waited += 1
    assert runs == [1]
    claimants = json.loads(json.dumps(stack.called("SendMessageBatch")[-1]))["Entries"][0]["MessageBody"]
    assert len(json.loads(claimants)["serverless_retry"]["claimants"]) == waited
    dynamodb.down = False
    clock.advance(900)
    assert failure_ids(consumer(event_from(received(stack), stack.queue_arn))) == []
    assert runs == [1, 2]


def test_a_claim_written_whose_answer_was_lost_is_taken_by_the_waiting_copy(
    stack: Stack, clock: FrozenClock
) -> None:
    dynamodb = table()
    claims = DynamoDBClaims(lambda: dynamodb, "claims")
    now = clock.now()
    # The write took effect for message "first" but its answer was lost: "first" waits as "second".
    assert claims.claim("chain", 3, "first", receives=1, now=now, lease_seconds=45).result == "owned"
    later = now + timedelta(seconds=600)
    # Past the lease, a duplicate copy judges "first" finished (a first receive, not redelivered) ...
    assert (
        claims.claim("chain", 3, "duplicate", receives=1, now=later, lease_seconds=45).result == "duplicate"
    )
    # ... while the copy that carries "first" on takes its claim as its own.
    taken = claims.claim(
        "chain", 3, "second", receives=1, now=later, lease_seconds=45, predecessors=["first"]
    )
    assert taken.result == "owned"


# -- busy copies wait, then are provable duplicates ------------------------------------------------------------
def test_a_copy_whose_attempt_a_live_copy_holds_waits_then_ends_as_a_duplicate(
    stack: Stack, clock: FrozenClock
) -> None:
    dynamodb = table()
    runs: list[str] = []

    def process(message: Message) -> None:
        runs.append(message.message_id)
        if message.retry.attempt == 1:
            raise RetryableError("busy")

    consumer = consumer_with(stack, process, clock, dynamodb)
    original = sqs_record("o", message_id="o", queue_arn=stack.queue_arn)
    consumer({"Records": [original]})
    consumer(
        {"Records": [{**original, "attributes": {**original["attributes"], "ApproximateReceiveCount": "2"}}]}
    )
    clock.advance(31)
    copies = received(stack)
    assert len(copies) == 2  # the redelivery ran attempt 1 again: two copies of attempt 2

    assert failure_ids(consumer(event_from(copies, stack.queue_arn))) == []
    assert runs.count(copies[0]["MessageId"]) + runs.count(copies[1]["MessageId"]) == 1
    clock.advance(3600)
    waiting = received(stack)
    assert len(waiting) == 1  # the other copy, waiting; it names the message it was
    assert json.loads(waiting[0]["Body"])["serverless_retry"]["claimants"]
    assert failure_ids(consumer(event_from(waiting, stack.queue_arn))) == []
    assert len(runs) == 3  # acknowledged without running: its attempt finished in the other copy
    assert received(stack) == []


# -- 4. FIFO ordered: a hold is not an attempt ---------------------------------------------------------------------
def test_fifo_ordered_receives_held_back_are_not_attempts(aws: None, clock: FrozenClock) -> None:
    stack = make_stack("ledger", fifo=True, max_receive_count=11)
    dynamodb = table()
    seen: dict[str, list[int]] = {}

    def process(message: Message) -> None:
        seen.setdefault(message.body, []).append(message.retry.attempt)
        if message.body == "head":
            raise RetryableError("busy")
        if message.body == "once" and len(seen["once"]) == 1:
            raise RetryableError("busy")

    consumer = make_consumer(stack, process, FIXED_30, clock, visibility_timeout_seconds=30)
    consumer.claims = DynamoDBClaims(lambda: dynamodb, "claims")
    for body in ("head", "steady", "once"):
        stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body, MessageGroupId="g")
    for _ in range(12):  # the head's whole budget (5 attempts), the others held back behind it
        messages = stack.receive(stack.queue_url, visibility=30)
        if not messages:
            clock.advance(31)
            continue
        response = consumer(event_from(messages, stack.queue_arn))
        failed = set(failure_ids(response))
        for m in messages:
            if m["MessageId"] not in failed:
                stack.sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=m["ReceiptHandle"])
        clock.advance(31)

    assert seen["head"] == [1, 2, 3, 4, 5]  # then the retry-exhausted queue
    assert seen["steady"] == [1]  # never failed: attempt 1, whatever it waited
    assert seen["once"] == [1, 2]  # failed once: retried, not exhausted at once
    assert stack.receive(stack.dlq_url) == []


# -- the fault run's fake table is moto's, claim for claim ----------------------------------------------------
def test_the_fake_table_answers_claims_as_moto_does(aws: None) -> None:
    client = table("differential")
    real = DynamoDBClaims(lambda: client, "differential")
    fake_client = FakeDynamoDBClient()
    fake = DynamoDBClaims(lambda: fake_client, "fake")  # type: ignore[arg-type,return-value]
    rng = random.Random(5)
    start = datetime(2026, 12, 1, tzinfo=UTC)
    owners = ["a", "b", "c", "d"]
    for step in range(400):
        now = start + timedelta(seconds=step * rng.choice([1, 30, 400, TAKEOVER_GRACE_SECONDS // 4]))
        attempt = rng.randint(1, 3)
        owner = rng.choice(owners)
        action = rng.random()
        generation = rng.choice([0, 0, 0, 1, 2])  # redrives of the retry-exhausted queue into the chain
        outcomes = []
        for store in (real, fake):
            try:
                if action < 0.6:
                    outcomes.append(
                        store.claim(
                            "x",
                            attempt,
                            owner,
                            receives=1 + step % 3,
                            now=now,
                            lease_seconds=45,
                            predecessors=[o for o in owners if o != owner][: step % 3],
                            generation=generation,
                        )
                    )
                elif action < 0.8:
                    outcomes.append(store.finish([Finish("x", attempt, owner, ended=step % 2 == 0)], now=now))
                elif action < 0.9:
                    store.mark_final("x", attempt, owner, final_attempt=attempt, now=now)
                    outcomes.append("final")
                else:
                    store.add_hold("x", now=now)
                    outcomes.append("hold")
            except ClientError as exc:
                outcomes.append(exc.response["Error"]["Code"])
        assert outcomes[0] == outcomes[1], (step, outcomes)
    item = client.get_item(TableName="differential", Key={"id": {"S": claim_key("x")}})["Item"]
    assert item == fake_client.items[claim_key("x")]

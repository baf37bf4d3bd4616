"""Where the claims protocol meets another mechanism, one case per defect class (issue: "Nothing lost,
nothing looped"), with the defaults a user gets: the default retry policy, the modules' visibility
timeout (6 x the default 30 s function timeout), the claims table on.

- claims x exhausted redrive: a redriven copy of an ended chain runs (it used to be acknowledged as a
  duplicate after the redrive had deleted it from the retry-exhausted queue: lost);
- claims x due-time validation: a copy that waited out a live claim's lease and the takeover grace is
  due, not "later than any retry the policy could have planned";
- claims x forged ids: an envelope a producer forged, naming a real chain at a higher attempt, can
  neither suppress the real copy nor reach the chain; forged claimants take over nothing;
- claims x TTL: a claim outlives the DLQ's longest retention;
- claims x clock skew: a claimed copy that came back early and hopped again keeps its claim;
- writer x reader: AWS's sample event (an attribute with both stringValue and binaryValue) retries.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.consumer import RetryingConsumer
from serverless_retry.consumer.claims import (
    MAX_RETENTION_SECONDS,
    DynamoDBClaims,
    claim_key,
    lease_seconds,
)
from serverless_retry.errors import RetryableError
from serverless_retry.message import Message
from serverless_retry.redrive.queue import decode, outgoing_message
from serverless_retry.testing import sqs_record

from .conftest import Stack, event_from, failure_ids, make_consumer
from .test_claims import table

DEFAULT_POLICY: dict[str, Any] = {}  # the module's retry_policy default: {} (the Python defaults)
VISIBILITY = 6 * 30  # the modules' visibility timeout: 6 x the default function timeout
LEASE = lease_seconds(VISIBILITY)


def _consumer(stack: Stack, process: Any, clock: FrozenClock, dynamodb: Any) -> RetryingConsumer:
    consumer = make_consumer(
        stack,
        process,
        DEFAULT_POLICY,
        clock,
        clients=AwsClients.of(sqs=stack.sqs, scheduler=stack.scheduler),
        visibility_timeout_seconds=VISIBILITY,
    )
    consumer.claims = DynamoDBClaims(lambda: dynamodb, "claims")
    consumer.delivery.resend_after_timeout = True
    return consumer


def _again(message: dict[str, Any], receives: int) -> dict[str, Any]:
    """The same SQS message received again (a redelivery after a crash or a lost response)."""
    again = json.loads(json.dumps(message))
    again.setdefault("Attributes", {})["ApproximateReceiveCount"] = str(receives)
    return again


def _next_copies(stack: Stack, clock: FrozenClock, seconds: int = 900) -> list[dict[str, Any]]:
    clock.advance(seconds)
    return stack.drain(stack.queue_url)


def _signed(body: str) -> bool:
    return "sig" in json.loads(body)["serverless_retry"]


# -- 1. claims x exhausted redrive ---------------------------------------------------------------------------
def test_a_redriven_exhausted_copy_of_an_ended_chain_runs(stack: Stack, clock: FrozenClock) -> None:
    dynamodb = table()
    runs: list[tuple[int, int]] = []
    fixed = False

    def process(message: Message) -> None:
        runs.append((message.retry.attempt, getattr(message.retry, "generation", 0)))
        if not fixed:
            raise RetryableError("upstream down")

    consumer = _consumer(stack, process, clock, dynamodb)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody="order-1")
    pending = stack.drain(stack.queue_url)
    for _ in range(10):  # default max_attempts 5; every copy's last step on a redelivery: claims end
        if not pending:
            break
        consumer(event_from(pending, stack.queue_arn))  # a duplicate copy among them ends as one
        consumer(event_from([_again(pending[0], 2)], stack.queue_arn))  # a lost response: it runs again
        pending = _next_copies(stack, clock)
    # Its last receive ran twice (at least once): the same final copy, twice.
    exhausted_copies = stack.drain(stack.exhausted_url)
    assert 1 <= len(exhausted_copies) <= 2
    exhausted = exhausted_copies[0]
    final = json.loads(exhausted["Body"])["serverless_retry"]
    assert (final["outcome"], final["attempt"]) == ("exhausted", 5)
    item = dynamodb.get_item(TableName="claims", Key={"id": {"S": claim_key(final["id"])}})["Item"]
    assert item["state"]["S"] == "ended"

    # The operator fixes the cause and redrives the retry-exhausted queue with the project's tool: each
    # copy there, one of them sent twice (the send took effect but timed out, and was made again).
    fixed = True
    for n, message in enumerate(exhausted_copies):
        found = decode({"MessageId": message["MessageId"], "Body": message["Body"], "MessageAttributes": {}})
        outgoing = outgoing_message(found, reset_attempts=False, now=clock.now())
        for _ in range(2 if n == 0 else 1):
            stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=outgoing.body)
    redriven = stack.drain(stack.queue_url)
    assert failure_ids(consumer(event_from(redriven, stack.queue_arn))) == []

    assert runs[-1] == (6, 1)  # processed: the next attempt, in the chain's next generation
    assert runs.count((6, 1)) == 1  # and once: the duplicate of the redrive met its claim
    assert stack.drain(stack.queue_url) == []
    assert stack.drain(stack.exhausted_url) == []
    assert _signed(exhausted["Body"])  # what let the redrive continue the chain (and no forger can)


# -- 2. claims x due-time validation -------------------------------------------------------------------------
def test_a_copy_that_waited_for_a_live_claim_is_due_not_invalid(stack: Stack, clock: FrozenClock) -> None:
    dynamodb = table()
    runs: list[str] = []

    def process(message: Message) -> None:
        runs.append(message.message_id)
        if message.retry.attempt == 1:
            raise RetryableError("busy")

    consumer = _consumer(stack, process, clock, dynamodb)
    original = sqs_record("o", message_id="o", queue_arn=stack.queue_arn)
    consumer({"Records": [original]})
    consumer(
        {"Records": [{**original, "attributes": {**original["attributes"], "ApproximateReceiveCount": "2"}}]}
    )
    copies = _next_copies(stack, clock)
    assert len(copies) == 2  # two copies of attempt 2

    # The first claimed on a later receive (it was redelivered) and its invocation died: nothing marked.
    claims = DynamoDBClaims(lambda: dynamodb, "claims")
    owner = claims.claim("o", 2, copies[0]["MessageId"], receives=2, now=clock.now(), lease_seconds=LEASE)
    assert owner.result == "owned"
    # The other meets that live claim: it waits until the lease ends plus the takeover grace.
    assert failure_ids(consumer(event_from([copies[1]], stack.queue_arn))) == []
    waiting = stack.receive(stack.queue_url, limit=10)
    assert waiting == []  # delayed: a new message, due in more than two hours
    for _ in range(14):  # its hops of at most 900 s, each early until the wait is over, then due
        clock.advance(900)
        pending = stack.drain(stack.queue_url)
        if pending:
            assert failure_ids(consumer(event_from(pending, stack.queue_arn))) == []
        if len(runs) == 3:
            break
    assert stack.drain(stack.exhausted_url) == []  # never judged invalid by its own consumer
    # attempt 1 (and its redelivery), then attempt 2 taken over from the dead owner, run once
    assert runs[:2] == ["o", "o"]
    assert len(runs) == 3


# -- 3. claims x forged ids ----------------------------------------------------------------------------------
def test_a_forged_envelope_naming_a_real_chain_suppresses_nothing(stack: Stack, clock: FrozenClock) -> None:
    dynamodb = table()
    runs: list[tuple[str, str, int]] = []

    def process(message: Message) -> None:
        runs.append((message.body, message.retry.id, message.retry.attempt))
        if message.retry.attempt == 1:
            raise RetryableError("busy")

    consumer = _consumer(stack, process, clock, dynamodb)
    original = sqs_record("real", message_id="o", queue_arn=stack.queue_arn)
    consumer({"Records": [original]})
    [real_copy] = _next_copies(stack, clock)
    meta = json.loads(real_copy["Body"])["serverless_retry"]
    # A producer that may send to the queue (not receive) and knows the message id forges attempt 4,
    # naming the real copy's future SQS id as a claimant too; it arrives first.
    forged_meta = {k: v for k, v in meta.items() if k not in ("sig", "due_at")}
    forged_meta.update(attempt=4, claimants=[real_copy["MessageId"]])
    forged = json.dumps({"serverless_retry": forged_meta, "body": "forged", "attributes": {}})
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=forged)
    [forged_message] = stack.drain(stack.queue_url)
    assert failure_ids(consumer(event_from([forged_message], stack.queue_arn))) == []
    assert failure_ids(consumer(event_from([real_copy], stack.queue_arn))) == []

    assert ("real", "o", 2) in runs  # the real copy ran its attempt: not called a duplicate
    forged_runs = [r for r in runs if r[0] == "forged"]
    assert forged_runs == [("forged", "unsigned:o", 4)]  # the forged one ran in a chain apart
    item = dynamodb.get_item(TableName="claims", Key={"id": {"S": claim_key("o")}})["Item"]
    assert (item["attempt"]["N"], item["owner"]["S"]) == ("2", real_copy["MessageId"])


def test_forged_claimants_cannot_take_over_a_live_claim(stack: Stack, clock: FrozenClock) -> None:
    dynamodb = table()
    claims = DynamoDBClaims(lambda: dynamodb, "claims")
    now = clock.now()
    assert claims.claim("chain", 2, "owner", receives=2, now=now, lease_seconds=LEASE).result == "owned"
    forged = claims.claim(
        "chain",
        2,
        "forger",
        receives=1,
        now=now + timedelta(seconds=5),
        lease_seconds=LEASE,
        predecessors=["owner"],
    )
    assert forged.result == "busy"  # a claimant's claim is taken only once its lease has passed


# -- 4. claims x TTL -----------------------------------------------------------------------------------------
def test_a_claim_outlives_the_dlq(stack: Stack, clock: FrozenClock) -> None:
    dynamodb = table()
    retention = 345_600  # the source queue's default retention (4 days)
    claims = DynamoDBClaims(lambda: dynamodb, "claims", retention_seconds=retention)
    now = clock.now()
    claims.claim("chain", 2, "owner", receives=1, now=now, lease_seconds=LEASE)
    item = dynamodb.get_item(TableName="claims", Key={"id": {"S": claim_key("chain")}})["Item"]
    expires = int(item["expiration"]["N"]) - int(now.timestamp())
    # A duplicate copy may sit in the source for its retention, then in a DLQ for up to 14 days (SQS's
    # largest retention, the modules' DLQ default): its claim must still be there when it is redriven.
    assert expires >= retention + MAX_RETENTION_SECONDS


# -- 5. claims x clock skew ----------------------------------------------------------------------------------
def test_a_claimed_copy_that_comes_back_early_keeps_its_claim(stack: Stack, clock: FrozenClock) -> None:
    dynamodb = table()
    runs: list[tuple[int, str]] = []

    def process(message: Message) -> None:
        runs.append((message.retry.attempt, message.message_id))
        if message.retry.attempt == 1:
            raise RetryableError("busy")

    consumer = _consumer(stack, process, clock, dynamodb)
    consumer({"Records": [sqs_record("o", message_id="o", queue_arn=stack.queue_arn)]})
    [copy] = _next_copies(stack, clock, 60)  # the default first delay is at most 10 s
    due = json.loads(copy["Body"])["serverless_retry"]["due_at"]
    # Its claim is written, but the answer is lost (the instance dies before acknowledging).
    claims = DynamoDBClaims(lambda: dynamodb, "claims")
    claims.claim(
        json.loads(copy["Body"])["serverless_retry"]["id"], 2, copy["MessageId"], receives=1,
        now=clock.now(), lease_seconds=LEASE,
    )  # fmt: skip
    # Redelivered to an instance whose clock is 300 s behind: early by its clock, it hops again.
    behind = FrozenClock(clock.now() - timedelta(seconds=300))
    early = _consumer(stack, process, behind, dynamodb)
    assert failure_ids(early(event_from([_again(copy, 2)], stack.queue_arn))) == []
    assert runs == [(1, "o")]
    [hopped] = _next_copies(stack, clock)
    assert copy["MessageId"] in json.loads(hopped["Body"])["serverless_retry"]["claimants"]
    assert json.loads(hopped["Body"])["serverless_retry"]["due_at"] >= due
    clock.advance(LEASE)
    assert failure_ids(consumer(event_from([hopped], stack.queue_arn))) == []
    assert [a for a, _ in runs] == [1, 2]  # its attempt ran, in the message it hopped into


# -- 8. writer x reader --------------------------------------------------------------------------------------
def test_a_record_with_both_attribute_values_is_retried_not_refused(stack: Stack, clock: FrozenClock) -> None:
    dynamodb = table()
    runs: list[int] = []

    def process(message: Message) -> None:
        runs.append(message.retry.attempt)
        if message.retry.attempt < 3:
            raise RetryableError("busy")

    consumer = _consumer(stack, process, clock, dynamodb)
    record = sqs_record("o", message_id="o", queue_arn=stack.queue_arn)
    # As in AWS's sample SQS event (sqsEvent.json): a Number attribute with both values.
    record["messageAttributes"] = {
        "testAttr": {"stringValue": "100", "binaryValue": "base64Str", "dataType": "Number"}
    }
    consumer({"Records": [record]})
    for _ in range(4):
        pending = _next_copies(stack, clock)
        if not pending:
            break
        consumer(event_from(pending, stack.queue_arn))
    assert runs == [1, 2, 3]
    assert stack.drain(stack.exhausted_url) == []


# -- 9. a record whose messageAttributes are not an object ----------------------------------------------------
def test_a_failing_record_with_attributes_as_a_list_is_exhausted_with_the_reason(
    stack: Stack, clock: FrozenClock
) -> None:
    def process(message: Message) -> None:
        raise RetryableError("busy")

    consumer = _consumer(stack, process, clock, table())
    record = sqs_record("o", message_id="o", queue_arn=stack.queue_arn)
    record["messageAttributes"] = [{"name": "tenant", "stringValue": "a"}]  # a hand-built event may
    assert failure_ids(consumer({"Records": [record]})) == []  # not handed back toward the DLQ
    [exhausted] = stack.drain(stack.exhausted_url)
    meta = json.loads(exhausted["Body"])["serverless_retry"]
    assert meta["outcome"] == "invalid-envelope"
    assert "messageAttributes are a JSON array" in meta["reason"]


# -- 9. an in-place retry is due when decided, however long the rest of the batch runs ------------------------
def test_an_in_place_retry_is_not_late_by_the_batch_run_time(stack: Stack, clock: FrozenClock) -> None:
    def process(message: Message) -> None:
        if message.body == "fails":
            raise RetryableError("busy")
        clock.advance(40)  # a slow record after it in the same batch

    consumer = make_consumer(
        stack,
        process,
        {"transport": "visibility", "backoff": {"strategy": "fixed", "base_seconds": 120}},
        clock,
    )
    for body in ("fails", "slow"):
        stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body)
    received = stack.receive(stack.queue_url, visibility=600)
    failed = [m for m in received if m["Body"] == "fails"]
    consumer(event_from(received, stack.queue_arn))
    [change] = stack.called("ChangeMessageVisibilityBatch")
    [entry] = change["Entries"]
    assert entry["ReceiptHandle"] == failed[0]["ReceiptHandle"]
    assert entry["VisibilityTimeout"] == 120 - 40  # due 120 s after the decision, not after the call


# -- a final copy given up on twice: the redrive moves one and drops its twin ---------------------------------
def test_a_redrive_moves_a_final_copy_once_and_drops_its_twin(stack: Stack, clock: FrozenClock) -> None:
    from serverless_retry.redrive.options import options_from_mapping
    from serverless_retry.redrive.queue import redrive

    dynamodb = table()
    runs: list[int] = []

    def process(message: Message) -> None:
        runs.append(message.retry.attempt)
        if message.retry.attempt <= 5:
            raise RetryableError("upstream down")

    consumer = _consumer(stack, process, clock, dynamodb)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody="order-1")
    pending = stack.drain(stack.queue_url)
    for _ in range(10):
        if not pending:
            break
        consumer(event_from(pending, stack.queue_arn))
        pending = _next_copies(stack, clock)
    [final] = stack.drain(stack.exhausted_url)
    for _ in range(2):  # its last receive ran twice (a lost response): the same final copy, twice
        stack.sqs.send_message(QueueUrl=stack.exhausted_url, MessageBody=final["Body"])
    clock.advance(1)
    options = options_from_mapping({"from_queue_url": stack.exhausted_url, "to_queue_url": stack.queue_url})

    report = redrive(stack.sqs, options, clock=clock, wait_seconds=0)

    assert len(report.moved) == 1
    [(twin, moved)] = report.dropped
    assert moved == report.moved[0].message_id
    assert twin.envelope_id == report.moved[0].envelope_id
    assert stack.drain(stack.exhausted_url) == []  # nothing left to run the chain a second time
    assert failure_ids(consumer(event_from(stack.drain(stack.queue_url), stack.queue_arn))) == []
    assert runs[-1] == 6  # processed once, in the chain's next generation
    assert runs.count(6) == 1

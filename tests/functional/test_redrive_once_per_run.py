"""One redrive run moves each message at most once, with the consumer running beside it.

Three messages keep failing: the real consumer (default policy, claims table on as the module deploys
it, or off as the Python API may run it) takes them to the retry-exhausted queue. An operator redrives
them while the consumer goes on taking the source queue; each redriven copy fails again and is
exhausted again, back in the queue being redriven, during the run. The run moves exactly the 3 it
found and ends: through the library, the CLI and the redrive Lambda, and for ``--to-function`` with
self-healing records whose function fails again. It used to move each re-exhausted copy again, until
something gave out (608 moves of 3 messages in one run; one record 428 times in 60 s).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.consumer import RetryingConsumer
from serverless_retry.consumer.claims import DynamoDBClaims
from serverless_retry.handlers import redrive_queue
from serverless_retry.message import Message
from serverless_retry.policy import RetryPolicy
from serverless_retry.redrive.options import options_from_mapping
from serverless_retry.redrive.queue import ExhaustedMessage, decode, redrive
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.state import read, unqualified_function_arn
from serverless_retry_tools import cli
from serverless_retry_tools.commands import redrive as redrive_command

from tests.functional.conftest import QUIET_LOGGER, REGION, Stack, event_from, failure_ids
from tests.functional.redrive_world import World, event

# The consumer's steps while one redrive runs; on the old code the run moved 3 more each step.
STEPS = 12
STEP_SECONDS = 5.0  # logical time the consumer takes per step (the run's clock moves with it)


class ConsumerRunning:
    """moto's SQS with a consumer running beside the redrive: after each receive from the queue
    being redriven (while the redrive moves what it got), ``step`` runs (the consumer takes what the
    source queue holds), at most ``STEPS`` times, so the old code's endless run ends too."""

    def __init__(self, sqs: Any, watched_url: str, step: Callable[[], None]) -> None:
        self.sqs = sqs
        self.watched_url = watched_url
        self.step = step
        self.steps = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.sqs, name)
        if name != "receive_message":
            return method

        def receive(**params: Any) -> Any:
            # moto's long poll waits for its own clock (the test's, frozen) to pass: it never would.
            got = method(**{**params, "WaitTimeSeconds": 0})
            if params.get("QueueUrl") == self.watched_url and self.steps < STEPS:
                self.steps += 1
                self.step()
            return got

        return receive


def _failing(message: Message) -> None:
    raise TimeoutError("read timed out")  # every attempt, redriven or not


def _claims_table() -> Any:
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName="claims",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


@dataclass
class Orders:
    """The source queue's consumer, and what it has exhausted."""

    stack: Stack
    clock: FrozenClock
    consumer: RetryingConsumer
    runs: list[tuple[str, int]] = field(default_factory=list)  # (retry id, attempt) per processing

    def step(self, seconds: float = STEP_SECONDS) -> None:
        """Time passes; the event source mapping hands the consumer what the source queue shows."""
        self.clock.advance(seconds)
        messages = self.stack.receive(self.stack.queue_url)
        if not messages:
            return
        response = self.consumer(event_from(messages, self.stack.queue_arn))
        failed = set(failure_ids(response))
        for m in messages:
            if m["MessageId"] not in failed:
                self.stack.sqs.delete_message(QueueUrl=self.stack.queue_url, ReceiptHandle=m["ReceiptHandle"])

    def exhausted(self) -> list[ExhaustedMessage]:
        return _peek(self.stack.sqs, self.clock, self.stack.exhausted_url)


def _peek(sqs: Any, clock: FrozenClock, url: str) -> list[ExhaustedMessage]:
    """Every visible message of ``url``, decoded, each put back at once."""
    clock.advance(0.001)  # moto shows a released message once its clock is strictly past its release
    seen: dict[str, Any] = {}
    for _ in range(20):
        batch = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=30,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not batch:
            break
        seen.update((m["MessageId"], m) for m in batch)
    for m in seen.values():
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
    clock.advance(0.001)
    return [decode(m) for m in seen.values()]


def _orders(stack: Stack, clock: FrozenClock, *, claims: bool) -> Orders:
    table = _claims_table() if claims else None
    orders = Orders(stack, clock, consumer=None)  # type: ignore[arg-type]

    def process(message: Message) -> None:
        orders.runs.append((message.retry.id, message.retry.attempt))
        _failing(message)

    orders.consumer = RetryingConsumer(
        process,
        RetryPolicy.from_dict({}),  # the default policy: 5 attempts, exponential from 10 s
        stack.targets(),
        clients=AwsClients.of(sqs=stack.sqs, scheduler=stack.scheduler),
        clock=clock,
        rand=random.Random(7),
        logger=QUIET_LOGGER,
        claims=DynamoDBClaims(lambda: table, "claims") if claims else None,
    )
    return orders


def _three_exhausted(orders: Orders) -> set[str]:
    """Three orders that keep failing, taken by the consumer through their 5 attempts."""
    for n in range(3):
        orders.stack.sqs.send_message(QueueUrl=orders.stack.queue_url, MessageBody=json.dumps({"order": n}))
    for _ in range(40):
        orders.step(120.0)  # past every retry delay and visibility timeout of the default policy
        if len(orders.exhausted()) == 3:
            break
    found = orders.exhausted()
    assert [(m.outcome, m.error_type, m.attempt) for m in found] == [("exhausted", "TimeoutError", 5)] * 3
    return {m.envelope_id for m in found}


def _after(orders: Orders, chains: set[str], moved: list[str]) -> None:
    """Each chain moved once, run once more, exhausted once more: 3 in the queue, nothing in flight."""
    assert sorted(moved) == sorted(chains)
    for _ in range(3):
        orders.step()  # whatever the consumer has not taken yet
    again = orders.exhausted()
    assert sorted(m.envelope_id for m in again) == sorted(chains), "exactly one copy of each chain"
    assert {m.attempt for m in again} == {6}, "each redriven copy was attempt 6, exhausted at once"
    assert sorted(i for i, a in orders.runs if a == 6) == sorted(chains), "each ran once after the redrive"
    assert orders.stack.receive(orders.stack.queue_url) == []


@pytest.mark.parametrize("claims", [True, False], ids=["claims-table", "no-claims-table"])
def test_a_redrive_moves_each_of_three_failing_messages_once_while_the_consumer_runs(
    stack: Stack, clock: FrozenClock, claims: bool
) -> None:
    orders = _orders(stack, clock, claims=claims)
    chains = _three_exhausted(orders)
    sqs = ConsumerRunning(stack.sqs, stack.exhausted_url, orders.step)
    options = options_from_mapping(
        {"from_queue_url": stack.exhausted_url, "to_queue_url": stack.queue_url, "error_type": "TimeoutError"}
    )

    report = redrive(sqs, options, clock=clock, wait_seconds=0)  # type: ignore[arg-type]

    assert report.complete
    assert len(report.moved) == 3, f"moved {len(report.moved)}"
    assert report.found_at_start == 3
    # The copies exhausted again during the run were seen and left, each for its own reason.
    assert sorted(m.envelope_id for m in report.arrived) == sorted(chains)
    _after(orders, chains, [m.envelope_id for m in report.moved])


def test_without_time_passing_the_runs_memory_alone_moves_each_chain_once(
    stack: Stack, clock: FrozenClock
) -> None:
    """The clocks cannot tell (no time passes between the start and the copies' return): the run's
    memory of the chains it moved still leaves each re-exhausted copy where it is."""
    orders = _orders(stack, clock, claims=True)
    chains = _three_exhausted(orders)
    sqs = ConsumerRunning(stack.sqs, stack.exhausted_url, lambda: orders.step(0.0))
    options = options_from_mapping({"from_queue_url": stack.exhausted_url, "to_queue_url": stack.queue_url})

    report = redrive(sqs, options, clock=clock, wait_seconds=0)  # type: ignore[arg-type]

    assert len(report.moved) == 3, f"moved {len(report.moved)}"
    assert (report.arrived, report.complete) == ([], True)
    assert sorted(m.envelope_id for m, _ in report.repeated) == sorted(chains)
    assert all("was moved by this run: one copy per chain" in why for _, why in report.repeated)
    _after(orders, chains, [m.envelope_id for m in report.moved])


def test_the_cli_moves_three_and_ends(
    stack: Stack, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    orders = _orders(stack, clock, claims=True)
    chains = _three_exhausted(orders)
    monkeypatch.setattr(
        redrive_command,
        "sqs_client",
        lambda args: ConsumerRunning(stack.sqs, stack.exhausted_url, orders.step),
    )
    monkeypatch.setattr(redrive_command, "command_clock", lambda: clock)
    argv = ["redrive", "--from-queue-url", stack.exhausted_url, "--to-queue-url", stack.queue_url]

    code = cli.main([*argv, "--error-type", "TimeoutError", "--yes", "--json"])

    out = capsys.readouterr().out  # the consumer's metrics lines too (EMF, on stdout), then the report
    document = json.loads(out[out.index('{\n  "dry_run"') :])
    assert (code, document["moved"], document["complete"]) == (0, 3, True)
    assert sorted(document["arrived_ids"]) == sorted(chains)
    _after(orders, chains, document["moved_ids"])


def test_the_redrive_lambda_moves_three_and_ends(stack: Stack, clock: FrozenClock) -> None:
    """On AWS time (its own SystemClock: no logical time passes for it here, so its memory decides)."""
    orders = _orders(stack, clock, claims=True)
    chains = _three_exhausted(orders)
    environ = {
        redrive_queue.ENV_FROM_QUEUE_URLS: stack.exhausted_url,
        redrive_queue.ENV_TO_QUEUE_URL: stack.queue_url,
    }
    sqs = ConsumerRunning(stack.sqs, stack.exhausted_url, orders.step)

    result = redrive_queue.run({"error_type": "TimeoutError"}, None, sqs=sqs, environ=environ)

    assert (result["moved"], result["complete"]) == (3, True)
    assert result["arrived"] + result["repeated"] == 3  # the copies exhausted again: seen, left
    _after(orders, chains, [m["id"] for m in result["messages"]])


def test_a_second_copy_of_a_chain_is_not_moved_by_the_same_run(stack: Stack, clock: FrozenClock) -> None:
    """Two copies of one chain in the DLQ (a duplicate delivery dead-lettered twice): moving both
    would run the message as two chains. The run moves one and leaves the other, saying why."""
    orders = _orders(stack, clock, claims=True)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody='{"order": 9}')
    orders.step()  # attempt 1 fails: its retry copy is in the source queue, delayed
    clock.advance(120)
    [copy] = stack.receive(stack.queue_url)
    for _ in range(2):  # SQS dead-letters the copy, and a duplicate of it
        stack.sqs.send_message(QueueUrl=stack.dlq_url, MessageBody=copy["Body"])
    stack.sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=copy["ReceiptHandle"])
    clock.advance(1)
    options = options_from_mapping({"from_queue_url": stack.dlq_url, "to_queue_url": stack.queue_url})

    report = redrive(stack.sqs, options, clock=clock, wait_seconds=0)

    assert len(report.moved) == 1
    [(left, why)] = report.repeated
    assert left.envelope_id == report.moved[0].envelope_id
    assert "was moved by this run: one copy per chain" in why
    assert len(_peek(stack.sqs, clock, stack.dlq_url)) == 1, "the second copy stays in the DLQ"


def test_a_message_sent_after_the_run_started_waits_for_the_next_run(
    stack: Stack, clock: FrozenClock
) -> None:
    """The run takes what the queue held when it started: another chain exhausted meanwhile stays."""
    world = World(stack.sqs, clock, stack.queue_url, stack.dlq_url, stack.exhausted_url)
    world.final("a", TimeoutError("slow"))
    world.final("b", TimeoutError("slow"))
    sent: list[str] = []

    def exhausted_meanwhile() -> None:
        clock.advance(STEP_SECONDS)
        if not sent:
            sent.append(world.final("late", TimeoutError("slow")))

    sqs = ConsumerRunning(stack.sqs, stack.exhausted_url, exhausted_meanwhile)
    options = options_from_mapping(
        {"from_queue_url": stack.exhausted_url, "to_queue_url": stack.queue_url, "reset_attempts": True}
    )

    report = redrive(sqs, options, clock=clock, wait_seconds=0)  # type: ignore[arg-type]

    assert sorted(m.body for m in report.moved) == ["a", "b"]
    assert [m.envelope_id for m in report.arrived] == sent == ["id-late"]
    assert [m.body for m in _peek(stack.sqs, clock, stack.exhausted_url)] == ["late"]


# -- --to-function: the self-healing pattern's records -------------------------------------------------


RECORDS = (
    "destination-sns-redriven.json",
    "destination-eventbridge-redriven.json",
    "destination-direct-redriven.json",
)


@dataclass
class FailingAgain:
    """A Lambda client whose functions fail again at once: the pattern's exhausted rule writes a new
    ExhaustedRecord of the re-invoked event (its retry state carried) to the retry-exhausted queue
    when the consumer-side step runs, as the on-failure destination and enrichment do."""

    sqs: Any
    exhausted_url: str
    clock: FrozenClock
    invoked: list[tuple[str, Any]] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)  # (record file, payload)
    by_function: dict[str, str] = field(default_factory=dict)  # function ARN -> its record file

    def invoke(self, **params: Any) -> dict[str, Any]:
        payload = params["Payload"].decode()
        self.invoked.append((params["FunctionName"], json.loads(payload)))
        self.pending.append((self.by_function[params["FunctionName"]], payload))
        return {"StatusCode": 202}

    def step(self) -> None:
        self.clock.advance(STEP_SECONDS)
        while self.pending:
            name, payload = self.pending.pop(0)
            self.sqs.send_message(QueueUrl=self.exhausted_url, MessageBody=_exhausted_record(name, payload))


def _exhausted_record(name: str, payload: str | None = None) -> str:
    destination = event(name)
    if payload is not None:
        destination["requestPayload"] = json.loads(payload)
    detail = failure_detail({"messageId": f"f-{name}", "body": json.dumps(destination)}, FrozenClock().now())
    return json.dumps({"outcome": "exhausted", "reason": "retry budget spent", "detail": detail})


@pytest.mark.parametrize("reset", [False, True], ids=["state-continued", "reset-attempts"])
def test_to_function_moves_each_record_once_while_its_function_keeps_failing(
    stack: Stack, clock: FrozenClock, reset: bool
) -> None:
    fake = FailingAgain(stack.sqs, stack.exhausted_url, clock)
    for name in RECORDS:
        stack.sqs.send_message(QueueUrl=stack.exhausted_url, MessageBody=_exhausted_record(name))
        parsed = unqualified_function_arn(str(event(name)["requestContext"]["functionArn"]))
        assert parsed is not None
        fake.by_function[parsed[0]] = name
    clock.advance(1)
    found = {m.envelope_id for m in _peek(stack.sqs, clock, stack.exhausted_url)}
    assert len(found) == 3
    sqs = ConsumerRunning(stack.sqs, stack.exhausted_url, fake.step)
    options = options_from_mapping(
        {"from_queue_url": stack.exhausted_url, "to_function": True, "reset_attempts": reset}
    )

    report = redrive(sqs, options, clock=clock, wait_seconds=0, lambda_client=fake)  # type: ignore[arg-type]

    assert (len(fake.invoked), len(report.moved), report.complete) == (3, 3, True)
    assert {m.envelope_id for m in report.moved} == found
    again = _peek(stack.sqs, clock, stack.exhausted_url)
    assert len(again) == 3, "each record is back once, from its one re-invocation"
    if not reset:  # the retry state carried on: the same retry ids (a fresh direct event gets a new one)
        assert {m.envelope_id for m in again} == found
        assert {read(p).state["id"] for _, p in fake.invoked} == found  # type: ignore[index]


def test_two_records_of_one_event_are_reinvoked_once(
    stack: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/operations.md's example: two records of the same SNS message (one retry id) and one of
    another event, all orders-fn's. Invoking both of the first would run that event as two chains."""
    fake = FailingAgain(stack.sqs, stack.exhausted_url, clock)
    for name in ("destination-sns-redriven.json", "destination-sns-retries-exhausted.json", RECORDS[1]):
        stack.sqs.send_message(QueueUrl=stack.exhausted_url, MessageBody=_exhausted_record(name))
        parsed = unqualified_function_arn(str(event(name)["requestContext"]["functionArn"]))
        assert parsed is not None
        fake.by_function[parsed[0]] = name
    clock.advance(1)
    monkeypatch.setattr(redrive_command, "lambda_client", lambda args: fake)
    monkeypatch.setattr(
        redrive_command, "sqs_client", lambda args: ConsumerRunning(stack.sqs, stack.exhausted_url, fake.step)
    )
    monkeypatch.setattr(redrive_command, "command_clock", lambda: clock)
    monkeypatch.setenv("SERVERLESS_RETRY_PLAIN", "1")

    code = cli.main(["redrive", "--from-queue-url", stack.exhausted_url, "--to-function", "--yes"])

    captured = capsys.readouterr()
    assert (code, len(fake.invoked)) == (0, 2)
    assert (
        "moved 2, skipped 0, failed 0, left 2 sent after the run started (for a later run), "
        "left 1 of chains this run already moved"  # the 2 are the invoked records, failed again
    ) in captured.out
    assert "left 95df01b4-ee98-5cb9-9903-4c221d41eb5e (message " in captured.err
    # The record left, and the invoked ones back once each from their function failing again.
    assert len(_peek(stack.sqs, clock, stack.exhausted_url)) == 3

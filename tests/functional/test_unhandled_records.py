"""Records the consumer cannot handle (issue 17, class 9): no messageId, no body, a body that is not a
string, not a record at all, or a bug of ours while preparing one. Each ends in the retry-exhausted
queue with its reason (outcome invalid-envelope), or is handed back alone - never with an empty or
unknown itemIdentifier, which makes Lambda fail the whole batch, innocent neighbours included."""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.consumer import record_gate as record_gate_module  # it unwraps the envelope
from serverless_retry.errors import RetryableError, UnhandledRecordError
from serverless_retry.message import Message
from serverless_retry.testing import sqs_record

from .conftest import Stack, envelope_of, make_consumer
from .faults import FaultySqs

FIXED_30 = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 30}}


class Seen:
    def __init__(self) -> None:
        self.bodies: list[object] = []

    def __call__(self, message: Message) -> None:
        self.bodies.append(message.body)
        if message.body == "fails":
            raise RetryableError("busy")


def neighbours(stack: Stack) -> list[dict[str, Any]]:
    return [
        sqs_record("ok", message_id="ok-1", queue_arn=stack.queue_arn),
        sqs_record("fails", message_id="fails-1", queue_arn=stack.queue_arn),
    ]


def finals(stack: Stack) -> list[dict[str, Any]]:
    return [envelope_of(m["Body"]) for m in stack.receive(stack.exhausted_url)]


def item_ids(response: dict[str, Any]) -> list[object]:
    return [f.get("itemIdentifier") for f in response["batchItemFailures"]]


def shaped(stack: Stack, shape: str) -> object:
    record = sqs_record("the body", message_id="odd-1", queue_arn=stack.queue_arn)
    if shape == "no messageId":
        del record["messageId"]
    elif shape == "empty messageId":
        record["messageId"] = ""
    elif shape == "numeric messageId":
        record["messageId"] = 42
    elif shape == "no body":
        del record["body"]
    elif shape == "null body":
        record["body"] = None
    elif shape == "object body":
        record["body"] = {"order": 1}
    elif shape == "not a record":
        return ["not", "a", "record"]
    return record


SHAPES = {
    # shape: (words the reason holds, the body kept in the exhausted copy, its id)
    "no messageId": ("no messageId", "the body", None),
    "empty messageId": ("not a non-empty string", "the body", None),
    "numeric messageId": ("not a non-empty string (42)", "the body", None),
    "no body": ("has no body", None, "odd-1"),
    "null body": ("has no body", None, "odd-1"),
    "object body": ("its body is a JSON object", '{"order": 1}', "odd-1"),
    "not a record": ("a JSON array, not an SQS record object", '["not", "a", "record"]', None),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_unhandled_shape_goes_to_the_exhausted_queue_with_its_reason(
    stack: Stack, clock: FrozenClock, shape: str
) -> None:
    seen = Seen()
    consumer = make_consumer(stack, seen, FIXED_30, clock)
    words, kept, record_id = SHAPES[shape]
    # The neighbours first: the first record decides the event's shape (sqs_records).
    event = {"Records": [*neighbours(stack), shaped(stack, shape)]}

    response = consumer(event)

    assert item_ids(response) == []  # nothing handed back: the odd record is kept, its neighbours handled
    assert seen.bodies == ["ok", "fails"]  # the odd record never reaches the processor
    [final] = finals(stack)
    meta = final["serverless_retry"]
    assert meta["outcome"] == "invalid-envelope"
    assert meta["reason"].startswith("unhandled record: ")
    assert words in meta["reason"]
    if kept is not None:
        assert final["body"] == kept
    else:  # no body: the whole record is kept, as JSON
        assert json.loads(final["body"])["messageId"] == "odd-1"
    if record_id is not None:
        assert meta["id"] == record_id
    else:
        assert meta["id"].startswith("unidentified-")
    retries = [
        e for c in stack.called("SendMessageBatch") if c["QueueUrl"] == stack.queue_url for e in c["Entries"]
    ]
    assert len(retries) == 1  # the failing neighbour's retry: its handling is unaffected


def test_a_bug_while_preparing_a_record_keeps_it_with_the_error(
    stack: Stack, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = record_gate_module.unwrap

    def broken(body: str, *args: Any, **kwargs: Any) -> Any:
        if "looks like" in body:
            raise RuntimeError("a bug of ours")
        return real(body, *args, **kwargs)

    monkeypatch.setattr(record_gate_module, "unwrap", broken)
    seen = Seen()
    consumer = make_consumer(stack, seen, FIXED_30, clock)
    body = '{"serverless_retry": "looks like an envelope"}'  # takes the full path, through unwrap
    event = {"Records": [*neighbours(stack), sqs_record(body, message_id="odd-1", queue_arn=stack.queue_arn)]}

    response = consumer(event)

    assert item_ids(response) == []
    assert seen.bodies == ["ok", "fails"]
    [final] = finals(stack)
    meta = final["serverless_retry"]
    assert (meta["outcome"], meta["id"], final["body"]) == ("invalid-envelope", "odd-1", body)
    assert "could not prepare it (RuntimeError: a bug of ours)" in meta["reason"]
    assert meta["final_error"]["type"] == "RuntimeError"
    assert "broken" in meta["final_error"]["traceback"]


def failing_exhausted(stack: Stack) -> AwsClients:
    sqs = FaultySqs(stack.sqs, fail_call=lambda url: url == stack.exhausted_url)
    return AwsClients.of(sqs=sqs, scheduler=stack.scheduler)  # type: ignore[arg-type]


def test_when_the_exhausted_copy_fails_a_record_with_an_id_is_handed_back_alone(
    stack: Stack, clock: FrozenClock
) -> None:
    consumer = make_consumer(stack, Seen(), FIXED_30, clock, clients=failing_exhausted(stack))
    event = {"Records": [*neighbours(stack), shaped(stack, "object body")]}

    assert item_ids(consumer(event)) == ["odd-1"]


def test_when_the_exhausted_copy_fails_a_record_without_an_id_does_not_fail_its_neighbours(
    stack: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    consumer = make_consumer(stack, Seen(), FIXED_30, clock, clients=failing_exhausted(stack))
    event = {"Records": [*neighbours(stack), shaped(stack, "no messageId")]}

    response = consumer(event)

    # No empty itemIdentifier (Lambda would fail the whole batch, "ok-1" and the sent retry included).
    assert item_ids(response) == []
    assert (
        "records without a messageId could not be sent to the retry-exhausted queue"
        in capsys.readouterr().out
    )


def test_when_nothing_else_would_be_acknowledged_the_invocation_fails_for_it(
    stack: Stack, clock: FrozenClock
) -> None:
    consumer = make_consumer(stack, Seen(), FIXED_30, clock, clients=failing_exhausted(stack))
    alone = {
        "Records": [
            sqs_record("x", message_id="first", queue_arn=stack.queue_arn),
            shaped(stack, "no messageId"),
        ]
    }
    alone["Records"][0]["eventSourceARN"] = (
        "arn:aws:sqs:us-east-1:123456789012:elsewhere"  # handed back anyway
    )

    with pytest.raises(UnhandledRecordError, match="without a messageId"):
        consumer(alone)

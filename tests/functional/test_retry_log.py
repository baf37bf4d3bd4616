"""Operators find every retried message's decision in the logs: the consumer writes one INFO line per
batch (``RETRIES_PLANNED``) that lists each retried record - message id, retry id, attempt, error type
and text, delay and transport - in record order, and that delay is the one the copy was sent with."""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverless_retry.clock import FrozenClock
from serverless_retry.consumer import RETRIES_PLANNED
from serverless_retry.errors import NonRetryableError, RetryableError
from serverless_retry.message import Message

from .conftest import Stack, event_from, failure_ids, make_consumer

POLICY = {
    "max_attempts": 5,
    "backoff": {"strategy": "exponential", "base_seconds": 10, "max_seconds": 600, "jitter": "full"},
    "rules": [
        {"errors": ["TimeoutError"], "backoff": {"strategy": "fixed", "base_seconds": 42, "jitter": "none"}}
    ],
}


def process(message: Message) -> None:
    behaviour = json.loads(message.body)["behaviour"]
    if behaviour == "busy":
        raise RetryableError("downstream busy")
    if behaviour == "timeout":
        raise TimeoutError("payments timed out")
    if behaviour == "invalid":
        raise NonRetryableError("no such order")


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_one_line_per_batch_lists_every_retried_message(
    stack: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    behaviours = ["busy", "ok", "timeout", "invalid", "busy"]
    for n, behaviour in enumerate(behaviours):
        stack.sqs.send_message(
            QueueUrl=stack.queue_url, MessageBody=json.dumps({"n": n, "behaviour": behaviour})
        )
    received = stack.receive(stack.queue_url)
    assert len(received) == len(behaviours)
    received.sort(key=lambda m: json.loads(m["Body"])["n"])
    consumer = make_consumer(stack, process, POLICY, clock)
    capsys.readouterr()

    assert failure_ids(consumer(event_from(received, stack.queue_arn))) == []

    lines = _json_lines(capsys.readouterr().out)
    planned = [line for line in lines if line.get("message") == RETRIES_PLANNED]
    assert len(planned) == 1, lines
    (line,) = planned
    assert line["level"] == "INFO"
    retried = [m for m in received if json.loads(m["Body"])["behaviour"] in {"busy", "timeout"}]
    assert line["count"] == len(retried) == 3
    # The delay each copy was really sent with, by the id of the record it replaces.
    sent = [params for name, params in stack.calls if name == "SendMessageBatch"]
    delays = {}
    for params in sent:
        if params["QueueUrl"] != stack.queue_url:
            continue
        for entry in params["Entries"]:
            envelope = json.loads(entry["MessageBody"])["serverless_retry"]
            delays[envelope["id"]] = entry["DelaySeconds"]
    assert [entry["message_id"] for entry in line["retries"]] == [m["MessageId"] for m in retried]
    for entry, message in zip(line["retries"], retried, strict=True):
        timeout = json.loads(message["Body"])["behaviour"] == "timeout"
        assert entry == {
            "message_id": message["MessageId"],
            "retry_id": message["MessageId"],
            "attempt": 1,
            "error_type": "TimeoutError" if timeout else "RetryableError",
            "error": "payments timed out" if timeout else "downstream busy",
            "delay_seconds": entry["delay_seconds"],
            "transport": "sqs-delay",
        }
        assert entry["delay_seconds"] == delays[message["MessageId"]]
        if timeout:
            assert entry["delay_seconds"] == 42
        else:
            assert 0 <= entry["delay_seconds"] <= 10
    # The non-retryable record keeps a line of its own (its final copy), and no record has two.
    finals = [line for line in lines if line.get("message") == "message goes to the retry-exhausted queue"]
    invalid = next(m for m in received if json.loads(m["Body"])["behaviour"] == "invalid")
    assert [f["message_id"] for f in finals] == [invalid["MessageId"]]
    assert not [
        line for line in lines if str(line.get("message", "")).startswith("processing failed; retry ")
    ]


def test_a_batch_without_a_retry_writes_no_retry_line(
    stack: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=json.dumps({"behaviour": "ok"}))
    consumer = make_consumer(stack, process, POLICY, clock)
    capsys.readouterr()
    assert failure_ids(consumer(event_from(stack.receive(stack.queue_url), stack.queue_arn))) == []
    assert not [
        line for line in _json_lines(capsys.readouterr().out) if line.get("message") == RETRIES_PLANNED
    ]

"""Operators find every retried message's decision in the logs: the consumer writes one INFO line per
batch (``RETRIES_PLANNED``) whose groups (one per error, attempt and transport) list each retried
record's message id and delay - in record order within a group, with the retry id where it is not
the message id - and that delay is the one the copy was sent with."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from serverless_retry.clock import FrozenClock
from serverless_retry.consumer import RETRIES_PLANNED
from serverless_retry.errors import NonRetryableError, RetryableError
from serverless_retry.message import Message
from serverless_retry.retry_log import retry_log_entries
from serverless_retry.testing import lambda_context

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
    # One group per decision: the busy records share one, the timed-out record has its own.
    busy = [m["MessageId"] for m in retried if json.loads(m["Body"])["behaviour"] == "busy"]
    assert [(g["error_type"], list(g["delays"])) for g in line["retries"]] == [
        ("RetryableError", busy),
        ("TimeoutError", [retried[1]["MessageId"]]),
    ]
    assert all("retry_ids" not in g for g in line["retries"])  # first deliveries: retry id = message id
    entries = sorted(
        retry_log_entries(line), key=lambda e: [m["MessageId"] for m in retried].index(e["message_id"])
    )
    assert [entry["message_id"] for entry in entries] == [m["MessageId"] for m in retried]
    for entry, message in zip(entries, retried, strict=True):
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


def test_a_copy_is_logged_with_its_retry_id_and_attempt(
    stack: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=json.dumps({"behaviour": "timeout"}))
    first = stack.receive(stack.queue_url)
    consumer = make_consumer(stack, process, POLICY, clock)
    assert failure_ids(consumer(event_from(first, stack.queue_arn))) == []
    # Handled: the event source mapping deletes it.
    stack.sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=first[0]["ReceiptHandle"])
    clock.advance(43)  # the rule's fixed 42 s, and the second it is rounded up to
    copies = stack.receive(stack.queue_url)
    assert len(copies) == 1
    assert copies[0]["MessageId"] != first[0]["MessageId"]
    capsys.readouterr()

    assert failure_ids(consumer(event_from(copies, stack.queue_arn))) == []

    (line,) = [
        line for line in _json_lines(capsys.readouterr().out) if line.get("message") == RETRIES_PLANNED
    ]
    copy_id, retry_id = copies[0]["MessageId"], first[0]["MessageId"]
    assert line["count"] == 1
    assert line["retries"] == [
        {
            "error_type": "TimeoutError",
            "error": "payments timed out",
            "attempt": 2,
            "transport": "sqs-delay",
            "delays": {copy_id: 42},
            "retry_ids": {copy_id: retry_id},
        }
    ]
    assert retry_log_entries(line) == [
        {
            "message_id": copy_id,
            "retry_id": retry_id,
            "attempt": 2,
            "error_type": "TimeoutError",
            "error": "payments timed out",
            "delay_seconds": 42,
            "transport": "sqs-delay",
        }
    ]


def test_reading_the_line_skips_what_is_malformed() -> None:
    line = {
        "message": RETRIES_PLANNED,
        "retries": [
            "not a group",
            {"error_type": "E", "attempt": 1, "transport": "visibility"},  # no delays
            {"error_type": "E", "error": "x", "attempt": 3, "transport": "scheduler", "delays": {"m": 900}},
        ],
    }
    assert retry_log_entries(line) == [
        {
            "message_id": "m",
            "retry_id": "m",
            "attempt": 3,
            "error_type": "E",
            "error": "x",
            "delay_seconds": 900,
            "transport": "scheduler",
        }
    ]
    assert retry_log_entries({"message": RETRIES_PLANNED, "retries": "oops"}) == []


def _send_busy(stack: Stack, n: int = 2) -> list[dict[str, Any]]:
    for i in range(n):
        stack.sqs.send_message(
            QueueUrl=stack.queue_url, MessageBody=json.dumps({"n": i, "behaviour": "busy"})
        )
    received = stack.receive(stack.queue_url)
    assert len(received) == n
    return received


def test_the_decisions_ride_on_the_batch_metrics_line_with_the_logger_keys(
    stack: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    """One line per batch carries the metrics and the decisions: EMF keeps what is not a metric as
    log fields. The logger's own keys (the request id after inject_lambda_context, keys a processor
    appended) come along; none may overwrite a metric or dimension."""
    logger = Logger(service="orders-keys-test")  # a logger of its own: appended keys stay with it
    logger.append_keys(tenant="acme", Processed="not a metric")
    consumer = make_consumer(stack, process, POLICY, clock, logger=logger)
    handler = logger.inject_lambda_context(consumer)
    received = _send_busy(stack)
    capsys.readouterr()

    context = lambda_context("orders")
    assert failure_ids(handler(event_from(received, stack.queue_arn), context)) == []

    lines = _json_lines(capsys.readouterr().out)
    (line,) = [line for line in lines if line.get("message") == RETRIES_PLANNED]
    assert "_aws" in line  # the metrics line itself
    names = [m["Name"] for d in line["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]]
    assert names == ["Processed"]
    assert line["Processed"] == [0.0]  # not the appended key of that name
    assert line["level"] == "INFO"
    assert line["tenant"] == "acme"
    assert line["function_request_id"] == context.aws_request_id
    assert line["count"] == 2
    assert [list(g["delays"]) for g in line["retries"]] == [[m["MessageId"] for m in received]]
    # and no second line with them
    assert sum(1 for line in lines if "retries" in line) == 1


@pytest.mark.parametrize("why", ["metrics disabled", "metrics failed", "logger keys failed"])
def test_without_a_metrics_line_the_decisions_get_a_logger_line(
    stack: Stack,
    clock: FrozenClock,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    why: str,
) -> None:
    consumer = make_consumer(stack, process, POLICY, clock)

    def broken(*_: object, **__: object) -> None:
        raise OSError("stdout closed")

    if why == "metrics disabled":
        consumer.metrics.disabled = True
    elif why == "metrics failed":
        monkeypatch.setattr(consumer.metrics, "publish", broken)
    else:  # the batch is settled: nothing while writing its line may fail the invocation
        monkeypatch.setattr(consumer.logger, "get_current_keys", broken)
    received = _send_busy(stack)
    capsys.readouterr()

    assert failure_ids(consumer(event_from(received, stack.queue_arn))) == []

    lines = _json_lines(capsys.readouterr().out)
    (line,) = [line for line in lines if line.get("message") == RETRIES_PLANNED]
    assert "_aws" not in line
    assert line["level"] == "INFO"
    entries = retry_log_entries(line)
    assert [e["message_id"] for e in entries] == [m["MessageId"] for m in received]
    assert all(e["transport"] == "sqs-delay" and e["attempt"] == 1 for e in entries)


def test_below_info_the_decisions_are_not_written(
    stack: Stack, clock: FrozenClock, capsys: pytest.CaptureFixture[str]
) -> None:
    logger = Logger(service="orders-quiet-test", level="WARNING")
    consumer = make_consumer(stack, process, POLICY, clock, logger=logger)
    received = _send_busy(stack)
    capsys.readouterr()
    assert failure_ids(consumer(event_from(received, stack.queue_arn))) == []
    lines = _json_lines(capsys.readouterr().out)
    assert not [line for line in lines if "retries" in line]
    assert [line for line in lines if "_aws" in line]  # the metrics still are

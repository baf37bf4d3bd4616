"""Safe redrive and inspect of the retry-exhausted queue, on moto."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from serverless_retry.envelope import encode, final_envelope, unwrap
from serverless_retry.queue_redrive import decode, redrive
from serverless_retry_tools import cli

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


@pytest.fixture
def queues(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str, str]]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        source = sqs.create_queue(QueueName="orders")["QueueUrl"]
        exhausted = sqs.create_queue(QueueName="orders-exhausted")["QueueUrl"]
        yield sqs, source, exhausted


def _exhausted_body(body: str, error: Exception, outcome: str = "exhausted") -> str:
    attrs = {"tenant": {"DataType": "String", "StringValue": "acme"}}
    incoming = unwrap(body, attrs, message_id="m-1", source="arn:aws:sqs:us-east-1:123456789012:orders")
    return encode(
        final_envelope(incoming, outcome, now=NOW, error=error, reason="attempt 5 >= max_attempts 5")
    )  # type: ignore[arg-type]


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(10):
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]).get(
            "Messages", []
        )
        if not batch:
            break
        out.extend(batch)
    return out


def test_redrive_sends_original_body_and_attributes_then_deletes(queues: tuple[Any, str, str]) -> None:
    sqs, source, exhausted = queues
    sqs.send_message(QueueUrl=exhausted, MessageBody=_exhausted_body('{"order":"o-1"}', TimeoutError("slow")))
    report = redrive(sqs, from_queue_url=exhausted, to_queue_url=source, limit=10, wait_seconds=0)
    assert [m.envelope_id for m in report.redriven] == ["m-1"]
    moved = _drain(sqs, source)
    assert [m["Body"] for m in moved] == ['{"order":"o-1"}']
    assert moved[0]["MessageAttributes"]["tenant"]["StringValue"] == "acme"
    assert _drain(sqs, exhausted) == []


def test_redrive_filter_leaves_others_in_place(queues: tuple[Any, str, str]) -> None:
    sqs, source, exhausted = queues
    sqs.send_message(QueueUrl=exhausted, MessageBody=_exhausted_body("a", TimeoutError("t")))
    sqs.send_message(QueueUrl=exhausted, MessageBody=_exhausted_body("b", ValueError("v"), "non-retryable"))
    report = redrive(
        sqs,
        from_queue_url=exhausted,
        to_queue_url=source,
        limit=10,
        select=lambda m: m.error_type == "TimeoutError",
    )
    assert len(report.redriven) == 1
    assert len(report.skipped) == 1
    assert [m["Body"] for m in _drain(sqs, source)] == ["a"]
    left = [decode(m) for m in _drain(sqs, exhausted)]
    assert [(m.body, m.outcome) for m in left] == [("b", "non-retryable")]


def test_dry_run_moves_nothing(queues: tuple[Any, str, str]) -> None:
    sqs, source, exhausted = queues
    sqs.send_message(QueueUrl=exhausted, MessageBody=_exhausted_body("a", TimeoutError("t")))
    report = redrive(
        sqs, from_queue_url=exhausted, to_queue_url=source, limit=10, dry_run=True, wait_seconds=0
    )
    assert len(report.redriven) == 1
    assert _drain(sqs, source) == []
    assert len(_drain(sqs, exhausted)) == 1


def test_failed_send_keeps_the_message(queues: tuple[Any, str, str]) -> None:
    sqs, _source, exhausted = queues
    sqs.send_message(QueueUrl=exhausted, MessageBody=_exhausted_body("a", TimeoutError("t")))
    missing = exhausted.replace("orders-exhausted", "no-such-queue")
    report = redrive(sqs, from_queue_url=exhausted, to_queue_url=missing, limit=10, wait_seconds=0)
    assert len(report.failed) == 1
    assert report.redriven == []
    assert len(_drain(sqs, exhausted)) == 1


def test_verbatim_body_with_compact_attribute_is_decoded(queues: tuple[Any, str, str]) -> None:
    sqs, source, exhausted = queues
    meta = json.dumps({"id": "m-9", "attempt": 3, "outcome": "too-large-to-retry", "reason": "too big"})
    sqs.send_message(
        QueueUrl=exhausted,
        MessageBody="x" * 100,
        MessageAttributes={
            "serverless_retry": {"DataType": "String", "StringValue": meta},
            "tenant": {"DataType": "String", "StringValue": "acme"},
        },
    )
    report = redrive(sqs, from_queue_url=exhausted, to_queue_url=source, limit=10, wait_seconds=0)
    assert [(m.envelope_id, m.outcome) for m in report.redriven] == [("m-9", "too-large-to-retry")]
    moved = _drain(sqs, source)
    assert moved[0]["Body"] == "x" * 100
    assert set(moved[0]["MessageAttributes"]) == {"tenant"}


def test_cli_inspect_is_read_only(queues: tuple[Any, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    sqs, _source, exhausted = queues
    sqs.send_message(QueueUrl=exhausted, MessageBody=_exhausted_body("a", TimeoutError("t")))
    assert cli.main(["inspect", "--queue-url", exhausted, "--max", "5"]) == 0
    out = capsys.readouterr().out
    assert "m-1" in out
    assert "TimeoutError" in out
    assert "1 message(s) shown; none removed" in out
    assert len(_drain(sqs, exhausted)) == 1


def test_cli_redrive(queues: tuple[Any, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    sqs, source, exhausted = queues
    sqs.send_message(QueueUrl=exhausted, MessageBody=_exhausted_body("a", TimeoutError("t")))
    code = cli.main(
        ["redrive", "--from-queue-url", exhausted, "--to-queue-url", source, "--outcome", "exhausted"]
    )
    assert code == 0
    assert "redriven: 1" in capsys.readouterr().out
    assert [m["Body"] for m in _drain(sqs, source)] == ["a"]


def test_corrupt_attribute_fails_that_message_only(queues: tuple[Any, str, str]) -> None:
    sqs, source, exhausted = queues
    corrupt = json.loads(_exhausted_body("a", TimeoutError("t")))
    corrupt["attributes"] = {"tenant": {"StringValue": "no data type"}}
    sqs.send_message(QueueUrl=exhausted, MessageBody=json.dumps(corrupt))
    sqs.send_message(QueueUrl=exhausted, MessageBody=_exhausted_body("b", TimeoutError("t")))
    report = redrive(sqs, from_queue_url=exhausted, to_queue_url=source, limit=10, wait_seconds=0)
    assert (len(report.redriven), len(report.failed)) == (1, 1)
    assert [m["Body"] for m in _drain(sqs, source)] == ["b"]
    assert [decode(m).body for m in _drain(sqs, exhausted)] == ["a"]

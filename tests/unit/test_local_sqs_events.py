"""Lambda's SQS poller rules, as the local runtime applies them (pure)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from serverless_retry_tools.local.aws_rules.sqs_events import judge_batch, sqs_event

IDS = ["m1", "m2", "m3"]
ARN = "arn:aws:sqs:us-east-1:123456789012:orders"


def judge(
    response: Any, *, errored: bool = False, report: bool = True
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    verdict = judge_batch(IDS, errored=errored, response=response, report_batch_item_failures=report)
    return verdict.delete, verdict.keep


@pytest.mark.parametrize(
    "response",
    [None, {}, {"batchItemFailures": []}, {"batchItemFailures": None}],
    ids=["null", "empty-object", "empty-list", "null-list"],
)
def test_complete_success_shapes(response: Any) -> None:
    assert judge(response) == (tuple(IDS), ())


def test_partial_failure_keeps_only_the_named_records() -> None:
    assert judge({"batchItemFailures": [{"itemIdentifier": "m2"}]}) == (("m1", "m3"), ("m2",))


@pytest.mark.parametrize(
    "response",
    [
        "ok",
        [1, 2],
        {"batchItemFailures": "m1"},
        {"batchItemFailures": [{"itemIdentifier": ""}]},
        {"batchItemFailures": [{"itemIdentifier": None}]},
        {"batchItemFailures": [{"id": "m1"}]},
        {"batchItemFailures": [{"itemIdentifier": "not-in-batch"}]},
        {"batchItemFailures": ["m1"]},
    ],
    ids=[
        "string",
        "list",
        "failures-not-list",
        "empty-id",
        "null-id",
        "bad-key",
        "unknown-id",
        "bare-string-item",
    ],
)
def test_invalid_responses_fail_the_whole_batch(response: Any) -> None:
    verdict = judge_batch(IDS, errored=False, response=response, report_batch_item_failures=True)
    assert verdict.delete == ()
    assert verdict.keep == tuple(IDS)
    assert verdict.complete_failure
    assert "invalid" in verdict.why


def test_an_error_fails_the_whole_batch_whatever_the_response() -> None:
    verdict = judge_batch(
        IDS, errored=True, response=None, report_batch_item_failures=True, error_text="Sandbox.Timedout"
    )
    assert (verdict.delete, verdict.keep, verdict.why) == ((), tuple(IDS), "Sandbox.Timedout")


def test_without_report_batch_item_failures_any_return_is_success() -> None:
    assert judge({"batchItemFailures": [{"itemIdentifier": "m1"}]}, report=False) == (tuple(IDS), ())
    assert judge("anything", report=False) == (tuple(IDS), ())


def test_event_has_the_lambda_record_shape() -> None:
    received = [
        {
            "MessageId": "m1",
            "ReceiptHandle": "rh1",
            "Body": '{"a": 1}',
            "MD5OfBody": "abc",
            "Attributes": {
                "ApproximateReceiveCount": 2,
                "SentTimestamp": "1700000000000",
                "MessageGroupId": "g1",
                "Unrelated": "x",
            },
            "MessageAttributes": {
                "tenant": {"DataType": "String", "StringValue": "acme"},
                "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
            },
            "MD5OfMessageAttributes": "def",
        },
        {"MessageId": "m2", "ReceiptHandle": "rh2", "Body": "plain"},
    ]
    event = sqs_event(received, ARN, "eu-west-1")
    first, second = event["Records"]
    assert first["messageId"] == "m1"
    assert first["receiptHandle"] == "rh1"
    assert first["body"] == '{"a": 1}'
    assert first["attributes"] == {
        "ApproximateReceiveCount": "2",
        "SentTimestamp": "1700000000000",
        "MessageGroupId": "g1",
    }
    assert first["messageAttributes"]["tenant"] == {
        "stringValue": "acme",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }
    assert first["messageAttributes"]["blob"]["binaryValue"] == "AAE="
    assert first["md5OfBody"] == "abc"
    assert first["md5OfMessageAttributes"] == "def"
    assert (first["eventSource"], first["eventSourceARN"], first["awsRegion"]) == (
        "aws:sqs",
        ARN,
        "eu-west-1",
    )
    assert second["messageAttributes"] == {}
    assert second["md5OfBody"] == hashlib.md5(b"plain").hexdigest()
    assert "md5OfMessageAttributes" not in second

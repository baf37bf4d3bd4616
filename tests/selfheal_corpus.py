"""Helpers shared by the self-healing tests: the events corpus in tests/events/ and pipe records."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

EVENTS = Path(__file__).resolve().parent / "events"
FAILURE_QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:orders-self-healing-failures"


def load(name: str) -> Any:
    return json.loads((EVENTS / name).read_text())


def pipe_record(
    body: str | dict[str, Any], message_id: str = "059f36b4-87a3-44ab-83d2-661975830aff"
) -> dict[str, Any]:
    """An SQS record as a pipe hands it to the enrichment (the Lambda SQS record shape)."""
    text = body if isinstance(body, str) else json.dumps(body)
    return {
        "messageId": message_id,
        "receiptHandle": f"AQEB-{message_id}",
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1796032804600",
            "SenderId": "AROAEXAMPLEROLEID:orders-fn",
            "ApproximateFirstReceiveTimestamp": "1796032804700",
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(text.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": FAILURE_QUEUE_ARN,
        "awsRegion": "us-east-1",
    }


def destination_record(payload: Any, response: Any = None, *, function: str = "orders-fn") -> dict[str, Any]:
    """A RetriesExhausted destination record for ``payload`` (the event the function got)."""
    record: dict[str, Any] = {
        "version": "1.0",
        "timestamp": "2026-11-30T10:00:04.512Z",
        "requestContext": {
            "requestId": "e4b46cbf-b738-4c2f-8880-a18cdf61200e",
            "functionArn": f"arn:aws:lambda:us-east-1:123456789012:function:{function}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 1,
        },
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": response
        if response is not None
        else {"errorType": "ConnectionError", "errorMessage": "connection reset", "stackTrace": []},
    }
    return record

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


ORDERS_ARN = "arn:aws:lambda:us-east-1:123456789012:function:orders-fn"
REINDEX_ARN = "arn:aws:lambda:us-east-1:123456789012:function:reindex-fn"
TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:orders"
SCHEDULER_ROLE_ARN = "arn:aws:iam::123456789012:role/orders-self-healing-scheduler"
SCHEDULE_DLQ_ARN = "arn:aws:sqs:us-east-1:123456789012:orders-self-healing-schedule-dlq"
QUEUE_URL_BASE = "https://sqs.us-east-1.amazonaws.com/123456789012/"
POLICY = {
    "max_attempts": 4,
    "backoff": {"strategy": "exponential", "base_seconds": 10, "multiplier": 2, "max_seconds": 3600},
    "rules": [
        {"http_status": [429, 503], "honor_retry_after": True},
        {"errors": ["KeyError", "ValidationError"], "retry": False},
    ],
}


def redrive_env(**overrides: Any) -> dict[str, str]:
    """The environment the self-healing module gives the redrive function."""
    sources = {
        "orders-fn": {"function_arn": ORDERS_ARN, "topic_arn": TOPIC_ARN},
        "reindex-fn": {
            "function_arn": REINDEX_ARN,
            "policy": {"max_attempts": 3, "backoff": {"strategy": "fixed", "base_seconds": 0}},
        },
    }
    env = {
        "SERVERLESS_RETRY_SOURCES": json.dumps(sources),
        "SERVERLESS_RETRY_POLICY": json.dumps(POLICY),
        "SERVERLESS_RETRY_REDRIVE_TO": "function",
        "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": QUEUE_URL_BASE + "orders-self-healing-exhausted",
        "SERVERLESS_RETRY_SCHEDULE_GROUP": "orders-self-healing",
        "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN": SCHEDULER_ROLE_ARN,
        "SERVERLESS_RETRY_DLQ_ARN": SCHEDULE_DLQ_ARN,
    }
    env.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in overrides.items()})
    return env


def bus_event(detail: Any, event_id: str = "f3c2a1b0-9d8e-4f7a-8b6c-5d4e3f2a1b0c") -> dict[str, Any]:
    """The EventBridge event a retry rule hands the redrive function."""
    return {
        "version": "0",
        "id": event_id,
        "detail-type": "serverless-retry failure",
        "source": "serverless-retry.self-healing",
        "account": "123456789012",
        "time": "2026-11-30T10:00:05Z",
        "region": "us-east-1",
        "resources": [],
        "detail": detail,
    }

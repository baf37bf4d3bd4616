"""Helpers for users' own tests: build SQS events and a Lambda context, and freeze the clock.

from serverless_retry.testing import sqs_event, lambda_context, FrozenClock
event = sqs_event(['{"order_id": "o-1"}'], queue_arn="arn:aws:sqs:us-east-1:123456789012:orders")
response = consumer(event, lambda_context())
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from serverless_retry.clock import FrozenClock

__all__ = ["FrozenClock", "LambdaContext", "lambda_context", "record_calls", "sqs_event", "sqs_record"]

DEFAULT_QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:serverless-retry-test"
_counter = itertools.count(1)


def _event_attribute(value: Any) -> dict[str, Any]:
    """A message attribute in the Lambda event form, from a plain value or an SQS API-form dict."""
    if isinstance(value, Mapping):
        data_type = str(value.get("DataType") or value.get("dataType") or "String")
        string_value = value.get("StringValue", value.get("stringValue"))
        binary_value = value.get("BinaryValue", value.get("binaryValue"))
    elif isinstance(value, bytes):
        data_type, string_value, binary_value = "Binary", None, value
    elif isinstance(value, bool):
        data_type, string_value, binary_value = "String", str(value).lower(), None
    elif isinstance(value, int | float):
        data_type, string_value, binary_value = "Number", str(value), None
    else:
        data_type, string_value, binary_value = "String", str(value), None
    out: dict[str, Any] = {"dataType": data_type, "stringListValues": [], "binaryListValues": []}
    if string_value is not None:
        out["stringValue"] = str(string_value)
    if binary_value is not None:
        raw = binary_value if isinstance(binary_value, bytes) else str(binary_value).encode()
        out["binaryValue"] = (
            raw.decode() if not isinstance(binary_value, bytes) else base64.b64encode(raw).decode()
        )
    return out


def sqs_record(
    body: str | Mapping[str, Any] | list[Any],
    *,
    message_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    queue_arn: str = DEFAULT_QUEUE_ARN,
    receive_count: int = 1,
    message_group_id: str | None = None,
    sent_at: float | None = None,
    receipt_handle: str | None = None,
    system_attributes: Mapping[str, str] | None = None,
    region: str | None = None,
    md5_of_body: str | None = None,
    md5_of_message_attributes: str | None = None,
) -> dict[str, Any]:
    """One SQS record as Lambda delivers it. A dict/list body is JSON-encoded for you.

    Made-up values fill what is not given; ``system_attributes`` (the record's ``attributes``),
    ``receipt_handle`` and the checksums replace them with real ones: the local runtime builds the
    events it delivers from ReceiveMessage results with this same function."""
    text = body if isinstance(body, str) else json.dumps(body)
    if system_attributes is not None:
        record_attributes = {k: str(v) for k, v in system_attributes.items()}
    else:
        sent_ms = str(int((sent_at if sent_at is not None else time.time()) * 1000))
        record_attributes = {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": sent_ms,
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": sent_ms,
        }
        if message_group_id is not None:
            record_attributes["MessageGroupId"] = message_group_id
            record_attributes["SequenceNumber"] = str(next(_counter)).zfill(20)
            record_attributes["MessageDeduplicationId"] = hashlib.sha256(text.encode()).hexdigest()
    if region is None:
        region = queue_arn.split(":")[3] if queue_arn.count(":") >= 5 else "us-east-1"
    record: dict[str, Any] = {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": receipt_handle or f"rh-{uuid.uuid4()}",
        "body": text,
        "attributes": record_attributes,
        "messageAttributes": {k: _event_attribute(v) for k, v in (attributes or {}).items()},
        "md5OfBody": md5_of_body or hashlib.md5(text.encode()).hexdigest(),  # SQS's own body checksum
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if md5_of_message_attributes:
        record["md5OfMessageAttributes"] = md5_of_message_attributes
    return record


def sqs_event(
    bodies: Iterable[str | Mapping[str, Any] | list[Any] | dict[str, Any]],
    *,
    queue_arn: str = DEFAULT_QUEUE_ARN,
    attributes: Mapping[str, Any] | None = None,
    message_group_id: str | None = None,
) -> dict[str, Any]:
    """An SQS event: each item is a body (str, or dict/list to JSON-encode) or a ready record from
    :func:`sqs_record` (recognised by its ``receiptHandle``)."""
    records: list[dict[str, Any]] = []
    for item in bodies:
        if isinstance(item, Mapping) and "receiptHandle" in item:
            records.append(dict(item))
        else:
            records.append(
                sqs_record(
                    item, queue_arn=queue_arn, attributes=attributes, message_group_id=message_group_id
                )
            )
    return {"Records": records}


def record_calls(client: Any) -> list[tuple[str, dict[str, Any]]]:
    """Record every API call ``client`` makes from now on as ``(operation, params)``, e.g. to see the
    ``DelaySeconds`` of a re-enqueued message, which a local SQS keeps invisible until it is due."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        calls.append((str(model.name), dict(params)))

    client.meta.events.register("provide-client-params.*.*", record)
    return calls


@dataclass
class LambdaContext:
    """The attributes of the Lambda context object that Powertools and our handlers read."""

    function_name: str = "serverless-retry-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 256
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    log_group_name: str = "/aws/lambda/serverless-retry-test"
    log_stream_name: str = "2026/11/30/[$LATEST]test"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:serverless-retry-test"
    timeout_ms: int = 30_000

    def get_remaining_time_in_millis(self) -> int:
        return self.timeout_ms


def lambda_context(
    function_name: str = "serverless-retry-test", *, timeout_ms: int = 30_000
) -> LambdaContext:
    return LambdaContext(
        function_name=function_name,
        aws_request_id=str(uuid.uuid4()),
        log_group_name=f"/aws/lambda/{function_name}",
        invoked_function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}",
        timeout_ms=timeout_ms,
    )

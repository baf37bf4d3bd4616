"""Helpers for users' own tests: build SQS events and a Lambda context, freeze the clock, and feed a
retry copy back as the next delivery.

from serverless_retry.testing import (
    FrozenClock, lambda_context, next_delivery, record_calls, sent_messages, sqs_event,
)
clock = FrozenClock()                      # give the same clock to the consumer and to the helpers
calls = record_calls(sqs)                  # what the consumer sends, retry copies included
event = sqs_event(['{"order_id": "o-1"}'], queue_arn=ORDERS_ARN, clock=clock)
response = consumer(event, lambda_context())
[copy] = sent_messages(calls)              # attempt 2, as the consumer sent it to the queue
response = consumer(sqs_event([next_delivery(copy, clock)]), lambda_context())  # at its due time

One clock. The consumer takes a retry's "now" from the record's own SentTimestamp and first-receive
time, and judges a copy's due time against its clock: records stamped by another clock than the
consumer's make a fed-back copy look further out than the policy could plan, and it goes to the
retry-exhausted queue as an invalid envelope. So every helper that stamps a time takes ``clock=``
(the consumer's FrozenClock); without it a record is stamped by the latest FrozenClock made (the one
a test gave its consumer), and with none made, with the real time, which agrees with a consumer on the
system clock.
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
from datetime import datetime, timedelta
from typing import Any

from serverless_retry.clock import Clock, FrozenClock
from serverless_retry.envelope import ENVELOPE_KEY, parse_time

__all__ = [
    "FrozenClock",
    "LambdaContext",
    "lambda_context",
    "next_delivery",
    "record_calls",
    "sent_messages",
    "sqs_event",
    "sqs_record",
]

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
    clock: Clock | None = None,
    received_at: float | None = None,
) -> dict[str, Any]:
    """One SQS record as Lambda delivers it. A dict/list body is JSON-encoded for you.

    ``SentTimestamp`` is ``sent_at`` (a Unix time), else ``clock.now()``, else the latest
    FrozenClock's time (``FrozenClock.latest()``), else the real time; the
    first receive is ``received_at``, else the same moment. Made-up values fill what is not given;
    ``system_attributes`` (the record's ``attributes``), ``receipt_handle`` and the checksums replace
    them with real ones: the local runtime builds the events it delivers from ReceiveMessage results
    with this same function."""
    text = body if isinstance(body, str) else json.dumps(body)
    if system_attributes is not None:
        record_attributes = {k: str(v) for k, v in system_attributes.items()}
    else:
        if sent_at is None:
            stamp = clock if clock is not None else FrozenClock.latest()
            sent_at = stamp.now().timestamp() if stamp is not None else time.time()
        sent_ms = str(int(sent_at * 1000))
        received_ms = sent_ms if received_at is None else str(int(received_at * 1000))
        record_attributes = {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": sent_ms,
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": received_ms,
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
    clock: Clock | None = None,
) -> dict[str, Any]:
    """An SQS event: each item is a body (str, or dict/list to JSON-encode) or a ready record from
    :func:`sqs_record` or :func:`next_delivery` (recognised by its ``receiptHandle``). Records made
    here are stamped by ``clock`` (the consumer's), else by the latest FrozenClock, else with the real
    time."""
    records: list[dict[str, Any]] = []
    for item in bodies:
        if isinstance(item, Mapping) and "receiptHandle" in item:
            records.append(dict(item))
        else:
            records.append(
                sqs_record(
                    item,
                    queue_arn=queue_arn,
                    attributes=attributes,
                    message_group_id=message_group_id,
                    clock=clock,
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


def sent_messages(
    calls: Iterable[tuple[str, Mapping[str, Any]]], queue_url: str | None = None
) -> list[dict[str, Any]]:
    """The messages sent in ``calls`` (from :func:`record_calls`), in order, each as SendMessage's
    parameters (``QueueUrl``, ``MessageBody``, ``MessageAttributes``, ``DelaySeconds``, ...): one per
    SendMessage and per SendMessageBatch entry; only those sent to ``queue_url`` when it is given.
    A local SQS keeps a delayed retry copy invisible until due, in real time: read it here instead."""
    out: list[dict[str, Any]] = []
    for operation, params in calls:
        if operation == "SendMessage":
            entries: list[Mapping[str, Any]] = [params]
        elif operation == "SendMessageBatch":
            entries = list(params.get("Entries", []))
        else:
            continue
        url = params.get("QueueUrl")
        if queue_url is not None and url != queue_url:
            continue
        for entry in entries:
            message = {key: value for key, value in entry.items() if key != "Id"}
            message["QueueUrl"] = url
            out.append(message)
    return out


def next_delivery(
    copy: Mapping[str, Any] | str,
    clock: FrozenClock,
    *,
    queue_arn: str | None = None,
    receive_count: int = 1,
) -> dict[str, Any]:
    """A retry copy the consumer sent, as the record SQS delivers when it is due, with ``clock``
    (the consumer's) moved on to that moment: feed it back to test the next attempt.

    ``copy`` is a message from :func:`sent_messages` (SendMessage's parameters), a message from
    ReceiveMessage (``Body``, ``MessageAttributes``), or the body alone. Call it right after the
    invocation that sent the copy: it was sent at ``clock.now()``, and arrives at its envelope's
    ``due_at`` (a delay hop's copy carries the final due time: it arrives then, not at each hop),
    else after its ``DelaySeconds``. The clock never goes back. ``queue_arn`` defaults to the ARN of
    the copy's ``QueueUrl`` (else the helpers' default queue)."""
    if isinstance(copy, str):
        copy = {"MessageBody": copy}
    body = copy.get("MessageBody", copy.get("Body"))
    if not isinstance(body, str):
        raise ValueError("not a sent message: no MessageBody (or Body)")
    sent = clock.now()
    due = sent + timedelta(seconds=int(copy.get("DelaySeconds") or 0))
    due = max(due, _due_at(body) or due)
    clock.advance_to(due)
    return sqs_record(
        body,
        attributes=copy.get("MessageAttributes") or None,
        queue_arn=queue_arn or _queue_arn(copy.get("QueueUrl")) or DEFAULT_QUEUE_ARN,
        receive_count=receive_count,
        message_group_id=copy.get("MessageGroupId"),
        sent_at=sent.timestamp(),
        received_at=due.timestamp(),
    )


def _due_at(body: str) -> datetime | None:
    try:
        due = json.loads(body)[ENVELOPE_KEY]["due_at"]
        return parse_time(due) if isinstance(due, str) else None
    except (ValueError, TypeError, KeyError):
        return None


def _queue_arn(url: object) -> str | None:
    """``https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`` → ``arn:aws:sqs:REGION:ACCOUNT:NAME``."""
    if not isinstance(url, str):
        return None
    parts = url.split("/")
    host = parts[2].split(".") if len(parts) == 5 else []
    if len(host) < 2 or host[0] != "sqs":
        return None
    return f"arn:aws:sqs:{host[1]}:{parts[3]}:{parts[4]}"


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

"""Lambda's asynchronous invocation, as pure functions: what is accepted, when it runs again, what the
destinations receive. The emulator child queues each accepted invocation
(:mod:`serverless_retry_tools.local.emulator.async_patches`), the runtime runs it
(:mod:`serverless_retry_tools.local.runtime.async_runner`); both follow this module.

AWS's rules (Lambda developer guide: "Asynchronous invocation", "How Lambda handles errors and
retries with asynchronous invocation", "Capturing records of Lambda asynchronous invocations"; the
Invoke, PutFunctionEventInvokeConfig and FunctionEventInvokeConfig API references):

- Invoke with InvocationType=Event takes a JSON payload of at most 1 MB (1,048,576 bytes) and
  answers 202 once the event is queued; a larger payload is RequestEntityTooLargeException (413),
  one that is not JSON InvalidRequestContentException (400).
- A function error is retried MaximumRetryAttempts times (0-2, default 2): one minute before the
  second attempt, two minutes before the third. An event older than MaximumEventAgeInSeconds
  (60-21600, default 21600 = 6 h) when its turn comes is discarded unrun.
- A throttled invocation (429: its reserved concurrency in use, or 0) goes back to the queue
  and is tried again, 1 s after the first throttle and exponentially more up to 5 minutes, until the
  event is older than MaximumEventAgeInSeconds; throttles do not count against MaximumRetryAttempts.
- Then the invocation record goes to the on-success or on-failure destination: a standard SQS queue,
  a standard SNS topic, a Lambda function (invoked asynchronously), an EventBridge bus (source
  ``lambda``, detail-type ``Lambda Function Invocation Result - Success|Failure``, resources [bus,
  function]); S3 on failure only. A FIFO queue or topic, or a record too large, is a delivery failure
  (the DestinationDeliveryFailures metric): the record is lost. SNS: a record over 256 KB goes
  without requestPayload and responsePayload ("Lambda will drop the payload"). SQS: a record over
  the queue's MaximumMessageSize is refused by SendMessage, a delivery failure.
- An S3 bucket (on failure only) gets the whole record as one JSON object, key
  ``aws/lambda/async/<function-name>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>`` (the execution
  role needs s3:PutObject and s3:ListBucket), so no size limit of a queue applies.
- The record: ``version`` "1.0", ``timestamp`` (ms, Z), ``requestContext`` {requestId,
  functionArn (qualified), condition (Success / RetriesExhausted / EventAgeExceeded),
  approximateInvokeCount}, ``requestPayload``, and when the function ran ``responseContext``
  {statusCode, executedVersion, functionError} and ``responsePayload``.
- A discarded event also goes to the function's own dead-letter queue (DeadLetterConfig), if any:
  the payload alone with the RequestID, ErrorCode and ErrorMessage attributes.

Times are the emulator's logical time (milliseconds since the epoch).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "ASYNC_QUEUE_NAME",
    "DEFAULT_MAX_EVENT_AGE_SECONDS",
    "DEFAULT_MAX_RETRY_ATTEMPTS",
    "MAX_ASYNC_PAYLOAD_BYTES",
    "RETRY_DELAYS_SECONDS",
    "AsyncInvokeRejected",
    "AsyncSettings",
    "InvalidEventInvokeConfig",
    "Queued",
    "Step",
    "accept_payload",
    "after_attempt",
    "after_throttle",
    "dead_letter_attributes",
    "destination_kind",
    "destination_record",
    "error_payload",
    "eventbridge_entry",
    "format_timestamp",
    "on_pickup",
    "s3_bucket_of",
    "s3_destination_key",
    "sns_destination_message",
    "validate_event_invoke_config",
]

# The emulator's internal queue of accepted async invocations (hidden from ListQueues).
ASYNC_QUEUE_NAME = "serverless-retry-internal-lambda-async"
MAX_ASYNC_PAYLOAD_BYTES = 1_048_576
DEFAULT_MAX_RETRY_ATTEMPTS = 2
DEFAULT_MAX_EVENT_AGE_SECONDS = 21_600
MIN_EVENT_AGE_SECONDS = 60
RETRY_DELAYS_SECONDS = (60, 120)
MAX_THROTTLE_DELAY_SECONDS = 300
SNS_DESTINATION_MAX_BYTES = 262_144
S3_DESTINATION_PREFIX = "aws/lambda/async/"
EVENTBRIDGE_SOURCE = "lambda"
_DETAIL_TYPES = {
    True: "Lambda Function Invocation Result - Success",
    False: "Lambda Function Invocation Result - Failure",
}
_DESTINATION_SERVICES = ("sqs", "sns", "lambda", "events", "s3")
_RUNTIME_FRAME = "serverless_retry_tools/local/runtime/worker.py"


class Queued(TypedDict):
    """One accepted invocation in the internal queue (its message body)."""

    v: int  # 1
    function_arn: str  # unqualified
    qualifier: str  # "$LATEST", a version or an alias
    request_id: str  # the same on every attempt, as Lambda's
    payload: str  # the JSON text exactly as invoked
    enqueued_ms: int  # logical time it was accepted: the event's age counts from here
    invoke_count: int  # invocations already made
    trigger: str  # invoke | sns | events | destination (for logs)
    throttle_count: NotRequired[int]  # throttled attempts so far (absent: none)


class AsyncInvokeRejected(Exception):
    """Invoke refused the event (nothing is queued)."""

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message


class InvalidEventInvokeConfig(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def accept_payload(body: bytes | str | None) -> str:
    """The payload text of an Event invocation, or AsyncInvokeRejected as Invoke would answer."""
    raw = body.encode() if isinstance(body, str) else (body or b"")
    if len(raw) > MAX_ASYNC_PAYLOAD_BYTES:
        raise AsyncInvokeRejected(
            "RequestEntityTooLargeException",
            413,
            f"Request must be smaller than {MAX_ASYNC_PAYLOAD_BYTES} bytes for the InvokeFunction operation",
        )
    if not raw.strip():
        return "{}"
    try:
        text = raw.decode("utf-8")
        json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise AsyncInvokeRejected(
            "InvalidRequestContentException", 400, f"Could not parse request body into json: {exc}"
        ) from None
    return text


def destination_kind(arn: str) -> str | None:
    parts = arn.split(":")
    return parts[2] if len(parts) >= 6 and parts[0] == "arn" and parts[2] in _DESTINATION_SERVICES else None


def validate_event_invoke_config(config: Mapping[str, Any]) -> None:
    """PutFunctionEventInvokeConfig's checks that moto skips (ranges, destination types)."""
    retries = config.get("MaximumRetryAttempts")
    if retries is not None and not (isinstance(retries, int) and 0 <= retries <= DEFAULT_MAX_RETRY_ATTEMPTS):
        raise InvalidEventInvokeConfig(
            "ValidationException",
            f"1 validation error detected: Value '{retries}' at 'maximumRetryAttempts' failed to satisfy "
            "constraint: Member must have value between 0 and 2",
        )
    age = config.get("MaximumEventAgeInSeconds")
    if age is not None and not (
        isinstance(age, int) and MIN_EVENT_AGE_SECONDS <= age <= DEFAULT_MAX_EVENT_AGE_SECONDS
    ):
        raise InvalidEventInvokeConfig(
            "ValidationException",
            f"1 validation error detected: Value '{age}' at 'maximumEventAgeInSeconds' failed to satisfy "
            "constraint: Member must have value between 60 and 21600",
        )
    destinations = config.get("DestinationConfig") or {}
    for key in ("OnSuccess", "OnFailure"):
        arn = (destinations.get(key) or {}).get("Destination")
        if not arn:
            continue
        kind = destination_kind(str(arn))
        if kind is None:
            raise InvalidEventInvokeConfig(
                "InvalidParameterValueException",
                f"The destination ARN {arn} is invalid: an asynchronous invocation destination is an SQS "
                "queue, an SNS topic, a Lambda function, an EventBridge event bus or (on failure) an S3 bucket.",
            )
        if kind == "s3" and key == "OnSuccess":
            raise InvalidEventInvokeConfig(
                "InvalidParameterValueException",
                "S3 buckets are supported only for on-failure destinations.",
            )
        if kind == "events" and ":event-bus/" not in str(arn):
            raise InvalidEventInvokeConfig(
                "InvalidParameterValueException", f"The destination ARN {arn} is not an event bus."
            )


@dataclass(frozen=True)
class AsyncSettings:
    max_retry_attempts: int = DEFAULT_MAX_RETRY_ATTEMPTS
    max_event_age_seconds: int = DEFAULT_MAX_EVENT_AGE_SECONDS
    on_success: str | None = None
    on_failure: str | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> AsyncSettings:
        """From GetFunctionEventInvokeConfig (None: the function has none, Lambda's defaults apply)."""
        if not config:
            return cls()
        destinations = config.get("DestinationConfig") or {}
        retries = config.get("MaximumRetryAttempts")
        age = config.get("MaximumEventAgeInSeconds")
        return cls(
            max_retry_attempts=DEFAULT_MAX_RETRY_ATTEMPTS if retries is None else int(retries),
            max_event_age_seconds=DEFAULT_MAX_EVENT_AGE_SECONDS if age is None else int(age),
            on_success=(destinations.get("OnSuccess") or {}).get("Destination") or None,
            on_failure=(destinations.get("OnFailure") or {}).get("Destination") or None,
        )


@dataclass(frozen=True)
class Step:
    action: Literal["invoke", "retry", "success", "discard"]
    delay_seconds: int = 0
    condition: str = ""  # why discarded: RetriesExhausted | EventAgeExceeded


def on_pickup(settings: AsyncSettings, queued: Queued, now_ms: int) -> Step:
    """An event whose turn has come: run it, or discard it as too old."""
    if now_ms - queued["enqueued_ms"] > settings.max_event_age_seconds * 1000:
        return Step("discard", condition="EventAgeExceeded")
    return Step("invoke")


def after_attempt(settings: AsyncSettings, invoke_count: int, ok: bool) -> Step:
    """After invocation number ``invoke_count`` (1-based) ended ok or with a function error."""
    if ok:
        return Step("success")
    if invoke_count - 1 < settings.max_retry_attempts:
        delay = RETRY_DELAYS_SECONDS[min(invoke_count - 1, len(RETRY_DELAYS_SECONDS) - 1)]
        return Step("retry", delay_seconds=delay)
    return Step("discard", condition="RetriesExhausted")


def after_throttle(throttle_count: int) -> Step:
    """After throttle number ``throttle_count`` (1-based): queued again, 1 s after the first and
    doubling to 5 minutes (the event's age, checked on pickup, ends it)."""
    delay = min(MAX_THROTTLE_DELAY_SECONDS, 2 ** min(throttle_count - 1, 16))
    return Step("retry", delay_seconds=delay)


def format_timestamp(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def error_payload(
    error: Mapping[str, Any] | None, request_id: str, *, timed_out: bool = False
) -> dict[str, Any]:
    """The responsePayload of a failed invocation as the Python runtime writes it."""
    error = error or {}
    if timed_out:
        return {
            "errorType": "Sandbox.Timedout",
            "errorMessage": f"RequestId: {request_id} Error: {error.get('errorMessage', 'Task timed out')}",
        }
    if str(error.get("errorType", "")).startswith("Runtime."):
        return {"errorType": str(error["errorType"]), "errorMessage": str(error.get("errorMessage", ""))}
    trace = error.get("stackTrace")
    # Frames only (no "Traceback" header, no exception line), without the runtime's own frames:
    # the Python runtime starts the trace at the handler.
    frames = (
        [str(f) for f in trace if str(f).startswith("  File ") and _RUNTIME_FRAME not in str(f)]
        if isinstance(trace, list)
        else []
    )
    payload: dict[str, Any] = {"errorMessage": str(error.get("errorMessage", ""))}
    if error.get("errorType"):
        payload["errorType"] = str(error["errorType"])
    payload["requestId"] = request_id
    payload["stackTrace"] = frames
    return payload


def destination_record(
    queued: Queued,
    *,
    condition: str,
    at_ms: int,
    invoke_count: int,
    response: Any = None,
    function_error: str | None = None,
    ran: bool = True,
) -> dict[str, Any]:
    """The invocation record (Success / RetriesExhausted / EventAgeExceeded)."""
    record: dict[str, Any] = {
        "version": "1.0",
        "timestamp": format_timestamp(at_ms),
        "requestContext": {
            "requestId": queued["request_id"],
            "functionArn": f"{queued['function_arn']}:{queued['qualifier']}",
            "condition": condition,
            "approximateInvokeCount": invoke_count,
        },
        "requestPayload": json.loads(queued["payload"]),
    }
    if ran and condition != "EventAgeExceeded":
        context: dict[str, Any] = {"statusCode": 200, "executedVersion": queued["qualifier"]}
        if function_error:
            context["functionError"] = function_error
        record["responseContext"] = context
        record["responsePayload"] = response
    return record


def eventbridge_entry(record: Mapping[str, Any], *, bus_arn: str) -> dict[str, Any]:
    """The PutEvents entry Lambda puts on a bus destination."""
    success = record["requestContext"]["condition"] == "Success"
    return {
        "Source": EVENTBRIDGE_SOURCE,
        "DetailType": _DETAIL_TYPES[success],
        "Detail": json.dumps(record, ensure_ascii=False, separators=(",", ":")),
        "Resources": [bus_arn, record["requestContext"]["functionArn"]],
        "EventBusName": bus_arn,
    }


def sns_destination_message(record: Mapping[str, Any]) -> str:
    """The record for an SNS destination: without its payloads when it would not fit SNS."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    if len(text.encode()) <= SNS_DESTINATION_MAX_BYTES:
        return text
    slim = {k: v for k, v in record.items() if k not in ("requestPayload", "responsePayload")}
    return json.dumps(slim, ensure_ascii=False, separators=(",", ":"))


def s3_destination_key(function_name: str, at_ms: int, unique: str) -> str:
    """Where Lambda's S3 destination writes a record of ``function_name`` delivered at ``at_ms``."""
    moment = datetime.fromtimestamp(at_ms / 1000, UTC)
    return f"{S3_DESTINATION_PREFIX}{function_name}/{moment:%Y/%m/%d}/{moment:%Y-%m-%dT%H.%M.%S}-{unique}"


def s3_bucket_of(arn: str) -> str:
    """The bucket an S3 destination ARN (``arn:aws:s3:::<bucket>``) names."""
    return arn.split(":", 5)[5]


def dead_letter_attributes(request_id: str, error_code: str, error_message: str) -> dict[str, dict[str, str]]:
    """Message attributes of a discarded event in the function's own dead-letter queue."""
    values = {
        "RequestID": request_id,
        "ErrorCode": error_code,
        "ErrorMessage": error_message[:1024] or error_code,
    }
    return {k: {"DataType": "String", "StringValue": v} for k, v in values.items()}

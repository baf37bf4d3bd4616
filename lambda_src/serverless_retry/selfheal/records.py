"""Reading Lambda on-failure destination records (as a pipe hands them over) into ``FailureDetail``.

Pure and total: ``failure_detail`` never raises. Anything it cannot read becomes an
``InvalidFailureRecord`` detail whose payload is the raw SQS body, so it ends in the retry-exhausted
queue unaltered, with ``problem`` saying why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from serverless_retry.backoff import json_kind
from serverless_retry.envelope import ERROR_TEXT_LIMIT, format_time, parse_time
from serverless_retry.selfheal.state import InvalidRetryState, read, unqualified_function_arn
from serverless_retry.selfheal.types import (
    ERROR_INVALID_RECORD,
    ERROR_MISSING_TYPE,
    FailureDetail,
    FailureMeta,
)

__all__ = ["failure_detail", "invalid_detail", "record_time"]

_ERROR_KEYS = ("errorType", "errorMessage", "stackTrace", "requestId")
_NOT_FAILURES = ("Success",)


class _Invalid(Exception):
    pass


def record_time(text: object) -> datetime:
    """A destination record's ``timestamp`` (``2026-11-30T10:00:00.123Z``); ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"must be a string, got {json_kind(text)}")
    try:
        return parse_time(text)
    except ValueError:
        moment = datetime.fromisoformat(text)  # offsets such as +00:00
        if moment.tzinfo is None:
            raise ValueError(f"has no time zone: {text!r}") from None
        return moment.astimezone(UTC)


def _cut(text: str, limit: int = ERROR_TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit]


def _meta(**fields: Any) -> FailureMeta:
    meta: FailureMeta = {
        "v": 1,
        "source_type": "unknown",
        "source": "",
        "function_arn": "unknown",
        "function_name": "unknown",
        "function_qualifier": "",
        "condition": "",
        "error_type": ERROR_INVALID_RECORD,
        "error_message": "",
        "stack_trace": [],
        "response": None,
        "retry_count": 0,
        "attempt": 1,
        "invoke_count": 0,
        "retry_id": "",
        "request_id": "",
        "first_failed_at": "",
        "failed_at": "",
        "previous_delay_seconds": 0,
        "failure_message_id": "",
        "trimmed": [],
        "problem": "",
    }
    meta.update(fields)  # type: ignore[typeddict-item]
    return meta


def _invalid(record: Mapping[str, Any], raw: Any, problem: str, now: datetime, **known: Any) -> FailureDetail:
    message_id = record.get("messageId") if isinstance(record, Mapping) else None
    message_id = message_id if isinstance(message_id, str) else ""
    when = format_time(now)
    meta = _meta(
        retry_id=message_id,
        failure_message_id=message_id,
        failed_at=when,
        first_failed_at=when,
        problem=_cut(problem),
        **known,
    )
    meta["error_type"] = ERROR_INVALID_RECORD
    return {"payload": raw, "meta": meta}


def invalid_detail(record: Mapping[str, Any], raw: Any, problem: str, now: datetime) -> FailureDetail:
    """An ``InvalidFailureRecord`` detail for a pipe record read some other way (an S3 notification)."""
    return _invalid(record, raw, problem, now)


def _error_fields(response: Any) -> tuple[str, str, list[str], Any]:
    """``(error_type, error_message, stack_trace, rest)`` of a responsePayload."""
    if not isinstance(response, Mapping):
        return ERROR_MISSING_TYPE, "", [], response  # absent (None), or a non-object payload
    error_type = response.get("errorType")
    message = response.get("errorMessage")
    trace = response.get("stackTrace")
    rest = {k: v for k, v in response.items() if k not in _ERROR_KEYS}
    if not isinstance(error_type, str) or not error_type.strip():
        if "errorType" in response:
            rest["errorType"] = error_type  # an odd value is kept for a person to see
        error_type = ERROR_MISSING_TYPE
    stack = [str(line) for line in trace] if isinstance(trace, list) else []
    text = message if isinstance(message, str) else ("" if message is None else json.dumps(message))
    return error_type.strip(), _cut(text), stack, (rest or None)


def failure_detail(record: Any, now: datetime) -> FailureDetail:
    """One pipe record (an SQS record whose body is a destination record) as a bus event detail.

    ``now`` only dates records too broken to carry a timestamp of their own.
    """
    if not isinstance(record, Mapping):
        return _invalid({}, record, f"the pipe record is {json_kind(record)}, not an object", now)
    body = record.get("body")
    if not isinstance(body, str):
        return _invalid(record, dict(record), "the SQS record has no string body", now)
    known: dict[str, Any] = {}
    try:
        return _parse(record, body, known)
    except _Invalid as exc:
        return _invalid(record, body, str(exc), now, **known)
    except Exception as exc:  # a bug of ours must not lose the record either
        return _invalid(record, body, f"could not read the record: {type(exc).__name__}: {exc}", now, **known)


def _parse(record: Mapping[str, Any], body: str, known: dict[str, Any]) -> FailureDetail:
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise _Invalid(f"the body is not JSON: {exc}") from None
    if not isinstance(document, Mapping):
        raise _Invalid(f"the body is a JSON {json_kind(document)}, not a destination record object")
    context = document.get("requestContext")
    if not isinstance(context, Mapping):
        raise _Invalid("requestContext is missing: not a Lambda destination record")
    parsed_arn = unqualified_function_arn(context.get("functionArn", ""))
    if parsed_arn is None:
        raise _Invalid(
            f"requestContext.functionArn is not a Lambda function ARN: {context.get('functionArn')!r}"
        )
    function_arn, function_name, qualifier = parsed_arn
    known.update(function_arn=function_arn, function_name=function_name, function_qualifier=qualifier)
    condition = context.get("condition", "")
    if not isinstance(condition, str):
        raise _Invalid(f"requestContext.condition must be a string, got {json_kind(condition)}")
    known["condition"] = condition
    if condition in _NOT_FAILURES:
        raise _Invalid(f"condition {condition!r} is not a failure (an on-success destination points here?)")
    request_id = context.get("requestId")
    if not isinstance(request_id, str) or not request_id:
        raise _Invalid("requestContext.requestId is missing")
    known["request_id"] = request_id
    invoke_count = context.get("approximateInvokeCount", 0)
    if isinstance(invoke_count, bool) or not isinstance(invoke_count, int) or invoke_count < 0:
        raise _Invalid(f"requestContext.approximateInvokeCount must be an integer >= 0, got {invoke_count!r}")
    try:
        failed_at = format_time(record_time(document.get("timestamp")))
    except ValueError as exc:
        raise _Invalid(f"timestamp: {exc}") from None
    if "requestPayload" not in document:
        raise _Invalid("requestPayload is missing")
    try:
        carried = read(document["requestPayload"])
    except InvalidRetryState as exc:
        raise _Invalid(f"invalid retry state: {exc}") from None
    error_type, message, stack, rest = _error_fields(document.get("responsePayload"))
    state = carried.state
    message_id = record.get("messageId")
    meta = _meta(
        source_type=carried.source_type,
        source=carried.source(function_arn),
        function_arn=function_arn,
        function_name=function_name,
        function_qualifier=qualifier,
        condition=condition,
        error_type=error_type,
        error_message=message,
        stack_trace=stack,
        response=rest,
        retry_count=state["attempt"] - 1 if state else 0,
        attempt=state["attempt"] if state else 1,
        invoke_count=invoke_count,
        retry_id=state["id"] if state else carried.first_id(request_id),
        request_id=request_id,
        first_failed_at=format_time(parse_time(state["first_failed_at"])) if state else failed_at,
        failed_at=failed_at,
        previous_delay_seconds=state["previous_delay_seconds"] if state else 0,
        failure_message_id=message_id if isinstance(message_id, str) else "",
    )
    return {"payload": carried.event, "meta": meta}

"""The redrive: a retry rule's event in, the failed event re-delivered (now or later) or exhausted.

``plan_redrive`` is pure: every decision is a function of the event and the settings. The failure is
rebuilt as an exception of the recorded type (so the policy's rules match it by name, MRO, HTTP status
and message as they would in-process), attempt and first failure come from the retry state, "now" for
the budget is the failure record's own timestamp, and the jitter is seeded by (retry id, attempt): a
duplicate delivery of the same event (EventBridge delivers at least once) plans exactly the same
thing, and a schedule of the same name (ConflictException = already scheduled).

``Redriver`` makes the one AWS call of a plan and raises when it fails. EventBridge invoked this
function asynchronously, so a raise is retried by Lambda and then lands in the redrive function's
on-failure destination: never nowhere.
"""

from __future__ import annotations

import base64
import builtins
import functools
import json
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from botocore.exceptions import ClientError

from serverless_retry.envelope import (
    SCHEDULE_RETRY_POLICY,
    at_expression,
    format_time,
    parse_time,
    schedule_name,
)
from serverless_retry.errors import HttpError, NonRetryableError, RetryableError
from serverless_retry.selfheal.config import RedriveSettings, Source
from serverless_retry.selfheal.function import SelfHealingFunction
from serverless_retry.selfheal.metrics import emit
from serverless_retry.selfheal.state import attach, encode_state
from serverless_retry.selfheal.stored import RecordChanged, RecordGone, payload_of
from serverless_retry.selfheal.types import (
    ALWAYS_EXHAUSTED_ERROR_TYPES,
    ASYNC_INVOKE_MAX_BYTES,
    RETRY_STATE_KEY,
    ExhaustedOutcome,
    ExhaustedRecord,
    RetryState,
)

__all__ = [
    "ASYNC_INVOKE_MAX_BYTES",
    "SCHEDULE_PREFIX",
    "SNS_MAX_BYTES",
    "RedrivePlan",
    "Redriver",
    "http_status_in",
    "plan_redrive",
    "remote_error",
    "retry_after_in",
]

SNS_MAX_BYTES = 262_144  # message + every attribute's name, type and value
# Raw-delivery SQS subscriptions drop SNS messages with more than 10 attributes: never add the 11th.
SNS_ATTRIBUTE_LIMIT = 10
SCHEDULE_PREFIX = "sh"  # the consumer's schedules are "sr-..."
SCHEDULE_MIN_LEAD_SECONDS = 5

Action = Literal["invoke", "publish", "schedule", "exhausted"]

_META_INTS = ("attempt", "retry_count", "previous_delay_seconds")
_META_STRS = (
    "function_name",
    "function_arn",
    "error_type",
    "error_message",
    "retry_id",
    "source",
    "source_type",
)
_HTTP_STATUS = re.compile(
    r"\b(?:HTTP(?:/\d(?:\.\d)?)?|status(?:[ _-]?code)?)\s*[:=]?\s*([1-5]\d\d)\b", re.IGNORECASE
)
_RETRY_AFTER = re.compile(
    r"retry[-_ ]after[\"']?\s*[:=]?\s*[\"']?"
    r"(\d+(?:\.\d+)?|[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT)",
    re.IGNORECASE,
)
_OUR_ERRORS: dict[str, type[Exception]] = {
    "NonRetryableError": NonRetryableError,
    "RetryableError": RetryableError,
    "HttpError": HttpError,
}


# --- the remote error, rebuilt --------------------------------------------------------------------------


def http_status_in(message: str) -> int | None:
    """An HTTP status named in an error message (``HTTP 429``, ``status 503``, ``status_code=500``)."""
    match = _HTTP_STATUS.search(message)
    return int(match.group(1)) if match else None


def retry_after_in(message: str) -> str | None:
    """A Retry-After named in an error message (``Retry-After: 120`` or an HTTP date)."""
    match = _RETRY_AFTER.search(message)
    return match.group(1) if match else None


@functools.lru_cache(maxsize=256)
def _error_class(error_type: str) -> type[Exception]:
    module, _, name = error_type.rpartition(".")
    base: type[Exception] = _OUR_ERRORS.get(name, Exception)
    builtin = getattr(builtins, name, None)
    if base is Exception and isinstance(builtin, type) and issubclass(builtin, Exception):
        base = builtin

    def __str__(self: Any) -> str:  # the message verbatim (KeyError would quote it again)
        return str(self._message)

    namespace = {"__str__": __str__, "__module__": module or "remote", "__qualname__": name}
    try:
        return type(name, (base,), namespace)
    except TypeError:  # a base that cannot be subclassed: the name still matches
        return type(name, (Exception,), namespace)


def remote_error(error_type: str, message: str) -> Exception:
    """An exception standing for the one the function raised: class named ``error_type`` (under the
    builtin or serverless_retry error of that name, so rules match by MRO), ``str()`` = ``message``,
    ``status`` / ``retry_after`` when the message names them."""
    cls = _error_class(error_type or "Exception")
    error: Exception = cls.__new__(cls)
    Exception.__init__(error, message)
    error._message = message  # type: ignore[attr-defined]
    status = http_status_in(message)
    if status is not None:
        error.status = status  # type: ignore[attr-defined]
        error.status_code = status  # type: ignore[attr-defined]
    error.retry_after = retry_after_in(message)  # type: ignore[attr-defined]
    return error


# --- planning -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RedrivePlan:
    action: Action
    reason: str
    retry_id: str = ""
    next_attempt: int = 0
    delay_seconds: int = 0
    outcome: ExhaustedOutcome | None = None
    invoke: dict[str, Any] | None = None  # Lambda Invoke parameters
    publish: dict[str, Any] | None = None  # SNS Publish parameters (boto3 form)
    schedule: dict[str, Any] | None = None  # Scheduler CreateSchedule parameters
    exhausted: dict[str, Any] | None = None  # SQS SendMessage parameters

    def summary(self) -> dict[str, Any]:
        """What was decided, without the call's parameters: the log record and the handler's answer."""
        return {
            "action": self.action,
            "retry_id": self.retry_id,
            "next_attempt": self.next_attempt,
            "delay_seconds": self.delay_seconds,
            "outcome": self.outcome,
            "reason": self.reason,
        }


class _Bad(Exception):
    pass


def _meta(detail: object) -> Mapping[str, Any]:
    if (
        not isinstance(detail, Mapping)
        or "payload" not in detail
        or not isinstance(detail.get("meta"), Mapping)
    ):
        raise _Bad("the event's detail is not {payload, meta}")
    meta: Mapping[str, Any] = detail["meta"]
    for key in _META_STRS:
        if not isinstance(meta.get(key), str):
            raise _Bad(f"meta.{key} must be a string")
    for key in _META_INTS:
        value = meta.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _Bad(f"meta.{key} must be an integer >= 0")
    if meta["attempt"] < 1 or meta["retry_count"] != meta["attempt"] - 1:
        raise _Bad("meta.attempt must be >= 1 and retry_count must be attempt - 1")
    if meta["source_type"] not in ("sns", "eventbridge", "direct"):
        raise _Bad(f"meta.source_type {meta['source_type']!r} cannot be redriven")
    if not meta["retry_id"]:
        raise _Bad("meta.retry_id is empty")
    for key in ("first_failed_at", "failed_at"):
        value = meta.get(key)
        try:
            parse_time(value if isinstance(value, str) else "")
        except ValueError:
            raise _Bad(f"meta.{key} is not a timestamp like 2026-11-30T10:00:00Z") from None
    return meta


def _exhausted(
    settings: RedriveSettings, detail: Any, outcome: ExhaustedOutcome, reason: str, **kw: Any
) -> RedrivePlan:
    record: ExhaustedRecord = {"outcome": outcome, "reason": reason, "detail": detail}
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    params = {"QueueUrl": settings.exhausted_queue_url, "MessageBody": body}
    return RedrivePlan("exhausted", reason, outcome=outcome, exhausted=params, **kw)


def _publish_params(payload: Any, topic_arn: str, state: RetryState) -> tuple[dict[str, Any], str | None]:
    """SNS Publish parameters re-publishing the original message, or why that cannot be done."""
    sns = payload["Records"][0]["Sns"]
    attributes: dict[str, Any] = {}
    size = 0
    for name, attribute in (sns.get("MessageAttributes") or {}).items():
        data_type, value = str(attribute.get("Type", "String")), str(attribute.get("Value", ""))
        if data_type.startswith("Binary"):
            raw = base64.b64decode(value)
            attributes[name] = {"DataType": data_type, "BinaryValue": raw}
            size += len(raw)
        else:
            attributes[name] = {"DataType": data_type, "StringValue": value}
            size += len(value.encode())
        size += len(name.encode()) + len(data_type.encode())
    if len(attributes) >= SNS_ATTRIBUTE_LIMIT:
        return {}, f"the message already has {len(attributes)} attributes (no room for the retry state)"
    state_text = encode_state(state)
    attributes[RETRY_STATE_KEY] = {"DataType": "String", "StringValue": state_text}
    message = str(sns.get("Message", ""))
    size += len(message.encode()) + len(RETRY_STATE_KEY) + len("String") + len(state_text.encode())
    if size > SNS_MAX_BYTES:
        return {}, f"the message with its retry state would be {size} bytes; SNS takes {SNS_MAX_BYTES}"
    params: dict[str, Any] = {"TopicArn": topic_arn, "Message": message, "MessageAttributes": attributes}
    if isinstance(sns.get("Subject"), str) and sns["Subject"]:
        params["Subject"] = sns["Subject"]
    return params, None


def _json_publish_input(params: Mapping[str, Any]) -> str:
    """Publish parameters as the Scheduler universal target's Input (blobs as base64, AWS JSON style)."""
    attributes = {
        name: (
            {"DataType": a["DataType"], "BinaryValue": base64.b64encode(a["BinaryValue"]).decode("ascii")}
            if "BinaryValue" in a
            else dict(a)
        )
        for name, a in params["MessageAttributes"].items()
    }
    return json.dumps({**params, "MessageAttributes": attributes}, ensure_ascii=False, separators=(",", ":"))


def _partition(arn: str) -> str:
    return arn.split(":", 2)[1]


def _schedule_key(meta: Mapping[str, Any], to_topic: bool) -> str:
    """What makes a retry schedule unique, so a duplicate delivery of the same failure finds it taken.

    A topic redrive re-publishes one message for every subscriber: two subscribers that failed the same
    message want the same re-publish, so the key is the message's retry id. A function redrive
    re-invokes one function: two subscribers of one topic share the SNS MessageId (the retry id) but
    each needs its own schedule, or the second redrive's ConflictException would pass for "already
    scheduled" and that function's retry would be lost."""
    return meta["retry_id"] if to_topic else f"{meta['function_name']}/{meta['retry_id']}"


def _inline(detail: Mapping[str, Any]) -> Any:
    return detail["payload"]


def plan_redrive(
    event: Mapping[str, Any],
    settings: RedriveSettings,
    now: datetime,
    payload_source: Callable[[Mapping[str, Any]], Any] = _inline,
) -> RedrivePlan:
    """What to do with one retry-rule event. ``now`` only places a schedule in time (never decides).

    ``payload_source`` gives the event to deliver again, asked only when there is one to deliver: the detail's
    own by default; the Redriver's reads a detail with a ``payload_ref`` and no inline payload from S3.
    An exhausted plan carries the detail as it came (the pointer, not the payload)."""
    detail = event.get("detail") if isinstance(event, Mapping) else None
    try:
        meta = _meta(detail)
    except _Bad as exc:
        return _exhausted(settings, detail, "invalid-failure-record", f"not a redrivable event: {exc}")
    source: Source | None = settings.sources.get(meta["function_name"])
    ids = {"retry_id": meta["retry_id"], "next_attempt": meta["attempt"] + 1}
    if source is None or source.function_arn != meta["function_arn"]:
        return _exhausted(
            settings,
            detail,
            "unknown-source",
            f"{meta['function_arn']} is not a source of this module",
            **ids,
        )
    if meta["error_type"] in ALWAYS_EXHAUSTED_ERROR_TYPES:
        return _exhausted(
            settings, detail, "non-retryable", f"error type {meta['error_type']} never retries", **ids
        )
    decision = source.policy.decide(
        remote_error(meta["error_type"], meta["error_message"]),
        attempt=meta["attempt"],
        first_failed_at=parse_time(meta["first_failed_at"]),
        now=parse_time(meta["failed_at"]),
        rand=random.Random(f"{meta['retry_id']}:{meta['attempt']}"),
        previous_delay=float(meta["previous_delay_seconds"]) or None,
    )
    if decision.action != "retry":
        outcome: ExhaustedOutcome = "exhausted" if decision.action == "exhausted" else "non-retryable"
        return _exhausted(settings, detail, outcome, decision.reason, **ids)
    delay = decision.delay_seconds
    state: RetryState = {
        "v": 1,
        "id": meta["retry_id"],
        "attempt": meta["attempt"] + 1,
        "first_failed_at": format_time(parse_time(meta["first_failed_at"])),
        "previous_delay_seconds": delay,
    }
    reason = decision.reason
    payload = payload_source(detail)  # type: ignore[arg-type]
    publish: dict[str, Any] | None = None
    if (
        settings.redrive_to == "topic"
        and meta["source_type"] == "sns"
        and source.topic_arn is not None
        and meta["source"] == source.topic_arn
    ):
        publish, refused = _publish_params(payload, source.topic_arn, state)
        if refused is not None:
            publish = None
            reason += f"; redriven to the function instead of the topic: {refused}"
    invoke_payload = json.dumps(
        attach(payload, meta["source_type"], state), ensure_ascii=False, separators=(",", ":")
    )
    if publish is None and len(invoke_payload.encode()) > ASYNC_INVOKE_MAX_BYTES:
        return _exhausted(
            settings,
            detail,
            "too-large-to-retry",
            f"the event with its retry state is {len(invoke_payload.encode())} bytes; an async invoke takes "
            f"{ASYNC_INVOKE_MAX_BYTES}",
            **ids,
        )
    common = {"delay_seconds": delay, **ids}
    # The policy names its queue transport (sqs-delay, scheduler); this pattern's routes are its own.
    via = f" s via {decision.transport}"
    if delay == 0 and source.policy.transport == "auto":
        if publish is not None:
            return RedrivePlan(
                "publish", publish=publish, reason=reason.replace(via, " s via publish", 1), **common
            )
        invoke = {"FunctionName": source.function_arn, "InvocationType": "Event", "Payload": invoke_payload}
        return RedrivePlan("invoke", invoke=invoke, reason=reason.replace(via, " s via invoke", 1), **common)
    target: dict[str, Any] = {
        "RoleArn": settings.scheduler_role_arn,
        "DeadLetterConfig": {"Arn": settings.dlq_arn},
        "RetryPolicy": dict(SCHEDULE_RETRY_POLICY),
    }
    if publish is not None:
        target["Arn"] = f"arn:{_partition(publish['TopicArn'])}:scheduler:::aws-sdk:sns:publish"
        target["Input"] = _json_publish_input(publish)
    else:
        target["Arn"] = source.function_arn
        target["Input"] = invoke_payload
    due = max(
        parse_time(meta["failed_at"]) + timedelta(seconds=delay),
        now + timedelta(seconds=SCHEDULE_MIN_LEAD_SECONDS),
    )
    name = schedule_name(
        _schedule_key(meta, publish is not None), meta["attempt"] + 1, prefix=SCHEDULE_PREFIX
    )
    schedule = {
        "Name": name,
        "GroupName": settings.schedule_group,
        "ClientToken": name,
        "ScheduleExpression": at_expression(due),
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "ActionAfterCompletion": "DELETE",
        "State": "ENABLED",
        "Description": f"serverless-retry self-healing attempt {meta['attempt'] + 1} of {meta['retry_id']}"[
            :512
        ],
        "Target": target,
    }
    return RedrivePlan(
        "schedule", schedule=schedule, reason=reason.replace(via, " s via schedule", 1), **common
    )


# --- delivery -------------------------------------------------------------------------------------------


class Redriver(SelfHealingFunction[RedriveSettings]):
    """``redriver(event)`` carries out the plan for one retry-rule event; raises when the call fails."""

    def __call__(self, event: Mapping[str, Any]) -> RedrivePlan:
        plan = plan_redrive(event, self.settings, self.clock.now(), self._payload)
        log: dict[str, Any] = plan.summary()
        if plan.invoke is not None:
            response = self.clients.lambda_.invoke(**plan.invoke)
            if response.get("StatusCode") != 202:
                raise RuntimeError(f"async Invoke answered {response.get('StatusCode')}, not 202")
        elif plan.publish is not None:
            self.clients.sns.publish(**plan.publish)
        elif plan.schedule is not None:
            try:
                self.clients.scheduler.create_schedule(**plan.schedule)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConflictException":
                    raise
                log["already_scheduled"] = True  # a duplicate delivery of this event
            log["schedule"] = plan.schedule["Name"]
        elif plan.exhausted is not None:
            self.clients.sqs.send_message(**plan.exhausted)
        if plan.action == "exhausted":
            self.logger.warning("event goes to the retry-exhausted queue", extra=log)
            emit("SelfHealingExhausted", 1, self.logger, {"outcome": str(plan.outcome)})
        else:
            self.logger.info("event redriven", extra=log)
            emit("Redriven", 1, self.logger, {"via": plan.action})
        return plan

    def _payload(self, detail: Mapping[str, Any]) -> Any:
        """The inline payload, else the one its record in S3 holds. A record gone or changed raises:
        Lambda retries this invocation, then keeps the event in the redrive's on-failure destination."""
        ref = detail.get("payload_ref")
        if detail.get("payload") is not None or not isinstance(ref, Mapping):
            return detail["payload"]
        try:
            return payload_of(self.clients.s3, ref)
        except (RecordGone, RecordChanged) as exc:
            self.logger.error(
                "payload cannot be read back from S3; not redriven", extra={"problem": str(exc)}
            )
            emit("PayloadUnreadable", 1, self.logger)
            raise

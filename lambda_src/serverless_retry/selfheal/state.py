"""Retry state carriage: metadata that rides beside the user's event, never inside it.

- SNS event: a ``serverless_retry`` message attribute on the (single) record;
- EventBridge event: a top-level ``serverless_retry`` key beside ``detail``;
- anything else (a raw direct invoke): ``{"serverless_retry": <state>, "payload": <event>}``.

``read`` takes the state off and gives back the event exactly as it first arrived; ``attach`` puts
it on. Pure: no clock, no AWS. Copies only the containers it changes, so callers' events are never
mutated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from serverless_retry.backoff import MAX_DELAY_SECONDS, json_kind
from serverless_retry.envelope import MAX_ATTEMPT, RetryContext, parse_time
from serverless_retry.errors import NonRetryableError
from serverless_retry.selfheal.types import RETRY_STATE_KEY, RetryState, SnsMessageAttribute, SourceType

__all__ = [
    "STATE_VERSION",
    "Carried",
    "InvalidRetryState",
    "attach",
    "classify",
    "encode_state",
    "function_name",
    "parse_state",
    "read",
    "unqualified_function_arn",
]

STATE_VERSION = 1
_STATE_KEYS = ("v", "id", "attempt", "first_failed_at", "previous_delay_seconds")
_ID_LIMIT = 512
_WRAPPER_KEYS = frozenset((RETRY_STATE_KEY, "payload"))
_FUNCTION_NAME = re.compile(
    r"^(?P<name>[A-Za-z0-9_-]{1,64})(?::(?P<qualifier>\$LATEST|[A-Za-z0-9_-]{1,128}))?$"
)
_LAMBDA_ARN = re.compile(
    r"^(?P<arn>arn:(?P<partition>aws[a-z-]*):lambda:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):"
    r"function:(?P<name>[A-Za-z0-9_-]{1,64}))(?::(?P<qualifier>\$LATEST|[A-Za-z0-9_-]{1,128}))?$"
)


class InvalidRetryState(NonRetryableError):
    """A ``serverless_retry`` state is present but malformed (the name is reserved): never retried."""


@dataclass(frozen=True)
class Carried:
    """An event with its retry state taken off."""

    event: Any  # exactly as it first arrived
    state: RetryState | None  # None on a first delivery
    source_type: SourceType

    def first_id(self, request_id: str) -> str:
        """The retry id this delivery would start: SNS MessageId, EventBridge id, else ``request_id``."""
        if self.source_type == "sns":
            message_id = _sns(self.event).get("MessageId")
            if isinstance(message_id, str) and message_id:
                return message_id
        elif self.source_type == "eventbridge":
            event_id = self.event.get("id")
            if isinstance(event_id, str) and event_id:
                return event_id
        return request_id

    def source(self, function_arn: str) -> str:
        """Topic ARN (sns), the event's source (eventbridge), the function ARN (direct)."""
        if self.source_type == "sns":
            topic = _sns(self.event).get("TopicArn")
            return topic if isinstance(topic, str) else ""
        if self.source_type == "eventbridge":
            source = self.event.get("source")
            return source if isinstance(source, str) else ""
        return function_arn

    def context(self, *, request_id: str, function_arn: str) -> RetryContext:
        state = self.state
        first_failed_at: datetime | None = None
        if state is None:
            return RetryContext(self.first_id(request_id), 1, None, (), self.source(function_arn))
        first_failed_at = parse_time(state["first_failed_at"])
        return RetryContext(state["id"], state["attempt"], first_failed_at, (), self.source(function_arn))


def unqualified_function_arn(arn: str) -> tuple[str, str, str] | None:
    """``(unqualified ARN, function name, qualifier)`` of a Lambda function ARN; None if it is none."""
    match = _LAMBDA_ARN.match(arn) if isinstance(arn, str) else None
    if match is None:
        return None
    return match["arn"], match["name"], match["qualifier"] or ""


def function_name(value: str) -> str:
    """The name in a FunctionName as Invoke takes it: a name (``orders-fn``, ``orders-fn:live``) or a
    function ARN, qualified or not. ValueError says what is wrong."""
    parsed = unqualified_function_arn(value)
    if parsed is not None:
        return parsed[1]
    match = _FUNCTION_NAME.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(
            f"expected a Lambda function name (e.g. orders-fn or orders-fn:live) or function ARN, got {value!r}"
        )
    return match["name"]


# --- classification -----------------------------------------------------------------------------------


def _is_sns(event: object) -> bool:
    if not isinstance(event, Mapping):
        return False
    records = event.get("Records")
    return (
        isinstance(records, list)
        and len(records) == 1
        and isinstance(records[0], Mapping)
        and records[0].get("EventSource") == "aws:sns"
        and isinstance(records[0].get("Sns"), Mapping)
    )


def _is_eventbridge(event: object) -> bool:
    return isinstance(event, Mapping) and all(key in event for key in ("detail-type", "source", "detail"))


def classify(event: object) -> SourceType:
    """``sns`` (one-record SNS event), ``eventbridge`` (has detail-type, source, detail), else ``direct``."""
    if _is_sns(event):
        return "sns"
    if _is_eventbridge(event):
        return "eventbridge"
    return "direct"


def _sns(event: Any) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], event["Records"][0]["Sns"])


# --- the state itself ---------------------------------------------------------------------------------


def encode_state(state: RetryState) -> str:
    return json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse_state(value: object, where: str = RETRY_STATE_KEY) -> RetryState:
    """Validate a state object strictly; InvalidRetryState says which field is wrong."""
    if not isinstance(value, Mapping):
        raise InvalidRetryState(f"{where}: must be an object, got {json_kind(value)}")
    extra = sorted(set(value) - set(_STATE_KEYS))
    missing = [key for key in _STATE_KEYS if key not in value]
    if extra or missing:
        raise InvalidRetryState(f"{where}: unexpected keys {extra}, missing keys {missing}")
    if value["v"] != STATE_VERSION or isinstance(value["v"], bool):
        raise InvalidRetryState(f"{where}.v: unsupported version {value['v']!r} (this reads v1)")
    retry_id = value["id"]
    if not isinstance(retry_id, str) or not retry_id or len(retry_id) > _ID_LIMIT:
        raise InvalidRetryState(f"{where}.id: must be a non-empty string of at most {_ID_LIMIT} characters")
    attempt = value["attempt"]
    if isinstance(attempt, bool) or not isinstance(attempt, int) or not 2 <= attempt <= MAX_ATTEMPT:
        raise InvalidRetryState(
            f"{where}.attempt: must be an integer from 2 to {MAX_ATTEMPT}, got {attempt!r}"
        )
    first = value["first_failed_at"]
    try:
        parse_time(first if isinstance(first, str) else "")
    except ValueError:
        raise InvalidRetryState(
            f"{where}.first_failed_at: not a timestamp like 2026-11-30T10:00:00Z"
        ) from None
    delay = value["previous_delay_seconds"]
    if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= MAX_DELAY_SECONDS:
        raise InvalidRetryState(
            f"{where}.previous_delay_seconds: must be an integer from 0 to {MAX_DELAY_SECONDS}, got {delay!r}"
        )
    return {
        "v": STATE_VERSION,
        "id": retry_id,
        "attempt": attempt,
        "first_failed_at": first,
        "previous_delay_seconds": delay,
    }


def _parse_attribute(attribute: object) -> RetryState:
    where = f"Sns.MessageAttributes.{RETRY_STATE_KEY}"
    if not isinstance(attribute, Mapping) or attribute.get("Type") != "String":
        raise InvalidRetryState(f"{where}: must be a String attribute")
    text = attribute.get("Value")
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        raise InvalidRetryState(f"{where}: the value is not JSON") from None
    return parse_state(value, where)


# --- read / attach ------------------------------------------------------------------------------------


def read(event: Any) -> Carried:
    """Take the retry state off ``event``. Raises InvalidRetryState for a present but bad state."""
    kind = classify(event)
    if kind == "sns":
        sns = _sns(event)
        attributes = sns.get("MessageAttributes")
        if not isinstance(attributes, Mapping) or RETRY_STATE_KEY not in attributes:
            return Carried(event, None, kind)
        state = _parse_attribute(attributes[RETRY_STATE_KEY])
        rest = {k: v for k, v in attributes.items() if k != RETRY_STATE_KEY}
        record = {**event["Records"][0], "Sns": {**sns, "MessageAttributes": rest}}
        return Carried({**event, "Records": [record]}, state, kind)
    if kind == "eventbridge":
        if RETRY_STATE_KEY not in event:
            return Carried(event, None, kind)
        state = parse_state(event[RETRY_STATE_KEY])
        return Carried({k: v for k, v in event.items() if k != RETRY_STATE_KEY}, state, kind)
    if isinstance(event, Mapping) and RETRY_STATE_KEY in event:
        if set(event) != _WRAPPER_KEYS:
            raise InvalidRetryState(
                f"a direct-invoke payload may use the reserved key {RETRY_STATE_KEY!r} only in the "
                f"wrapper {{{RETRY_STATE_KEY!r}: <state>, 'payload': <event>}}"
            )
        return Carried(event["payload"], parse_state(event[RETRY_STATE_KEY]), kind)
    return Carried(event, None, kind)


def sns_attribute(state: RetryState) -> SnsMessageAttribute:
    return {"Type": "String", "Value": encode_state(state)}


def attach(event: Any, source_type: SourceType, state: RetryState) -> Any:
    """The event to deliver for the next attempt: ``event`` (as it first arrived) plus ``state``."""
    if source_type == "sns":
        sns = _sns(event)
        attributes = dict(sns.get("MessageAttributes") or {})
        attributes[RETRY_STATE_KEY] = sns_attribute(state)
        record = {**event["Records"][0], "Sns": {**sns, "MessageAttributes": attributes}}
        return {**event, "Records": [record]}
    if source_type == "eventbridge":
        return {**event, RETRY_STATE_KEY: dict(state)}
    return {RETRY_STATE_KEY: dict(state), "payload": event}

"""moto patches for EventBridge: one matcher for routing and TestEventPattern, AWS's limits and
event shape, rule targets delivered as EventBridge delivers them.

What moto 5.2 does that AWS does not (each fixed here, each shown by
tests/integration/test_selfheal_emulator.py):

- TestEventPattern answers without ``Result``; PutRule takes any pattern (no length limit, few checks);
- PutEvents takes entries of any size (AWS: the entries of one request together under 256 KB,
  counted as the "Calculating PutEvents event entry size" page says), routes to DISABLED rules and
  lets a rule with only a schedule expression match every event, writes ``time`` as a float and adds
  an ``ingestion-time`` field, and raises NotImplementedError (a 500 for the whole call) for a
  Lambda target;
- an InputTransformer output that is not JSON, or a string value placed without quotes, fails.

Here PutEvents checks the request, builds each event as EventBridge shows it (``version``, ``id``,
``detail-type``, ``source``, ``account``, ``time`` as ``2026-11-30T10:00:00Z``, ``region``,
``resources``, ``detail``), and routes it with :mod:`serverless_retry_tools.local.aws_rules.event_pattern` — the
same matcher TestEventPattern answers with — to every ENABLED rule of the bus. Each matching target
gets :func:`serverless_retry_tools.local.aws_rules.input_transform.target_input`: a Lambda function is invoked
asynchronously (queued for the runtime: :mod:`serverless_retry_tools.local.emulator.async_patches`; its resource
policy must allow events.amazonaws.com for the rule, as on AWS), an SQS queue or SNS topic gets a
message, another bus gets the event, a log group a log event. A target that cannot take the event
(it does not exist, the policy does not allow it, the message is refused) is an error EventBridge does
not retry: the event goes straight to the target's dead-letter queue (DeadLetterConfig) with
EventBridge's RULE_ARN / TARGET_ARN / ERROR_CODE / ERROR_MESSAGE attributes, or is dropped.
"""

from __future__ import annotations

import copy
import functools
import json
import sys
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from serverless_retry_tools.local.aws_rules.event_pattern import InvalidEventPattern, matches, parse_pattern
from serverless_retry_tools.local.aws_rules.input_transform import target_input
from serverless_retry_tools.local.aws_rules.lambda_async import accept_payload
from serverless_retry_tools.local.emulator.async_patches import enqueue_async, function_allows, logical_ms
from serverless_retry_tools.local.emulator.patch_types import Patch, PatchContext
from serverless_retry_tools.local.emulator.patching import Undo, replace

__all__ = ["PUT_EVENTS_MAX_BYTES", "entry_size", "patches"]

PUT_EVENTS_MAX_BYTES = 262_144
_ENABLED = ("ENABLED", "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS")
_TEST_EVENT_FIELDS = ("id", "account", "source", "time", "region", "resources", "detail-type")


def entry_size(entry: Mapping[str, Any]) -> int:
    """A PutEvents entry's size as EventBridge counts it (Time 14 bytes; Source, DetailType, Detail and
    each Resources entry by their UTF-8 bytes)."""
    size = 14 if entry.get("Time") is not None else 0
    for key in ("Source", "DetailType", "Detail"):
        size += len(str(entry.get(key) or "").encode())
    return size + sum(len(str(r).encode()) for r in entry.get("Resources") or [])


@functools.lru_cache(maxsize=1024)
def _pattern(raw: str) -> Mapping[str, Any]:
    return parse_pattern(raw)


def _iso_seconds(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _event_time(value: Any) -> str:
    if value is None or value == "":
        return _iso_seconds(datetime.fromtimestamp(logical_ms() / 1000, UTC))
    if isinstance(value, int | float):
        return _iso_seconds(datetime.fromtimestamp(float(value), UTC))
    return _iso_seconds(datetime.fromisoformat(str(value).replace("Z", "+00:00")))


def _entry_error(entry: Mapping[str, Any]) -> dict[str, str] | None:
    for key in ("Source", "DetailType", "Detail"):
        if not entry.get(key):
            return {
                "ErrorCode": "InvalidArgument",
                "ErrorMessage": f"Parameter {key} is not valid. Reason: {key} is a required argument.",
            }
    try:
        detail = json.loads(str(entry["Detail"]))
    except ValueError:
        detail = None
    if not isinstance(detail, dict):
        return {"ErrorCode": "MalformedDetail", "ErrorMessage": "Detail is malformed."}
    return None


# --- PutEvents --------------------------------------------------------------------------------------


def _events_put_events_routes_like_moto(_: PatchContext) -> Undo:
    from moto.events.exceptions import ValidationException
    from moto.events.models import EventsBackend

    def put_events(self: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(events) > 10:
            raise ValidationException(
                "1 validation error detected: Value '[PutEventsRequestEntry]' at 'entries' failed to "
                "satisfy constraint: Member must have length less than or equal to 10"
            )
        if sum(entry_size(e) for e in events) >= PUT_EVENTS_MAX_BYTES:
            raise ValidationException("Total size of the entries in the request is over the limit.")
        results: list[dict[str, Any]] = []
        for entry in events:
            error = _entry_error(entry)
            if error is not None:
                results.append(error)
                continue
            bus = self.describe_event_bus(self._normalize_event_bus_arn(entry.get("EventBusName")))
            event = {
                "version": "0",
                "id": str(uuid.uuid4()),
                "detail-type": entry["DetailType"],
                "source": entry["Source"],
                "account": self.account_id,
                "time": _event_time(entry.get("Time")),
                "region": self.region_name,
                "resources": list(entry.get("Resources") or []),
                "detail": json.loads(entry["Detail"]),
            }
            results.append({"EventId": event["id"]})
            route_event(bus, event)
        return results

    return replace(EventsBackend, "put_events", put_events)


def route_event(bus: Any, event: Mapping[str, Any]) -> None:
    """Deliver ``event`` to the targets of every enabled rule of ``bus`` whose pattern matches."""
    for rule in list(bus.rules.values()):
        raw = rule.event_pattern.dump() if rule.event_pattern is not None else None
        if rule.state not in _ENABLED or not raw:
            continue  # a rule with only a schedule expression never matches events
        try:
            pattern = _pattern(raw)
        except InvalidEventPattern:
            continue
        if not matches(pattern, event):
            continue
        for target in list(rule.targets):
            _deliver(rule, target, event)


class _TargetError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _deliver(rule: Any, target: Mapping[str, Any], event: Mapping[str, Any]) -> None:
    arn = str(target["Arn"])
    text = target_input(target, event, rule_arn=rule.arn, rule_name=rule.name, ingestion_time=event["time"])
    try:
        parts = arn.split(":")
        service, region, account = parts[2], parts[3], parts[4]
        if service == "lambda":
            _to_function(rule, arn, text)
        elif service == "sqs":
            _to_queue(arn, text, (target.get("SqsParameters") or {}).get("MessageGroupId"))
        elif service == "sns":
            from moto.sns.models import sns_backends

            sns_backends[account][region].publish(text, arn=arn)
        elif service == "events" and ":event-bus/" in arn:
            from moto.events.models import events_backends

            backend = events_backends[account][region]
            other = backend.describe_event_bus(arn.split(":event-bus/", 1)[1])
            route_event(other, event)
        elif service == "logs":
            _to_log_group(arn, text)
        else:
            _moto_target(rule, target, event)
    except _TargetError as exc:
        _dead_letter(rule, target, event, exc.code, str(exc))
    except Exception as exc:
        code = type(exc).__name__
        kind = "RESOURCE_NOT_FOUND" if "NotFound" in code or "DoesNotExist" in code else "SDK_CLIENT_ERROR"
        _dead_letter(rule, target, event, kind, f"{code}: {getattr(exc, 'message', None) or exc}")


def _to_function(rule: Any, arn: str, text: str) -> None:
    from moto.awslambda.models import lambda_backends

    parts = arn.split(":")
    region, account, name = parts[3], parts[4], parts[6]
    qualifier = parts[7] if len(parts) > 7 else None
    try:
        fn = lambda_backends[account][region].get_function(name, qualifier)
    except Exception as exc:
        raise _TargetError("RESOURCE_NOT_FOUND", f"Function not found: {arn}") from exc
    if not function_allows(fn, "events.amazonaws.com", rule.arn):
        raise _TargetError(
            "NO_PERMISSIONS",
            f"the resource policy of {arn} does not allow events.amazonaws.com to invoke it for {rule.arn}",
        )
    enqueue_async(fn, qualifier, accept_payload(text), "events")


def _to_queue(arn: str, text: str, group_id: str | None) -> None:
    from moto.sqs.models import sqs_backends

    _, _, _, region, account, name = arn.split(":", 5)
    backend = sqs_backends[account][region]
    if name not in backend.queues:
        raise _TargetError("RESOURCE_NOT_FOUND", f"Queue does not exist: {arn}")
    backend.send_message(name, text, group_id=group_id)


def _to_log_group(arn: str, text: str) -> None:
    from moto.logs.models import logs_backends

    _, _, _, region, account, rest = arn.split(":", 5)
    group = rest.removeprefix("log-group:").removesuffix(":*")
    stream = str(uuid.uuid4())
    backend = logs_backends[account][region]
    backend.create_log_stream(group, stream)
    backend.put_log_events(group, stream, [{"timestamp": logical_ms(), "message": text}])


def _moto_target(rule: Any, target: Mapping[str, Any], event: Mapping[str, Any]) -> None:
    """A target kind we do not deliver ourselves: moto's own code, for this one target."""
    from moto.events.models import EventPattern

    only = copy.copy(rule)
    only.targets = [target]
    only.event_pattern = EventPattern.load(None)
    only.send_to_targets(dict(event))


def _dead_letter(
    rule: Any, target: Mapping[str, Any], event: Mapping[str, Any], code: str, message: str
) -> None:
    dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
    print(
        f"serverless-retry emulator: rule {rule.arn} could not deliver event {event.get('id')} to "
        f"{target['Arn']} ({code}: {message}); "
        + (f"sent to {dlq}" if dlq else "dropped (the target has no DLQ)"),
        file=sys.stderr,
        flush=True,
    )
    if not dlq:
        return
    from moto.sqs.models import sqs_backends

    _, _, _, region, account, name = str(dlq).split(":", 5)
    attributes = {
        "RULE_ARN": rule.arn,
        "TARGET_ARN": str(target["Arn"]),
        "ERROR_CODE": code,
        "ERROR_MESSAGE": message[:1024],
        "RETRY_ATTEMPTS": "0",
    }
    sqs_backends[account][region].send_message(
        name,
        json.dumps(event, ensure_ascii=False),
        message_attributes={k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()},
    )


# --- PutRule and TestEventPattern -------------------------------------------------------------------


def _events_put_rule_takes_any_pattern(_: PatchContext) -> Undo:
    # PutRule accepts patterns EventBridge refuses (longer than 2,048 characters, unknown operators,
    # bad numeric ranges, ...): check them with the same parser routing uses.
    from moto.events.exceptions import InvalidEventPatternException
    from moto.events.models import EventsBackend

    original = EventsBackend.__dict__["put_rule"]

    def put_rule(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        pattern = kwargs.get("event_pattern")
        if pattern:
            try:
                parse_pattern(pattern)
            except InvalidEventPattern as exc:
                raise InvalidEventPatternException(exc.reason) from None
        return original(self, name, *args, **kwargs)

    return replace(EventsBackend, "put_rule", put_rule)


def _events_test_event_pattern_has_no_result(_: PatchContext) -> Undo:
    # TestEventPattern answers 200 with an empty body (no Result). Answer with the matcher PutEvents
    # routes with; an invalid pattern is InvalidEventPatternException, an event without the fields
    # TestEventPattern requires (id, account, source, time, region, resources, detail-type) a
    # ValidationException.
    from moto.events.exceptions import InvalidEventPatternException, ValidationException
    from moto.events.responses import EventsHandler

    def test_event_pattern(self: Any) -> str:
        try:
            pattern = parse_pattern(self._get_param("EventPattern"))
        except InvalidEventPattern as exc:
            raise InvalidEventPatternException(exc.reason) from None
        try:
            event = json.loads(self._get_param("Event") or "")
        except ValueError:
            raise ValidationException("Parameter Event is not valid.") from None
        missing = [f for f in _TEST_EVENT_FIELDS if not isinstance(event, dict) or f not in event]
        if missing:
            raise ValidationException(f"Parameter Event is not valid: missing {', '.join(missing)}.")
        return json.dumps({"Result": matches(pattern, event)})

    return replace(EventsHandler, "test_event_pattern", test_event_pattern)


def patches() -> list[Patch]:
    return [
        Patch(
            "events_put_events_routes_like_moto",
            "PutEvents: no 256 KB limit, DISABLED and schedule-only rules match, float time, a Lambda target "
            "fails the call, InputTransformer output not as EventBridge renders it, no target DLQ",
            _events_put_events_routes_like_moto,
        ),
        Patch(
            "events_put_rule_takes_any_pattern",
            "PutRule accepts event patterns EventBridge refuses (length, operators, ranges)",
            _events_put_rule_takes_any_pattern,
        ),
        Patch(
            "events_test_event_pattern_has_no_result",
            "TestEventPattern answers without a Result",
            _events_test_event_pattern_has_no_result,
        ),
    ]

"""moto patches for Lambda's asynchronous invocation: every async invoke goes to the local runtime.

moto answers Invoke(InvocationType=Event) and SNS -> Lambda subscriptions by trying to run the
function in Docker (or, without Docker, not at all), and keeps no event invoke configuration worth the
name. With these patches each asynchronous invocation — an Invoke with InvocationType=Event (the
Scheduler's Lambda targets and Lambda destinations use it too), an SNS delivery to a ``lambda``
subscription, an EventBridge rule's Lambda target (:mod:`serverless_retry_tools.local.emulator.events_patches`)
— is checked as Lambda checks it and written to an internal queue (``lambda_async.ASYNC_QUEUE_NAME``,
hidden from ListQueues) that the runtime drains (:mod:`serverless_retry_tools.local.runtime.async_runner`):
Lambda's own async queue, on the emulator's logical clock.

Registered in :data:`serverless_retry_tools.local.emulator.moto_patches.PATCHES`; each patch says what it
corrects, and tests/integration/test_selfheal_emulator.py shows raw moto's gap and the fix.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

from serverless_retry_tools.local.aws_rules.lambda_async import (
    ASYNC_QUEUE_NAME,
    AsyncInvokeRejected,
    InvalidEventInvokeConfig,
    Queued,
    accept_payload,
    validate_event_invoke_config,
)
from serverless_retry_tools.local.emulator.patch_types import Patch, PatchContext
from serverless_retry_tools.local.emulator.patching import Undo, chain, replace

__all__ = ["enqueue_async", "function_allows", "logical_ms", "patches"]

# The internal queue carries whole payloads (1 MB) plus our wrapper: beyond SQS's own limit.
_INTERNAL_QUEUE_MAX_BYTES = 4 * 1024 * 1024
_queue_lock = threading.Lock()
_state: dict[str, Any] = {"clock": None}  # the emulator's logical clock, set when the patches are installed


def logical_ms() -> int:
    """The emulator's logical now in milliseconds (real time without a clock)."""
    clock = _state["clock"]
    now = clock.now() if clock is not None else time.time()
    return int(now * 1000)


def _iso_ms(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _error(code: str, message: str, status: int = 400) -> Exception:
    from moto.core.exceptions import JsonRESTError

    error = JsonRESTError(code, message)
    error.code = status
    return cast(Exception, error)


# --- the internal queue ------------------------------------------------------------------------------


def _internal_queue(account: str, region: str) -> Any:
    from moto.sqs.models import sqs_backends

    backend = sqs_backends[account][region]
    with _queue_lock:
        queue = backend.queues.get(ASYNC_QUEUE_NAME)
        if queue is None:
            queue = backend.create_queue(ASYNC_QUEUE_NAME, MessageRetentionPeriod="1209600")
            setattr(queue, "maximum_message_size", _INTERNAL_QUEUE_MAX_BYTES)  # noqa: B010 - not in moto's stubs
    return queue


def _unqualified(arn: str) -> str:
    parts = arn.split(":")
    return ":".join(parts[:7])


def enqueue_async(fn: Any, qualifier: str | None, payload: str, trigger: str) -> str:
    """Queue an accepted async invocation of moto function ``fn``; returns its request id."""
    arn = _unqualified(fn.function_arn)
    _, _, _, region, account, *_ = arn.split(":")
    request_id = str(uuid.uuid4())
    body: Queued = {
        "v": 1,
        "function_arn": arn,
        "qualifier": qualifier or "$LATEST",
        "request_id": request_id,
        "payload": payload,
        "enqueued_ms": logical_ms(),
        "invoke_count": 0,
        "trigger": trigger,
    }
    from moto.sqs.models import sqs_backends

    _internal_queue(account, region)
    sqs_backends[account][region].send_message(ASYNC_QUEUE_NAME, json.dumps(body, separators=(",", ":")))
    return request_id


def function_allows(fn: Any, service: str, source_arn: str) -> bool:
    """Whether the function's resource policy lets ``service`` invoke it for ``source_arn`` (an
    EventBridge rule or an SNS topic needs this statement: aws_lambda_permission)."""
    for statement in getattr(fn.policy, "statements", []) or []:
        if statement.get("Effect", "Allow") != "Allow":
            continue
        principal = statement.get("Principal")
        services = principal.get("Service") if isinstance(principal, Mapping) else principal
        services = services if isinstance(services, list) else [services]
        if service not in services and "*" not in services:
            continue
        actions = statement.get("Action")
        actions = actions if isinstance(actions, list) else [actions]
        if not {"lambda:InvokeFunction", "lambda:*", "*"} & set(actions):
            continue
        condition = statement.get("Condition") or {}
        wanted = [
            str(value)
            for operator in ("ArnLike", "ArnEquals", "StringEquals", "StringLike")
            for key, value in (condition.get(operator) or {}).items()
            if key.lower() == "aws:sourcearn"
        ]
        if not wanted or any(_arn_like(w, source_arn) for w in wanted):
            return True
    return False


def _arn_like(pattern: str, arn: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(arn, pattern)


# --- Invoke(InvocationType=Event) --------------------------------------------------------------------


def _lambda_event_invoke_runs_in_docker(_: PatchContext) -> Undo:
    # Invoke with InvocationType=Event runs the function in Docker (or fails without it) and never
    # retries or sends a destination record. Check it as Lambda does (payload <= 1 MB of JSON) and
    # queue it for the runtime; answer 202 at once, as Lambda does.
    from moto.awslambda.models import LambdaBackend

    original = LambdaBackend.__dict__["invoke"]

    def invoke(  # noqa: PLR0917 - moto calls it positionally
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> Any:
        if str(headers.get("X-Amz-Invocation-Type") or "") != "Event":
            return original(self, function_name, qualifier, body, headers, response_headers)
        fn = self.get_function(function_name, qualifier)
        try:
            payload = accept_payload(body)
        except AsyncInvokeRejected as exc:
            raise _error(exc.code, exc.message, exc.status) from None
        request_id = enqueue_async(fn, _qualifier(function_name, qualifier), payload, "invoke")
        response_headers["x-amzn-RequestId"] = request_id
        response_headers["Content-Length"] = "0"
        return b""

    return replace(LambdaBackend, "invoke", invoke)


def _qualifier(function_name: str, qualifier: str | None) -> str | None:
    """The qualifier of ``name``, ``name:qualifier``, a partial or a full ARN, else ``qualifier``."""
    parts = function_name.split(":")
    if function_name.startswith("arn:"):
        return parts[7] if len(parts) > 7 else qualifier
    if len(parts) in (2, 4):  # name:qualifier, account:function:name:qualifier
        return parts[-1]
    return qualifier


# --- event invoke configuration ------------------------------------------------------------------------


def _lambda_event_invoke_config_put_appends(_: PatchContext) -> Undo:
    # PutFunctionEventInvokeConfig appends, so GetFunctionEventInvokeConfig keeps answering with the
    # first configuration ever put; Update replaces instead of merging; the retry/age minimums and
    # the destination types are not checked. Put replaces, Update merges, both check as Lambda does.
    from moto.awslambda.models import EventInvokeConfig, LambdaBackend

    def put(self: Any, function_name: str, config: dict[str, Any]) -> dict[str, Any]:
        try:
            validate_event_invoke_config(config)
        except InvalidEventInvokeConfig as exc:
            raise _error(exc.code, exc.message) from None
        fn = self.get_function(function_name)
        clean = {k: v for k, v in config.items() if k in _CONFIG_KEYS}
        # LastModified in epoch seconds, as the API returns it (moto stores an ISO string).
        modified: Any = time.time()
        event_config = EventInvokeConfig(_unqualified(fn.function_arn), modified, clean)
        fn.event_invoke_config = [event_config]
        response: dict[str, Any] = event_config.response()
        return response

    def update(self: Any, function_name: str, config: dict[str, Any]) -> dict[str, Any]:
        fn = self.get_function(function_name)
        merged: dict[str, Any] = dict(fn.event_invoke_config[0].config) if fn.event_invoke_config else {}
        for key, value in config.items():
            if key == "DestinationConfig" and isinstance(value, Mapping):
                merged["DestinationConfig"] = {**(merged.get("DestinationConfig") or {}), **value}
            elif key in _CONFIG_KEYS:
                merged[key] = value
        result: dict[str, Any] = put(self, function_name, merged)
        return result

    return chain(
        [
            replace(LambdaBackend, "put_function_event_invoke_config", put),
            replace(LambdaBackend, "update_function_event_invoke_config", update),
        ]
    )


_CONFIG_KEYS = ("MaximumRetryAttempts", "MaximumEventAgeInSeconds", "DestinationConfig")


def _lambda_drops_dead_letter_config(_: PatchContext) -> Undo:
    # CreateFunction / UpdateFunctionConfiguration drop DeadLetterConfig and GetFunction never returns
    # it: the function's own DLQ for discarded async events is lost (and Terraform's
    # dead_letter_config shows a change on every plan). Keep it and return it as Lambda does.
    from moto.awslambda.models import LambdaFunction

    init = LambdaFunction.__dict__["__init__"]
    get_configuration = LambdaFunction.__dict__["get_configuration"]
    update_configuration = LambdaFunction.__dict__["update_configuration"]

    def new_init(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        init(self, account_id, spec, *args, **kwargs)
        self.dead_letter_config = dict(spec.get("DeadLetterConfig") or {})

    def new_get_configuration(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        config: dict[str, Any] = get_configuration(self, *args, **kwargs)
        target = (getattr(self, "dead_letter_config", None) or {}).get("TargetArn")
        if target:
            config["DeadLetterConfig"] = {"TargetArn": target}
        return config

    def new_update_configuration(self: Any, updates: dict[str, Any]) -> dict[str, Any]:
        if "DeadLetterConfig" in updates:
            self.dead_letter_config = dict(updates["DeadLetterConfig"] or {})
        result: dict[str, Any] = update_configuration(self, updates)
        return result

    return chain(
        [
            replace(LambdaFunction, "__init__", new_init),
            replace(LambdaFunction, "get_configuration", new_get_configuration),
            replace(LambdaFunction, "update_configuration", new_update_configuration),
        ]
    )


# --- SNS -> Lambda --------------------------------------------------------------------------------------


def _sns_event(subscription: Any, message: str, message_id: str, subject: str | None, attributes: Any) -> str:
    """The event Lambda receives from an SNS subscription (Lambda developer guide, "Using Lambda
    with Amazon SNS"): one record; Subject null when none; attributes as {Type, Value}."""
    topic_arn = subscription.topic.arn
    region = topic_arn.split(":")[3]
    digest = hashlib.sha256(f"{message_id}\n{message}".encode()).digest()
    sns = {
        "SignatureVersion": "1",
        "Timestamp": _iso_ms(logical_ms()),
        # Not a verifiable signature (there is no SNS signing key here): functions that verify
        # SNS signatures cannot be tested locally.
        "Signature": base64.b64encode(digest * 8).decode(),
        "SigningCertUrl": f"https://sns.{region}.amazonaws.com/SimpleNotificationService-"
        f"{hashlib.md5(topic_arn.encode()).hexdigest()}.pem",
        "MessageId": message_id,
        "Message": message,
        "MessageAttributes": {
            name: {"Type": str(value.get("Type")), "Value": str(value.get("Value"))}
            for name, value in (attributes or {}).items()
        },
        "Type": "Notification",
        "UnsubscribeUrl": f"https://sns.{region}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn={subscription.arn}",
        "TopicArn": topic_arn,
        "Subject": subject or None,
    }
    event = {
        "Records": [
            {
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription.arn,
                "EventSource": "aws:sns",
                "Sns": sns,
            }
        ]
    }
    return json.dumps(event, ensure_ascii=False)


def _sns_lambda_subscription_runs_in_docker(_: PatchContext) -> Undo:
    # A publish to a topic with a lambda subscription runs the function in Docker with a fixed,
    # fake event (MessageId 95df01b4-..., attributes "Test"/"TestBinary", TopicArn arn:aws:sns:EXAMPLE).
    # SNS invokes the subscribed function asynchronously with the real message: queue it for the
    # runtime, after the subscription's filter policy, as SNS does. SNS needs the function's resource
    # policy to allow sns.amazonaws.com for the topic; without it the delivery fails (to the
    # subscription's dead-letter queue if it has one).
    from moto.awslambda.models import lambda_backends
    from moto.sns.models import Subscription

    original = Subscription.__dict__["publish"]

    def publish(self: Any, message: str, message_id: str, *args: Any, **kwargs: Any) -> None:
        if self.protocol != "lambda":
            original(self, message, message_id, *args, **kwargs)
            return
        subject = kwargs.get("subject", args[0] if args else None)
        attributes = kwargs.get("message_attributes", args[1] if len(args) > 1 else None)
        structure = kwargs.get("message_structure")
        if self._filter_policy_matcher is not None and not self._filter_policy_matcher.matches(
            attributes, message
        ):
            return
        if structure == "json":
            message = self._parse_message_structure(message, self.protocol)
        parts = self.endpoint.split(":")
        region, account, name = parts[3], parts[4], parts[6]
        qualifier = parts[7] if len(parts) > 7 else None
        try:
            fn = lambda_backends[account][region].get_function(name, qualifier)
            if not function_allows(fn, "sns.amazonaws.com", self.topic.arn):
                raise PermissionError(
                    f"the resource policy of {fn.function_arn} does not allow sns.amazonaws.com to invoke it "
                    f"for {self.topic.arn} (aws_lambda_permission missing?)"
                )
            payload = accept_payload(_sns_event(self, message, message_id, subject, attributes))
            enqueue_async(fn, qualifier, payload, "sns")
        except Exception as exc:  # delivery failed: the subscription's DLQ, else the message is lost
            _sns_delivery_failed(
                self, message=message, message_id=message_id, subject=subject, attributes=attributes, exc=exc
            )

    return replace(Subscription, "publish", publish)


def _sns_raw_delivery_binary_attributes_break_receive(_: PatchContext) -> Undo:
    # With RawMessageDelivery, SNS copies a Binary attribute's base64 text into the SQS message as
    # its BinaryValue; moto's SQS then fails every ReceiveMessage that asks for attributes with a
    # 500 (and, with the SDK's retries, the message is received and lost). SNS delivers the bytes.
    from moto.sns.models import Subscription

    original = Subscription.__dict__["publish"]

    def publish(self: Any, message: str, message_id: str, *args: Any, **kwargs: Any) -> None:
        raw = self.protocol == "sqs" and str(self.attributes.get("RawMessageDelivery", "")).lower() == "true"
        attributes = kwargs.get("message_attributes")
        if raw and attributes:
            kwargs["message_attributes"] = {
                name: (
                    {**value, "Value": base64.b64decode(value["Value"])}
                    if str(value.get("Type", "")).startswith("Binary") and isinstance(value.get("Value"), str)
                    else value
                )
                for name, value in attributes.items()
            }
        original(self, message, message_id, *args, **kwargs)

    return replace(Subscription, "publish", publish)


def _sns_delivery_failed(
    subscription: Any, *, message: str, message_id: str, subject: str | None, attributes: Any, exc: Exception
) -> None:
    print(
        f"serverless-retry emulator: SNS delivery of {message_id} to {subscription.endpoint} failed: {exc}",
        file=sys.stderr,
        flush=True,
    )
    redrive = subscription.attributes.get("RedrivePolicy")
    if not redrive:
        return
    from moto.sqs.models import sqs_backends

    dlq = str(json.loads(redrive).get("deadLetterTargetArn", ""))
    _, _, _, region, account, queue = dlq.split(":", 5)
    body = json.dumps(subscription.get_post_data(message, message_id, subject, message_attributes=attributes))
    sqs_backends[account][region].send_message(queue, body)


def _sns_publish_size_ignores_attributes(_: PatchContext) -> Undo:
    # SNS takes at most 256 KB per message *including* its attributes (name, type and value of each);
    # moto counts the message's characters only.
    from moto.sns.exceptions import InvalidParameterValue
    from moto.sns.models import SNSBackend

    original = SNSBackend.__dict__["publish"]

    def publish(self: Any, message: str, arn: str | None, *args: Any, **kwargs: Any) -> str:
        attributes = kwargs.get("message_attributes") or (args[2] if len(args) > 2 else None) or {}
        size = len(str(message).encode())
        for name, value in attributes.items():
            size += (
                len(name.encode())
                + len(str(value.get("Type", "")).encode())
                + len(str(value.get("Value", "")).encode())
            )
        if size > _SNS_MAX_BYTES:
            raise InvalidParameterValue("Invalid parameter: Message too long")
        result: str = original(self, message, arn, *args, **kwargs)
        return result

    return replace(SNSBackend, "publish", publish)


_SNS_MAX_BYTES = 262_144


# --- the internal queue stays internal ---------------------------------------------------------------


def _sqs_lists_internal_queue(_: PatchContext) -> Undo:
    # Not a moto gap: the emulator's own async-invocation queue must not show in users' ListQueues.
    from moto.sqs.models import SQSBackend

    original = SQSBackend.__dict__["list_queues"]

    def list_queues(self: Any, queue_name_prefix: str) -> list[Any]:
        return [q for q in original(self, queue_name_prefix) if q.name != ASYNC_QUEUE_NAME]

    return replace(SQSBackend, "list_queues", list_queues)


def _install_clock(ctx: PatchContext) -> None:
    _state["clock"] = getattr(ctx, "clock", None)


def _with_clock(install: Callable[[PatchContext], Undo]) -> Callable[[PatchContext], Undo]:
    def wrapped(ctx: PatchContext) -> Undo:
        _install_clock(ctx)
        return install(ctx)

    return wrapped


def patches() -> list[Patch]:
    return [
        Patch(
            "lambda_event_invoke_runs_in_docker",
            "Invoke(InvocationType=Event) runs the function in Docker: no payload check, no retries, no destinations",
            _with_clock(_lambda_event_invoke_runs_in_docker),
        ),
        Patch(
            "lambda_event_invoke_config_put_appends",
            "PutFunctionEventInvokeConfig appends (Get keeps the first), Update does not merge, limits and "
            "destination types are not checked",
            _lambda_event_invoke_config_put_appends,
        ),
        Patch(
            "lambda_drops_dead_letter_config",
            "Lambda drops DeadLetterConfig (the function's own DLQ for discarded async events)",
            _lambda_drops_dead_letter_config,
        ),
        Patch(
            "sns_lambda_subscription_runs_in_docker",
            "SNS delivers to a lambda subscription by running the function in Docker with a fixed fake event",
            _with_clock(_sns_lambda_subscription_runs_in_docker),
        ),
        Patch(
            "sns_raw_delivery_binary_attributes_break_receive",
            "SNS raw delivery of a Binary attribute makes every ReceiveMessage of that SQS message fail (500)",
            _sns_raw_delivery_binary_attributes_break_receive,
        ),
        Patch(
            "sns_publish_size_ignores_attributes",
            "Publish counts only the message against SNS's 256 KB, not its attributes",
            _sns_publish_size_ignores_attributes,
        ),
        Patch(
            "sqs_lists_internal_queue",
            "(emulator-internal) the async-invocation queue is hidden from ListQueues",
            _sqs_lists_internal_queue,
        ),
    ]

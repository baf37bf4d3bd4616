"""Documented AWS constraints that moto 5.2 does not enforce, enforced in the emulator child.

Each is a :class:`~serverless_retry_tools.local.emulator.patch_types.Patch` like the compatibility patches
(named for the gap, one change, undoable), and fails the call at the step AWS fails it, with AWS's
error code and, where AWS documents or is known to return one, its message. The fidelity table
(docs/local-emulator.md) lists each with its test; ``tests/integration/test_moto_patches.py`` shows raw moto accepting
what AWS refuses and the patched emulator refusing it.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from serverless_retry_tools.local.emulator import s3_notifications
from serverless_retry_tools.local.emulator.patching import Undo, chain, replace

__all__ = ["FIDELITY_PATCHES"]


# SendMessageBatch: "the maximum total payload size (the sum of the individual lengths of all of the
# batched messages)" is 1 MiB; a message's size counts its body and its attributes.
MAX_BATCH_BYTES = 1_048_576
MAX_MESSAGE_ATTRIBUTES = 10
# Lambda event source mappings on SQS (services-sqs-parameters, services-sqs-configure).
MAX_BATCH_SIZE_STANDARD = 10_000
MAX_BATCH_SIZE_FIFO = 10
MAX_BATCHING_WINDOW = 300


# --- SQS -----------------------------------------------------------------------------------------


def _attribute_value_bytes(value: Mapping[str, Any]) -> int:
    if "BinaryValue" in value and value["BinaryValue"] is not None:
        raw = value["BinaryValue"]
        if isinstance(raw, bytes):
            return len(raw)
        try:
            return len(base64.b64decode(str(raw), validate=True))
        except (binascii.Error, ValueError):
            return len(str(raw).encode())
    return len(str(value.get("StringValue") or "").encode())


def message_bytes(body: str, attributes: Mapping[str, Mapping[str, Any]] | None) -> int:
    """A message's size as SQS counts it: the UTF-8 body plus each attribute's name, type and value."""
    size = len(body.encode())
    for name, value in (attributes or {}).items():
        size += (
            len(name.encode()) + len(str(value.get("DataType", "")).encode()) + _attribute_value_bytes(value)
        )
    return size


def _sqs_message_limits_unchecked(_: Any) -> Undo:
    # moto measures a message by len(body) in characters, ignores its attributes, and accepts any
    # number of attributes; SQS counts UTF-8 bytes of body + attributes against the queue's
    # MaximumMessageSize (and the 1 MiB batch total), and takes at most 10 attributes.
    from moto.sqs.exceptions import BatchRequestTooLong, InvalidParameterValue
    from moto.sqs.models import SQSBackend

    send_message = SQSBackend.__dict__["send_message"]
    send_message_batch = SQSBackend.__dict__["send_message_batch"]

    def check(queue: Any, body: str, attributes: Mapping[str, Any] | None) -> int:
        if attributes and len(attributes) > MAX_MESSAGE_ATTRIBUTES:
            raise InvalidParameterValue(
                f"Number of message attributes [{len(attributes)}] exceeds the allowed maximum "
                f"[{MAX_MESSAGE_ATTRIBUTES}]."
            )
        size = message_bytes(body, attributes)
        if size > queue.maximum_message_size:
            raise InvalidParameterValue(
                "One or more parameters are invalid. Reason: Message must be shorter than "
                f"{queue.maximum_message_size} bytes."
            )
        return size

    def new_send_message(self: Any, queue_name: str, message_body: str, *args: Any, **kwargs: Any) -> Any:
        check(self.get_queue(queue_name), message_body, kwargs.get("message_attributes"))
        return send_message(self, queue_name, message_body, *args, **kwargs)

    def new_send_message_batch(self: Any, queue_name: str, entries: dict[str, dict[str, Any]]) -> Any:
        queue = self.get_queue(queue_name)
        total = sum(
            check(queue, entry["MessageBody"], entry.get("MessageAttributes")) for entry in entries.values()
        )
        if total > MAX_BATCH_BYTES:
            raise BatchRequestTooLong(total)
        return send_message_batch(self, queue_name, entries)

    return chain(
        [
            replace(SQSBackend, "send_message", new_send_message),
            replace(SQSBackend, "send_message_batch", new_send_message_batch),
        ]
    )


def _sqs_fifo_redelivers_group_last_first(_: Any) -> Undo:
    # When a received FIFO batch comes back after its visibility timeout, moto's receive loop drops
    # each returning message from "pending" one at a time and recomputes the pending groups each
    # time: the group stays pending until its *last* message is reached, so that one is delivered
    # first. SQS delivers a group strictly in order. Fix: a message that is visible again is not
    # pending (drop them all before the loop), and a group is pending only while one of its
    # messages is really in flight.
    from moto.sqs.models import Queue, SQSBackend

    receive_message = SQSBackend.__dict__["receive_message"]

    def pending_message_groups(self: Any) -> set[str]:
        return {m.group_id for m in self._pending_messages if m.group_id is not None and not m.visible}

    def new_receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        queue = self.get_queue(queue_name)
        for message in [m for m in queue.pending_messages if m.visible]:
            queue.pending_messages.discard(message)
        return receive_message(self, queue_name, *args, **kwargs)

    return chain(
        [
            replace(Queue, "pending_message_groups", property(pending_message_groups)),
            replace(SQSBackend, "receive_message", new_receive_message),
        ]
    )


DEAD_LETTER_SOURCE = "DeadLetterQueueSourceArn"


def _sqs_dead_letter_source_arn_missing(_: Any) -> Undo:
    # When a queue's redrive policy moves a message to its dead-letter queue (on the receive after
    # maxReceiveCount), SQS records where it came from in the DeadLetterQueueSourceArn system
    # attribute, which ReceiveMessage returns when asked for it (by name or "All"), and a move into a
    # FIFO dead-letter queue takes the message id as its deduplication id (two messages that shared a
    # deduplication id are both kept). moto moves the message object as it is and never returns the
    # attribute, so nothing can tell where a dead-lettered message came from (ops commands, a move
    # task back to each message's source).
    from moto.sqs.models import Queue, SQSBackend
    from moto.sqs.responses import SQSResponse

    receiving = threading.local()  # the queue this thread is receiving from: moto moves inside receive
    receive_message = SQSBackend.__dict__["receive_message"]
    add_message = Queue.__dict__["add_message"]
    respond = SQSResponse.__dict__["receive_message"]

    def new_receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        receiving.queue = self.get_queue(queue_name)
        try:
            return receive_message(self, queue_name, *args, **kwargs)
        finally:
            receiving.queue = None

    def new_add_message(self: Any, message: Any) -> None:
        source = getattr(receiving, "queue", None)
        if source is not None and source is not self and source.dead_letter_queue is self:
            message.system_attributes = {
                **(message.system_attributes or {}),
                DEAD_LETTER_SOURCE: {"DataType": "String", "StringValue": source.queue_arn},
            }
            if self.fifo_queue:
                message.deduplication_id = message.id
        add_message(self, message)

    def new_respond(self: Any) -> Any:
        result = respond(self)
        asked = {
            *(self._get_param("AttributeNames") or []),
            *(self._get_param("MessageSystemAttributeNames") or []),
        }
        messages = (getattr(result, "result", None) or {}).get("Messages") or []
        if not messages or not asked & {"All", DEAD_LETTER_SOURCE}:
            return result
        queue = self.sqs_backend.get_queue(self._get_queue_name())
        by_id = {m.id: m for m in list(queue._messages)}
        for reply in messages:
            stored = by_id.get(reply["MessageId"])
            source = (stored.system_attributes or {}).get(DEAD_LETTER_SOURCE) if stored is not None else None
            if source:
                reply.setdefault("Attributes", {})[DEAD_LETTER_SOURCE] = source["StringValue"]
        return result

    return chain(
        [
            replace(SQSBackend, "receive_message", new_receive_message),
            replace(Queue, "add_message", new_add_message),
            replace(SQSResponse, "receive_message", new_respond),
        ]
    )


# --- DynamoDB ------------------------------------------------------------------------------------

# Every backend call that reads or writes items: one at a time, as DynamoDB applies each item write
# atomically (a condition and its write are one step).
_DYNAMODB_ITEM_CALLS = (
    "put_item",
    "get_item",
    "update_item",
    "delete_item",
    "transact_write_items",
    "transact_get_items",
    "batch_write_item",
    "batch_get_item",
    "execute_transaction",
    "batch_execute_statement",
)


def _dynamodb_item_writes_not_atomic(_: Any) -> Undo:
    # DynamoDB evaluates a write's condition and applies the write as one atomic step per item
    # ("conditional writes ... succeed only if the item attributes meet one or more expected
    # conditions"; concurrent writers to one item are serialised). moto's server handles requests on
    # threads and its backend reads the item, checks the condition and stores the result with no
    # lock: two concurrent `SET k = if_not_exists(k, :v)` both see no item and each returns its own
    # value, two conditional claims can both succeed. On the emulator that split the envelope
    # signing key between Lambda instances started together (copies judged forged). Fix: one lock
    # around the backend's item calls.
    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()

    def serialised(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            with lock:
                return method(self, *args, **kwargs)

        call.__name__ = method.__name__
        return call

    return chain(
        [
            replace(DynamoDBBackend, name, serialised(DynamoDBBackend.__dict__[name]))
            for name in _DYNAMODB_ITEM_CALLS
        ]
    )


# --- Lambda --------------------------------------------------------------------------------------

_FUNCTION_REF = re.compile(
    r"^(?:arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:)?(?:\d{12}:)?(?:function:)?([a-zA-Z0-9_.-]+)(?::([$a-zA-Z0-9_.-]+))?$"
)


def function_ref(value: str) -> tuple[str, str | None]:
    """(name, qualifier) of a function name, partial ARN or ARN, as Lambda reads FunctionName."""
    match = _FUNCTION_REF.match(value or "")
    if match is None:
        return value, None
    return match.group(1), match.group(2)


def _lambda_list_event_source_mappings_by_name_misses_arns(_: Any) -> Undo:
    # ListEventSourceMappings(FunctionName=X) compares X with the FunctionName string the mapping
    # was created with, so a mapping created with the function's ARN is not found by its name (and
    # the reverse). Lambda accepts a name, a partial ARN or an ARN on both calls and matches the
    # function they name.
    from moto.awslambda.models import LambdaBackend

    original = LambdaBackend.__dict__["list_event_source_mappings"]

    def list_event_source_mappings(self: Any, event_source_arn: str, function_name: str) -> Any:
        esms = original(self, event_source_arn, None)
        if not function_name:
            return esms
        name, qualifier = function_ref(function_name)
        found = []
        for esm in esms:
            esm_name, esm_qualifier = function_ref(esm.function_arn)
            if esm_name == name and (qualifier is None or qualifier == esm_qualifier):
                found.append(esm)
        return found

    return replace(LambdaBackend, "list_event_source_mappings", list_event_source_mappings)


_LAYER_VERSION_ARN = re.compile(
    r"^arn:[a-zA-Z0-9-]+:lambda:([a-z0-9-]+):(\d{12}):layer:([a-zA-Z0-9_-]+):([0-9]+)$"
)


def _lambda_unknown_layer_version_is_not_found(_: Any) -> Undo:
    # CreateFunction / UpdateFunctionConfiguration with a layer version that does not exist: AWS
    # refuses with InvalidParameterValueException (400) "Layer version <arn> does not exist."; moto
    # answers ResourceNotFoundException (404), and finds a layer by name alone, so another region's
    # or account's ARN of a same-named layer passes. Here a layer of the function's own account and
    # region must exist exactly; another account's (such as AWS's public layers, which the emulator
    # cannot hold) is left to the runtime, which refuses to start the function without it.
    from moto.awslambda.exceptions import InvalidParameterValueException
    from moto.awslambda.models import LambdaFunction, lambda_backends

    original = LambdaFunction.__dict__["_get_layers_data"]

    def get_layers_data(self: Any, arns: list[str]) -> Any:
        backend = lambda_backends[self.account_id][self.region]
        out = []
        for arn in arns:  # in the function's order, which is the order Lambda extracts them in
            found = _LAYER_VERSION_ARN.match(arn)
            if found is not None and (found.group(1), found.group(2)) != (self.region, self.account_id):
                out.append({"Arn": arn, "CodeSize": 0})
                continue
            if found is not None and backend.layers_versions_by_arn(arn) is None:
                raise InvalidParameterValueException(f"Layer version {arn} does not exist.")
            out += original(self, [arn])
        return out

    return replace(LambdaFunction, "_get_layers_data", get_layers_data)


def _lambda_event_source_mapping_skips_sqs_rules(_: Any) -> Undo:
    # CreateEventSourceMapping / UpdateEventSourceMapping on an SQS queue: Lambda refuses a queue
    # whose visibility timeout is shorter than the function's timeout, a batch size above 10 without
    # a batching window, a batching window on a FIFO queue or above 300 s, and a FIFO batch above 10.
    # moto checks none of it (the FIFO batch size fails with a ValueError: an HTTP 500).
    from moto.awslambda.exceptions import InvalidParameterValueException
    from moto.awslambda.models import LambdaBackend
    from moto.sqs.models import sqs_backends

    create = LambdaBackend.__dict__["create_event_source_mapping"]
    update = LambdaBackend.__dict__["update_event_source_mapping"]

    def queue_for(backend: Any, arn: str) -> Any:
        if str(arn).split(":")[2:3] != ["sqs"]:
            return None
        for queue in sqs_backends[backend.account_id][backend.region_name].queues.values():
            if queue.queue_arn == arn:
                return queue
        return None

    def check(backend: Any, queue: Any, function_name: str, batch_size: Any, window: Any) -> None:
        fifo = bool(queue.fifo_queue)
        size = int(batch_size) if batch_size is not None else 10
        seconds = int(window) if window is not None else 0
        limit = MAX_BATCH_SIZE_FIFO if fifo else MAX_BATCH_SIZE_STANDARD
        if not 1 <= size <= limit:
            raise InvalidParameterValueException(
                f"BatchSize must be between 1 and {limit} for {'FIFO' if fifo else 'standard'} SQS queues."
            )
        if fifo and seconds:
            raise InvalidParameterValueException("Batching window is not supported for FIFO queues.")
        if not 0 <= seconds <= MAX_BATCHING_WINDOW:
            raise InvalidParameterValueException(
                f"MaximumBatchingWindowInSeconds must be between 0 and {MAX_BATCHING_WINDOW}."
            )
        if size > 10 and seconds < 1:
            raise InvalidParameterValueException(
                "Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10"
            )
        function = backend.get_function(function_name)
        if int(queue.visibility_timeout) < int(function.timeout):
            raise InvalidParameterValueException(
                f"Queue visibility timeout: {int(queue.visibility_timeout)} seconds is less than Function "
                f"timeout: {int(function.timeout)} seconds"
            )

    def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> Any:
        queue = queue_for(self, spec.get("EventSourceArn", ""))
        if queue is not None and spec.get("FunctionName"):
            check(
                self,
                queue,
                spec["FunctionName"],
                spec.get("BatchSize"),
                spec.get("MaximumBatchingWindowInSeconds"),
            )
        return create(self, spec)

    def update_event_source_mapping(self: Any, uuid: str, spec: dict[str, Any]) -> Any:
        esm = self.get_event_source_mapping(uuid)
        queue = queue_for(self, esm.event_source_arn) if esm is not None else None
        if queue is not None:
            check(
                self,
                queue,
                spec.get("FunctionName") or esm.function_arn,
                spec.get("BatchSize", esm.batch_size),
                spec.get("MaximumBatchingWindowInSeconds", esm.max_batch_window),
            )
        return update(self, uuid, spec)

    return chain(
        [
            replace(LambdaBackend, "create_event_source_mapping", create_event_source_mapping),
            replace(LambdaBackend, "update_event_source_mapping", update_event_source_mapping),
        ]
    )


# --- Lambda event source mappings on streams -------------------------------------------------------

# CreateEventSourceMapping's API reference (request parameters) and services-kinesis-parameters /
# services-ddb-params: BatchSize 1-10,000, MaximumBatchingWindowInSeconds 0-300, ParallelizationFactor
# 1-10, MaximumRetryAttempts -1-10,000, MaximumRecordAgeInSeconds -1 or 60-604,800 (-1: infinite),
# StartingPosition required for Kinesis and DynamoDB Streams (AT_TIMESTAMP: Kinesis only).
STREAM_RANGES: dict[str, tuple[int, int]] = {
    "BatchSize": (1, 10_000),
    "MaximumBatchingWindowInSeconds": (0, 300),
    "ParallelizationFactor": (1, 10),
    "MaximumRetryAttempts": (-1, 10_000),
    "MaximumRecordAgeInSeconds": (-1, 604_800),
}
MIN_RECORD_AGE = 60
STREAM_STARTING_POSITIONS = {
    "kinesis": ("TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"),
    "dynamodb": ("TRIM_HORIZON", "LATEST"),
}


def stream_mapping_errors(kind: str, spec: Mapping[str, Any], *, creating: bool) -> list[str]:
    """What Lambda refuses in a stream mapping's parameters (``kind``: kinesis or dynamodb)."""
    errors: list[str] = []
    for key, (low, high) in STREAM_RANGES.items():
        value = spec.get(key)
        if value is not None and not low <= int(value) <= high:
            errors.append(f"{key} must be between {low} and {high}, got {value}")
    age = spec.get("MaximumRecordAgeInSeconds")
    if age is not None and int(age) != -1 and -1 <= int(age) < MIN_RECORD_AGE:
        errors.append(
            f"MaximumRecordAgeInSeconds must be -1 or between {MIN_RECORD_AGE} and 604800, got {age}"
        )
    position = spec.get("StartingPosition")
    if creating and not position:
        errors.append("StartingPosition is required for Kinesis and DynamoDB Streams event sources")
    elif position and position not in STREAM_STARTING_POSITIONS[kind]:
        errors.append(f"StartingPosition {position} is not supported for {kind} event sources")
    return errors


def _lambda_event_source_mapping_skips_stream_rules(_: Any) -> Undo:
    # moto takes any BatchSize up to 10,000 (0 and below too), any window, parallelization factor,
    # retry count and record age, and fills in TRIM_HORIZON when StartingPosition is missing; Lambda
    # refuses them (InvalidParameterValueException).
    from moto.awslambda.exceptions import InvalidParameterValueException
    from moto.awslambda.models import LambdaBackend

    create = LambdaBackend.__dict__["create_event_source_mapping"]
    update = LambdaBackend.__dict__["update_event_source_mapping"]

    def kind_of(arn: Any) -> str | None:
        parts = str(arn or "").split(":")
        if len(parts) < 6:
            return None
        if parts[2] == "kinesis":
            return "kinesis"
        return "dynamodb" if parts[2] == "dynamodb" and "/stream/" in parts[5] else None

    def check(kind: str | None, spec: Mapping[str, Any], *, creating: bool) -> None:
        if kind is None:
            return
        errors = stream_mapping_errors(kind, spec, creating=creating)
        if errors:
            raise InvalidParameterValueException("; ".join(errors))

    def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> Any:
        check(kind_of(spec.get("EventSourceArn")), spec, creating=True)
        return create(self, spec)

    def update_event_source_mapping(self: Any, uuid: str, spec: dict[str, Any]) -> Any:
        esm = self.get_event_source_mapping(uuid)
        if esm is not None:
            check(kind_of(esm.event_source_arn), spec, creating=False)
        return update(self, uuid, spec)

    return chain(
        [
            replace(LambdaBackend, "create_event_source_mapping", create_event_source_mapping),
            replace(LambdaBackend, "update_event_source_mapping", update_event_source_mapping),
        ]
    )


# --- EventBridge Scheduler -----------------------------------------------------------------------

# From the Scheduler API reference (Target, DeadLetterConfig, RetryPolicy, SqsParameters,
# FlexibleTimeWindow, CreateSchedule). The DLQ pattern has no "." in the queue name: a FIFO queue
# ("x.fifo") is refused as a dead-letter queue by CreateSchedule's own validation.
DLQ_ARN_PATTERN = r"arn:aws(-[a-z]+)?:sqs:[a-z0-9\-]+:\d{12}:[a-zA-Z0-9\-_]+"
ROLE_ARN_PATTERN = r"arn:aws(-[a-z]+)?:iam::\d{12}:role\/[\w+=,.@\/-]+"
NAME_PATTERN = r"[0-9a-zA-Z-_.]+"


def schedule_validation_errors(params: Mapping[str, Any]) -> list[str]:
    """The constraint violations of a CreateSchedule/UpdateSchedule request, in AWS's wording."""
    errors: list[str] = []

    def pattern(path: str, value: Any, regex: str) -> None:
        if value is not None and not re.fullmatch(regex, str(value)):
            errors.append(
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must satisfy regular expression pattern: {regex}"
            )

    def length(path: str, value: Any, low: int, high: int) -> None:
        if value is None:
            return
        if len(str(value)) > high:
            errors.append(
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must have length less than or equal to {high}"
            )
        elif len(str(value)) < low:
            errors.append(
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must have length greater than or equal to {low}"
            )

    def number(path: str, value: Any, low: int, high: int) -> None:
        if value is None:
            return
        if int(value) > high:
            errors.append(
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must have value less than or equal to {high}"
            )
        elif int(value) < low:
            errors.append(
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must have value greater than or equal to {low}"
            )

    length("name", params.get("Name"), 1, 64)
    pattern("name", params.get("Name"), NAME_PATTERN)
    length("clientToken", params.get("ClientToken"), 1, 64)
    length("scheduleExpression", params.get("ScheduleExpression"), 1, 256)
    if params.get("ActionAfterCompletion") not in (None, "NONE", "DELETE"):
        errors.append(
            f"Value '{params['ActionAfterCompletion']}' at 'actionAfterCompletion' failed to satisfy "
            "constraint: Member must satisfy enum value set: [NONE, DELETE]"
        )
    window = params.get("FlexibleTimeWindow") or {}
    if window.get("Mode") not in ("OFF", "FLEXIBLE"):
        errors.append(
            f"Value '{window.get('Mode')}' at 'flexibleTimeWindow.mode' failed to satisfy constraint: "
            "Member must satisfy enum value set: [OFF, FLEXIBLE]"
        )
    number("flexibleTimeWindow.maximumWindowInMinutes", window.get("MaximumWindowInMinutes"), 1, 1440)
    target = params.get("Target") or {}
    length("target.arn", target.get("Arn"), 1, 1600)
    pattern("target.roleArn", target.get("RoleArn"), ROLE_ARN_PATTERN)
    length("target.input", target.get("Input"), 1, 10**9)
    dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
    length("target.deadLetterConfig.arn", dlq, 1, 1600)
    pattern("target.deadLetterConfig.arn", dlq, DLQ_ARN_PATTERN)
    retry = target.get("RetryPolicy") or {}
    number("target.retryPolicy.maximumEventAgeInSeconds", retry.get("MaximumEventAgeInSeconds"), 60, 86400)
    number("target.retryPolicy.maximumRetryAttempts", retry.get("MaximumRetryAttempts"), 0, 185)
    group_id = (target.get("SqsParameters") or {}).get("MessageGroupId")
    length("target.sqsParameters.messageGroupId", group_id, 1, 128)
    return errors


def _scheduler_skips_request_validation(_: Any) -> Undo:
    # moto stores any CreateSchedule/UpdateSchedule request; the Scheduler validates each field
    # against the API reference's constraints first and answers ValidationException with them all
    # ("1 validation error detected: Value '...' at 'target.deadLetterConfig.arn' failed to satisfy
    # constraint: ..."), which is how a FIFO dead-letter queue is refused.
    from moto.scheduler.exceptions import ValidationException
    from moto.scheduler.responses import EventBridgeSchedulerResponse

    def guarded(method: Any) -> Any:
        def call(self: Any) -> Any:
            keys = (
                "ClientToken",
                "ScheduleExpression",
                "ActionAfterCompletion",
                "FlexibleTimeWindow",
                "Target",
            )
            params = {key: self._get_param(key) for key in keys}
            params["Name"] = unquote(self.uri.split("?")[0].rsplit("/", 1)[-1])
            errors = schedule_validation_errors(params)
            if errors:
                count = f"{len(errors)} validation error{'s' if len(errors) > 1 else ''} detected: "
                raise ValidationException(count + "; ".join(errors))
            return method(self)

        return call

    return chain(
        [
            replace(EventBridgeSchedulerResponse, name, guarded(EventBridgeSchedulerResponse.__dict__[name]))
            for name in ("create_schedule", "update_schedule")
        ]
    )


def _scheduler_create_schedule_in_missing_group_fails(_: Any) -> Undo:
    # CreateSchedule into a group that does not exist raises a KeyError inside moto: an HTTP 500,
    # which a caller takes for an outage (and the consumer for a refusal to wait out in SQS delay
    # hops). The Scheduler answers ResourceNotFoundException, as moto does for GetSchedule and
    # DeleteSchedule in a missing group: a configuration error, not something to retry.
    from moto.scheduler.models import EventBridgeSchedulerBackend

    create_schedule = EventBridgeSchedulerBackend.__dict__["create_schedule"]

    def new_create_schedule(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.get_schedule_group(kwargs.get("group_name"))  # ResourceNotFoundException when missing
        return create_schedule(self, *args, **kwargs)

    return replace(EventBridgeSchedulerBackend, "create_schedule", new_create_schedule)


FIDELITY_PATCHES: tuple[tuple[str, str, Callable[[Any], Undo]], ...] = (
    (
        "dynamodb_item_writes_not_atomic",
        "concurrent conditional writes to one DynamoDB item can both succeed (no lock around condition and write)",
        _dynamodb_item_writes_not_atomic,
    ),
    (
        "sqs_message_limits_unchecked",
        "SQS sizes a message by body characters, ignoring attributes, and takes any number of attributes",
        _sqs_message_limits_unchecked,
    ),
    (
        "sqs_fifo_redelivers_group_last_first",
        "a FIFO batch that returns after its visibility timeout comes back last message first",
        _sqs_fifo_redelivers_group_last_first,
    ),
    (
        "sqs_dead_letter_source_arn_missing",
        "a message the redrive policy moves to the DLQ carries no DeadLetterQueueSourceArn",
        _sqs_dead_letter_source_arn_missing,
    ),
    (
        "lambda_list_event_source_mappings_by_name_misses_arns",
        "ListEventSourceMappings(FunctionName=name) misses mappings created with the function ARN",
        _lambda_list_event_source_mappings_by_name_misses_arns,
    ),
    (
        "lambda_unknown_layer_version_is_not_found",
        "a function's unknown layer version is a 404 ResourceNotFoundException, and matched by name alone",
        _lambda_unknown_layer_version_is_not_found,
    ),
    (
        "lambda_event_source_mapping_skips_sqs_rules",
        "SQS event source mappings skip Lambda's visibility-timeout, batch-size and batching-window rules",
        _lambda_event_source_mapping_skips_sqs_rules,
    ),
    (
        "lambda_event_source_mapping_skips_stream_rules",
        "Kinesis and DynamoDB stream mappings skip Lambda's parameter ranges and StartingPosition rule",
        _lambda_event_source_mapping_skips_stream_rules,
    ),
    (
        "scheduler_skips_request_validation",
        "CreateSchedule/UpdateSchedule skip the API's field constraints (e.g. a FIFO dead-letter queue)",
        _scheduler_skips_request_validation,
    ),
    (
        "scheduler_create_schedule_in_missing_group_fails",
        "CreateSchedule into a missing schedule group answers HTTP 500 (AWS: ResourceNotFoundException)",
        _scheduler_create_schedule_in_missing_group_fails,
    ),
    (
        # S3 API reference, PutBucketNotificationConfiguration: S3 "verifies that any Amazon SQS
        # destination exists, and that the bucket owner has permission to publish to it".
        "s3_notification_destinations_unchecked",
        "PutBucketNotificationConfiguration takes an SQS destination that is missing or whose policy keeps S3 out",
        s3_notifications.install,
    ),
)

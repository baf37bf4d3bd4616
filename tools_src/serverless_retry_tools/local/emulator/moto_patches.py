"""The smallest fixes that let our modules apply to moto 5.2 and behave there as on AWS.

Each patch is named after the moto behaviour it corrects, changes one thing, and can be undone.
Only the emulator child (:mod:`serverless_retry_tools.local.emulator.emulator_server`) applies them, so they never
leak into a user's process. ``tests/integration/test_moto_patches.py`` proves, for each one, that raw
moto still behaves wrongly (so the patch is still needed: a moto upgrade that fixes the gap makes
that test fail, and the patch can go) and that the patched emulator behaves like AWS.

Gaps the patches do not cover because the runtime does the work: schedules never fire and pipes
never run in moto (:mod:`serverless_retry_tools.local.runtime.runtime` does both for schedules).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from serverless_retry_tools.local.emulator import async_patches, events_patches, s3_patches
from serverless_retry_tools.local.emulator.moto_fidelity import FIDELITY_PATCHES
from serverless_retry_tools.local.emulator.patch_types import Patch, PatchContext
from serverless_retry_tools.local.emulator.patching import Undo, chain, replace

__all__ = ["PATCHES", "Patch", "PatchContext", "apply_patches", "patched"]


# --- SQS ---------------------------------------------------------------------------------------


def _sqs_drops_redrive_allow_policy(_: PatchContext) -> Undo:
    # moto stores RedriveAllowPolicy (setattr from the attribute name) but neither returns it nor
    # accepts it as an attribute name to read (InvalidAttributeName), so the provider fails or waits.
    # Like AWS, an empty one (how the provider deletes it) is not returned at all.
    from moto.sqs.models import Queue

    if "RedriveAllowPolicy" in Queue.BASE_ATTRIBUTES:
        raise RuntimeError("moto now knows RedriveAllowPolicy: drop this patch")
    original = Queue.__dict__["attributes"]

    def attributes(self: Any) -> dict[str, Any]:
        result: dict[str, Any] = original.fget(self)
        if not result.get("RedriveAllowPolicy"):
            result.pop("RedriveAllowPolicy", None)
        return result

    undos = [
        replace(Queue, "BASE_ATTRIBUTES", [*Queue.BASE_ATTRIBUTES, "RedriveAllowPolicy"]),
        # Queues that never had one read the class default instead of raising AttributeError.
        _add(Queue, "redrive_allow_policy", None),
        replace(Queue, "attributes", property(attributes)),
    ]
    return chain(undos)


def _sqs_redrive_policy_json_whitespace(_: PatchContext) -> Undo:
    # moto re-serialises RedrivePolicy with json.dumps' default ", " / ": " separators; AWS returns
    # the compact form, and the provider compares the strings, so every plan shows a change.
    from moto.sqs.models import Queue

    original = Queue.__dict__["attributes"]

    def attributes(self: Any) -> dict[str, Any]:
        result: dict[str, Any] = original.fget(self)
        if getattr(self, "redrive_policy", None):
            result["RedrivePolicy"] = json.dumps(self.redrive_policy, separators=(",", ":"))
        return result

    return replace(Queue, "attributes", property(attributes))


def _sqs_set_attributes_wipes_policy(_: PatchContext) -> Undo:
    # moto's _set_attributes ends with `self.policy = attributes.get("Policy")`, so any
    # SetQueueAttributes call that does not name Policy resets it to empty. AWS leaves it alone
    # (an explicit empty string removes it).
    from moto.sqs.models import Queue

    original = Queue.__dict__["_set_attributes"]

    def _set_attributes(self: Any, attributes: dict[str, Any], now: float | None = None) -> None:
        keep = None if "Policy" in attributes else getattr(self, "_policy_json", None)
        original(self, attributes, now)
        if keep is not None:
            self._policy_json = keep

    return replace(Queue, "_set_attributes", _set_attributes)


def _sqs_message_move_task_not_implemented(ctx: PatchContext) -> Undo:
    # StartMessageMoveTask / ListMessageMoveTasks / CancelMessageMoveTask answer "not yet
    # implemented". serverless_retry_tools.local.emulator.move_tasks runs each task in the background at its
    # rate on the emulator's clock, with the API's limits, as SQS does.
    from serverless_retry_tools.local.emulator import move_tasks

    return move_tasks.install(ctx.clock, _add)


def _sqs_drops_trace_header(_: PatchContext) -> Undo:
    # SQS keeps a message's X-Ray trace header as its AWSTraceHeader system attribute (X-Ray developer
    # guide, "Amazon SQS and AWS X-Ray"): the one the
    # request sets in MessageSystemAttributes, else the request's X-Amzn-Trace-Id header (which
    # botocore adds to every call made inside Lambda). moto reads neither the header nor, in
    # SendMessageBatch, an entry's MessageSystemAttributes. Lambda's recursive loop detection follows
    # a chain of requests through this attribute (serverless_retry_tools.local.aws_rules.recursion).
    import threading
    from urllib.parse import unquote

    from moto.sqs.models import SQSBackend
    from moto.sqs.responses import SQSResponse

    current = threading.local()  # moto's server runs each request in a thread of its own
    send_message = SQSBackend.__dict__["send_message"]
    send_message_batch = SQSBackend.__dict__["send_message_batch"]

    def with_header(action: Any) -> Any:
        def wrapped(self: Any) -> Any:
            current.header = self.headers.get("X-Amzn-Trace-Id")
            try:
                return action(self)
            finally:
                current.header = None
                current.entries = None

        return wrapped

    def new_send_message(self: Any, queue_name: str, message_body: str, *args: Any, **kwargs: Any) -> Any:
        system = dict(kwargs.get("system_attributes") or {})
        entries = getattr(current, "entries", None)
        if entries:  # moto's batch sends its entries one by one, in order
            system = {**(entries.pop(0).get("MessageSystemAttributes") or {}), **system}
        header = getattr(current, "header", None)
        if "AWSTraceHeader" not in system and header:
            system["AWSTraceHeader"] = {"DataType": "String", "StringValue": unquote(header)}
        if system:
            kwargs["system_attributes"] = system
        return send_message(self, queue_name, message_body, *args, **kwargs)

    def new_send_message_batch(self: Any, queue_name: str, entries: dict[str, dict[str, Any]]) -> Any:
        current.entries = list(entries.values())
        try:
            return send_message_batch(self, queue_name, entries)
        finally:
            current.entries = None

    return chain(
        [
            replace(SQSBackend, "send_message", new_send_message),
            replace(SQSBackend, "send_message_batch", new_send_message_batch),
            replace(SQSResponse, "send_message", with_header(SQSResponse.__dict__["send_message"])),
            replace(
                SQSResponse, "send_message_batch", with_header(SQSResponse.__dict__["send_message_batch"])
            ),
        ]
    )


def _add(owner: Any, attr: str, new: Any) -> Undo:
    """Add a method moto does not have; refuse if it has grown one (the patch is then stale)."""
    if attr in owner.__dict__:
        raise RuntimeError(f"moto now implements {owner.__name__}.{attr}: drop this patch")
    setattr(owner, attr, new)

    def undo() -> None:
        delattr(owner, attr)

    return undo


# --- Lambda ------------------------------------------------------------------------------------


def _lambda_ignores_logging_config(_: PatchContext) -> Undo:
    # CreateFunction/UpdateFunctionConfiguration drop LoggingConfig and GetFunction never returns
    # it, so the provider plans to set it again on every run. AWS always returns one, with defaults.
    from moto.awslambda.models import LambdaFunction

    init = LambdaFunction.__dict__["__init__"]
    get_configuration = LambdaFunction.__dict__["get_configuration"]
    update_configuration = LambdaFunction.__dict__["update_configuration"]

    def normalised(name: str, value: dict[str, Any] | None) -> dict[str, Any]:
        config = {"LogFormat": "Text", "LogGroup": f"/aws/lambda/{name}"}
        config.update({k: v for k, v in (value or {}).items() if v})
        if config["LogFormat"] == "JSON":
            config.setdefault("ApplicationLogLevel", "INFO")
            config.setdefault("SystemLogLevel", "INFO")
        else:
            config.pop("ApplicationLogLevel", None)
            config.pop("SystemLogLevel", None)
        return config

    def new_init(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        init(self, account_id, spec, *args, **kwargs)
        self.logging_config = normalised(self.function_name, spec.get("LoggingConfig"))

    def new_get_configuration(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        config: dict[str, Any] = get_configuration(self, *args, **kwargs)
        config["LoggingConfig"] = getattr(self, "logging_config", normalised(self.function_name, None))
        return config

    def new_update_configuration(self: Any, updates: dict[str, Any]) -> dict[str, Any]:
        if "LoggingConfig" in updates:
            self.logging_config = normalised(self.function_name, updates["LoggingConfig"])
        result: dict[str, Any] = update_configuration(self, updates)
        return result

    undos = [
        replace(LambdaFunction, "__init__", new_init),
        replace(LambdaFunction, "get_configuration", new_get_configuration),
        replace(LambdaFunction, "update_configuration", new_update_configuration),
    ]
    return chain(undos)


def _lambda_event_source_mapping_invokes_in_docker(_: PatchContext) -> Undo:
    # CreateEventSourceMapping hooks the mapping onto the moto queue, and every later SendMessage
    # then receives the batch and tries to run the function in Docker: that consumes receive counts
    # (messages drift into the DLQ) and races the local runtime. Keep the mapping (it is listed,
    # updated and deleted as on AWS) but never hook it onto the queue: the runtime alone consumes.
    from moto.awslambda.models import LambdaBackend
    from moto.sqs.models import sqs_backends

    original = LambdaBackend.__dict__["create_event_source_mapping"]

    def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> Any:
        esm = original(self, spec)
        for queue in sqs_backends[self.account_id][self.region_name].queues.values():
            queue.lambda_event_source_mappings.pop(esm.function_arn, None)
        return esm

    return replace(LambdaBackend, "create_event_source_mapping", create_event_source_mapping)


CODE_ROUTE = "/_serverless_retry/lambda-code"


def _lambda_code_location_unreachable(ctx: PatchContext) -> Undo:
    # GetFunction on a function uploaded as a zip returns no Code.Location at all (and for S3 code an
    # AWS S3 URL that does not exist here). AWS returns a presigned URL from which the deployed zip
    # can be downloaded; the emulator server serves it at CODE_ROUTE (see emulator_server.py).
    from moto.awslambda.models import LambdaFunction

    get_code = LambdaFunction.__dict__["get_code"]

    def new_get_code(self: Any) -> dict[str, Any]:
        resp: dict[str, Any] = get_code(self)
        if getattr(self, "package_type", "Zip") == "Zip" and getattr(self, "code_bytes", b""):
            resp["Code"] = {
                "RepositoryType": "S3",
                "Location": (
                    f"{ctx.server_url}{CODE_ROUTE}/{self.account_id}/{self.region}/"
                    f"{quote(self.function_name)}/{quote(str(self.version))}"
                    f"?sha256={quote(self.code_sha_256, safe='')}"
                ),
            }
        return resp

    return replace(LambdaFunction, "get_code", new_get_code)


LAYER_ROUTE = "/_serverless_retry/lambda-layer"


def _lambda_layer_content_unreachable(ctx: PatchContext) -> Undo:
    # GetLayerVersion (and a function's layers) answer Content.Location "s3://": the layer's zip
    # cannot be fetched, so a function using a layer could not run locally. AWS returns a presigned
    # URL of the zip; the emulator server serves the zip the version was published from at
    # LAYER_ROUTE (see emulator_server.py), and the runtime unpacks it as Lambda does into /opt.
    from moto.awslambda.models import LayerVersion

    get_layer_version = LayerVersion.__dict__["get_layer_version"]

    def new_get_layer_version(self: Any) -> dict[str, Any]:
        resp: dict[str, Any] = get_layer_version(self)
        if getattr(self, "code_bytes", b""):
            resp["Content"]["Location"] = (
                f"{ctx.server_url}{LAYER_ROUTE}/{self.account_id}/{self.region}/"
                f"{quote(self.name)}/{self.version}?sha256={quote(self.code_sha_256, safe='')}"
            )
        return resp

    return replace(LayerVersion, "get_layer_version", new_get_layer_version)


def deployed_layer_zip(path: str) -> bytes:
    """The zip a layer version was published from, for ``LAYER_ROUTE/<account>/<region>/<name>/<version>``
    (raises when there is no such version)."""
    from urllib.parse import unquote

    from moto.awslambda.models import lambda_backends

    account, region, name, version = [unquote(p) for p in path[len(LAYER_ROUTE) + 1 :].split("/")]
    body: bytes = lambda_backends[account][region].get_layer_version(name, version).code_bytes
    if not body:
        raise LookupError(f"layer {name}:{version} has no stored content")
    return body


def _lambda_hides_reserved_concurrency_zero(_: PatchContext) -> Undo:
    # PutFunctionConcurrency with 0 is stored, but GetFunction leaves Concurrency out when the value
    # is falsy, so a function throttled to a standstill looks unlimited. AWS returns
    # {"ReservedConcurrentExecutions": 0}; the runtime reads it there and throttles every invocation.
    from moto.awslambda.models import LambdaFunction

    get_code = LambdaFunction.__dict__["get_code"]

    def new_get_code(self: Any) -> dict[str, Any]:
        resp: dict[str, Any] = get_code(self)
        reserved = getattr(self, "reserved_concurrency", None)
        if reserved is not None and "Concurrency" not in resp:
            resp["Concurrency"] = {"ReservedConcurrentExecutions": int(reserved)}
        return resp

    return replace(LambdaFunction, "get_code", new_get_code)


def _lambda_recursion_config_not_implemented(_: PatchContext) -> Undo:
    # PutFunctionRecursionConfig / GetFunctionRecursionConfig (PUT/GET
    # /2024-08-31/functions/{FunctionName}/recursion-config) have no route in moto, so
    # aws_lambda_function_recursion_config cannot apply. As Lambda: RecursiveLoop is Allow or
    # Terminate (InvalidParameterValueException otherwise), Terminate until one is put, an unknown
    # function is ResourceNotFoundException; the setting goes with its function. The runtime reads
    # it to stop recursive loops as Lambda does (serverless_retry_tools.local.aws_rules.recursion).
    from urllib.parse import unquote as unquote_path

    from moto.awslambda import urls
    from moto.awslambda.exceptions import InvalidParameterValueException
    from moto.awslambda.responses import LambdaResponse

    route = r"{0}/(?P<api_version>[^/]+)/functions/(?P<function_name>[\w_:%-]+)/recursion-config/?$"

    def function(self: Any) -> Any:
        return self.backend.get_function(unquote_path(self.path.rstrip("/").rsplit("/", 2)[-2]))

    def put_function_recursion_config(self: Any) -> Any:
        target = function(self)
        value = self._get_param("RecursiveLoop")
        if value not in ("Allow", "Terminate"):
            raise InvalidParameterValueException(
                f"1 validation error detected: Value '{value}' at 'recursiveLoop' failed to satisfy "
                "constraint: Member must satisfy enum value set: [Allow, Terminate]"
            )
        target.recursive_loop = value
        return 200, {}, json.dumps({"RecursiveLoop": value})

    def get_function_recursion_config(self: Any) -> Any:
        value = getattr(function(self), "recursive_loop", "Terminate")
        return 200, {}, json.dumps({"RecursiveLoop": value})

    if route in urls.url_paths:
        raise RuntimeError("moto now routes recursion-config: drop this patch")
    urls.url_paths[route] = LambdaResponse.dispatch

    def undo_route() -> None:
        urls.url_paths.pop(route, None)

    return chain(
        [
            undo_route,
            _add(LambdaResponse, "put_function_recursion_config", put_function_recursion_config),
            _add(LambdaResponse, "get_function_recursion_config", get_function_recursion_config),
        ]
    )


# --- EventBridge ---------------------------------------------------------------------------------


def _events_rule_sns_target_not_implemented(_: PatchContext) -> Undo:
    # A rule whose target is an SNS topic raises NotImplementedError inside PutEvents, which fails
    # the whole call with a 500. Publish the (transformed) event to the topic instead, as AWS does.
    from moto.events.models import Rule
    from moto.events.utils import EventTemplateParser
    from moto.sns.models import sns_backends

    original = Rule.__dict__["send_to_targets"]

    def send_to_targets(self: Any, original_event: Any, transform_input: bool = True) -> None:
        sns_targets = [t for t in self.targets if t["Arn"].split(":")[2] == "sns"]
        if not sns_targets:
            original(self, original_event, transform_input)
            return
        others = copy.copy(self)
        others.targets = [t for t in self.targets if t not in sns_targets]
        if others.targets:
            original(others, original_event, transform_input)
        if not self.event_pattern.matches_event(original_event):
            return
        for target in sns_targets:
            if transform_input:
                transformer = target.get("InputTransformer", {})
                event: Any = EventTemplateParser.parse(
                    input_template=transformer.get("InputTemplate"),
                    input_paths_map=transformer.get("InputPathsMap", {}),
                    event=original_event,
                )
            else:
                event = dict(original_event)
            if isinstance(target.get("Input"), str):
                message = target["Input"]
            else:
                message = event if isinstance(event, str) else json.dumps(event, default=str)
            arn = target["Arn"]
            region, account = arn.split(":")[3], arn.split(":")[4]
            sns_backends[account][region].publish(message, arn=arn)

    return replace(Rule, "send_to_targets", send_to_targets)


def _lambda_stream_event_source_mapping_runs_in_docker(_: PatchContext) -> Undo:
    # CreateEventSourceMapping on a Kinesis stream or a DynamoDB stream hooks the mapping onto the
    # stream (or the table), and every later PutRecord / item write then tries to run the function
    # in Docker; on a DynamoDB table the failed attempt also empties the stream (moto drops the
    # records it "delivered"), so nothing is left to poll. Keep the mapping (listed, updated and
    # deleted as on AWS) but never hook it on: the runtime's StreamRunner alone reads the shards.
    from moto.awslambda.models import LambdaBackend
    from moto.dynamodb.models import dynamodb_backends
    from moto.kinesis.models import kinesis_backends

    original = LambdaBackend.__dict__["create_event_source_mapping"]

    def create_event_source_mapping(self: Any, spec: dict[str, Any]) -> Any:
        esm = original(self, spec)
        for table in dynamodb_backends[self.account_id][self.region_name].tables.values():
            table.lambda_event_source_mappings.pop(esm.function_arn, None)
        for stream in kinesis_backends[self.account_id][self.region_name].streams.values():
            stream.lambda_event_source_mappings.pop(esm.event_source_arn, None)
        return esm

    return replace(LambdaBackend, "create_event_source_mapping", create_event_source_mapping)


def _lambda_stream_record_times_not_logical(ctx: PatchContext) -> Undo:
    # A Kinesis record's ApproximateArrivalTimestamp and a DynamoDB stream record's
    # ApproximateCreationDateTime are real time, while the rest of the emulator runs on its logical
    # clock: a stream mapping's MaximumRecordAgeInSeconds (and a consumer's own age checks) would
    # measure a logical now against a real arrival. Both modules read the time through utcnow:
    # make it the logical clock's (naive UTC, as moto's own), in those two modules only.
    import moto.dynamodb.models.table as dynamodb_table
    import moto.kinesis.models as kinesis_models

    clock = ctx.clock
    if clock is None:  # real time everywhere: nothing to align
        return lambda: None

    def logical_utcnow() -> datetime:
        return datetime.fromtimestamp(clock.now(), tz=UTC).replace(tzinfo=None)

    return chain(
        [
            replace(kinesis_models, "utcnow", logical_utcnow),
            replace(dynamodb_table, "utcnow", logical_utcnow),
        ]
    )


def _lambda_event_source_mapping_drops_starting_position_timestamp(_: PatchContext) -> Undo:
    # CreateEventSourceMapping keeps StartingPositionTimestamp but Get/List/Create never return it,
    # so a Kinesis mapping at AT_TIMESTAMP cannot be run from what the API says. AWS returns it (Unix
    # seconds) with StartingPosition.
    from moto.awslambda.models import EventSourceMapping

    get_configuration = EventSourceMapping.__dict__["get_configuration"]

    def new_get_configuration(self: Any) -> dict[str, Any]:
        config: dict[str, Any] = get_configuration(self)
        if self.starting_position_timestamp is not None:
            config["StartingPositionTimestamp"] = self.starting_position_timestamp
        return config

    return replace(EventSourceMapping, "get_configuration", new_get_configuration)


COMPATIBILITY_PATCHES: tuple[Patch, ...] = (
    Patch(
        "sqs_drops_redrive_allow_policy",
        "SQS accepts RedriveAllowPolicy but never returns it (the provider waits forever)",
        _sqs_drops_redrive_allow_policy,
    ),
    Patch(
        "sqs_redrive_policy_json_whitespace",
        "SQS returns RedrivePolicy with different whitespace (a perpetual plan diff)",
        _sqs_redrive_policy_json_whitespace,
    ),
    Patch(
        "sqs_set_attributes_wipes_policy",
        "SetQueueAttributes without Policy wipes the queue's existing policy",
        _sqs_set_attributes_wipes_policy,
    ),
    Patch(
        "sqs_message_move_task_not_implemented",
        "StartMessageMoveTask / ListMessageMoveTasks / CancelMessageMoveTask are not implemented",
        _sqs_message_move_task_not_implemented,
    ),
    Patch(
        "sqs_drops_trace_header",
        "SQS keeps no AWSTraceHeader from a request's X-Amzn-Trace-Id header, nor from a batch entry",
        _sqs_drops_trace_header,
    ),
    Patch(
        "lambda_ignores_logging_config",
        "Lambda drops LoggingConfig (a perpetual plan diff)",
        _lambda_ignores_logging_config,
    ),
    Patch(
        "lambda_event_source_mapping_invokes_in_docker",
        "an enabled SQS event source mapping makes every SendMessage try to run the function in Docker",
        _lambda_event_source_mapping_invokes_in_docker,
    ),
    Patch(
        "lambda_code_location_unreachable",
        "GetFunction gives no reachable Code.Location for the deployed zip",
        _lambda_code_location_unreachable,
    ),
    Patch(
        "lambda_layer_content_unreachable",
        "GetLayerVersion gives no reachable Content.Location for the layer's zip",
        _lambda_layer_content_unreachable,
    ),
    Patch(
        "lambda_hides_reserved_concurrency_zero",
        "GetFunction leaves out a reserved concurrency of 0 (the function looks unthrottled)",
        _lambda_hides_reserved_concurrency_zero,
    ),
    Patch(
        "lambda_recursion_config_not_implemented",
        "PutFunctionRecursionConfig / GetFunctionRecursionConfig are not implemented (no route)",
        _lambda_recursion_config_not_implemented,
    ),
    Patch(
        "events_rule_sns_target_not_implemented",
        "PutEvents fails with a 500 when a matching rule targets an SNS topic",
        _events_rule_sns_target_not_implemented,
    ),
    Patch(
        "lambda_stream_event_source_mapping_runs_in_docker",
        "a Kinesis or DynamoDB stream mapping makes every write try to run the function in Docker "
        "(and empties the DynamoDB stream)",
        _lambda_stream_event_source_mapping_runs_in_docker,
    ),
    Patch(
        "lambda_stream_record_times_not_logical",
        "Kinesis and DynamoDB Streams record arrival times are real time, not the emulator's logical clock",
        _lambda_stream_record_times_not_logical,
    ),
    Patch(
        "lambda_event_source_mapping_drops_starting_position_timestamp",
        "event source mappings never return StartingPositionTimestamp (AT_TIMESTAMP cannot be followed)",
        _lambda_event_source_mapping_drops_starting_position_timestamp,
    ),
)
# Compatibility patches let our modules apply and run; fidelity patches make moto refuse what AWS
# refuses (serverless_retry_tools.local.emulator.moto_fidelity); self-healing's async invocation and
# EventBridge patches live in modules of their own.
PATCHES: dict[str, Patch] = {
    p.name: p
    for p in (
        *COMPATIBILITY_PATCHES,
        *(Patch(name, corrects, install) for name, corrects, install in FIDELITY_PATCHES),
        *async_patches.patches(),
        *events_patches.patches(),
        *s3_patches.patches(),
    )
}


def apply_patches(names: list[str] | tuple[str, ...] | None, ctx: PatchContext) -> Undo:
    """Apply the named patches (all when ``names`` is None); returns one undo for all of them."""
    chosen = list(PATCHES) if names is None else list(names)
    unknown = [n for n in chosen if n not in PATCHES]
    if unknown:
        raise ValueError(f"unknown moto patch(es): {', '.join(unknown)}; known: {', '.join(PATCHES)}")
    undos: list[Undo] = []
    try:
        for name in chosen:
            undos.append(PATCHES[name].install(ctx))
    except BaseException:
        for undo in reversed(undos):
            undo()
        raise

    def undo_all() -> None:
        for undo in reversed(undos):
            undo()

    return undo_all


@contextmanager
def patched(*names: str, ctx: PatchContext | None = None) -> Iterator[None]:
    """Apply patches for the duration of a ``with`` block (in-process tests with ``mock_aws``)."""
    undo = apply_patches(list(names), ctx or PatchContext())
    try:
        yield
    finally:
        undo()

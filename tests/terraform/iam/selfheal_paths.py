"""Drive modules/self-healing end to end on moto, each step with the role AWS would use for it.

A failed source invocation's destination record goes to the failure queue (the source's role); the
pipe receives a batch, hands it to the enrichment function, puts the result on the bus and deletes the
batch (the pipe's role); each event is routed by the planned rules' own patterns (the emulator's
EventBridge matcher); a retry rule's event runs the redrive function (its role), which invokes the
source, publishes to its topic, creates a schedule or gives up. The enrichment also gets a batch
with a record too large for the bus and one that no longer fits the request (its two sends).

A source whose on-failure destination is the module's bucket: Lambda writes the record there with
the source's role, S3 notifies the failure queue (as S3: its queue policy is checked by
``check.rule_targets``), the enrichment reads the object and the redrive reads the payload of one too
large for the bus back through its pointer.
"""

from __future__ import annotations

import json
from typing import Any

from serverless_retry.selfheal.types import BUS_DETAIL_TYPE, BUS_SOURCE
from serverless_retry.testing import lambda_context
from serverless_retry_tools.local.aws_rules.event_pattern import matches

from tests.functional.test_selfheal_large_records import s3_event
from tests.selfheal_corpus import bus_event, destination_record, load, pipe_record
from tests.terraform.iam.check import S3_RECORD_KEY
from tests.terraform.iam.consumer_paths import load_handler
from tests.terraform.iam.granted import Function
from tests.terraform.iam.world import World, env_queue, function_by_handler, lambda_records

ENRICHMENT = "serverless_retry.handlers.enrichment.handler"
BIG = 261_500  # a payload whose record fits the failure queue (256 KiB) but whose event the bus cannot take
REDRIVE = "serverless_retry.handlers.redrive.handler"
TOPIC = "arn:aws:sns:us-east-1:123456789012:orders"
BILLING_TOPIC = "arn:aws:sns:us-east-1:123456789012:billing"
# The module-wide default: backoff (a schedule), Retry-After honoured (0: an immediate redrive), and an
# error the rules pass on but the policy refuses (the redrive function's own exhausted path).
POLICY: dict[str, Any] = {
    "max_attempts": 4,
    "backoff": {"strategy": "exponential", "base_seconds": 10, "max_seconds": 3600},
    "rules": [{"message_regex": "^fatal", "retry": False}],
}
# A source's own: connection trouble is redriven at once, anything else after a backoff.
NOW: dict[str, Any] = {
    "max_attempts": 3,
    "backoff": {"strategy": "exponential", "base_seconds": 10, "max_seconds": 3600},
    "rules": [
        {"errors": ["ConnectionError", "TimeoutError"], "backoff": {"strategy": "fixed", "base_seconds": 0}}
    ],
}
RETRY_NOW = ("HTTPError", "HTTP 503: upstream unavailable; Retry-After: 0")  # immediate under either policy
LATER = ("RuntimeError", "flaky dependency")  # a backoff under either policy
CONNECTION = ("ConnectionError", "connection reset")  # immediate under NOW only
FATAL = ("RuntimeError", "fatal: corrupt order")  # refused by POLICY


def failure(function: str, error: tuple[str, str], topic: str | None = None) -> dict[str, Any]:
    """A destination record of ``function`` failing with ``error`` (type, message), triggered by
    ``topic`` (SNS, the corpus' notification re-addressed) or invoked directly."""
    response = {"errorType": error[0], "errorMessage": error[1], "stackTrace": []}
    if topic is None:
        return destination_record({"order": function}, response, function=function)
    text = json.dumps(load("destination-sns-retries-exhausted.json"))
    record: dict[str, Any] = json.loads(
        text.replace("function:orders-fn", f"function:{function}").replace(TOPIC, topic)
    )
    record["responsePayload"] = response
    return record


def failures(topic_mode: bool) -> list[tuple[str | None, dict[str, Any] | str]]:
    """(function that failed, its destination record) for every path of the configuration."""
    rules_only: list[tuple[str | None, dict[str, Any] | str]] = [
        ("orders-fn", load("destination-eventbridge-handled-error.json")),  # do-not-retry
        ("reindex-fn", load("destination-direct-crash-no-error-type.json")),  # no error type
        (None, load("destination-sns-keyerror.json")),  # a function that is not a source
        (None, "not a destination record"),  # invalid
    ]
    if not topic_mode:  # orders: POLICY, via SNS; reindex: NOW, invoked directly
        return [
            *rules_only,
            ("orders-fn", failure("orders-fn", LATER, TOPIC)),  # a schedule that invokes
            ("orders-fn", failure("orders-fn", RETRY_NOW, TOPIC)),  # invoked now
            ("orders-fn", failure("orders-fn", FATAL, TOPIC)),  # exhausted by the redrive
            ("reindex-fn", failure("reindex-fn", CONNECTION)),  # invoked now
            ("reindex-fn", failure("reindex-fn", LATER)),  # a schedule that invokes
        ]
    # orders: NOW, topic orders; billing: POLICY, topic billing; reindex: POLICY, no topic. A source
    # invoked directly (not through its topic) is redriven to its function.
    paths: list[tuple[str | None, dict[str, Any] | str]] = list(rules_only)
    for function, topic, now in (("orders-fn", TOPIC, CONNECTION), ("billing-fn", BILLING_TOPIC, RETRY_NOW)):
        paths += [
            (function, failure(function, now, topic)),  # published now
            (function, failure(function, LATER, topic)),  # a schedule that publishes
            (function, failure(function, now)),  # invoked now
            (function, failure(function, LATER)),  # a schedule that invokes
        ]
    return [
        *paths,
        ("billing-fn", failure("billing-fn", FATAL, BILLING_TOPIC)),  # exhausted by the redrive
        ("reindex-fn", failure("reindex-fn", RETRY_NOW)),
        ("reindex-fn", failure("reindex-fn", LATER)),
    ]


def s3_destinations(world: World) -> dict[str, str]:
    """Function name -> the bucket its asynchronous invocations' failure records go to."""
    out: dict[str, str] = {}
    for config in world.granted.invoke_configs:
        name = str(config["function_name"]).rsplit(":", 1)[-1]
        for destination in (config.get("destination_config") or [{}])[0].get("on_failure") or []:
            arn = str(destination["destination"])
            if arn.startswith("arn:aws:s3:::"):
                out[name] = arn.removeprefix("arn:aws:s3:::")
    return out


def write_record(world: World, role: str, function: str, *, bucket: str, body: str, n: int) -> dict[str, Any]:
    """What Lambda's S3 destination does (with the function's role), and the S3 event notification."""
    key = f"aws/lambda/async/{function}/{S3_RECORD_KEY[:-2]}{n:02d}"
    with world.recorder.acting_as(role, f"Lambda on-failure destination of {function}"):
        world.s3.put_object(Bucket=bucket, Key=key, Body=body.encode())
    return s3_event(bucket, key, len(body.encode()))


def every_path(world: World, topic_mode: bool) -> None:
    g = world.granted
    enrichment = function_by_handler(g, ENRICHMENT)
    redrive = function_by_handler(g, REDRIVE)
    failure_queue = env_queue(g, enrichment.env, "SERVERLESS_RETRY_FAILURE_QUEUE_URL")
    [pipe] = g.pipes
    pipe_role = pipe["role_arn"].rsplit("/", 1)[-1]
    handlers = {}
    for function in (enrichment, redrive):
        with world.environment(function):
            handlers[function.name] = load_handler(function)

    def run(function: Function, event: Any) -> Any:
        with world.environment(function), world.recorder.acting_as(function.role, f"code of {function.name}"):
            return handlers[function.name](event, lambda_context(function.name))

    # Lambda sends each failed invocation's record with the function's role (to a bucket: it writes it
    # there, and S3 notifies the failure queue). One record per bucket source is too large for the bus.
    buckets = s3_destinations(world)
    paths = failures(topic_mode)
    big = {"errorType": CONNECTION[0], "errorMessage": CONNECTION[1], "stackTrace": []}
    paths += [(f, destination_record({"blob": "s" * 300_000}, big, function=f)) for f in sorted(buckets)]
    for n, (function_name, record) in enumerate(paths):
        body = record if isinstance(record, str) else json.dumps(record)
        role = world.external.functions.get(function_name or "")
        if role is not None and function_name in buckets:
            notification = write_record(
                world, role, function_name, bucket=buckets[function_name], body=body, n=n
            )
            world.sqs.send_message(QueueUrl=failure_queue.url, MessageBody=json.dumps(notification))
            continue
        if role is None:
            world.sqs.send_message(QueueUrl=failure_queue.url, MessageBody=body)
            continue
        with world.recorder.acting_as(role, f"Lambda on-failure destination of {function_name}"):
            world.sqs.send_message(QueueUrl=failure_queue.url, MessageBody=body)

    routed: dict[str, int] = {}
    for _ in range(5):  # bounded: the pipe's batches
        via = f"pipe {pipe['name']}"
        messages = world.receive_as(pipe_role, via, failure_queue)
        if not messages:
            break
        details = run(enrichment, lambda_records(messages, failure_queue.arn))
        if details:
            entries = [
                {"Source": BUS_SOURCE, "DetailType": BUS_DETAIL_TYPE, "Detail": json.dumps(d), "EventBusName": pipe["target"]}
                for d in details
            ]  # fmt: skip
            with world.recorder.acting_as(pipe_role, via):
                world.events.put_events(Entries=entries)
        world.delete_as(pipe_role, via, failure_queue, [m["ReceiptHandle"] for m in messages])
        for detail in details:
            event = bus_event(json.loads(json.dumps(detail)))
            rules = [
                name for name, rule in g.rules.items() if matches(json.loads(rule["event_pattern"]), event)
            ]
            assert len(rules) == 1, f"{len(rules)} rules match {detail['meta']}"
            routed[rules[0]] = routed.get(rules[0], 0) + 1
            target = next(t for t in g.targets if t["rule"] == rules[0])
            if target["arn"] == redrive.arn:
                run(redrive, event)
    assert routed, "no event reached the bus"
    if buckets:  # the enrichment read the records, the redrive a payload through its pointer
        readers = {
            c.actor.role for c in world.recorder.calls if (c.service, c.operation) == ("s3", "GetObject")
        }
        assert {enrichment.role, redrive.role} <= readers, f"S3 read back by {readers} only"

    # Too large for the bus (to the retry-exhausted queue, whole) and no longer fitting this batch's
    # request (back to the failure queue): built as the pipe would hand them over.
    batch = [
        pipe_record(destination_record({"blob": "a" * 150_000}), "m-first"),
        pipe_record(destination_record({"blob": "p" * BIG}), "m-big"),  # fits the failure queue, not the bus
        pipe_record(destination_record({"blob": "c" * 150_000}), "m-overflow"),
    ]
    run(enrichment, batch)

"""The enrichment and redrive Lambda handlers against in-process moto: the calls are ones AWS accepts
(exact parameters recorded), a duplicate delivery makes no second schedule, and a failed call raises
so nothing is acknowledged that was not delivered."""

from __future__ import annotations

import importlib
import io
import json
import logging
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from moto import mock_aws
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.envelope import schedule_name
from serverless_retry.selfheal.config import EnrichmentSettings, RedriveSettings
from serverless_retry.selfheal.enrichment import Enricher, EnrichmentDeliveryError
from serverless_retry.selfheal.redrive import Redriver
from serverless_retry.selfheal.state import read
from serverless_retry.testing import lambda_context, record_calls

from tests.functional.faults import client_error
from tests.selfheal_corpus import (
    ORDERS_ARN,
    POLICY,
    REINDEX_ARN,
    SCHEDULE_DLQ_ARN,
    TOPIC_ARN,
    bus_event,
    destination_record,
    load,
    pipe_record,
    redrive_env,
)

REGION = "us-east-1"


@dataclass
class Stack:
    sqs: Any
    sns: Any
    scheduler: Any
    lambda_: Any
    urls: dict[str, str]
    clock: FrozenClock

    def clients(self) -> AwsClients:
        return AwsClients.of(sqs=self.sqs, scheduler=self.scheduler, sns=self.sns, lambda_=self.lambda_)

    def messages(self, queue: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for _ in range(10):  # bounded
            got = self.sqs.receive_message(
                QueueUrl=self.urls[queue],
                MaxNumberOfMessages=10,
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            ).get("Messages", [])
            if not got:
                break
            out.extend(got)
        return out


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handle(event, context):\n    return None\n")
    return buffer.getvalue()


@pytest.fixture
def stack() -> Iterator[Stack]:
    with mock_aws(config={"lambda": {"use_docker": False}}):
        sqs = boto3.client("sqs", region_name=REGION)
        urls = {
            name: sqs.create_queue(QueueName=f"orders-self-healing-{name}")["QueueUrl"]
            for name in ("exhausted", "failures", "schedule-dlq", "subscriber")
        }
        iam = boto3.client("iam", region_name=REGION)
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
        role = iam.create_role(RoleName="orders-fn", AssumeRolePolicyDocument=json.dumps(trust))["Role"][
            "Arn"
        ]
        lambda_ = boto3.client("lambda", region_name=REGION)
        for name in ("orders-fn", "reindex-fn"):
            lambda_.create_function(
                FunctionName=name,
                Runtime="python3.11",
                Role=role,
                Handler="handler.handle",
                Code={"ZipFile": _zip()},
            )
        sns = boto3.client("sns", region_name=REGION)
        topic = sns.create_topic(Name="orders")["TopicArn"]
        assert topic == TOPIC_ARN
        queue_arn = sqs.get_queue_attributes(QueueUrl=urls["subscriber"], AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        # not raw: the SNS JSON notification shows the subject too (and moto 5.2.5 cannot md5 a Binary
        # attribute on raw delivery)
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
        scheduler = boto3.client("scheduler", region_name=REGION)
        scheduler.create_schedule_group(Name="orders-self-healing")
        yield Stack(sqs, sns, scheduler, lambda_, urls, FrozenClock())


def enrichment_settings(stack: Stack, max_bytes: int = 1_048_576) -> EnrichmentSettings:
    return EnrichmentSettings(stack.urls["exhausted"], stack.urls["failures"], max_bytes, stack.clock)


def redrive_settings(stack: Stack, **overrides: Any) -> RedriveSettings:
    env = redrive_env(SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL=stack.urls["exhausted"], **overrides)
    return RedriveSettings.from_env(env)


# --- enrichment ---------------------------------------------------------------------------------------


def test_the_mixed_batch_is_enriched_record_for_record(stack: Stack) -> None:
    enricher = Enricher(enrichment_settings(stack), clients=stack.clients(), clock=stack.clock)
    events = enricher(load("pipe-batch-mixed.json"))
    assert len(events) == 10
    assert json.loads(json.dumps(events)) == events  # what the pipe gets is plain JSON
    assert stack.messages("exhausted") == []
    assert stack.messages("failures") == []


def test_too_large_goes_to_the_exhausted_queue_whole_and_overflow_back_to_the_failure_queue(
    stack: Stack,
) -> None:
    big = pipe_record(destination_record({"blob": "p" * 300_000}), "m-big")
    first = pipe_record(destination_record({"blob": "a" * 150_000}), "m-first")
    overflow = pipe_record(destination_record({"blob": "c" * 150_000}), "m-overflow")
    small = pipe_record(destination_record({"i": 1}), "m-small")
    enricher = Enricher(enrichment_settings(stack), clients=stack.clients(), clock=stack.clock)
    events = enricher([first, big, overflow, small])
    assert [e["meta"]["failure_message_id"] for e in events] == ["m-first", "m-small"]
    [exhausted] = stack.messages("exhausted")
    body = json.loads(exhausted["Body"])
    assert body["outcome"] == "too-large-for-bus"
    assert body["detail"]["payload"] == {"blob": "p" * 300_000}
    [deferred] = stack.messages("failures")
    assert deferred["Body"] == overflow["body"]  # unchanged: a later batch reads it again


def test_a_failed_send_fails_the_batch(stack: Stack) -> None:
    big = pipe_record(destination_record({"blob": "p" * 300_000}), "m-big")
    stack.sqs.delete_queue(QueueUrl=stack.urls["exhausted"])
    enricher = Enricher(enrichment_settings(stack), clients=stack.clients(), clock=stack.clock)
    with pytest.raises(EnrichmentDeliveryError, match="too-large-for-bus"):
        enricher([pipe_record(destination_record({"i": 1})), big])


def test_the_enrichment_handler_reads_its_environment(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL", stack.urls["exhausted"])
    monkeypatch.setenv("SERVERLESS_RETRY_FAILURE_QUEUE_URL", stack.urls["failures"])
    module = importlib.reload(importlib.import_module("serverless_retry.handlers.enrichment"))
    events = module.handler(
        load("pipe-batch-mixed.json")[:2], lambda_context("orders-self-healing-enrichment")
    )
    assert [e["meta"]["error_type"] for e in events] == ["HTTPError", "KeyError"]


# --- redrive ------------------------------------------------------------------------------------------


def event_of(name: str | dict[str, Any]) -> dict[str, Any]:
    record = load(name) if isinstance(name, str) else name
    from serverless_retry.selfheal.records import failure_detail

    return bus_event(failure_detail(pipe_record(record), FrozenClock().now()))


def test_an_immediate_redrive_invokes_only_the_failed_function_asynchronously(stack: Stack) -> None:
    calls = record_calls(stack.lambda_)
    redriver = Redriver(redrive_settings(stack), clients=stack.clients(), clock=stack.clock)
    plan = redriver(event_of("destination-direct-timeout.json"))
    assert plan.action == "invoke"
    [(operation, params)] = calls
    assert operation == "Invoke"
    assert params["FunctionName"] == REINDEX_ARN
    assert params["InvocationType"] == "Event"
    delivered = read(json.loads(params["Payload"]))
    assert delivered.event == load("direct-event.json")
    assert delivered.state is not None
    assert delivered.state["attempt"] == 2


def test_a_delayed_redrive_creates_one_schedule_even_when_delivered_twice(stack: Stack) -> None:
    calls = record_calls(stack.scheduler)
    redriver = Redriver(redrive_settings(stack), clients=stack.clients(), clock=stack.clock)
    event = event_of("destination-sns-retries-exhausted.json")
    first = redriver(event)
    second = redriver(event)  # EventBridge delivered the same event again
    assert first == second
    assert [op for op, _ in calls] == ["CreateSchedule", "CreateSchedule"]
    assert calls[0][1] == calls[1][1]
    schedules = stack.scheduler.list_schedules(GroupName="orders-self-healing")["Schedules"]
    assert [s["Name"] for s in schedules] == [
        schedule_name("orders-fn/95df01b4-ee98-5cb9-9903-4c221d41eb5e", 2, prefix="sh")
    ]
    stored = stack.scheduler.get_schedule(Name=schedules[0]["Name"], GroupName="orders-self-healing")
    assert stored["Target"]["Arn"] == ORDERS_ARN
    assert stored["Target"]["DeadLetterConfig"] == {"Arn": SCHEDULE_DLQ_ARN}
    assert stored["ActionAfterCompletion"] == "DELETE"
    assert stored["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert read(json.loads(stored["Target"]["Input"])).event == load("sns-event.json")


def test_topic_redrive_reaches_subscribers_with_subject_and_attributes(stack: Stack) -> None:
    policy = {**POLICY, "backoff": {"base_seconds": 0}, "honor_retry_after": False, "rules": []}
    settings = redrive_settings(stack, SERVERLESS_RETRY_REDRIVE_TO="topic", SERVERLESS_RETRY_POLICY=policy)
    redriver = Redriver(settings, clients=stack.clients(), clock=stack.clock)
    assert redriver(event_of("destination-sns-retries-exhausted.json")).action == "publish"
    [message] = stack.messages("subscriber")
    notification = json.loads(message["Body"])
    original = load("sns-event.json")["Records"][0]["Sns"]
    assert notification["Message"] == original["Message"]
    assert notification["Subject"] == "order placed"
    attributes = notification["MessageAttributes"]
    assert attributes["tenant"] == {"Type": "String", "Value": "acme"}
    assert attributes["priority"] == {"Type": "Number", "Value": "3"}
    assert attributes["trace"] == {"Type": "Binary", "Value": "AQID"}
    assert json.loads(attributes["serverless_retry"]["Value"])["attempt"] == 2


def test_exhausted_events_reach_the_queue_with_the_reason(stack: Stack) -> None:
    redriver = Redriver(redrive_settings(stack), clients=stack.clients(), clock=stack.clock)
    event = event_of("destination-eventbridge-handled-error.json")  # ValidationError: retry false
    assert redriver(event).action == "exhausted"
    [message] = stack.messages("exhausted")
    body = json.loads(message["Body"])
    assert body["outcome"] == "non-retryable"
    assert body["detail"] == event["detail"]


@pytest.mark.parametrize(
    ("name", "client", "method"),
    [
        ("destination-direct-timeout.json", "lambda_", "invoke"),
        ("destination-sns-retries-exhausted.json", "scheduler", "create_schedule"),
        ("destination-eventbridge-handled-error.json", "sqs", "send_message"),
    ],
)
def test_a_failed_call_raises(
    stack: Stack, name: str, client: str, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(**_: Any) -> None:
        raise client_error("ServiceUnavailable", method)

    monkeypatch.setattr(getattr(stack, client), method, fail)
    redriver = Redriver(redrive_settings(stack), clients=stack.clients(), clock=stack.clock)
    with pytest.raises(ClientError):
        redriver(event_of(name))


def test_the_redrive_handler_reads_its_environment(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in redrive_settings_env(stack).items():
        monkeypatch.setenv(key, value)
    module = importlib.reload(importlib.import_module("serverless_retry.handlers.redrive"))
    result = module.handler(
        event_of("destination-direct-timeout.json"), lambda_context("orders-self-healing-redrive")
    )
    assert result["action"] == "invoke"
    assert result["next_attempt"] == 2


def redrive_settings_env(stack: Stack) -> dict[str, str]:
    return redrive_env(SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL=stack.urls["exhausted"])


def _emf(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


def test_redrive_and_enrichment_write_emf_metrics(stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    redriver = Redriver(redrive_settings(stack), clients=stack.clients(), clock=stack.clock)
    redriver(event_of("destination-sns-retries-exhausted.json"))
    redriver(event_of("destination-eventbridge-handled-error.json"))
    Enricher(enrichment_settings(stack), clients=stack.clients(), clock=stack.clock)(
        load("pipe-batch-mixed.json")
    )
    lines = _emf(capsys.readouterr().out)
    found = {
        (m["Name"], line.get("via") or line.get("outcome"), line[m["Name"]][0])
        for line in lines
        for m in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]
    }
    assert ("Redriven", "schedule", 1.0) in found
    assert ("SelfHealingExhausted", "non-retryable", 1.0) in found
    assert ("FailureRecords", None, 10.0) in found
    assert ("InvalidFailureRecord", None, 5.0) in found
    assert all(line["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "ServerlessRetry" for line in lines)


def test_the_redriven_log_line_names_the_route_taken(stack: Stack) -> None:
    """It once read "retry 2 in 120 s via sqs-delay" for a retry that went by schedule (or invoke)."""
    written = io.StringIO()
    logger = Logger(service="route-in-log-line", logger_handler=logging.StreamHandler(written))
    redriver = Redriver(redrive_settings(stack), clients=stack.clients(), clock=stack.clock, logger=logger)
    redriver(event_of("destination-sns-retries-exhausted.json"))
    redriver(event_of("destination-direct-timeout.json"))
    records = [json.loads(line) for line in written.getvalue().splitlines() if line.startswith("{")]
    redriven = [r for r in records if r.get("message") == "event redriven"]
    assert [(r["action"], r["reason"].split(" (")[0]) for r in redriven] == [
        ("schedule", "retry 2 in 120 s via schedule"),
        ("invoke", "retry 2 in 0 s via invoke"),
    ]

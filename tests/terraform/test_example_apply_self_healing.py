"""examples/self-healing applies to the local emulator, a second plan is empty, and what was created
is the contract's wiring: every source's failures go to the failure queue, the pipe reads it into the
enrichment and the bus, each rule sends to the redrive function or the retry-exhausted queue with a
DLQ, and each queue is encrypted, TLS-only and open to exactly the rules that deliver to it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverless_retry.selfheal.config import EnrichmentSettings, RedriveSettings

from tests.terraform.example_endpoints import missing_from_block
from tests.terraform.stack import Applied

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def applied(self_healing_stack: Applied) -> Applied:
    return self_healing_stack


def _queue_url(applied: Applied, role: str) -> str:
    return str(
        applied.client("sqs").get_queue_url(QueueName=applied.outputs["queue_names"][role])["QueueUrl"]
    )


def _rule_arn(applied: Applied, name: str) -> str:
    rule = applied.client("events").describe_rule(Name=name, EventBusName=applied.outputs["event_bus_name"])
    return str(rule["Arn"])


def test_second_plan_is_empty(applied: Applied) -> None:
    # -detailed-exitcode: 0 = no changes, 2 = changes, 1 = error.
    assert applied.second_plan.returncode == 0, applied.second_plan.stdout + applied.second_plan.stderr


def test_the_readme_endpoints_block_covers_every_service_the_example_calls(applied: Applied) -> None:
    """Applied through AWS_ENDPOINT_URL; the README's `-var aws_endpoint_url=...` alone uses the block."""
    assert missing_from_block(applied) == {}


def test_sources_send_failures_to_the_failure_queue_and_the_audit_does_not(applied: Applied) -> None:
    lam = applied.client("lambda")
    failure_arn = applied.client("sqs").get_queue_attributes(
        QueueUrl=applied.outputs["failure_queue_url"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    for role in ("charge", "invoice"):
        config = lam.get_function_event_invoke_config(FunctionName=applied.outputs["function_names"][role])
        assert config["MaximumRetryAttempts"] == 0
        assert config["DestinationConfig"]["OnFailure"]["Destination"] == failure_arn
        role_name = lam.get_function_configuration(FunctionName=applied.outputs["function_names"][role])[
            "Role"
        ]
        policy = applied.client("iam").get_role_policy(
            RoleName=role_name.split("/")[-1], PolicyName="serverless-retry-self-healing-heal-example"
        )["PolicyDocument"]
        document = policy if isinstance(policy, dict) else json.loads(policy)
        assert [(s["Action"], s["Resource"]) for s in document["Statement"]] == [
            ("sqs:SendMessage", failure_arn)
        ]
    with pytest.raises(lam.exceptions.ResourceNotFoundException):
        lam.get_function_event_invoke_config(FunctionName=applied.outputs["audit_function_name"])


def test_every_function_is_subscribed_to_its_topic(applied: Applied) -> None:
    sns = applied.client("sns")
    out = applied.outputs
    endpoints = {
        topic: sorted(
            s["Endpoint"].split(":")[-1]
            for s in sns.list_subscriptions_by_topic(TopicArn=arn)["Subscriptions"]
        )
        for topic, arn in (("orders", out["orders_topic_arn"]), ("invoices", out["invoices_topic_arn"]))
    }
    assert endpoints == {
        "orders": sorted([out["audit_function_name"], out["charge_function_name"]]),
        "invoices": [out["invoice_function_name"]],
    }


def test_pipe_reads_the_failure_queue_into_the_enrichment_and_the_bus(applied: Applied) -> None:
    out = applied.outputs
    pipe = applied.client("pipes").describe_pipe(Name=out["pipe_name"])
    assert pipe["Source"].endswith(":heal-example-failures")
    assert pipe["Enrichment"].endswith(f":function:{out['enrichment_function_name']}")
    assert pipe["Target"].endswith(f":event-bus/{out['event_bus_name']}")
    assert pipe["SourceParameters"]["SqsQueueParameters"]["BatchSize"] == 10
    assert pipe["TargetParameters"]["EventBridgeEventBusParameters"] == {
        "Source": "serverless-retry.self-healing",
        "DetailType": "serverless-retry failure",
    }
    env = applied.client("lambda").get_function_configuration(FunctionName=out["enrichment_function_name"])
    settings = EnrichmentSettings.from_env(env["Environment"]["Variables"])
    assert (settings.failure_queue_url, settings.exhausted_queue_url) == (
        out["failure_queue_url"],
        out["exhausted_queue_url"],
    )


def test_rules_and_targets_are_the_planned_ones_each_with_a_dlq(applied: Applied) -> None:
    events = applied.client("events")
    out = applied.outputs
    bus = out["event_bus_name"]
    rules = {r["Name"]: json.loads(r["EventPattern"]) for r in events.list_rules(EventBusName=bus)["Rules"]}
    assert rules == {name: json.loads(pattern) for name, pattern in out["event_patterns"].items()}
    rules_dlq = _queue_url(applied, "rules_dlq").rsplit("/", 1)[-1]
    redrive_fn = out["redrive_function_name"]
    for name in rules:
        (target,) = events.list_targets_by_rule(Rule=name, EventBusName=bus)["Targets"]
        assert target["DeadLetterConfig"]["Arn"].endswith(f":{rules_dlq}")
        if name in out["retry_rule_names"].values():
            assert target["Arn"].endswith(f":function:{redrive_fn}")
        else:
            assert target["Arn"].endswith(":heal-example-exhausted")
            template = target["InputTransformer"]["InputTemplate"]
            record = json.loads(template.replace("<detail>", "null"))
            assert list(record) == ["outcome", "reason", "detail"]


def test_redrive_reads_its_environment_and_dead_letters_its_failures(applied: Applied) -> None:
    lam = applied.client("lambda")
    out = applied.outputs
    env = lam.get_function_configuration(FunctionName=out["redrive_function_name"])["Environment"][
        "Variables"
    ]
    settings = RedriveSettings.from_env(env)
    assert {n: s.max_retries for n, s in settings.sources.items()} == {
        out["charge_function_name"]: 3,
        out["invoice_function_name"]: 2,
    }
    assert (settings.schedule_group, settings.scheduler_role_arn) == (
        out["schedule_group_name"],
        out["scheduler_role_arn"],
    )
    config = lam.get_function_event_invoke_config(FunctionName=out["redrive_function_name"])
    assert config["MaximumRetryAttempts"] == 2
    assert config["DestinationConfig"]["OnFailure"]["Destination"].endswith(":heal-example-redrive-dlq")


def _policy(applied: Applied, role: str) -> dict[str, Any]:
    attributes = applied.client("sqs").get_queue_attributes(
        QueueUrl=_queue_url(applied, role), AttributeNames=["All"]
    )
    return dict(attributes["Attributes"])


def test_queues_are_encrypted_tls_only_and_open_to_their_rules_only(applied: Applied) -> None:
    out = applied.outputs
    exhausted_rules = sorted(_rule_arn(applied, n) for n in out["exhausted_rule_names"].values())
    every_rule = sorted(
        [*exhausted_rules, *(_rule_arn(applied, n) for n in out["retry_rule_names"].values())]
    )
    for role in out["queue_names"]:
        attributes = _policy(applied, role)
        assert attributes["SqsManagedSseEnabled"] == "true", role
        statements = json.loads(attributes["Policy"])["Statement"]
        deny = [s for s in statements if s["Effect"] == "Deny"]
        assert [s["Condition"] for s in deny] == [{"Bool": {"aws:SecureTransport": "false"}}], role
        allowed = [s for s in statements if s["Effect"] == "Allow"]
        if role in ("exhausted", "rules_dlq"):
            (allow,) = allowed
            assert allow["Principal"] == {"Service": "events.amazonaws.com"}
            assert allow["Action"] == "sqs:SendMessage"
            sources = allow["Condition"]["ArnEquals"]["aws:SourceArn"]
            assert sorted([sources] if isinstance(sources, str) else sources) == (
                exhausted_rules if role == "exhausted" else every_rule
            )
        else:
            assert allowed == [], role
    failures = _policy(applied, "failure")
    assert json.loads(failures["RedrivePolicy"])["deadLetterTargetArn"].endswith(":heal-example-failures-dlq")
    assert int(_policy(applied, "exhausted")["MaximumMessageSize"]) >= int(failures["MaximumMessageSize"])


def test_monitoring_alarms_watch_the_applied_queues(applied: Applied) -> None:
    alarms = applied.client("cloudwatch").describe_alarms(AlarmNamePrefix="heal-example-")["MetricAlarms"]
    watched = {a["AlarmName"]: a["Dimensions"][0]["Value"] for a in alarms}
    assert watched == {
        "heal-example-failure-queue-age": "heal-example-failures",
        "heal-example-failure-dlq-depth": "heal-example-failures-dlq",
        "heal-example-exhausted-depth": "heal-example-exhausted",
        "heal-example-rules-dlq-depth": "heal-example-rules-dlq",
        "heal-example-redrive-dlq-depth": "heal-example-redrive-dlq",
        "heal-example-schedule-dlq-depth": "heal-example-schedule-dlq",
        "heal-example-enrichment-function-errors": "heal-example-enrichment",
        "heal-example-redrive-function-errors": "heal-example-redrive",
        # No archive (archive_enabled defaults to false): each terminal queue's expiry alarm.
        "heal-example-exhausted-expiry": "heal-example-exhausted",
        "heal-example-failure-dlq-expiry": "heal-example-failures-dlq",
        "heal-example-redrive-dlq-expiry": "heal-example-redrive-dlq",
        "heal-example-rules-dlq-expiry": "heal-example-rules-dlq",
        "heal-example-schedule-dlq-expiry": "heal-example-schedule-dlq",
    }
    assert set(applied.outputs["alarm_arns"].values()) == {a["AlarmArn"] for a in alarms}
    dashboard = applied.client("cloudwatch").get_dashboard(DashboardName=applied.outputs["dashboard_name"])
    (alarm_widget,) = [w for w in json.loads(dashboard["DashboardBody"])["widgets"] if w["type"] == "alarm"]
    assert set(alarm_widget["properties"]["alarms"]) == {a["AlarmArn"] for a in alarms}

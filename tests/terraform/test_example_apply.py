"""examples/scheduled-retry applies to the local emulator (moto server with the project's
compatibility patches), a second plan is empty, and what was created is what the modules' READMEs and docs/security.md say."""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverless_retry.policy import RetryPolicy

from tests.terraform.example_endpoints import missing_from_block
from tests.terraform.stack import Applied

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def applied(scheduled_retry_stack: Applied) -> Applied:
    return scheduled_retry_stack


def test_second_plan_is_empty(applied: Applied) -> None:
    # -detailed-exitcode: 0 = no changes, 2 = changes, 1 = error.
    assert applied.second_plan.returncode == 0, applied.second_plan.stdout + applied.second_plan.stderr


def test_the_readme_endpoints_block_covers_every_service_the_example_calls(applied: Applied) -> None:
    """Applied through AWS_ENDPOINT_URL; the README's `-var aws_endpoint_url=...` alone uses the block."""
    assert missing_from_block(applied) == {}


def test_queues_are_encrypted_tls_only_and_redrive_to_their_dlq(applied: Applied) -> None:
    sqs = applied.client("sqs")
    out = applied.outputs
    source = sqs.get_queue_attributes(QueueUrl=out["queue_url"], AttributeNames=["All"])["Attributes"]
    assert source["VisibilityTimeout"] == str(6 * applied.variables["function_timeout"])
    assert json.loads(source["RedrivePolicy"]) == {
        "deadLetterTargetArn": out["dlq_arn"],
        "maxReceiveCount": 5,
    }
    dlq = sqs.get_queue_attributes(QueueUrl=out["dlq_url"], AttributeNames=["All"])["Attributes"]
    assert json.loads(dlq["RedriveAllowPolicy"]) == {
        "redrivePermission": "byQueue",
        "sourceQueueArns": [out["queue_arn"]],
    }
    assert (source["MessageRetentionPeriod"], dlq["MessageRetentionPeriod"]) == ("345600", "1209600")
    for url in (out["queue_url"], out["dlq_url"], out["exhausted_queue_url"]):
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert attributes["SqsManagedSseEnabled"] == "true"
        (deny,) = json.loads(attributes["Policy"])["Statement"]
        assert deny["Effect"] == "Deny"
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_function_and_mapping_are_wired(applied: Applied) -> None:
    out = applied.outputs
    config = applied.client("lambda").get_function_configuration(FunctionName=out["function_name"])
    assert config["Handler"] == "serverless_retry.handlers.consumer.handler"
    env = config["Environment"]["Variables"]
    assert env["SERVERLESS_RETRY_PROCESSOR"] == "orders_example.process:handle"
    assert env["SERVERLESS_RETRY_QUEUE_URL"] == out["queue_url"]
    assert env["SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL"] == out["exhausted_queue_url"]
    assert env["SERVERLESS_RETRY_SCHEDULE_GROUP"] == out["schedule_group_name"]
    assert env["SERVERLESS_RETRY_SCHEDULER_ROLE_ARN"] == out["scheduler_role_arn"]
    assert RetryPolicy.from_json(env["SERVERLESS_RETRY_POLICY"]).max_attempts == 5
    assert env["SERVERLESS_RETRY_DLQ_ARN"] == out["dlq_arn"]  # standard source: its DLQ takes dead schedules
    assert env["SERVERLESS_RETRY_QUEUE_RETENTION_SECONDS"] == "345600"
    assert int(env["SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES"]) >= int(
        env["SERVERLESS_RETRY_MAX_MESSAGE_BYTES"]
    )
    mappings = applied.client("lambda").list_event_source_mappings(EventSourceArn=out["queue_arn"])
    (mapping,) = mappings["EventSourceMappings"]
    assert mapping["FunctionArn"] == config["FunctionArn"]
    assert mapping["EventSourceArn"] == out["queue_arn"]
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_claims_table_is_created_encrypted_with_ttl(applied: Applied) -> None:
    out = applied.outputs
    dynamodb = applied.client("dynamodb")
    table = dynamodb.describe_table(TableName=out["claims_table_name"])["Table"]
    assert table["TableArn"] == out["claims_table_arn"]
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["SSEDescription"]["Status"] == "ENABLED"
    ttl = dynamodb.describe_time_to_live(TableName=out["claims_table_name"])["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "expiration")
    config = applied.client("lambda").get_function_configuration(FunctionName=out["function_name"])
    env = config["Environment"]["Variables"]
    assert env["SERVERLESS_RETRY_CLAIMS_TABLE"] == out["claims_table_name"]
    assert env["SERVERLESS_RETRY_VISIBILITY_TIMEOUT_SECONDS"] == str(
        6 * applied.variables["function_timeout"]
    )


def _statements(document: dict[str, Any]) -> dict[str, tuple[set[str], set[str]]]:
    def as_set(value: str | list[str]) -> set[str]:
        return {value} if isinstance(value, str) else set(value)

    return {s["Sid"]: (as_set(s["Action"]), as_set(s["Resource"])) for s in document["Statement"]}


def test_consumer_role_policy_is_exactly_design_section_6(applied: Applied) -> None:
    iam = applied.client("iam")
    out = applied.outputs
    role = out["consumer_role_name"]
    (name,) = iam.list_role_policies(RoleName=role)["PolicyNames"]
    document = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
    account, region = applied.emulator.account_id, applied.emulator.region
    assert _statements(document) == {
        "ConsumeSourceQueue": (
            {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"},
            {out["queue_arn"]},
        ),
        "SendRetriesAndExhausted": ({"sqs:SendMessage"}, {out["queue_arn"], out["exhausted_queue_arn"]}),
        # Create (and find one whose CreateSchedule got no answer): each schedule deletes itself
        # after it ran (ActionAfterCompletion = DELETE).
        "CreateRetrySchedules": (
            {"scheduler:CreateSchedule", "scheduler:GetSchedule"},
            {f"arn:aws:scheduler:{region}:{account}:schedule/{out['schedule_group_name']}/*"},
        ),
        "PassSchedulerRole": ({"iam:PassRole"}, {out["scheduler_role_arn"]}),
        # One chain per message: one conditional UpdateItem per claim, on the claims table only.
        "RetryClaims": ({"dynamodb:UpdateItem"}, {out["claims_table_arn"]}),
        "WriteOwnLogs": (
            {"logs:CreateLogStream", "logs:PutLogEvents"},
            {f"arn:aws:logs:{region}:{account}:log-group:/aws/lambda/{out['function_name']}:log-stream:*"},
        ),
    }
    (pass_role,) = [s for s in document["Statement"] if s["Sid"] == "PassSchedulerRole"]
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}


def test_scheduler_role_trusts_the_scheduler_and_sends_only_to_its_queue(applied: Applied) -> None:
    iam = applied.client("iam")
    out = applied.outputs
    role_name = out["scheduler_role_arn"].rsplit("/", 1)[1]
    (trust,) = iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": applied.emulator.account_id}}
    (name,) = iam.list_role_policies(RoleName=role_name)["PolicyNames"]
    document = iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
    assert _statements(document) == {
        "SendToTargetQueues": ({"sqs:SendMessage"}, {out["queue_arn"]}),
        "SendToDeadLetterQueues": ({"sqs:SendMessage"}, {out["dlq_arn"]}),
    }
    group = applied.client("scheduler").get_schedule_group(Name=out["schedule_group_name"])
    assert group["State"] == "ACTIVE"


def test_monitoring_alarms_watch_the_applied_queues_and_function(applied: Applied) -> None:
    out = applied.outputs
    queue, dlq, exhausted = (
        out[k].rsplit("/", 1)[1] for k in ("queue_url", "dlq_url", "exhausted_queue_url")
    )
    function = out["function_name"]
    cloudwatch = applied.client("cloudwatch")
    alarms = {a["AlarmArn"]: a for a in cloudwatch.describe_alarms()["MetricAlarms"]}
    watched = {
        concern: (alarms[arn].get("Namespace"), alarms[arn].get("MetricName"), alarms[arn].get("Dimensions"))
        for concern, arn in out["alarm_arns"].items()
    }
    assert watched == {
        "dlq_depth": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", [{"Name": "QueueName", "Value": dlq}]),
        "exhausted_depth": (
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            [{"Name": "QueueName", "Value": exhausted}],
        ),
        "oldest_message_age": (
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            [{"Name": "QueueName", "Value": queue}],
        ),
        "function_errors": ("AWS/Lambda", "Errors", [{"Name": "FunctionName", "Value": function}]),
        # The consumer's POWERTOOLS_SERVICE_NAME is its name: the service dimension of its metrics.
        "delivery_failed": ("ServerlessRetry", "DeliveryFailed", [{"Name": "service", "Value": function}]),
        "exhausted_rate": (None, None, []),  # metric math over the outcome counters
        # No archive (archive_enabled defaults to false): the terminal queues' expiry alarms.
        "dlq_expiry": ("AWS/SQS", "ApproximateAgeOfOldestMessage", [{"Name": "QueueName", "Value": dlq}]),
        "exhausted_expiry": (
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            [{"Name": "QueueName", "Value": exhausted}],
        ),
    }
    rate = alarms[out["alarm_arns"]["exhausted_rate"]]
    assert {
        q["Id"]: q.get("MetricStat", {}).get("Metric", {}).get("MetricName") for q in rate["Metrics"]
    } == {
        "processed": "Processed",
        "exhausted": "Exhausted",
        "non_retryable": "NonRetryable",
        "invalid_envelope": "InvalidEnvelope",
        "finished": None,
        "exhausted_percent": None,
    }
    assert all(a["TreatMissingData"] == "notBreaching" for a in alarms.values())

    body = json.loads(cloudwatch.get_dashboard(DashboardName=out["dashboard_name"])["DashboardBody"])
    (alarm_widget,) = [w for w in body["widgets"] if w["type"] == "alarm"]
    assert set(alarm_widget["properties"]["alarms"]) == set(out["alarm_arns"].values())
    graphed = {
        tuple(m[:-1]) for w in body["widgets"] if w["type"] == "metric" for m in w["properties"]["metrics"]
    }
    assert ("AWS/SQS", "ApproximateNumberOfMessagesDelayed", "QueueName", queue) in graphed
    assert ("ServerlessRetry", "RetryScheduled", "service", function, "transport", "scheduler") in graphed
    assert ("AWS/Lambda", "Throttles", "FunctionName", function) in graphed

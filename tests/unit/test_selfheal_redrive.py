"""Redrive planning (pure): the source's policy decides, the plan is the exact AWS call, and a
duplicate delivery plans the same thing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from serverless_retry import ConfigError, HttpError, NonRetryableError
from serverless_retry.envelope import schedule_name
from serverless_retry.selfheal.config import RedriveSettings
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.redrive import http_status_in, plan_redrive, remote_error, retry_after_in
from serverless_retry.selfheal.state import attach, read

from tests.selfheal_corpus import (
    ORDERS_ARN,
    REINDEX_ARN,
    SCHEDULE_DLQ_ARN,
    SCHEDULER_ROLE_ARN,
    TOPIC_ARN,
    bus_event,
    destination_record,
    load,
    pipe_record,
    redrive_env,
)

NOW = datetime(2026, 11, 30, 10, 0, 5, tzinfo=UTC)
SETTINGS = RedriveSettings.from_env(redrive_env())
TOPIC_SETTINGS = RedriveSettings.from_env(redrive_env(SERVERLESS_RETRY_REDRIVE_TO="topic"))


def event_of(name_or_record: str | dict[str, Any]) -> dict[str, Any]:
    record = load(name_or_record) if isinstance(name_or_record, str) else name_or_record
    return bus_event(failure_detail(pipe_record(record), NOW))


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- the rebuilt error -------------------------------------------------------------------------------


def test_the_remote_error_matches_by_name_and_mro() -> None:
    error = remote_error("KeyError", "'sku'")
    assert type(error).__name__ == "KeyError"
    assert isinstance(error, LookupError)
    assert str(error) == "'sku'"  # verbatim (a real KeyError would quote it again)
    assert isinstance(remote_error("NonRetryableError", "no"), NonRetryableError)
    assert isinstance(remote_error("HttpError", "HTTP 429"), HttpError)
    dotted = remote_error("Sandbox.Timedout", "Task timed out after 3.00 seconds")
    assert (type(dotted).__module__, type(dotted).__name__) == ("Sandbox", "Timedout")


@pytest.mark.parametrize(
    ("message", "status", "retry_after"),
    [
        ("HTTP 503: upstream unavailable; Retry-After: 120", 503, "120"),
        ("429 Client Error: Too Many Requests for url (status_code=429)", 429, None),
        ("status 500, retry_after=2.5", 500, "2.5"),
        (
            "HTTP/1.1 503 Service Unavailable Retry-After: Wed, 21 Oct 2026 07:28:00 GMT",
            503,
            "Wed, 21 Oct 2026 07:28:00 GMT",
        ),
        ("order 12345 failed", None, None),
    ],
)
def test_status_and_retry_after_are_read_from_the_message(
    message: str, status: int | None, retry_after: str | None
) -> None:
    assert http_status_in(message) == status
    assert retry_after_in(message) == retry_after
    error = remote_error("HTTPError", message)
    assert getattr(error, "status", None) == status
    assert error.retry_after == retry_after  # type: ignore[attr-defined]


# --- plans -------------------------------------------------------------------------------------------


def test_a_retry_after_schedules_the_function_with_the_original_sns_event() -> None:
    plan = plan_redrive(event_of("destination-sns-retries-exhausted.json"), SETTINGS, NOW)
    assert (plan.action, plan.delay_seconds, plan.next_attempt) == ("schedule", 120, 2)
    state = {
        "v": 1,
        "id": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
        "attempt": 2,
        "first_failed_at": "2026-11-30T10:00:04Z",
        "previous_delay_seconds": 120,
    }
    name = schedule_name("orders-fn/95df01b4-ee98-5cb9-9903-4c221d41eb5e", 2, prefix="sh")
    assert plan.schedule == {
        "Name": name,
        "GroupName": "orders-self-healing",
        "ClientToken": name,
        "ScheduleExpression": "at(2026-11-30T10:02:04)",  # the failure record's time + 120 s
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "ActionAfterCompletion": "DELETE",
        "State": "ENABLED",
        "Description": "serverless-retry self-healing attempt 2 of 95df01b4-ee98-5cb9-9903-4c221d41eb5e",
        "Target": {
            "Arn": ORDERS_ARN,  # the templated Lambda target: Scheduler invokes it asynchronously
            "RoleArn": SCHEDULER_ROLE_ARN,
            "DeadLetterConfig": {"Arn": SCHEDULE_DLQ_ARN},
            "RetryPolicy": {"MaximumEventAgeInSeconds": 86_400, "MaximumRetryAttempts": 185},
            "Input": compact(attach(load("sns-event.json"), "sns", state)),  # type: ignore[arg-type]
        },
    }
    assert len(name) <= 64


def test_the_scheduled_input_is_the_original_event_plus_state() -> None:
    plan = plan_redrive(event_of("destination-sns-retries-exhausted.json"), SETTINGS, NOW)
    assert plan.schedule is not None
    carried = read(json.loads(plan.schedule["Target"]["Input"]))
    assert carried.event == load("sns-event.json")
    assert carried.state is not None
    assert carried.state["attempt"] == 2


def test_a_duplicate_delivery_plans_the_same_schedule_even_later() -> None:
    event = event_of("destination-eventbridge-retries-exhausted.json")
    first = plan_redrive(event, SETTINGS, NOW)
    again = plan_redrive(event, SETTINGS, NOW)
    assert first == again
    much_later = plan_redrive(event, SETTINGS, NOW + timedelta(hours=2))
    assert first.schedule is not None
    assert much_later.schedule is not None
    assert much_later.schedule["Name"] == first.schedule["Name"]
    assert much_later.schedule["Target"] == first.schedule["Target"]
    assert much_later.delay_seconds == first.delay_seconds
    # the due time is never in the past when the schedule is created
    assert much_later.schedule["ScheduleExpression"] == "at(2026-11-30T12:00:10)"


def test_two_subscribers_that_failed_one_message_each_get_their_own_schedule() -> None:
    """Both functions of one topic see the same SNS MessageId (the retry id). A function redrive keys its
    schedule by function too, or the second one's ConflictException would read as "already scheduled"
    and that function's retry would be lost; a topic redrive is one re-publish for both."""
    sns_event = load("sns-event.json")
    orders = event_of(destination_record(sns_event, function="orders-fn"))
    reindex = event_of(destination_record(sns_event, function="reindex-fn"))
    assert orders["detail"]["meta"]["retry_id"] == reindex["detail"]["meta"]["retry_id"]
    sources = {"orders-fn": {"function_arn": ORDERS_ARN}, "reindex-fn": {"function_arn": REINDEX_ARN}}
    settings = RedriveSettings.from_env(
        redrive_env(
            SERVERLESS_RETRY_SOURCES=sources,
            SERVERLESS_RETRY_POLICY={"backoff": {"strategy": "fixed", "base_seconds": 60}},
        )
    )
    first, second = plan_redrive(orders, settings, NOW), plan_redrive(reindex, settings, NOW)
    assert first.schedule is not None
    assert second.schedule is not None
    assert first.schedule["Name"] != second.schedule["Name"]
    assert {first.schedule["Target"]["Arn"], second.schedule["Target"]["Arn"]} == {ORDERS_ARN, REINDEX_ARN}


def test_exponential_backoff_grows_with_the_attempt() -> None:
    delays = []
    for attempt in (1, 2, 3):
        payload = load("eventbridge-event.json")
        if attempt > 1:
            state = {
                "v": 1,
                "id": payload["id"],
                "attempt": attempt,
                "first_failed_at": "2026-11-30T10:00:00Z",
                "previous_delay_seconds": 10,
            }
            payload = attach(payload, "eventbridge", state)  # type: ignore[arg-type]
        delays.append(plan_redrive(event_of(destination_record(payload)), SETTINGS, NOW).delay_seconds)
    assert delays == [10, 20, 40]


def test_delay_zero_invokes_the_failed_function_now() -> None:
    plan = plan_redrive(event_of("destination-direct-timeout.json"), SETTINGS, NOW)
    state = {
        "v": 1,
        "id": "3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
        "attempt": 2,
        "first_failed_at": "2026-11-30T10:00:04Z",
        "previous_delay_seconds": 0,
    }
    assert plan.action == "invoke"
    assert plan.invoke == {
        "FunctionName": REINDEX_ARN,
        "InvocationType": "Event",
        "Payload": compact({"serverless_retry": state, "payload": load("direct-event.json")}),
    }


def test_transport_scheduler_schedules_even_a_zero_delay() -> None:
    env = redrive_env(
        SERVERLESS_RETRY_SOURCES={
            "reindex-fn": {
                "function_arn": REINDEX_ARN,
                "policy": {"backoff": {"base_seconds": 0}, "transport": "scheduler"},
            }
        }
    )
    plan = plan_redrive(event_of("destination-direct-timeout.json"), RedriveSettings.from_env(env), NOW)
    assert plan.action == "schedule"
    assert plan.schedule is not None
    assert plan.schedule["ScheduleExpression"] == "at(2026-11-30T10:00:10)"  # now + the 5 s lead


def test_topic_mode_republishes_with_subject_and_attributes() -> None:
    policy = {"backoff": {"base_seconds": 0}, "honor_retry_after": False}
    env = redrive_env(SERVERLESS_RETRY_REDRIVE_TO="topic", SERVERLESS_RETRY_POLICY=policy)
    plan = plan_redrive(
        event_of("destination-sns-retries-exhausted.json"), RedriveSettings.from_env(env), NOW
    )
    assert plan.action == "publish"
    sns = load("sns-event.json")["Records"][0]["Sns"]
    state = {
        "v": 1,
        "id": sns["MessageId"],
        "attempt": 2,
        "first_failed_at": "2026-11-30T10:00:04Z",
        "previous_delay_seconds": 0,
    }
    assert plan.publish == {
        "TopicArn": TOPIC_ARN,
        "Message": sns["Message"],
        "Subject": "order placed",
        "MessageAttributes": {
            "tenant": {"DataType": "String", "StringValue": "acme"},
            "priority": {"DataType": "Number", "StringValue": "3"},
            "trace": {"DataType": "Binary", "BinaryValue": b"\x01\x02\x03"},
            "serverless_retry": {"DataType": "String", "StringValue": compact(dict(sorted(state.items())))},
        },
    }


def test_topic_mode_later_uses_the_universal_publish_target() -> None:
    plan = plan_redrive(event_of("destination-sns-retries-exhausted.json"), TOPIC_SETTINGS, NOW)
    assert plan.schedule is not None
    target = plan.schedule["Target"]
    assert target["Arn"] == "arn:aws:scheduler:::aws-sdk:sns:publish"
    params = json.loads(target["Input"])
    assert params["TopicArn"] == TOPIC_ARN
    assert params["Subject"] == "order placed"
    assert params["MessageAttributes"]["trace"] == {
        "DataType": "Binary",
        "BinaryValue": "AQID",
    }  # base64 in JSON
    assert json.loads(params["MessageAttributes"]["serverless_retry"]["StringValue"])["attempt"] == 2


def test_topic_mode_without_a_subject_sends_none() -> None:
    env = redrive_env(
        SERVERLESS_RETRY_REDRIVE_TO="topic", SERVERLESS_RETRY_POLICY={"backoff": {"base_seconds": 0}}
    )
    record = destination_record(load("sns-event-no-subject.json"))
    plan = plan_redrive(event_of(record), RedriveSettings.from_env(env), NOW)
    assert plan.publish is not None
    assert "Subject" not in plan.publish


def test_topic_mode_falls_back_to_the_function_when_no_attribute_slot_is_left() -> None:
    event = load("sns-event.json")
    event["Records"][0]["Sns"]["MessageAttributes"] = {
        f"a{i}": {"Type": "String", "Value": "v"} for i in range(10)
    }
    plan = plan_redrive(event_of(destination_record(event)), TOPIC_SETTINGS, NOW)
    assert plan.action == "schedule"
    assert plan.schedule is not None
    assert plan.schedule["Target"]["Arn"] == ORDERS_ARN
    assert "already has 10 attributes" in plan.reason


def test_topic_mode_redrives_non_sns_sources_to_the_function() -> None:
    plan = plan_redrive(event_of("destination-eventbridge-retries-exhausted.json"), TOPIC_SETTINGS, NOW)
    assert plan.schedule is not None
    assert plan.schedule["Target"]["Arn"] == ORDERS_ARN


def exhausted_body(plan: Any) -> dict[str, Any]:
    assert plan.action == "exhausted"
    assert plan.exhausted["QueueUrl"].endswith("/orders-self-healing-exhausted")
    return json.loads(plan.exhausted["MessageBody"])  # type: ignore[no-any-return]


def test_the_budget_is_the_policys() -> None:
    event = event_of("destination-sns-redriven.json")  # attempt 3, HTTP 429 -> delay
    assert plan_redrive(event, SETTINGS, NOW).action == "schedule"
    event["detail"]["meta"]["attempt"], event["detail"]["meta"]["retry_count"] = 4, 3
    body = exhausted_body(plan_redrive(event, SETTINGS, NOW))
    assert body["outcome"] == "exhausted"
    assert body["reason"] == "attempt 4 >= max_attempts 4"
    assert body["detail"] == event["detail"]


def test_max_age_is_measured_from_the_records_own_timestamps() -> None:
    env = redrive_env(SERVERLESS_RETRY_POLICY={"max_age_seconds": 60})
    event = event_of("destination-sns-redriven.json")  # first failure 10:00:04, this one 10:01:30
    body = exhausted_body(plan_redrive(event, RedriveSettings.from_env(env), NOW))
    assert body["outcome"] == "exhausted"
    assert "max_age_seconds 60" in body["reason"]


def test_a_rule_with_retry_false_is_non_retryable() -> None:
    body = exhausted_body(plan_redrive(event_of("destination-eventbridge-handled-error.json"), SETTINGS, NOW))
    assert body["outcome"] == "non-retryable"
    assert "retry: false" in body["reason"]


@pytest.mark.parametrize("error_type", ["MissingErrorType", "InvalidFailureRecord"])
def test_sentinel_error_types_never_retry(error_type: str) -> None:
    event = event_of("destination-eventbridge-retries-exhausted.json")
    event["detail"]["meta"]["error_type"] = error_type
    assert exhausted_body(plan_redrive(event, SETTINGS, NOW))["outcome"] == "non-retryable"


def test_an_unknown_or_impersonated_source_is_not_redriven() -> None:
    unknown = event_of(destination_record(load("direct-event.json"), function="payments-fn"))
    assert exhausted_body(plan_redrive(unknown, SETTINGS, NOW))["outcome"] == "unknown-source"
    other_account = event_of("destination-eventbridge-retries-exhausted.json")
    other_account["detail"]["meta"]["function_arn"] = ORDERS_ARN.replace("123456789012", "999999999999")
    assert exhausted_body(plan_redrive(other_account, SETTINGS, NOW))["outcome"] == "unknown-source"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.pop("detail"),
        lambda e: e["detail"].pop("payload"),
        lambda e: e["detail"]["meta"].__setitem__("attempt", "1"),
        lambda e: e["detail"]["meta"].__setitem__("retry_count", 5),
        lambda e: e["detail"]["meta"].__setitem__("source_type", "unknown"),
        lambda e: e["detail"]["meta"].__setitem__("failed_at", "now"),
        lambda e: e["detail"]["meta"].__setitem__("retry_id", ""),
    ],
)
def test_a_forged_event_goes_to_the_exhausted_queue(mutate: Any) -> None:
    event = event_of("destination-eventbridge-retries-exhausted.json")
    mutate(event)
    assert exhausted_body(plan_redrive(event, SETTINGS, NOW))["outcome"] == "invalid-failure-record"


def test_an_event_too_large_to_invoke_is_exhausted_not_lost() -> None:
    event = event_of(destination_record({"blob": "x" * 1_048_576}))
    body = exhausted_body(plan_redrive(event, SETTINGS, NOW))
    assert body["outcome"] == "too-large-to-retry"


def test_the_bus_event_in_the_corpus_is_redrivable() -> None:
    plan = plan_redrive(load("bus-event-retry.json"), SETTINGS, NOW)
    assert (plan.action, plan.delay_seconds) == ("schedule", 120)


# --- configuration ------------------------------------------------------------------------------------


def test_max_retries_is_the_largest_retryable_budget_minus_one() -> None:
    env = redrive_env(
        SERVERLESS_RETRY_POLICY={
            "max_attempts": 4,
            "rules": [
                {"errors": ["TimeoutError"], "max_attempts": 8},
                {"errors": ["KeyError"], "max_attempts": 20, "retry": False},
            ],
        }
    )
    settings = RedriveSettings.from_env(env)
    assert settings.sources["orders-fn"].max_retries == 7
    assert settings.sources["reindex-fn"].max_retries == 2


@pytest.mark.parametrize(
    ("overrides", "variable", "text"),
    [
        ({"SERVERLESS_RETRY_SOURCES": ""}, "SERVERLESS_RETRY_SOURCES", "required"),
        ({"SERVERLESS_RETRY_SOURCES": "{"}, "SERVERLESS_RETRY_SOURCES", "not valid JSON"),
        ({"SERVERLESS_RETRY_SOURCES": {}}, "SERVERLESS_RETRY_SOURCES", "non-empty"),
        (
            {"SERVERLESS_RETRY_SOURCES": {"orders-fn": {"function_arn": ORDERS_ARN, "retries": 3}}},
            "SERVERLESS_RETRY_SOURCES",
            "unknown field",
        ),
        (
            {"SERVERLESS_RETRY_SOURCES": {"orders-fn": {"function_arn": ORDERS_ARN + ":live"}}},
            "SERVERLESS_RETRY_SOURCES",
            "unqualified",
        ),
        (
            {"SERVERLESS_RETRY_SOURCES": {"billing-fn": {"function_arn": ORDERS_ARN}}},
            "SERVERLESS_RETRY_SOURCES",
            "names function 'orders-fn'",
        ),
        (
            {
                "SERVERLESS_RETRY_SOURCES": {
                    "orders-fn": {"function_arn": ORDERS_ARN, "topic_arn": TOPIC_ARN + ".fifo"}
                }
            },
            "SERVERLESS_RETRY_SOURCES",
            "standard SNS topic",
        ),
        (
            {
                "SERVERLESS_RETRY_SOURCES": {
                    "orders-fn": {"function_arn": ORDERS_ARN, "policy": {"max_attempts": 0}}
                }
            },
            "SERVERLESS_RETRY_SOURCES",
            "max_attempts",
        ),
        (
            {"SERVERLESS_RETRY_POLICY": {"transport": "sqs-delay"}},
            "SERVERLESS_RETRY_POLICY",
            "auto or scheduler",
        ),
        ({"SERVERLESS_RETRY_POLICY": {"backof": {}}}, "SERVERLESS_RETRY_POLICY", "unknown field"),
        ({"SERVERLESS_RETRY_REDRIVE_TO": "queue"}, "SERVERLESS_RETRY_REDRIVE_TO", "function or topic"),
        (
            {"SERVERLESS_RETRY_DLQ_ARN": SCHEDULE_DLQ_ARN + ".fifo"},
            "SERVERLESS_RETRY_DLQ_ARN",
            "standard SQS queue",
        ),
        (
            {"SERVERLESS_RETRY_SCHEDULER_ROLE_ARN": "orders-role"},
            "SERVERLESS_RETRY_SCHEDULER_ROLE_ARN",
            "IAM role ARN",
        ),
        (
            {"SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL": "orders-exhausted"},
            "SERVERLESS_RETRY_EXHAUSTED_QUEUE_URL",
            "queue",
        ),
        (
            {"SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES": "512"},
            "SERVERLESS_RETRY_EXHAUSTED_MAX_MESSAGE_BYTES",
            "between",
        ),
        ({"SERVERLESS_RETRY_CLOCK_SCALE": "100"}, "SERVERLESS_RETRY_CLOCK_EPOCH", "required when"),
    ],
)
def test_bad_configuration_names_the_variable(overrides: dict[str, Any], variable: str, text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RedriveSettings.from_env(redrive_env(**overrides))
    assert caught.value.variable == variable
    assert text in str(caught.value)


def test_topic_mode_needs_a_topic() -> None:
    env = redrive_env(
        SERVERLESS_RETRY_REDRIVE_TO="topic",
        SERVERLESS_RETRY_SOURCES={"reindex-fn": {"function_arn": REINDEX_ARN}},
    )
    with pytest.raises(ConfigError, match="no source"):
        RedriveSettings.from_env(env)


def test_the_reason_names_the_route_the_retry_takes() -> None:
    """The log line ("event redriven", its reason) once said "via sqs-delay" for a retry that went by
    schedule or by invoke: the self-healing redrive has no SQS delay at all."""
    scheduled = plan_redrive(event_of("destination-sns-retries-exhausted.json"), SETTINGS, NOW)
    assert scheduled.action == "schedule"
    assert "via schedule" in scheduled.reason
    assert "sqs-delay" not in scheduled.reason
    assert "scheduler" not in scheduled.reason.split("(")[0]
    invoked = plan_redrive(event_of("destination-direct-timeout.json"), SETTINGS, NOW)
    assert invoked.action == "invoke"
    assert invoked.reason.startswith("retry 2 in 0 s via invoke (")

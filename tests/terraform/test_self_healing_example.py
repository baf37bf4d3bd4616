"""examples/self-healing does what its README says, as far as Python and a plan can show without
running AWS: its functions fail as designed, and the policies and rules the example configures turn
those failures into the documented outcomes (charge: 1 + 3 attempts, 10/20/40 s apart, then the
retry-exhausted queue; invoice: the retry-exhausted queue at once; audit: never fails). The chain is
driven through the package's own enrichment (failure_detail) and redrive (plan_redrive) with the
redrive environment the plan gives the function. The same run end to end on the emulator is the
demo's (./build.sh demo self-healing)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from serverless_retry.selfheal.config import RedriveSettings
from serverless_retry.selfheal.records import failure_detail
from serverless_retry.selfheal.redrive import plan_redrive

from tests.selfheal_corpus import bus_event, destination_record, load, pipe_record
from tests.terraform.conftest import ROOT, Workspace
from tests.terraform.mocked_plan import Run, plan_runs

EXAMPLE = "examples/self-healing"
MODULES = (
    "modules/self-healing",
    "modules/retry-policy",
    "modules/scheduler",
    "modules/monitoring",
    "modules/function",
    "modules/queue",
    "modules/archive",  # the example's archive_enabled
    "modules/private-bucket",  # the archive's bucket, and the failure records'
)
PACKAGE = "../../tests/terraform/fixtures/empty.zip"
NOW = datetime(2026, 11, 30, 10, 0, 5, tzinfo=UTC)
MAX_ATTEMPTS = 10  # bounds every chain below


@pytest.fixture(autouse=True)
def _example_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / EXAMPLE / "src"))


@pytest.fixture(scope="module")
def planned(workspace: Workspace, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    runs = {
        "function": {"package": PACKAGE},
        "topic": {"package": PACKAGE, "redrive_to": "topic"},
        "no_monitoring": {"package": PACKAGE, "monitoring": False},
    }
    return plan_runs(workspace, tmp_path_factory.mktemp("self-healing-example"), EXAMPLE, runs, MODULES)


def _redrive_settings(run: Run) -> RedriveSettings:
    env = run.resources["module.heal.module.redrive.aws_lambda_function.this"]["environment"][0]["variables"]
    return RedriveSettings.from_env(env)


def _sns_event(topic_arn: str, body: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = load("sns-event.json")
    sns = event["Records"][0]["Sns"]
    sns["TopicArn"] = topic_arn
    sns["Message"] = json.dumps(body)
    return event


def _context(function_name: str, request: int) -> Any:
    arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
    return SimpleNamespace(
        function_name=function_name,
        function_version="$LATEST",
        invoked_function_arn=arn,
        memory_limit_in_mb=256,
        aws_request_id=f"00000000-0000-4000-8000-{request:012d}",
        log_group_name=f"/aws/lambda/{function_name}",
        log_stream_name="2026/11/30/[$LATEST]example",
    )


def _chain(run: Run, function: str, handler: Any, event: dict[str, Any]) -> tuple[str, list[int], int]:
    """Deliver ``event`` to ``handler`` as Lambda, the pipe, the rules and the redrive would, until it
    succeeds or a rule gives up: (final outcome, the delays between attempts, attempts made)."""
    settings = _redrive_settings(run)
    limits = {run.outputs["function_names"][k]: v for k, v in run.outputs["retry_limits"].items()}
    never = {"KeyError", "MissingErrorType", "InvalidFailureRecord"}
    delays: list[int] = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            handler(event, _context(function, attempt))
        except Exception as exc:  # what Lambda writes into the destination record
            response = {"errorType": type(exc).__name__, "errorMessage": str(exc), "stackTrace": []}
        else:
            return "processed", delays, attempt
        record = destination_record(event, response, function=function)
        record["requestContext"]["requestId"] = _context(function, attempt).aws_request_id
        detail = failure_detail(pipe_record(record), NOW)
        meta = detail["meta"]
        assert (meta["attempt"], meta["function_name"]) == (attempt, function)
        # The rule the event matches (the rendered rules are bus_rules(), proven exhaustive and
        # disjoint in tests/unit/test_selfheal_rules.py).
        if meta["error_type"] in never:
            return "non-retryable", delays, attempt
        if meta["retry_count"] >= limits[function]:
            return "exhausted", delays, attempt
        plan = plan_redrive(bus_event(detail), settings, NOW)
        assert plan.action in ("invoke", "schedule", "publish"), plan.reason
        delays.append(plan.delay_seconds)
        if plan.action == "schedule":
            assert plan.schedule is not None
            target = plan.schedule["Target"]
            assert target["Arn"] == settings.sources[function].function_arn, (
                "function mode invokes the function"
            )
            event = json.loads(target["Input"])
        else:
            assert plan.invoke is not None
            event = json.loads(plan.invoke["Payload"])
    raise AssertionError(f"{function}: no outcome after {MAX_ATTEMPTS} attempts")


def test_every_function_and_its_role_is_wired(planned: dict[str, Run]) -> None:
    run = planned["function"].passed()
    names = run.outputs["function_names"]
    assert names == {
        "charge": "heal-example-charge",
        "invoice": "heal-example-invoice",
        "audit": "heal-example-audit",
    }
    handlers = {k: run.resources[f'aws_lambda_function.example["{k}"]']["handler"] for k in names}
    assert handlers == {k: f"self_healing_example.{k}.handler" for k in names}
    subscriptions = {
        k: run.resources[f'aws_sns_topic_subscription.example["{k}"]']["protocol"] for k in names
    }
    assert subscriptions == dict.fromkeys(names, "lambda")
    # The audit subscriber is no source: no failure destination, so nothing of it is ever redriven.
    configs = [
        a for a in run.resources if a.startswith("module.heal.aws_lambda_function_event_invoke_config.source")
    ]
    assert sorted(configs) == [
        'module.heal.aws_lambda_function_event_invoke_config.source["charge"]',
        'module.heal.aws_lambda_function_event_invoke_config.source["invoice"]',
    ]
    assert run.outputs["retry_limits"] == {"charge": 3, "invoice": 2}


def test_monitoring_watches_every_queue_where_a_message_can_stop(planned: dict[str, Run]) -> None:
    """One monitoring instance (one dashboard) for the whole queue set, described as self-healing."""
    run = planned["function"].passed()
    alarms = {
        r["alarm_name"]: r["dimensions"]
        for a, r in run.resources.items()
        if a.startswith("module.monitoring[0].aws_cloudwatch_metric_alarm.this[")
    }
    assert alarms == {
        "heal-example-failure-queue-age": {"QueueName": "heal-example-failures"},
        "heal-example-failure-dlq-depth": {"QueueName": "heal-example-failures-dlq"},
        "heal-example-exhausted-depth": {"QueueName": "heal-example-exhausted"},
        "heal-example-rules-dlq-depth": {"QueueName": "heal-example-rules-dlq"},
        "heal-example-redrive-dlq-depth": {"QueueName": "heal-example-redrive-dlq"},
        "heal-example-schedule-dlq-depth": {"QueueName": "heal-example-schedule-dlq"},
        "heal-example-enrichment-function-errors": {"FunctionName": "heal-example-enrichment"},
        "heal-example-redrive-function-errors": {"FunctionName": "heal-example-redrive"},
    }
    descriptions = [
        r["alarm_description"]
        for a, r in run.resources.items()
        if a.startswith("module.monitoring[0].aws_")
        if "alarm_description" in r
    ]
    assert descriptions
    assert not [d for d in descriptions if "consumer" in d], "a self-healing queue is not a consumer's"
    dashboards = [r for a, r in run.resources.items() if ".aws_cloudwatch_dashboard." in a]
    (dashboard,) = dashboards
    body = json.loads(dashboard["dashboard_body"])
    functions = {
        m[3]
        for w in body["widgets"]
        if w["type"] == "metric"
        for m in w["properties"]["metrics"]
        if m[0] == "AWS/Lambda"
    }
    assert functions == {f"heal-example-{k}" for k in ("charge", "invoice", "audit", "enrichment", "redrive")}
    assert run.outputs["dashboard_name"] == "heal-example"
    quiet = planned["no_monitoring"].passed()
    assert not [a for a in quiet.resources if a.startswith("module.monitoring")]


def test_charge_is_retried_three_times_with_backoff_then_exhausted(planned: dict[str, Run]) -> None:
    from self_healing_example import charge

    run = planned["function"].passed()
    topic = "arn:aws:sns:us-east-1:123456789012:mock-topic"
    outcome = _chain(run, "heal-example-charge", charge.handler, _sns_event(topic, {"order_id": "o-1"}))
    assert outcome == ("exhausted", [10, 20, 40], 4)


def test_charge_heals_when_the_gateway_recovers(planned: dict[str, Run]) -> None:
    from self_healing_example import charge

    run = planned["function"].passed()
    event = _sns_event(
        "arn:aws:sns:us-east-1:123456789012:mock-topic", {"order_id": "o-2", "succeed_on_attempt": 3}
    )
    assert _chain(run, "heal-example-charge", charge.handler, event) == ("processed", [10, 20], 3)


def test_invoice_without_customer_is_never_retried(planned: dict[str, Run]) -> None:
    from self_healing_example import invoice

    run = planned["function"].passed()
    event = _sns_event("arn:aws:sns:us-east-1:123456789012:mock-topic", {"invoice_id": "i-1"})
    assert _chain(run, "heal-example-invoice", invoice.handler, event) == ("non-retryable", [], 1)
    ok = _sns_event(
        "arn:aws:sns:us-east-1:123456789012:mock-topic", {"invoice_id": "i-2", "customer_id": "c-9"}
    )
    assert _chain(run, "heal-example-invoice", invoice.handler, ok) == ("processed", [], 1)


def test_audit_never_fails() -> None:
    from self_healing_example import audit

    event = _sns_event("arn:aws:sns:us-east-1:123456789012:mock-topic", {"order_id": "o-1"})
    assert audit.handler(event, _context("heal-example-audit", 1)) == {"audited": "o-1"}
    assert audit.handler(_sns_event("t", "not json"), _context("heal-example-audit", 2)) == {"audited": None}  # type: ignore[arg-type]


def test_topic_mode_lets_the_redrive_and_scheduler_publish(planned: dict[str, Run]) -> None:
    run = planned["topic"].passed()
    settings = _redrive_settings(run)
    assert settings.redrive_to == "topic"
    assert {n: s.topic_arn for n, s in settings.sources.items()} == {
        "heal-example-charge": "arn:aws:sns:us-east-1:123456789012:mock-topic",
        "heal-example-invoice": "arn:aws:sns:us-east-1:123456789012:mock-topic",
    }

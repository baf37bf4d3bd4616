"""examples/native-retry applied once to the emulator (the shared ``native_retry_stack``, release =
"buggy"): what was created, then the story of ``serverless-retry demo native-retry``, run by the same
code (:func:`serverless_retry_tools.local.demos.native_demo.run_story`): the backlog waits while the bug is
live, drains after a second apply of the fix with no redrive, the ledger holds one entry per order
although orders were delivered more than once, and the DLQ stays empty."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from serverless_retry_tools.local.demos.native_demo import FIXED_HANDLER, StoryResult, run_story
from serverless_retry_tools.local.demos.native_workload import (
    BACKLOG,
    CRASH_AFTER_WRITE,
    RESENT_LATER,
    SENT_TWICE,
    build_native_workload,
)

from tests.terraform.conftest import Terraform, attached_provider, terraform_env
from tests.terraform.example_endpoints import missing_from_block
from tests.terraform.stack import Applied, used_after

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def native(native_retry_stack: Applied) -> Applied:
    return native_retry_stack


def _apply(native: Applied, release: str) -> None:
    """A second apply with another release. -refresh=false: the state is this test run's own and
    nothing else changes the stack, and it halves the apply on a loaded machine, which is what the
    fix's budget (4 visibility timeouts of 18 real seconds at the stack's x10) has to cover."""
    variables = {**native.variables, "release": release}
    terraform = Terraform(terraform_env(), niced=False)  # on a deadline: never niced
    env = native.emulator.env()
    # One provider of its own for the apply (conftest.attached_provider): Terraform would start ~4.
    with attached_provider(native.directory, {**terraform.env, **env}, niced=False) as attached:
        result = terraform.run(
            [
                "apply",
                "-auto-approve",
                "-no-color",
                "-refresh=false",
                *(f"-var={k}={v}" for k, v in variables.items()),
            ],
            native.directory,
            extra_env={**env, **attached},
            timeout=300,
        )
    assert result.returncode == 0, result.stdout + result.stderr


def test_second_plan_is_empty(native: Applied) -> None:
    assert native.second_plan.returncode == 0, native.second_plan.stdout + native.second_plan.stderr


def test_the_readme_endpoints_block_covers_every_service_the_example_calls(native: Applied) -> None:
    """Applied through AWS_ENDPOINT_URL; the README's `-var aws_endpoint_url=...` alone uses the block."""
    assert missing_from_block(native) == {}


def test_an_alarm_on_records_failing_fires_inside_the_redrive_window(native: Applied) -> None:
    """Receives without a delete on the source queue, over periods of the visibility timeout: it
    fires within one period and two minutes of a failure, long before the DLQ move (5 x visibility)."""
    out = native.outputs
    name = out["alarm_arns"]["records_failing"].rsplit(":", 1)[1]
    (alarm,) = native.client("cloudwatch").describe_alarms(AlarmNames=[name])["MetricAlarms"]
    queries = {q["Id"]: q for q in alarm["Metrics"]}
    assert queries["failing"]["Expression"] == "FILL(received, 0) - FILL(deleted, 0)"
    assert queries["received"]["MetricStat"]["Metric"]["MetricName"] == "NumberOfMessagesReceived"
    assert queries["deleted"]["MetricStat"]["Metric"]["MetricName"] == "NumberOfMessagesDeleted"
    visibility = 6 * native.variables["function_timeout"]
    period = queries["received"]["MetricStat"]["Period"]
    assert visibility <= period < visibility + 60
    assert period + 120 < out["max_receive_count"] * visibility
    assert "plain handler" in alarm["AlarmDescription"] or "handler reported" in alarm["AlarmDescription"]
    assert "SendMessageBatch" not in alarm["AlarmDescription"]


def test_queue_dlq_and_mapping_are_native_retry_done_right(native: Applied) -> None:
    out = native.outputs
    sqs = native.client("sqs")
    source = sqs.get_queue_attributes(QueueUrl=out["queue_url"], AttributeNames=["All"])["Attributes"]
    assert source["VisibilityTimeout"] == str(6 * native.variables["function_timeout"])
    assert json.loads(source["RedrivePolicy"]) == {
        "deadLetterTargetArn": out["dlq_arn"],
        "maxReceiveCount": 5,
    }
    dlq = sqs.get_queue_attributes(QueueUrl=out["dlq_url"], AttributeNames=["All"])["Attributes"]
    assert (source["MessageRetentionPeriod"], dlq["MessageRetentionPeriod"]) == ("345600", "1209600")
    # A plain handler never gives up by itself: no retry-exhausted queue.
    assert sorted(u.rsplit("/", 1)[1] for u in sqs.list_queues()["QueueUrls"]) == [
        "native-orders",
        "native-orders-dlq",
    ]
    lam = native.client("lambda")
    config = lam.get_function_configuration(FunctionName=out["function_name"])
    assert config["Handler"] == "native_orders.buggy.handler"
    env = config["Environment"]["Variables"]
    assert not [k for k in env if k.startswith("SERVERLESS_RETRY_")]
    assert env["IDEMPOTENCY_TABLE"] == out["idempotency_table_name"]
    assert env["LEDGER_TABLE"] == out["ledger_table_name"]
    # Bookings are remembered while any copy can still arrive: source retention + DLQ retention.
    assert env["IDEMPOTENCY_EXPIRES_AFTER_SECONDS"] == str(345600 + 1209600)
    (mapping,) = lam.list_event_source_mappings(EventSourceArn=out["queue_arn"])["EventSourceMappings"]
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def _statements(document: dict[str, Any]) -> dict[str, tuple[set[str], set[str]]]:
    def as_set(value: str | list[str]) -> set[str]:
        return {value} if isinstance(value, str) else set(value)

    return {s["Sid"]: (as_set(s["Action"]), as_set(s["Resource"])) for s in document["Statement"]}


def test_the_role_may_consume_log_and_book_nothing_more(native: Applied) -> None:
    iam, out = native.client("iam"), native.outputs
    role = out["role_name"]
    account, region = native.emulator.account_id, native.emulator.region
    table = f"arn:aws:dynamodb:{region}:{account}:table/"
    documents = {
        name: iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
        for name in iam.list_role_policies(RoleName=role)["PolicyNames"]
    }
    statements: dict[str, tuple[set[str], set[str]]] = {}
    for document in documents.values():
        statements.update(_statements(document))
    assert statements == {
        "ConsumeSourceQueue": (
            {
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:GetQueueAttributes",
            },  # a plain handler retries through SQS alone: it never changes a visibility
            {out["queue_arn"]},
        ),
        "WriteOwnLogs": (
            {"logs:CreateLogStream", "logs:PutLogEvents"},
            {f"arn:aws:logs:{region}:{account}:log-group:/aws/lambda/{out['function_name']}:log-stream:*"},
        ),
        "IdempotencyRecords": (
            # Powertools reads a conflicting record from its conditional PutItem's answer: no GetItem.
            {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"},
            {table + out["idempotency_table_name"]},
        ),
        "BookLedgerEntries": ({"dynamodb:PutItem"}, {table + out["ledger_table_name"]}),
    }


@pytest.fixture(scope="module")
def story(
    native: Applied, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StoryResult]:
    """The story, once for the module; afterwards the stack is back at release = "buggy" if a later
    test uses it (an apply, ~12 s of CPU, that nothing would look at otherwise)."""
    workload = build_native_workload(8, sent_twice=1, crash_after_write=1, resent_later=1, seed=11)
    lines: list[str] = []
    try:
        yield run_story(
            native.outputs,
            emulator=native.emulator,
            workload=workload,
            deploy_fix=lambda: _apply(native, "fixed"),
            work_dir=tmp_path_factory.mktemp("native-story"),
            failed_receives_before_fix=1,
            wave_after_drain=False,  # the after-fix orders at once: one visibility timeout less to wait
            deadline_seconds=180,
            out=lines.append,
        )
    finally:
        print("\n".join(lines))
        if used_after(request, native.spec):
            _apply(native, "buggy")  # as the shared stack was applied
            lam = native.client("lambda")
            assert (
                lam.get_function_configuration(FunctionName=native.outputs["function_name"])["Handler"]
                != FIXED_HANDLER
            )


def test_the_backlog_drains_after_the_fix_with_one_ledger_entry_per_order(story: StoryResult) -> None:
    # While the bug was live every message failed and waited in the queue: none lost, none dead.
    assert story.bug_snapshot == {"sent": 8, "waiting": 8, "dlq": 0, "ledger": 0}  # 7 orders, 1 twice
    assert story.fix_live_logical_s is not None
    assert story.margin_logical_s is not None
    assert story.margin_logical_s > 0
    # Every message processed, none in the DLQ, each by its own log evidence.
    assert story.accounting.balanced, story.accounting.totals
    assert {f.outcome for f in story.accounting.fates} == {"processed"}
    assert story.accounting.dlq == 0
    assert all(f.evidence == "processor-log" for f in story.accounting.fates)
    # Backlog orders failed at least once, then were acknowledged within maxReceiveCount.
    for fate in story.accounting.fates:
        if fate.sent.label not in (CRASH_AFTER_WRITE, RESENT_LATER):
            assert 2 <= fate.attempts <= 5, fate
            assert set(fate.transports) == {"visibility"}
    # One ledger entry and one logged write per order, although 8 orders took 11 successful or
    # crashed deliveries.
    assert story.ledger == dict.fromkeys(sorted(story.orders), 1)
    assert story.writes == dict.fromkeys(sorted(story.orders), 1)
    # The duplicate deliveries were answered by idempotency: the second copy of the order sent twice,
    # the crashed order's redelivery, and whichever of the resent order's two copies came second
    # (the copy is sent as soon as the fix is live, often before the original's next receive).
    assert story.expected_replays == 3
    assert story.replays[SENT_TWICE] == story.replays[CRASH_AFTER_WRITE] == 1
    assert story.replays[RESENT_LATER] + story.replays[BACKLOG] == 1
    assert sum(story.replays.values()) == 3
    (crashed,) = [f for f in story.accounting.fates if f.sent.label == CRASH_AFTER_WRITE]
    assert (crashed.attempts, crashed.transports) == (2, ("visibility",))
    assert not story.problems
    assert story.ok

"""modules/scheduled-retry with fifo = true, both orders (tests/terraform/fixtures/fifo-retry), applied to
the emulator: a second plan is empty and the queues, the consumers' settings and the mappings are what
AWS needs for FIFO retries (content-based deduplication, a standard queue for the schedules' dead
letters, no batching window). tests/integration/test_fifo_on_emulator.py drives the same stack."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.terraform.stack import Applied

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def applied(fifo_retry_stack: Applied) -> Applied:
    return fifo_retry_stack


def _attributes(applied: Applied, url: str) -> dict[str, str]:
    sqs = applied.client("sqs")
    attributes: dict[str, str] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return attributes


def test_second_plan_is_empty(applied: Applied) -> None:
    assert applied.second_plan.returncode == 0, applied.second_plan.stdout + applied.second_plan.stderr


@pytest.mark.parametrize("order", ["ordered", "unordered"])
def test_fifo_queues_deduplicate_by_content_and_schedules_dead_letter_to_a_standard_queue(
    applied: Applied, order: str
) -> None:
    source = applied.outputs["sources"][order]
    queue = _attributes(applied, source["queue_url"])
    assert (queue["FifoQueue"], queue["ContentBasedDeduplication"]) == ("true", "true")
    assert source["queue_arn"].endswith(".fifo")
    assert source["dlq_arn"].endswith(".fifo")
    redrive = json.loads(queue["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == source["dlq_arn"]
    # ordered retries in place (every attempt is a receive): headroom above max_attempts 4.
    assert redrive["maxReceiveCount"] == (10 if order == "ordered" else 5)
    schedule_dlq = _attributes(applied, source["schedule_dlq_url"])
    assert "FifoQueue" not in schedule_dlq  # the Scheduler takes standard dead-letter queues only
    assert source["schedule_dlq_arn"] == schedule_dlq["QueueArn"]
    assert not source["schedule_dlq_arn"].endswith(".fifo")


@pytest.mark.parametrize("order", ["ordered", "unordered"])
def test_consumers_know_their_order_and_the_schedules_dead_letter_queue(applied: Applied, order: str) -> None:
    source = applied.outputs["sources"][order]
    lam = applied.client("lambda")
    config = lam.get_function_configuration(FunctionName=source["function_name"])
    env: dict[str, Any] = config["Environment"]["Variables"]
    assert env["SERVERLESS_RETRY_FIFO_ORDER"] == order
    assert env["SERVERLESS_RETRY_DLQ_ARN"] == source["schedule_dlq_arn"]
    (mapping,) = lam.list_event_source_mappings(EventSourceArn=source["queue_arn"])["EventSourceMappings"]
    assert mapping["BatchSize"] <= 10  # a FIFO source: at most 10, and no batching window
    assert mapping.get("MaximumBatchingWindowInSeconds", 0) == 0
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    if order == "ordered":
        # Retries stay in their group, in place: no Scheduler at all.
        assert source["transport"] == "visibility"
        assert source["schedule_group_name"] is None
        assert "SERVERLESS_RETRY_SCHEDULE_GROUP" not in env
    else:
        assert source["transport"] == "scheduler"
        assert env["SERVERLESS_RETRY_SCHEDULE_GROUP"] == source["schedule_group_name"]
        assert env["SERVERLESS_RETRY_SCHEDULER_ROLE_ARN"] == source["scheduler_role_arn"]

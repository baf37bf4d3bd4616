"""modules/self-healing's failure queue and its DLQ, made by modules/queue: `terraform test` cannot read
a child module's resources nor expect its preconditions, so these cases plan the module on the mock
provider and read them from the plan."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.terraform.conftest import Workspace
from tests.terraform.mocked_plan import Run, plan_runs

MODULE = "modules/self-healing"
DEPENDENCIES = (
    "modules/retry-policy",
    "modules/queue",
    "modules/scheduler",
    "modules/function",
    "modules/private-bucket",
)
PACKAGE = "../../tests/terraform/fixtures/empty.zip"
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
SOURCES = {"orders": {"function_name": "orders-fn", "function_role_name": "orders-role"}}
BASE = {"name": "heal", "package": PACKAGE, "sources": SOURCES, "tags": {"team": "orders"}}
QUEUE = "module.failure_queue.aws_sqs_queue.source"
DLQ = "module.failure_queue.aws_sqs_queue.dlq"


@pytest.fixture(scope="module")
def planned(workspace: Workspace, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    runs: dict[str, dict[str, Any]] = {
        "managed_sse": BASE,
        "kms": {**BASE, "kms_key_arn": KEY, "timeout": 60, "max_receive_count": 3},
        "dlq_retention_not_longer": {
            **BASE,
            "message_retention_seconds": 1209600,
            "dlq_message_retention_seconds": 1209600,
        },
    }
    return plan_runs(workspace, tmp_path_factory.mktemp("self-healing-queues"), MODULE, runs, DEPENDENCIES)


def test_the_failure_queue_and_its_dlq_are_what_they_were(planned: dict[str, Run]) -> None:
    resources = planned["managed_sse"].passed().resources
    queue, dlq = resources[QUEUE], resources[DLQ]
    assert (queue["name"], dlq["name"]) == ("heal-failures", "heal-failures-dlq")
    assert queue["visibility_timeout_seconds"] == 180  # 6 x the enrichment's 30 s
    assert (queue["message_retention_seconds"], dlq["message_retention_seconds"]) == (345600, 1209600)
    assert queue["max_message_size"] == dlq["max_message_size"] == 262144
    assert json.loads(queue["redrive_policy"])["maxReceiveCount"] == 5
    for q in (queue, dlq):
        assert q["sqs_managed_sse_enabled"] is True
        assert q["kms_master_key_id"] is None
        assert q["tags"] == {"team": "orders"}
        assert not q.get("fifo_queue")
    # No retry-exhausted queue of modules/queue's: the module's own `<name>-exhausted` is that.
    assert not any(a.startswith("module.failure_queue.aws_sqs_queue.exhausted") for a in resources)
    assert "module.failure_queue.aws_sqs_queue_redrive_allow_policy.dlq" in resources
    # Their TLS-only policies (the documents themselves are modules/queue's, tested there).
    for policy in ("source", "dlq"):
        assert f"module.failure_queue.aws_sqs_queue_policy.{policy}" in resources


def test_the_failure_queues_use_the_key(planned: dict[str, Run]) -> None:
    resources = planned["kms"].passed().resources
    queue = resources[QUEUE]
    assert queue["visibility_timeout_seconds"] == 360
    assert json.loads(queue["redrive_policy"])["maxReceiveCount"] == 3  # below 5 is the module's choice
    for q in (queue, resources[DLQ]):
        assert q["kms_master_key_id"] == KEY
        assert q["kms_data_key_reuse_period_seconds"] == 300
        assert not q["sqs_managed_sse_enabled"]


def test_a_dlq_that_does_not_outlive_the_failure_queue_is_refused(planned: dict[str, Run]) -> None:
    run = planned["dlq_retention_not_longer"]
    assert run.status in ("fail", "error")
    assert any("must be longer than message_retention_seconds" in e for e in run.errors), run.errors

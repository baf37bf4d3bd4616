"""Long scheduled-retry chains on examples/scheduled-retry as the modules apply it: the consumer
sends each retry back to its own queue, and modules/consumer sets its recursion config to Allow, so
more than Lambda's 16 sends in one chain of requests run to the end on the emulator (which stops a
function left at Lambda's default, Terminate: tests/integration/test_recursion.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serverless_retry_tools.local.aws_rules.recursion import MAX_CHAIN_INVOCATIONS
from serverless_retry_tools.local.demos.scheduled_workload import WorkItem

from .conftest import Stack
from .harness import Harness

pytestmark = pytest.mark.integration


@pytest.fixture
def policy(stack: Stack) -> Iterator[Any]:
    """Sets the consumer's policy for one test (as a re-apply with another retry_policy would) and
    puts the applied one back."""
    lam = stack.client("lambda")
    name = stack.outputs["function_name"]
    before = lam.get_function_configuration(FunctionName=name)["Environment"]["Variables"]

    def use(policy: dict[str, Any]) -> None:
        lam.update_function_configuration(
            FunctionName=name,
            Environment={"Variables": {**before, "SERVERLESS_RETRY_POLICY": json.dumps(policy)}},
        )

    yield use
    lam.update_function_configuration(FunctionName=name, Environment={"Variables": before})


def _timeouts(order_id: str, fail_times: int) -> WorkItem:
    body = {"order_id": order_id, "behaviour": "timeout", "fail_times": fail_times}
    return WorkItem("timeout", order_id, json.dumps(body), "processed")


def test_the_module_allows_the_consumers_recursion(stack: Stack) -> None:
    lam = stack.client("lambda")
    config = lam.get_function_recursion_config(FunctionName=stack.outputs["function_name"])
    assert config["RecursiveLoop"] == "Allow"


@pytest.mark.parametrize(
    ("transport", "attempts"),
    [("sqs-delay", 40), ("sqs-hops", 21)],  # 39 SQS-delay retries; 20 delay hops
)
def test_a_chain_longer_than_lambdas_count_completes(
    stack: Stack, policy: Any, tmp_path: Path, transport: str, attempts: int
) -> None:
    backoff = {"strategy": "fixed", "base_seconds": 10, "jitter": "none"}
    policy(
        {
            "max_attempts": attempts,
            "transport": transport,
            "backoff": backoff,
            "rules": [{"errors": ["TimeoutError"], "max_attempts": attempts, "backoff": backoff}],
        }
    )
    harness = Harness(stack, tmp_path)
    sent = harness.send([_timeouts(f"o-{transport}", attempts - 1)])
    assert harness.run(deadline=60), f"not settled; runtime errors: {harness.runtime.errors}"
    (fate,) = harness.account(sent).fates
    assert (fate.outcome, fate.attempts) == ("processed", attempts), fate
    assert set(fate.transports) == {transport}
    assert len(fate.transports) == attempts - 1 > MAX_CHAIN_INVOCATIONS
    assert harness.runtime.stats["recursive_invocations_dropped"] == 0
    assert not [e for e in harness.events if e.kind == "recursion-stopped"]
    assert not harness.runtime.errors

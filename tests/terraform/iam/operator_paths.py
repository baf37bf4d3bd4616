"""Drive the operator's redrive function (modules/scheduled-retry operator.tf) through its paths:
a filtered pass over the retry-exhausted queue (move some, release the rest), a pass over the DLQ,
SQS's own move task out of the DLQ, back to the source queue and to a named destination, and a
re-invoke of a function (to_function), refused before any call."""

from __future__ import annotations

import pytest
from serverless_retry.clock import FrozenClock
from serverless_retry.redrive.options import OptionsError
from serverless_retry.testing import lambda_context

from tests.functional.redrive_world import World as Filler
from tests.terraform.iam.consumer_paths import load_handler
from tests.terraform.iam.granted import Function
from tests.terraform.iam.world import World


def every_path(world: World, function: Function) -> None:
    g = world.granted
    source = g.queue_by_name("orders")
    dlq = g.queue_by_name("orders-dlq")
    exhausted = g.queue_by_name("orders-exhausted")
    for queue in (source, dlq, exhausted):
        world.purge(queue)
    filler = Filler(world.sqs, FrozenClock(), source.url, dlq.url, exhausted.url)
    filler.final("a", TimeoutError("t"))
    filler.final("b", ValueError("v"), outcome="non-retryable")  # skipped by the filter: released
    with world.environment(function):
        handler = load_handler(function)

    def invoke(event: dict[str, object]) -> dict[str, object]:
        with world.environment(function), world.recorder.acting_as(function.role, f"code of {function.name}"):
            result: dict[str, object] = handler(event, lambda_context(function.name))
        return result

    # Native on the retry-exhausted queue (the default source): refused, with the reason.
    assert invoke({"native": True})["applies"] is False
    moved = invoke({"outcome": ["exhausted"], "max": 10})
    assert moved["moved"] == 1, moved
    world.send(dlq, "plain dead letter")
    assert invoke({"from_queue_url": dlq.url, "max": 10})["moved"] == 1
    world.send(dlq, "plain dead letter")
    assert "task_handle" in invoke({"native": True, "from_queue_url": dlq.url})
    world.send(dlq, "plain dead letter")
    assert "task_handle" in invoke({"native": True, "from_queue_url": dlq.url, "to_queue_url": source.url})

    # Re-invoking a function is refused before any call: the role grants lambda:InvokeFunction on none.
    before = len(world.recorder.calls)
    with pytest.raises(OptionsError, match="re-invokes no function"):
        invoke({"to_function": True, "from_queue_url": dlq.url})
    assert len(world.recorder.calls) == before

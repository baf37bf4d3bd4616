"""Drive examples/native-retry's plain handler (modules/consumer with processor = null) through its
call paths: a first booking (Powertools' in-progress PutItem, the ledger's PutItem, UpdateItem with
the result), a booking whose delivery then fails and comes back (its replay: a failed conditional
PutItem that returns the stored record), an order that cannot be parsed (no call), and a ledger write
that fails (Powertools deletes the in-progress record). SQS redelivers and dead-letters by itself: the
function's code makes no SQS call; the event source mapping receives and deletes with its role."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from serverless_retry.testing import lambda_context

from tests.terraform.iam.consumer_paths import load_handler
from tests.terraform.iam.granted import Function
from tests.terraform.iam.world import World, lambda_records

SRC = Path(__file__).resolve().parents[3] / "examples" / "native-retry" / "src"


def _order(order_id: str, **extra: str) -> str:
    return json.dumps({"order_id": order_id, "amount": "12.50", "currency": "EUR", **extra})


def every_path(world: World, function: Function) -> None:
    """A cold start of the example's package (imported afresh, with the function's environment: its
    loggers take their service name then), forgotten afterwards so no other test sees this one's."""
    sys.path.insert(0, str(SRC))
    try:
        _drive(world, function)
    finally:
        sys.path.remove(str(SRC))
        for name in [m for m in sys.modules if m == "native_orders" or m.startswith("native_orders.")]:
            del sys.modules[name]


def _drive(world: World, function: Function) -> None:
    with world.environment(function):
        handler = load_handler(function)
    [mapping] = world.granted.mappings
    queue = world.granted.queues[mapping["event_source_arn"]]
    ledger = function.env["LEDGER_TABLE"]
    via = f"event source mapping of {function.name}"

    def batch(bodies: list[str], *, refuse_ledger: bool = False) -> set[str]:
        world.purge(queue)
        for body in bodies:
            world.send(queue, body)
        messages = world.receive_as(function.role, via, queue)
        assert len(messages) == len(bodies), f"received {len(messages)} of {len(bodies)}"
        records = lambda_records(messages, queue.arn)
        event: dict[str, Any] = {"Records": records}
        refusal = (
            world.recorder.refusing(
                "PutItem", "ProvisionedThroughputExceededException", when=lambda p: p["TableName"] == ledger
            )
            if refuse_ledger
            else nullcontext()
        )
        with (
            world.environment(function),
            world.recorder.acting_as(function.role, f"code of {function.name}"),
            refusal,
        ):
            response: dict[str, Any] = handler(event, lambda_context(function.name))
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        world.delete_as(
            function.role, via, queue, [r["receiptHandle"] for r in records if r["messageId"] not in failed]
        )
        return failed

    crash = _order("o-2", simulate="crash-after-write")
    assert len(batch([_order("o-1"), crash, "not json"])) == 2
    assert batch([crash]) == set()  # the redelivery: answered from the idempotency record
    # Every record failed: Powertools raises rather than answer (its default); the batch comes back whole.
    with pytest.raises(BatchProcessingError):
        batch([_order("o-3")], refuse_ledger=True)

"""Drive the deployed consumer handler through every call path its configuration has.

One batch carries a message for each decision (success, a short retry, a long one, a non-retryable
error, an invalid envelope, a due copy, an early copy, a copy at the end of its budget); then the
Scheduler refuses (the SQS-hops fallback), and a CreateSchedule's answer is lost (looked up by name
with GetSchedule); on FIFO a failed message holds its group back; with the claims table (the default)
two copies of one attempt meet their claim and a redelivered copy marks its claim finished; with the
idempotency table Powertools replays a processor that already succeeded.
"""

from __future__ import annotations

import importlib
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from serverless_retry.testing import lambda_context

from tests.terraform.iam.granted import Function, Queue
from tests.terraform.iam.world import World, env_queue, lambda_records

OK = {"do": "ok"}
SHORT = {"do": "raise", "error": "TimeoutError"}  # the policy's default backoff: seconds to minutes
LONG = {"do": "http", "status": 429, "retry_after": 7200}  # two hours: a schedule (or hops)
NON_RETRYABLE = {"do": "raise", "error": "ValueError"}
INVALID = json.dumps({"serverless_retry": {"v": 99}, "body": "x", "attributes": {}})

# The policy every scheduled-retry case plans with (the transport varies by case).
POLICY: dict[str, Any] = {
    "max_attempts": 4,
    "backoff": {"strategy": "exponential", "base_seconds": 10, "max_seconds": 600},
    "rules": [
        {"errors": ["ValueError"], "retry": False},
        {"http_status": [429], "honor_retry_after": True, "backoff": {"strategy": "fixed", "base_seconds": 60, "max_seconds": 86400}},
    ],
}  # fmt: skip


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def envelope(queue: Queue, spec: dict[str, Any], *, attempt: int, due_in: int, retry_id: str) -> str:
    now = datetime.now(UTC)
    return json.dumps(
        {
            "serverless_retry": {
                "v": 1,
                "id": retry_id,
                "attempt": attempt,
                "first_failed_at": _time(now - timedelta(minutes=5)),
                "source": queue.arn,
                "history": [],
                "due_at": _time(now + timedelta(seconds=due_in)),
            },
            "body": json.dumps(spec),
            "attributes": {},
        }
    )


def load_handler(function: Function) -> Callable[[dict[str, Any], Any], Any]:
    """The handler the plan deploys (module.attribute), imported afresh with the function's environment,
    as a cold start does."""
    module_name, attribute = function.handler.rsplit(".", 1)
    module = importlib.import_module(module_name)
    module = importlib.reload(module)
    handler: Callable[[dict[str, Any], Any], Any] = getattr(module, attribute)
    return handler


class ConsumerRun:
    def __init__(self, world: World, function: Function) -> None:
        self.world = world
        self.function = function
        self.queue = env_queue(world.granted, function.env, "SERVERLESS_RETRY_QUEUE_URL")
        self.fifo = self.queue.fifo
        self.in_place = self.fifo and function.env.get("SERVERLESS_RETRY_FIFO_ORDER", "ordered") == "ordered"
        self.in_place = (
            self.in_place
            or json.loads(function.env["SERVERLESS_RETRY_POLICY"]).get("transport") == "visibility"
        )
        with world.environment(function):
            self.handler = load_handler(function)

    def batch(
        self,
        bodies: list[str],
        *,
        groups: list[str] | None = None,
        attributes: dict[int, dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        """Send ``bodies``, let the event source mapping receive them, run the handler, delete the
        records it did not hand back (as the mapping does)."""
        world, fn = self.world, self.function
        world.purge(self.queue)
        batch = uuid.uuid4().hex[:8]
        for i, body in enumerate(bodies):
            # Fresh groups per batch: a FIFO message retried in place stays in flight, holding its group.
            group = f"{batch}-{groups[i] if groups else i}"
            world.send(self.queue, body, group=group, dedup=str(uuid.uuid4()))
        via = f"event source mapping of {fn.name}"
        messages = world.receive_as(fn.role, via, self.queue)
        assert len(messages) == len(bodies), f"received {len(messages)} of {len(bodies)}"
        order = {body: i for i, body in enumerate(bodies)}
        messages.sort(key=lambda m: order.get(m["Body"], 0))
        records = lambda_records(messages, self.queue.arn)
        # What only time would show (a message received many times, or sent days ago).
        for index, values in (attributes or {}).items():
            records[index]["attributes"].update(values)
        with world.environment(fn), world.recorder.acting_as(fn.role, f"code of {fn.name}"):
            response: dict[str, Any] = self.handler({"Records": records}, lambda_context(fn.name))
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        world.delete_as(
            fn.role, via, self.queue, [r["receiptHandle"] for r in records if r["messageId"] not in failed]
        )
        return response

    def every_path(self) -> None:
        q = self.queue
        bodies = [
            json.dumps(OK),
            json.dumps(SHORT),
            json.dumps(LONG),
            json.dumps(NON_RETRYABLE),
            INVALID,
            envelope(q, SHORT, attempt=2, due_in=-60, retry_id="due-copy"),
            envelope(q, OK, attempt=2, due_in=3600, retry_id="early-copy"),
            envelope(q, SHORT, attempt=4, due_in=-60, retry_id="budget-spent"),
        ]
        # In place, attempts are receives: the last original is at the end of its budget.
        self.batch(
            [*bodies, json.dumps(SHORT) + " "],
            attributes={8: {"ApproximateReceiveCount": "4"}} if self.in_place else None,
        )
        with self.world.recorder.refusing("CreateSchedule", "ThrottlingException"):
            self.batch([json.dumps(LONG)])
        # A CreateSchedule whose answer is lost: the consumer looks the schedule up by its name.
        with self.world.recorder.losing_answers("CreateSchedule"):
            self.batch([json.dumps(LONG)])
        if self.fifo:
            # One group: the failure holds back the message behind it.
            self.batch([json.dumps(SHORT), json.dumps(OK)], groups=["same", "same"])
            # An early copy on FIFO hides until due, unless its message would expire first: then a fresh
            # copy waits instead (a message sent almost a retention period ago).
            retention = int(self.function.env["SERVERLESS_RETRY_QUEUE_RETENTION_SECONDS"])
            old = int((datetime.now(UTC) - timedelta(seconds=retention - 600)).timestamp() * 1000)
            self.batch(
                [envelope(q, OK, attempt=2, due_in=3600, retry_id="expiring-copy")],
                attributes={0: {"SentTimestamp": str(old)}},
            )
        if self.function.env.get("SERVERLESS_RETRY_CLAIMS_TABLE"):
            # Two copies of one attempt (a record redelivered after its copy was sent): both meet the
            # chain's claim, the second as a duplicate (or a copy waiting for its owner's lease).
            copy = envelope(q, OK, attempt=3, due_in=-60, retry_id="duplicated")
            self.batch([copy])
            self.batch([copy])
            # A copy on a later receive (its first one crashed) marks its claim finished when done.
            self.batch(
                [envelope(q, OK, attempt=2, due_in=-60, retry_id="redelivered")],
                attributes={0: {"ApproximateReceiveCount": "2"}},
            )
        if self.function.env.get("SERVERLESS_RETRY_IDEMPOTENCY_TABLE"):
            # Powertools idempotency (keyed by the retry id alone) replays a later attempt of a message
            # that already succeeded, from the record its failed conditional write returns.
            self.batch([envelope(q, OK, attempt=3, due_in=-60, retry_id="replayed")])
            self.batch([envelope(q, OK, attempt=4, due_in=-60, retry_id="replayed")])

"""A CreateSchedule that gets no answer (a read timeout, a dropped connection) may have created the
schedule. It must not be taken for a refusal: the SQS-hops fallback copy would start a second chain
beside the schedule. The schedule's name is deterministic, so GetSchedule resolves it first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from serverless_retry.aws import AwsClients
from serverless_retry.clock import FrozenClock
from serverless_retry.errors import RetryableError
from serverless_retry.message import Message
from serverless_retry.testing import sqs_record

from .conftest import Stack, failure_ids, make_consumer
from .faults import client_error

FIXED_2H = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 7200, "max_seconds": 7200}}


def always_fail(message: Message) -> None:
    raise RetryableError("later")


def timeout() -> Exception:
    return ReadTimeoutError(endpoint_url="https://scheduler.us-east-1.amazonaws.com")


def effect_then(lost: Exception) -> tuple[str, Exception]:
    """A scripted step: the call takes effect, then ``lost`` is raised instead of its answer."""
    return ("effect", lost)


class AmbiguousScheduler:
    """moto's Scheduler, with scripted outcomes for its calls: ``creates`` and ``gets`` are lists of
    what each call does in turn - "ok", ``effect_then(error)`` (the call takes effect, its answer is
    lost), or an exception raised without effect. ``before_answer`` runs as an answer is lost (e.g. the
    clock moves on meanwhile)."""

    def __init__(
        self,
        real: Any,
        *,
        creates: list[object],
        gets: list[object] | None = None,
        before_answer: Callable[[], None] | None = None,
    ) -> None:
        self._real = real
        self._creates = list(creates)
        self._gets = list(gets or [])
        self._before_answer = before_answer or (lambda: None)
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _scripted(self, name: str, script: list[object], params: dict[str, Any]) -> Any:
        self.calls.append(name)
        step = script.pop(0) if script else "ok"
        if step == "ok":
            return getattr(self._real, name)(**params)
        if isinstance(step, tuple):
            getattr(self._real, name)(**params)
            self._before_answer()
            raise step[1]
        assert isinstance(step, Exception)
        self._before_answer()
        raise step

    def create_schedule(self, **params: Any) -> Any:
        return self._scripted("create_schedule", self._creates, params)

    def get_schedule(self, **params: Any) -> Any:
        return self._scripted("get_schedule", self._gets, params)


def run(
    stack: Stack, clock: FrozenClock, scheduler: AmbiguousScheduler, message_id: str = "m-1"
) -> list[str]:
    consumer = make_consumer(
        stack, always_fail, FIXED_2H, clock, clients=AwsClients.of(sqs=stack.sqs, scheduler=scheduler)
    )
    record = sqs_record("order", message_id=message_id, queue_arn=stack.queue_arn)
    return failure_ids(consumer({"Records": [record]}))


def hop_copies(stack: Stack) -> list[dict[str, Any]]:
    return [
        e for c in stack.called("SendMessageBatch") if c["QueueUrl"] == stack.queue_url for e in c["Entries"]
    ]


@pytest.mark.parametrize(
    "lost",
    [timeout(), EndpointConnectionError(endpoint_url="https://scheduler.us-east-1.amazonaws.com")],
    ids=["read-timeout", "connection-dropped"],
)
def test_a_schedule_created_without_an_answer_is_found_and_no_hop_is_sent(
    stack: Stack, clock: FrozenClock, lost: Exception
) -> None:
    scheduler = AmbiguousScheduler(stack.scheduler, creates=[effect_then(lost)])

    assert run(stack, clock, scheduler) == []

    assert scheduler.calls == ["create_schedule", "get_schedule"]
    assert len(stack.schedules()) == 1  # one chain: the schedule
    assert hop_copies(stack) == []  # and no fallback copy beside it


def test_a_create_that_took_no_effect_is_made_again_and_scheduled(stack: Stack, clock: FrozenClock) -> None:
    scheduler = AmbiguousScheduler(stack.scheduler, creates=[timeout(), "ok"])

    assert run(stack, clock, scheduler) == []

    assert scheduler.calls == ["create_schedule", "get_schedule", "create_schedule"]
    assert len(stack.schedules()) == 1
    assert hop_copies(stack) == []


def test_a_create_that_lands_late_meets_the_second_as_a_conflict(stack: Stack, clock: FrozenClock) -> None:
    """The first call's request reaches the Scheduler after GetSchedule asked: the second call then
    conflicts with it. Still one schedule, no hop."""
    scheduler = AmbiguousScheduler(
        stack.scheduler,
        creates=[timeout(), client_error("ConflictException", "CreateSchedule")],
    )

    assert run(stack, clock, scheduler) == []

    assert hop_copies(stack) == []
    assert scheduler.calls == ["create_schedule", "get_schedule", "create_schedule"]


def test_a_refusal_after_the_lookup_found_nothing_falls_back_to_hops(
    stack: Stack, clock: FrozenClock
) -> None:
    scheduler = AmbiguousScheduler(
        stack.scheduler, creates=[timeout(), client_error("ThrottlingException", "CreateSchedule")]
    )

    assert run(stack, clock, scheduler) == []

    assert stack.schedules() == []
    assert [e["DelaySeconds"] for e in hop_copies(stack)] == [900]  # the only chain: hops


def test_when_the_lookup_fails_the_record_goes_back_and_its_redelivery_finds_the_schedule(
    stack: Stack, clock: FrozenClock
) -> None:
    scheduler = AmbiguousScheduler(
        stack.scheduler,
        creates=[effect_then(timeout())],
        gets=[client_error("ThrottlingException", "GetSchedule")],
    )

    assert run(stack, clock, scheduler) == ["m-1"]  # unresolved: back to the queue, nothing else sent
    assert hop_copies(stack) == []
    assert len(stack.schedules()) == 1

    clock.advance(30)  # the visibility timeout: the same record again, its CreateSchedule conflicts
    assert run(stack, clock, scheduler) == []
    assert len(stack.schedules()) == 1
    assert hop_copies(stack) == []


def test_a_schedule_missing_at_its_own_time_may_have_run_the_record_goes_back(
    stack: Stack, clock: FrozenClock
) -> None:
    """The answer came so late that the schedule's time has passed: it may have run and deleted itself.
    Creating it again would start a second chain; assuming it ran could lose the message."""
    record_due = 7200

    def the_schedule_runs() -> None:
        clock.advance(record_due + 60)
        for schedule in stack.scheduler.list_schedules(GroupName=stack.group).get("Schedules", []):
            stack.scheduler.delete_schedule(GroupName=stack.group, Name=schedule["Name"])  # ran: gone

    scheduler = AmbiguousScheduler(
        stack.scheduler, creates=[effect_then(timeout())], before_answer=the_schedule_runs
    )

    assert run(stack, clock, scheduler) == ["m-1"]

    assert scheduler.calls == ["create_schedule", "get_schedule"]  # not created again
    assert hop_copies(stack) == []

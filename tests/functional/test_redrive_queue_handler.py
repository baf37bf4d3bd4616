"""The operator's redrive as a Lambda (handlers.redrive_queue): the same options as a JSON event,
queues confined to the function's environment, and a pass that stops before the timeout."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from serverless_retry.clock import FrozenClock
from serverless_retry.handlers import redrive_queue
from serverless_retry.redrive.options import OptionsError
from serverless_retry.testing import lambda_context

from tests.functional.redrive_world import World, event, make_world


@pytest.fixture
def live() -> Iterator[World]:
    with mock_aws():
        yield make_world(boto3.client("sqs", region_name="us-east-1"), FrozenClock())


def _env(world: World) -> dict[str, str]:
    return {
        redrive_queue.ENV_FROM_QUEUE_URLS: f"{world.exhausted},{world.dlq}",
        redrive_queue.ENV_TO_QUEUE_URL: world.source,
    }


class _Context:
    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_the_event_file_is_a_dry_run_that_changes_nothing(live: World) -> None:
    live.final("a", TimeoutError("t"))
    live.final("b", ValueError("v"), outcome="non-retryable")
    result = redrive_queue.run(
        event("redrive-queue-event.json") | {"older_than": None},
        _Context(60_000),
        sqs=live.sqs,
        environ=_env(live),
    )
    assert (result["dry_run"], result["moved"], result["skipped"]) == (True, 1, 1)
    assert [m["error_type"] for m in result["messages"]] == ["TimeoutError"]
    assert live.counts(live.exhausted) == (2, 0)
    assert live.counts(live.source) == (0, 0)


def test_a_real_run_moves_and_reports(live: World) -> None:
    for body in "abc":
        live.final(body, TimeoutError("t"))
    result = redrive_queue.run(
        {"max": 2, "reset_attempts": True}, _Context(60_000), sqs=live.sqs, environ=_env(live)
    )
    assert (result["moved"], result["failed"], result["complete"]) == (2, 0, True)
    assert live.counts(live.source) == (2, 0)
    assert live.counts(live.exhausted) == (1, 0)


def test_the_pass_stops_before_the_timeout_and_leaves_everything(live: World) -> None:
    for body in "abc":
        live.final(body, TimeoutError("t"))
    result = redrive_queue.run(
        {}, _Context(redrive_queue.TIME_MARGIN_MS - 1), sqs=live.sqs, environ=_env(live)
    )
    assert (result["complete"], result["moved"]) == (False, 0)
    assert "time budget" in result["stopped"]
    assert live.counts(live.exhausted) == (3, 0)


def test_queues_outside_the_environment_are_refused(live: World) -> None:
    with pytest.raises(OptionsError, match="redrives only from"):
        redrive_queue.options_for({"from_queue_url": live.source}, _env(live))
    with pytest.raises(OptionsError, match="redrives only to"):
        redrive_queue.options_for({"to_queue_url": live.dlq}, _env(live))
    with pytest.raises(OptionsError, match="unknown option"):
        redrive_queue.options_for({"dryrun": True}, _env(live))
    options = redrive_queue.options_for({"from_queue_url": live.dlq}, _env(live))
    assert (options.from_queue_url, options.to_queue_url) == (live.dlq, live.source)


def test_handler_runs_with_a_lambda_context(live: World, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in _env(live).items():
        monkeypatch.setenv(name, value)
    live.final("a", TimeoutError("t"))
    monkeypatch.setattr(redrive_queue, "client", lambda *_a, **_k: live.sqs)
    context: Any = lambda_context()
    result = redrive_queue.handler({"dry_run": True}, context)
    assert (result["moved"], result["dry_run"]) == (1, True)


def test_native_through_the_handler_explains_why_not(live: World) -> None:
    live.final("a", TimeoutError("t"))
    result = redrive_queue.run({"native": True}, _Context(60_000), sqs=live.sqs, environ=_env(live))
    assert result["applies"] is False
    assert "task_handle" not in result
    assert any("redrive policy" in p for p in result["problems"])

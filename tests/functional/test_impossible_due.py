"""A copy due beyond anything its policy could plan (e.g. in 2099) goes to the retry-exhausted queue as
invalid-envelope with the reason, instead of being re-delayed every 900 s for ever."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from serverless_retry.clock import FrozenClock
from serverless_retry.envelope import format_time
from serverless_retry.message import Message
from serverless_retry.planning import DUE_SKEW_MARGIN_SECONDS

from .conftest import Stack, envelope_of, event_from, failure_ids, make_consumer

POLICY = {"max_attempts": 5, "backoff": {"strategy": "fixed", "base_seconds": 60, "max_seconds": 3600}}


def copy_due(stack: Stack, due: str) -> str:
    meta = {
        "v": 1,
        "id": "first-id",
        "attempt": 2,
        "first_failed_at": "2026-11-30T09:59:00Z",
        "source": stack.queue_arn,
        "history": [],
        "due_at": due,
    }
    return json.dumps({"serverless_retry": meta, "body": '{"order": 7}', "attributes": {}})


def deliver(stack: Stack, clock: FrozenClock, body: str) -> tuple[list[Message], dict[str, Any]]:
    seen: list[Message] = []
    consumer = make_consumer(stack, seen.append, POLICY, clock)
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=body)
    messages = stack.receive(stack.queue_url)
    return seen, consumer(event_from(messages, stack.queue_arn))


def resent_to_source(stack: Stack) -> list[dict[str, Any]]:
    return [
        e for c in stack.called("SendMessageBatch") if c["QueueUrl"] == stack.queue_url for e in c["Entries"]
    ]


def test_a_copy_due_in_2099_goes_to_the_exhausted_queue_not_round_and_round(
    stack: Stack, clock: FrozenClock
) -> None:
    body = copy_due(stack, "2099-01-01T00:00:00Z")
    seen, response = deliver(stack, clock, body)

    assert failure_ids(response) == []
    assert seen == []
    assert resent_to_source(stack) == []  # not re-delayed
    [final] = stack.receive(stack.exhausted_url)
    envelope = envelope_of(final["Body"])
    meta = envelope["serverless_retry"]
    assert meta["outcome"] == "invalid-envelope"
    assert meta["reason"].startswith("serverless_retry.due_at: 2099-01-01T00:00:00Z is later than any retry")
    assert envelope["body"] == body  # the copy, verbatim


def test_a_copy_due_within_the_policys_reach_still_waits(stack: Stack, clock: FrozenClock) -> None:
    due = clock.now() + timedelta(seconds=3600 + DUE_SKEW_MARGIN_SECONDS)  # the latest it may be
    seen, response = deliver(stack, clock, copy_due(stack, format_time(due)))

    assert failure_ids(response) == []
    assert seen == []
    [wait] = resent_to_source(stack)
    assert wait["DelaySeconds"] == 900
    assert stack.receive(stack.exhausted_url) == []

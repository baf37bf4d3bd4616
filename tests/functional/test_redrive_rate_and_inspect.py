"""On moto with the real clock: ``rate`` is honoured (measured within 20 %), and inspect leaves every
message in place and visible the moment it returns."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from serverless_retry.clock import FrozenClock
from serverless_retry.redrive.options import options_from_mapping
from serverless_retry.redrive.queue import Pacer, inspect, redrive

from tests.functional.redrive_world import PAYMENTS_ARN, World, make_world


@pytest.fixture
def live() -> Iterator[World]:
    with mock_aws():
        yield make_world(boto3.client("sqs", region_name="us-east-1"), FrozenClock())


# Rates the in-process emulator keeps up with even on a loaded shared machine (at 50/s a send must
# take under 20 ms: under a load of 12 on 2 cores it did not); the rate is an upper bound, never exceeded.
@pytest.mark.parametrize(("rate", "count"), [(5.0, 12), (10.0, 21), (20.0, 31)])
def test_rate_is_honoured_within_20_percent(live: World, rate: float, count: int) -> None:
    for i in range(count):
        live.final(f"m{i}", TimeoutError("t"))
    options = options_from_mapping(
        {"from_queue_url": live.exhausted, "to_queue_url": live.source, "rate": f"{rate:g}/s"}
    )
    started = time.monotonic()
    report = redrive(live.sqs, options, wait_seconds=0)
    elapsed = time.monotonic() - started
    assert len(report.moved) == count
    measured = report.measured_rate()
    assert measured is not None
    assert rate * 0.8 <= measured <= rate * 1.2, f"measured {measured:.1f}/s for --rate {rate:g}/s"
    assert elapsed >= (count - 1) / rate * 0.8  # the whole run, not only the send timestamps


def test_pacer_spaces_calls_exactly_and_never_bursts_to_catch_up() -> None:
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(round(seconds, 6))
        now[0] += seconds

    pacer = Pacer(4.0, lambda: now[0], sleep)
    pacer.wait()  # the first call goes at once
    pacer.wait()
    now[0] += 1.0  # a slow send: the next call is not squeezed in to make up for it
    pacer.wait()
    pacer.wait()
    assert sleeps == [0.25, 0.25]


def test_inspect_summarises_and_leaves_every_message_visible(live: World) -> None:
    live.final("a", TimeoutError("slow"))
    live.final("b", TimeoutError("slow"), source=PAYMENTS_ARN)
    live.final("c", ValueError("bad"), outcome="non-retryable")
    live.sqs.send_message(QueueUrl=live.exhausted, MessageBody="not ours")
    before = live.counts(live.exhausted)
    result = inspect(live.sqs, live.exhausted, oldest=2, wait_seconds=0)
    # Right after: nothing hidden, nothing removed; a plain receive gets all four at once.
    assert before == (4, 0)
    assert live.counts(live.exhausted) == (4, 0)
    got = live.sqs.receive_message(QueueUrl=live.exhausted, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert len(got["Messages"]) == 4
    assert result.scanned == 4
    assert result.not_released == []
    assert dict(result.by_outcome) == {"exhausted": 2, "non-retryable": 1, "unknown": 1}
    assert dict(result.by_error_type) == {"TimeoutError": 2, "ValueError": 1, "-": 1}
    assert result.by_source["arn:aws:sqs:us-east-1:123456789012:orders"] == 2
    assert result.by_age["< 1 h"] == 4
    assert len(result.oldest) == 2


def test_inspect_sees_each_message_once_in_a_large_queue(live: World) -> None:
    for i in range(35):
        live.sqs.send_message(QueueUrl=live.exhausted, MessageBody=f"plain {i}")
    result = inspect(live.sqs, live.exhausted, limit=30, wait_seconds=0)
    assert (result.scanned, result.limit_reached) == (30, True)
    assert len({m.message_id for m in result.oldest}) == len(result.oldest)
    assert live.counts(live.exhausted) == (35, 0)


def _visible_bodies(world: World, url: str) -> Any:
    return sorted(m["Body"] for m in world.all_messages(url))

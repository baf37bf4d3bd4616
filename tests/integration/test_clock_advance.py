"""A jump of the emulator's logical clock reaches its SQS: past a queue's MessageRetentionPeriod a
message is gone, while a queue that keeps its messages longer still hands its message out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from serverless_retry_tools.local.emulator.emulator import Emulator

pytestmark = pytest.mark.integration


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    with Emulator(log_path=tmp_path / "emulator.log") as emu:
        yield emu


def _received(sqs: Any, url: str) -> list[str]:
    got = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0, WaitTimeSeconds=0)
    return [m["Body"] for m in got.get("Messages", [])]


def test_sqs_expires_a_message_once_the_clock_jumps_past_its_retention(emulator: Emulator) -> None:
    sqs = boto3.client("sqs", **emulator.client_kwargs())
    short = sqs.create_queue(QueueName="short", Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
    kept = sqs.create_queue(QueueName="kept")["QueueUrl"]  # SQS's default: 4 days
    for url in (short, kept):
        sqs.send_message(QueueUrl=url, MessageBody="order-1")
    before = emulator.clock.now().timestamp()

    reached = emulator.advance_clock(30)
    assert reached >= before + 30
    assert _received(sqs, short) == ["order-1"]  # within its retention

    reached = emulator.advance_clock(31)
    assert reached >= before + 61
    assert emulator.clock.now().timestamp() >= reached  # every reader of the clock sees the jump
    assert _received(sqs, short) == []  # past its 60 s retention: gone
    assert _received(sqs, kept) == ["order-1"]

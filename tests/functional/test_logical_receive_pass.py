"""One ReceiveMessage pass sees one instant (logical_time.install_logical_sqs), so a FIFO group comes
back in order even when one of its messages falls due during the pass.

Found by test_fifo_on_emulator under load (about one run in twelve): b1 failed and was hidden for
its wait, b2 behind it was handed back; a later receive returned b2 *without* b1. moto reads the
clock once per message when it lists the visible messages, and again when it recomputes the pending
FIFO groups after a returning message; b1 fell due between the two readings, so it was neither in
the list nor holding its group. AWS receives atomically. The clock here moves on at every reading,
which is what a busy emulator at a high clock scale does, and the start of the pass is swept across
the instant b1 falls due.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from serverless_retry_tools.local.emulator.logical_time import LogicalClock, install_logical_sqs
from serverless_retry_tools.local.emulator.moto_patches import PatchContext, apply_patches
from serverless_retry_tools.local.emulator.patching import Undo

STEP = 0.05  # logical seconds between two readings of the clock
SWEEP = 20  # readings: the pass starts from before a1 falls due to after b1 does
GAPS = range(5)  # readings between a1's and b1's visibility changes


class SteppingClock(LogicalClock):
    """A logical clock that is ``STEP`` seconds later at every reading."""

    def __init__(self) -> None:
        super().__init__(epoch=1_800_000_000.0, scale=1.0)
        object.__setattr__(self, "readings", 0)

    def now(self) -> float:
        readings: int = getattr(self, "readings")  # noqa: B009 - a frozen dataclass's own counter
        object.__setattr__(self, "readings", readings + 1)
        return self.epoch + readings * STEP


def _on_moving_clock_without_one_instant(clock: LogicalClock) -> Undo:
    """moto's SQS on the same moving clock, read afresh at every call (the defect)."""
    from moto.sqs import models

    saved = (models.unix_time, models.unix_time_millis)
    models.unix_time = lambda dt=None: clock.now()  # type: ignore[assignment]
    models.unix_time_millis = lambda dt=None: clock.now() * 1000.0  # type: ignore[assignment]

    def undo() -> None:
        models.unix_time, models.unix_time_millis = saved

    return undo


def _group_b_after_passes(install: Callable[[LogicalClock], Undo]) -> list[list[str]]:
    """For each start of the pass: what one receive returns of group B, after b1 failed and b2 behind
    it was handed back, while a1 of group A (hidden as long, from a few readings earlier) returns."""
    seen: list[list[str]] = []
    clock = SteppingClock()
    undo_fidelity = apply_patches(["sqs_fifo_redelivers_group_last_first"], PatchContext(clock=clock))
    undo_clock = install(clock)
    try:
        with mock_aws():
            sqs: Any = boto3.client("sqs", region_name="us-east-1")
            for gap, idle in itertools.product(GAPS, range(SWEEP)):
                url = sqs.create_queue(
                    QueueName=f"orders-{gap}-{idle}.fifo",
                    Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
                )["QueueUrl"]
                for body, group in (("a1", "A"), ("b1", "B"), ("b2", "B")):
                    sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group)
                batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600)
                handles = {m["Body"]: m["ReceiptHandle"] for m in batch["Messages"]}
                assert sorted(handles) == ["a1", "b1", "b2"]
                for body, seconds in (("a1", 1), ("b1", 1), ("b2", 0)):
                    sqs.change_message_visibility(
                        QueueUrl=url, ReceiptHandle=handles[body], VisibilityTimeout=seconds
                    )
                    for _ in range(gap if body == "a1" else 0):
                        clock.now()
                for _ in range(idle):
                    clock.now()
                again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
                seen.append([m["Body"] for m in again.get("Messages", []) if m["Body"].startswith("b")])
    finally:
        undo_clock()
        undo_fidelity()
    return seen


def test_moving_clock_without_one_instant_hands_out_b2_before_b1() -> None:
    assert ["b2"] in _group_b_after_passes(_on_moving_clock_without_one_instant)


def test_a_receive_pass_sees_one_instant_and_keeps_the_group_in_order() -> None:
    seen = _group_b_after_passes(install_logical_sqs)
    assert all(got in ([], ["b1", "b2"]) for got in seen), seen
    # The sweep crossed the instant b1 falls due.
    assert [] in seen
    assert ["b1", "b2"] in seen


@pytest.fixture(autouse=True)
def _no_leftover_patch() -> Iterator[None]:
    from moto.sqs import models

    before = (models.unix_time, models.SQSBackend.__dict__["receive_message"])
    yield
    assert (models.unix_time, models.SQSBackend.__dict__["receive_message"]) == before


def test_a_long_poll_does_not_hand_out_a_group_that_another_receiver_took_meanwhile() -> None:
    # The runtime receives from one queue on several threads (concurrent batches of a mapping). moto
    # took the groups in flight once per call, so a long poll that began on an empty queue handed out
    # b2 after another receiver had taken b1, ahead of it in the group. On AWS the group is locked.
    from moto.sqs import models

    clock = LogicalClock(epoch=time.time(), scale=1.0)
    undo_fidelity = apply_patches(["sqs_fifo_redelivers_group_last_first"], PatchContext(clock=clock))
    undo_clock = install_logical_sqs(clock)
    real_wait = models.Queue.wait_for_messages
    meanwhile: list[str] = []
    try:
        with mock_aws():
            sqs: Any = boto3.client("sqs", region_name="us-east-1")
            url = sqs.create_queue(
                QueueName="orders.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
            )["QueueUrl"]

            def other_receiver() -> None:
                other: Any = boto3.client("sqs", region_name="us-east-1")
                other.send_message(QueueUrl=url, MessageBody="b1", MessageGroupId="B")
                taken = other.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=60)
                meanwhile.extend(m["Body"] for m in taken["Messages"])
                other.send_message(QueueUrl=url, MessageBody="b2", MessageGroupId="B")

            def wait_for_messages(self: Any, timeout: float) -> None:
                if not meanwhile:  # the first wait of the long poll: another receiver acts
                    thread = threading.Thread(target=other_receiver)
                    thread.start()
                    thread.join(timeout=30)
                real_wait(self, timeout)

            models.Queue.wait_for_messages = wait_for_messages  # type: ignore[method-assign]
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    finally:
        models.Queue.wait_for_messages = real_wait  # type: ignore[method-assign]
        undo_clock()
        undo_fidelity()
    assert meanwhile == ["b1"]
    assert [m["Body"] for m in got.get("Messages", [])] == []  # b1 is in flight: group B waits


def _blocked_group(sqs: Any) -> tuple[str, str]:
    """A FIFO queue whose group B has b1 in flight (for 600 s) and b2 visible behind it."""
    url = sqs.create_queue(
        QueueName="blocked.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    )["QueueUrl"]
    for body in ("b1", "b2"):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="B")
    (b1,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=600)["Messages"]
    assert b1["Body"] == "b1"
    return url, b1["ReceiptHandle"]


@pytest.fixture
def counted_passes() -> Iterator[list[float]]:
    """moto's receive, counted, under install_logical_sqs at x1 (the emulator's own setup)."""
    from moto.sqs import models

    passes: list[float] = []
    real = models.SQSBackend.__dict__["receive_message"]

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        passes.append(time.monotonic())
        return real(self, *args, **kwargs)

    models.SQSBackend.receive_message = counting  # type: ignore[method-assign]
    undo_clock = install_logical_sqs(LogicalClock(epoch=time.time(), scale=1.0))
    try:
        with mock_aws():
            yield passes
    finally:
        undo_clock()
        models.SQSBackend.receive_message = real  # type: ignore[method-assign]


def test_a_long_poll_on_a_blocked_fifo_group_sleeps_instead_of_spinning(counted_passes: list[float]) -> None:
    # b2 is visible but cannot be received while b1 is in flight. The wait used to end whenever a
    # message was visible, so the poll passed over the queue without sleeping until its time ran out
    # (a busy core for as long as an ordered retry waited).
    sqs: Any = boto3.client("sqs", region_name="us-east-1")
    url, _ = _blocked_group(sqs)
    counted_passes.clear()
    started = time.monotonic()
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    assert got.get("Messages", []) == []
    assert time.monotonic() - started >= 0.9  # the whole wait, as on AWS
    assert len(counted_passes) <= 3, f"{len(counted_passes)} receive passes in one long poll"


def test_deleting_the_message_in_flight_wakes_the_long_poll_for_the_next_of_its_group(
    counted_passes: list[float],
) -> None:
    sqs: Any = boto3.client("sqs", region_name="us-east-1")
    url, b1_handle = _blocked_group(sqs)
    deleted: list[float] = []

    def delete_b1() -> None:
        time.sleep(0.3)
        other: Any = boto3.client("sqs", region_name="us-east-1")
        other.delete_message(QueueUrl=url, ReceiptHandle=b1_handle)
        deleted.append(time.monotonic())

    thread = threading.Thread(target=delete_b1)
    thread.start()
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=5)
    returned = time.monotonic()
    thread.join(timeout=10)
    assert [m["Body"] for m in got["Messages"]] == ["b2"]
    assert returned - deleted[0] < 0.5  # woken by the delete, not by the end of the wait

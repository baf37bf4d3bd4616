"""``native`` (StartMessageMoveTask): used for a DLQ fed by an SQS redrive policy, refused with the
reason for a retry-exhausted queue, Lambda destination records and Scheduler dead-letter events. The
in-process emulator patch stands in for the move task moto lacks."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws
from serverless_retry.clock import FrozenClock
from serverless_retry.redrive.native import check_native, start_native, wait_native
from serverless_retry_tools.local.emulator.moto_patches import patched

from tests.functional.redrive_world import World, event, make_world


@pytest.fixture
def live() -> Iterator[World]:
    with mock_aws(), patched("sqs_message_move_task_not_implemented"):
        yield make_world(boto3.client("sqs", region_name="us-east-1"), FrozenClock())


def _dead_letter(world: World, body: str) -> None:
    """Let SQS itself move a message to the DLQ (maxReceiveCount 1)."""
    world.sqs.send_message(QueueUrl=world.source, MessageBody=body)
    for _ in range(3):
        world.sqs.receive_message(QueueUrl=world.source, VisibilityTimeout=0)


def test_a_dlq_fed_by_a_redrive_policy_moves_back_natively(live: World) -> None:
    for body in ("a", "b", "c"):
        _dead_letter(live, body)
    assert live.counts(live.dlq) == (3, 0)
    check = check_native(live.sqs, live.dlq, live.source)
    assert check.applies, check.problems
    assert check.source_queue_urls == (live.source,)
    handle = start_native(live.sqs, check, rate=50)
    task = wait_native(live.sqs, check.queue_arn, handle, timeout=5, poll=0.1)
    assert task["Status"] == "COMPLETED"
    assert live.counts(live.dlq) == (0, 0)
    assert sorted(m["Body"] for m in live.all_messages(live.source)) == ["a", "b", "c"]


def test_the_retry_exhausted_queue_is_refused_with_the_reason(live: World) -> None:
    live.final("a", TimeoutError("t"))
    check = check_native(live.sqs, live.exhausted, live.source)
    assert not check.applies
    assert any("no SQS queue's redrive policy" in p for p in check.problems)
    assert any("final messages" in p and "invalid-envelope" in p for p in check.problems)
    with pytest.raises(ValueError, match="does not apply"):
        start_native(live.sqs, check)
    assert live.counts(live.exhausted) == (1, 0)  # the sample looked and put it back


def test_lambda_destination_records_and_scheduler_dead_letters_are_refused(live: World) -> None:
    live.sqs.send_message(
        QueueUrl=live.dlq, MessageBody=json.dumps(event("destination-record-on-failure.json"))
    )
    live.sqs.send_message(
        QueueUrl=live.dlq,
        MessageBody=json.dumps(event("envelope-v1.json")),
        MessageAttributes={
            "ERROR_CODE": {"DataType": "String", "StringValue": "AWS.SQS.ThrottlingException"},
            "SCHEDULE_ARN": {
                "DataType": "String",
                "StringValue": "arn:aws:scheduler:us-east-1:1:schedule/g/s",
            },
        },
    )
    check = check_native(live.sqs, live.dlq, None)
    assert not check.applies
    assert any("Lambda on-failure destination records" in p for p in check.problems)
    assert any("EventBridge Scheduler" in p and "--to-queue-url" in p for p in check.problems)
    assert check.origins == {"lambda-destination": 1, "scheduler-dlq": 1}


def test_a_fifo_dlq_cannot_move_to_a_standard_queue(live: World) -> None:
    fifo_dlq = live.sqs.create_queue(QueueName="x-dlq.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    redrive = json.dumps(
        {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:x-dlq.fifo", "maxReceiveCount": "1"}
    )
    live.sqs.create_queue(QueueName="x.fifo", Attributes={"FifoQueue": "true", "RedrivePolicy": redrive})
    check = check_native(live.sqs, fifo_dlq, live.source)
    assert any("FIFO" in p for p in check.problems)

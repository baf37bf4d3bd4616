"""A queue's backlog without receiving a message: GetQueueAttributes (visible, in flight, delayed,
the redrive policy and visibility timeout) and CloudWatch's ApproximateAgeOfOldestMessage.

Receiving is not free on a queue with a redrive policy: every receive counts towards its
maxReceiveCount, so looking at a source queue during native retry would push messages towards the
DLQ. ``inspect`` reads this instead of receiving there."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from serverless_retry.clock import Clock
from serverless_retry.redrive.queue import attribute_int

__all__ = ["Backlog", "read_backlog"]

_ATTRIBUTES = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
    "RedrivePolicy",
    "VisibilityTimeout",
    "QueueArn",
]


@dataclass(frozen=True)
class Backlog:
    visible: int | None
    in_flight: int | None
    delayed: int | None
    oldest_age_seconds: float | None  # CloudWatch, the last 5 minutes' maximum; None: no datapoint
    visibility_timeout: int | None
    max_receive_count: int | None  # this queue's own redrive policy; None: it has none
    dead_letter_arn: str | None

    @property
    def dlq_after_seconds(self) -> int | None:
        """How long after its first receive a message that always fails reaches the DLQ: it is
        received at 0, V, ..., (maxReceiveCount - 1) x V and moved on the next receive, at
        maxReceiveCount x V."""
        if self.max_receive_count is None or self.visibility_timeout is None:
            return None
        return self.max_receive_count * self.visibility_timeout

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "dlq_after_seconds": self.dlq_after_seconds}


def _oldest_age(cloudwatch: Any, queue_name: str, clock: Clock) -> float | None:
    now = clock.now()
    try:
        points = cloudwatch.get_metric_statistics(
            Namespace="AWS/SQS",
            MetricName="ApproximateAgeOfOldestMessage",
            Dimensions=[{"Name": "QueueName", "Value": queue_name}],
            StartTime=now - timedelta(minutes=5),
            EndTime=now,
            Period=60,
            Statistics=["Maximum"],
        ).get("Datapoints", [])
    except (ClientError, BotoCoreError):  # no CloudWatch permission or endpoint: say "unknown"
        return None
    if not points:
        return None
    newest = max(points, key=lambda p: p["Timestamp"])
    return float(newest["Maximum"])


def read_backlog(sqs: Any, cloudwatch: Any | None, queue_url: str, clock: Clock) -> Backlog:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=_ATTRIBUTES).get(
        "Attributes", {}
    )
    max_receive: int | None = None
    dead_letter: str | None = None
    if attributes.get("RedrivePolicy"):
        try:
            policy = json.loads(attributes["RedrivePolicy"])
            max_receive = int(policy.get("maxReceiveCount"))
            dead_letter = policy.get("deadLetterTargetArn")
        except (ValueError, TypeError, AttributeError):
            max_receive = None
    name = attributes.get("QueueArn", queue_url).rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    return Backlog(
        visible=attribute_int(attributes, "ApproximateNumberOfMessages"),
        in_flight=attribute_int(attributes, "ApproximateNumberOfMessagesNotVisible"),
        delayed=attribute_int(attributes, "ApproximateNumberOfMessagesDelayed"),
        oldest_age_seconds=_oldest_age(cloudwatch, name, clock) if cloudwatch is not None else None,
        visibility_timeout=attribute_int(attributes, "VisibilityTimeout"),
        max_receive_count=max_receive,
        dead_letter_arn=dead_letter,
    )

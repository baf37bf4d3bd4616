"""A retry-exhausted queue, a DLQ fed by a redrive policy and a source queue on in-process moto, and
helpers to fill them with messages of known outcome, error, source and age."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serverless_retry.clock import FrozenClock
from serverless_retry.envelope import encode, final_envelope, unwrap
from serverless_retry.terminal import final_message

ACCOUNT = "123456789012"
REGION = "us-east-1"
EVENTS = Path(__file__).resolve().parents[1] / "events"
ORDERS_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders"
PAYMENTS_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:payments"


def event(name: str) -> Any:
    return json.loads((EVENTS / name).read_text())


@dataclass
class World:
    sqs: Any
    clock: FrozenClock
    source: str
    dlq: str
    exhausted: str

    def arn(self, url: str) -> str:
        return str(
            self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        )

    def final(
        self,
        body: str,
        error: BaseException,
        *,
        outcome: str = "exhausted",
        source: str = ORDERS_ARN,
        message_id: str | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> str:
        """Send a final envelope the consumer would write; returns the retry id."""
        attrs = (
            attributes
            if attributes is not None
            else {"tenant": {"DataType": "String", "StringValue": "acme"}}
        )
        retry_id = message_id or f"id-{body}"
        incoming = unwrap(body, attrs, message_id=retry_id, source=source, receive_count=5)
        envelope = final_envelope(
            incoming,
            outcome,
            now=self.clock.now(),
            error=error,
            reason=f"{outcome} after 5 attempts",  # type: ignore[arg-type]
        )
        envelope["serverless_retry"]["history"] = [
            {
                "at": "2026-11-30T09:59:00Z",
                "error_type": type(error).__name__,
                "error": str(error),
                "delay_seconds": 10,
                "transport": "sqs-delay",
            }
        ]
        self.sqs.send_message(QueueUrl=self.exhausted, MessageBody=encode(envelope))
        return retry_id

    def compact(self, body: str, error: BaseException, *, outcome: str = "too-large-to-retry") -> str:
        """Send a terminal message in the framed form (the final envelope would not fit): a one-line
        header with the outcome, then the original body verbatim. Give a body JSON escaping grows."""
        incoming = unwrap(body, {}, message_id=f"id-{body[:8]}", source=ORDERS_ARN)
        sent, attributes, form = final_message(
            incoming,
            outcome,
            now=self.clock.now(),
            error=error,
            reason="envelope too large",  # type: ignore[arg-type]
            traceback_text="",
            max_bytes=len(body.encode()) + 700,  # room for the header, not for an escaped envelope
        )
        assert form == "framed", form
        params: dict[str, Any] = {"QueueUrl": self.exhausted, "MessageBody": sent}
        if attributes:
            params["MessageAttributes"] = attributes
        self.sqs.send_message(**params)
        return incoming.context.id

    def later(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def tick(self) -> None:
        # moto counts a message visible only once its clock is strictly past the visibility end, so
        # under a frozen clock a message released with visibility 0 needs one millisecond to pass.
        self.clock.advance(0.001)

    def all_messages(self, url: str) -> list[dict[str, Any]]:
        """Every visible message, each hidden only for the duration of this look and put back at once."""
        self.tick()
        seen: dict[str, dict[str, Any]] = {}
        handles: list[str] = []
        for _ in range(50):
            batch = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                VisibilityTimeout=30,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
            ).get("Messages", [])
            if not batch:
                break
            for m in batch:
                seen[m["MessageId"]] = m
                handles.append(m["ReceiptHandle"])
        for handle in handles:
            self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=0)
        return list(seen.values())

    def counts(self, url: str) -> tuple[int, int]:
        """(visible, in flight) as SQS reports them."""
        self.tick()
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]), int(attrs["ApproximateNumberOfMessagesNotVisible"])


def make_world(sqs: Any, clock: FrozenClock, *, fifo: bool = False) -> World:
    suffix = ".fifo" if fifo else ""
    attrs = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if fifo else {}
    dlq = sqs.create_queue(QueueName=f"orders-dlq{suffix}", Attributes=attrs)["QueueUrl"]
    dlq_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-dlq{suffix}"
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "1"})
    source = sqs.create_queue(
        QueueName=f"orders{suffix}", Attributes={"RedrivePolicy": redrive, "VisibilityTimeout": "30", **attrs}
    )["QueueUrl"]
    exhausted = sqs.create_queue(QueueName=f"orders-exhausted{suffix}", Attributes=attrs)["QueueUrl"]
    return World(sqs, clock, source, dlq, exhausted)

"""Redrive to where each message came from: the source queue its envelope records (or, for a
message SQS's redrive policy moved, its DeadLetterQueueSourceArn), when no --to-queue-url is given."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError
from serverless_retry.redrive.queue import ExhaustedMessage, OutgoingMessage, Sender, sqs_sender

__all__ = ["SourceRouter"]


class SourceRouter:
    """Resolves each message's recorded source queue ARN to its URL (GetQueueUrl, once per queue) and
    sends there. A message with no SQS source (a Lambda destination record, a Scheduler dead letter,
    a message sent to the DLQ by hand) or one whose queue no longer exists is not routed: the redrive
    skips it (it stays) and :attr:`unrouted` says why."""

    def __init__(self, sqs: Any, *, message_group_id: str | None = None) -> None:
        self.sqs = sqs
        self.message_group_id = message_group_id
        self._urls: dict[str, str | None] = {}
        self._senders: dict[str, Sender] = {}
        self.unrouted: list[tuple[ExhaustedMessage, str]] = []
        self.routes: dict[str, str] = {}  # message id -> destination URL

    def url(self, arn: str) -> str | None:
        if arn not in self._urls:
            parts = arn.split(":")
            if len(parts) != 6 or parts[2] != "sqs":
                self._urls[arn] = None
            else:
                try:
                    self._urls[arn] = self.sqs.get_queue_url(
                        QueueName=parts[5], QueueOwnerAWSAccountId=parts[4]
                    )["QueueUrl"]
                except ClientError:  # gone, or not ours to see: the message stays
                    self._urls[arn] = None
        return self._urls[arn]

    def select(self, message: ExhaustedMessage) -> bool:
        """For ``redrive(select=...)``: True when the message has a source queue to go back to."""
        url = self.url(message.source) if message.source else None
        if url is None:
            why = (
                f"its recorded source {message.source} is not a queue that exists"
                if message.source
                else f"no source queue recorded ({message.origin} {message.kind} message)"
            )
            self.unrouted.append((message, why))
            return False
        self.routes[message.message_id] = url
        return True

    def send(self, message: ExhaustedMessage, outgoing: OutgoingMessage) -> str | None:
        url = self.routes[message.message_id]
        if url not in self._senders:
            self._senders[url] = sqs_sender(self.sqs, url, message_group_id=self.message_group_id)
        # The destination's message id: the redrive remembers it, so that a copy failing again under
        # that id is not moved a second time in the same run.
        return self._senders[url](message, outgoing)

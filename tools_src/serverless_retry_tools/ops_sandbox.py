"""A sandbox for the operator's commands: queues with real retry-exhausted messages and a real DLQ.

``python -m serverless_retry_tools.ops_sandbox`` (with ``AWS_ENDPOINT_URL`` pointing at the local
emulator) creates ``shop``, ``shop-dlq`` (its redrive policy's target, maxReceiveCount 1) and
``shop-exhausted``, runs the real consumer over a handful of orders whose processor fails, so every
message in the exhausted queue is what the consumer writes, and lets SQS dead-letter a few more into
the DLQ. It prints the queue URLs as shell assignments. Refuses to run against real AWS.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from serverless_retry import AwsClients, HttpError, Message, QueueTargets, RetryingConsumer, RetryPolicy
from serverless_retry.clock import SystemClock
from serverless_retry.testing import lambda_context

from serverless_retry_tools.help_text import plain

__all__ = ["Sandbox", "main", "seed"]

# Every first failure is final (max_attempts 1), so the exhausted queue fills without waiting.
POLICY = {"max_attempts": 1, "rules": [{"errors": ["ValueError"], "retry": False}]}
ORDERS = (
    ("o-1", "timeout"),
    ("o-2", "timeout"),
    ("o-3", "timeout"),
    ("o-4", "throttle"),
    ("o-5", "throttle"),
    ("o-6", "invalid"),
    ("o-7", "invalid"),
    ("o-8", "bug"),
)


def process(message: Message) -> None:
    order = message.json()
    kind = order["kind"]
    if kind == "timeout":
        raise TimeoutError(f"payment service timed out for {order['id']}")
    if kind == "throttle":
        raise HttpError(503, "payment service unavailable", retry_after=30)
    if kind == "invalid":
        raise ValueError(f"order {order['id']} has no items")
    raise KeyError("customer")


@dataclass(frozen=True)
class Sandbox:
    queue_url: str
    dlq_url: str
    exhausted_url: str


def _event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }


def seed(sqs: Any, *, prefix: str = "shop", dead_letters: int = 3) -> Sandbox:
    dlq_url = sqs.create_queue(QueueName=f"{prefix}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue_url = sqs.create_queue(
        QueueName=prefix,
        Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "1"})},
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    exhausted_url = sqs.create_queue(QueueName=f"{prefix}-exhausted")["QueueUrl"]
    consumer = RetryingConsumer(
        process,
        RetryPolicy.from_dict(POLICY),
        QueueTargets(queue_url, queue_arn, exhausted_url, dlq_arn=dlq_arn),
        clients=AwsClients.of(sqs=sqs),
        clock=SystemClock(),
    )
    for order_id, kind in ORDERS:
        sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps({"id": order_id, "kind": kind}))
    handled = 0
    for _ in range(20):  # bounded: 8 messages, at most 10 a receive
        got = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=30,
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not got:
            break
        failures = {
            f["itemIdentifier"]
            for f in consumer(_event(got, queue_arn), lambda_context())["batchItemFailures"]
        }
        for m in got:
            if m["MessageId"] not in failures:  # what the event source mapping does with a handled record
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
                handled += 1
        if handled >= len(ORDERS):
            break
    # A consumer that crashed on these: SQS's redrive policy moves them to the DLQ (maxReceiveCount 1).
    for i in range(dead_letters):
        sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps({"id": f"d-{i + 1}", "kind": "crash"}))
    for _ in range(dead_letters * 3):
        for m in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0).get(
            "Messages", []
        ):
            del m  # received and never deleted: the next receive moves it to the DLQ
    return Sandbox(queue_url, dlq_url, exhausted_url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m serverless_retry_tools.ops_sandbox", description=plain(__doc__)
    )
    parser.add_argument("--prefix", default="shop", help="queue name prefix (default shop)")
    args = parser.parse_args(argv)
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
    if not endpoint.startswith(("http://127.", "http://localhost")):
        print("error: set AWS_ENDPOINT_URL to the local emulator (http://127.0.0.1:PORT)", file=sys.stderr)
        return 2
    import boto3

    # The consumer's logs and metrics go to stderr: stdout is for the assignments only (eval-able).
    with contextlib.redirect_stdout(sys.stderr):
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        sandbox = seed(boto3.client("sqs", region_name=region), prefix=args.prefix)
    print(f"QUEUE_URL={sandbox.queue_url}")
    print(f"DLQ_URL={sandbox.dlq_url}")
    print(f"EXHAUSTED_URL={sandbox.exhausted_url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The self-healing demo's workload and what the example should do with it (pure).

``examples/self-healing``: topic one triggers function one (an HTTP-client style error, retryable:
1 + 3 attempts with backoff, then the retry-exhausted queue with outcome ``exhausted``) and a healthy
subscriber (each message exactly once); topic two triggers function two (``KeyError``, on the
do-not-retry list: the retry-exhausted queue at once with outcome ``non-retryable``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from serverless_retry_tools.local.selfheal_accounting import Expectation

__all__ = ["Message", "build_messages", "expectations"]


@dataclass(frozen=True)
class Message:
    topic: str  # "one" | "two"
    key: str  # the order id
    body: str
    subject: str | None
    attributes: dict[str, dict[str, str]]  # SNS Publish form


def build_messages(per_topic: int, *, seed: int = 7) -> list[Message]:
    """``per_topic`` orders on each topic, some with a subject and message attributes (which every
    redelivery must keep), interleaved with ``seed``."""
    if per_topic < 1:
        raise ValueError("per_topic must be >= 1")
    rand = random.Random(seed)
    messages = []
    for topic in ("one", "two"):
        for n in range(1, per_topic + 1):
            order: dict[str, Any] = {"order_id": f"{topic}-{n:03d}", "amount": rand.randint(5, 500)}
            attributes = {"tenant": {"DataType": "String", "StringValue": rand.choice(["acme", "globex"])}}
            if n % 2:
                attributes["priority"] = {"DataType": "Number", "StringValue": str(rand.randint(1, 5))}
            subject = f"order {order['order_id']}" if n % 3 else None
            messages.append(Message(topic, order["order_id"], json.dumps(order), subject, attributes))
    rand.shuffle(messages)
    return messages


def expectations(
    *, function_one: str, function_two: str, healthy: str, one_attempts: int = 4
) -> dict[str, tuple[Expectation, ...]]:
    """What each subscribed function should do with a message of each topic."""
    return {
        "one": (Expectation(function_one, "exhausted", one_attempts), Expectation(healthy, "processed", 1)),
        "two": (Expectation(function_two, "non-retryable", 1, "KeyError"),),
    }

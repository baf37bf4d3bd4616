"""The self-healing demo's workload and what the example should do with each message (pure).

``examples/self-healing``: the orders topic triggers the charge function (function one: an
HTTP-client style error, ``HTTP 503``, retryable: 1 + 3 attempts with backoff, then the
retry-exhausted queue with outcome ``exhausted``; an order with ``succeed_on_attempt: n`` is charged on
attempt n) and the audit function (the healthy second subscriber: each order exactly once); the
invoices topic triggers the invoice function (function two: ``KeyError`` without ``customer_id``, on
the do-not-retry list: the retry-exhausted queue at once, outcome ``non-retryable``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from serverless_retry_tools.local.demos.selfheal_accounting import Expectation

__all__ = ["ExampleFunctions", "Message", "build_messages"]

# The example's charge policy: max_attempts 4 (1 + 3 retries), errors raised as serverless_retry's HttpError.
CHARGE_ATTEMPTS = 4
CHARGE_ERROR = "HttpError"


@dataclass(frozen=True)
class ExampleFunctions:
    charge: str  # function one
    invoice: str  # function two
    audit: str  # the healthy subscriber of the orders topic


@dataclass(frozen=True)
class Message:
    topic: str  # "orders" | "invoices"
    key: str  # the order or invoice id
    body: str
    subject: str | None
    attributes: dict[str, dict[str, str]]  # SNS Publish form
    expectations: tuple[Expectation, ...]  # one per subscribed function


def build_messages(per_topic: int, functions: ExampleFunctions, *, seed: int = 7) -> list[Message]:
    """``per_topic`` orders and invoices, some with a subject and attributes (which every redelivery
    must keep), interleaved with ``seed``. Every order fails its charge to the end of its budget but
    the first one of each five, which is charged on attempt 3 (healed by the retries); every invoice
    lacks its customer_id (KeyError) but the first one of each five."""
    if per_topic < 1:
        raise ValueError("per_topic must be >= 1")
    rand = random.Random(seed)
    messages = []
    for n in range(1, per_topic + 1):
        attributes = {"tenant": {"DataType": "String", "StringValue": rand.choice(["acme", "globex"])}}
        if n % 2:
            attributes["priority"] = {"DataType": "Number", "StringValue": str(rand.randint(1, 5))}
        healed = n % 5 == 1 and per_topic > 1
        order: dict[str, Any] = {"order_id": f"o-{n:03d}", "amount": rand.randint(5, 500)}
        if healed:
            order["succeed_on_attempt"] = 3
        charge = (
            Expectation(functions.charge, "processed", 3)
            if healed
            else Expectation(functions.charge, "exhausted", CHARGE_ATTEMPTS, CHARGE_ERROR)
        )
        messages.append(
            Message(
                "orders",
                order["order_id"],
                json.dumps(order),
                f"order {order['order_id']}" if n % 3 else None,
                attributes,
                (charge, Expectation(functions.audit, "processed", 1)),
            )
        )
        good = n % 5 == 1 and per_topic > 1
        invoice: dict[str, Any] = {"invoice_id": f"i-{n:03d}", "amount": rand.randint(5, 500)}
        if good:
            invoice["customer_id"] = f"c-{rand.randint(100, 999)}"
        messages.append(
            Message(
                "invoices",
                invoice["invoice_id"],
                json.dumps(invoice),
                None,
                dict(attributes),
                (
                    Expectation(functions.invoice, "processed", 1)
                    if good
                    else Expectation(functions.invoice, "non-retryable", 1, "KeyError"),
                ),
            )
        )
    rand.shuffle(messages)
    return messages

"""The processor the consumer Lambda calls once per order (``orders_example.process:handle``).

Returning means the order is done; raising hands the error to the retry policy, which decides
whether and when the order is tried again.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from serverless_retry.message import Message

from orders_example.downstream import ValidationError, submit

# A child of the consumer's Powertools logger: the same JSON lines, level and service name, so each
# success is visible in the function's logs (a plain logging logger stays at WARNING in Lambda).
logger = Logger(child=True)


def parse_order(message: Message) -> dict[str, Any]:
    """The order is a JSON object; anything else is a ValidationError (never retried)."""
    try:
        order = message.json()
    except json.JSONDecodeError as exc:
        raise ValidationError(f"the body is not JSON: {exc}") from None
    if not isinstance(order, dict):
        raise ValidationError(f"an order must be a JSON object, got {type(order).__name__}")
    return order


def handle(message: Message) -> str:
    order = parse_order(message)
    confirmation = submit(order, message.retry.attempt)
    logger.info(
        "order accepted",
        extra={"order_id": order.get("order_id"), "attempt": message.retry.attempt, "id": message.retry.id},
    )
    return confirmation

"""Function one (``self_healing_example.charge.handler``, subscribed to the orders topic): charges the
order at a payment gateway that answers ``HTTP 503`` — an HTTP-client error the retry policy retries
with backoff. It fails on every attempt unless the order says ``"succeed_on_attempt": n`` (then
attempt n succeeds), so the demo can show both a healed order and a spent budget.

Every attempt logs one line with the order, the attempt and the stable retry id, so the logs prove
what happened to each message; ``retry.id`` is the idempotency key a real charge would use.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from serverless_retry import HttpError, RetryContext, self_healing

from self_healing_example.sns import message

logger = Logger()


@logger.inject_lambda_context(clear_state=True)
@self_healing
def handler(event: dict[str, Any], context: Any, retry: RetryContext) -> dict[str, Any]:
    sns, order = message(event)
    facts = {
        "order_id": order.get("order_id"),
        "attempt": retry.attempt,
        "retry_id": retry.id,
        "message_id": sns.get("MessageId"),
    }
    succeed_on = order.get("succeed_on_attempt")
    if isinstance(succeed_on, int) and not isinstance(succeed_on, bool) and retry.attempt >= succeed_on:
        logger.info("charge accepted", extra=facts)
        return {"charged": order.get("order_id"), "attempt": retry.attempt}
    logger.info("charge failed: payment gateway unavailable", extra={**facts, "status": 503})
    raise HttpError(503, "HTTP 503 Service Unavailable from the payment gateway")

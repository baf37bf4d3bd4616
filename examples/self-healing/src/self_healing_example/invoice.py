"""Function two (``self_healing_example.invoice.handler``, subscribed to the invoices topic): looks up
the invoice's customer. A message without ``customer_id`` raises ``KeyError`` — a bug in the data
that no retry can fix, so the module's do-not-retry list sends it to the retry-exhausted queue at
once."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from serverless_retry import RetryContext, self_healing

from self_healing_example.sns import message

logger = Logger()


@logger.inject_lambda_context(clear_state=True)
@self_healing
def handler(event: dict[str, Any], context: Any, retry: RetryContext) -> dict[str, Any]:
    sns, invoice = message(event)
    facts = {
        "invoice_id": invoice.get("invoice_id"),
        "attempt": retry.attempt,
        "retry_id": retry.id,
        "message_id": sns.get("MessageId"),
    }
    logger.info("invoicing", extra=facts)
    customer = invoice["customer_id"]  # KeyError when missing: never retried
    logger.info("invoice sent", extra={**facts, "customer_id": customer})
    return {"invoiced": invoice.get("invoice_id"), "customer_id": customer}

"""The second subscriber of the orders topic (``self_healing_example.audit.handler``): records every
order and never fails. Retries of the charge go to the charge function only (the default
``redrive_to = "function"``), so this logs each order exactly once however often the charge is
retried."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from self_healing_example.sns import message

logger = Logger()


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    sns, order = message(event)
    logger.info(
        "order audited", extra={"order_id": order.get("order_id"), "message_id": sns.get("MessageId")}
    )
    return {"audited": order.get("order_id")}

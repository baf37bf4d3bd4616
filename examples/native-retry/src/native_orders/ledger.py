"""Booking an order: one ledger entry per booking, in the business table.

The ledger appends: every call writes a new entry (its own ``entry_id``), as a payment, an e-mail or a
partner's API would act once per call. Nothing here stops a second booking of the same order; that is
the idempotency layer's job (:mod:`native_orders.app`), which calls :func:`book` at most once per
``order_id``.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypedDict

import boto3
from aws_lambda_powertools import Logger

from native_orders.orders import Order

__all__ = ["Booking", "Delivery", "book"]

logger = Logger(child=True)  # the handler's logger: same service, level and JSON lines


class Delivery(TypedDict):
    """Which delivery of which SQS message asked for the booking."""

    message_id: str
    receive_count: int


class Booking(TypedDict):
    """What a booking returns; the idempotency layer stores it and hands it back to every later copy."""

    order_id: str
    entry_id: str
    message_id: str
    receive_count: int


@cache
def _dynamodb() -> Any:
    # Created on first use, once per sandbox (boto3 picks up the region and, locally, the endpoint).
    return boto3.client("dynamodb")


def book(*, order: Order, delivery: Delivery) -> Booking:
    """Append a ledger entry for ``order`` and say which delivery wrote it."""
    entry_id = str(uuid.uuid4())
    _dynamodb().put_item(
        TableName=os.environ["LEDGER_TABLE"],
        Item={
            "order_id": {"S": order["order_id"]},
            "entry_id": {"S": entry_id},
            "amount": {"N": order["amount"]},
            "currency": {"S": order["currency"]},
            "message_id": {"S": delivery["message_id"]},
            "receive_count": {"N": str(delivery["receive_count"])},
            "booked_at": {"S": datetime.now(UTC).isoformat(timespec="milliseconds")},
        },
        # entry_id is fresh, so this only guards against overwriting, never against a second booking.
        ConditionExpression="attribute_not_exists(entry_id)",
    )
    logger.info(
        "ledger entry written",
        extra={"order_id": order["order_id"], "entry_id": entry_id, "message_id": delivery["message_id"]},
    )
    return Booking(
        order_id=order["order_id"],
        entry_id=entry_id,
        message_id=delivery["message_id"],
        receive_count=delivery["receive_count"],
    )

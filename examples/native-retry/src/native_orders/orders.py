"""An order as the producer sends it, and its parsing (pure)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, TypedDict

__all__ = ["InvalidOrder", "Order", "parse_order"]


class Order(TypedDict):
    """What is booked. ``order_id`` is the stable message key: the producer sets it once per business
    order, and every copy of the order (a producer's resend, a redelivery) carries the same one."""

    order_id: str
    amount: str  # a decimal string, e.g. "12.50": exact, never a float
    currency: str


class InvalidOrder(ValueError):
    """The body is not an order."""


def parse_order(body: Any) -> Order:
    """Read an order from a decoded JSON body; amounts are decimal strings such as ``"12.50"``."""
    if not isinstance(body, dict):
        raise InvalidOrder(f"an order must be a JSON object, got {type(body).__name__}")
    order_id, amount, currency = body.get("order_id"), body.get("amount"), body.get("currency")
    if not isinstance(order_id, str) or not order_id:
        raise InvalidOrder("order_id must be a non-empty string")
    if not isinstance(currency, str) or len(currency) != 3:
        raise InvalidOrder("currency must be a three-letter code")
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        raise InvalidOrder(f"amount must be a decimal string, got {amount!r}") from None
    if not value.is_finite() or value <= 0:
        raise InvalidOrder(f"amount must be positive, got {amount!r}")
    return Order(order_id=order_id, amount=str(value), currency=currency)

"""Release 1.0 (the bug): amounts were read as whole numbers, so every order ("12.50") fails."""

from __future__ import annotations

from typing import Any

from native_orders.app import make_handler
from native_orders.orders import Order, parse_order


def parse_order_as_integer_cents(body: Any) -> Order:
    order = parse_order(body)
    int(body["amount"])  # the bug: "12.50" is not an integer -> ValueError, for every order
    return order


handler = make_handler(parse_order_as_integer_cents)

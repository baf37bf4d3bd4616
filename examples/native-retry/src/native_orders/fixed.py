"""Release 1.1 (the fix): amounts are parsed as the decimal strings they are."""

from __future__ import annotations

from native_orders.app import make_handler
from native_orders.orders import parse_order

handler = make_handler(parse_order)

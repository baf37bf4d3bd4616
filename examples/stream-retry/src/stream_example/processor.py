"""The processor the stream function calls once per order (``stream_example.processor:process``),
first for the record read from the stream, then for each retry from the retry queue.

An order is a JSON object whose ``kind`` says how it goes (a body that is not JSON is its own kind,
e.g. ``poison``):

=========== ==================================================================================
ok          accepted
poison      a RetryableError on every attempt: retried through the retry queue while its shard
            goes on, then the retry-exhausted queue once the policy's budget is spent
invalid     a NonRetryableError: straight to the retry-exhausted queue, never retried
=========== ==================================================================================
"""

from __future__ import annotations

import json

from serverless_retry import NonRetryableError, RetryableError
from serverless_retry.message import Message

KINDS = ("ok", "poison", "invalid")


def kind_of(body: str) -> tuple[str, str]:
    """``(kind, order id)`` of a body: a JSON object's ``kind`` and ``order_id``, else the text itself."""
    try:
        order = json.loads(body)
    except json.JSONDecodeError:
        return body.strip(), "?"
    if not isinstance(order, dict):
        return "invalid", "?"
    return str(order.get("kind", "ok")), str(order.get("order_id", "?"))


def process(message: Message) -> str:
    """Accept the order (returns a confirmation) or raise the error its kind asks for."""
    kind, order_id = kind_of(message.body)
    if kind == "poison":
        raise RetryableError(f"order {order_id}: the downstream refused it (attempt {message.attempt})")
    if kind not in KINDS or kind == "invalid":
        raise NonRetryableError(f"order {order_id} is invalid (kind {kind!r})")
    return f"confirmation-{order_id}-{message.attempt}"

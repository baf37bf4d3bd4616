"""The demo's mixed workload for ``examples/scheduled-retry`` (pure).

Orders follow the example processor's ``behaviour`` contract (``orders_example.downstream``): ok,
throttle (429 with ``retry_after`` while attempt <= ``fail_times``), timeout (``fail_times``),
always-timeout, invalid, long-throttle (503 with Retry-After 1800 s: longer than SQS's 15-minute
delay, so the retry goes through the Scheduler). One extra message is a malformed envelope (a body
with a ``serverless_retry`` key whose attempt is -1), which must go to the retry-exhausted queue
with reason ``invalid-envelope`` and never back into the loop.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_MIX", "LABELS", "MALFORMED", "WorkItem", "build_workload"]

MALFORMED = "malformed-envelope"
# The order the demo lists the labels in: from the first-time successes to what never succeeds.
LABELS = ("ok", "throttle", "timeout", "long-throttle", "always-timeout", "invalid", MALFORMED)

# Share of each behaviour in the orders (the malformed envelope comes on top).
DEFAULT_MIX: dict[str, float] = {
    "ok": 0.40,
    "throttle": 0.20,
    "timeout": 0.15,
    "always-timeout": 0.08,
    "invalid": 0.12,
    "long-throttle": 0.05,
}


@dataclass(frozen=True)
class WorkItem:
    label: str  # a behaviour, or MALFORMED
    order_id: str
    body: str
    expected: str  # the outcome the example's policy should give: processed / exhausted / non-retryable / invalid-envelope


def _expected(behaviour: str) -> str:
    if behaviour == "invalid":
        return "non-retryable"
    if behaviour == "always-timeout":
        return "exhausted"
    return "processed"


def build_workload(orders: int, *, seed: int = 7, mix: dict[str, float] | None = None) -> list[WorkItem]:
    """``orders`` orders in the proportions of ``mix`` (every behaviour at least once), shuffled
    with ``seed``, plus the malformed envelope."""
    if orders < 1:
        raise ValueError("orders must be >= 1")
    shares = mix or DEFAULT_MIX
    counts = {b: max(1, int(orders * share)) for b, share in shares.items()}
    counts["ok"] += orders - sum(counts.values())
    if counts["ok"] < 0:
        raise ValueError(f"{orders} orders are too few for {len(shares)} behaviours")
    rand = random.Random(seed)
    behaviours = [b for b, n in counts.items() for _ in range(n)]
    rand.shuffle(behaviours)
    items = []
    for n, behaviour in enumerate(behaviours, start=1):
        order: dict[str, Any] = {
            "order_id": f"o-{n:04d}",
            "behaviour": behaviour,
            "amount": rand.randint(5, 500),
        }
        if behaviour == "throttle":
            order["retry_after"] = rand.choice([5, 15, 30, 60, 120])
            order["fail_times"] = rand.randint(1, 2)
        elif behaviour == "timeout":
            order["fail_times"] = rand.randint(1, 3)
        items.append(WorkItem(behaviour, order["order_id"], json.dumps(order), _expected(behaviour)))
    malformed = {
        "serverless_retry": {
            "v": 1,
            "id": "forged",
            "attempt": -1,
            "first_failed_at": "2026-11-30T10:00:00Z",
        },
        "body": json.dumps({"order_id": "o-forged", "behaviour": "ok"}),
    }
    items.append(WorkItem(MALFORMED, "o-forged", json.dumps(malformed), "invalid-envelope"))
    return items

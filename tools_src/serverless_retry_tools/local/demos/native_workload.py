"""The native-retry story's orders and what must become of them (pure).

Orders for ``examples/native-retry`` (``native_orders``): ``{"order_id", "amount", "currency"}`` with
amounts as decimal strings, which the buggy release cannot parse (so every order fails while it is
deployed). Duplicate deliveries are injected on purpose, each kind under its own label:

- ``backlog``: an order sent once while the bug is live;
- ``sent twice``: a producer sent the same order twice (two SQS messages, one ``order_id``), both
  while the bug is live: after the fix one copy books it and the other is answered by idempotency;
- ``crash after write``: a new order, sent after the fix, whose booking delivery then fails as if the
  function had died after its write (``simulate: crash-after-write``), so SQS delivers a message
  that is already booked once more, a visibility timeout later;
- ``resent later``: a copy of a backlog order, sent again after the fix.

Every message must end ``processed`` (none in the DLQ), and the ledger must hold exactly one entry
per ``order_id``, whichever copy of an order happens to book it. :func:`expected_replays` is how
many deliveries the idempotency layer must answer without booking.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence

from serverless_retry_tools.local.demos.scheduled_workload import WorkItem

__all__ = [
    "BACKLOG",
    "CRASH_AFTER_WRITE",
    "LABELS",
    "RESENT_LATER",
    "SENT_TWICE",
    "NativeWorkload",
    "build_native_workload",
    "expected_replays",
]

BACKLOG = "backlog"
SENT_TWICE = "sent twice"
CRASH_AFTER_WRITE = "crash after write"
RESENT_LATER = "resent later"
LABELS = (BACKLOG, SENT_TWICE, CRASH_AFTER_WRITE, RESENT_LATER)


class NativeWorkload:
    """``during_bug``: sent while the buggy release is deployed; ``after_fix``: sent once the backlog
    drained (copies of orders already booked)."""

    def __init__(self, during_bug: list[WorkItem], after_fix: list[WorkItem]) -> None:
        self.during_bug = during_bug
        self.after_fix = after_fix

    @property
    def items(self) -> list[WorkItem]:
        return [*self.during_bug, *self.after_fix]

    @property
    def order_ids(self) -> set[str]:
        return {item.order_id for item in self.items}


def _body(order_id: str, amount: str, *, simulate: str | None = None) -> str:
    order: dict[str, str] = {"order_id": order_id, "amount": amount, "currency": "EUR"}
    if simulate:
        order["simulate"] = simulate
    return json.dumps(order)


def build_native_workload(
    orders: int, *, sent_twice: int = 2, crash_after_write: int = 2, resent_later: int = 2, seed: int = 7
) -> NativeWorkload:
    """``orders`` distinct orders: ``orders - crash_after_write`` sent while the bug is live (of them
    ``sent_twice`` go out twice), then ``crash_after_write`` new orders and ``resent_later`` copies of
    backlog orders after the fix."""
    backlog = orders - crash_after_write
    if min(sent_twice, crash_after_write, resent_later) < 0 or backlog < max(1, sent_twice, resent_later):
        raise ValueError(
            f"{orders} orders cannot hold {crash_after_write} crash-after-write orders besides a backlog "
            f"with {sent_twice} sent twice and {resent_later} resent later"
        )
    rng = random.Random(seed)
    ids = [f"o-{n:03d}" for n in range(1, orders + 1)]
    amounts = {order_id: f"{rng.randint(100, 99_999) / 100:.2f}" for order_id in ids}
    twice = set(rng.sample(ids[:backlog], sent_twice))
    during = [
        WorkItem(SENT_TWICE if i in twice else BACKLOG, i, _body(i, amounts[i]), "processed")
        for i in ids[:backlog]
    ]
    # The second copies, later in the same burst.
    during += [
        WorkItem(SENT_TWICE, i, _body(i, amounts[i]), "processed") for i in ids[:backlog] if i in twice
    ]
    after = [
        WorkItem(CRASH_AFTER_WRITE, i, _body(i, amounts[i], simulate="crash-after-write"), "processed")
        for i in ids[backlog:]
    ]
    resent = sorted(rng.sample([i for i in ids[:backlog] if i not in twice] or ids[:backlog], resent_later))
    after += [WorkItem(RESENT_LATER, i, _body(i, amounts[i]), "processed") for i in resent]
    return NativeWorkload(during, after)


def expected_replays(items: Sequence[WorkItem]) -> int:
    """Deliveries the idempotency layer answers from its record: every message beyond the first of its
    order, plus one redelivery per crash-after-write order (its booking delivery failed)."""
    messages = Counter(item.order_id for item in items)
    crashes = {item.order_id for item in items if item.label == CRASH_AFTER_WRITE}
    return sum(n - 1 for n in messages.values()) + len(crashes)

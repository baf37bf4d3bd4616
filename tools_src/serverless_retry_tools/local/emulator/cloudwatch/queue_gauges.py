"""A queue's gauge metrics at one instant, from its messages: pure.

Per "Available CloudWatch metrics for Amazon SQS": ApproximateNumberOfMessagesVisible (receivable
now), ...NotVisible (in flight), ...Delayed, and ApproximateAgeOfOldestMessage, the age of the oldest
message still in the queue. A message moved to a dead-letter queue counts from its move there, and in
a standard queue a message received three times or more without a delete (a "poison pill") is left
out of the age. The receive counts here are those in this queue (since it was enqueued here).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["POISON_PILL_RECEIVES", "MessageView", "gauges"]

POISON_PILL_RECEIVES = 3


@dataclass(frozen=True)
class MessageView:
    enqueued_ms: float  # logical: sent, or moved here from its source queue
    visible_at_ms: float
    delayed_until_ms: float
    receives_here: int


def gauges(messages: Iterable[MessageView], now_ms: float, *, fifo: bool) -> dict[str, float]:
    visible = in_flight = delayed = 0
    oldest: float | None = None
    for m in messages:
        if now_ms < m.delayed_until_ms:
            delayed += 1
        elif now_ms > m.visible_at_ms:
            visible += 1
        else:
            in_flight += 1
        if fifo or m.receives_here < POISON_PILL_RECEIVES:
            oldest = m.enqueued_ms if oldest is None else min(oldest, m.enqueued_ms)
    return {
        "ApproximateNumberOfMessagesVisible": float(visible),
        "ApproximateNumberOfMessagesNotVisible": float(in_flight),
        "ApproximateNumberOfMessagesDelayed": float(delayed),
        "ApproximateAgeOfOldestMessage": 0.0 if oldest is None else max(0.0, (now_ms - oldest) / 1000.0),
    }

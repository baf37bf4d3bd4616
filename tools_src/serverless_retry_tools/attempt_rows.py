"""The rows a policy simulation produces, one per attempt: ``simulate`` (which runs the consumer's own
decision code) writes them, its table, the cost model and the timeline read them.
:func:`rows_from_delays` builds rows by hand for tests and examples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["FINAL_ACTIONS", "AttemptRow", "rows_from_delays"]

# What the consumer does with a message whose attempt failed and will not be retried.
FINAL_ACTIONS = frozenset(
    {"exhausted", "non-retryable", "dead-letter", "invalid-envelope", "too-large-to-retry"}
)


@dataclass(frozen=True)
class AttemptRow:
    attempt: int  # 1 = the first delivery
    action: str  # after this attempt failed: "retry", or a final outcome (FINAL_ACTIONS)
    # until the next attempt (0 unless action == "retry"; native retry's dead-letter row: the wait until
    # SQS moves the message to the DLQ, one visibility timeout)
    delay_seconds: int
    # how that wait happens: sqs-delay, scheduler, visibility, sqs-hops, or native (SQS's own retry)
    transport: str | None
    at_seconds: float  # when this attempt ran, logical seconds after the first delivery
    hops: int = 0  # with sqs-hops: the SQS sends the wait takes (each within the hop limit); else 0
    reason: str = ""  # the consumer's reason for the decision

    @property
    def retried(self) -> bool:
        return self.action == "retry"


def rows_from_delays(
    delays: Sequence[tuple[int, str]], final: str = "exhausted", *, start: float = 0.0
) -> list[AttemptRow]:
    """Rows for a message that fails every attempt: one retry per ``(delay, transport)``, then ``final``."""
    rows: list[AttemptRow] = []
    at = start
    for attempt, (delay, transport) in enumerate(delays, start=1):
        rows.append(AttemptRow(attempt, "retry", delay, transport, at))
        at += delay
    rows.append(AttemptRow(len(delays) + 1, final, 0, None, at))
    return rows


def total_wait(rows: Iterable[AttemptRow]) -> int:
    return sum(r.delay_seconds for r in rows if r.retried)

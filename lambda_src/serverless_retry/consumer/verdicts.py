"""What the consumer does with a record before its processor runs, as the claims (``admission``) or
an early copy's due time decide: go on, wait as a new message until a time, hide this very message,
hand it back as it is, or acknowledge it unrun. Pure types."""

# (No ``from __future__ import annotations``: class annotations stay real types, which a NamedTuple,
# TypedDict or dataclass reads at import far cheaper than strings typing compiles into ForwardRefs.)
from datetime import datetime
from enum import Enum
from typing import NamedTuple

__all__ = ["ACKNOWLEDGE", "GO", "HAND_BACK", "Hide", "Plain", "Verdict", "WaitUntil"]


class Plain(Enum):
    """The verdicts that need nothing more."""

    GO = "go"  # run it
    HAND_BACK = "hand-back"  # back to the queue as it is: its visibility timeout brings it again
    ACKNOWLEDGE = "acknowledge"  # a provable duplicate, or a redelivery whose handling finished


GO, HAND_BACK, ACKNOWLEDGE = Plain.GO, Plain.HAND_BACK, Plain.ACKNOWLEDGE


class WaitUntil(NamedTuple):
    """The copy waits, unprocessed, as a new SQS message due ``until``; this record is acknowledged."""

    until: datetime
    tag: str  # part of a FIFO copy's deduplication id: "wait" (a live claim, early) or "claims"
    named: bool = True  # carried on naming this message among its claimants (a claim stays its own)
    hide_instead: int | None = None  # seconds hidden when the named copy does not fit (None: as it is)


class Hide(NamedTuple):
    """This very message waits hidden, unprocessed, handed back."""

    seconds: int


Verdict = Plain | WaitUntil | Hide

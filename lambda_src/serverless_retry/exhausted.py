"""``Exhausted``: why a message goes to the retry-exhausted queue, as the ``on_exhausted`` hook is told.

A module of its own, imported by the first message that ends: defining a frozen dataclass costs a
cold interpreter ~0.5 ms, and a batch that only succeeds never makes one. Read it as
``serverless_retry.Exhausted`` or ``serverless_retry.message.Exhausted``, where it was first defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from serverless_retry.envelope import Outcome

__all__ = ["Exhausted"]


@dataclass(frozen=True)
class Exhausted:
    """Why a message goes to the retry-exhausted queue, as the ``on_exhausted`` hook is told."""

    outcome: Outcome  # exhausted, non-retryable, invalid-envelope or too-large-to-retry
    reason: str  # the same text as the final copy's ``reason``

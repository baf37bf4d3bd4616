"""One batch's state, owned by one value: the calls it queued (each with its kind), the records it
hands back, the claims it holds, the FIFO groups its failures block, its retry log and its counts.

The consumer makes one per batch that needs a call (most need none) and passes it, with the record,
to every per-record step; after the loop ``deliver`` makes the calls and counts what succeeded.
(A plain class with slots: a dataclass costs about 0.5 ms to define at cold start.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from serverless_retry.consumer.delivery import CallKind, Delivery, Outgoing, ScheduledRetry, VisibilityChange
from serverless_retry.observability import BatchCounts

if TYPE_CHECKING:
    from serverless_retry.policy import Decision
    from serverless_retry.retry_log import RetryLogGroup
    from serverless_retry.signing import EnvelopeSigner

__all__ = ["LOG_ERROR_CHARS", "BatchState", "short_error"]

LOG_ERROR_CHARS = 256
# A final copy's kind by its outcome (exhausted and too-large-to-retry count alike).
_FINAL_KINDS = {"non-retryable": CallKind.NON_RETRYABLE, "invalid-envelope": CallKind.INVALID}
_WAIT, _FALLBACK, _DELAYED, _HOPS = CallKind.WAIT, CallKind.FALLBACK, CallKind.DELAYED, CallKind.HOPS
_NON_RETRYABLE, _INVALID = CallKind.NON_RETRYABLE, CallKind.INVALID
_RetryKey = tuple[str, str, int, str | None]  # (error type, error text, attempt, transport)


def short_error(error: BaseException) -> str:
    try:
        return str(error)[:LOG_ERROR_CHARS]
    except Exception:  # a __str__ that raises must not stop the record from being retried
        return f"<unprintable {type(error).__name__}>"


class BatchState:
    """What one batch decided, gathered while its records are processed and acted on after."""

    __slots__ = (
        "blocked",
        "claimed",
        "counts",
        "delayed",
        "exhausted",
        "failed",
        "holds",
        "ordered",
        "repeat",
        "retried",
        "retries",
        "retry_groups",
        "scheduled",
        "signer",
        "unidentified",
        "visibility",
    )

    def __init__(self, counts: BatchCounts, *, ordered: bool, signer: EnvelopeSigner | None = None) -> None:
        self.counts = counts
        self.ordered = ordered  # FIFO ordered: a failure holds back the rest of its group
        self.signer = signer  # with the claims table: signs the envelopes the batch writes
        self.delayed: list[Outgoing] = []
        self.scheduled: list[ScheduledRetry] = []
        self.visibility: list[VisibilityChange] = []
        self.exhausted: list[Outgoing] = []
        self.failed: set[str] = set()  # records the queue must redeliver
        self.blocked: dict[str, datetime | None] = {}  # group → when its failed record returns
        self.claimed: dict[str, tuple[str, int, int]] = {}  # key → (id, attempt, receives)
        self.repeat: dict[str, int] = {}  # in place: key → the attempt to repeat
        self.holds: dict[str, int] = {}  # in place: key → receives spent held back
        self.unidentified: list[str] = []  # keys of records without a messageId
        self.retries: list[RetryLogGroup] = []  # every retry decided, for the batch's log line
        self.retry_groups: dict[_RetryKey, RetryLogGroup] = {}
        self.retried = 0

    # -- FIFO ordered groups ------------------------------------------------------------------------------
    def block(self, group: str | None, resumes: datetime | None = None) -> None:
        """A record of ``group`` failed or goes back: the group's later records are held back behind
        it (``resumes``: when it returns, for records that would expire waiting that long)."""
        if self.ordered:
            self.blocked[group or ""] = resumes

    def blocks(self, group: str | None) -> bool:
        return self.ordered and (group or "") in self.blocked

    def resumes(self, group: str | None) -> datetime | None:
        return self.blocked[group or ""]

    # -- queued calls -------------------------------------------------------------------------------------
    def hand_back(self, key: str) -> None:
        self.failed.add(key)

    def hide(self, change: VisibilityChange) -> None:
        """This very message stays in the queue (the retry, a wait or a hold-back): never deleted."""
        self.visibility.append(change)
        self.failed.add(change.key)

    def final(self, message: Outgoing, outcome: str) -> None:
        self.exhausted.append(message._replace(kind=_FINAL_KINDS.get(outcome, CallKind.EXHAUSTED)))

    def log_retry(
        self, message_id: str, retry_id: str, attempt: int, error: BaseException, decision: Decision
    ) -> None:
        error_type = type(error).__name__
        text = short_error(error)
        key = (error_type, text, attempt, decision.transport)
        group = self.retry_groups.get(key)
        if group is None:
            group = self.retry_groups[key] = {
                "error_type": error_type,
                "error": text,
                "attempt": attempt,
                "transport": decision.transport,
                "delays": {},
            }
            self.retries.append(group)
        group["delays"][message_id] = decision.delay_seconds
        if retry_id != message_id:
            group.setdefault("retry_ids", {})[message_id] = retry_id
        self.retried += 1

    # -- after the loop -----------------------------------------------------------------------------------
    def deliver(self, delivery: Delivery) -> None:
        """Every queued call, in the order that keeps the guarantees: schedules (refused ones fall
        back to hops), delayed copies, visibility changes, final copies. A record whose call failed
        is handed back; the counts take only the calls that succeeded."""
        if self.scheduled:
            self._schedule(delivery)
        if self.delayed:
            self._count(self.delayed, delivery.send_delayed(self.delayed))
        if self.visibility:
            self._change_visibility(delivery)
        if self.exhausted:
            self._count(self.exhausted, delivery.send_exhausted(self.exhausted))

    def _schedule(self, delivery: Delivery) -> None:
        counts = self.counts
        not_scheduled, refused = delivery.schedule_all(self.scheduled)
        self.failed |= not_scheduled
        counts.delivery_failed += len(not_scheduled)
        refused_keys = {r.key for r in refused}
        counts.retry_scheduled["scheduler"] += sum(
            1 for r in self.scheduled if r.key not in not_scheduled and r.key not in refused_keys
        )
        for retry in refused:
            if retry.hops is None:
                self.failed.add(retry.key)
                counts.delivery_failed += 1
            else:
                self.delayed.append(retry.hops._replace(kind=CallKind.FALLBACK))

    def _count(self, sent: Sequence[Outgoing], not_sent: set[str]) -> None:
        counts = self.counts
        self.failed |= not_sent
        counts.delivery_failed += len(not_sent)
        sent_kinds = Counter(m.kind for m in sent if m.key not in not_sent)
        for kind, n in sent_kinds.items():
            if kind is _WAIT:
                counts.redelayed += n
            elif kind is _FALLBACK:
                counts.scheduler_fallback += n
                counts.retry_scheduled["sqs-hops"] += n
            elif kind is _DELAYED or kind is _HOPS:
                counts.retry_scheduled[kind.value] += n
            elif kind is _NON_RETRYABLE:
                counts.non_retryable += n
            elif kind is _INVALID:
                counts.invalid_envelope += n
            else:
                counts.exhausted += n

    def _change_visibility(self, delivery: Delivery) -> None:
        counts = self.counts
        not_changed = delivery.change_visibility(self.visibility)
        # Always batch item failures: these messages are themselves the retry (or wait), so they must
        # not be deleted. A failed change only means the queue's own timeout applies.
        for change in self.visibility:
            self.failed.add(change.key)
            if change.kind is CallKind.IN_PLACE:
                if change.key in not_changed:
                    counts.delivery_failed += 1
                else:
                    counts.retry_scheduled["visibility"] += 1
            elif change.kind is CallKind.WAIT and change.key not in not_changed:
                counts.redelayed += 1

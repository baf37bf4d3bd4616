"""What a read record passes before its processor runs: from our queue, not held back behind its
FIFO group, a valid envelope, due, and admitted by the claims. ``RecordGate.admit`` gives the record's
Message when it is to run now, or deals with it unrun (refused, held back, its final copy, or the
claims' verdict acted on) and gives None.

The gate owns the consumer's claims side: one ``admission.Admission`` per claims store, made on
first use (a consumer without a claims table never imports claims).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from serverless_retry.consumer.delivery import CallKind, VisibilityChange
from serverless_retry.consumer.retry_copies import hop
from serverless_retry.consumer.verdicts import GO, HAND_BACK, Hide, Verdict, WaitUntil
from serverless_retry.envelope import (
    MAX_ATTEMPT,
    Incoming,
    attributes_from_record,
    fits,
    unwrap,
    waiting_copy,
)
from serverless_retry.errors import KeyUnavailable
from serverless_retry.message import Message, first_delivery
from serverless_retry.planning import QueueFacts, decision_time, expiry_problem, latest_due
from serverless_retry.planning import arrival as copy_arrival

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

    from serverless_retry.aws import AwsClients
    from serverless_retry.clock import Clock
    from serverless_retry.config import QueueTargets
    from serverless_retry.consumer.admission import Admission
    from serverless_retry.consumer.batch_state import BatchState
    from serverless_retry.consumer.claims import ClaimStore
    from serverless_retry.consumer.final_copies import FinalCopies
    from serverless_retry.consumer.record_reader import ReadRecord
    from serverless_retry.policy import RetryPolicy
    from serverless_retry.signing import EnvelopeSigner

__all__ = ["Admitted", "RecordGate"]

Admitted = tuple[Message, "ReadRecord"]  # the Message to run, and the record as admitted


class RecordGate:
    """The steps before the processor, for one consumer's policy, queues and claims."""

    def __init__(
        self,
        policy: RetryPolicy,
        queue: QueueFacts,
        targets: QueueTargets,
        *,
        clients: AwsClients,
        logger: Logger,
        clock: Clock,
        final: FinalCopies,
        claims: ClaimStore | None,
        in_place: bool,
    ) -> None:
        self.policy = policy
        self.queue = queue
        self.targets = targets
        self.clients = clients
        self.logger = logger
        self.clock = clock
        self.final = final
        self.claims = claims  # (tests may set it later: the admission follows it)
        self._admitting: Admission | None = None  # see admission
        self._in_place = in_place
        self._source = targets.queue_arn

    @property
    def admission(self) -> Admission | None:
        """The claims' side, for the store in use (one per store; the lease read once carries over)."""
        claims = self.claims
        if claims is None:
            return None
        current = self._admitting
        if current is None or current.claims is not claims:
            from serverless_retry.consumer.admission import Admission

            lease = current.lease if current is not None else None
            current = self._admitting = Admission(
                claims,
                self.targets,
                self.clients,
                self.logger,
                self.clock,
                in_place=self._in_place,
                lease=lease,
            )
        return current

    def admit(self, current: ReadRecord, state: BatchState) -> Admitted | None:
        """The record's Message when it is to run now; None when it was dealt with unrun."""
        if current.source_arn != self._source:
            self._refuse(state, current)
            return None
        if state.blocks(current.group):  # FIFO ordered: its group's earlier record failed
            self._hold_back(state, current)
            return None
        if current.could_be_envelope:
            return self._admit_copy(current, state)
        return self._admit_first(current, state)

    def _refuse(self, state: BatchState, current: ReadRecord) -> None:
        self.logger.error(
            "record refused: it comes from another queue than this consumer's; handed back unprocessed",
            extra={
                "message_id": current.message_id,
                "event_source_arn": current.source_arn,
                "configured_queue_arn": self._source,
            },
        )
        state.counts.refused += 1
        state.hand_back(current.message_id)

    def _hold_back(self, state: BatchState, current: ReadRecord) -> None:
        """FIFO ordered: a later record of a group whose earlier record failed in this batch."""
        resumes = state.resumes(current.group)
        if resumes is not None:
            problem = expiry_problem(current.facts, self.targets.retention_seconds, resumes)
            if problem is not None:
                incoming = self._unwrapped(current, current.receive_count)
                reason = f"held back behind an earlier message of its group: {problem}"
                self.final.plan(
                    state,
                    current._replace(incoming=incoming),
                    "exhausted",
                    error=None,
                    reason=reason,
                    now=self.clock.now(),
                )
                return
        admission = self.admission
        if admission is not None:
            admission.count_hold(current.message_id)
        # Visible again at once: the failed record, still hidden, holds the group, which then resumes
        # with it. Left in flight, this record would hold the group for a whole visibility timeout.
        state.hide(VisibilityChange(current.message_id, current.receipt_handle, 0, kind=CallKind.HELD_BACK))

    def _admit_copy(self, current: ReadRecord, state: BatchState) -> Admitted | None:
        current, verdict = self._unwrap(current, state)
        incoming = current.incoming
        assert incoming is not None
        if verdict is None and incoming.kind == "invalid":
            now = decision_time(current.facts, self.clock.now(), in_place=self._in_place, incoming=incoming)
            self.final.plan(
                state, current, "invalid-envelope", error=None, reason=incoming.problem or "invalid", now=now
            )
            state.block(current.group)
            return None
        if verdict is None and incoming.kind == "envelope":
            admission = self.admission
            verdict = self._early(current) or (admission.admit_copy(current, state) if admission else None)
        if verdict is not None and verdict is not GO:
            self._act(current, state, verdict)
            state.block(current.group)  # the rest of its group waits behind it
            return None
        message_id, context = current.message_id, incoming.context
        if incoming.kind == "envelope" and self._in_place and current.receive_count > 1:
            # In place, every receive that ran the processor is an attempt: a copy's attempt counts
            # on from its own (receives spent held back are not attempts).
            spent = current.receive_count - 1 - state.holds.get(message_id, 0)
            context = replace(context, attempt=min(MAX_ATTEMPT, context.attempt + max(0, spent)))
        if message_id in state.repeat:
            context = replace(context, attempt=state.repeat[message_id])
        incoming = incoming._replace(context=context)
        message = Message(message_id, incoming.body, incoming.attributes, context, current.record)
        return message, current._replace(incoming=incoming)

    def _admit_first(self, current: ReadRecord, state: BatchState) -> Admitted | None:
        message_id, receives = current.message_id, current.receive_count
        admission = self.admission
        if admission is not None and receives > 1:
            verdict = admission.admit_first(current, state)
            if verdict is not GO:
                self._act(current, state, verdict)
                if message_id in state.failed:
                    state.block(current.group)  # it goes back unclaimed: the rest of its group waits
                return None  # a redelivery whose handling already finished, or goes back
        if self._in_place:  # receives spent held back behind its group are not attempts
            attempt = state.repeat.get(message_id, max(1, receives - state.holds.get(message_id, 0)))
        else:
            attempt = 1
        return first_delivery(message_id, current.body, current.record, self._source, attempt), current

    def _unwrap(self, current: ReadRecord, state: BatchState) -> tuple[ReadRecord, Verdict | None]:
        """The record's body classified (``envelope.unwrap``), its signature checked with the claims
        table; with a verdict when the key cannot be read: the copy then waits as for an outage."""
        now = self.clock.now()
        receive_count = current.receive_count if self._in_place else 1
        latest = self._latest_due(now)
        admission = self.admission
        signer = admission.signer if admission is not None else None
        try:
            incoming = self._unwrapped(current, receive_count, latest_due=latest, signer=signer)
        except KeyUnavailable:
            incoming = self._unwrapped(current, receive_count, latest_due=latest)
            current = current._replace(incoming=incoming)
            if incoming.kind != "envelope" or admission is None:
                return current, None  # an invalid envelope needs no key: it goes to the exhausted queue
            state.counts.claims_unavailable += 1
            return current, admission.key_unavailable(current, now)
        if incoming.kind == "envelope" and incoming.problem is not None:
            self.logger.warning(incoming.problem, extra={"message_id": current.message_id})
        return current._replace(incoming=incoming), None

    def _unwrapped(
        self,
        current: ReadRecord,
        receive_count: int,
        *,
        latest_due: datetime | None = None,
        signer: EnvelopeSigner | None = None,
    ) -> Incoming:
        """``envelope.unwrap`` of the record (raises KeyUnavailable from ``signer``)."""
        return unwrap(
            current.body,
            attributes_from_record(current.record.get("messageAttributes") or {}),
            message_id=current.message_id,
            source=self._source,
            receive_count=receive_count,
            latest_due=latest_due,
            signer=signer,
        )

    def _latest_due(self, now: datetime) -> datetime:
        """The latest due time a copy arriving at ``now`` can carry: what the policy could have planned
        (``planning.latest_due``), and with the claims table the protocol's own longest wait: a copy that
        met a live claim waits until that claim's lease ends plus the takeover grace."""
        due = latest_due(self.policy, now)
        admission = self.admission
        if admission is None:
            return due
        return max(due, now + timedelta(seconds=admission.longest_wait()))

    def _early(self, current: ReadRecord) -> Verdict | None:
        """A copy that arrived before it is due waits again, unprocessed; None when it is due."""
        incoming = current.incoming
        assert incoming is not None
        wait = copy_arrival(incoming, current.facts, self.queue, now=self.clock.now())
        if wait is None:
            return None
        context = incoming.context
        self.logger.info(
            "copy arrived before it is due; it waits again, unprocessed",
            extra={
                "message_id": current.message_id,
                "retry_id": context.id,
                "attempt": context.attempt,
                "due_at": wait.due_at.isoformat(),
                "remaining_seconds": wait.remaining_seconds,
            },
        )
        if wait.hide_seconds is not None:
            return Hide(wait.hide_seconds)  # this very message is the copy: it must not be deleted
        # Carried on as the same copy, naming this message: a claim it may hold (it claimed on an
        # earlier receive, then came back early by another instance's clock) stays its own.
        return WaitUntil(wait.due_at, "wait", named=self.claims is not None)

    def _act(self, current: ReadRecord, state: BatchState, verdict: Verdict) -> None:
        """What a verdict other than GO does with the record (ACKNOWLEDGE: nothing, it is deleted)."""
        message_id = current.message_id
        if isinstance(verdict, WaitUntil):
            assert current.incoming is not None
            body = current.body
            if verdict.named:
                carried = waiting_copy(body, claimant=message_id, due_at=verdict.until)
                if fits(carried, self.targets.max_message_bytes):
                    body = carried
                elif verdict.hide_instead is not None:
                    verdict = Hide(verdict.hide_instead)
            if isinstance(verdict, WaitUntil):
                retry_id = current.incoming.context.id
                copy = hop(
                    message_id,
                    body,
                    verdict.until,
                    current.facts,
                    retry_id=retry_id,
                    tag=verdict.tag,
                    kind=CallKind.WAIT,
                    fifo=self.queue.fifo,
                    retention_seconds=self.targets.retention_seconds,
                )
                state.delayed.append(copy)
                return
        if isinstance(verdict, Hide):
            state.hide(
                VisibilityChange(message_id, current.receipt_handle, verdict.seconds, kind=CallKind.WAIT)
            )
        elif verdict is HAND_BACK:
            state.hand_back(message_id)

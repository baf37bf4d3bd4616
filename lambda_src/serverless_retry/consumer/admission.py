"""The claims side of the consumer: for each record, a verdict the consumer acts on.

Before a copy (or a redelivered first message) runs, ``Admission`` claims its chain's attempt
(``claims.ClaimStore``) and says what to do with the record (``verdicts``):

- ``GO``: run it (its claim, if any, is kept in the batch's state, to be marked after the calls);
- ``WaitUntil``: it waits, unprocessed, as a new SQS message due then (naming this one among its
  claimants, so that a claim written for it stays its own), this record acknowledged;
- ``Hide``: this very message waits hidden that long, handed back;
- ``HAND_BACK``: handed back as it is (the queue's visibility timeout brings it again);
- ``ACKNOWLEDGE``: a provable duplicate, or a redelivery whose handling finished: not run.

After the batch's calls, ``finish`` marks the claims of owners on a later receive done or ended.
docs/claims-protocol.md states the protocol; ``claims`` holds its condition and judgement.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from serverless_retry.consumer.claims import TAKEOVER_GRACE_SECONDS, Claim, ClaimStore, Finish, lease_seconds
from serverless_retry.consumer.verdicts import ACKNOWLEDGE, GO, HAND_BACK, Hide, Verdict, WaitUntil
from serverless_retry.planning import DUE_SKEW_MARGIN_SECONDS

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

    from serverless_retry.aws import AwsClients
    from serverless_retry.clock import Clock
    from serverless_retry.config import QueueTargets
    from serverless_retry.consumer.batch_state import BatchState
    from serverless_retry.consumer.record_reader import ReadRecord
    from serverless_retry.signing import EnvelopeSigner

__all__ = [
    "CLAIM_WAIT_MAX_SECONDS",
    "CLAIM_WAIT_SECONDS",
    "MAX_VISIBILITY_SECONDS",
    "Admission",
    "hide_seconds",
]

# While the claims table does not answer, a copy waits this long between tries, unprocessed, as a new
# SQS message (hidden in place, doubling on each receive, only when it cannot grow by the claimant).
CLAIM_WAIT_SECONDS = 120
CLAIM_WAIT_MAX_SECONDS = 900
MAX_VISIBILITY_SECONDS = 43_200


def hide_seconds(seconds: int, receives: int) -> int:
    """A hide of ``seconds`` on a first receive, twice as long on each later one (each receive it
    spends brings the DLQ nearer), at most SQS's longest visibility timeout."""
    return min(MAX_VISIBILITY_SECONDS, seconds * (1 << min(8, max(0, receives - 1))))


class Admission:
    """The consumer's claims: one per claims store (the lease, read once, carries over)."""

    def __init__(
        self,
        claims: ClaimStore,
        targets: QueueTargets,
        clients: AwsClients,
        logger: Logger,
        clock: Clock,
        *,
        in_place: bool,
        lease: int | None = None,
    ) -> None:
        self.claims = claims
        self._targets = targets
        self._clients = clients
        self._logger = logger
        self._clock = clock
        self._in_place = in_place  # the message itself is the chain, every receive an attempt
        self._fifo = targets.source_is_fifo
        self.lease: int | None = lease  # claims.lease_seconds of the source's visibility timeout
        self._signer: EnvelopeSigner | None = None

    @property
    def signer(self) -> EnvelopeSigner:
        """With the claims table every envelope we write is signed, and one we did not write is a
        chain apart (signing module). The key is read from the table on first use, and kept."""
        if self._signer is None:
            from serverless_retry.signing import EnvelopeSigner

            self._signer = EnvelopeSigner(self.claims.signing_key)
        return self._signer

    def longest_wait(self) -> int:
        """The protocol's longest wait for a copy: a live claim's lease plus the takeover grace."""
        return self.lease_seconds() + TAKEOVER_GRACE_SECONDS + 1 + DUE_SKEW_MARGIN_SECONDS

    def lease_seconds(self) -> int:
        if self.lease is None:
            visibility = self._targets.visibility_timeout_seconds
            if visibility is None:
                try:
                    attributes = self._clients.sqs.get_queue_attributes(
                        QueueUrl=self._targets.queue_url, AttributeNames=["VisibilityTimeout"]
                    )["Attributes"]
                    visibility = int(attributes["VisibilityTimeout"])
                except Exception:  # the longest timeout SQS allows: slow to take over, never wrong
                    self._logger.exception("could not read the queue's visibility timeout")
                    return lease_seconds(MAX_VISIBILITY_SECONDS)
            self.lease = lease_seconds(visibility)
        return self.lease

    # -- verdicts -----------------------------------------------------------------------------------------
    def admit_copy(self, read: ReadRecord, state: BatchState) -> Verdict:
        """A due envelope copy: in place its first receive runs as it is (the message is the chain);
        else it claims (id, attempt), in place (its SQS message id, 0)."""
        if self._in_place and read.receive_count == 1:
            return GO
        assert read.incoming is not None
        context = read.incoming.context
        if self._in_place:
            return self._admit(read, state, read.message_id, 0, copy=True)
        return self._admit(read, state, context.id, context.attempt, copy=True)

    def admit_first(self, read: ReadRecord, state: BatchState) -> Verdict:
        """A redelivered first message (not an envelope) claims its own chain's first attempt."""
        return self._admit(read, state, read.message_id, 0 if self._in_place else 1, copy=False)

    def _admit(
        self, read: ReadRecord, state: BatchState, retry_id: str, attempt: int, *, copy: bool
    ) -> Verdict:
        message_id, receives = read.message_id, read.receive_count
        log = {"message_id": message_id, "retry_id": retry_id, "attempt": attempt, "receives": receives}
        now = self._clock.now()
        incoming = read.incoming if copy else None
        meta = incoming.meta if incoming is not None else None
        try:
            claim = self.claims.claim(
                retry_id,
                attempt,
                message_id,
                receives=receives,
                now=now,
                lease_seconds=self.lease_seconds(),
                predecessors=meta.get("claimants", []) if meta is not None else [],
                generation=incoming.context.generation if incoming is not None and not self._in_place else 0,
            )
        except Exception:
            state.counts.claims_unavailable += 1
            return self._unanswered(read, log, copy=copy, now=now)
        if claim.result == "owned":
            self._own(state, claim, message_id, (retry_id, attempt, receives))
            return GO
        if claim.result == "busy":
            return self._busy(read, claim, log, copy=copy, now=now)
        state.counts.duplicates += 1
        if claim.result == "done":
            self._logger.info(
                "redelivered record already handled (its next step exists); acknowledged", extra=log
            )
        else:
            self._logger.warning(
                "duplicate copy: this attempt finished in another copy; its chain ends here", extra=log
            )
        return ACKNOWLEDGE

    @staticmethod
    def _own(state: BatchState, claim: Claim, message_id: str, held: tuple[str, int, int]) -> None:
        state.claimed[message_id] = held
        if claim.final_attempt is not None:
            state.repeat[message_id] = claim.final_attempt
        if claim.holds:
            state.holds[message_id] = claim.holds

    def _unanswered(self, read: ReadRecord, log: dict[str, object], *, copy: bool, now: datetime) -> Verdict:
        """The table did not answer the claim."""
        if copy and not self._in_place:
            # A duplicate copy could run beside it: the copy waits, unprocessed, until the table
            # answers, as a new message that names this one, whose claim may have been written.
            self._logger.exception("could not claim the attempt; the copy waits and tries again", extra=log)
            return self.wait_for_claims(read, now)
        if self._in_place:
            # The claim holds what the message decided last (a final decision to repeat), so it does
            # not run without it: hidden, unprocessed, its group waiting behind it, a little longer on
            # each receive (each counts as an attempt: the stated bound).
            self._logger.exception("could not claim the attempt; the message waits hidden", extra=log)
            return Hide(hide_seconds(CLAIM_WAIT_SECONDS, read.receive_count))
        # A redelivered first message runs unclaimed, as it would without the table: at least once.
        # Its copies still claim when the table is back.
        self._logger.exception("could not claim the attempt; the record runs unclaimed", extra=log)
        return GO

    def _busy(
        self, read: ReadRecord, claim: Claim, log: dict[str, object], *, copy: bool, now: datetime
    ) -> Verdict:
        """Another live copy's claim holds the attempt: this one waits until its lease ends, as a new
        delayed copy (it owns nothing), or on a FIFO queue this very message hidden."""
        until = datetime.fromtimestamp((claim.lease_until or 0) + 1, now.tzinfo)
        self._logger.info(
            "another copy holds this attempt and may still be running; this one waits, unprocessed",
            extra={**log, "until": until.isoformat()},
        )
        if not copy or self._in_place:
            return HAND_BACK
        if self._fifo:
            seconds = max(1, math.ceil((until - self._clock.now()).total_seconds()))
            return Hide(hide_seconds(seconds, read.receive_count))
        return WaitUntil(until, "wait")

    def wait_for_claims(self, read: ReadRecord, now: datetime) -> WaitUntil:
        """The claims table did not answer: the copy goes on as a new SQS message naming this one
        (a claim written for it, answer lost, is then the new message's own), and this record is
        acknowledged: a long outage spends no receives. The wait doubles with each carrier, from
        CLAIM_WAIT_SECONDS to an SQS delay's 900 s (well inside the takeover grace)."""
        meta = read.incoming.meta if read.incoming is not None else None
        carriers = len(meta.get("claimants", [])) if meta is not None else 0
        wait = min(CLAIM_WAIT_MAX_SECONDS, CLAIM_WAIT_SECONDS * 2 ** min(8, carriers))
        hidden = hide_seconds(CLAIM_WAIT_SECONDS, read.receive_count)
        return WaitUntil(now + timedelta(seconds=wait), "claims", hide_instead=hidden)

    def key_unavailable(self, read: ReadRecord, now: datetime) -> Verdict:
        """The signing key could not be read: the copy waits as for a claims-table outage."""
        assert read.incoming is not None
        log = {"message_id": read.message_id, "retry_id": read.incoming.context.id}
        if self._in_place:
            self._logger.exception("could not read the signing key; the message waits hidden", extra=log)
            return Hide(hide_seconds(CLAIM_WAIT_SECONDS, read.receive_count))
        self._logger.exception("could not read the signing key; the copy waits and tries again", extra=log)
        return self.wait_for_claims(read, now)

    # -- around the processor -----------------------------------------------------------------------------
    def count_hold(self, message_id: str) -> None:
        """This receive of a held-back record is not an attempt: counted, so its budget stays whole."""
        try:
            self.claims.add_hold(message_id, now=self._clock.now())
        except Exception:
            self._logger.exception(
                "could not count a held-back receive; it will count as an attempt",
                extra={"message_id": message_id},
            )

    def mark_final(self, message_id: str, attempt: int) -> bool:
        """In place a redelivery is a new attempt: if this final copy's answer gets lost, the
        redelivery must repeat this attempt (and decide alike). False: not recorded."""
        try:
            self.claims.mark_final(message_id, 0, message_id, final_attempt=attempt, now=self._clock.now())
        except Exception:
            self._logger.exception("could not record the final decision; the record goes back")
            return False
        return True

    def finish(self, state: BatchState) -> None:
        """Mark the claims of owners on a later receive whose next step happened (or that succeeded):
        done when a copy carries the chain on, else ended. A claim made on a first receive stays as it
        is: past its lease, an unredelivered first receive proves itself finished (``claims``)."""
        continued = {m.key for m in state.delayed} | {r.key for r in state.scheduled}
        done = [
            Finish(rid, attempt, key, ended=key not in continued)
            for key, (rid, attempt, receives) in state.claimed.items()
            if receives > 1 and key not in state.failed
        ]
        if not done:
            return
        try:
            unmarked = self.claims.finish(done, now=self._clock.now())
        except Exception:
            self._logger.exception("could not mark claims done")
            unmarked = {f.owner for f in done}
        if unmarked:
            # An owner on a later receive is acknowledged only once its claim says it finished: else,
            # past its lease, it would look dead and another copy would take its attempt over. It comes
            # back and runs once more (at least once); its copies' claims end any duplicate.
            self._logger.error(
                "could not mark claims done; their records go back to the queue",
                extra={"message_ids": sorted(unmarked)},
            )
            state.failed |= unmarked

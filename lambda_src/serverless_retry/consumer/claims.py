"""One chain per message: a claim per retry chain in a DynamoDB table, one conditional write per copy.

A retried message is a chain of SQS messages (copies), one per attempt, all with the same retry id. A
copy may exist twice (a send that took effect but timed out and was made again, a schedule that fired
twice, a record redelivered after its copy was sent, a DLQ redrive); only one copy of an attempt may
run the processor. Before a copy runs, it claims its chain's one item for (attempt, its SQS message
id) with one conditional ``UpdateItem``:

- no claim, or the chain's claim is for an earlier attempt that did not end the chain: taken, run;
- the same SQS message holds this attempt, unfinished: its own redelivery (a crash, a lost response,
  a timeout): taken again, run, as at-least-once delivery demands;
- the chain ended (processed or final) or moved past this attempt: a **provable duplicate**, its
  attempt finished: acknowledged without running;
- another SQS message holds this attempt:
  - marked done: a provable duplicate, acknowledged;
  - within its lease (one visibility timeout and a half from the claim): the owner may be running or
    about to be redelivered: this copy is ``busy`` and waits, unprocessed, never acknowledged;
  - past its lease, claimed on the owner's first receive: that receive ended and was not redelivered
    (a redelivery claims again, renewing the lease), so the owner was deleted: it finished. Provable;
  - claimed on a later receive, two hours (``TAKEOVER_GRACE_SECONDS``) past its lease: an owner on
    its second or later receive is acknowledged only once its claim is marked done, so this one died
    (SQS moved it to the DLQ and a redrive brought this copy, or a duplicate outlived it): **taken
    over**, run. A redriven copy is processed (within the grace it waits, unprocessed).

Why the first receive writes nothing more: a message fails its first receive, its copy claims once
and succeeds: one write per retried message, none for a first delivery (success or failure). Marks
(``finish``) are written only for owners on a later receive, where faults have already happened.

A chain's first message (not an envelope) claims only when redelivered (its receive count > 1); its
retry id is its own message id, so its redelivery meets the claims of its own copies. In place (FIFO
ordered: the message itself is the chain), attempt 0 is the message's, and ``add_hold`` counts the
receives it spent held back behind a failing message of its group, which are not attempts.

Why not Powertools idempotency here (it stays in use for the processor, see ``IdempotentProcessor``):
its records key a function call and hold its result; a claim must tell *which SQS message* holds it,
when its owner is provably gone, and "done" is known only after the batched SendMessageBatch /
CreateSchedule calls that follow the loop.

Items may share a table with Powertools' (partition key ``id``, TTL attribute ``expiration``): keys
start with ``serverless-retry-chain#``, which cannot meet Powertools' ``<function>#<hash>`` keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

if TYPE_CHECKING:
    from botocore.exceptions import ClientError
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "CLAIM_CLAUSES",
    "CLAIM_CONDITION",
    "CLAIM_PREFIX",
    "CLAIM_UPDATE",
    "FINAL_CONDITION",
    "FINISH_CONDITION",
    "HOLD_UPDATE",
    "Claim",
    "ClaimResult",
    "ClaimStore",
    "DynamoDBClaims",
    "Finish",
    "claim_condition",
    "claim_key",
    "judge",
    "lease_seconds",
]

CLAIM_PREFIX = "serverless-retry-chain#"
ClaimResult = Literal["owned", "done", "duplicate", "busy"]
State = Literal["taken", "final", "done", "ended"]

# The claim's clauses within one generation of the chain (claim_condition adds the rest). A
# holds-only item (``add_hold``) has no state yet: it may be claimed.
CLAIM_CLAUSES = (
    "(#attempt < :attempt AND #state <> :ended)"
    " OR (#attempt = :attempt AND #owner = :owner AND #state = :taken)"
    " OR (#attempt = :attempt AND #state = :taken AND #lease < :stale AND #receives > :one)"
)
CLAIM_CONDITION = f"attribute_not_exists(#state) OR {CLAIM_CLAUSES}"
# Items written before generations existed have none: generation 0.
_SAME_GENERATION = {
    True: "(attribute_not_exists(#generation) OR #generation = :generation)",
    False: "#generation = :generation",
}
_LATER_GENERATION = " OR attribute_not_exists(#generation) OR #generation < :generation"
# The key item: one per table, the envelope signing key (signing module), made by the first consumer
# that needs it. Not a chain's (no "chain#"), and with no TTL.
KEY_ITEM = "serverless-retry-key#1"
KEY_UPDATE = "SET #key = if_not_exists(#key, :key)"
KEY_BYTES = 32
FINAL_CONDITION = "attribute_not_exists(#owner) OR #owner = :owner"
HOLD_UPDATE = "ADD holds :one SET #expiration = :expiration"
FINISH_CONDITION = "#owner = :owner AND #attempt = :attempt"
FINISH_UPDATE = "SET #state = :state"
CLAIM_UPDATE = (
    "SET #attempt = :attempt, #owner = :owner, #receives = :receives, #state = :taken, #lease = :lease,"
    " #at = :now, #expiration = :expiration, #generation = :generation"
)
_NAMES = {
    "#generation": "generation",
    "#state": "state",
    "#attempt": "attempt",
    "#owner": "owner",
    "#lease": "lease",
    "#receives": "receives",
    "#at": "at",
    "#expiration": "expiration",
}


class Claim(NamedTuple):
    result: ClaimResult
    # In place (the message itself is the chain, every receive an attempt): the attempt this message
    # last went final at, when that final copy may or may not have been sent (the answer was lost).
    # The redelivery repeats that attempt, so it decides as before instead of trying a new attempt.
    final_attempt: int | None = None
    # In place: the receives this message spent held back behind its group (not attempts).
    holds: int = 0
    # busy: when the owner's lease ends (epoch seconds), the earliest this copy can be judged again.
    lease_until: int | None = None


class Finish(NamedTuple):
    """A claim whose record's next step happened: ``ended`` when that ended the chain (processed, or a
    final copy sent), else done (a copy, a schedule or hops will carry the next attempt)."""

    retry_id: str
    attempt: int
    owner: str
    ended: bool


# A claim made on a later receive is taken over only this long after its lease: an owner that went to
# the DLQ is gone for good (a redrive comes later still), while one whose claim was written but whose
# answer was lost is still carried on by a waiting copy, which must come back and claim first.
TAKEOVER_GRACE_SECONDS = 7_200
# A claim must outlive every copy of its chain: a copy lives at most the source's retention, then in
# the DLQ at most SQS's largest retention (14 days; a FIFO DLQ counts from the move), plus a day for
# the clocks and for DynamoDB, which deletes expired items some time after they expire.
MAX_RETENTION_SECONDS = 1_209_600
_EXTRA_TTL_SECONDS = 86_400
# The conditional write is idempotent, so a failed call is simply made again (within the invocation).
CLAIM_TRIES = 3


def claim_key(retry_id: str) -> str:
    return f"{CLAIM_PREFIX}{retry_id}"


def claim_condition(predecessors: Sequence[str], generation: int = 0) -> tuple[str, dict[str, Any]]:
    """The condition of a claim (with the values it needs): CLAIM_CONDITION within the copy's
    generation; when the copy was carried in other SQS messages before, a clause that lets it take
    their unfinished claim of this attempt as its own once that claim's lease has passed (they were
    acknowledged when this copy was sent, so none of them runs; a live lease is never taken); and for a
    redriven generation, any claim of an earlier one (that chain ended: the redrive came from the
    retry-exhausted queue)."""
    clauses = CLAIM_CLAUSES
    values: dict[str, Any] = {}
    if predecessors:
        values = {f":p{i}": {"S": p} for i, p in enumerate(predecessors)}
        clauses += f" OR (#attempt = :attempt AND #state = :taken AND #lease < :now AND #owner IN ({', '.join(values)}))"
    later = _LATER_GENERATION if generation > 0 else ""
    condition = (
        f"attribute_not_exists(#state){later} OR ({_SAME_GENERATION[generation == 0]} AND ({clauses}))"
    )
    return condition, values


def claim_holds(
    held: Mapping[str, Any] | None,
    *,
    attempt: int,
    owner: str,
    generation: int,
    now: int,
    predecessors: Sequence[str] = (),
) -> bool:
    """``claim_condition`` evaluated in Python, as DynamoDB does (a missing attribute compares false):
    for in-memory tables in tests and for reading the protocol (tests compare it with moto's)."""
    if held is None or _string(held, "state") is None:
        return True
    held_generation = _number(held, "generation", 0)
    if generation > 0 and ("generation" not in held or held_generation < generation):
        return True
    if held_generation != generation:
        return False
    state, held_attempt, held_owner = (
        _string(held, "state"),
        _number(held, "attempt", -1),
        _string(held, "owner"),
    )
    if "attempt" not in held:
        return False
    if held_attempt < attempt:
        return state != "ended"
    if held_attempt != attempt or state != "taken":
        return False
    if held_owner == owner:
        return True
    if "lease" not in held:
        return False
    lease = _number(held, "lease")
    if held_owner in predecessors and lease < now:
        return True
    return lease < now - TAKEOVER_GRACE_SECONDS and "receives" in held and _number(held, "receives") > 1


def lease_seconds(visibility_timeout_seconds: int) -> int:
    """How long a claim protects its owner: its message comes back one visibility timeout after the
    receive, and claims again a moment later; half a timeout more (at least 30 s) covers that moment."""
    return visibility_timeout_seconds + max(30, visibility_timeout_seconds // 2)


def _number(item: Mapping[str, Any], name: str, default: int = 0) -> int:
    try:
        return int(item[name]["N"])
    except (KeyError, TypeError, ValueError):
        return default


def _string(item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    return value.get("S") if isinstance(value, Mapping) else None


def judge(held: Mapping[str, Any], attempt: int, owner: str, now: int, generation: int = 0) -> Claim:
    """Why a claim was refused, from the item that refused it (pure; the condition's complement)."""
    if _number(held, "generation", 0) > generation:
        return Claim("duplicate")  # a copy of a generation its chain has left (a later redrive runs)
    state = _string(held, "state")
    held_attempt = _number(held, "attempt")
    mine = _string(held, "owner") == owner and held_attempt == attempt
    if mine and state == "final":
        # In place: left as it is, so that a lost answer reads it again; the redelivery repeats it.
        return Claim("owned", _number(held, "final_attempt"), _number(held, "holds"))
    if state == "ended" or held_attempt > attempt or state == "done":
        return Claim("done" if mine else "duplicate")
    lease = _number(held, "lease")
    if _number(held, "receives", 1) > 1:  # a takeover waits out the grace too
        return Claim("busy", lease_until=lease + TAKEOVER_GRACE_SECONDS)
    if lease >= now:
        return Claim("busy", lease_until=lease)
    # Past its lease and claimed on its owner's first receive: the owner was deleted, so it finished.
    return Claim("duplicate")


def _claim_values(
    attempt: int, owner: str, *, receives: int, at: int, lease_seconds: int, ttl_seconds: int, generation: int
) -> dict[str, Any]:
    """The values CLAIM_UPDATE and its condition read, for a claim made at ``at`` (epoch seconds)."""
    return {
        ":attempt": {"N": str(attempt)},
        ":owner": {"S": owner},
        ":receives": {"N": str(receives)},
        ":taken": {"S": "taken"},
        ":ended": {"S": "ended"},
        ":lease": {"N": str(at + lease_seconds)},
        ":now": {"N": str(at)},
        ":stale": {"N": str(at - TAKEOVER_GRACE_SECONDS)},
        ":one": {"N": "1"},
        ":expiration": {"N": str(at + ttl_seconds)},
        ":generation": {"N": str(generation)},
    }


class ClaimStore(Protocol):
    def claim(
        self,
        retry_id: str,
        attempt: int,
        owner: str,
        *,
        receives: int,
        now: datetime,
        lease_seconds: int,
        predecessors: Sequence[str] = (),
        generation: int = 0,
    ) -> Claim:
        """Raises when the store cannot answer. ``predecessors``: SQS message ids this copy was carried
        in before (a copy that could not claim waits as a new message): their claim is its own, once
        its lease has passed. ``generation``: the redrives of the exhausted queue into this chain."""
        ...

    def mark_final(
        self, retry_id: str, attempt: int, owner: str, *, final_attempt: int, now: datetime
    ) -> None:
        """Before an in-place record's final copy is sent: remember the attempt it went final at."""
        ...

    def add_hold(self, retry_id: str, *, now: datetime) -> None:
        """In place: one more receive of this message was spent held back (not an attempt)."""
        ...

    def finish(self, claims: Sequence[Finish], *, now: datetime) -> set[str]:
        """Mark claims done or ended; returns the owners whose mark the store did not take."""
        ...

    def signing_key(self) -> bytes:
        """The deployment's envelope signing key (made on first use); raises when it cannot answer."""
        ...


class DynamoDBClaims:
    def __init__(
        self, client: Callable[[], DynamoDBClient], table: str, *, retention_seconds: int = 345_600
    ) -> None:
        self._client = client  # called on first use: the client is created lazily
        self.table = table
        self.ttl_seconds = retention_seconds + MAX_RETENTION_SECONDS + _EXTRA_TTL_SECONDS

    def _call(self, method: str, **params: Any) -> Any:
        """One idempotent call, made again (up to CLAIM_TRIES) on any failure but a failed condition
        (raised at once); else the last error."""
        error: Exception | None = None
        for _ in range(CLAIM_TRIES):
            try:
                return getattr(self._client(), method)(TableName=self.table, **params)
            except Exception as exc:  # throttling, timeouts, connection errors: all but a failed condition
                if _condition_failed(exc) is not None:
                    raise
                error = exc
        assert error is not None
        raise error

    def claim(
        self,
        retry_id: str,
        attempt: int,
        owner: str,
        *,
        receives: int,
        now: datetime,
        lease_seconds: int,
        predecessors: Sequence[str] = (),
        generation: int = 0,
    ) -> Claim:
        at = int(now.timestamp())
        condition, carried = claim_condition(predecessors, generation)
        values = _claim_values(
            attempt, owner, receives=receives, at=at, lease_seconds=lease_seconds,
            ttl_seconds=self.ttl_seconds, generation=generation,
        )  # fmt: skip
        try:
            response = self._call(
                "update_item",
                Key={"id": {"S": claim_key(retry_id)}},
                UpdateExpression=CLAIM_UPDATE,
                ConditionExpression=condition,
                ExpressionAttributeNames=_NAMES,
                ExpressionAttributeValues={**carried, **values},
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except Exception as exc:
            failed = _condition_failed(exc)
            if failed is None:
                raise
            held: Any = failed.response.get("Item") or {}
            return judge(held, attempt, owner, at, generation)
        old: Mapping[str, Any] = response.get("Attributes") or {}
        return Claim("owned", None, _number(old, "holds"))

    def mark_final(
        self, retry_id: str, attempt: int, owner: str, *, final_attempt: int, now: datetime
    ) -> None:
        self._call(
            "update_item",
            Key={"id": {"S": claim_key(retry_id)}},
            # A first receive claims nothing, so the item may not exist yet: this write makes it.
            UpdateExpression=(
                "SET #state = :final, final_attempt = :final_attempt, #attempt = :attempt,"
                " #owner = :owner, #at = :now, #expiration = :expiration"
            ),
            ConditionExpression=FINAL_CONDITION,
            ExpressionAttributeNames={
                "#state": "state",
                "#owner": "owner",
                "#attempt": "attempt",
                "#at": "at",
                "#expiration": "expiration",
            },
            ExpressionAttributeValues={
                ":final": {"S": "final"},
                ":final_attempt": {"N": str(final_attempt)},
                ":attempt": {"N": str(attempt)},
                ":owner": {"S": owner},
                ":now": {"N": str(int(now.timestamp()))},
                ":expiration": {"N": str(int(now.timestamp()) + self.ttl_seconds)},
            },
        )

    def add_hold(self, retry_id: str, *, now: datetime) -> None:
        at = int(now.timestamp())
        self._call(
            "update_item",
            Key={"id": {"S": claim_key(retry_id)}},
            UpdateExpression=HOLD_UPDATE,
            ExpressionAttributeNames={"#expiration": "expiration"},
            ExpressionAttributeValues={":one": {"N": "1"}, ":expiration": {"N": str(at + self.ttl_seconds)}},
        )

    def finish(self, claims: Sequence[Finish], *, now: datetime) -> set[str]:
        # One conditional write each, not a BatchWriteItem: a later copy may already have claimed the
        # chain's next attempt (in this very batch), and a mark must never take the chain back.
        unmarked: set[str] = set()
        for c in claims:
            try:
                self._call(
                    "update_item",
                    Key={"id": {"S": claim_key(c.retry_id)}},
                    UpdateExpression=FINISH_UPDATE,
                    ConditionExpression=FINISH_CONDITION,
                    ExpressionAttributeNames={"#state": "state", "#owner": "owner", "#attempt": "attempt"},
                    ExpressionAttributeValues={
                        ":state": {"S": "ended" if c.ended else "done"},
                        ":owner": {"S": c.owner},
                        ":attempt": {"N": str(c.attempt)},
                    },
                )
            except Exception as exc:
                if _condition_failed(exc) is None:  # failed condition: the chain moved on, nothing to mark
                    unmarked.add(c.owner)
        return unmarked

    def signing_key(self) -> bytes:
        # One UpdateItem (the consumer's only DynamoDB action): makes the key if no consumer has yet,
        # and returns it either way. Called once per Lambda instance (signing.EnvelopeSigner keeps it).
        import os

        response = self._call(
            "update_item",
            Key={"id": {"S": KEY_ITEM}},
            UpdateExpression=KEY_UPDATE,
            ExpressionAttributeNames={"#key": "key"},
            ExpressionAttributeValues={":key": {"B": os.urandom(KEY_BYTES)}},
            ReturnValues="ALL_NEW",
        )
        key = response["Attributes"]["key"]["B"]
        return bytes(key)


def _condition_failed(exc: BaseException) -> ClientError | None:
    """The error when it is DynamoDB's failed condition, else None. (botocore's exceptions are imported
    here, not with the module: a call that raised one has imported them already.)"""
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") == (
        "ConditionalCheckFailedException"
    ):
        return exc
    return None

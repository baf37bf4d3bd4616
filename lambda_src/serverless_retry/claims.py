"""One chain per message: claims on (retry id, attempt) in the idempotency table.

Each copy of an attempt is a separate SQS message. Before a due copy is processed (and before a
failed first delivery sends anything), the consumer claims ``(id, attempt)`` for that record's SQS
message id with one conditional write:

- nobody holds it: the record takes it and runs;
- the same SQS message holds it, unfinished: a redelivery of that message after a crash, a lost
  response or a timeout: it runs again, as at-least-once delivery demands;
- the same SQS message holds it, marked done: its next step (the copy, the schedule, the final copy,
  or a success) already happened; the redelivery is acknowledged without running again, so it can
  neither start a second chain nor end in the DLQ while its copy goes on;
- another SQS message holds it: this copy is a duplicate of an attempt already taken (a record that
  was redelivered after its copy was sent, a schedule re-created after it fired, a send that succeeded
  but timed out): its chain ends here, acknowledged without processing.

A claim is marked done (one BatchWriteItem per 25 records) once the record's next step succeeded.

Why not Powertools idempotency here (it stays in use for the processor, see ``IdempotentProcessor``):
its records key a function call and hold its result; a second call with the key either waits for
("already in progress") or replays that result, whoever makes it. A claim must instead tell *which
SQS message* holds it, so that the owner's redelivery runs again at once while any other copy ends
at once, and Powertools' records have no owner to condition on; and "done" must be written after the
batched SendMessageBatch / CreateSchedule calls that follow the loop, not when a function returns.
One ``PutItem`` with ``attribute_not_exists(id) OR (owner = :me AND state = taken)`` is the
mechanism (its ``ReturnValuesOnConditionCheckFailure`` tells a duplicate from a finished claim).

Items share the table with Powertools' (partition key ``id``, TTL attribute ``expiration``): keys
start with ``serverless-retry-claim#`` so they cannot meet Powertools' ``<function>#<hash>`` keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["CLAIM_PREFIX", "Claim", "ClaimResult", "ClaimStore", "DynamoDBClaims", "claim_key"]

CLAIM_PREFIX = "serverless-retry-claim#"
ClaimResult = Literal["owned", "done", "duplicate"]


class Claim(NamedTuple):
    result: ClaimResult
    # In place (the message itself is the chain, every receive an attempt): the attempt this message
    # last went final at, when that final copy may or may not have been sent (the answer was lost).
    # The redelivery repeats that attempt, so it decides as before instead of trying a new attempt.
    final_attempt: int | None = None


# A claim must outlive every copy of its attempt: copies live at most the retention, plus a day.
_EXTRA_TTL_SECONDS = 86_400
# The conditional write is idempotent, so a failed call is simply made again (within the invocation).
CLAIM_TRIES = 3
_BATCH_WRITE_MAX = 25


def claim_key(retry_id: str, attempt: int) -> str:
    return f"{CLAIM_PREFIX}{retry_id}#{attempt}"


class ClaimStore(Protocol):
    def claim(self, retry_id: str, attempt: int, owner: str, *, now: datetime) -> Claim:
        """Raises when the store cannot answer (the record then goes back to the queue)."""
        ...

    def mark_final(
        self, retry_id: str, attempt: int, owner: str, *, final_attempt: int, now: datetime
    ) -> None:
        """Before an in-place record's final copy is sent: remember the attempt it went final at."""
        ...

    def finish(self, claims: Sequence[tuple[str, int, str]], *, now: datetime) -> None:
        """Mark (retry id, attempt, owner) claims done; raises when the store cannot."""
        ...


class DynamoDBClaims:
    def __init__(
        self, client: Callable[[], DynamoDBClient], table: str, *, retention_seconds: int = 345_600
    ) -> None:
        self._client = client  # called on first use: the client is created lazily
        self.table = table
        self.ttl_seconds = retention_seconds + _EXTRA_TTL_SECONDS

    def _item(self, retry_id: str, attempt: int, owner: str, state: str, now: datetime) -> dict[str, Any]:
        return {
            "id": {"S": claim_key(retry_id, attempt)},
            "owner": {"S": owner},
            "state": {"S": state},
            "at": {"N": str(int(now.timestamp()))},
            "expiration": {"N": str(int(now.timestamp()) + self.ttl_seconds)},
        }

    def _put(self, item: dict[str, Any], **condition: Any) -> None:
        """One conditional PutItem, made again (up to CLAIM_TRIES) on any failure but its condition's:
        the same write again is safe. A failed condition raises at once; else the last error."""
        error: Exception | None = None
        for _ in range(CLAIM_TRIES):
            try:
                self._client().put_item(TableName=self.table, Item=item, **condition)
            except ClientError as exc:
                if _condition_failed(exc):
                    raise
                error = exc
            except Exception as exc:  # timeouts, connection errors
                error = exc
            else:
                return
        assert error is not None
        raise error

    def claim(self, retry_id: str, attempt: int, owner: str, *, now: datetime) -> Claim:
        try:
            self._put(
                self._item(retry_id, attempt, owner, "taken", now),
                ConditionExpression="attribute_not_exists(#id) OR (#owner = :owner AND #state = :taken)",
                ExpressionAttributeNames={"#id": "id", "#owner": "owner", "#state": "state"},
                ExpressionAttributeValues={":owner": {"S": owner}, ":taken": {"S": "taken"}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            held: Any = exc.response.get("Item") or {}
            if held.get("owner", {}).get("S") != owner:
                return Claim("duplicate")
            if held.get("state", {}).get("S") == "final":  # left as it is: a lost answer reads it again
                return Claim("owned", int(held["final_attempt"]["N"]))
            return Claim("done")
        return Claim("owned")

    def mark_final(
        self, retry_id: str, attempt: int, owner: str, *, final_attempt: int, now: datetime
    ) -> None:
        final = {
            **self._item(retry_id, attempt, owner, "final", now),
            "final_attempt": {"N": str(final_attempt)},
        }
        self._put(
            final,
            ConditionExpression="#owner = :owner",
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues={":owner": {"S": owner}},
        )

    def finish(self, claims: Sequence[tuple[str, int, str]], *, now: datetime) -> None:
        # Overwriting is safe: only the owner (this record's SQS message) ever marks its claim done.
        for start in range(0, len(claims), _BATCH_WRITE_MAX):
            requests: list[Any] = [
                {"PutRequest": {"Item": self._item(retry_id, attempt, owner, "done", now)}}
                for retry_id, attempt, owner in claims[start : start + _BATCH_WRITE_MAX]
            ]
            error: Exception | None = None
            for _ in range(CLAIM_TRIES):
                try:
                    response = self._client().batch_write_item(RequestItems={self.table: requests})
                except Exception as exc:  # writing "done" again is harmless: try again
                    error = exc
                    continue
                requests = list(response.get("UnprocessedItems", {}).get(self.table, []))
                if not requests:
                    break
            else:
                raise error or RuntimeError(f"{len(requests)} claims were not marked done (unprocessed)")


def _condition_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"

"""One chain per message: claims on (retry id, attempt) in the idempotency table.

Each copy of an attempt is a separate SQS message. Before a due copy is processed, the consumer claims
``(id, attempt)`` for that copy's SQS message id with one conditional write:

- nobody holds it: the copy takes it and runs;
- the same SQS message holds it: a redelivery of that message (after a crash, a lost response, a
  timeout): it runs again, as at-least-once delivery demands;
- another SQS message holds it: this copy is a duplicate of an attempt already taken (a record that
  was redelivered after its copy was sent, a schedule re-created after it fired, a send that succeeded
  but timed out): its chain ends here, acknowledged without processing.

Why not Powertools idempotency here (it stays in use for the processor, see ``IdempotentProcessor``):
its records key a function call and hold its result; a second call with the key either waits for
("already in progress") or replays that result, whoever makes it. A claim must instead tell *which
SQS message* holds it, so that the owner's redelivery runs again at once while any other copy ends
at once, and Powertools' records have no owner to condition on. One ``PutItem`` with
``attribute_not_exists(id) OR owner = :me`` is the whole mechanism.

Items share the table with Powertools' (partition key ``id``, TTL attribute ``expiration``): keys
start with ``serverless-retry-claim#`` so they cannot meet Powertools' ``<function>#<hash>`` keys.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["CLAIM_PREFIX", "ClaimResult", "ClaimStore", "DynamoDBClaims", "claim_key"]

CLAIM_PREFIX = "serverless-retry-claim#"
ClaimResult = Literal["owned", "duplicate"]
# A claim must outlive every copy of its attempt: copies live at most the retention, plus a day.
_EXTRA_TTL_SECONDS = 86_400
# The conditional write is idempotent, so a failed call is simply made again (within the invocation).
CLAIM_TRIES = 3


def claim_key(retry_id: str, attempt: int) -> str:
    return f"{CLAIM_PREFIX}{retry_id}#{attempt}"


class ClaimStore(Protocol):
    def claim(self, retry_id: str, attempt: int, owner: str, *, now: datetime) -> ClaimResult:
        """Raises when the store cannot answer (the record then goes back to the queue)."""
        ...


class DynamoDBClaims:
    def __init__(
        self, client: Callable[[], DynamoDBClient], table: str, *, retention_seconds: int = 345_600
    ) -> None:
        self._client = client  # called on first use: the client is created lazily
        self.table = table
        self.ttl_seconds = retention_seconds + _EXTRA_TTL_SECONDS

    def claim(self, retry_id: str, attempt: int, owner: str, *, now: datetime) -> ClaimResult:
        item = {
            "id": {"S": claim_key(retry_id, attempt)},
            "owner": {"S": owner},
            "claimed_at": {"N": str(int(now.timestamp()))},
            "expiration": {"N": str(int(now.timestamp()) + self.ttl_seconds)},
        }
        error: Exception | None = None
        for _ in range(CLAIM_TRIES):
            try:
                self._client().put_item(
                    TableName=self.table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(#id) OR #owner = :owner",
                    ExpressionAttributeNames={"#id": "id", "#owner": "owner"},
                    ExpressionAttributeValues={":owner": {"S": owner}},
                )
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                    return "duplicate"
                error = exc
            except Exception as exc:  # timeouts, connection errors: the same write again is safe
                error = exc
            else:
                return "owned"
        assert error is not None
        raise error

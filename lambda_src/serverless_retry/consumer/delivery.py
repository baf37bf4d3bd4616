"""Sending a batch's failed records where they go next: a delayed copy, a schedule, a visibility
change, or the retry-exhausted queue.

Every method reports which records' calls did NOT succeed (by the record's message id, the ``key``);
the consumer puts exactly those in ``batchItemFailures`` so the queue redelivers them. Nothing here
raises for an AWS failure: an unexpected error fails only the records it concerns.
"""

# (No ``from __future__ import annotations``: class annotations stay real types, which a NamedTuple,
# TypedDict or dataclass reads at import far cheaper than strings typing compiles into ForwardRefs.)
import hashlib
import math
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from aws_lambda_powertools import Logger

from serverless_retry.aws import AwsClients
from serverless_retry.clock import Clock, SystemClock
from serverless_retry.config import QueueTargets

# Pure conventions shared with the self-healing redrive and the queue redrive, which do not import this
# module; re-exported here, where they were first defined.
from serverless_retry.envelope import (
    SCHEDULE_RETRY_POLICY,
    MessageAttribute,
    api_attributes,
    at_expression,
    sqs_message_size,
)
from serverless_retry.policy import SQS_MAX_DELAY_SECONDS

if TYPE_CHECKING:
    from botocore.exceptions import ClientError
    from mypy_boto3_scheduler.type_defs import CreateScheduleInputTypeDef, TargetTypeDef
    from mypy_boto3_sqs.type_defs import (
        ChangeMessageVisibilityBatchRequestEntryTypeDef,
        SendMessageBatchRequestEntryTypeDef,
    )

    from serverless_retry.payload_pointer import StoredPayload
    from serverless_retry.terminal import FinalForm, final_message

__all__ = [
    "SCHEDULE_MIN_LEAD_SECONDS",
    "SCHEDULE_RETRY_POLICY",
    "CallKind",
    "Delivery",
    "FinalForm",
    "Outgoing",
    "ScheduledRetry",
    "VisibilityChange",
    "at_expression",
    "final_message",
    "send_delay",
]

SQS_BATCH_MAX_ENTRIES = 10
_ENTRY_IDS = tuple(str(i) for i in range(SQS_BATCH_MAX_ENTRIES))
# A SendMessageBatch's bodies together may not exceed the service's message size limit (256 KiB
# before 2025, 1 MiB since); a queue configured above 256 KiB implies the larger limit.
_LEGACY_BATCH_BYTES = 262_144
# A one-time schedule's at() must still be in the future when Scheduler receives the call (a FIFO
# queue sends even a 0-second retry through the Scheduler), so it is fixed when CreateSchedule is
# called, never earlier: a slow batch cannot hand the Scheduler a time already past.
SCHEDULE_MIN_LEAD_SECONDS = 5
# SendMessageBatch / ChangeMessageVisibilityBatch: entries the service failed (SenderFault false) and
# throttled or failing calls are tried again within the invocation, up to this many tries in all,
# before their records go back to the queue (where each return spends a receive of maxReceiveCount).
SEND_TRIES = 3
# CreateSchedule errors that say "not now" (throttling, quota, the service failing): the retry then
# waits in SQS delay hops instead. A call that got no answer (a timeout) may have worked: the schedule's
# name resolves it first (Delivery._resolve). Anything else (access denied, a validation error) is a
# configuration problem: the record goes back to the queue and the DLQ alarm tells someone.
_REFUSALS = frozenset(
    {
        "ThrottlingException",
        "TooManyRequestsException",
        "ServiceQuotaExceededException",
        "InternalServerException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
    }
)


ScheduleResult = Literal["scheduled", "refused", "failed"]
_NO_ATTRIBUTES: Mapping[str, MessageAttribute] = MappingProxyType({})

# The messages below are NamedTuples, not frozen dataclasses: as immutable, but a frozen dataclass
# costs about 0.6 ms to define (at every cold start) and sets each field through object.__setattr__
# on every instance, on the path of every failed record.


class CallKind(Enum):
    """What a queued call does for its record: the batch's counts follow it once the call succeeded."""

    DELAYED = "sqs-delay"  # a retry's SQS-delayed copy
    HOPS = "sqs-hops"  # a retry waiting in delay hops
    FALLBACK = "fallback"  # hops sent because the Scheduler refused the retry's schedule
    IN_PLACE = "visibility"  # a retry of this very message, hidden until due
    WAIT = "wait"  # a copy waiting again, unprocessed (early, a live claim, the claims table down)
    HELD_BACK = "held-back"  # FIFO ordered: visible again behind its group's failed record
    EXHAUSTED = "exhausted"  # a final copy: exhausted or too large to retry
    NON_RETRYABLE = "non-retryable"  # a final copy of a non-retryable failure
    INVALID = "invalid-envelope"  # a final copy of a record or envelope the consumer cannot handle


class Outgoing(NamedTuple):
    """One SQS message to send; ``key`` is the record it stands for."""

    key: str
    body: str
    attributes: Mapping[str, MessageAttribute] = _NO_ATTRIBUTES
    delay_seconds: int = 0  # logical seconds; the most DelaySeconds may be (never above 900)
    # FIFO: the message group. Standard queue: the producer's MessageGroupId (a fair queue's tenant),
    # kept so that one tenant's retries are not delivered ahead of the other tenants' messages.
    group_id: str | None = None
    dedup_id: str | None = None  # FIFO targets only
    # A delayed copy or a delay hop: DelaySeconds is the time left until due_at when the call is made
    # (rounded up to the second, so never early), at most ``delay_seconds``; a batch that ran long
    # does not make the copy late. FIFO targets take no per-message delay: they get none.
    due_at: datetime | None = None
    kind: CallKind = CallKind.DELAYED
    # A final copy in the pointer form: its payload, written to S3 before the pointer is sent.
    payload: "StoredPayload | None" = None


class ScheduledRetry(NamedTuple):
    key: str
    name: str  # deterministic: envelope.schedule_name(id, attempt); also the ClientToken
    due_at: datetime  # logical UTC time the retry is due; at() = max(due_at, call time + lead)
    body: str  # the envelope JSON, delivered verbatim as the SQS message body
    # FIFO source queue: the record's MessageGroupId. Never set for a standard queue: EventBridge
    # Scheduler documents SqsParameters.MessageGroupId for FIFO targets only (not for fair queues, as
    # EventBridge rules do), so a retry that waits in the Scheduler reaches a standard queue without
    # its producer's group, and the retries that follow it too. Keep fair-queue tenants on every retry
    # with transport "sqs-hops" (or "sqs-delay" for delays up to 900 s), which carry it.
    group_id: str | None = None
    description: str = ""
    hops: Outgoing | None = None  # what to send instead when the Scheduler refuses


class VisibilityChange(NamedTuple):
    key: str
    receipt_handle: str
    timeout_seconds: int  # real seconds
    # An in-place retry's due time: the timeout is then what is left of it when the call is made (the
    # rest of the batch ran since the decision), at most timeout_seconds, as send_delay does for copies.
    due_at: datetime | None = None
    kind: CallKind = CallKind.IN_PLACE


def dedup_id(*parts: object) -> str:
    """A deterministic MessageDeduplicationId: a redelivered record's copy is deduplicated by FIFO."""
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()


class Delivery:
    def __init__(
        self, clients: AwsClients, targets: QueueTargets, logger: Logger, clock: Clock | None = None
    ) -> None:
        self._clients = clients
        self._targets = targets
        self._logger = logger
        self._clock: Clock = clock or SystemClock()
        self._batch_bytes = max(_LEGACY_BATCH_BYTES, targets.max_message_bytes)
        # With idempotency claims a send whose answer was lost (a timeout) is made again at once: a
        # duplicate copy it may create is ended by its claim. Without them it is not: a second copy
        # would start a second chain, so its record goes back to the queue instead.
        self.resend_after_timeout = False

    # -- SQS ----------------------------------------------------------------------------------------
    def send_delayed(self, messages: Sequence[Outgoing]) -> set[str]:
        """Delayed copies back to the source queue. Returns the keys that were not sent."""
        return self._send_batches(self._targets.queue_url, messages, fifo=self._targets.source_is_fifo)

    def send_exhausted(self, messages: Sequence[Outgoing]) -> set[str]:
        """Final copies to the retry-exhausted queue. Returns the keys that were not sent. A pointer is
        sent only once its payload is in S3: a payload not written keeps its record out of the send."""
        unstored = self._put_payloads([m for m in messages if m.payload is not None])
        if unstored:
            messages = [m for m in messages if m.key not in unstored]
        return unstored | self._send_batches(
            self._targets.exhausted_queue_url, messages, fifo=self._targets.exhausted_is_fifo
        )

    def _put_payloads(self, messages: Sequence[Outgoing]) -> set[str]:
        """Each pointer's payload to S3 (once: its key is deterministic); the keys not written."""
        failed: set[str] = set()
        if not messages:
            return failed
        from serverless_retry.payload_store import put_payload

        for message in messages:
            assert message.payload is not None
            try:
                put_payload(self._clients.s3, message.payload)
            except Exception as exc:
                self._logger.error(
                    "the claim-check payload could not be written; the record goes back to the queue",
                    extra={
                        "message_id": message.key,
                        "key": message.payload.location["key"],
                        "error": _describe(exc),
                    },
                )
                failed.add(message.key)
        return failed

    def _send_batches(self, queue_url: str, messages: Sequence[Outgoing], *, fifo: bool) -> set[str]:
        failed: set[str] = set()
        for chunk in self._chunks(messages):
            pending = chunk
            for _ in range(SEND_TRIES):
                lost, pending = self._send_batch(queue_url, pending, fifo=fifo)
                failed |= lost
                if not pending:
                    break
            failed.update(m.key for m in pending)
        return failed

    def _chunks(self, messages: Sequence[Outgoing]) -> Iterator[list[Outgoing]]:
        chunk: list[Outgoing] = []
        size = 0
        for message in messages:
            n = sqs_message_size(message.body, message.attributes)
            if chunk and (len(chunk) == SQS_BATCH_MAX_ENTRIES or size + n > self._batch_bytes):
                yield chunk
                chunk, size = [], 0
            chunk.append(message)
            size += n
        if chunk:
            yield chunk

    def _send_batch(
        self, queue_url: str, chunk: list[Outgoing], *, fifo: bool
    ) -> tuple[set[str], list[Outgoing]]:
        """One SendMessageBatch: (keys that failed for good, messages worth sending again now)."""
        try:
            response = self._clients.sqs.send_message_batch(
                QueueUrl=queue_url, Entries=self._entries(chunk, fifo)
            )
        except Exception as exc:
            # Throttled: not sent, send again. A 5xx or a timeout may have been sent: only with claims.
            again = _is_throttled(exc) or (
                self.resend_after_timeout and (_is_transient(exc) or _is_timeout(exc))
            )
            self._logger.error(
                "SendMessageBatch failed; sending again" if again else "SendMessageBatch failed",
                extra={
                    "queue_url": queue_url,
                    "error": _describe(exc),
                    "message_ids": [m.key for m in chunk],
                },
            )
            return (set(), chunk) if again else ({m.key for m in chunk}, [])
        failures = response.get("Failed", [])
        # Entries that failed on the service's side (not the sender's) took no effect: send them again.
        retry = [chunk[int(f["Id"])] for f in failures if not f.get("SenderFault")]
        failed = {chunk[int(f["Id"])].key for f in failures if f.get("SenderFault")}
        if failures:
            self._logger.error(
                "SendMessageBatch entries failed",
                extra={"queue_url": queue_url, "failures": _entry_failures(chunk, failures)},
            )
        return failed, retry

    def _entries(self, chunk: list[Outgoing], fifo: bool) -> "list[SendMessageBatchRequestEntryTypeDef]":
        """The SendMessageBatch entries of ``chunk``. Entry Ids are positions: record ids may repeat
        within a batch and need not be valid entry ids."""
        entries: list[SendMessageBatchRequestEntryTypeDef] = []
        # Read at each call, retries included: the delay is what is left until due when SQS gets it.
        now = self._clock.now() if any(m.due_at is not None for m in chunk) else None
        for i, message in enumerate(chunk):
            _, body, attributes, _, group_id, dedup, _, _, _ = (
                message  # (a field read by name costs a lookup)
            )
            entry: SendMessageBatchRequestEntryTypeDef = {"Id": _ENTRY_IDS[i], "MessageBody": body}
            if not fifo:  # a FIFO queue refuses a per-message delay
                delay = send_delay(message, now)
                if delay:
                    entry["DelaySeconds"] = delay
            if attributes:
                entry["MessageAttributes"] = api_attributes(attributes)
            if group_id is not None:
                entry["MessageGroupId"] = group_id
            if dedup is not None:
                entry["MessageDeduplicationId"] = dedup
            entries.append(entry)
        return entries

    def change_visibility(self, changes: Sequence[VisibilityChange]) -> set[str]:
        """Hide messages until their next attempt. Returns the keys whose change failed (they come back
        after the queue's own visibility timeout instead)."""
        failed: set[str] = set()
        for start in range(0, len(changes), SQS_BATCH_MAX_ENTRIES):
            pending = list(changes[start : start + SQS_BATCH_MAX_ENTRIES])
            for _ in range(SEND_TRIES):
                lost, pending = self._change_batch(pending)
                failed |= lost
                if not pending:
                    break
            failed.update(c.key for c in pending)
        return failed

    def _change_batch(self, chunk: list[VisibilityChange]) -> tuple[set[str], list[VisibilityChange]]:
        now = self._clock.now() if any(c.due_at is not None for c in chunk) else None
        entries: list[ChangeMessageVisibilityBatchRequestEntryTypeDef] = [
            {"Id": str(i), "ReceiptHandle": c.receipt_handle, "VisibilityTimeout": visibility_timeout(c, now)}
            for i, c in enumerate(chunk)
        ]
        try:
            response = self._clients.sqs.change_message_visibility_batch(
                QueueUrl=self._targets.queue_url, Entries=entries
            )
        except Exception as exc:
            self._logger.error("ChangeMessageVisibilityBatch failed", extra={"error": _describe(exc)})
            # Setting a visibility timeout again is harmless, whatever the first call did.
            return (set(), chunk) if _is_transient(exc) else ({c.key for c in chunk}, [])
        failed: set[str] = set()
        retry: list[VisibilityChange] = []
        for f in response.get("Failed", []):
            if f.get("SenderFault"):
                failed.add(chunk[int(f["Id"])].key)
            else:
                retry.append(chunk[int(f["Id"])])
            self._logger.error(
                "ChangeMessageVisibility entry failed",
                extra={
                    "message_id": chunk[int(f["Id"])].key,
                    "code": f.get("Code"),
                    "error": f.get("Message"),
                },
            )
        return failed, retry

    # -- EventBridge Scheduler ----------------------------------------------------------------------
    def schedule_all(self, retries: Sequence[ScheduledRetry]) -> tuple[set[str], list[ScheduledRetry]]:
        """Create each schedule. Returns (keys that failed, retries the Scheduler refused: throttled,
        over quota, failing or not answering — those can wait in SQS delay hops instead)."""
        failed: set[str] = set()
        refused: list[ScheduledRetry] = []
        for retry in retries:
            result = self.schedule(retry)
            if result == "refused":
                refused.append(retry)
            elif result == "failed":
                failed.add(retry.key)
        return failed, refused

    def schedule(self, retry: ScheduledRetry) -> ScheduleResult:
        """Create the one-time schedule: "scheduled" when it exists afterwards (created now or before),
        "refused" when it provably does not (the retry can wait in hops instead), "failed" otherwise.

        A call that timed out or lost its connection may have created the schedule: taking it for a
        refusal would add a hop copy beside it, a second chain. The name is deterministic, so the
        ambiguity is resolved by asking for it (see ``_resolve``) before anything falls back."""
        targets = self._targets
        if targets.schedule_group is None or targets.scheduler_role_arn is None:
            return "refused"  # no Scheduler configured (library use): the retry waits in hops
        at = max(retry.due_at, self._clock.now() + timedelta(seconds=SCHEDULE_MIN_LEAD_SECONDS))
        request = self._schedule_request(retry, at, targets.schedule_group, targets.scheduler_role_arn)
        log = {"message_id": retry.key, "schedule": retry.name}
        try:
            self._clients.scheduler.create_schedule(**request)
        except Exception as exc:
            if _is_conflict(exc):
                return "scheduled"  # already scheduled by an earlier delivery of this record
            if _is_timeout(exc):
                return self._resolve(retry, request, at, exc)
            if _is_refusal(exc):
                self._logger.warning(
                    "CreateSchedule refused; the retry waits in SQS delay hops instead",
                    extra={**log, "error": _describe(exc)},
                )
                return "refused"
            self._logger.error(
                "CreateSchedule failed; the record goes back to the queue",
                extra={**log, "error": _describe(exc)},
            )
            return "failed"
        return "scheduled"

    def _schedule_request(
        self, retry: ScheduledRetry, at: datetime, group: str, role_arn: str
    ) -> "CreateScheduleInputTypeDef":
        targets = self._targets
        target: TargetTypeDef = {
            "Arn": targets.queue_arn,
            "RoleArn": role_arn,
            "Input": retry.body,
            "DeadLetterConfig": {"Arn": targets.dlq_arn},
            "RetryPolicy": dict(SCHEDULE_RETRY_POLICY),  # type: ignore[typeddict-item]
        }
        if retry.group_id is not None:
            target["SqsParameters"] = {"MessageGroupId": retry.group_id}
        return {
            "Name": retry.name,
            "GroupName": group,
            # Same name + token for the same (id, attempt): a redelivered record cannot schedule twice.
            "ClientToken": retry.name.replace(".", "-"),
            "ScheduleExpression": at_expression(at),
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "ActionAfterCompletion": "DELETE",
            "State": "ENABLED",
            "Description": retry.description[:512],
            "Target": target,
        }

    def _resolve(
        self, retry: ScheduledRetry, request: "CreateScheduleInputTypeDef", at: datetime, exc: Exception
    ) -> ScheduleResult:
        """CreateSchedule gave no answer: did it create the schedule? GetSchedule by its name tells.

        - found: it did ("scheduled");
        - not found before its at(): it did not, or not yet; the same request again (same name, token
          and time) makes exactly one: created now, or ConflictException because the first landed
          meanwhile - both "scheduled". A plain refusal of that second call means neither exists:
          "refused" (hops). Another timeout: "failed";
        - not found at or after its at(): it may have run and deleted itself (ActionAfterCompletion
          DELETE), its copy already sent; creating it again would start a second chain, and assuming
          it ran could lose the message. "failed": the record goes back, unacknowledged;
        - GetSchedule itself failing: "failed" too. A redelivered record repeats the same name, so
          its CreateSchedule finds the schedule (ConflictException) if the first call made it.
        """
        group = request["GroupName"]
        log = {"message_id": retry.key, "schedule": retry.name, "error": _describe(exc)}
        try:
            self._clients.scheduler.get_schedule(Name=retry.name, GroupName=group)
        except Exception as lookup:
            if not _is_not_found(lookup):
                self._logger.error(
                    "CreateSchedule gave no answer and GetSchedule failed; the record goes back to the queue",
                    extra={**log, "lookup_error": _describe(lookup)},
                )
                return "failed"
        else:
            self._logger.info("CreateSchedule gave no answer; GetSchedule found the schedule", extra=log)
            return "scheduled"
        if self._clock.now() >= at:
            self._logger.error(
                "CreateSchedule gave no answer and the schedule is gone at its time: it may have run; "
                "the record goes back to the queue",
                extra=log,
            )
            return "failed"
        return self._create_again(request, log)

    def _create_again(
        self, request: "CreateScheduleInputTypeDef", log: Mapping[str, object]
    ) -> ScheduleResult:
        """The same request once more, after GetSchedule found no schedule before its time."""
        try:
            self._clients.scheduler.create_schedule(**request)
        except Exception as again:
            if _is_conflict(again):
                return "scheduled"
            if _is_refusal(again) and not _is_timeout(again):
                self._logger.warning(
                    "CreateSchedule gave no answer, the schedule does not exist and the Scheduler refuses "
                    "it now; the retry waits in SQS delay hops instead",
                    extra={**log, "retry_error": _describe(again)},
                )
                return "refused"
            self._logger.error(
                "CreateSchedule gave no answer twice; the record goes back to the queue",
                extra={**log, "retry_error": _describe(again)},
            )
            return "failed"
        self._logger.info(
            "CreateSchedule gave no answer; created again after GetSchedule found none", extra=log
        )
        return "scheduled"


def _entry_failures(
    chunk: Sequence[Outgoing], failures: Sequence[Mapping[str, Any]]
) -> list[dict[str, object]]:
    """The failed entries of a SendMessageBatch, for its log line: which message, and why."""
    return [
        {"message_id": chunk[int(f["Id"])].key, "code": f.get("Code"), "error": f.get("Message")}
        for f in failures
    ]


def visibility_timeout(change: VisibilityChange, now: datetime | None) -> int:
    """VisibilityTimeout for ``change`` made at ``now``: the whole seconds left until its due time,
    rounded up, never negative, at most its ``timeout_seconds``."""
    timeout, due_at = change.timeout_seconds, change.due_at
    if due_at is not None and now is not None:
        left = math.ceil((due_at - now).total_seconds())
        timeout = max(0, min(timeout, left))
    return timeout


def send_delay(message: Outgoing, now: datetime | None) -> int:
    """DelaySeconds for ``message`` sent at ``now``: the whole seconds left until its due time, rounded
    up (SQS counts whole seconds, so the copy is never visible before it is due), never negative, at
    most its ``delay_seconds`` and SQS's 900."""
    delay, due_at = message.delay_seconds, message.due_at
    if due_at is not None and now is not None:
        left = math.ceil((due_at - now).total_seconds())
        delay = left if left < delay else delay
    # max(0, min(delay, 900)), spelt as comparisons: the builtins cost every message more
    delay = SQS_MAX_DELAY_SECONDS if delay > SQS_MAX_DELAY_SECONDS else delay
    return 0 if delay < 0 else delay


# botocore's exceptions are imported when an error is classified, not with this module: a call that
# raised one has imported them already, and a consumer whose records succeed makes no call at all.
def _client_error(exc: BaseException) -> "ClientError | None":
    from botocore.exceptions import ClientError

    return exc if isinstance(exc, ClientError) else None


def _is_transient(exc: Exception) -> bool:
    """A call refused for now (throttling, the service failing): the same call again may work.
    (A timeout is not retried here: the call may have worked, and a second send would duplicate.)"""
    error = _client_error(exc)
    if error is not None:
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        code = str(error.response.get("Error", {}).get("Code", ""))
        return "Throttl" in code or code in _REFUSALS or (isinstance(status, int) and status >= 500)
    return False


def _is_throttled(exc: Exception) -> bool:
    error = _client_error(exc)
    if error is None:
        return False
    code = str(error.response.get("Error", {}).get("Code", ""))
    return "Throttl" in code or code == "TooManyRequestsException"


def _is_timeout(exc: Exception) -> bool:
    from botocore.exceptions import ConnectionError as BotocoreConnectionError
    from botocore.exceptions import HTTPClientError

    return isinstance(exc, HTTPClientError | BotocoreConnectionError)


def _is_refusal(exc: Exception) -> bool:
    """The Scheduler said "not now" (it answered: the call took no effect). A timeout is not one."""
    error = _client_error(exc)
    if error is not None:
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return error.response.get("Error", {}).get("Code") in _REFUSALS or (
            isinstance(status, int) and status >= 500
        )
    return False


def _code(exc: Exception) -> str:
    error = _client_error(exc)
    return str(error.response.get("Error", {}).get("Code", "")) if error is not None else ""


def _is_conflict(exc: Exception) -> bool:
    return _code(exc) == "ConflictException"


def _is_not_found(exc: Exception) -> bool:
    return _code(exc) == "ResourceNotFoundException"


def _describe(exc: BaseException) -> str:
    client_error = _client_error(exc)
    if client_error is not None:
        error = client_error.response.get("Error", {})
        return f"{error.get('Code', type(exc).__name__)}: {error.get('Message', '')}"
    return f"{type(exc).__name__}: {exc}"


def __getattr__(name: str) -> object:
    """``FinalForm`` and ``final_message``, re-exported from ``terminal`` on first read: the final
    message's code is needed only by a record that ends, so a batch that only succeeds never loads it."""
    if name in ("FinalForm", "final_message"):
        from serverless_retry import terminal

        value = getattr(terminal, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

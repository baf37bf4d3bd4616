"""The pipe enrichment: a batch of failure-queue records in, one bus event detail per record out.

Sizes. PutEvents counts an entry as the UTF-8 bytes of Source + DetailType + Detail + each Resources
entry, plus 14 for Time, and the entries of one request must together stay under 256 KiB; a pipe
puts one batch in one request. The pipe serialises our output itself, so a detail is measured in its
largest plausible form (``json.dumps`` with ASCII escapes and spaced separators, what the Python
runtime writes). The exhausted rule wraps the event before SQS, so a detail also leaves
``EXHAUSTED_WRAPPER_RESERVE_BYTES`` under the retry-exhausted queue's maximum message size.

Per record (``plan_batch``, pure):
1. read it (``records.failure_detail``: never raises; unreadable -> ``InvalidFailureRecord``);
2. too large: cut the stack trace to its last frames, then drop it, then drop ``response``; never the
   payload;
3. still too large -> ``too_large``: sent whole to the retry-exhausted queue by ``Enricher`` and left
   out of the output;
4. fits, but not in what is left of this batch's request -> ``deferred``: re-sent unchanged to the
   failure queue (a later batch carries it) and left out. The first event of a batch always fits.

Records in S3 (a source whose on-failure destination is a bucket): the failure queue holds the
bucket's S3 notification instead; ``Enricher`` reads the record it names (``selfheal.stored``) and the
detail gets a ``payload_ref``. One that does not fit a bus event goes with the pointer and a null
payload (step 2 then never reaches ``too_large``); S3's test event is skipped; an object gone or not a
record is an ``InvalidFailureRecord`` with the reason; any other GetObject error raises, as below.

Why the enrichment may raise: only when one of those SQS sends (or a GetObject) fails. The pipe then
fails the whole batch, which returns to the failure queue (its DLQ after maxReceiveCount): nothing is dropped, and
since nothing reached the bus, a retry of the batch adds no duplicate event.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from serverless_retry.envelope import fits, sqs_message_size
from serverless_retry.selfheal.function import SelfHealingFunction
from serverless_retry.selfheal.metrics import emit
from serverless_retry.selfheal.records import failure_detail, invalid_detail
from serverless_retry.selfheal.stored import (
    RecordChanged,
    RecordGone,
    StoredRecord,
    is_s3_test_event,
    read_record,
    s3_objects,
)
from serverless_retry.selfheal.types import (
    BUS_DETAIL_TYPE,
    BUS_SOURCE,
    RETRY_STATE_KEY,
    ExhaustedRecord,
    FailureDetail,
)

if TYPE_CHECKING:
    from serverless_retry.selfheal.config import EnrichmentSettings  # noqa: F401 (the base's parameter)

__all__ = [
    "EXHAUSTED_WRAPPER_RESERVE_BYTES",
    "PUTEVENTS_MAX_BYTES",
    "BatchPlan",
    "Enricher",
    "Limits",
    "Resolved",
    "detail_bytes",
    "entry_bytes",
    "fit",
    "plan_batch",
    "too_large_message",
]

PUTEVENTS_MAX_BYTES = 262_144  # "must be less than 256 KB": an entry, and one request's entries together
TIME_BYTES = 14
RESOURCES_RESERVE_BYTES = 512  # the pipe may name resources; we do not control them
EXHAUSTED_WRAPPER_RESERVE_BYTES = 2_048  # the event's envelope keys + the ExhaustedRecord wrapper
STACK_FRAMES_KEPT = 5
_ENTRY_OVERHEAD = (
    len(BUS_SOURCE.encode()) + len(BUS_DETAIL_TYPE.encode()) + TIME_BYTES + RESOURCES_RESERVE_BYTES
)


def detail_bytes(detail: Mapping[str, Any]) -> int:
    """An upper bound of the detail's size however it is serialised (ASCII escapes, spaced separators)."""
    return len(json.dumps(detail))


def entry_bytes(detail_size: int) -> int:
    return detail_size + _ENTRY_OVERHEAD


@dataclass(frozen=True)
class Limits:
    exhausted_max_bytes: int = 262_144

    @property
    def detail_max(self) -> int:
        return min(
            PUTEVENTS_MAX_BYTES - 1 - _ENTRY_OVERHEAD,
            self.exhausted_max_bytes - EXHAUSTED_WRAPPER_RESERVE_BYTES,
        )


def fit(detail: FailureDetail, limit: int) -> tuple[FailureDetail, int] | None:
    """The detail within ``limit`` bytes, trimming stack trace then response; None if even that fails."""
    size = detail_bytes(detail)
    if size <= limit:
        return detail, size
    meta = dict(detail["meta"])
    trimmed = list(meta["trimmed"])  # type: ignore[call-overload]
    steps: list[tuple[str, Any]] = []
    if len(meta["stack_trace"]) > STACK_FRAMES_KEPT:  # type: ignore[arg-type]
        steps.append(("stack_trace", meta["stack_trace"][-STACK_FRAMES_KEPT:]))  # type: ignore[index]
    if meta["stack_trace"]:
        steps.append(("stack_trace", []))
    if meta["response"] is not None:
        steps.append(("response", None))
    for name, value in steps:
        meta[name] = value
        if name not in trimmed:
            trimmed.append(name)
        meta["trimmed"] = trimmed
        candidate: FailureDetail = {**detail, "meta": meta}  # type: ignore[typeddict-item]
        size = detail_bytes(candidate)
        if size <= limit:
            return candidate, size
    return None


@dataclass
class BatchPlan:
    events: list[FailureDetail] = field(default_factory=list)
    too_large: list[tuple[Mapping[str, Any], FailureDetail]] = field(default_factory=list)
    deferred: list[Mapping[str, Any]] = field(default_factory=list)
    skipped: int = 0  # S3's test events: no record behind them


@dataclass(frozen=True)
class Resolved:
    """How one pipe record is read: its body is the record (the default), or it is an S3 notification
    of a record Lambda wrote to S3 (``stored``), of none (``skip``: S3's test event), or of one that
    cannot be read (``problem``: an InvalidFailureRecord saying why)."""

    stored: StoredRecord | None = None
    skip: bool = False
    problem: str = ""


_AS_IS = Resolved()


def _detail(record: Any, how: Resolved, now: datetime) -> FailureDetail:
    if how.problem:
        body = record.get("body") if isinstance(record, Mapping) else record
        return invalid_detail(record if isinstance(record, Mapping) else {}, body, how.problem, now)
    if how.stored is None:
        return failure_detail(record, now)
    detail = failure_detail({**record, "body": how.stored.text}, now)
    detail["payload_ref"] = how.stored.ref
    return detail


def _fit_or_point(detail: FailureDetail, limit: int) -> tuple[FailureDetail, int] | None:
    """``fit``; a record read from S3 that does not fit goes with its pointer and no inline payload."""
    fitted = fit(detail, limit)
    if fitted is None and "payload_ref" in detail:
        fitted = fit({**detail, "payload": None}, limit)
    return fitted


def plan_batch(
    records: Sequence[Any], now: datetime, limits: Limits, resolved: Sequence[Resolved] | None = None
) -> BatchPlan:
    """Where each record goes: the output (in order), the exhausted queue, or back to the failure queue."""
    plan = BatchPlan()
    remaining = PUTEVENTS_MAX_BYTES - 1
    for index, record in enumerate(records):
        how = resolved[index] if resolved is not None else _AS_IS
        if how.skip:
            plan.skipped += 1
            continue
        detail = _detail(record, how, now)
        fitted = _fit_or_point(detail, limits.detail_max)
        if fitted is None:
            plan.too_large.append((record if isinstance(record, Mapping) else {}, detail))
            continue
        if entry_bytes(fitted[1]) > remaining:
            fitted = _fit_or_point(fitted[0], remaining - _ENTRY_OVERHEAD)
            if fitted is None:
                plan.deferred.append(record)
                continue
        plan.events.append(fitted[0])
        remaining -= entry_bytes(fitted[1])
    return plan


def too_large_message(
    record: Mapping[str, Any], detail: FailureDetail, max_bytes: int
) -> tuple[str, dict[str, Any]]:
    """What the retry-exhausted queue gets for an event too large for the bus: the ExhaustedRecord
    (trimmed if that is what it takes), else the raw destination record with a compact attribute."""
    size = detail_bytes(detail)
    reason = (
        f"the bus event would be about {entry_bytes(size)} bytes; a PutEvents entry must stay under "
        f"{PUTEVENTS_MAX_BYTES}"
    )
    stripped = {**detail["meta"], "stack_trace": [], "response": None}
    stripped["trimmed"] = sorted({*detail["meta"]["trimmed"], "stack_trace", "response"})
    candidates = [detail, cast(FailureDetail, {**detail, "meta": stripped})]
    for candidate in candidates:
        body: ExhaustedRecord = {"outcome": "too-large-for-bus", "reason": reason, "detail": candidate}
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        if fits(text, max_bytes):
            return text, {}
    meta = detail["meta"]
    compact = json.dumps(
        {
            "outcome": "too-large-for-bus",
            "reason": reason,
            "function_name": meta["function_name"],
            "error_type": meta["error_type"],
            "retry_id": meta["retry_id"],
            "attempt": meta["attempt"],
        },
        separators=(",", ":"),
    )
    raw = str(record.get("body", ""))
    attributes = {RETRY_STATE_KEY: {"DataType": "String", "StringValue": compact}}
    if sqs_message_size(raw, attributes) <= max_bytes:  # type: ignore[arg-type]
        return raw, attributes
    return raw, {}


class EnrichmentDeliveryError(RuntimeError):
    """An SQS send the enrichment needed failed: the pipe batch must fail (and be retried), not drop."""


class Enricher(SelfHealingFunction["EnrichmentSettings"]):
    """``enricher(pipe_batch)`` -> the list of bus event details, as the pipe expects from enrichment."""

    @functools.cached_property
    def limits(self) -> Limits:
        return Limits(self.settings.exhausted_max_bytes)

    def __call__(self, event: Any) -> list[FailureDetail]:
        records: Sequence[Any] = event if isinstance(event, list) else [event]
        plan = plan_batch(records, self.clock.now(), self.limits, [self._resolve(r) for r in records])
        for record, detail in plan.too_large:
            body, attributes = too_large_message(record, detail, self.settings.exhausted_max_bytes)
            self._send(self.settings.exhausted_queue_url, body, attributes, record, "too-large-for-bus")
        for record in plan.deferred:
            self._send(self.settings.failure_queue_url, str(record.get("body", "")), {}, record, "deferred")
        counts = {
            "FailureRecords": len(records),
            "InvalidFailureRecord": sum(1 for d in plan.events if d["meta"]["problem"]),
            "TooLargeForBus": len(plan.too_large),
            "DeferredRecords": len(plan.deferred),
            "S3TestEvents": plan.skipped,
        }
        self.logger.info("pipe batch enriched", extra={"events": len(plan.events), **counts})
        for name, value in counts.items():
            if value or name == "FailureRecords":
                emit(name, value, self.logger)
        return plan.events

    def _resolve(self, record: Any) -> Resolved:
        """Whether ``record`` is an S3 notification, and then the record it names, read from S3."""
        body = record.get("body") if isinstance(record, Mapping) else None
        try:
            document = json.loads(body) if isinstance(body, str) else None
        except ValueError:
            return _AS_IS  # failure_detail says why it cannot be read
        if is_s3_test_event(document):
            return Resolved(skip=True)
        objects = s3_objects(document)
        if objects is None:
            return _AS_IS
        if len(objects) != 1:
            return Resolved(problem=f"an S3 notification of {len(objects)} objects; S3 sends one a message")
        try:
            return Resolved(stored=read_record(self.clients.s3, objects[0]))
        except (RecordGone, RecordChanged) as exc:
            self.logger.error("failure record in S3 cannot be read", extra={"problem": str(exc)})
            return Resolved(problem=str(exc))
        except Exception as exc:
            # Throttling, access, a network fault: the whole batch returns to the failure queue and is
            # read again (its DLQ after maxReceiveCount); nothing reached the bus yet.
            self.logger.error(
                "GetObject failed; the pipe batch fails and returns to the failure queue",
                extra={"message_id": record.get("messageId"), "error": f"{type(exc).__name__}: {exc}"},
            )
            raise EnrichmentDeliveryError(
                f"GetObject s3://{objects[0].bucket}/{objects[0].key} failed: {exc}"
            ) from exc

    def _send(
        self, queue_url: str, body: str, attributes: dict[str, Any], record: Mapping[str, Any], why: str
    ) -> None:
        params: dict[str, Any] = {"QueueUrl": queue_url, "MessageBody": body}
        if attributes:
            params["MessageAttributes"] = attributes
        try:
            self.clients.sqs.send_message(**params)
        except Exception as exc:
            self.logger.error(
                "SQS send failed; the pipe batch fails and returns to the failure queue",
                extra={
                    "message_id": record.get("messageId"),
                    "why": why,
                    "error": f"{type(exc).__name__}: {exc}",
                },
            )
            raise EnrichmentDeliveryError(f"{why}: SendMessage to {queue_url} failed: {exc}") from exc
        self.logger.warning(
            "record left out of the bus batch", extra={"message_id": record.get("messageId"), "why": why}
        )

"""A settled batch's result, its metrics line (carrying the batch's retry decisions) and its partial
batch response: what the consumer hands back once its calls were made. ``batch_result`` reads the
settled state once, in record order: the records handed back, and whether the invocation must fail
because a record without a messageId could be neither kept nor handed back."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from serverless_retry.consumer.unhandled_records import record_id
from serverless_retry.errors import UnhandledRecordError
from serverless_retry.observability import RETRIES_PLANNED, BatchCounts, log_retries

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

    from serverless_retry.consumer.batch_state import BatchState
    from serverless_retry.observability import ConsumerMetrics
    from serverless_retry.retry_log import RetryLogGroup

__all__ = [
    "RETRIES_PLANNED",
    "BatchItemFailure",
    "BatchResponse",
    "BatchResult",
    "batch_result",
    "check_unidentified",
    "log_retries",
    "publish",
]

# The Powertools Logger's own format keys: not copied onto the metrics line that carries the retries.
_LOGGER_FORMAT_KEYS = frozenset({"level", "location", "message", "timestamp", "service", "sampling_rate"})


# The functional form, with the types themselves: the class form would compile each annotation
# (a string, from __future__) into a ForwardRef at import.
BatchItemFailure = TypedDict("BatchItemFailure", {"itemIdentifier": str})  # noqa: UP013 (see above)
BatchResponse = TypedDict("BatchResponse", {"batchItemFailures": list[BatchItemFailure]})  # noqa: UP013 (see above)


@dataclass
class BatchResult:
    failed_ids: list[str]  # record message ids for batchItemFailures, in record order
    counts: BatchCounts
    retries: list[RetryLogGroup] = field(default_factory=list)  # the RETRIES_PLANNED groups
    retried: int = 0  # messages in them

    def response(self) -> BatchResponse:
        return {"batchItemFailures": [{"itemIdentifier": i} for i in self.failed_ids]}


def publish(result: BatchResult, metrics: ConsumerMetrics, logger: Logger) -> BatchResponse:
    """The batch's metrics published, its retries logged, and its partial batch response."""
    response = result.response()
    try:
        # The retries' decisions ride on the batch's metrics line (EMF keeps properties that are
        # not metrics as log fields, searchable like any log line): a Powertools line of their own
        # cost more than all the rest of a batch of retries. Without metrics they get that line.
        decisions = None if metrics.disabled else _decisions(logger, result.retries, result.retried)
        metrics.publish(result.counts, decisions)
    except Exception:  # metrics must never turn a settled batch into a failed invocation
        logger.exception("publishing metrics failed")
        log_retries(logger, result.retries, result.retried)
    else:
        if metrics.disabled:
            log_retries(logger, result.retries, result.retried)
    return response


def _decisions(logger: Logger, retries: list[RetryLogGroup], retried: int) -> dict[str, object] | None:
    """The RETRIES_PLANNED fields for the batch's metrics line, with the logger's own keys (the
    request id, cold start, keys a processor appended); None without retries or below INFO."""
    if not retries or logger.log_level > logging.INFO:  # e.g. POWERTOOLS_LOG_LEVEL=WARNING
        return None
    # (Logger.get_current_keys is not in every Powertools 3 release: without it, no logger keys)
    current = getattr(logger, "get_current_keys", None)
    keys: dict[str, object] = current() if callable(current) else {}
    fields: dict[str, object] = {
        key: value
        for key, value in keys.items()
        if value is not None
        and key not in _LOGGER_FORMAT_KEYS
        and not (isinstance(value, str) and "%(" in value)
    }
    fields.update(level="INFO", message=RETRIES_PLANNED, count=retried, retries=retries)
    return fields


def check_unidentified(state: BatchState, records: Sequence[Mapping[str, Any]], logger: Logger) -> None:
    """A record without a messageId whose exhausted copy could not be sent. batchItemFailures cannot
    name it: an empty or unknown itemIdentifier fails the whole batch, acknowledged neighbours and
    all. So fail the invocation (``UnhandledRecordError``) only when that takes nothing else back -
    every other record goes back anyway - and otherwise say so loudly: it is a record no SQS event
    source mapping makes."""
    failed = state.failed
    unsent = [key for key in state.unidentified if key in failed]
    if not unsent:
        return
    if all(i in failed for i in (record_id(r) for r in records) if i is not None):
        log_retries(logger, state.retries, state.retried)  # the batch's metrics line never comes
        raise UnhandledRecordError(
            f"{len(unsent)} record(s) without a messageId could not be sent to the retry-exhausted queue; "
            "failing the invocation returns only them and records already handed back"
        )
    logger.error(
        "records without a messageId could not be sent to the retry-exhausted queue; they cannot be "
        "handed back alone (an empty itemIdentifier fails the whole batch) and are dropped",
        extra={"records": len(unsent)},
    )


def batch_result(state: BatchState, records: Sequence[Mapping[str, Any]]) -> BatchResult:
    """The settled batch's result: the handed-back records' ids for batchItemFailures, in record
    order, each once."""
    failed = state.failed
    ids = [i for i in (record_id(r) for r in records) if i is not None and i in failed] if failed else []
    return BatchResult(list(dict.fromkeys(ids)), state.counts, state.retries, state.retried)

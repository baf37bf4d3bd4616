"""A settled batch's result, its metrics line (carrying the batch's retry decisions) and its partial
batch response: what the consumer hands back once its calls were made."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from serverless_retry.observability import BatchCounts

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

    from serverless_retry.observability import ConsumerMetrics
    from serverless_retry.retry_log import RetryLogGroup

__all__ = ["RETRIES_PLANNED", "BatchItemFailure", "BatchResponse", "BatchResult", "log_retries", "publish"]

# The message of the one INFO line per batch that lists every retry the batch decided: "count" retried
# messages, and "retries", a RetryLogGroup per distinct decision (error, attempt, transport) with each
# of its messages' delays. It is the batch's EMF metrics line (a Powertools Logger line when metrics
# are disabled). The final copies keep a line each.
RETRIES_PLANNED = "processing failed; retries planned"
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
    return result.response()


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


def log_retries(logger: Logger, retries: list[RetryLogGroup], retried: int) -> None:
    if retries:
        logger.info(RETRIES_PLANNED, extra={"retries": retries, "count": retried})

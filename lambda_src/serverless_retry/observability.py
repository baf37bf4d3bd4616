"""Powertools Logger and EMF metrics for the consumer.

Metrics are counted in plain integers while a batch runs and written once per invocation: one EMF
line for the counters plus one per retry transport used (``RetryScheduled`` carries a ``transport``
dimension).

Powertools' EMF provider validates and serializes the whole metric set on every flush, about 20 µs,
more than Powertools' own BatchProcessor spends on a 10-record batch. So Powertools serializes each
*shape* of line (which metrics, which dimensions) once, with marker values, and later invocations
only put the timestamp and counts into that text: the same EMF document, a few hundred ns per line.
tests/unit/test_observability_emf_pin.py pins the coupling: the lines must equal, timestamps aside,
what documented Powertools ``Metrics`` / ``single_metric`` print for the same counts.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

__all__ = ["DEFAULT_SERVICE", "NAMESPACE", "BatchCounts", "ConsumerMetrics", "make_logger"]

NAMESPACE = "ServerlessRetry"
DEFAULT_SERVICE = "serverless-retry"
_TIMESTAMP_MARK = 987_654_321_012_345  # marker values, replaced by the real ones at flush time
_VALUE_MARK = 123_456_789.0


def make_logger(service: str | None = None) -> Logger:
    """Structured JSON logs; ``POWERTOOLS_LOG_LEVEL`` and ``POWERTOOLS_SERVICE_NAME`` apply."""
    return Logger(service=service or os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE)


@dataclass
class BatchCounts:
    """What one invocation did; only outcomes whose AWS call succeeded are counted."""

    processed: int = 0
    exhausted: int = 0  # outcome exhausted or too-large-to-retry
    non_retryable: int = 0
    invalid_envelope: int = 0
    delivery_failed: int = 0  # records returned to the queue because a send/schedule failed
    retry_scheduled: Counter[str] = field(default_factory=Counter)  # by transport
    duplicates: int = 0  # copies of an attempt another copy had claimed: their chain ended
    redelayed: int = 0  # copies that arrived before they were due and waited again (a hop)
    scheduler_fallback: int = 0  # retries the Scheduler refused that went as SQS delay hops instead
    refused: int = 0  # records from a queue other than the configured one, handed back unprocessed
    claims_unavailable: int = 0  # claims the table did not answer (copies waited, others ran unclaimed)


class _Shape:
    """One EMF line shape, serialized by Powertools once; ``render`` fills in timestamp and values."""

    def __init__(
        self, namespace: str, service: str, names: tuple[str, ...], dimensions: dict[str, str]
    ) -> None:
        provider = AmazonCloudWatchEMFProvider(
            metric_set={},
            dimension_set={"service": service, **dimensions},
            metadata_set={},
            default_dimensions={},
            namespace=namespace,
            service=service,
        )
        for name in names:
            provider.add_metric(name=name, unit=MetricUnit.Count, value=_VALUE_MARK)
        provider.timestamp = _TIMESTAMP_MARK
        text = json.dumps(provider.serialize_metric_set(), separators=(",", ":")).replace("%", "%%")
        value = json.dumps([_VALUE_MARK])
        for name in names:
            marked = f'"{name}":{value}'
            if text.count(marked) != 1:  # Powertools changed its layout: fail loudly at cold start
                raise RuntimeError(f"unexpected EMF layout for metric {name}: {text}")
            text = text.replace(marked, f'"{name}":[%s]')
        self.template = text.replace(str(_TIMESTAMP_MARK), "%d", 1)

    def render(self, timestamp_ms: int, values: tuple[float, ...]) -> str:
        return self.template % (timestamp_ms, *values)


class ConsumerMetrics:
    """Namespace ``ServerlessRetry`` (or ``POWERTOOLS_METRICS_NAMESPACE``), dimension ``service``.

    Uses private metric sets rather than the shared ``Metrics`` singleton state, so a processor's own
    Powertools metrics (maybe in another namespace) are never mixed into ours, nor flushed by us.
    ``POWERTOOLS_METRICS_DISABLED`` (read when this object is built) turns the output off.
    """

    def __init__(self, namespace: str | None = None, service: str | None = None) -> None:
        self.namespace = namespace or os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or NAMESPACE
        self.service = service or os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE
        self.disabled = is_metrics_disabled()
        self._shapes: dict[tuple[str, tuple[str, ...]], _Shape] = {}
        self._shape(("Processed",))  # the success path's line, ready at cold start

    def _shape(self, names: tuple[str, ...], transport: str = "") -> _Shape:
        key = (transport, names)
        shape = self._shapes.get(key)
        if shape is None:
            dimensions = {"transport": transport} if transport else {}
            shape = self._shapes[key] = _Shape(self.namespace, self.service, names, dimensions)
        return shape

    def lines(self, counts: BatchCounts) -> list[str]:
        now_ms = int(time.time() * 1000)
        if not (
            counts.exhausted
            or counts.non_retryable
            or counts.invalid_envelope
            or counts.delivery_failed
            or counts.duplicates
            or counts.redelayed
            or counts.scheduler_fallback
            or counts.refused
            or counts.claims_unavailable
            or counts.retry_scheduled
        ):  # the success path: one line, its shape ready since cold start
            return [self._shape(("Processed",)).render(now_ms, (float(counts.processed),))]
        # Processed is always written (0 included) so dashboards see a continuous series.
        names: tuple[str, ...] = ("Processed",)
        values: tuple[float, ...] = (float(counts.processed),)
        for name, value in (
            ("Exhausted", counts.exhausted),
            ("NonRetryable", counts.non_retryable),
            ("InvalidEnvelope", counts.invalid_envelope),
            ("DeliveryFailed", counts.delivery_failed),
            ("DuplicateDropped", counts.duplicates),
            ("Redelayed", counts.redelayed),
            ("SchedulerFallback", counts.scheduler_fallback),
            ("WrongSource", counts.refused),
            ("ClaimsUnavailable", counts.claims_unavailable),
        ):
            if value:
                names += (name,)
                values += (float(value),)
        out = [self._shape(names).render(now_ms, values)]
        for transport, value in sorted(counts.retry_scheduled.items()):
            if value:
                out.append(self._shape(("RetryScheduled",), transport).render(now_ms, (float(value),)))
        return out

    def publish(self, counts: BatchCounts, fields: Mapping[str, object] | None = None) -> None:
        """Write the batch's EMF lines; ``fields`` (log fields that are not metrics, such as the
        batch's retry decisions) go on the first, the Processed line."""
        if self.disabled:
            return
        lines = self.lines(counts)
        if fields:
            # never a field named like a metric or a dimension: JSON's last duplicate key would win
            kept = {k: v for k, v in fields.items() if k not in _EMF_KEYS}
            if kept:
                lines[0] = f"{lines[0][:-1]},{_ENCODE(kept)[1:]}"
        for line in lines:
            print(line)


_EMF_KEYS = frozenset(
    {
        "_aws",
        "service",
        "transport",
        "Processed",
        "Exhausted",
        "NonRetryable",
        "InvalidEnvelope",
        "DeliveryFailed",
        "DuplicateDropped",
        "Redelayed",
        "SchedulerFallback",
        "WrongSource",
        "ClaimsUnavailable",
        "RetryScheduled",
    }
)
# json.dumps with arguments builds a new encoder on every call: one, made once.
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


# The message of the one INFO line per batch that lists every retry the batch decided: "count" retried
# messages, and "retries", a RetryLogGroup per distinct decision (error, attempt, transport) with each
# of its messages' delays. It is the batch's EMF metrics line (a Powertools Logger line when metrics
# are disabled). The final copies keep a line each.
RETRIES_PLANNED = "processing failed; retries planned"


def log_retries(logger: Logger, retries: Sequence[Mapping[str, Any]], retried: int) -> None:
    """The batch's retries on a Logger line of their own (metrics disabled, or publishing failed)."""
    if retries:
        logger.info(RETRIES_PLANNED, extra={"retries": retries, "count": retried})

"""Powertools Logger and EMF metrics for the consumer.

Metrics are counted in plain integers while a batch runs and written once per invocation, so the
per-record cost is an integer increment. Each invocation prints one EMF line for the counters plus
one line per retry transport used (``RetryScheduled`` carries a ``transport`` dimension).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

__all__ = ["DEFAULT_SERVICE", "NAMESPACE", "BatchCounts", "ConsumerMetrics", "make_logger"]

NAMESPACE = "ServerlessRetry"
DEFAULT_SERVICE = "serverless-retry"


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


class ConsumerMetrics:
    """Namespace ``ServerlessRetry`` (or ``POWERTOOLS_METRICS_NAMESPACE``), dimension ``service``.

    Uses private metric sets rather than the shared ``Metrics`` singleton state, so a processor's own
    Powertools metrics (maybe in another namespace) are never mixed into ours, nor flushed by us.
    """

    def __init__(self, namespace: str | None = None, service: str | None = None) -> None:
        self.namespace = namespace or os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or NAMESPACE
        self.service = service or os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE

    def _provider(self, **dimensions: str) -> AmazonCloudWatchEMFProvider:
        return AmazonCloudWatchEMFProvider(
            metric_set={},
            dimension_set={"service": self.service, **dimensions},
            metadata_set={},
            default_dimensions={},
            namespace=self.namespace,
            service=self.service,
        )

    def publish(self, counts: BatchCounts) -> None:
        main = self._provider()
        # Processed is always written (0 included) so dashboards see a continuous series.
        main.add_metric(name="Processed", unit=MetricUnit.Count, value=counts.processed)
        for name, value in (
            ("Exhausted", counts.exhausted),
            ("NonRetryable", counts.non_retryable),
            ("InvalidEnvelope", counts.invalid_envelope),
            ("DeliveryFailed", counts.delivery_failed),
        ):
            if value:
                main.add_metric(name=name, unit=MetricUnit.Count, value=value)
        main.flush_metrics()
        for transport, value in sorted(counts.retry_scheduled.items()):
            per_transport = self._provider(transport=transport)
            per_transport.add_metric(name="RetryScheduled", unit=MetricUnit.Count, value=value)
            per_transport.flush_metrics()

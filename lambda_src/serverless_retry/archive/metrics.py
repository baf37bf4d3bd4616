"""The archiver's EMF line: ``Archived``, ``AlreadyArchived``, ``ArchiveFailed`` (namespace
``ServerlessRetry`` or ``POWERTOOLS_METRICS_NAMESPACE``, dimension ``service``), one line per batch,
all three written (0 included) so the dashboard and the alarms see continuous series.

Not a hot path (one S3 write per message dominates), so Powertools serializes each line itself. A
metrics failure never fails the batch: the objects are written, the messages must be acknowledged."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

from serverless_retry.observability import DEFAULT_SERVICE, NAMESPACE

__all__ = ["ArchiveCounts", "ArchiveMetrics"]


@dataclass
class ArchiveCounts:
    """One batch: written, found already written, not written (returned to the queue)."""

    archived: int = 0
    already: int = 0
    failed: int = 0


class ArchiveMetrics:
    def __init__(self, namespace: str | None = None, service: str | None = None) -> None:
        self.namespace = namespace or os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or NAMESPACE
        self.service = service or os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE
        self.disabled = is_metrics_disabled()

    def line(self, counts: ArchiveCounts) -> str:
        provider = AmazonCloudWatchEMFProvider(
            metric_set={},
            dimension_set={"service": self.service},
            metadata_set={},
            default_dimensions={},
            namespace=self.namespace,
            service=self.service,
        )
        for name, value in (
            ("Archived", counts.archived),
            ("AlreadyArchived", counts.already),
            ("ArchiveFailed", counts.failed),
        ):
            provider.add_metric(name=name, unit=MetricUnit.Count, value=float(value))
        return json.dumps(provider.serialize_metric_set(), separators=(",", ":"))

    def publish(self, counts: ArchiveCounts, logger: Logger | None = None) -> None:
        if self.disabled:
            return
        try:
            print(self.line(counts))
        except Exception:
            if logger is not None:
                logger.exception("publishing the archive metrics failed")

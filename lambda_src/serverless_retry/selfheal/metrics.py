"""EMF metrics of the self-healing functions (namespace ``ServerlessRetry``, dimension ``service``).

Not a hot path (one redrive per failure, one enrichment per pipe batch), so each count is one
Powertools ``single_metric`` line; a metrics failure never fails the invocation.

- redrive: ``Redriven`` (dimension ``via``: invoke | publish | schedule) or ``SelfHealingExhausted``
  (dimension ``outcome``);
- enrichment: ``FailureRecords`` per batch, and ``InvalidFailureRecord``, ``TooLargeForBus``,
  ``DeferredRecords`` when not zero.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from serverless_retry.observability import DEFAULT_SERVICE, NAMESPACE

__all__ = ["emit"]


def emit(name: str, value: int, logger: Logger, dimensions: Mapping[str, str] | None = None) -> None:
    if is_metrics_disabled():
        return
    service = os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or NAMESPACE
    try:
        with single_metric(
            name=name,
            unit=MetricUnit.Count,
            value=value,
            namespace=namespace,
            default_dimensions={"service": service, **(dimensions or {})},
        ):
            pass
    except Exception:  # a metric must never turn a done redrive into a failed (and retried) one
        logger.exception("publishing metric failed", extra={"metric": name})

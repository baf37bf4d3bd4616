"""Pins what the consumer's EMF fast path (serverless_retry.observability) relies on in Powertools.

The fast path lets Powertools' EMF provider serialize each line shape once and later only fills in
the timestamp and counts. It is worth it only while its lines are exactly the documents documented
Powertools Metrics prints for the same counts; this test compares them (timestamps aside), so a
Powertools upgrade that changes the EMF layout fails here, not in a dashboard.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from typing import Any

import pytest
from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from serverless_retry.observability import BatchCounts, ConsumerMetrics

NAMESPACE, SERVICE = "ServerlessRetry", "orders"


def _documents(lines: list[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        document = json.loads(line)
        assert isinstance(document["_aws"].pop("Timestamp"), int)
        out.append(document)
    return sorted(out, key=json.dumps)


def _documented_powertools(counts: BatchCounts) -> list[str]:
    """The same counts through Powertools Metrics as its documentation shows: one Metrics flush with
    the service dimension, and a single_metric per retry transport (its own dimension)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
        metrics.add_metric(name="Processed", unit=MetricUnit.Count, value=counts.processed)
        for name, value in (
            ("Exhausted", counts.exhausted),
            ("NonRetryable", counts.non_retryable),
            ("InvalidEnvelope", counts.invalid_envelope),
            ("DeliveryFailed", counts.delivery_failed),
        ):
            if value:
                metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
        metrics.flush_metrics()
        for transport, value in sorted(counts.retry_scheduled.items()):
            with single_metric(
                name="RetryScheduled",
                unit=MetricUnit.Count,
                value=value,
                namespace=NAMESPACE,
                default_dimensions={"service": SERVICE},
            ) as metric:
                metric.add_dimension(name="transport", value=transport)
    return [line for line in buffer.getvalue().splitlines() if line.strip()]


@pytest.mark.parametrize(
    "counts",
    [
        BatchCounts(processed=0),
        BatchCounts(processed=10),
        BatchCounts(processed=7, exhausted=1, non_retryable=2, invalid_envelope=1, delivery_failed=3),
        BatchCounts(processed=1, retry_scheduled=Counter({"sqs-delay": 4, "scheduler": 2})),
    ],
)
def test_fast_path_lines_equal_documented_powertools_metrics(counts: BatchCounts) -> None:
    ours = ConsumerMetrics(namespace=NAMESPACE, service=SERVICE).lines(counts)
    assert _documents(ours) == _documents(_documented_powertools(counts))


def test_a_claims_table_that_does_not_answer_is_a_metric_of_its_own() -> None:
    [line] = ConsumerMetrics().lines(BatchCounts(processed=2, claims_unavailable=3))
    document = json.loads(line)
    assert document["ClaimsUnavailable"] == [3.0]
    assert document["Processed"] == [2.0]

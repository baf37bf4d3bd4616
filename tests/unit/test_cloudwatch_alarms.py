"""The emulator's alarm evaluator and metric math on synthetic datapoints (no moto, no clock)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from serverless_retry_tools.local.emulator.cloudwatch.alarms import (
    AlarmSpec,
    MetricStat,
    Query,
    Sample,
    evaluate_alarm,
)
from serverless_retry_tools.local.emulator.cloudwatch.math_expr import Unsupported, evaluate

NOW = 1_800_000_000.0  # a whole minute
DEPTH = MetricStat("AWS/SQS", "ApproximateNumberOfMessagesVisible", (("QueueName", "dlq"),), "Maximum", 60)


def _source(points: dict[MetricStat, list[tuple[float, float]]]):  # type: ignore[no-untyped-def]
    def samples(metric: MetricStat, start: float, end: float) -> Sequence[Sample]:
        return [Sample.of(t, v) for t, v in points.get(metric, []) if start <= t < end]

    return samples


def _alarm(n: int, m: int | None = None, treat: str | None = "notBreaching", **kw: object) -> AlarmSpec:
    return AlarmSpec(
        name="a",
        queries=(Query("m", DEPTH, None, True),),
        comparison=str(kw.get("comparison", "GreaterThanThreshold")),
        threshold=float(kw.get("threshold", 0)),  # type: ignore[arg-type]
        evaluation_periods=n,
        datapoints_to_alarm=m,
        treat_missing_data=treat,
    )


def _minutes_ago(*values: float | None) -> list[tuple[float, float]]:
    """Datapoints for the last len(values) minutes, oldest first; None leaves a minute empty."""
    count = len(values)
    return [(NOW - (count - i) * 60 + 5, v) for i, v in enumerate(values) if v is not None]


@pytest.mark.parametrize(
    ("values", "n", "m", "state"),
    [
        ((0, 0, 3), 1, None, "ALARM"),  # only the last period is looked at
        ((3, 0, 0), 1, None, "OK"),
        ((3, 0, 3), 3, 2, "ALARM"),  # 2 of 3
        ((3, 0, 0), 3, 2, "OK"),
        ((3, 3, 0), 3, None, "OK"),  # M defaults to N: all three must breach
        ((3, 3, 3), 3, None, "ALARM"),
    ],
)
def test_m_of_n(values: tuple[float, ...], n: int, m: int | None, state: str) -> None:
    source = _source({DEPTH: _minutes_ago(*values)})
    assert evaluate_alarm(_alarm(n, m), NOW, source, "OK").state == state


@pytest.mark.parametrize(
    ("treat", "values", "current", "state"),
    [
        ("notBreaching", (None, None), "ALARM", "OK"),
        ("breaching", (None, None), "OK", "ALARM"),
        ("breaching", (0, None), "OK", "OK"),  # 1 breaching (the missing one) of the 2 needed
        ("missing", (None, None), "OK", "INSUFFICIENT_DATA"),
        (None, (None, None), "OK", "INSUFFICIENT_DATA"),  # missing is the default
        ("ignore", (None, None), "ALARM", "ALARM"),
        ("ignore", (0, 0), "ALARM", "OK"),
        ("missing", (None, 3), "OK", "OK"),  # one breaching of the two needed, the other missing
    ],
)
def test_missing_data(treat: str | None, values: tuple[float | None, ...], current: str, state: str) -> None:
    source = _source({DEPTH: _minutes_ago(*values)})
    assert evaluate_alarm(_alarm(2, treat=treat), NOW, source, current).state == state


def test_a_period_is_the_statistic_of_its_samples() -> None:
    errors = MetricStat("AWS/Lambda", "Errors", (("FunctionName", "f"),), "Sum", 300)
    spec = AlarmSpec(
        "e", (Query("m", errors, None, True),), "GreaterThanThreshold", 2, 1, None, "notBreaching"
    )
    # Five minutes of the period: 1 + 1 + 1 = 3 > 2; the datapoint before the period does not count.
    points = [(NOW - 301, 5.0), (NOW - 290, 1.0), (NOW - 100, 1.0), (NOW - 1, 1.0)]
    result = evaluate_alarm(spec, NOW, _source({errors: points}), "OK")
    assert (result.state, result.values) == ("ALARM", [3.0])
    assert evaluate_alarm(spec, NOW + 60, _source({errors: points}), "ALARM").values == [2.0]


def test_comparison_operators() -> None:
    source = _source({DEPTH: _minutes_ago(5)})
    for comparison, threshold, state in [
        ("GreaterThanOrEqualToThreshold", 5, "ALARM"),
        ("GreaterThanThreshold", 5, "OK"),
        ("LessThanThreshold", 6, "ALARM"),
        ("LessThanOrEqualToThreshold", 4, "OK"),
    ]:
        spec = _alarm(1, comparison=comparison, threshold=threshold)
        assert evaluate_alarm(spec, NOW, source, "OK").state == state, comparison


def test_records_failing_is_received_minus_deleted_with_missing_as_zero() -> None:
    """modules/monitoring's records_failing: FILL(received, 0) - FILL(deleted, 0), 1 of 2 periods."""
    q = (("QueueName", "orders"),)
    received = MetricStat("AWS/SQS", "NumberOfMessagesReceived", q, "Sum", 180)
    deleted = MetricStat("AWS/SQS", "NumberOfMessagesDeleted", q, "Sum", 180)
    spec = AlarmSpec(
        "records-failing",
        (
            Query("received", received),
            Query("deleted", deleted),
            Query("failing", None, "FILL(received, 0) - FILL(deleted, 0)", True),
        ),
        "GreaterThanThreshold",
        0,
        2,
        1,
        "notBreaching",
    )
    # Two received, one deleted in the last period: one receive ended without a delete.
    points = {received: [(NOW - 100, 1.0), (NOW - 50, 1.0)], deleted: [(NOW - 50, 1.0)]}
    result = evaluate_alarm(spec, NOW, _source(points), "OK")
    assert (result.state, result.values) == ("ALARM", [0.0, 1.0])
    # Still firing one period later (1 of 2), OK after two quiet periods: no datapoint is 0, not missing.
    assert evaluate_alarm(spec, NOW + 180, _source(points), "ALARM").state == "ALARM"
    assert evaluate_alarm(spec, NOW + 360, _source(points), "ALARM").values == [0.0, 0.0]


def test_exhausted_rate_only_counts_periods_with_enough_messages() -> None:
    """modules/monitoring's exhausted_rate: IF(finished >= 10, 100 * FILL(exhausted, 0) / finished, 0)."""
    service = (("service", "orders"),)
    names = {
        "processed": "Processed",
        "exhausted": "Exhausted",
        "non_retryable": "NonRetryable",
        "invalid_envelope": "InvalidEnvelope",
    }
    stats = {key: MetricStat("ServerlessRetry", name, service, "Sum", 300) for key, name in names.items()}
    spec = AlarmSpec(
        "rate",
        (
            *(Query(key, stat) for key, stat in stats.items()),
            Query("finished", None, " + ".join(f"FILL({k}, 0)" for k in names)),
            Query(
                "exhausted_percent", None, "IF(finished >= 10, 100 * FILL(exhausted, 0) / finished, 0)", True
            ),
        ),
        "GreaterThanThreshold",
        5,
        1,
        None,
        "notBreaching",
    )
    few = {stats["processed"]: [(NOW - 10, 1.0)], stats["exhausted"]: [(NOW - 10, 1.0)]}
    assert evaluate_alarm(spec, NOW, _source(few), "OK").values == [0.0]  # 50 % of 2: not evaluated
    many = {stats["processed"]: [(NOW - 10, 18.0)], stats["exhausted"]: [(NOW - 10, 2.0)]}
    result = evaluate_alarm(spec, NOW, _source(many), "OK")
    assert (result.state, result.values) == ("ALARM", [10.0])
    # Nothing at all: every FILL gives 0, finished is 0 < 10, the rate 0.
    assert evaluate_alarm(spec, NOW, _source({}), "ALARM").state == "OK"


def test_math_datapoint_by_datapoint() -> None:
    a, b = [1.0, None, 3.0], [2.0, 2.0, None]
    assert evaluate("a + b", {"a": a, "b": b}) == [3.0, None, None]
    assert evaluate("FILL(a, 0) + FILL(b, 0)", {"a": a, "b": b}) == [3.0, 2.0, 3.0]
    assert evaluate("a / FILL(b, 0)", {"a": a, "b": b}) == [0.5, None, None]  # / 0: missing
    assert evaluate("IF(a > 1, a, -1)", {"a": a}) == [-1.0, None, 3.0]
    assert evaluate("IF(a >= 3, a)", {"a": a}) == [None, None, 3.0]
    assert evaluate("2 * (1 + 2) ^ 2", {}) == 18.0
    assert evaluate("a > 0 AND NOT a > 2", {"a": a}) == [1.0, None, 0.0]


@pytest.mark.parametrize("expression", ["METRICS()", "ANOMALY_DETECTION_BAND(m)", "m +", "unknown * 2"])
def test_what_is_not_emulated_says_so(expression: str) -> None:
    with pytest.raises(Unsupported):
        evaluate(expression, {"m": [1.0]})
    spec = AlarmSpec(
        "x", (Query("m", DEPTH), Query("e", None, expression, True)), "GreaterThanThreshold", 0, 1
    )
    result = evaluate_alarm(spec, NOW, _source({}), "OK")
    assert result.state == "INSUFFICIENT_DATA"
    assert "not emulated" in result.reason

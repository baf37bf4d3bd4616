"""A CloudWatch metric alarm's evaluation at one instant: pure, on the datapoints it is handed.

Our reading of "Using Amazon CloudWatch alarms" (its "Alarm evaluation" part) and "Configuring how
CloudWatch alarms treat missing data":

- the alarm looks at the most recent ``evaluation_periods`` (N) periods ending at the evaluation
  instant, one datapoint per period (the statistic of the samples in it, or the value of its
  metric math expression), none where the period holds no sample;
- it goes to ALARM when at least ``datapoints_to_alarm`` (M, default N) of them breach the
  threshold by its comparison operator, and to OK otherwise;
- missing datapoints count as ``notBreaching`` (good), ``breaching`` (bad), or with ``missing``
  (the default) and ``ignore`` they do not count: when all N are missing, ``missing`` goes to
  INSUFFICIENT_DATA and ``ignore`` keeps the state.

Not modelled: AWS's longer "evaluation range" for alarms with missing data, anomaly-detection
thresholds, percentiles over aggregated (StatisticValues) samples, and high-resolution periods
below 60 s. The caller evaluates once a minute, as CloudWatch does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from serverless_retry_tools.local.emulator.cloudwatch.math_expr import Series, Unsupported, Value, evaluate

__all__ = [
    "AlarmSpec",
    "Evaluation",
    "MetricStat",
    "Query",
    "Sample",
    "SampleSource",
    "evaluate_alarm",
    "statistic",
]

Dimensions = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Sample:
    """One put datapoint: a single value (count 1) or StatisticValues."""

    timestamp: float  # Unix seconds
    total: float
    minimum: float
    maximum: float
    count: float = 1.0

    @classmethod
    def of(cls, timestamp: float, value: float) -> Sample:
        return cls(timestamp, value, value, value, 1.0)


@dataclass(frozen=True)
class MetricStat:
    namespace: str
    name: str
    dimensions: Dimensions  # sorted (name, value) pairs: a metric is its full dimension set
    stat: str
    period: int


@dataclass(frozen=True)
class Query:
    id: str
    metric: MetricStat | None = None
    expression: str | None = None
    return_data: bool = False


@dataclass(frozen=True)
class AlarmSpec:
    name: str
    queries: tuple[Query, ...]  # a single-metric alarm is one metric query that returns its data
    comparison: str
    threshold: float
    evaluation_periods: int
    datapoints_to_alarm: int | None = None
    treat_missing_data: str | None = None

    @property
    def period(self) -> int:
        periods = [q.metric.period for q in self.queries if q.metric is not None]
        return max(periods) if periods else 60


@dataclass(frozen=True)
class Evaluation:
    state: str  # OK, ALARM, INSUFFICIENT_DATA
    reason: str
    values: Series  # the N datapoints, oldest first


# Samples of one metric with timestamps in [start, end).
SampleSource = Callable[[MetricStat, float, float], Sequence[Sample]]

_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "GreaterThanThreshold": lambda v, t: v > t,
    "GreaterThanOrEqualToThreshold": lambda v, t: v >= t,
    "LessThanThreshold": lambda v, t: v < t,
    "LessThanOrEqualToThreshold": lambda v, t: v <= t,
}
_WORDS = {
    "GreaterThanThreshold": "greater than",
    "GreaterThanOrEqualToThreshold": "greater than or equal to",
    "LessThanThreshold": "less than",
    "LessThanOrEqualToThreshold": "less than or equal to",
}


def statistic(stat: str, samples: Sequence[Sample]) -> float | None:
    """``stat`` (Sum, Average, Minimum, Maximum, SampleCount, pNN) of one period's samples."""
    if not samples:
        return None
    count = sum(s.count for s in samples)
    total = sum(s.total for s in samples)
    if stat == "Sum":
        return total
    if stat == "SampleCount":
        return count
    if stat == "Average":
        return total / count if count else None
    if stat == "Minimum":
        return min(s.minimum for s in samples)
    if stat == "Maximum":
        return max(s.maximum for s in samples)
    if stat.startswith("p"):
        values = sorted(s.total for s in samples if s.count == 1)
        if not values:
            return None
        rank = max(0, math.ceil(float(stat[1:]) / 100 * len(values)) - 1)
        return values[min(rank, len(values) - 1)]
    raise Unsupported(f"the statistic {stat} is not emulated")


def _series(query: Query, at: float, periods: int, samples: SampleSource) -> Series:
    assert query.metric is not None
    period = query.metric.period
    start = at - periods * period
    found = sorted(samples(query.metric, start, at), key=lambda s: s.timestamp)
    buckets: list[list[Sample]] = [[] for _ in range(periods)]
    for sample in found:
        index = int((sample.timestamp - start) // period)
        if 0 <= index < periods:
            buckets[index].append(sample)
    return [statistic(query.metric.stat, bucket) for bucket in buckets]


def _values(spec: AlarmSpec, at: float, samples: SampleSource) -> Series:
    periods = spec.evaluation_periods
    by_id = {q.id: q for q in spec.queries}
    done: dict[str, Value] = {}

    def value_of(query_id: str, seen: frozenset[str] = frozenset()) -> Value:
        if query_id in done:
            return done[query_id]
        if query_id in seen:
            raise Unsupported(f"expression {query_id} refers to itself")
        query = by_id[query_id]  # KeyError: an unknown id, turned into Unsupported by evaluate
        if query.metric is not None:
            value: Value = _series(query, at, periods, samples)
        elif query.expression is not None:
            value = evaluate(query.expression, lambda name: value_of(name, seen | {query_id}))
        else:
            raise Unsupported(f"query {query_id} has neither a metric nor an expression")
        done[query_id] = value
        return value

    returned = [q for q in spec.queries if q.return_data] or list(spec.queries[-1:])
    if len(returned) != 1:
        raise Unsupported("an alarm needs exactly one query that returns data")
    result = value_of(returned[0].id)
    return result if isinstance(result, list) else [result] * periods


def evaluate_alarm(spec: AlarmSpec, at: float, samples: SampleSource, current: str) -> Evaluation:
    """The state ``spec`` takes at ``at`` (Unix seconds), from ``current`` (its state until now)."""
    try:
        values = _values(spec, at, samples)
        compare = _COMPARISONS[spec.comparison]
    except (Unsupported, KeyError) as exc:
        return Evaluation("INSUFFICIENT_DATA", f"not emulated: {exc}", [])
    needed = spec.datapoints_to_alarm or spec.evaluation_periods
    treat = spec.treat_missing_data or "missing"
    present = [v for v in values if v is not None]
    missing = len(values) - len(present)
    breaching = sum(1 for v in present if compare(v, spec.threshold))
    if treat == "breaching":
        breaching += missing
    shown = ", ".join("-" if v is None else f"{v:g}" for v in values)
    words = f"{_WORDS[spec.comparison]} the threshold ({spec.threshold:g})"
    if breaching >= needed:
        return Evaluation(
            "ALARM", f"{breaching} of the last {len(values)} datapoints [{shown}] {words}", values
        )
    if not present and treat in ("missing", "ignore"):
        if treat == "ignore":
            return Evaluation(current, f"no datapoints [{shown}]: state kept (ignore)", values)
        return Evaluation("INSUFFICIENT_DATA", f"no datapoints in the last {len(values)} periods", values)
    return Evaluation(
        "OK", f"{breaching} of the last {len(values)} datapoints [{shown}] {words}; {needed} needed", values
    )

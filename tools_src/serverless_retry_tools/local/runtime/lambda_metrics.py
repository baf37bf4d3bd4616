"""Lambda's own metrics for the functions the local runtime invokes, put to the emulator's CloudWatch.

Per "Types of metrics for Lambda functions" (AWS/Lambda, dimension FunctionName): each invocation
counts one Invocations and one Errors when it failed (an exception, a timeout, a crash, an init
error), with its Duration; a throttled request counts one Throttles and no invocation. The
datapoints carry the logical instant the invocation ended (the emulator's clock), and go out in
batches from a thread, so an invocation never waits for CloudWatch.

:func:`instrument` wraps one :class:`~serverless_retry_tools.local.runtime.functions.FunctionPool`: every
invocation (event source mappings, async invocations, pipes' enrichment) runs through its
``_invoke``, and every throttle is a :class:`Throttled` raised by its ``_acquire``.
"""

from __future__ import annotations

import contextlib
import threading
from datetime import UTC, datetime
from typing import Any, Protocol

from serverless_retry_tools.local.runtime.functions import Throttled

__all__ = ["LambdaMetrics", "instrument"]

_FLUSH_SECONDS = 0.1
_BATCH = 500  # PutMetricData takes up to 1,000 metrics per call


class _Clock(Protocol):
    def now(self) -> datetime: ...


class LambdaMetrics:
    def __init__(self, cloudwatch: Any, clock: _Clock) -> None:
        self._cloudwatch = cloudwatch
        self._clock = clock
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lambda-metrics", daemon=True)
        self.errors: list[str] = []

    def start(self) -> None:
        self._thread.start()

    def invoked(self, function: str, *, ok: bool, duration_ms: float) -> None:
        self._add(function, Invocations=1.0, Errors=0.0 if ok else 1.0, Duration=duration_ms)

    def throttled(self, function: str) -> None:
        self._add(function, Throttles=1.0)

    def _add(self, function: str, **values: float) -> None:
        stamp = self._clock.now().astimezone(UTC)
        dimensions = [{"Name": "FunctionName", "Value": function}]
        data = [
            {
                "MetricName": name,
                "Value": value,
                "Dimensions": dimensions,
                "Timestamp": stamp,
                "Unit": "Milliseconds" if name == "Duration" else "Count",
            }
            for name, value in values.items()
        ]
        with self._lock:
            self._pending.extend(data)

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for i in range(0, len(pending), _BATCH):
            try:
                self._cloudwatch.put_metric_data(Namespace="AWS/Lambda", MetricData=pending[i : i + _BATCH])
            except Exception as exc:  # metrics are best effort: never stop the runtime for them
                if len(self.errors) < 100:
                    self.errors.append(repr(exc))

    def _run(self) -> None:
        while not self._stop.wait(_FLUSH_SECONDS):
            self.flush()
        self.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        else:
            self.flush()


def instrument(pool: Any, cloudwatch: Any, clock: _Clock) -> LambdaMetrics:
    """Count ``pool``'s invocations and throttles into the emulator's CloudWatch (``cloudwatch``, a
    boto3 client) until ``pool.close()``; returns the publisher."""
    metrics = LambdaMetrics(cloudwatch, clock)
    invoke, acquire, close = pool._invoke, pool._acquire, pool.close

    def counted_invoke(worker: Any, *args: Any, **kwargs: Any) -> Any:
        result = invoke(worker, *args, **kwargs)
        with contextlib.suppress(Exception):
            metrics.invoked(worker.config.name, ok=bool(result.ok), duration_ms=float(result.duration_ms))
        return result

    def counted_acquire(config: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return acquire(config, *args, **kwargs)
        except Throttled:
            metrics.throttled(config.name)
            raise

    def closing(*args: Any, **kwargs: Any) -> Any:
        try:
            return close(*args, **kwargs)
        finally:
            metrics.close()

    pool._invoke, pool._acquire, pool.close = counted_invoke, counted_acquire, closing
    metrics.start()
    return metrics

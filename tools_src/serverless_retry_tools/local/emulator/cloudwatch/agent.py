"""CloudWatch in the emulator's process: SQS's metrics, EMF extraction, and alarm evaluation, on the
emulator's logical clock (installed by ``emulator_server``; moto stores alarms and datapoints but
evaluates nothing).

Each whole logical minute t, a little after it (``LAG_SECONDS``, so that datapoints the runtime puts
for the minute have arrived), the agent

1. puts each active queue's metrics for the minute [t - 60, t) into moto's CloudWatch, stamped with
   the minute's start as CloudWatch stamps one-minute datapoints: the gauges (sampled now) and the
   counts of NumberOfMessagesSent / Received / Deleted in that minute. A queue is active while it
   holds messages or for six hours after an API call on it ("Monitoring Amazon SQS queues using
   CloudWatch"), and an inactive one publishes nothing;
2. evaluates every metric alarm at t (:mod:`.alarms`) on the datapoints moto holds, and sets the
   state of each that changed (StateReason says why; StateUpdatedTimestamp is logical).

EMF: every log event put to moto's CloudWatch Logs is read for embedded metrics (:mod:`.emf`),
stamped with the logical instant it arrived (Powertools stamps them with the real time, which
under a scaled clock is not the functions' time).
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from serverless_retry_tools.local.clock.held_clock import HeldClock
from serverless_retry_tools.local.emulator.cloudwatch.alarms import (
    AlarmSpec,
    MetricStat,
    Query,
    Sample,
    evaluate_alarm,
)
from serverless_retry_tools.local.emulator.cloudwatch.emf import parse_emf
from serverless_retry_tools.local.emulator.cloudwatch.queue_gauges import MessageView, gauges
from serverless_retry_tools.local.emulator.patching import Undo

__all__ = ["LAG_SECONDS", "CloudWatchAgent", "install_cloudwatch"]

MINUTE = 60
# Logical seconds after a minute ends before it is published and the alarms evaluated.
LAG_SECONDS = 10.0
ACTIVE_SECONDS = 6 * 3600
_ENQUEUED = "_serverless_retry_enqueued_ms"
_RECEIVES_BEFORE = "_serverless_retry_receives_before"
_COUNTERS = ("NumberOfMessagesSent", "NumberOfMessagesReceived", "NumberOfMessagesDeleted")
# At most this many missed minutes are caught up after a stall (the rest are skipped).
_MAX_CATCH_UP = 30

QueueKey = tuple[str, str, str]  # account, region, queue name
MetricKey = tuple[str, str, tuple[tuple[str, str], ...]]


def _stamp(seconds: float) -> datetime:
    """moto keeps datapoint timestamps as naive UTC datetimes."""
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


def _seconds(stamp: datetime) -> float:
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


class _Counts:
    """SQS API counts per queue and logical minute, and each queue's last API call."""

    def __init__(self, clock: HeldClock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._by_minute: dict[QueueKey, dict[int, dict[str, int]]] = defaultdict(dict)
        self.last_call: dict[QueueKey, float] = {}

    def add(self, key: QueueKey, metric: str | None, n: int = 1) -> None:
        now = self._clock.now()
        with self._lock:
            self.last_call[key] = now
            if metric is not None and n:
                minute = int(now // MINUTE) * MINUTE
                counts = self._by_minute[key].setdefault(minute, {})
                counts[metric] = counts.get(metric, 0) + n

    def take(self, key: QueueKey, before: int) -> dict[int, dict[str, int]]:
        """The counts of the minutes that started before ``before``, removed."""
        with self._lock:
            minutes = self._by_minute.get(key, {})
            done = {m: c for m, c in minutes.items() if m < before}
            for m in done:
                del minutes[m]
            return done


class _Index:
    """moto's datapoints by metric, read incrementally (moto only appends to its list)."""

    def __init__(self) -> None:
        self._seen: dict[int, int] = {}
        self._samples: dict[tuple[int, MetricKey], list[Sample]] = defaultdict(list)

    def update(self, backend: Any) -> None:
        data = backend.metric_data
        start = self._seen.get(id(backend), 0)
        if len(data) < start:  # reset (moto's /moto-api/reset): read it again
            start = 0
            for key in [k for k in self._samples if k[0] == id(backend)]:
                del self._samples[key]
        for datum in data[start:]:
            dims = tuple(sorted((str(d.name), str(d.value)) for d in datum.dimensions))
            key = (id(backend), (datum.namespace, datum.name, dims))
            at = _seconds(datum.timestamp)
            if hasattr(datum, "value"):
                self._samples[key].append(Sample.of(at, float(datum.value)))
            else:
                self._samples[key].append(
                    Sample(
                        at, float(datum.sum), float(datum.min), float(datum.max), float(datum.sample_count)
                    )
                )
        self._seen[id(backend)] = len(data)

    def source(self, backend: Any) -> Callable[[MetricStat, float, float], Sequence[Sample]]:
        def samples(metric: MetricStat, start: float, end: float) -> Sequence[Sample]:
            found = self._samples.get((id(backend), (metric.namespace, metric.name, metric.dimensions)), [])
            return [s for s in found if start <= s.timestamp < end]

        return samples


def alarm_spec(alarm: Any) -> AlarmSpec:
    """moto's Alarm as the evaluator reads it."""

    def dims(items: Any) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((str(d.name), str(d.value)) for d in items or []))

    queries: list[Query] = []
    for q in alarm.metric_data_queries:
        stat = q.metric_stat
        metric = None
        if stat is not None:
            metric = MetricStat(
                stat.metric.namespace,
                stat.metric.metric_name,
                dims(stat.metric.dimensions),
                str(stat.stat),
                int(stat.period or 60),
            )
        return_data = str(q.return_data).lower() == "true"
        queries.append(Query(str(q.id), metric, q.expression, return_data))
    if not queries:
        stat = alarm.statistic or alarm.extended_statistic or "Average"
        metric = MetricStat(
            alarm.namespace, alarm.metric_name, dims(alarm.dimensions), stat, int(alarm.period or 60)
        )
        queries.append(Query("m", metric, None, True))
    datapoints = alarm.datapoints_to_alarm
    return AlarmSpec(
        name=alarm.name,
        queries=tuple(queries),
        comparison=str(alarm.comparison_operator),
        threshold=float(alarm.threshold),
        evaluation_periods=int(alarm.evaluation_periods),
        datapoints_to_alarm=int(datapoints) if datapoints else None,
        treat_missing_data=alarm.treat_missing_data,
    )


class CloudWatchAgent:
    def __init__(self, clock: HeldClock) -> None:
        self.clock = clock
        self.counts = _Counts(clock)
        self._index = _Index()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    # -- each minute ------------------------------------------------------------------------------
    def tick(self, t: int) -> None:
        """Publish the minute before ``t`` and evaluate every alarm at ``t``."""
        from moto.cloudwatch.models import cloudwatch_backends
        from moto.sqs.models import sqs_backends

        with self._lock:
            for account, regions in list(sqs_backends.items()):
                for region, backend in list(regions.items()):
                    for queue in list(backend.queues.values()):
                        self._publish_queue(cloudwatch_backends[account][region], (account, region), queue, t)
            for _account, regions in list(cloudwatch_backends.items()):
                for _region, backend in list(regions.items()):
                    self._evaluate(backend, t)

    def _publish_queue(self, cloudwatch: Any, where: tuple[str, str], queue: Any, t: int) -> None:
        key = (where[0], where[1], queue.name)
        counts = self.counts.take(key, t)
        messages = list(queue._messages)
        last = self.counts.last_call.get(key)
        if not messages and not counts and (last is None or t - last > ACTIVE_SECONDS):
            return  # inactive: SQS publishes nothing for it
        now_ms = self.clock.now() * 1000.0
        views = [
            MessageView(
                float(m.__dict__.get(_ENQUEUED) or m.sent_timestamp or now_ms),
                float(m.visible_at),
                float(m.delayed_until),
                int(m.approximate_receive_count) - int(m.__dict__.get(_RECEIVES_BEFORE, 0)),
            )
            for m in messages
        ]
        minute = t - MINUTE
        dimensions = [{"Name": "QueueName", "Value": queue.name}]
        data: list[dict[str, Any]] = [
            {"MetricName": name, "Value": value, "Dimensions": dimensions, "Timestamp": _stamp(minute)}
            for name, value in gauges(views, now_ms, fifo=bool(queue.fifo_queue)).items()
        ]
        by_minute = counts or {minute: {}}
        for start, per_metric in sorted(by_minute.items()):
            for name in _COUNTERS:
                data.append(
                    {
                        "MetricName": name,
                        "Value": float(per_metric.get(name, 0)),
                        "Dimensions": dimensions,
                        "Timestamp": _stamp(start),
                        "Unit": "Count",
                    }
                )
        cloudwatch.put_metric_data("AWS/SQS", data)

    def _evaluate(self, backend: Any, t: int) -> None:
        self._index.update(backend)
        samples = self._index.source(backend)
        for alarm in list(backend.alarms.values()):
            if getattr(alarm, "rule", None):
                continue  # a composite alarm: not evaluated
            result = evaluate_alarm(alarm_spec(alarm), float(t), samples, str(alarm.state_value))
            if result.state != alarm.state_value:
                alarm.update_state(result.reason, "{}", result.state)
                alarm.state_updated_timestamp = _stamp(t)

    # -- the thread --------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cloudwatch-agent", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        next_t = (int(self.clock.now() // MINUTE) + 1) * MINUTE
        while not self._stop.is_set():
            now = self.clock.now()
            if now < next_t + LAG_SECONDS:
                wait = self.clock.real_seconds(next_t + LAG_SECONDS - now)
                self._stop.wait(min(max(wait, 0.005), 0.25))
                continue
            behind = int((now - LAG_SECONDS - next_t) // MINUTE)
            if behind > _MAX_CATCH_UP:
                next_t += (behind - _MAX_CATCH_UP) * MINUTE
            try:
                self.tick(next_t)
            except Exception as exc:  # never stop the emulator for its metrics
                if len(self.errors) < 100:
                    self.errors.append(repr(exc))
            next_t += MINUTE


def _hook_sqs(agent: CloudWatchAgent) -> Undo:
    """Count SendMessage, ReceiveMessage and DeleteMessage per queue, and stamp when each message
    entered its queue (a dead-letter move included)."""
    from moto.sqs import models

    backend_cls, queue_cls = models.SQSBackend, models.Queue
    originals = {
        (backend_cls, "receive_message"): backend_cls.receive_message,
        (backend_cls, "send_message"): backend_cls.send_message,
        (backend_cls, "send_message_batch"): backend_cls.send_message_batch,
        (queue_cls, "delete_message"): queue_cls.delete_message,
        (queue_cls, "add_message"): queue_cls.add_message,
    }

    def key(backend: Any, name: str) -> QueueKey:
        return (str(backend.account_id), str(backend.region_name), name)

    def receive_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        result = originals[(backend_cls, "receive_message")](self, queue_name, *args, **kwargs)
        agent.counts.add(key(self, queue_name), "NumberOfMessagesReceived", len(result))
        return result

    def send_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        result = originals[(backend_cls, "send_message")](self, queue_name, *args, **kwargs)
        agent.counts.add(key(self, queue_name), "NumberOfMessagesSent")
        return result

    def send_message_batch(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        result = originals[(backend_cls, "send_message_batch")](self, queue_name, *args, **kwargs)
        agent.counts.add(key(self, queue_name), "NumberOfMessagesSent", len(result[0]))
        return result

    def delete_message(self: Any, receipt_handle: str) -> Any:
        result = originals[(queue_cls, "delete_message")](self, receipt_handle)
        # Every delete with a valid receipt handle counts, a repeated one too.
        agent.counts.add((str(self.account_id), str(self.region), str(self.name)), "NumberOfMessagesDeleted")
        return result

    def add_message(self: Any, message: Any) -> Any:
        message.__dict__[_ENQUEUED] = agent.clock.now() * 1000.0
        message.__dict__[_RECEIVES_BEFORE] = int(message.approximate_receive_count)
        return originals[(queue_cls, "add_message")](self, message)

    new = {
        (backend_cls, "receive_message"): receive_message,
        (backend_cls, "send_message"): send_message,
        (backend_cls, "send_message_batch"): send_message_batch,
        (queue_cls, "delete_message"): delete_message,
        (queue_cls, "add_message"): add_message,
    }
    for (owner, name), function in new.items():
        setattr(owner, name, function)

    def undo() -> None:
        for (owner, name), function in originals.items():
            setattr(owner, name, function)

    return undo


def _hook_logs(agent: CloudWatchAgent) -> Undo:
    """Extract the EMF metrics of every log event put to moto's CloudWatch Logs."""
    from moto.cloudwatch.models import cloudwatch_backends
    from moto.logs import models

    backend_cls = models.LogsBackend
    original = backend_cls.put_log_events

    def put_log_events(self: Any, log_group_name: str, log_stream_name: str, log_events: Any) -> Any:
        result = original(self, log_group_name, log_stream_name, log_events)
        with contextlib.suppress(Exception):  # metrics are best effort: the log events are stored
            stamp = _stamp(agent.clock.now())
            by_namespace: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for event in log_events:
                for datum in parse_emf(str(event.get("message", ""))):
                    by_namespace[datum.namespace].append(
                        {
                            "MetricName": datum.name,
                            "Value": datum.value,
                            "Dimensions": [{"Name": k, "Value": v} for k, v in datum.dimensions],
                            "Timestamp": stamp,
                            **({"Unit": datum.unit} if datum.unit else {}),
                        }
                    )
            cloudwatch = cloudwatch_backends[self.account_id][self.region_name]
            for namespace, data in by_namespace.items():
                cloudwatch.put_metric_data(namespace, data)
        return result

    backend_cls.put_log_events = put_log_events

    def undo() -> None:
        backend_cls.put_log_events = original

    return undo


def install_cloudwatch(clock: HeldClock) -> tuple[CloudWatchAgent, Undo]:
    """Hook moto's SQS and Logs in this process and start the agent on ``clock``; returns the agent
    and the undo (which stops it). Call after ``install_logical_sqs``, whose methods it wraps."""
    agent = CloudWatchAgent(clock)
    undo_sqs = _hook_sqs(agent)
    undo_logs = _hook_logs(agent)
    agent.start()

    def undo() -> None:
        agent.stop()
        undo_logs()
        undo_sqs()

    return agent, undo

"""``serverless-retry demo self-healing``: the self-healing example, end to end, on the local emulator.

Start the emulator, apply ``examples/self-healing`` to it with the archive on, publish a workload to
its two topics, run the local runtime (SNS -> Lambda, Lambda's async retries and destinations, the
pipe and its enrichment, the bus rules, the redrive function, its schedules, the archiver) until every
delivery is final and the archiver has taken what was given up on into S3, then account for each
(message, subscribed function) from what the emulator shows
(:mod:`serverless_retry_tools.local.demos.selfheal_accounting`); then the retention step
(:mod:`serverless_retry_tools.local.demos.demo_archive`: logical time past the exhausted queue's retention,
``inspect`` of the archive; no redrive: ``redrive --archive`` sends to queues only, and an exhausted
record goes back to its function); destroy and stop. Exit status 0 only when
every delivery ended as the example says: the charge function (function one) 1 + 3 attempts then
``exhausted`` (or charged on the attempt an order asks for), the invoice function (function two)
``non-retryable`` at once (or invoiced), the audit subscriber each order exactly once, and the
retention step did what it shows.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

import boto3
from botocore.config import Config

from serverless_retry_tools.local.aws_rules.lambda_async import ASYNC_QUEUE_NAME
from serverless_retry_tools.local.demos.demo_archive import (
    ARCHIVE_VARIABLES,
    archive_records,
    print_archive,
    retention_step,
)
from serverless_retry_tools.local.demos.demo_frame import (
    ExampleOptions,
    ExampleRun,
    ProgressLines,
    run_example,
    run_until_settled,
    write_accounting,
)
from serverless_retry_tools.local.demos.demo_queues import queue_depth, read_log_lines, receive_all
from serverless_retry_tools.local.demos.selfheal_accounting import (
    Final,
    Invocation,
    Published,
    SelfHealingAccounting,
    account,
    parse_archived,
    parse_dead_letter,
    parse_exhausted,
    parse_redrive_logs,
)
from serverless_retry_tools.local.demos.selfheal_workload import ExampleFunctions, Message, build_messages
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent

__all__ = ["Layout", "SelfHealingOptions", "collect", "publish", "run_selfheal_demo", "settled_probe"]

EXAMPLE = "self-healing"
# No retries of its own: a settled probe or a drain that fails says so at once.
_CLIENT_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 1})
_DLQS = ("failure_dlq_url", "rules_dlq_url", "redrive_dlq_url", "schedule_dlq_url")


@dataclass
class SelfHealingOptions(ExampleOptions):
    # Lower than the scheduled-retry demo's: the pipeline between two attempts (destination, pipe,
    # enrichment, rule, redrive, schedule) runs in real time, which the scale multiplies.
    clock_scale: float = 10.0
    deadline_seconds: float = 240.0
    per_topic: int = 5


def _find(outputs: Mapping[str, Any], name: str) -> Any:
    """An output by name, at the top or inside a map output (a module's outputs passed through)."""
    if name in outputs:
        return outputs[name]
    for value in outputs.values():
        if isinstance(value, Mapping) and name in value:
            return value[name]
    raise KeyError(f"examples/{EXAMPLE} has no output {name!r} (outputs: {', '.join(sorted(outputs))})")


@dataclass(frozen=True)
class Layout:
    """What the demo needs of the applied example, from its outputs."""

    topics: dict[str, str]  # "orders" / "invoices" -> topic ARN
    functions: ExampleFunctions
    exhausted_queue_url: str
    failure_queue_url: str
    dlqs: dict[str, str]  # place -> queue URL
    schedule_group: str
    redrive_function: str
    event_bus: str
    archive_location: str | None = None  # s3://bucket/prefix/ with the archive on

    @property
    def terminal(self) -> dict[str, str]:
        """The queues the archiver drains: the retry-exhausted queue and every DLQ, by place."""
        return {"exhausted-queue": self.exhausted_queue_url, **self.dlqs}

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, Any]) -> Layout:
        return cls(
            topics={
                "orders": str(_find(outputs, "orders_topic_arn")),
                "invoices": str(_find(outputs, "invoices_topic_arn")),
            },
            functions=ExampleFunctions(
                charge=str(_find(outputs, "charge_function_name")),
                invoice=str(_find(outputs, "invoice_function_name")),
                audit=str(_find(outputs, "audit_function_name")),
            ),
            exhausted_queue_url=str(_find(outputs, "exhausted_queue_url")),
            failure_queue_url=str(_find(outputs, "failure_queue_url")),
            dlqs={name.removesuffix("_url").replace("_", "-"): str(_find(outputs, name)) for name in _DLQS},
            schedule_group=str(_find(outputs, "schedule_group_name")),
            redrive_function=str(_find(outputs, "redrive_function_name")),
            event_bus=str(_find(outputs, "event_bus_name")),
            archive_location=str(outputs["archive_location"]) if outputs.get("archive_location") else None,
        )


def publish(sns: Any, layout: Layout, messages: list[Message]) -> list[Published]:
    published = []
    for message in messages:
        params: dict[str, Any] = {
            "TopicArn": layout.topics[message.topic],
            "Message": message.body,
            "MessageAttributes": message.attributes,
        }
        if message.subject:
            params["Subject"] = message.subject
        message_id = str(sns.publish(**params)["MessageId"])
        published.append(Published(message_id, message.topic, message.key, message.expectations))
    return published


def settled_probe(clients: Mapping[str, Any], layout: Layout) -> dict[str, int]:
    """What is still in transit: the failure queue, Lambda's async queue, the retry schedules."""
    sqs, scheduler = clients["sqs"], clients["scheduler"]
    try:
        async_depth = queue_depth(sqs, sqs.get_queue_url(QueueName=ASYNC_QUEUE_NAME)["QueueUrl"])
    except sqs.exceptions.QueueDoesNotExist:
        async_depth = 0
    schedules = scheduler.list_schedules(GroupName=layout.schedule_group).get("Schedules", [])
    return {
        "failure queue": queue_depth(sqs, layout.failure_queue_url),
        "async invocations": async_depth,
        "schedules": len(schedules),
    }


def archive_probe(clients: Mapping[str, Any], layout: Layout) -> dict[str, int]:
    """What the archiver has still to take: every terminal queue's depth (none without the archive)."""
    if layout.archive_location is None:
        return {}
    return {"to archive": sum(queue_depth(clients["sqs"], url) for url in layout.terminal.values())}


def invocations(events: list[RuntimeEvent]) -> list[Invocation]:
    return [
        Invocation(
            str(e.detail.get("function", "")),
            str(e.detail.get("message_id", "")),
            bool(e.detail.get("ok")),
            str(e.detail.get("error", "")),
            int(e.detail.get("logical_ms", 0)),
        )
        for e in events
        if e.kind == "async-invoke"
    ]


def collect(
    clients: Mapping[str, Any], layout: Layout, published: list[Published], events: list[RuntimeEvent]
) -> SelfHealingAccounting:
    """Account for every delivery from the emulator's state and the runtime's invocations: the
    archive (with the archive on: ``clients["s3"]``), then anything still in the terminal queues."""
    sqs = clients["sqs"]
    limit = 4 * len(published) + 20
    finals: list[Final] = []
    if layout.archive_location is not None:
        places = {url.rsplit("/", 1)[-1]: place for place, url in layout.dlqs.items()}
        finals.extend(
            parse_archived(r, places) for r in archive_records(clients["s3"], layout.archive_location)
        )
    finals.extend(
        parse_exhausted(m["Body"], m.get("MessageAttributes"))
        for m in receive_all(sqs, layout.exhausted_queue_url, limit)
    )
    for place, url in layout.dlqs.items():
        finals.extend(parse_dead_letter(place, m["Body"]) for m in receive_all(sqs, url, limit))
    redrives = parse_redrive_logs(read_log_lines(clients["logs"], f"/aws/lambda/{layout.redrive_function}"))
    return account(published, invocations(events), finals, redrives)


def _table(result: SelfHealingAccounting, out: ProgressLines) -> None:
    out(
        f"{'message':<8} {'topic':<9} {'function':<22} {'outcome':<24} {'attempts':>8}  {'backoff (s)':<14} "
        f"{'waited (s)':<15} evidence",
        stamp=False,
    )
    rows = sorted(result.deliveries, key=lambda d: (d.message.topic, d.message.key, d.expected.function))
    for d in rows:
        delays = " > ".join(str(s) for s in d.delays) or "-"
        waited = " > ".join(str(s) for s in d.waited) or "-"
        flag = "" if d.as_expected else "   <-- " + "; ".join(d.problems)
        error = f" ({d.error_type})" if d.error_type else ""
        outcome = f"archived: {d.outcome}" if d.evidence.startswith("archive") else d.outcome
        out(
            f"{d.message.key:<8} {d.message.topic:<9} {d.expected.function:<22} {outcome:<24} {d.attempts:>8}  "
            f"{delays:<14} {waited:<15} {d.evidence}{error}{flag}",
            stamp=False,
        )
    out(
        "backoff: the delay the redrive chose before each retry (the policy); waited: logical seconds from "
        "one attempt to the next, which adds the pipeline's own real time x the clock scale",
        stamp=False,
    )


def _totals(result: SelfHealingAccounting, messages: int, out: ProgressLines) -> bool:
    totals = result.totals
    out(stamp=False)
    parts = ", ".join(f"{k} {v}" for k, v in sorted(totals.items()))
    out(f"published {messages} messages = {len(result.deliveries)} deliveries: {parts}", stamp=False)
    attempts: Counter[str] = Counter()
    for d in result.deliveries:
        attempts[d.expected.function] += d.attempts
    out("invocations by function: " + ", ".join(f"{k} {v}" for k, v in sorted(attempts.items())), stamp=False)
    if result.unknown_finals:
        out(f"UNKNOWN: {len(result.unknown_finals)} final record(s) for no published message:", stamp=False)
        for final in result.unknown_finals[:10]:
            out(f"  {final.place}: {final.outcome} {final.function} {final.reason[:120]}", stamp=False)
    if totals["unaccounted"]:
        out(f"UNACCOUNTED: {totals['unaccounted']} deliveries are in no final place", stamp=False)
    if totals["conflict"]:
        out(f"CONFLICT: {totals['conflict']} deliveries are in more than one final place", stamp=False)
    if result.unexpected:
        out(
            f"UNEXPECTED: {len(result.unexpected)} deliveries ended otherwise than the example says",
            stamp=False,
        )
    out(
        "OK: every delivery is accounted for, as the example says" if result.ok else "FAILED: see above",
        stamp=False,
    )
    return result.ok


def run_selfheal_demo(options: SelfHealingOptions, stream: TextIO) -> int:
    return run_example(
        EXAMPLE,
        options,
        ProgressLines(stream),
        lambda run: _exercise(run, options),
        variables=ARCHIVE_VARIABLES,
    )


def _exercise(run: ExampleRun, options: SelfHealingOptions) -> int:
    emulator, out = run.emulator, run.out
    try:
        layout = Layout.from_outputs(run.outputs)
    except KeyError as exc:
        out(f"error: {exc}")
        return 1
    messages = build_messages(options.per_topic, layout.functions, seed=options.seed)
    kwargs = emulator.client_kwargs()
    clients: dict[str, Any] = {
        s: boto3.client(s, config=_CLIENT_CONFIG, **kwargs) for s in ("sqs", "sns", "scheduler", "logs", "s3")
    }
    events: list[RuntimeEvent] = []
    lock = threading.Lock()

    def on_event(event: RuntimeEvent) -> None:
        with lock:
            events.append(event)
        d = event.detail
        if event.kind in ("error", "warning", "destination-failed", "schedule-dead-lettered"):
            out(f"runtime {event.kind}: {d}")

    runtime = Runtime(
        emulator.url, region=emulator.region, work_dir=run.work_dir / "runtime", on_event=on_event
    )
    counts = Counter(m.topic for m in messages)
    out(
        f"publishing {counts['orders']} orders (to {layout.functions.charge} and {layout.functions.audit}) and "
        f"{counts['invoices']} invoices (to {layout.functions.invoice})"
    )
    published = publish(clients["sns"], layout, messages)

    def progress(pending: Mapping[str, int]) -> list[str]:
        with lock:
            runs = sum(1 for e in events if e.kind == "async-invoke")
        return [", ".join(f"{k} {v}" for k, v in pending.items()), f"invocations {runs}"]

    done = run_until_settled(
        runtime,
        out,
        in_transit=lambda: {**settled_probe(clients, layout), **archive_probe(clients, layout)},
        progress=progress,
        quiet_checks=3,
        deadline_seconds=options.deadline_seconds,
        finals="delivery",
        summary=lambda: (
            f"{runtime.stats['async_invocations']} async invocations, "
            f"{runtime.stats['pipe_batches']} pipe batches, {runtime.stats['schedules_fired']} schedules fired"
        ),
    )
    with lock:
        seen = list(events)
    result = collect(clients, layout, published, seen)
    out(stamp=False)
    _table(result, out)
    ok = _totals(result, len(published), out)
    retained = True
    if layout.archive_location is not None:
        location = layout.archive_location
        print_archive(location, archive_records(clients["s3"], location), out)
        retention = retention_step(
            run,
            location=location,
            queue_url=layout.exhausted_queue_url,
            queue_label="retry-exhausted queue",
            filters=("--outcome", "exhausted", "--error-type", "HttpError"),
            no_redrive=(
                "an exhausted self-healing record goes back to the function it failed in "
                "(redrive --to-function), and redrive --archive sends to queues only"
            ),
            in_transit=lambda: {**settled_probe(clients, layout), **archive_probe(clients, layout)},
            processed=lambda _: False,
        )
        retained = retention.ok
    write_accounting(
        run.work_dir,
        [
            {
                "message_id": d.message.message_id,
                "order_id": d.message.key,
                "topic": d.message.topic,
                "function": d.expected.function,
                "outcome": d.outcome,
                "attempts": d.attempts,
                "delays": list(d.delays),
                "evidence": d.evidence,
                "problems": list(d.problems),
            }
            for d in result.deliveries
        ],
    )
    return 0 if ok and done and retained else 1

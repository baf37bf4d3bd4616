"""``serverless-retry demo self-healing``: the self-healing example, end to end, on the local emulator.

Start the emulator, apply ``examples/self-healing`` to it, publish a workload to its two topics, run
the local runtime (SNS -> Lambda, Lambda's async retries and destinations, the pipe and its
enrichment, the bus rules, the redrive function, its schedules) until every delivery is final, then
account for each (message, subscribed function) from what the emulator shows
(:mod:`serverless_retry_tools.local.selfheal_accounting`), destroy and stop. Exit status 0 only when
every delivery ended as the example says: the charge function (function one) 1 + 3 attempts then
``exhausted`` (or charged on the attempt an order asks for), the invoice function (function two)
``non-retryable`` at once (or invoiced), the audit subscriber each order exactly once.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import boto3
from botocore.config import Config

from serverless_retry_tools.local.demo import _base_env, _logical, _Out, find_repo_root
from serverless_retry_tools.local.emulator import Emulator
from serverless_retry_tools.local.lambda_async import ASYNC_QUEUE_NAME
from serverless_retry_tools.local.runtime import Runtime, RuntimeEvent
from serverless_retry_tools.local.selfheal_accounting import (
    Final,
    Invocation,
    Published,
    SelfHealingAccounting,
    account,
    parse_dead_letter,
    parse_exhausted,
    parse_redrive_logs,
)
from serverless_retry_tools.local.selfheal_workload import ExampleFunctions, Message, build_messages
from serverless_retry_tools.local.terraform import Terraform, TerraformError, cli_environment

__all__ = ["Layout", "SelfHealingOptions", "collect", "publish", "run_selfheal_demo", "settled_probe"]

EXAMPLE = "self-healing"
_CLIENT_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 1})
_DLQS = ("failure_dlq_url", "rules_dlq_url", "redrive_dlq_url", "schedule_dlq_url")


@dataclass
class SelfHealingOptions:
    per_topic: int = 5
    # Lower than the scheduled-retry demo's: the pipeline between two attempts (destination, pipe,
    # enrichment, rule, redrive, schedule) runs in real time, which the scale multiplies.
    clock_scale: float = 10.0
    deadline_seconds: float = 240.0
    seed: int = 7
    repo: Path = field(default_factory=find_repo_root)
    work_dir: Path | None = None
    destroy: bool = True


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


def _depth(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return sum(
        int(attributes.get(k, 0))
        for k in (
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        )
    )


def settled_probe(clients: Mapping[str, Any], layout: Layout) -> dict[str, int]:
    """What is still in transit: the failure queue, Lambda's async queue, the retry schedules."""
    sqs, scheduler = clients["sqs"], clients["scheduler"]
    try:
        async_depth = _depth(sqs, sqs.get_queue_url(QueueName=ASYNC_QUEUE_NAME)["QueueUrl"])
    except sqs.exceptions.QueueDoesNotExist:
        async_depth = 0
    schedules = scheduler.list_schedules(GroupName=layout.schedule_group).get("Schedules", [])
    return {
        "failure queue": _depth(sqs, layout.failure_queue_url),
        "async invocations": async_depth,
        "schedules": len(schedules),
    }


def _drain(sqs: Any, url: str, limit: int) -> list[dict[str, Any]]:
    received: list[dict[str, Any]] = []
    empty = 0
    for _ in range(limit // 10 + 20):
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=43_200, MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            empty += 1
            if empty >= 2:
                break
            continue
        received.extend(messages)
    return received


def _log_lines(logs: Any, group: str) -> list[str]:
    lines: list[str] = []
    try:
        for page in logs.get_paginator("filter_log_events").paginate(logGroupName=group):
            lines.extend(event["message"] for event in page.get("events", []))
    except logs.exceptions.ResourceNotFoundException:
        pass
    return lines


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
    """Account for every delivery from the emulator's state and the runtime's invocations."""
    sqs = clients["sqs"]
    limit = 4 * len(published) + 20
    finals: list[Final] = [
        parse_exhausted(m["Body"], m.get("MessageAttributes"))
        for m in _drain(sqs, layout.exhausted_queue_url, limit)
    ]
    for place, url in layout.dlqs.items():
        finals.extend(parse_dead_letter(place, m["Body"]) for m in _drain(sqs, url, limit))
    redrives = parse_redrive_logs(_log_lines(clients["logs"], f"/aws/lambda/{layout.redrive_function}"))
    return account(published, invocations(events), finals, redrives)


def _table(result: SelfHealingAccounting, out: _Out) -> None:
    out(
        f"{'message':<8} {'topic':<9} {'function':<22} {'outcome':<14} {'attempts':>8}  {'backoff (s)':<14} "
        f"{'waited (s)':<15} evidence",
        stamp=False,
    )
    rows = sorted(result.deliveries, key=lambda d: (d.message.topic, d.message.key, d.expected.function))
    for d in rows:
        delays = " > ".join(str(s) for s in d.delays) or "-"
        waited = " > ".join(str(s) for s in d.waited) or "-"
        flag = "" if d.as_expected else "   <-- " + "; ".join(d.problems)
        error = f" ({d.error_type})" if d.error_type else ""
        out(
            f"{d.message.key:<8} {d.message.topic:<9} {d.expected.function:<22} {d.outcome:<14} {d.attempts:>8}  "
            f"{delays:<14} {waited:<15} {d.evidence}{error}{flag}",
            stamp=False,
        )
    out(
        "backoff: the delay the redrive chose before each retry (the policy); waited: logical seconds from "
        "one attempt to the next, which adds the pipeline's own real time x the clock scale",
        stamp=False,
    )


def _totals(result: SelfHealingAccounting, messages: int, out: _Out) -> bool:
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
    out = _Out(stream)
    root = options.repo / "examples" / EXAMPLE
    package = options.repo / "dist" / "examples" / f"{EXAMPLE}.zip"
    if not root.is_dir():
        out(f"error: {root} is missing")
        return 2
    if not package.is_file():
        out(f"error: {package} is missing: run ./build.sh package (./build.sh demo does it for you)")
        return 2
    work_dir = options.work_dir or Path(tempfile.mkdtemp(prefix="serverless-retry-demo-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    out(
        f"serverless-retry demo: examples/{EXAMPLE} on a local AWS emulator; clock x{options.clock_scale:g} "
        f"(work dir {work_dir})"
    )
    with Emulator(log_path=work_dir / "emulator.log", clock_scale=options.clock_scale) as emulator:
        out(f"emulator (moto in server mode) at {emulator.url}, {len(emulator.applied_patches)} patches")
        tf = Terraform(
            root,
            work_dir / "terraform",
            cli_environment(work_dir / "terraform", {**_base_env(), **emulator.env()}),
        )
        copy = work_dir / f"{EXAMPLE}.zip"
        shutil.copyfile(package, copy)  # a rebuild of dist/ during the run must not change it mid-apply
        variables = {"aws_endpoint_url": emulator.url, "package": str(copy)}
        try:
            tf.init()
            out("terraform init done; applying (the AWS provider waits ~25 s on each SQS queue and policy)")
            tf.apply(variables)
            out(f"terraform apply done in {tf.timings['apply']:.0f} s")
            status = _exercise(tf.outputs(), emulator, options=options, work_dir=work_dir, out=out)
        except (TerraformError, KeyError) as exc:
            out(f"error: {exc}")
            return 1
        finally:
            if options.destroy:
                try:
                    tf.destroy(variables, refresh=False)
                    out(f"terraform destroy done in {tf.timings.get('destroy', 0):.0f} s")
                except TerraformError as exc:
                    out(f"warning: {exc}")
    out(f"emulator stopped; total {time.monotonic() - out.started:.0f} s")
    return status


def _exercise(
    outputs: dict[str, Any],
    emulator: Emulator,
    *,
    options: SelfHealingOptions,
    work_dir: Path,
    out: _Out,
) -> int:
    layout = Layout.from_outputs(outputs)
    messages = build_messages(options.per_topic, layout.functions, seed=options.seed)
    kwargs = emulator.client_kwargs()
    clients: dict[str, Any] = {
        s: boto3.client(s, config=_CLIENT_CONFIG, **kwargs) for s in ("sqs", "sns", "scheduler", "logs")
    }
    events: list[RuntimeEvent] = []
    lock = threading.Lock()

    def on_event(event: RuntimeEvent) -> None:
        with lock:
            events.append(event)
        d = event.detail
        if event.kind in ("error", "warning", "destination-failed", "schedule-dead-lettered"):
            out(f"runtime {event.kind}: {d}")

    runtime = Runtime(emulator.url, region=emulator.region, work_dir=work_dir / "runtime", on_event=on_event)
    counts = Counter(m.topic for m in messages)
    out(
        f"publishing {counts['orders']} orders (to {layout.functions.charge} and {layout.functions.audit}) and "
        f"{counts['invoices']} invoices (to {layout.functions.invoice})"
    )
    published = publish(clients["sns"], layout, messages)
    started = runtime.clock.now()
    runtime.start()
    state = {"quiet": 0, "last": 0.0}

    def settled() -> bool:
        pending = settled_probe(clients, layout)
        now = time.monotonic()
        if now - state["last"] >= 3:
            state["last"] = now
            with lock:
                runs = sum(1 for e in events if e.kind == "async-invoke")
            logical = (runtime.clock.now() - started).total_seconds()
            out(
                f"logical +{_logical(logical)} | "
                + ", ".join(f"{k} {v}" for k, v in pending.items())
                + f" | invocations {runs}"
            )
        state["quiet"] = state["quiet"] + 1 if not any(pending.values()) else 0
        return state["quiet"] >= 3

    done = runtime.run(until=settled, deadline_seconds=options.deadline_seconds, check_every=0.5)
    out(
        (
            "every delivery reached a final place"
            if done
            else f"deadline of {options.deadline_seconds:.0f} s passed"
        )
        + f"; runtime: {runtime.stats['async_invocations']} async invocations, {runtime.stats['pipe_batches']} pipe "
        f"batches, {runtime.stats['schedules_fired']} schedules fired"
    )
    with lock:
        seen = list(events)
    result = collect(clients, layout, published, seen)
    out(stamp=False)
    _table(result, out)
    ok = _totals(result, len(published), out)
    (work_dir / "accounting.json").write_text(
        json.dumps(
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
            indent=1,
        )
    )
    return 0 if ok and done else 1

"""``serverless-retry demo``: the scheduled-retry example, end to end, on the local emulator.

Start the emulator, apply ``examples/scheduled-retry`` to it, send a mixed workload of orders (and
one malformed envelope), run the local runtime until every message is final or a deadline passes,
then account for every message from what the emulator shows (the retry-exhausted queue, the DLQ,
the function's CloudWatch Logs; see :mod:`serverless_retry_tools.local.accounting`), destroy and stop.
Exit status 0 only when processed + exhausted + DLQ = sent and each message ended as the example's
policy says it should.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import boto3
from botocore.config import Config

from serverless_retry_tools.local.accounting import (
    Accounting,
    FinalRecord,
    SentMessage,
    account,
    parse_final,
    parse_log_lines,
)
from serverless_retry_tools.local.emulator import Emulator
from serverless_retry_tools.local.runtime import Runtime, RuntimeEvent
from serverless_retry_tools.local.terraform import Terraform, TerraformError, cli_environment
from serverless_retry_tools.local.workload import MALFORMED, WorkItem, build_workload

__all__ = ["DemoOptions", "find_repo_root", "run_demo"]

_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})
_LABEL_ORDER = ["ok", "throttle", "timeout", "long-throttle", "always-timeout", "invalid", MALFORMED]


def find_repo_root() -> Path:
    """The checkout this package lives in (editable install), else the current directory."""
    here = Path(__file__).resolve()
    for candidate in (*here.parents, Path.cwd()):
        if (candidate / "examples" / "scheduled-retry").is_dir() and (candidate / "modules").is_dir():
            return candidate
    return Path.cwd()


@dataclass
class DemoOptions:
    orders: int = 100
    clock_scale: float = 100.0
    # The module default: the queue's visibility timeout is 6 x this = 180 logical seconds, which
    # holds at the demo's scale (1.8 real seconds at x100) while a function has 30 real seconds.
    function_timeout: int = 30
    deadline_seconds: float = 150.0
    seed: int = 7
    repo: Path = field(default_factory=find_repo_root)
    work_dir: Path | None = None
    destroy: bool = True


class _Out:
    """Timestamped progress lines."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def __call__(self, text: str = "", *, stamp: bool = True) -> None:
        with self.lock:
            prefix = f"[{time.monotonic() - self.started:6.1f}s] " if stamp and text else ""
            print(prefix + text, file=self.stream, flush=True)


def _logical(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class _Live:
    """Counts from the log stream as it is shipped, for progress lines only (the final accounting
    reads the logs back from the emulator)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lines: list[str] = []

    def __call__(self, function: str, line: str) -> None:
        if line.startswith("{"):
            with self.lock:
                self.lines.append(line)

    def processed(self) -> int:
        with self.lock:
            lines = list(self.lines)
        return parse_log_lines(lines).emf_processed


def _queue_counts(sqs: Any, url: str) -> dict[str, int]:
    attrs = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )["Attributes"]
    return {
        "visible": int(attrs.get("ApproximateNumberOfMessages", 0)),
        "in_flight": int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0)),
        "delayed": int(attrs.get("ApproximateNumberOfMessagesDelayed", 0)),
    }


def _send(sqs: Any, url: str, items: list[WorkItem]) -> list[SentMessage]:
    sent: list[SentMessage] = []
    for start in range(0, len(items), 10):
        chunk = items[start : start + 10]
        response = sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": item.body} for i, item in enumerate(chunk)]
        )
        if response.get("Failed"):
            raise RuntimeError(f"SendMessageBatch failed for {response['Failed']}")
        ids = {int(entry["Id"]): entry["MessageId"] for entry in response["Successful"]}
        sent.extend(
            SentMessage(ids[i], item.label, item.order_id, item.expected) for i, item in enumerate(chunk)
        )
    return sent


def _drain(sqs: Any, url: str, place: str, limit: int) -> list[FinalRecord]:
    """Read every message of a final queue (hidden for the 12-hour maximum, which stays long at any
    clock scale, so none is read twice)."""
    records: list[FinalRecord] = []
    empty_reads = 0
    for _ in range(limit // 10 + 20):  # bounded: at most `limit` messages plus some empty reads
        messages = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=43_200,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            empty_reads += 1
            if empty_reads >= 2:
                break
            continue
        records.extend(parse_final(place, m) for m in messages)
    return records


def _read_logs(logs: Any, group: str) -> list[str]:
    lines: list[str] = []
    for page in logs.get_paginator("filter_log_events").paginate(logGroupName=group):
        lines.extend(event["message"] for event in page.get("events", []))
    return lines


def _table(accounting: Accounting, out: _Out) -> None:
    rank = {label: n for n, label in enumerate(_LABEL_ORDER)}
    rows = sorted(accounting.fates, key=lambda f: (rank.get(f.sent.label, 99), f.sent.order_id))
    out(
        f"{'order':<9} {'behaviour':<18} {'outcome':<17} {'attempts':>8}  {'transports used':<32} evidence",
        stamp=False,
    )
    for fate in rows:
        transports = _compact(fate.transports)
        extra = f" ({fate.deliveries} deliveries)" if fate.deliveries > 1 else ""
        flag = (
            ""
            if not fate.sent.expected or fate.sent.expected == fate.outcome
            else "   <-- expected " + fate.sent.expected
        )
        out(
            f"{fate.sent.order_id:<9} {fate.sent.label:<18} {fate.outcome:<17} {fate.attempts:>8}  "
            f"{transports:<32} {fate.evidence}{extra}{flag}",
            stamp=False,
        )


def _compact(transports: tuple[str, ...]) -> str:
    if not transports:
        return "-"
    parts: list[str] = []
    for name, count in _runs(transports):
        parts.append(f"{name} x{count}" if count > 1 else name)
    return " > ".join(parts)


def _runs(items: tuple[str, ...]) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for item in items:
        if runs and runs[-1][0] == item:
            runs[-1] = (item, runs[-1][1] + 1)
        else:
            runs.append((item, 1))
    return runs


def _totals(accounting: Accounting, sent: int, out: _Out) -> bool:
    exhausted = accounting.exhausted_by_reason
    totals = accounting.totals
    by_reason = ", ".join(f"{k} {v}" for k, v in exhausted.items()) or "none"
    out(stamp=False)
    out(
        f"sent {sent} = processed {accounting.processed} + retry-exhausted {sum(exhausted.values())} "
        f"({by_reason}) + DLQ {accounting.dlq}",
        stamp=False,
    )
    evidence = Counter(f.evidence for f in accounting.fates if f.outcome == "processed")
    out(
        "processed evidence: "
        + (", ".join(f"{k} {v}" for k, v in sorted(evidence.items())) or "none")
        + f"; consumer EMF Processed total {accounting.emf_processed}",
        stamp=False,
    )
    transports = Counter(t for f in accounting.fates for t in f.transports)
    out(
        "retries by transport: " + (", ".join(f"{k} {v}" for k, v in sorted(transports.items())) or "none"),
        stamp=False,
    )
    mismatched = [f for f in accounting.fates if f.sent.expected and f.sent.expected != f.outcome]
    ok = accounting.balanced and not mismatched
    if totals["unaccounted"]:
        out(f"UNACCOUNTED: {totals['unaccounted']} message(s) are in no final place", stamp=False)
    if totals["conflict"]:
        out(f"CONFLICT: {totals['conflict']} message(s) are in more than one final place", stamp=False)
    if accounting.unknown_finals:
        out(f"UNKNOWN: {len(accounting.unknown_finals)} final message(s) that were never sent", stamp=False)
    if mismatched:
        out(
            f"UNEXPECTED: {len(mismatched)} message(s) ended otherwise than the example's policy says",
            stamp=False,
        )
    out(("OK: every message is accounted for" if ok else "FAILED: see above"), stamp=False)
    return ok


def run_demo(options: DemoOptions, stream: TextIO = sys.stdout) -> int:
    out = _Out(stream)
    root = options.repo / "examples" / "scheduled-retry"
    package = options.repo / "dist" / "examples" / "scheduled-retry.zip"
    if not package.is_file():
        out(f"error: {package} is missing: run ./build.sh package (./build.sh demo does it for you)")
        return 2
    work_dir = options.work_dir or Path(tempfile.mkdtemp(prefix="serverless-retry-demo-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    items = build_workload(options.orders, seed=options.seed)
    out(
        f"serverless-retry demo: examples/scheduled-retry on a local AWS emulator; clock x{options.clock_scale:g} "
        f"(work dir {work_dir})"
    )
    with Emulator(log_path=work_dir / "emulator.log", clock_scale=options.clock_scale) as emulator:
        out(
            f"emulator (moto in server mode) at {emulator.url}, clock x{emulator.clock.scale:g}, "
            f"{len(emulator.applied_patches)} patches (compatibility and AWS constraints moto skips)"
        )
        tf = Terraform(
            root,
            work_dir / "terraform",
            cli_environment(work_dir / "terraform", {**_base_env(), **emulator.env()}),
            printer=None,
        )
        # A private copy of the zip: a rebuild of dist/ during the run must not change it mid-apply.
        copy = work_dir / "scheduled-retry.zip"
        shutil.copyfile(package, copy)
        variables = {
            "aws_endpoint_url": emulator.url,
            "function_timeout": options.function_timeout,
            "package": str(copy),
        }
        try:
            tf.init()
            out("terraform init done; applying (the AWS provider waits ~25 s on each SQS queue and policy)")
            tf.apply(variables)
            out(f"terraform apply done in {tf.timings['apply']:.0f} s")
            status = _exercise(
                tf.outputs(), emulator=emulator, items=items, options=options, work_dir=work_dir, out=out
            )
        except TerraformError as exc:
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


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


def _exercise(
    outputs: dict[str, Any],
    *,
    emulator: Emulator,
    items: list[WorkItem],
    options: DemoOptions,
    work_dir: Path,
    out: _Out,
) -> int:
    kwargs = emulator.client_kwargs()
    sqs = boto3.client("sqs", config=_CLIENT_CONFIG, **kwargs)
    scheduler = boto3.client("scheduler", config=_CLIENT_CONFIG, **kwargs)
    logs = boto3.client("logs", config=_CLIENT_CONFIG, **kwargs)
    queue_url, function = outputs["queue_url"], outputs["function_name"]
    group = outputs.get("schedule_group_name")
    live = _Live()
    runtime_events: list[RuntimeEvent] = []

    def on_event(event: RuntimeEvent) -> None:
        runtime_events.append(event)
        d = event.detail
        if event.kind == "schedule-fired":
            out(
                f"scheduler fired {d['schedule'][:40]} -> {d['target'].split(':')[-1]} ({d['lateness_logical_s']} s logical after its time)"
            )
        elif event.kind in ("error", "warning", "schedule-dead-lettered"):
            out(f"runtime {event.kind}: {d}")

    runtime = Runtime(
        emulator.url,
        region=emulator.region,
        work_dir=work_dir / "runtime",
        on_event=on_event,
        log_tap=live,
    )
    labels = Counter(item.label for item in items)
    out(
        f"sending {len(items)} messages to {queue_url.rsplit('/', 1)[-1]}: "
        + ", ".join(f"{label} {labels[label]}" for label in _LABEL_ORDER if labels[label])
    )
    sent = _send(sqs, queue_url, items)
    started_logical = runtime.clock.now()
    runtime.start()

    state = {"quiet": 0, "last": 0.0}

    def settled() -> bool:
        counts = _queue_counts(sqs, queue_url)
        schedules = len(scheduler.list_schedules(GroupName=group)["Schedules"]) if group else 0
        now = time.monotonic()
        if now - state["last"] >= 3:
            state["last"] = now
            logical = (runtime.clock.now() - started_logical).total_seconds()
            out(
                f"logical +{_logical(logical)} | queue: {counts['visible']} waiting, {counts['delayed']} delayed, "
                f"{counts['in_flight']} in flight | schedules {schedules} | processed {live.processed()} | "
                f"invocations {runtime.functions.invocations}"
            )
        busy = sum(counts.values()) + schedules
        state["quiet"] = state["quiet"] + 1 if busy == 0 else 0
        return state["quiet"] >= 2

    done = runtime.run(until=settled, deadline_seconds=options.deadline_seconds, check_every=0.5)
    out(
        (
            "every message reached a final place"
            if done
            else f"deadline of {options.deadline_seconds:.0f} s passed"
        )
        + f"; runtime: {runtime.stats['batches']} batches, {runtime.stats['schedules_fired']} schedules fired"
    )
    finals = _drain(sqs, outputs["exhausted_queue_url"], "exhausted", len(sent))
    finals += _drain(sqs, outputs["dlq_url"], "dlq", len(sent))
    log_group = f"/aws/lambda/{function}"
    evidence = parse_log_lines(_read_logs(logs, log_group))
    accounting = account(sent, finals, evidence)
    out(stamp=False)
    _table(accounting, out)
    ok = _totals(accounting, len(sent), out)
    (work_dir / "accounting.json").write_text(
        json.dumps(
            [
                {
                    "message_id": f.sent.message_id,
                    "order_id": f.sent.order_id,
                    "behaviour": f.sent.label,
                    "outcome": f.outcome,
                    "attempts": f.attempts,
                    "transports": list(f.transports),
                    "evidence": f.evidence,
                }
                for f in accounting.fates
            ],
            indent=1,
        )
    )
    return 0 if ok and done else 1


def demo_main(args: Any, stream: TextIO = sys.stdout) -> int:
    options = DemoOptions(
        orders=args.orders,
        clock_scale=args.clock_scale,
        function_timeout=args.function_timeout,
        deadline_seconds=args.deadline,
        seed=args.seed,
        work_dir=Path(args.work_dir) if args.work_dir else None,
        destroy=not args.keep,
    )
    if args.repo:
        options.repo = Path(args.repo)
    return run_demo(options, stream)


Printer = Callable[[str], None]

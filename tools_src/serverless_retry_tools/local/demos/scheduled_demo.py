"""``serverless-retry demo``: the scheduled-retry example, end to end, on the local emulator.

Start the emulator, apply ``examples/scheduled-retry`` to it with the archive on, send a mixed
workload of orders (and one malformed envelope), run the local runtime until every message is final
(and the archiver has moved the terminal ones into S3) or a deadline passes, then account for every
message from what the emulator shows (the archive, anything still in the retry-exhausted queue or
the DLQ, the function's CloudWatch Logs; see :mod:`serverless_retry_tools.local.demos.accounting`). Then
the retention step (:mod:`serverless_retry_tools.local.demos.demo_archive`): logical time past the exhausted
queue's retention, ``inspect`` and ``redrive`` from the archive. Destroy and stop (the frame:
:mod:`serverless_retry_tools.local.demos.demo_frame`). Exit status 0 only when processed + exhausted + DLQ
= sent, each message ended as the example's policy says it should, and the retention step did what
it shows.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

import boto3

from serverless_retry_tools.local.demos.accounting import (
    account,
    parse_archived,
    parse_final,
    parse_log_lines,
)
from serverless_retry_tools.local.demos.accounting_report import print_fates, print_totals
from serverless_retry_tools.local.demos.demo_archive import (
    ARCHIVE_VARIABLES,
    archive_records,
    print_archive,
    retention_step,
)
from serverless_retry_tools.local.demos.demo_frame import (
    CLIENT_CONFIG,
    ExampleOptions,
    ExampleRun,
    ProgressLines,
    find_repo_root,
    run_example,
    run_until_settled,
    write_accounting,
)
from serverless_retry_tools.local.demos.demo_queues import (
    queue_counts,
    queue_depth,
    read_log_lines,
    receive_all,
    send_items,
)
from serverless_retry_tools.local.demos.scheduled_workload import LABELS, build_workload
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent

__all__ = ["DemoOptions", "demo_main", "find_repo_root", "run_demo"]

EXAMPLE = "scheduled-retry"


@dataclass
class DemoOptions(ExampleOptions):
    orders: int = 100
    # The module default: the queue's visibility timeout is 6 x this = 180 logical seconds, which
    # holds at the demo's scale (1.8 real seconds at x100) while a function has 30 real seconds.
    function_timeout: int = 30


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


def run_demo(options: DemoOptions, stream: TextIO = sys.stdout) -> int:
    return run_example(
        EXAMPLE,
        options,
        ProgressLines(stream),
        lambda run: _exercise(run, options),
        variables={"function_timeout": options.function_timeout, **ARCHIVE_VARIABLES},
    )


def _exercise(run: ExampleRun, options: DemoOptions) -> int:
    emulator, outputs, out = run.emulator, run.outputs, run.out
    items = build_workload(options.orders, seed=options.seed)
    kwargs = emulator.client_kwargs()
    sqs = boto3.client("sqs", config=CLIENT_CONFIG, **kwargs)
    scheduler = boto3.client("scheduler", config=CLIENT_CONFIG, **kwargs)
    logs = boto3.client("logs", config=CLIENT_CONFIG, **kwargs)
    s3 = boto3.client("s3", config=CLIENT_CONFIG, **kwargs)
    queue_url, function = outputs["queue_url"], outputs["function_name"]
    location = str(outputs["archive_location"])
    terminal = {"exhausted": outputs["exhausted_queue_url"], "dlq": outputs["dlq_url"]}
    group = outputs.get("schedule_group_name")
    live = _Live()

    def on_event(event: RuntimeEvent) -> None:
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
        work_dir=run.work_dir / "runtime",
        on_event=on_event,
        log_tap=live,
    )
    labels = Counter(item.label for item in items)
    out(
        f"sending {len(items)} messages to {queue_url.rsplit('/', 1)[-1]}: "
        + ", ".join(f"{label} {labels[label]}" for label in LABELS if labels[label])
    )
    sent = send_items(sqs, queue_url, items)

    def in_transit() -> dict[str, int]:
        schedules = len(scheduler.list_schedules(GroupName=group)["Schedules"]) if group else 0
        # A terminal message is final once the archiver has taken it from its queue into S3.
        to_archive = {f"to_archive_{place}": queue_depth(sqs, url) for place, url in terminal.items()}
        return {**queue_counts(sqs, queue_url), "schedules": schedules, **to_archive}

    def progress(counts: Mapping[str, int]) -> list[str]:
        return [
            f"queue: {counts['visible']} waiting, {counts['delayed']} delayed, {counts['in_flight']} in flight",
            f"schedules {counts['schedules']}",
            f"to archive {counts['to_archive_exhausted'] + counts['to_archive_dlq']}",
            f"processed {live.processed()}",
            f"invocations {runtime.functions.invocations}",
        ]

    done = run_until_settled(
        runtime,
        out,
        in_transit=in_transit,
        progress=progress,
        quiet_checks=2,
        deadline_seconds=options.deadline_seconds,
        finals="message",
        summary=lambda: (
            f"{runtime.stats['batches']} batches, {runtime.stats['schedules_fired']} schedules fired"
        ),
    )
    archived = archive_records(s3, location)
    # Anything the archiver has not taken yet still counts where it is (nothing, once settled).
    finals = [parse_archived(r) for r in archived] + [
        parse_final(place, m) for place, url in terminal.items() for m in receive_all(sqs, url, len(sent))
    ]
    evidence = parse_log_lines(read_log_lines(logs, f"/aws/lambda/{function}"))
    accounting = account(sent, finals, evidence)
    out(stamp=False)
    print_fates(accounting, out, label_order=LABELS)
    ok = print_totals(accounting, len(sent), out)
    print_archive(location, archived, out)
    retention = retention_step(
        run,
        location=location,
        queue_url=terminal["exhausted"],
        queue_label="retry-exhausted queue",
        filters=("--outcome", "exhausted", "--error-type", "TimeoutError"),
        redrive_options=("--reset-attempts",),  # a fresh budget: it goes through its retries again
        in_transit=in_transit,
        processed=lambda message_id: (
            message_id in parse_log_lines(read_log_lines(logs, f"/aws/lambda/{function}")).successes
        ),
    )
    write_accounting(
        run.work_dir,
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
    )
    return 0 if ok and done and retention.ok else 1


def demo_main(args: Any, stream: TextIO = sys.stdout) -> int:
    options = DemoOptions.from_args(args, orders=args.orders, function_timeout=args.function_timeout)
    return run_demo(options, stream)

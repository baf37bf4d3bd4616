"""``serverless-retry demo native-retry``: pattern 3 (native SQS retry) told on the local emulator.

The story of ``examples/native-retry`` (orders in :mod:`serverless_retry_tools.local.demos.native_workload`):

1. the buggy release is applied; orders arrive (two of them sent twice); every delivery fails and
   goes back to the queue as a batch item failure;
2. once every order has failed ``failed_receives_before_fix`` receive(s), the story checks that all
   of them wait in the queue: none lost, none in the DLQ (each is within its maxReceiveCount of 5),
   none booked;
3. the fix is deployed by a variable change and a second apply while the runtime keeps running,
   through the documented sandbox path: ``serverless-retry local apply --ready-file F --var
   release=fixed`` (:mod:`serverless_retry_tools.local.sandbox.reapply`), run as a command against the
   demo's ready file; each order comes back when its visibility timeout ends and is booked, with no
   redrive;
4. new orders that crash right after their booking, and copies of backlog orders, are sent; SQS
   delivers the crashed ones again and the idempotency layer answers every copy;
5. every message is accounted for with the same table as the scheduled-retry demo
   (:mod:`serverless_retry_tools.local.demos.accounting`), and the ledger must hold exactly one entry per
   order although some orders were delivered more than once. The example runs with its archive on
   (:mod:`serverless_retry_tools.local.demos.demo_archive`): an order SQS dead-lettered would be counted
   where the archiver put it; with the fix in time the DLQ, and so the archive, stays empty.

Timing: what bounds it. Function execution and ``terraform apply`` take real time; the queue's
visibility timeout V is logical (6 x the function timeout = 180 logical seconds for the default 30 s).
An order is received at most maxReceiveCount (5) times, V apart, so the fix must be live (the
function's handler switched) less than 4 V after the order was sent, or the order goes to the DLQ.
The fix is applied once every order failed its first receive, so the second apply has 4 V minus that
first round. At the default x6 a V is 30 real seconds: ~110 s for an apply whose handler switch was
measured at 27-52 s with load averages of 7-14 on 2 cores (other work running) and takes about 10 s on
a quiet machine. Meanwhile the orders keep failing, a V apart, and stay in the queue. The
crash-after-write orders are sent after the fix, so their extra receive costs no budget. The report
prints the margin the run had: a lower bound, measured from the moment of sending.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import boto3
from serverless_retry.archive.record import ArchiveRecord

from serverless_retry_tools.local.demos.accounting import (
    Accounting,
    SentMessage,
    account,
    json_records,
    parse_archived,
    parse_final,
    parse_log_lines,
)
from serverless_retry_tools.local.demos.accounting_report import print_fates, print_totals
from serverless_retry_tools.local.demos.demo_archive import ARCHIVE_VARIABLES, archive_records, print_archive
from serverless_retry_tools.local.demos.demo_frame import (
    CLIENT_CONFIG,
    ExampleOptions,
    ExampleRun,
    ProgressLines,
    logical_duration,
    logical_line,
    run_example,
    write_accounting,
)
from serverless_retry_tools.local.demos.demo_queues import (
    queue_counts,
    queue_depth,
    read_log_lines,
    receive_all,
    send_items,
)
from serverless_retry_tools.local.demos.native_workload import (
    LABELS,
    NativeWorkload,
    build_native_workload,
    expected_replays,
)
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.emulator_contract import write_json_atomically
from serverless_retry_tools.local.runtime.runtime import Runtime, RuntimeEvent
from serverless_retry_tools.local.sandbox.ready_file import sandbox_info
from serverless_retry_tools.local.sandbox.terraform import TerraformError

__all__ = [
    "FIX",
    "NativeOptions",
    "StoryResult",
    "check_bookings",
    "fix_command",
    "fix_through_sandbox",
    "parse_bookings",
    "report",
    "run_native_demo",
    "run_story",
]

EXAMPLE = "native-retry"
_FAILED = "processing failed; retry"
_ACCEPTED = "order accepted"
_WRITTEN = "ledger entry written"

FIXED_HANDLER = "native_orders.fixed.handler"
FIX = {"release": "fixed"}  # the variable the fix changes

Printer = Callable[[str], None]


@dataclass
class NativeOptions(ExampleOptions):
    # 180 logical seconds of visibility timeout = 30 real seconds: see the module docstring.
    clock_scale: float = 6.0
    deadline_seconds: float = 300.0
    orders: int = 40
    function_timeout: int = 30
    failed_receives_before_fix: int = 1


@dataclass(frozen=True)
class Layout:
    """What the story needs of the applied example, from its outputs."""

    queue_url: str
    dlq_url: str
    function_name: str
    ledger_table: str
    visibility_timeout_seconds: int
    max_receive_count: int
    archive_location: str | None = None  # s3://bucket/prefix/ with the archive on

    @classmethod
    def from_outputs(cls, outputs: dict[str, Any]) -> Layout:
        return cls(
            queue_url=outputs["queue_url"],
            dlq_url=outputs["dlq_url"],
            function_name=outputs["function_name"],
            ledger_table=outputs["ledger_table_name"],
            visibility_timeout_seconds=int(outputs["visibility_timeout_seconds"]),
            max_receive_count=int(outputs["max_receive_count"]),
            archive_location=str(outputs["archive_location"]) if outputs.get("archive_location") else None,
        )


@dataclass(frozen=True)
class Booking:
    """One ``order accepted`` record: a delivery that succeeded, booking or answered by idempotency."""

    message_id: str
    receive_count: int
    order_id: str
    entry_id: str
    replayed: bool


def parse_bookings(lines: Iterable[str]) -> tuple[list[Booking], Counter[str]]:
    """The handler's ``order accepted`` records (``replayed``: answered by idempotency) and its
    ``ledger entry written`` records counted per order_id (one per write, whichever delivery did it)."""
    accepted: list[Booking] = []
    written: Counter[str] = Counter()
    for record in json_records(lines):
        if record.get("message") == _WRITTEN:
            written[str(record.get("order_id", ""))] += 1
        elif record.get("message") == _ACCEPTED:
            accepted.append(
                Booking(
                    message_id=str(record.get("id", "")),
                    receive_count=int(record.get("attempt") or 0),
                    order_id=str(record.get("order_id", "")),
                    entry_id=str(record.get("entry_id", "")),
                    replayed=bool(record.get("replayed")),
                )
            )
    return accepted, written


@dataclass
class StoryResult:
    sent: list[SentMessage]
    labels: dict[str, str]  # message id -> workload label
    accounting: Accounting
    ledger: dict[str, int]  # order_id -> ledger entries
    orders: set[str]
    bookings: list[Booking]
    writes: Counter[str]  # order_id -> ledger writes the function logged
    expected_replays: int
    visibility_timeout_seconds: int
    max_receive_count: int
    clock_scale: float
    archive_location: str | None = None
    archived: list[ArchiveRecord] = field(default_factory=list)
    bug_snapshot: dict[str, int] = field(default_factory=dict)
    fix_live_logical_s: float | None = None  # since the backlog was sent
    apply_seconds: float | None = None
    switched_after_seconds: float | None = None  # into the apply, when the handler changed
    problems: list[str] = field(default_factory=list)

    @property
    def replays(self) -> Counter[str]:
        return Counter(self.labels.get(b.message_id, "?") for b in self.bookings if b.replayed)

    @property
    def margin_logical_s(self) -> float | None:
        """A lower bound of the logical seconds between the fix going live and the earliest moment an
        order sent with the backlog could have had its last receive: (maxReceiveCount - 1) x V after
        it was sent (its first receive came later than that)."""
        if self.fix_live_logical_s is None:
            return None
        return (self.max_receive_count - 1) * self.visibility_timeout_seconds - self.fix_live_logical_s

    @property
    def ok(self) -> bool:
        mismatched = [f for f in self.accounting.fates if f.sent.expected != f.outcome]
        return self.accounting.balanced and not mismatched and not self.problems


class _Watch:
    """The function's log lines as they are shipped (JSON ones), and the failed receives per message."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.lines: list[str] = []
        self.failed: dict[str, int] = defaultdict(int)  # message id -> failed receives seen

    def __call__(self, function: str, line: str) -> None:
        if not line.startswith("{"):
            return
        with self._lock:
            self.lines.append(line)
        if _FAILED not in line:
            return
        try:
            record = json.loads(line)
        except ValueError:
            return
        ident = record.get("retry_id") if isinstance(record, dict) else None
        if isinstance(ident, str):
            with self._lock:
                self.failed[ident] += 1

    def failed_at_least(self, ids: Iterable[str], n: int) -> bool:
        with self._lock:
            return all(self.failed.get(i, 0) >= n for i in ids)

    def failures(self) -> int:
        with self._lock:
            return sum(self.failed.values())

    def most_failed(self) -> int:
        with self._lock:
            return max(self.failed.values(), default=0)

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self.lines)


def _watch_handler(
    lam: Any, function: str, handler: str, logical: Callable[[], float], stop: threading.Event
) -> Future[tuple[float, float] | None]:
    """(logical seconds, monotonic time) at which the function's handler becomes ``handler``, polled
    while the apply runs; None once ``stop`` is set or after 15 minutes."""
    future: Future[tuple[float, float] | None] = Future()

    def poll() -> None:
        end = time.monotonic() + 900
        while time.monotonic() < end and not stop.is_set():
            try:
                if lam.get_function_configuration(FunctionName=function)["Handler"] == handler:
                    future.set_result((logical(), time.monotonic()))
                    return
            except Exception:  # a transient emulator error: poll again
                pass
            stop.wait(0.25)
        future.set_result(None)

    threading.Thread(target=poll, name="watch-handler", daemon=True).start()
    return future


def _ledger(dynamodb: Any, table: str) -> dict[str, int]:
    entries: Counter[str] = Counter()
    for page in dynamodb.get_paginator("scan").paginate(TableName=table, ProjectionExpression="order_id"):
        entries.update(item["order_id"]["S"] for item in page.get("Items", []))
    return dict(entries)


def _labels(items: Iterable[Any]) -> str:
    counts = Counter(item.label for item in items)
    return ", ".join(f"{label} {counts[label]}" for label in LABELS if counts[label])


def run_story(
    outputs: dict[str, Any],
    *,
    emulator: Emulator,
    workload: NativeWorkload,
    deploy_fix: Callable[[], None],
    work_dir: Path,
    failed_receives_before_fix: int = 1,
    wave_after_drain: bool = True,
    deadline_seconds: float = 300.0,
    out: Printer = lambda text: None,
) -> StoryResult:
    """Run the story on an example applied with ``release = "buggy"``; ``deploy_fix`` applies the fix.

    ``wave_after_drain=False`` sends the after-fix orders as soon as the fix is live rather than once
    the backlog drained: quicker, with the same invariants (whichever copy of an order comes first
    books it; every other delivery of it is answered by idempotency)."""
    layout = Layout.from_outputs(outputs)
    kwargs = emulator.client_kwargs()
    sqs = boto3.client("sqs", config=CLIENT_CONFIG, **kwargs)
    dynamodb = boto3.client("dynamodb", config=CLIENT_CONFIG, **kwargs)
    logs = boto3.client("logs", config=CLIENT_CONFIG, **kwargs)
    lam = boto3.client("lambda", config=CLIENT_CONFIG, **kwargs)
    problems: list[str] = []
    started = time.monotonic()
    end = started + deadline_seconds
    clock = emulator.clock  # the logical clock the queue runs on (the runtime reads the same one)
    t0 = clock.now()

    def logical() -> float:
        return (clock.now() - t0).total_seconds()

    def on_event(event: RuntimeEvent) -> None:
        if event.kind in ("error", "warning"):
            out(f"runtime {event.kind}: {event.detail}")

    watch = _Watch()
    runtime = Runtime(
        emulator.url, region=emulator.region, work_dir=work_dir / "runtime", on_event=on_event, log_tap=watch
    )
    last = [0.0]

    def progress(force: bool = False) -> None:
        if not force and time.monotonic() - last[0] < 4:
            return
        last[0] = time.monotonic()
        counts = queue_counts(sqs, layout.queue_url)
        bookings, writes = parse_bookings(watch.snapshot())
        out(
            logical_line(
                logical(),
                f"queue: {counts['visible']} waiting, {counts['in_flight']} in flight",
                f"DLQ {queue_depth(sqs, layout.dlq_url)}",
                f"failed receives {watch.failures()}",
                f"booked {sum(writes.values())}, answered by idempotency {sum(1 for b in bookings if b.replayed)}",
                f"ledger {sum(_ledger(dynamodb, layout.ledger_table).values())}",
            )
        )

    def wait(condition: Callable[[], bool], what: str) -> bool:
        while time.monotonic() < end:
            if condition():
                return True
            progress()
            time.sleep(0.5)
        problems.append(f"the deadline ({deadline_seconds:.0f} s) passed before {what}")
        out(f"deadline passed before {what}")
        return False

    quiet = [0]

    def drained() -> bool:
        # With the archive, a dead-lettered order is final once the archiver has taken it.
        urls = [layout.queue_url] + ([layout.dlq_url] if layout.archive_location else [])
        quiet[0] = quiet[0] + 1 if not any(queue_depth(sqs, url) for url in urls) else 0
        return quiet[0] >= 2

    out(
        f"the buggy release is live; sending {len(workload.during_bug)} messages for "
        f"{len({i.order_id for i in workload.during_bug})} orders: {_labels(workload.during_bug)}"
    )
    sent = send_items(sqs, layout.queue_url, workload.during_bug)
    result = StoryResult(
        sent=sent,
        labels={s.message_id: s.label for s in sent},
        accounting=account([], [], parse_log_lines([])),
        ledger={},
        orders=workload.order_ids,
        bookings=[],
        writes=Counter(),
        expected_replays=expected_replays(workload.items),
        visibility_timeout_seconds=layout.visibility_timeout_seconds,
        max_receive_count=layout.max_receive_count,
        clock_scale=clock.scale,
        archive_location=layout.archive_location,
        problems=problems,
    )
    stop_watching = threading.Event()
    runtime.start()
    try:
        n = failed_receives_before_fix
        ids = [s.message_id for s in sent]
        if wait(lambda: watch.failed_at_least(ids, n), f"every message failed {n} receive(s)"):
            progress(force=True)
            waiting, dead = queue_depth(sqs, layout.queue_url), queue_depth(sqs, layout.dlq_url)
            booked = sum(_ledger(dynamodb, layout.ledger_table).values())
            result.bug_snapshot = {"sent": len(sent), "waiting": waiting, "dlq": dead, "ledger": booked}
            out(
                f"bug live: every message failed {n} receive(s) and went back to the queue; {waiting} of "
                f"{len(sent)} wait there, DLQ {dead}, ledger {booked}"
            )
            if (waiting, dead, booked) != (len(sent), 0, 0):
                problems.append(
                    f"while the bug was live: {waiting} of {len(sent)} messages in the queue, {dead} in "
                    f"the DLQ, {booked} ledger entries (expected {len(sent)}, 0, 0)"
                )
        out('deploying the fix (release = "fixed") while the runtime keeps running')
        applying = time.monotonic()
        switched = _watch_handler(lam, layout.function_name, FIXED_HANDLER, logical, stop_watching)
        deploy_fix()
        result.apply_seconds = time.monotonic() - applying
        try:
            live = switched.result(timeout=30)
        except FutureTimeout:
            live = None
        if live is None:
            problems.append(f"after the second apply the function's handler is not {FIXED_HANDLER}")
        else:
            result.fix_live_logical_s, result.switched_after_seconds = live[0], live[1] - applying
            out(
                f"fix applied in {result.apply_seconds:.0f} s; {FIXED_HANDLER} live "
                f"{result.switched_after_seconds:.0f} s into it, at logical +{logical_duration(live[0])}; until then "
                f"each message had failed at most {watch.most_failed()} receive(s), DLQ "
                f"{queue_depth(sqs, layout.dlq_url)}"
            )
        if wave_after_drain and wait(drained, "the backlog drained"):
            progress(force=True)
            out("the backlog drained, with no redrive")
        out(f"sending {len(workload.after_fix)} more: {_labels(workload.after_fix)}")
        later = send_items(sqs, layout.queue_url, workload.after_fix)
        result.sent = sent = sent + later
        result.labels.update({s.message_id: s.label for s in later})
        quiet[0] = 0
        if wait(drained, "every message was handled"):
            progress(force=True)
    finally:
        stop_watching.set()
        runtime.stop()
    if layout.archive_location is not None:
        s3 = boto3.client("s3", config=CLIENT_CONFIG, **kwargs)
        result.archived = archive_records(s3, layout.archive_location)
    finals = [parse_archived(r) for r in result.archived]
    finals += [parse_final("dlq", m) for m in receive_all(sqs, layout.dlq_url, len(sent))]
    lines = read_log_lines(logs, f"/aws/lambda/{layout.function_name}")
    result.accounting = account(sent, finals, parse_log_lines(lines))
    result.bookings, result.writes = parse_bookings(lines)
    result.ledger = _ledger(dynamodb, layout.ledger_table)
    check_bookings(result)
    out(f"story done in {time.monotonic() - started:.0f} s; runtime: {runtime.stats['batches']} batches")
    return result


def check_bookings(result: StoryResult) -> None:
    """Add a problem for anything but one ledger entry and one logged write per order, for the wrong
    number of deliveries answered by idempotency, and for a delivery beyond maxReceiveCount."""
    problems = result.problems
    wrong = {k: v for k, v in result.ledger.items() if v != 1 or k not in result.orders}
    missing = sorted(result.orders - set(result.ledger))
    if wrong:
        problems.append(f"ledger entries other than one per order: {dict(sorted(wrong.items()))}")
    if missing:
        problems.append(f"orders with no ledger entry: {', '.join(missing)}")
    written = {k: v for k, v in result.writes.items() if v != 1 or k not in result.orders}
    if written or set(result.writes) != result.orders:
        problems.append(
            f"ledger writes logged other than one per order: {dict(sorted(written.items()))}, "
            f"none for {', '.join(sorted(result.orders - set(result.writes))) or 'no order'}"
        )
    replayed = sum(result.replays.values())
    if replayed != result.expected_replays:
        problems.append(f"{replayed} deliveries answered by idempotency, expected {result.expected_replays}")
    late = [b for b in result.bookings if b.receive_count > result.max_receive_count]
    if late:
        problems.append(f"{len(late)} deliveries beyond maxReceiveCount {result.max_receive_count}")


def report(result: StoryResult, printer: ProgressLines) -> bool:
    """The shared accounting table and totals, then what this story adds: the ledger and the margin."""

    def out(text: str) -> None:
        printer(text, stamp=False)

    out("")
    print_fates(result.accounting, printer)
    accounted = print_totals(result.accounting, len(result.sent), printer)
    one_each = set(result.ledger) == result.orders and set(result.ledger.values()) == {1}
    out(
        f"ledger: {sum(result.ledger.values())} entries for {len(result.orders)} orders "
        + ("(exactly one each)" if one_each else "(NOT one each)")
    )
    replays = result.replays
    out(
        f"deliveries answered by idempotency (nothing booked): {sum(replays.values())}, "
        f"{result.expected_replays} expected ("
        + ", ".join(f"{label} {replays[label]}" for label in LABELS if replays[label])
        + ")"
    )
    done_at = Counter(b.receive_count for b in result.bookings)
    out(
        "acknowledged at receive: "
        + ", ".join(f"#{k} {v}" for k, v in sorted(done_at.items()))
        + f" (maxReceiveCount {result.max_receive_count}); the function logged {sum(result.writes.values())} "
        "ledger writes"
    )
    margin = result.margin_logical_s
    if margin is not None and result.fix_live_logical_s is not None:
        last = (result.max_receive_count - 1) * result.visibility_timeout_seconds
        out(
            f"fix live at logical +{logical_duration(result.fix_live_logical_s)} after sending; no backlog order could "
            f"have its receive #{result.max_receive_count} before +{logical_duration(last)}: margin at least "
            f"{margin:.0f} logical s ({margin / result.clock_scale:.0f} real s at x{result.clock_scale:g})"
        )
    if result.archive_location is not None:
        print_archive(result.archive_location, result.archived, printer)
    for problem in result.problems:
        out(f"DISCREPANCY: {problem}")
    ok = accounted and result.ok
    out("OK: every order booked exactly once, none lost, DLQ empty" if ok else "FAILED: see above")
    return ok


def run_native_demo(options: NativeOptions, stream: TextIO = sys.stdout) -> int:
    visibility = 6 * options.function_timeout
    return run_example(
        EXAMPLE,
        options,
        ProgressLines(stream),
        lambda run: _tell(run, options),
        variables={"function_timeout": options.function_timeout, "release": "buggy", **ARCHIVE_VARIABLES},
        about=" (native SQS retry)",
        clock_note=f": a visibility timeout of {visibility} logical s is {visibility / options.clock_scale:.0f} real s",
        applying=' release = "buggy"',
    )


def fix_command(ready_file: Path) -> list[str]:
    """The fix step as docs/patterns/native-retry.md shows it: a running sandbox re-applied."""
    fix = [arg for name, value in FIX.items() for arg in ("--var", f"{name}={value}")]
    return ["serverless-retry", "local", "apply", "--ready-file", str(ready_file), *fix]


def fix_through_sandbox(run: ExampleRun, ready_file: Path) -> Callable[[], None]:
    """Write the ready file of the demo's sandbox (the one ``serverless-retry local`` writes: the
    emulator, the state, TF_DATA_DIR, the CLI configuration, the variables), and return the fix step:
    :func:`fix_command` run as a command, which reads nothing but that file."""
    write_json_atomically(
        ready_file, sandbox_info(run.emulator, run.terraform, run.variables, run.outputs, run.work_dir)
    )

    def deploy_fix() -> None:
        command = fix_command(ready_file)
        run.out("$ " + " ".join(command))
        done = subprocess.run(
            [sys.executable, "-m", "serverless_retry_tools.cli", *command[1:]],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        for line in done.stdout.splitlines():  # Terraform's summary and the last line; the outputs are known
            if line.strip() and not line.startswith("output "):
                run.out("  " + line.strip())
        if done.returncode != 0:
            raise TerraformError(
                f"{' '.join(command)} failed (exit {done.returncode}): {done.stderr[-3000:]}"
            )
        run.variables.update(FIX)  # what is deployed now, for the destroy

    return deploy_fix


def _tell(run: ExampleRun, options: NativeOptions) -> int:
    ready_file = run.work_dir / "ready.json"
    try:
        deploy_fix = fix_through_sandbox(run, ready_file)
        return _story(run, options, deploy_fix)
    finally:
        ready_file.unlink(missing_ok=True)


def _story(run: ExampleRun, options: NativeOptions, deploy_fix: Callable[[], None]) -> int:
    result = run_story(
        run.outputs,
        emulator=run.emulator,
        workload=build_native_workload(options.orders, seed=options.seed),
        deploy_fix=deploy_fix,
        work_dir=run.work_dir,
        failed_receives_before_fix=options.failed_receives_before_fix,
        deadline_seconds=options.deadline_seconds,
        out=run.out,
    )
    ok = report(result, run.out)
    write_accounting(
        run.work_dir,
        [
            {
                "message_id": f.sent.message_id,
                "order_id": f.sent.order_id,
                "label": f.sent.label,
                "outcome": f.outcome,
                "receives": f.attempts,
                "ledger_entries": result.ledger.get(f.sent.order_id, 0),
            }
            for f in result.accounting.fates
        ],
    )
    return 0 if ok else 1


def native_demo_main(args: Any, stream: TextIO = sys.stdout) -> int:
    options = NativeOptions.from_args(args, orders=args.orders, function_timeout=args.function_timeout)
    return run_native_demo(options, stream)

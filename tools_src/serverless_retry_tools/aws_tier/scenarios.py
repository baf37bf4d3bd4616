"""The demos' scenarios, on any :class:`~serverless_retry_tools.aws_tier.targets.Target`.

Each sends the workload its demo sends (``local.demos.scheduled_workload``,
``local.demos.native_workload``, ``local.demos.selfheal_workload``), waits until nothing is in
transit, and accounts for every message with the demo's own accounting (``local.demos.accounting``,
``local.demos.native_demo.check_bookings``, ``local.demos.selfheal_accounting``), reading only
what a user could read on AWS: the final queues, the tables and the functions' CloudWatch Logs.
What differs from the demos is forced by real time:

- scheduled-retry: the long throttles ask for Retry-After 960 s instead of 1800 s (still above SQS's
  900 s, so they still go through the Scheduler) to keep the run near 20 minutes;
- native-retry: the fixed release from the start (the demo's bug-then-fix story needs a second
  apply inside four visibility timeouts, a race against Terraform on AWS);
- self-healing: each attempt is read from the functions' own log lines (every attempt logs one,
  with its message id) rather than from the local runtime's record of its invocations.

On AWS, log lines arrive a little after the messages settle: the accounting is read again, for up
to the target's ``log_delay_seconds``, until it balances.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from serverless_retry_tools.aws_tier.targets import Target
from serverless_retry_tools.local.demos.accounting import (
    Accounting,
    account,
    json_records,
    parse_final,
    parse_log_lines,
)
from serverless_retry_tools.local.demos.accounting_report import print_fates, print_totals
from serverless_retry_tools.local.demos.demo_frame import ProgressLines, write_accounting
from serverless_retry_tools.local.demos.demo_queues import (
    queue_counts,
    queue_depth,
    read_log_lines,
    receive_all,
    send_items,
)
from serverless_retry_tools.local.demos.native_demo import Layout as NativeLayout
from serverless_retry_tools.local.demos.native_demo import StoryResult, check_bookings, parse_bookings, report
from serverless_retry_tools.local.demos.native_workload import build_native_workload, expected_replays
from serverless_retry_tools.local.demos.scheduled_workload import LABELS, WorkItem, build_workload
from serverless_retry_tools.local.demos.selfheal_accounting import (
    Invocation,
    SelfHealingAccounting,
    parse_dead_letter,
    parse_exhausted,
    parse_redrive_logs,
)
from serverless_retry_tools.local.demos.selfheal_accounting import account as selfheal_account
from serverless_retry_tools.local.demos.selfheal_demo import Layout as SelfHealingLayout
from serverless_retry_tools.local.demos.selfheal_demo import publish, settled_probe
from serverless_retry_tools.local.demos.selfheal_workload import build_messages

__all__ = ["SCENARIOS", "Outcome", "Scenario", "aws_timed", "invocations_from_logs", "settle"]

LONG_RETRY_AFTER = 960  # above SQS's 900 s: the retry goes through the Scheduler


@dataclass
class Outcome:
    example: str
    ok: bool
    summary: str
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Scenario:
    example: str
    variables: Mapping[str, Any]  # besides name, package, region and the endpoint
    run: Callable[[Target, Mapping[str, Any], ProgressLines, Path], Outcome]
    # functions -> the recursive loop setting AWS should report (from the outputs)
    recursion: Callable[[Mapping[str, Any]], dict[str, str]]


def settle(
    target: Target,
    in_transit: Callable[[], Mapping[str, int]],
    out: ProgressLines,
    *,
    deadline_logical: float,
    quiet_checks: int = 3,
) -> bool:
    """Wait until ``in_transit`` counts nothing ``quiet_checks`` looks in a row (True), or the deadline
    (logical seconds, plus two real minutes of slack) passes (False). A progress line every ~30 s."""
    end = time.monotonic() + deadline_logical / target.scale + 120
    quiet, last = 0, 0.0
    while time.monotonic() < end:
        counts = in_transit()
        quiet = quiet + 1 if not any(counts.values()) else 0
        if quiet >= quiet_checks:
            return True
        if time.monotonic() - last >= 30:
            last = time.monotonic()
            out("in transit: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        time.sleep(target.poll_seconds)
    out(f"deadline passed ({deadline_logical:.0f} logical s) with messages in transit")
    return False


def _until_balanced(target: Target, read: Callable[[], Any], balanced: Callable[[Any], bool]) -> Any:
    """``read()`` again until ``balanced`` or the target's log delay passed (log lines come late on AWS)."""
    end = time.monotonic() + target.log_delay_seconds
    result = read()
    while not balanced(result) and time.monotonic() < end:
        time.sleep(max(1.0, min(15.0, target.poll_seconds * 2)))
        result = read()
    return result


def aws_timed(items: list[WorkItem]) -> list[WorkItem]:
    """The workload with every long throttle asking for ``LONG_RETRY_AFTER`` seconds."""
    out = []
    for item in items:
        if item.label == "long-throttle":
            body = json.loads(item.body)
            body["retry_after"] = LONG_RETRY_AFTER
            out.append(dataclasses.replace(item, body=json.dumps(body)))
        else:
            out.append(item)
    return out


# --- scheduled-retry ---------------------------------------------------------------------------------


def _scheduled_retry(
    target: Target, outputs: Mapping[str, Any], out: ProgressLines, work_dir: Path
) -> Outcome:
    sqs, scheduler, logs = target.client("sqs"), target.client("scheduler"), target.client("logs")
    queue_url, function, group = (
        outputs["queue_url"],
        outputs["function_name"],
        outputs.get("schedule_group_name"),
    )
    items = aws_timed(build_workload(100, seed=7))
    out(f"scheduled-retry: sending {len(items)} messages to {queue_url.rsplit('/', 1)[-1]}")
    sent = send_items(sqs, queue_url, items)

    def in_transit() -> dict[str, int]:
        schedules = len(scheduler.list_schedules(GroupName=group).get("Schedules", [])) if group else 0
        return {**queue_counts(sqs, queue_url), "schedules": schedules}

    done = settle(target, in_transit, out, deadline_logical=LONG_RETRY_AFTER + 1800)
    finals = [
        parse_final(place, m)
        for place, url in (("exhausted", outputs["exhausted_queue_url"]), ("dlq", outputs["dlq_url"]))
        for m in receive_all(sqs, url, len(sent))
    ]

    def read() -> Accounting:
        return account(sent, finals, parse_log_lines(read_log_lines(logs, f"/aws/lambda/{function}")))

    def balanced(a: Accounting) -> bool:
        return a.balanced and all(f.outcome == f.sent.expected for f in a.fates)

    accounting: Accounting = _until_balanced(target, read, balanced)
    print_fates(accounting, out, label_order=LABELS)
    ok = print_totals(accounting, len(sent), out) and done
    problems = [] if done else ["messages still in transit at the deadline"]
    long = [f for f in accounting.fates if f.sent.label == "long-throttle"]
    if not all("scheduler" in f.transports for f in long):
        problems.append(f"a Retry-After of {LONG_RETRY_AFTER} s did not go through the Scheduler")
    write_accounting(
        work_dir, [{"message_id": f.sent.message_id, "outcome": f.outcome} for f in accounting.fates]
    )
    totals = accounting.totals
    return Outcome(
        "scheduled-retry",
        ok and not problems,
        f"{len(sent)} sent: " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())),
        problems,
    )


# --- native-retry ----------------------------------------------------------------------------------


def _native_retry(target: Target, outputs: Mapping[str, Any], out: ProgressLines, work_dir: Path) -> Outcome:
    layout = NativeLayout.from_outputs(dict(outputs))
    sqs, dynamodb, logs = target.client("sqs"), target.client("dynamodb"), target.client("logs")
    workload = build_native_workload(20, seed=7)
    out(f"native-retry: sending {len(workload.items)} messages for {len(workload.order_ids)} orders")
    sent = send_items(sqs, layout.queue_url, workload.during_bug) + send_items(
        sqs, layout.queue_url, workload.after_fix
    )
    # Crash-after-write orders come back one visibility timeout later: a few of them, with margin.
    done = settle(
        target,
        lambda: {"queue": queue_depth(sqs, layout.queue_url)},
        out,
        deadline_logical=layout.max_receive_count * layout.visibility_timeout_seconds,
    )

    def read() -> StoryResult:
        lines = read_log_lines(logs, f"/aws/lambda/{layout.function_name}")
        finals = [parse_final("dlq", m) for m in receive_all(sqs, layout.dlq_url, len(sent))]
        bookings, writes = parse_bookings(lines)
        ledger: Counter[str] = Counter()
        for page in dynamodb.get_paginator("scan").paginate(
            TableName=layout.ledger_table, ProjectionExpression="order_id"
        ):
            ledger.update(item["order_id"]["S"] for item in page.get("Items", []))
        result = StoryResult(
            sent=sent,
            labels={s.message_id: s.label for s in sent},
            accounting=account(sent, finals, parse_log_lines(lines)),
            ledger=dict(ledger),
            orders=workload.order_ids,
            bookings=bookings,
            writes=writes,
            expected_replays=expected_replays(workload.items),
            visibility_timeout_seconds=layout.visibility_timeout_seconds,
            max_receive_count=layout.max_receive_count,
            clock_scale=target.scale,
        )
        check_bookings(result)
        return result

    result: StoryResult = _until_balanced(target, read, lambda r: r.ok)
    ok = report(result, out) and done
    write_accounting(
        work_dir, [{"message_id": f.sent.message_id, "outcome": f.outcome} for f in result.accounting.fates]
    )
    return Outcome(
        "native-retry",
        ok,
        f"{len(sent)} sent for {len(result.orders)} orders, ledger {sum(result.ledger.values())}, "
        f"answered by idempotency {sum(result.replays.values())}",
        list(result.problems) + ([] if done else ["messages still in the queue at the deadline"]),
    )


# --- self-healing ----------------------------------------------------------------------------------

_OK = {"charge accepted", "order audited", "invoice sent"}
_FAILED = {"charge failed: payment gateway unavailable": "HttpError"}
_STARTED = "invoicing"  # the invoice function's attempt: "invoice sent" follows unless it failed


def invocations_from_logs(
    logs: Any, functions: list[str], log_time_ms: Callable[[int], int] = int
) -> list[Invocation]:
    """One :class:`Invocation` per attempt each function logged (every attempt logs one line with the
    SNS message id; an invoice attempt that logged ``invoicing`` and not ``invoice sent`` failed with
    the KeyError it is written to raise)."""
    found: list[Invocation] = []
    for function in functions:
        started: dict[tuple[str, int], int] = {}
        finished: set[tuple[str, int]] = set()
        group = f"/aws/lambda/{function}"
        try:
            pages = list(logs.get_paginator("filter_log_events").paginate(logGroupName=group))
        except logs.exceptions.ResourceNotFoundException:
            continue
        for page in pages:
            for event in page.get("events", []):
                for record in json_records([str(event.get("message", ""))]):
                    message = record.get("message")
                    ident = str(record.get("retry_id") or record.get("message_id") or "")
                    attempt = int(record.get("attempt") or 1)
                    stamp = log_time_ms(int(event.get("timestamp", 0)))
                    if message in _OK:
                        finished.add((ident, attempt))
                        found.append(Invocation(function, ident, True, "", stamp))
                    elif message in _FAILED:
                        found.append(Invocation(function, ident, False, f"{_FAILED[message]}: logged", stamp))
                    elif message == _STARTED:
                        started[(ident, attempt)] = stamp
        found.extend(
            Invocation(function, ident, False, "KeyError: 'customer_id'", stamp)
            for (ident, attempt), stamp in started.items()
            if (ident, attempt) not in finished
        )
    return found


def _self_healing(target: Target, outputs: Mapping[str, Any], out: ProgressLines, work_dir: Path) -> Outcome:
    layout = SelfHealingLayout.from_outputs(outputs)
    clients = {s: target.client(s) for s in ("sqs", "sns", "scheduler", "logs")}
    messages = build_messages(5, layout.functions, seed=7)
    out(f"self-healing: publishing {len(messages)} messages to the orders and invoices topics")
    published = publish(clients["sns"], layout, messages)
    # The charge budget: 1 + 3 attempts, 10 + 20 + 40 s apart, each through the pipeline.
    done = settle(target, lambda: settled_probe(clients, layout), out, deadline_logical=900)
    functions = [layout.functions.charge, layout.functions.invoice, layout.functions.audit]
    limit = 4 * len(published) + 20
    finals = [
        parse_exhausted(m["Body"], m.get("MessageAttributes"))
        for m in receive_all(clients["sqs"], layout.exhausted_queue_url, limit)
    ]
    for place, url in layout.dlqs.items():
        finals.extend(parse_dead_letter(place, m["Body"]) for m in receive_all(clients["sqs"], url, limit))

    def read() -> SelfHealingAccounting:
        logs = clients["logs"]
        redrives = parse_redrive_logs(read_log_lines(logs, f"/aws/lambda/{layout.redrive_function}"))
        invocations = invocations_from_logs(logs, functions, target.log_time_ms)
        return selfheal_account(published, invocations, finals, redrives)

    result: SelfHealingAccounting = _until_balanced(target, read, lambda r: r.ok)
    totals = result.totals
    for d in result.deliveries:
        if not d.as_expected:
            out(
                f"UNEXPECTED: {d.message.key} {d.expected.function}: {d.outcome}, {d.attempts} attempt(s): "
                + "; ".join(d.problems),
                stamp=False,
            )
    out(
        ("OK" if result.ok else "FAILED") + ": " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())),
        stamp=False,
    )
    write_accounting(
        work_dir,
        [
            {
                "message_id": d.message.message_id,
                "function": d.expected.function,
                "outcome": d.outcome,
                "attempts": d.attempts,
            }
            for d in result.deliveries
        ],
    )
    return Outcome(
        "self-healing",
        result.ok and done,
        f"{len(published)} published = {len(result.deliveries)} deliveries: "
        + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())),
        [] if done else ["deliveries still in transit at the deadline"],
    )


SCENARIOS: dict[str, Scenario] = {
    "scheduled-retry": Scenario(
        "scheduled-retry",
        {"function_timeout": 30},
        _scheduled_retry,
        # The consumer sends retries to its own queue: the module sets Allow (modules/consumer).
        lambda o: {str(o["function_name"]): "Allow"},
    ),
    "native-retry": Scenario(
        "native-retry",
        {"release": "fixed", "function_timeout": 30},
        _native_retry,
        # A plain handler of the user's keeps Lambda's default.
        lambda o: {str(o["function_name"]): "Terminate"},
    ),
    "self-healing": Scenario(
        "self-healing",
        {},
        _self_healing,
        lambda o: {str(o["charge_function_name"]): "Terminate", str(o["audit_function_name"]): "Terminate"},
    ),
}

"""``serverless-retry simulate``: what a policy does to an error, attempt by attempt (no AWS).

It runs the consumer's own decision code (``serverless_retry.planning.plan_failure``) on a simulated
record: the same classification (``NonRetryableError`` is never retried, unmatched errors follow
``unmatched``), the same queue adjustments (FIFO ordered retries in place, FIFO unordered through the
Scheduler, delays longer than the retention as delay hops, the in-place expiry guard), the same
envelopes and jitter. Time is logical and starts at ``--start`` (default: now), the moment of the
first failure; an HTTP-date ``--retry-after`` is measured against it. ``attempt_rows()`` returns the
rows for other tools (cost, timeline).
"""

from __future__ import annotations

import argparse
import builtins
import json
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from serverless_retry import errors
from serverless_retry.envelope import Incoming, unwrap
from serverless_retry.errors import HttpError
from serverless_retry.planning import (
    DEFAULT_RETENTION_SECONDS,
    Copy,
    Final,
    InPlace,
    QueueFacts,
    RecordFacts,
    hop_limit,
    plan_failure,
)
from serverless_retry.policy import RetryPolicy

from serverless_retry_tools.attempt_rows import AttemptRow
from serverless_retry_tools.commands import simulate_report
from serverless_retry_tools.commands.args import (
    EXAMPLES_FORMATTER,
    UsageError,
    error_class_name,
    http_status,
    int_range,
    retry_after,
)
from serverless_retry_tools.policy_input import load_policy

__all__ = ["AttemptRow", "attempt_rows", "load_policy", "native_rows", "register", "synthetic_error"]

SOURCE = "arn:aws:sqs:us-east-1:123456789012:simulated"


def synthetic_error(error_type: str, status: int | None, message: str, retry_after: str | None) -> Exception:
    """An exception that classifies like the real one would: serverless_retry's own classes by name
    (NonRetryableError, RetryableError, HttpError), a builtin class when the name is one (so MRO matches
    such as OSError work), HttpError for a status, else a plain Exception subclass of that name (which
    ``unmatched`` decides, as for any error no rule names); ``pkg.mod.Name`` sets the module too."""
    if status is not None:
        return HttpError(status, message or f"HTTP {status}", retry_after=retry_after)
    module, _, name = error_type.rpartition(".")
    base = None if module else (getattr(errors, name, None) or getattr(builtins, name, None))
    error: Exception
    if isinstance(base, type) and issubclass(base, Exception) and base is not HttpError:
        error = base(message or name)
    else:
        cls = type(name, (Exception,), {"__module__": module or "simulated", "__qualname__": name})
        error = cls(message or name)
    if retry_after is not None:
        error.retry_after = retry_after  # type: ignore[attr-defined]
    return error


def attempt_rows(
    policy: RetryPolicy,
    make_error: Callable[[], BaseException],
    *,
    start: datetime,
    queue: QueueFacts | None = None,
    max_attempts: int = 50,
    seed: int = 0,
    message_id: str = "simulated-message",
    body: str = "{}",
) -> list[AttemptRow]:
    """Fail every attempt with ``make_error()`` and record what the consumer decides, until it stops
    retrying or ``max_attempts`` attempts ran. ``seed`` 0 is a deployed consumer's jitter seed."""
    queue = queue or QueueFacts()
    rows: list[AttemptRow] = []
    incoming: Incoming = unwrap(body, {}, message_id=message_id, source=SOURCE)
    now = start
    for attempt in range(1, max_attempts + 1):
        if queue.in_place:  # the message itself: sent at the start, counted by receives
            facts = RecordFacts(message_id, attempt, start, start)
            incoming = unwrap(body, {}, message_id=message_id, source=SOURCE, receive_count=attempt)
        else:  # a copy first received when its attempt runs
            facts = RecordFacts(f"{message_id}-{attempt}", 1, now, now)
        step = plan_failure(policy, queue, facts, incoming, make_error(), now=now, seed=seed)
        elapsed = (now - start).total_seconds()
        if isinstance(step, Final):
            rows.append(AttemptRow(attempt, step.outcome, 0, None, elapsed, reason=step.reason))
            return rows
        decision = step.decision
        delay = step.timeout_seconds if isinstance(step, InPlace) else step.delay_seconds
        hops = 0
        if isinstance(step, Copy) and step.transport == "sqs-hops":
            hops = max(1, math.ceil(delay / hop_limit(queue.retention_seconds)))
        next_at = now + timedelta(seconds=delay)
        rows.append(AttemptRow(attempt, "retry", delay, decision.transport, elapsed, hops, decision.reason))
        if isinstance(step, Copy):
            incoming = unwrap(step.body, {}, message_id=f"{message_id}-{attempt + 1}", source=SOURCE)
        now = next_at
    return rows


def native_rows(visibility_seconds: int, max_receive_count: int) -> list[AttemptRow]:
    """Native retry (a plain handler, the queue's redrive policy): a failing message is not deleted,
    so it reappears when its visibility timeout ends and is received again at once (pollers wait on
    the queue). Receive k runs at (k - 1) x visibility; after receive ``max_receive_count`` fails it
    is visible again at max_receive_count x visibility, and the next receive finds SQS has moved it
    to the DLQ: the last row's ``delay_seconds`` is that wait, one visibility timeout."""
    rows = [
        AttemptRow(
            k,
            "retry",
            visibility_seconds,
            "native",
            (k - 1) * visibility_seconds,
            0,
            f"not deleted: visible again after the {visibility_seconds} s visibility timeout",
        )
        for k in range(1, max_receive_count)
    ]
    last = (max_receive_count - 1) * visibility_seconds
    rows.append(
        AttemptRow(
            max_receive_count,
            "dead-letter",
            visibility_seconds,
            "native",
            last,
            0,
            f"receive {max_receive_count} of maxReceiveCount {max_receive_count}: SQS moves it to the DLQ "
            f"at {last + visibility_seconds} s",
        )
    )
    return rows


def _start(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be an ISO-8601 time such as 2026-11-30T10:00:00Z, got {text!r}"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _policy_rows(args: argparse.Namespace, start: datetime) -> tuple[list[AttemptRow], RetryPolicy]:
    policy = load_policy(args.policy)
    fifo = args.fifo is not None
    queue = QueueFacts(
        fifo=fifo,
        in_place=(fifo and args.fifo == "ordered") or policy.transport == "visibility",
        retention_seconds=args.retention,
        scheduler=not args.no_scheduler,
    )
    rows = attempt_rows(
        policy,
        lambda: synthetic_error(args.error, args.status, args.message, args.retry_after),
        start=start,
        queue=queue,
        max_attempts=args.max_attempts,
        seed=args.seed,
        message_id=args.message_id,
    )
    return rows, policy


def _check(args: argparse.Namespace) -> None:
    simulate_report.check_arguments(args)
    if args.native:
        given = [
            flag
            for flag, value in (("--policy", args.policy), ("--fifo", args.fifo), ("--status", args.status))
            if value is not None
        ]
        if given:
            raise UsageError(
                f"--native: {', '.join(given)} do not apply: native retry has no policy, only the queue's "
                "visibility timeout and maxReceiveCount (--visibility-timeout, --max-receive-count)"
            )
    elif args.policy is None:
        raise UsageError("--policy: required (or --native, to model the queue's own redrive policy)")


def _row_json(row: AttemptRow, start: datetime) -> dict[str, Any]:
    wait_ends = start + timedelta(seconds=row.at_seconds + row.delay_seconds)
    return {
        "attempt": row.attempt,
        "action": row.action,
        "delay_seconds": row.delay_seconds,
        "transport": row.transport,
        "hops": row.hops,
        "at_seconds": row.at_seconds,
        "next_at": f"{wait_ends:%Y-%m-%dT%H:%M:%SZ}" if row.retried else None,
        "dead_letter_at_seconds": row.at_seconds + row.delay_seconds if row.action == "dead-letter" else None,
        "reason": row.reason,
    }


def cmd_simulate(args: argparse.Namespace) -> int:
    _check(args)
    start: datetime = args.start or datetime.now(UTC).replace(microsecond=0)
    fifo = args.fifo is not None
    if args.native:
        rows = native_rows(args.visibility_timeout, args.max_receive_count)
        budget: int | None = args.max_receive_count
        max_age: float | None = None
        title = (
            f"native retry: visibility {args.visibility_timeout} s, maxReceiveCount {args.max_receive_count}"
        )
    else:
        rows, policy = _policy_rows(args, start)
        # The budget this error is held to: its rule's max_attempts when the rule sets one.
        matched = policy.match(synthetic_error(args.error, args.status, args.message, args.retry_after))
        budget = matched[1].max_attempts if matched and matched[1].max_attempts else policy.max_attempts
        max_age = policy.max_age_seconds
        title = f"{args.error if args.status is None else f'HTTP {args.status}'}: retry timeline"
    if args.json:
        document: dict[str, Any] = {
            "start": f"{start:%Y-%m-%dT%H:%M:%SZ}",
            "native": args.native,
            "attempts": [_row_json(row, start) for row in rows],
            "stopped_at_max_attempts": bool(rows and rows[-1].retried),
        }
        document.update(simulate_report.json_parts(rows, args, fifo=fifo))
        if args.plot:
            document["plot"] = str(
                simulate_report.plot(rows, args, max_attempts=budget, max_age_seconds=max_age, title=title)
            )
        print(json.dumps(document, indent=2))
        return 0
    _print_rows(args, rows, start, fifo)
    simulate_report.emit(rows, args, max_attempts=budget, max_age_seconds=max_age, title=title, fifo=fifo)
    return 0


def _print_rows(args: argparse.Namespace, rows: list[AttemptRow], start: datetime, fifo: bool) -> None:
    if args.native:
        print(
            f"first receive at {start:%Y-%m-%dT%H:%M:%SZ} (--start); native retry: visibility timeout "
            f"{args.visibility_timeout} s, maxReceiveCount {args.max_receive_count}"
        )
    else:
        kind = f"FIFO {args.fifo}" if fifo else "standard"
        print(
            f"first failure at {start:%Y-%m-%dT%H:%M:%SZ} (--start); {kind} queue, retention {args.retention} s; "
            f"jitter seed {args.seed} for message id {args.message_id!r}"
        )
    print(
        f"{'attempt':>7}  {'action':<18} {'delay_s':>8}  {'transport':<10} {'hops':>4}  "
        f"{'next attempt at (logical)':<25} reason"
    )
    for row in rows:
        next_at = start + timedelta(seconds=row.at_seconds + row.delay_seconds)
        when = f"{next_at:%Y-%m-%dT%H:%M:%SZ}" if row.retried else "-"
        print(
            f"{row.attempt:>7}  {row.action:<18} {row.delay_seconds:>8}  {row.transport or '-':<10} "
            f"{row.hops or '-':>4}  {when:<25} {row.reason}"
        )
    if rows and rows[-1].retried:
        print(f"(stopped after {args.max_attempts} attempts: raise --max-attempts to see more)")
    if args.native:
        dlq = rows[-1].at_seconds + rows[-1].delay_seconds
        print(
            f"in the DLQ {dlq:g} s after the first receive: maxReceiveCount {args.max_receive_count} x "
            f"visibility {args.visibility_timeout} s (the last receive at {rows[-1].at_seconds:g} s)"
        )


EXAMPLES = """\
examples:
  serverless-retry simulate --policy policy.json --error TimeoutError
  serverless-retry simulate --policy policy.json --error TimeoutError --rate 5000/s
  serverless-retry simulate --native --visibility-timeout 180 --max-receive-count 5 --plot native.png
  serverless-retry simulate --policy policy.json --status 429 --retry-after 120 --plot timeline.png
  serverless-retry simulate --policy '{"max_attempts": 3}' --error ValueError --fifo ordered --no-cost
"""


def register(sub: Any) -> None:
    sim = sub.add_parser(
        "simulate",
        help="show what a policy does to an error, attempt by attempt (the consumer's own decisions)",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FORMATTER,
    )
    sim.add_argument("--policy", help="policy JSON, inline or a file path (required unless --native)")
    sim.add_argument(
        "--error",
        type=error_class_name,
        default="RuntimeError",
        help="exception class name (default RuntimeError)",
    )
    sim.add_argument("--status", type=http_status, help="an HTTP status: simulates HttpError(status)")
    sim.add_argument("--message", default="", help="the error message (for message_regex rules)")
    sim.add_argument(
        "--retry-after",
        type=retry_after,
        help="a Retry-After value the error carries (seconds or HTTP date)",
    )
    sim.add_argument(
        "--start",
        type=_start,
        help="time of the first failure, ISO-8601 UTC (default: now); HTTP dates count from it",
    )
    sim.add_argument(
        "--fifo", choices=("ordered", "unordered"), help="the source is a FIFO queue in this order mode"
    )
    sim.add_argument(
        "--retention",
        type=int_range(60, 1_209_600),
        default=DEFAULT_RETENTION_SECONDS,
        help="source retention, seconds",
    )
    sim.add_argument(
        "--no-scheduler", action="store_true", help="no schedule group configured: long waits hop"
    )
    sim.add_argument(
        "--seed",
        type=int_range(-(2**63), 2**63 - 1),
        default=0,
        help="jitter seed (default 0, a deployed consumer's)",
    )
    sim.add_argument("--message-id", default="simulated-message", help="the message id jitter is drawn for")
    sim.add_argument(
        "--max-attempts", type=int_range(1, 10_000), default=50, help="stop after this many attempts"
    )
    native = sim.add_argument_group("native retry (a plain handler and the queue's redrive policy)")
    native.add_argument(
        "--native",
        action="store_true",
        help="model SQS's own retry: no policy, the message reappears each visibility timeout",
    )
    native.add_argument(
        "--visibility-timeout",
        type=int_range(0, 43_200),
        default=30,
        help="--native: the queue's visibility timeout, seconds (default 30, SQS's)",
    )
    native.add_argument(
        "--max-receive-count",
        type=int_range(1, 1000),
        default=5,
        help="--native: the redrive policy's maxReceiveCount (default 5)",
    )
    simulate_report.add_arguments(sim)
    sim.add_argument(
        "--json", action="store_true", help="the attempts, cost and capacity as one JSON document"
    )
    sim.set_defaults(func=cmd_simulate)

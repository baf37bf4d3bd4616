"""The ``serverless-retry`` command: simulate a policy, inspect and redrive the exhausted queue, and
(from serverless_retry_tools.local) run the local emulator and the demo."""

from __future__ import annotations

import argparse
import builtins
import json
import random
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from serverless_retry.clock import FrozenClock
from serverless_retry.errors import HttpError, PolicyError, RetryableError
from serverless_retry.policy import RetryPolicy
from serverless_retry.queue_redrive import ExhaustedMessage, iter_exhausted, redrive, release


def _load_policy(text: str) -> RetryPolicy:
    """A policy from inline JSON or from a file path."""
    path = Path(text)
    source = path.read_text() if not text.lstrip().startswith("{") and path.exists() else text
    return RetryPolicy.from_json(source)


def synthetic_error(error_type: str, status: int | None, message: str, retry_after: str | None) -> Exception:
    """An exception that classifies like the real one would: a builtin class when the name is one
    (so MRO matches such as OSError work), HttpError for a status, else a class of that name."""
    if status is not None:
        error: Exception = HttpError(status, message or f"HTTP {status}", retry_after=retry_after)
        return error
    base = getattr(builtins, error_type, None)
    if isinstance(base, type) and issubclass(base, Exception):
        error = base(message or error_type)
    else:
        cls = type(error_type, (RetryableError,), {})
        error = cls(message or error_type)
    if retry_after is not None:
        error.retry_after = retry_after  # type: ignore[attr-defined]
    return error


def cmd_simulate(args: argparse.Namespace) -> int:
    policy = _load_policy(args.policy)
    rand = random.Random(args.seed)
    clock = FrozenClock()
    first = clock.now()
    previous: float | None = None
    print(
        f"{'attempt':>7}  {'action':<14} {'delay_s':>8}  {'transport':<10} {'next attempt at (logical)':<25} reason"
    )
    for attempt in range(1, args.max_attempts + 1):
        error = synthetic_error(args.error, args.status, args.message, args.retry_after)
        decision = policy.decide(
            error, attempt=attempt, first_failed_at=first, now=clock.now(), rand=rand, previous_delay=previous
        )
        when = (
            (clock.now() + timedelta(seconds=decision.delay_seconds)).isoformat()
            if decision.action == "retry"
            else "-"
        )
        print(
            f"{attempt:>7}  {decision.action:<14} {decision.delay_seconds:>8}  {decision.transport or '-':<10} "
            f"{when:<25} {decision.reason}"
        )
        if decision.action != "retry":
            return 0
        previous = float(decision.delay_seconds)
        clock.advance(decision.delay_seconds)
    print(f"(stopped after {args.max_attempts} attempts: raise --max-attempts to see more)")
    return 0


def _sqs() -> Any:
    import boto3  # the CLI's AWS commands only; simulate needs no AWS

    return boto3.client("sqs")


def cmd_inspect(args: argparse.Namespace) -> int:
    sqs = _sqs()
    rows = list(iter_exhausted(sqs, args.queue_url, limit=args.max, visibility=30))
    for message in rows:
        release(sqs, args.queue_url, message)
    if args.json:
        print(json.dumps([m.__dict__ | {"receipt_handle": None} for m in rows], indent=2, default=str))
        return 0
    print(f"{'id':<38} {'outcome':<20} {'attempt':>7}  {'error_type':<22} reason")
    for m in rows:
        print(f"{m.envelope_id:<38} {m.outcome:<20} {m.attempt:>7}  {m.error_type:<22} {m.reason}")
    print(f"{len(rows)} message(s) shown; none removed")
    return 0


def cmd_redrive(args: argparse.Namespace) -> int:
    def select(message: ExhaustedMessage) -> bool:
        if args.outcome and message.outcome not in args.outcome:
            return False
        return not (args.error_type and message.error_type not in args.error_type)

    report = redrive(
        _sqs(),
        from_queue_url=args.from_queue_url,
        to_queue_url=args.to_queue_url,
        limit=args.max,
        select=select,
        dry_run=args.dry_run,
    )
    verb = "would redrive" if args.dry_run else "redriven"
    print(
        f"{verb}: {len(report.redriven)}, left in place: {len(report.skipped)}, failed: {len(report.failed)}"
    )
    for message, why in report.failed:
        print(f"  failed {message.envelope_id}: {why}", file=sys.stderr)
    return 1 if report.failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="serverless-retry", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="show the delays a policy gives an error, attempt by attempt")
    sim.add_argument("--policy", required=True, help="policy JSON, inline or a file path")
    sim.add_argument("--error", default="RuntimeError", help="exception class name (default RuntimeError)")
    sim.add_argument("--status", type=int, help="an HTTP status: simulates HttpError(status)")
    sim.add_argument("--message", default="", help="the error message (for message_regex rules)")
    sim.add_argument("--retry-after", help="a Retry-After value the error carries (seconds or HTTP date)")
    sim.add_argument("--seed", type=int, default=0, help="seed for the jitter (default 0)")
    sim.add_argument("--max-attempts", type=int, default=50, help="stop after this many attempts")
    sim.set_defaults(func=cmd_simulate)

    ins = sub.add_parser("inspect", help="list messages in a retry-exhausted queue (non-destructive)")
    ins.add_argument("--queue-url", required=True)
    ins.add_argument("--max", type=int, default=50)
    ins.add_argument("--json", action="store_true")
    ins.set_defaults(func=cmd_inspect)

    red = sub.add_parser("redrive", help="send exhausted messages back to their queue with a fresh budget")
    red.add_argument("--from-queue-url", required=True, help="the retry-exhausted queue")
    red.add_argument("--to-queue-url", required=True, help="the source queue")
    red.add_argument("--outcome", action="append", help="only these outcomes (repeatable)")
    red.add_argument("--error-type", action="append", help="only these error types (repeatable)")
    red.add_argument("--max", type=int, default=100)
    red.add_argument("--dry-run", action="store_true")
    red.set_defaults(func=cmd_redrive)

    try:
        from serverless_retry_tools.local.cli import register
    except ImportError:  # the local runtime needs the [local] extra (moto)
        pass
    else:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except PolicyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

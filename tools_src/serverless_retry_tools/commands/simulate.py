"""``serverless-retry simulate``: what a policy does to an error, attempt by attempt (no AWS)."""

from __future__ import annotations

import argparse
import builtins
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

from serverless_retry.clock import FrozenClock
from serverless_retry.errors import HttpError, RetryableError
from serverless_retry.policy import RetryPolicy


def load_policy(text: str) -> RetryPolicy:
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
    policy = load_policy(args.policy)
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


def register(sub: Any) -> None:
    sim = sub.add_parser("simulate", help="show the delays a policy gives an error, attempt by attempt")
    sim.add_argument("--policy", required=True, help="policy JSON, inline or a file path")
    sim.add_argument("--error", default="RuntimeError", help="exception class name (default RuntimeError)")
    sim.add_argument("--status", type=int, help="an HTTP status: simulates HttpError(status)")
    sim.add_argument("--message", default="", help="the error message (for message_regex rules)")
    sim.add_argument("--retry-after", help="a Retry-After value the error carries (seconds or HTTP date)")
    sim.add_argument("--seed", type=int, default=0, help="seed for the jitter (default 0)")
    sim.add_argument("--max-attempts", type=int, default=50, help="stop after this many attempts")
    sim.set_defaults(func=cmd_simulate)

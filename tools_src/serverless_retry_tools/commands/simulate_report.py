"""The cost lines and the timeline picture that ``serverless-retry simulate`` prints beside its attempt
table. ``simulate`` owns the decisions; it calls :func:`add_arguments` on its parser and
:func:`emit` with its rows, so the cost model and the plot stay out of the decision code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from serverless_retry_tools.attempt_rows import AttemptRow
from serverless_retry_tools.capacity import Capacity, capacity, render_capacity
from serverless_retry_tools.commands.args import UsageError, int_range, rate
from serverless_retry_tools.cost import CostModel, compare, render

__all__ = ["add_arguments", "check_arguments", "emit", "json_parts", "model_from_args", "plot"]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


def _failure_rate(text: str) -> float:
    """Messages per second, as redrive's --rate reads them, without its per-command ceiling."""
    try:
        return rate(text)
    except argparse.ArgumentTypeError:
        pass
    number, _, unit = text.strip().partition("/")
    try:
        value = float(number) / (60 if unit.strip() == "m" else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected messages per second like 5000/s or 30/m, got {text!r}"
        ) from None
    if unit.strip() not in ("", "s", "m") or not 0 < value < 1e9:
        raise argparse.ArgumentTypeError(f"expected messages per second like 5000/s or 30/m, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("cost and timeline")
    group.add_argument("--no-cost", dest="cost", action="store_false", help="leave out the cost lines")
    group.add_argument(
        "--plot", metavar="FILE.png", help="draw the retry timeline to this PNG (needs the [plot] extra)"
    )
    group.add_argument(
        "--message-kb", type=_positive_float, default=1.0, help="message size for the cost (default 1)"
    )
    group.add_argument(
        "--batch-size", type=int_range(1, 10_000), default=10, help="event source batch size (default 10)"
    )
    group.add_argument(
        "--memory-mb", type=int_range(128, 10_240), default=256, help="function memory (default 256)"
    )
    group.add_argument(
        "--duration-ms", type=_positive_float, default=100.0, help="processing time per attempt (default 100)"
    )
    group.add_argument("--architecture", choices=("arm64", "x86_64"), default="arm64", help="default arm64")
    group.add_argument(
        "--rate",
        type=_failure_rate,
        help="capacity: this many messages per second fail like this (5000/s): each AWS API's calls "
        "against its default quota, the monthly cost, what takes over at a quota",
    )
    group.add_argument(
        "--no-claims",
        dest="claims",
        action="store_false",
        help="capacity: no claims table (DynamoDB) in the deployment",
    )


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse what cannot be done before the attempt table is printed (exit 2, one line)."""
    if args.plot:
        from serverless_retry_tools.timeline import PLOT_NEEDS, plot_available

        if not plot_available():
            raise UsageError(PLOT_NEEDS)


def model_from_args(args: argparse.Namespace, *, fifo: bool = False) -> CostModel:
    return CostModel(
        message_kb=args.message_kb,
        batch_size=args.batch_size,
        memory_mb=args.memory_mb,
        duration_ms=args.duration_ms,
        architecture=args.architecture,
        fifo=fifo,
    )


def emit(
    rows: Sequence[AttemptRow],
    args: argparse.Namespace,
    *,
    max_attempts: int | None = None,
    max_age_seconds: float | None = None,
    title: str = "retry timeline",
    fifo: bool = False,
    out: TextIO | None = None,
) -> None:
    out = out or sys.stdout
    if args.cost:
        out.write("\n" + "\n".join(render(rows, model_from_args(args, fifo=fifo))) + "\n")
    if args.rate is not None:
        out.write("\n" + "\n".join(render_capacity(_capacity(rows, args, fifo))) + "\n")
    if args.plot:
        path = plot(rows, args, max_attempts=max_attempts, max_age_seconds=max_age_seconds, title=title)
        out.write(f"timeline written to {path}\n")


def _capacity(rows: Sequence[AttemptRow], args: argparse.Namespace, fifo: bool) -> Capacity:
    return capacity(rows, model_from_args(args, fifo=fifo), args.rate, claims=args.claims)


def plot(
    rows: Sequence[AttemptRow],
    args: argparse.Namespace,
    *,
    max_attempts: int | None,
    max_age_seconds: float | None,
    title: str,
) -> Path:
    from serverless_retry_tools.timeline import plot_timeline

    return plot_timeline(
        rows,
        args.plot,
        max_attempts=max_attempts,
        max_age_seconds=max_age_seconds,
        title=title,
        budget_label="maxReceiveCount" if getattr(args, "native", False) else "max_attempts",
    )


def json_parts(rows: Sequence[AttemptRow], args: argparse.Namespace, *, fifo: bool = False) -> dict[str, Any]:
    """The cost (per million messages) and, with --rate, the capacity, for ``simulate --json``."""
    parts: dict[str, Any] = {}
    model = model_from_args(args, fifo=fifo)
    if args.cost:
        parts["cost_per_million"] = {
            line.name: {"possible": line.possible, "note": line.note, **line.dollars(model)}
            for line in compare(rows, model)
        }
    if args.rate is not None:
        result = _capacity(rows, args, fifo)
        parts["capacity"] = {
            "rate_per_second": result.rate,
            "apis": [
                {
                    "api": load.api,
                    "value": load.value,
                    "unit": load.unit,
                    "quota": load.quota,
                    "over": load.over,
                }
                for load in result.loads
            ],
            "monthly_dollars": result.monthly_dollars,
            "takeover": list(result.takeover),
            "hops_share": result.hops_share,
        }
    return parts

"""The cost lines and the timeline picture that ``serverless-retry simulate`` prints beside its attempt
table. ``simulate`` owns the decisions; it calls :func:`add_arguments` on its parser and
:func:`emit` with its rows, so the cost model and the plot stay out of the decision code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from serverless_retry_tools.attempt_rows import AttemptRow
from serverless_retry_tools.commands.args import UsageError, int_range
from serverless_retry_tools.cost import CostModel, render

__all__ = ["add_arguments", "check_arguments", "emit", "model_from_args"]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
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
    if args.plot:
        from serverless_retry_tools.timeline import plot_timeline

        path = plot_timeline(
            rows, args.plot, max_attempts=max_attempts, max_age_seconds=max_age_seconds, title=title
        )
        out.write(f"timeline written to {path}\n")

"""The message filters ``inspect``, ``redrive`` and ``discard`` share: one definition, so a filter that
selects a message for ``inspect`` selects the same message for ``redrive`` and ``discard``.

On a DLQ that SQS's redrive policy fills (native retry), a message is the original as the producer
sent it: ``--outcome`` and ``--error-type`` select nothing there (no outcome or error was recorded;
such messages show outcome ``unknown``, so ``--outcome unknown`` selects them all). ``--source`` (SQS
records the queue each message came from, DeadLetterQueueSourceArn) and the age filters (SentTimestamp,
kept when SQS moves a message) do apply."""

from __future__ import annotations

import argparse
from typing import Any, get_args

from serverless_retry.envelope import Outcome
from serverless_retry.redrive.options import RedriveOptions

from serverless_retry_tools.commands.args import UsageError, duration

__all__ = ["FILTER_HELP", "OUTCOMES", "add_filter_arguments", "filter_options", "filter_values"]

# What read_terminal can report: the consumer's outcomes, and "unknown" for any other message; and
# "dlq", the archive's outcome of a message SQS's redrive policy dead-lettered (--archive only).
OUTCOMES = (*get_args(Outcome), "unknown", "dlq")

FILTER_HELP = (
    "All given must hold. On a DLQ that SQS's redrive policy fills (native retry) no outcome or error "
    "was recorded: --outcome and --error-type select nothing there but --outcome unknown; --source "
    "(the queue each message came from) and the ages apply."
)


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("filters", FILTER_HELP)
    group.add_argument(
        "--outcome",
        action="append",
        choices=OUTCOMES,
        metavar="OUTCOME",
        help=f"only this outcome (repeatable): {', '.join(OUTCOMES)} (dlq: in an --archive, what SQS "
        "dead-lettered; on a queue such a message is unknown)",
    )
    group.add_argument("--error-type", action="append", help="only this last error type (repeatable)")
    group.add_argument(
        "--source",
        action="append",
        help="only this source queue/function ARN or name (repeatable; on a native DLQ, the queue it came from)",
    )
    group.add_argument(
        "--older-than", type=duration, help="only messages in the queue longer than this (30m, 2h, 7d)"
    )
    group.add_argument("--newer-than", type=duration, help="only messages in the queue for less than this")


def filter_values(args: argparse.Namespace) -> dict[str, Any]:
    """The filters by their option name (``options_from_mapping``'s keys)."""
    return {
        "outcome": args.outcome,
        "error_type": args.error_type,
        "source": args.source,
        "older_than": args.older_than,
        "newer_than": args.newer_than,
    }


def filter_options(args: argparse.Namespace, queue_url: str) -> RedriveOptions:
    """The filters alone, for commands that select without moving (``matches()`` reads these fields)."""
    older, newer = args.older_than, args.newer_than
    if older is not None and newer is not None and older >= newer:
        raise UsageError(
            f"--newer-than: selects nothing: a message older than {older:g} s cannot also be newer than "
            f"{newer:g} s"
        )
    return RedriveOptions(
        from_queue_url=queue_url,
        outcomes=tuple(args.outcome or ()),
        error_types=tuple(args.error_type or ()),
        sources=tuple(args.source or ()),
        older_than=older,
        newer_than=newer,
    )

"""Confirmation for the commands that change queues (redrive, discard, cancelling a retry): on a
terminal they ask; anywhere else (a script, a pipe, CI) they need ``--yes``, so nothing destructive
starts because a command line was pasted or replayed."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from serverless_retry_tools.commands.args import UsageError

__all__ = ["add_yes_argument", "confirm"]


def add_yes_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--yes", "-y", action="store_true", help="do it without asking (needed when stdin is not a terminal)"
    )


def confirm(
    args: argparse.Namespace,
    question: str,
    *,
    change: str = "this changes queues",
    stdin: TextIO | None = None,
    stderr: TextIO | None = None,
) -> bool:
    """True to go on. ``--yes``: always; on a terminal: the answer to ``question``; else a usage error
    saying what would change (``change``) and how to go on."""
    if getattr(args, "yes", False):
        return True
    stdin = stdin or sys.stdin
    stderr = stderr or sys.stderr
    if not stdin.isatty():
        raise UsageError(
            f"{change}: give --yes to go ahead (stdin is not a terminal to ask on); nothing was changed"
        )
    stderr.write(f"{question} [y/N] ")
    stderr.flush()
    answer = stdin.readline().strip().lower()
    if answer in ("y", "yes"):
        return True
    stderr.write("nothing was changed\n")
    return False

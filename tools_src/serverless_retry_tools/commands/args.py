"""Argument types shared by the subcommands: nonsense values are usage errors (exit 2) with a message
that names the flag, never a traceback or a silent default."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from serverless_retry.redrive_options import OptionsError, parse_duration, parse_rate

__all__ = ["EXAMPLES_FORMATTER", "UsageError", "duration", "http_status", "int_range", "rate"]

EXAMPLES_FORMATTER = argparse.RawDescriptionHelpFormatter


class UsageError(Exception):
    """A command-line mistake found after parsing (exit 2, one line)."""


def int_range(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A whole number in [minimum, maximum]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"from {minimum} to {maximum}" if maximum is not None else f"of at least {minimum}"
            raise argparse.ArgumentTypeError(f"expected a whole number {bounds}, got {value}")
        return value

    parse.__name__ = "whole number"
    return parse


def http_status(text: str) -> int:
    """An HTTP status code, 100 to 599."""
    return int_range(100, 599)(text)


def duration(text: str) -> float:
    """90s, 15m, 2h, 7d (or seconds) → seconds."""
    try:
        return parse_duration(text, "duration")
    except OptionsError as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None


def rate(text: str) -> float:
    """10, 10/s, 0.5/s or 30/m → messages per second."""
    try:
        return parse_rate(text, "rate")
    except OptionsError as exc:
        raise argparse.ArgumentTypeError(exc.problem) from None
